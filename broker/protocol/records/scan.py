"""A quick walk over an uncompressed v2 batch's records: their timestamps and keys, no copies.

Validating a produce payload needs, per record, only its structure, its timestamp and whether
it has a key (Kafka's ``LogValidator.validateRecord`` on top of ``DefaultRecord.readFrom``).
Decoding every record into a `Record` (``batch_v2.decode_records``) copies each key and value
and builds an object per record, which is most of a broker's cost per produced byte. This walk
reads the same fields in the same order and keeps only what validation needs: the smallest
and largest timestamp delta, the index of the first record with the largest one, and whether
any record has a null key.

It answers only "these records are exactly well formed, and here is what they say"; for
anything else (a malformed record, a length running past the batch, a record with headers,
which are rarely on a hot path) it returns ``None`` and the caller decodes the records with
``decode_records``, whose errors carry Kafka's messages. So the walk can make an append
faster but never changes an answer: a test compares it with the decoder on random bytes.

Deliberately not here: compressed bodies (decompression dominates there), legacy v0/v1
messages, and any rule (``broker.rules.log_validation`` decides what the figures mean).
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.protocol.records.varint import VarintError, read_varint, read_varlong

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


def scan_records(body: bytes | memoryview, count: int) -> RecordsScan | None:
    """Walk ``count`` uncompressed records filling ``body`` exactly; ``None`` if they do not
    (or if one has headers): decode them instead to learn why."""
    if count <= 0:
        return None
    end = len(body)
    pos = 0
    # Beyond any varlong: the first record sets both.
    min_delta, max_delta = _ABOVE_ANY, -_ABOVE_ANY
    index_of_max = -1
    null_key = False
    buf = body
    try:
        for index in range(count):
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
            stop = pos + size
            if size < 0 or stop > end:
                return None
            b = buf[pos + 1]  # after the attributes byte: the timestamp delta
            if b < 0x80:
                delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                delta, pos = read_varlong(buf, pos + 1)
            if delta > max_delta:
                max_delta = delta
                index_of_max = index
            if delta < min_delta:
                min_delta = delta
            b = buf[pos]  # the offset delta: offsets are assigned whatever it says
            if b < 0x80:
                pos += 1
            elif buf[pos + 1] < 0x80:
                pos += 2
            else:
                _, pos = read_varint(buf, pos)
            b = buf[pos]
            if b < 0x80:
                key_size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                key_size, pos = read_varint(buf, pos)
            if key_size >= 0:
                pos += key_size
                if pos > stop:
                    return None
            else:
                null_key = True
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
            if value_size >= 0:
                pos += value_size
                if pos > stop:
                    return None
            # No headers, and the record ends exactly where its length said.
            if buf[pos] != 0 or pos + 1 != stop:
                return None
            pos = stop
    except (IndexError, VarintError):
        return None
    if pos != end:
        return None
    return RecordsScan(count, min_delta, max_delta, index_of_max, null_key)
