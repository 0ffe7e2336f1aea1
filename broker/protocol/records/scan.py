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

_ABOVE_ANY = 1 << 64


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


# The one-byte varints, largest delta (63) first, smallest (-64) last.
_BY_DELTA_DESCENDING = tuple(sorted(range(0x80), key=_zigzag, reverse=True))


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where one walked record keeps its fields, relative to its first byte: the positions of
    bytes every record of a run must repeat (length, key and value lengths, the empty header
    count), of its one-byte timestamp delta, and of its offset delta's bytes."""

    size: int
    fixed: tuple[int, ...]
    timestamp_at: int
    offset_delta_at: int
    offset_delta_bytes: int


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
    high_raw = next(raw for raw in _BY_DELTA_DESCENDING if raw in stamps)
    low_raw = next(raw for raw in reversed(_BY_DELTA_DESCENDING) if raw in stamps)
    return _zigzag(low_raw), _zigzag(high_raw), stamps.index(high_raw)


def scan_records(body: bytes | memoryview, count: int) -> RecordsScan | None:
    """Walk ``count`` uncompressed records filling ``body`` exactly; ``None`` if they do not
    (or if one has headers): decode them instead to learn why.

    After each walked record whose varints are short, the records that follow are checked as a
    run with its layout (``_run_extremes``): a producer's batch of same-sized records is then
    read a few columns at a time, not record by record."""
    if count <= 0:
        return None
    end = len(body)
    pos = 0
    # Beyond any varlong: the first record sets both.
    min_delta, max_delta = _ABOVE_ANY, -_ABOVE_ANY
    index_of_max = -1
    null_key = False
    failed_runs = 0
    # Columns of a memoryview are copied byte by byte by the generic buffer code, about ten
    # times slower than slicing bytes: one copy of the whole body is cheaper from a few runs on.
    buf = bytes(body) if isinstance(body, memoryview) and count >= _MIN_RUN else body
    index = 0
    try:
        while index < count:
            begin = pos
            # One-byte varints are the common case; the general readers take the rest.
            b = buf[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (b2 := buf[pos + 1]) < 0x80:  # two bytes: records of 64 B to 8 KiB
                raw = (b & 0x7F) | (b2 << 7)
                size = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                size, pos = read_varint(buf, pos)
            length_end = pos
            stop = pos + size
            if size < 0 or stop > end:
                return None
            b = buf[pos + 1]  # after the attributes byte: the timestamp delta
            timestamp_at = pos + 1
            if b < 0x80:
                delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                delta, pos = read_varlong(buf, pos + 1)
            short_timestamp = pos == timestamp_at + 1
            if delta > max_delta:
                max_delta = delta
                index_of_max = index
            if delta < min_delta:
                min_delta = delta
            offset_delta_at = pos
            b = buf[pos]  # the offset delta: offsets are assigned whatever it says
            if b < 0x80:
                pos += 1
            elif buf[pos + 1] < 0x80:
                pos += 2
            else:
                _, pos = read_varint(buf, pos)
            offset_delta_bytes = pos - offset_delta_at
            key_length_at = pos
            b = buf[pos]
            if b < 0x80:
                key_size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                key_size, pos = read_varint(buf, pos)
            key_length_end = pos
            if key_size >= 0:
                pos += key_size
                if pos > stop:
                    return None
            else:
                null_key = True
            value_length_at = pos
            b = buf[pos]
            if b < 0x80:
                value_size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (b2 := buf[pos + 1]) < 0x80:
                raw = (b & 0x7F) | (b2 << 7)
                value_size = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                value_size, pos = read_varint(buf, pos)
            value_length_end = pos
            if value_size >= 0:
                pos += value_size
                if pos > stop:
                    return None
            # No headers, and the record ends exactly where its length said.
            if buf[pos] != 0 or pos + 1 != stop:
                return None
            pos = stop
            index += 1
            if not short_timestamp or offset_delta_bytes > 2 or failed_runs >= _MAX_FAILED_RUNS:
                continue
            record_size = stop - begin
            limit = _ONE_BYTE_DELTAS if offset_delta_bytes == 1 else _TWO_BYTE_DELTAS
            runs = min(count - index, (end - stop) // record_size, max(limit - index, 0))
            if runs < _MIN_RUN:
                continue
            layout = _Layout(
                size=record_size,
                fixed=(
                    *range(0, length_end - begin),
                    *range(key_length_at - begin, key_length_end - begin),
                    *range(value_length_at - begin, value_length_end - begin),
                    record_size - 1,
                ),
                timestamp_at=timestamp_at - begin,
                offset_delta_at=offset_delta_at - begin,
                offset_delta_bytes=offset_delta_bytes,
            )
            extremes = _run_extremes(buf, begin, stop, runs, layout)
            if extremes is None:
                failed_runs += 1
                continue
            low, high, first_high = extremes
            if high > max_delta:
                max_delta = high
                index_of_max = index + first_high
            if low < min_delta:
                min_delta = low
            index += runs
            pos = stop + runs * record_size
    except (IndexError, VarintError):
        return None
    if pos != end:
        return None
    return RecordsScan(count, min_delta, max_delta, index_of_max, null_key)
