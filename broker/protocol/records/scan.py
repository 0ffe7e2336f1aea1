"""A quick walk over an uncompressed v2 batch's records: their timestamps and keys, no copies.

Validation needs per record only its structure, timestamp and whether it has a key
(`LogValidator.validateRecord`); decoding every record (`batch_v2.decode_records`) copies keys
and values and is most of a broker's cost per produced byte. This walk reads the same fields in
the same order and keeps only the smallest and largest timestamp delta, the index of the first
record with the largest, and whether any key is null. Runs of records with one size and layout
are checked as columns of bytes (a few C calls per batch, not one Python iteration per record).
Anything not exactly well formed, or a record with headers, returns ``None`` and the caller
decodes with ``decode_records`` (whose errors carry Kafka's messages), so the walk never
changes an answer: a test compares it with the decoder on random bytes.

Not here: compressed bodies, v0/v1 messages, any rule (``zkbroker.broker.rules.log_validation``).
"""

from __future__ import annotations

from dataclasses import dataclass

from zkbroker.broker.protocol.records.varint import VarintError, read_varint, read_varlong

_ABOVE_ANY = 1 << 64  # beyond any varlong: the first record sets both extremes


@dataclass(frozen=True, slots=True)
class RecordsScan:
    """What validation reads from a batch's records (timestamps as deltas from the base)."""

    count: int
    min_timestamp_delta: int
    max_timestamp_delta: int
    index_of_max: int
    """The first record whose timestamp delta is the largest."""
    any_null_key: bool


# Records after the first offset delta of each varint length: a producer numbers its records
# 0, 1, 2, ... so one layout covers records 0-63 (one-byte deltas), then 64-8191 (two bytes).
_ONE_BYTE_DELTAS = 64
_TWO_BYTE_DELTAS = 8192
# Shorter runs are walked: checking columns costs about as much as walking a few records.
_MIN_RUN = 8
# A batch whose records keep breaking the layout stops trying (each try costs a few columns).
_MAX_FAILED_RUNS = 4


_FLIP_HIGH_BIT = bytes(b ^ 0x80 for b in range(256))


def _zigzag(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)


# The one-byte varints, largest delta (63) first, smallest (-64) last; and the reverse.
_BY_DELTA_DESCENDING = tuple(sorted(range(0x80), key=_zigzag, reverse=True))
_BY_DELTA_ASCENDING = _BY_DELTA_DESCENDING[::-1]


@dataclass(slots=True)
class _Layout:
    """Where one walked record keeps its fields, relative to its first byte: the positions of
    bytes every record of a run must repeat (length, key and value lengths, the empty header
    count), of its one-byte timestamp delta, and of its offset delta's bytes.

    Not frozen (a frozen dataclass's __init__ costs more, and one is built per run tried):
    treat it as read-only."""

    size: int
    fixed: tuple[int, ...]
    timestamp_at: int
    offset_delta_at: int
    offset_delta_bytes: int


def _layout_of(
    buf: bytes | memoryview, begin: int, fields_at: int, offset_delta_bytes: int, stop: int
) -> _Layout:
    """The layout of the record from ``begin`` to ``stop``, already walked (well formed, a
    one-byte timestamp delta, no headers), whose fields start at ``fields_at``."""
    timestamp_at = fields_at + 1  # after the attributes byte
    offset_delta_at = timestamp_at + 1
    key_length_at = offset_delta_at + offset_delta_bytes
    # Read inline the lengths of one byte (keys) or two (values up to 8 KiB): a run is tried
    # once or twice in a producer's batch.
    if (b := buf[key_length_at]) < 0x80:
        key_size, key_length_end = (b >> 1) ^ -(b & 1), key_length_at + 1
    else:
        key_size, key_length_end = read_varint(buf, key_length_at)
    value_length_at = key_length_end + max(key_size, 0)
    if buf[value_length_at] < 0x80:
        value_length_end = value_length_at + 1
    elif buf[value_length_at + 1] < 0x80:
        value_length_end = value_length_at + 2
    else:
        _, value_length_end = read_varint(buf, value_length_at)
    size = stop - begin
    return _Layout(
        size=size,
        fixed=(
            *range(0, fields_at - begin),
            *range(key_length_at - begin, key_length_end - begin),
            *range(value_length_at - begin, value_length_end - begin),
            size - 1,
        ),
        timestamp_at=timestamp_at - begin,
        offset_delta_at=offset_delta_at - begin,
        offset_delta_bytes=offset_delta_bytes,
    )


def _column(buf: bytes | memoryview, start: int, stop: int, step: int) -> bytes:
    return bytes(buf[start:stop:step])


def _run_extremes(
    buf: bytes | memoryview, template: int, start: int, runs: int, layout: _Layout
) -> tuple[int, int, int] | None:
    """Check that the ``runs`` records from ``start`` repeat the layout of the record at
    ``template`` byte for byte wherever the walk would read a length (so each parses exactly as
    that record did); their (min delta, max delta, index in the run of the first max), or None
    if one does not. Columns of bytes (one per field position, every ``size`` bytes) are
    compared in C instead of walking each record."""
    size = layout.size
    stop = start + runs * size
    for at in layout.fixed:
        if (
            _column(buf, start + at, stop, size)
            != bytes(buf[template + at : template + at + 1]) * runs
        ):
            return None
    # Every test below runs in C (isascii: all bytes below 0x80; `in`: memchr): iterating a
    # column in Python would cost as much as walking its records.
    first = layout.offset_delta_at
    if layout.offset_delta_bytes == 1:
        if not _column(buf, start + first, stop, size).isascii():
            return None
    else:  # two bytes: a continued byte, then a final one
        if not _column(buf, start + first, stop, size).translate(_FLIP_HIGH_BIT).isascii():
            return None
        if not _column(buf, start + first + 1, stop, size).isascii():
            return None
    stamps = _column(buf, start + layout.timestamp_at, stop, size)
    if not stamps.isascii():
        return None
    # The extremes: the first raw byte present from either end of the deltas' order (plain
    # loops: a generator's resumption per candidate would cost more than each memchr).
    for high_raw in _BY_DELTA_DESCENDING:
        if high_raw in stamps:
            break
    for low_raw in _BY_DELTA_ASCENDING:
        if low_raw in stamps:
            break
    return _zigzag(low_raw), _zigzag(high_raw), stamps.index(high_raw)


# What a walk knows after some records: the position after them, how many they are, the
# smallest and largest timestamp delta and the index of the first record with the largest.
_Walked = tuple[int, int, int, int, int]


def _run_after(
    buf: bytes | memoryview,
    begin: int,
    fields_at: int,
    walked: _Walked,
    offset_delta_bytes: int,
    count: int,
) -> _Walked | None:
    """Read the records after the one from ``begin`` (the last walked, its fields from
    ``fields_at``) as a run of its layout if enough of them may repeat it: the walk's state
    after them (unchanged if too few may), or None if they do not repeat it."""
    stop, index, min_delta, max_delta, index_of_max = walked
    record_size = stop - begin
    limit = _ONE_BYTE_DELTAS if offset_delta_bytes == 1 else _TWO_BYTE_DELTAS
    runs = min(count - index, (len(buf) - stop) // record_size, max(limit - index, 0))
    if runs < _MIN_RUN:
        return walked
    # Records of other sizes, the common reason a run fails, differ in the next record's length.
    if buf[stop : stop + fields_at - begin] != buf[begin:fields_at]:
        return None
    layout = _layout_of(buf, begin, fields_at, offset_delta_bytes, stop)
    extremes = _run_extremes(buf, begin, stop, runs, layout)
    if extremes is None:
        return None
    low, high, first_high = extremes
    if high > max_delta:
        max_delta, index_of_max = high, index + first_high
    return stop + runs * record_size, index + runs, min(min_delta, low), max_delta, index_of_max


def _walk(buf: bytes | memoryview, count: int) -> tuple[_Walked, bool] | None:
    """Walk ``count`` records, reading runs of one layout as columns (`_run_after`): the walk's
    state after them and whether a key is null, or None (not well formed, or headers)."""
    pos, index, tries_left = 0, 0, _MAX_FAILED_RUNS
    min_delta, max_delta, index_of_max, null_key = _ABOVE_ANY, -_ABOVE_ANY, -1, False
    while index < count:
        begin = pos
        # One-byte varints are the common case; the general readers take the rest.
        if (b := buf[pos]) < 0x80:
            size, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif (b2 := buf[pos + 1]) < 0x80:  # two bytes (zig-zag of 14 bits): 64 B to 8 KiB
            size, pos = (((b & 0x7F) >> 1) | (b2 << 6)) ^ -(b & 1), pos + 2
        else:
            size, pos = read_varint(buf, pos)
        stop = pos + size
        if (t := buf[pos + 1]) < 0x80:  # after the attributes byte: the timestamp delta
            delta, pos = (t >> 1) ^ -(t & 1), pos + 2
        else:
            delta, pos = read_varlong(buf, pos + 1)
        if delta > max_delta:
            max_delta, index_of_max = delta, index
        if delta < min_delta:
            min_delta = delta
        if buf[pos] < 0x80:  # the offset delta: offsets are assigned whatever it says
            offset_delta_bytes = 1
        elif buf[pos + 1] < 0x80:
            offset_delta_bytes = 2
        else:
            offset_delta_bytes = read_varint(buf, pos)[1] - pos
        pos += offset_delta_bytes
        if (b := buf[pos]) < 0x80:
            key_size, pos = (b >> 1) ^ -(b & 1), pos + 1
        else:
            key_size, pos = read_varint(buf, pos)
        if key_size >= 0:
            pos += key_size
        else:
            null_key = True
        if (b := buf[pos]) < 0x80:
            value_size, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif (b2 := buf[pos + 1]) < 0x80:
            value_size, pos = (((b & 0x7F) >> 1) | (b2 << 6)) ^ -(b & 1), pos + 2
        else:
            value_size, pos = read_varint(buf, pos)
        if value_size >= 0:
            pos += value_size
        # No headers, and the end where its length said (also refuses a length out of bounds).
        if pos + 1 != stop or buf[pos] != 0:
            return None
        pos = stop
        index += 1
        if tries_left and t < 0x80 and offset_delta_bytes <= 2 and count - index >= _MIN_RUN:
            walked = (pos, index, min_delta, max_delta, index_of_max)
            run = _run_after(buf, begin, stop - size, walked, offset_delta_bytes, count)
            if run is None:
                tries_left -= 1
            else:
                pos, index, min_delta, max_delta, index_of_max = run
    return (pos, index, min_delta, max_delta, index_of_max), null_key


def scan_records(body: bytes | memoryview, count: int) -> RecordsScan | None:
    """Walk ``count`` uncompressed records filling ``body`` exactly; ``None`` if they do not
    (or if one has headers): decode them instead to learn why.

    After each walked record whose varints are short, the records that follow are checked as a
    run with its layout (``_run_after``): a producer's batch of same-sized records is then
    read a few columns at a time, not record by record."""
    if count <= 0:
        return None
    # Columns of a memoryview are copied byte by byte by the generic buffer code, far slower
    # than slicing bytes: one copy of the whole body is cheaper from a few runs on.
    buf = bytes(body) if isinstance(body, memoryview) and count >= _MIN_RUN else body
    try:
        walk = _walk(buf, count)
    except (IndexError, VarintError):
        return None
    if walk is None:
        return None
    (pos, _, min_delta, max_delta, index_of_max), null_key = walk
    if pos != len(buf):
        return None
    return RecordsScan(count, min_delta, max_delta, index_of_max, null_key)
