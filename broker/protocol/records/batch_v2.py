"""Record batch v2 (magic 2, KIP-98): read lazily, rewrite the header, encode.

`RecordBatchV2` parses the 61-byte header at once and the records only when asked, from a
memoryview of the bytes as sent. `with_header` changes the fields the broker assigns (base
offset, leader epoch, max timestamp, timestamp type) and recomputes the CRC-32C only when the
part it covers changed, as Kafka's `DefaultRecordBatch` setters do: records are never
re-encoded. The layout and error messages are Kafka 3.x's `DefaultRecordBatch` and
`DefaultRecord`.

Not here: validation (`zkbroker.broker.rules.log_validation`), control record payloads (built
by whoever writes them, with `encode_batch`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import crc32c

from zkbroker.broker.protocol.records.compression import compress, decompress
from zkbroker.broker.protocol.records.constants import (
    COMPRESSION_CODEC_MASK,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    V2_ATTRIBUTES_OFFSET,
    V2_CONTROL_FLAG_MASK,
    V2_CRC_OFFSET,
    V2_DELETE_HORIZON_FLAG_MASK,
    V2_HEADER,
    V2_MAX_TIMESTAMP_OFFSET,
    V2_RECORD_BATCH_OVERHEAD,
    V2_RECORDS_OFFSET,
    V2_TIMESTAMP_TYPE_MASK,
    V2_TRANSACTIONAL_FLAG_MASK,
    CompressionType,
    TimestampType,
    compression_of,
)
from zkbroker.broker.protocol.records.errors import (
    CorruptRecordError,
    InvalidRecordError,
)
from zkbroker.broker.protocol.records.record import Header, Record
from zkbroker.broker.protocol.records.varint import (
    VarintError,
    encode_varint,
    encode_varlong,
    read_varint,
    read_varlong,
)

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")


def crc32c_of(data: bytes | memoryview) -> int:
    return int(crc32c.crc32c(data))


class RecordBatchV2:
    """A magic 2 batch over the bytes as sent; header parsed now, records on demand."""

    __slots__ = (
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "buffer",
        "crc",
        "last_offset_delta",
        "length",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "records_count",
    )

    def __init__(self, buffer: bytes | memoryview) -> None:
        mv = memoryview(buffer)
        if len(mv) < V2_RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"Record batch is corrupt (the size {len(mv)} is smaller than the minimum "
                f"allowed overhead {V2_RECORD_BATCH_OVERHEAD})"
            )
        self.buffer = mv
        (
            self.base_offset,
            self.length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.records_count,
        ) = V2_HEADER.unpack_from(mv, 0)

    # -- header-derived facts -------------------------------------------------------------

    @property
    def size_in_bytes(self) -> int:
        return len(self.buffer)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> CompressionType:
        return compression_of(self.attributes)

    @property
    def is_compressed(self) -> bool:
        return self.attributes & COMPRESSION_CODEC_MASK != 0

    @property
    def timestamp_type(self) -> TimestampType:
        if self.attributes & V2_TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & V2_TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & V2_CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & V2_DELETE_HORIZON_FLAG_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    def compute_checksum(self) -> int:
        return crc32c_of(self.buffer[V2_ATTRIBUTES_OFFSET:])

    def is_valid(self) -> bool:
        """Kafka's ``DefaultRecordBatch.isValid``: the stored CRC-32C matches."""
        return self.crc == self.compute_checksum()

    # -- records --------------------------------------------------------------------------

    def records_body(self) -> bytes | memoryview:
        """The records' bytes as sent (compressed if the batch is), without a copy."""
        return self.buffer[V2_RECORDS_OFFSET:]

    def records(self) -> list[Record]:
        """Every record, decompressing if needed (Kafka's batch iterator and its checks)."""
        count = self.records_count
        if count < 0:
            raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch")
        body: bytes | memoryview = self.buffer[V2_RECORDS_OFFSET:]
        if self.is_compressed:
            body = decompress(self.compression, body, MAGIC_V2)
        log_append_time = (
            self.max_timestamp if self.timestamp_type == TimestampType.LOG_APPEND_TIME else None
        )
        return decode_records(
            body,
            count,
            self.base_offset,
            self.base_timestamp,
            log_append_time,
            self.timestamp_type,
        )

    # -- header rewrite (in place on a copy: the records stay as sent) -------------------

    def with_header(
        self,
        *,
        base_offset: int | None = None,
        partition_leader_epoch: int | None = None,
        max_timestamp: tuple[TimestampType, int] | None = None,
    ) -> bytes:
        """The batch's bytes with broker-assigned header fields, Kafka's setters' way.

        ``max_timestamp`` is (timestamp type, max timestamp), as ``setMaxTimestamp``: the
        CRC is recomputed only if either changes.
        """
        # Only the 61-byte header changes: rewrite a copy of it and join it to the records
        # as sent, one copy of the batch in all (a large batch's copies are most of an
        # append's cost once the records are validated).
        head = bytearray(self.buffer[:V2_RECORDS_OFFSET])
        body = self.buffer[V2_RECORDS_OFFSET:]
        if base_offset is not None:
            _I64.pack_into(head, 0, base_offset)
        if partition_leader_epoch is not None:
            _I32.pack_into(head, 12, partition_leader_epoch)
        if max_timestamp is not None:
            ts_type, ts = max_timestamp
            if ts_type != self.timestamp_type or ts != self.max_timestamp:
                attributes = self.attributes & ~V2_TIMESTAMP_TYPE_MASK
                if ts_type == TimestampType.LOG_APPEND_TIME:
                    attributes |= V2_TIMESTAMP_TYPE_MASK
                _I16.pack_into(head, V2_ATTRIBUTES_OFFSET, attributes)
                _I64.pack_into(head, V2_MAX_TIMESTAMP_OFFSET, ts)
                crc = crc32c.crc32c(body, crc32c.crc32c(head[V2_ATTRIBUTES_OFFSET:]))
                _U32.pack_into(head, V2_CRC_OFFSET, crc)
        return b"".join((head, body))

    def __repr__(self) -> str:
        return (
            f"RecordBatchV2(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"count={self.records_count}, compression={self.compression.kafka_name}, "
            f"size={self.size_in_bytes})"
        )


def decode_records(
    body: bytes | memoryview,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
) -> list[Record]:
    """Decode ``count`` records filling ``body`` exactly (Kafka's ``DefaultRecord.readFrom``).

    Each record is its length (`_record_size`), then its fields (`_record_fields`): two calls
    a record, whose varints are decoded inline in the common one- and two-byte cases."""
    buf = body if isinstance(body, bytes) else bytes(body)
    end = len(buf)
    pos = 0
    out: list[Record] = []
    append = out.append
    for _ in range(count):
        record_begin = pos
        size, pos = _record_size(buf, pos, end)
        stop = pos + size
        attributes, timestamp_delta, offset_delta, key, value, headers, pos = _record_fields(
            buf, pos, stop
        )
        if pos != stop:
            raise InvalidRecordError(
                f"Invalid record size: expected to read {size} bytes in record payload, "
                f"but instead read {pos - (stop - size)}"
            )
        append(
            Record(  # positional: measurably cheaper than keywords, once per record
                base_offset + offset_delta,
                base_timestamp + timestamp_delta if log_append_time is None else log_append_time,
                key,
                value,
                headers,
                MAGIC_V2,
                attributes,
                stop - record_begin,
                timestamp_type,
            )
        )
    if pos != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")
    return out


def _record_size(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """The length varint of the record at ``pos`` and the position after it, checked against
    the bytes left in the batch (Kafka's ``DefaultRecord.readFrom``)."""
    try:
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
    except (IndexError, VarintError):
        # No byte left where a record should start, or a length running past the end.
        raise InvalidRecordError("Incorrect declared batch size, premature EOF reached") from None
    if size < 0 or end - pos < size:
        raise InvalidRecordError(
            f"Invalid record size: expected {size} bytes in record payload, but instead "
            f"the buffer has only {end - pos} remaining bytes."
        )
    return size, pos


def _record_fields(
    buf: bytes, pos: int, stop: int
) -> tuple[int, int, int, bytes | None, bytes | None, tuple[Header, ...], int]:
    """The fields of the record from ``pos`` (after its length) to ``stop``: attributes,
    timestamp delta, offset delta, key, value, headers, and the position after the headers
    (the caller checks that it is ``stop``)."""
    try:
        # One-byte varints are the common case (small deltas, short keys, no headers):
        # decode those inline and call the general reader only for longer ones.
        attributes = buf[pos]
        b = buf[pos + 1]
        if b < 0x80:
            timestamp_delta = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            timestamp_delta, pos = read_varlong(buf, pos + 1)
        b = buf[pos]
        if b < 0x80:
            offset_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            offset_delta, pos = read_varint(buf, pos)
        b = buf[pos]
        if b < 0x80:
            key_size = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            key_size, pos = read_varint(buf, pos)
        key = None
        if key_size >= 0:
            if pos + key_size > stop:
                raise InvalidRecordError("Found invalid record structure")
            key = buf[pos : pos + key_size]
            pos += key_size
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
        value = None
        if value_size >= 0:
            if pos + value_size > stop:
                raise InvalidRecordError("Found invalid record structure")
            value = buf[pos : pos + value_size]
            pos += value_size
        if buf[pos] == 0:  # a header count of zero, one byte
            return attributes, timestamp_delta, offset_delta, key, value, (), pos + 1
        headers, pos = _read_headers(buf, pos, stop)
    except (VarintError, IndexError):
        raise InvalidRecordError("Found invalid record structure") from None
    return attributes, timestamp_delta, offset_delta, key, value, headers, pos


def _read_headers(buf: bytes, pos: int, stop: int) -> tuple[tuple[Header, ...], int]:
    """The header count at ``pos`` and the headers after it, up to ``stop`` at most."""
    count, pos = read_varint(buf, pos)
    if count < 0:
        raise InvalidRecordError(f"Found invalid number of record headers {count}")
    if count and count > stop - pos:
        raise InvalidRecordError(
            f"Found invalid number of record headers. {count} is larger "
            "than the remaining size of the buffer"
        )
    headers = []
    for _ in range(count):
        key_size, pos = read_varint(buf, pos)
        if key_size < 0:
            raise InvalidRecordError(f"Invalid negative header key size {key_size}")
        if pos + key_size > stop:
            raise InvalidRecordError("Found invalid record structure")
        key = buf[pos : pos + key_size]
        pos += key_size
        value_size, pos = read_varint(buf, pos)
        value = None
        if value_size >= 0:
            if pos + value_size > stop:
                raise InvalidRecordError("Found invalid record structure")
            value = buf[pos : pos + value_size]
            pos += value_size
        headers.append((key, value))
    return tuple(headers), pos


# -- encoding ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewRecord:
    """A record to encode: offset and timestamp are absolute, as in Kafka's builder."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


def encode_record(offset_delta: int, timestamp_delta: int, record: NewRecord) -> bytes:
    parts = [b"\x00", encode_varlong(timestamp_delta), encode_varint(offset_delta)]
    for blob in (record.key, record.value):
        if blob is None:
            parts.append(encode_varint(-1))
        else:
            parts.append(encode_varint(len(blob)))
            parts.append(blob)
    parts.append(encode_varint(len(record.headers)))
    for hkey, hvalue in record.headers:
        parts.append(encode_varint(len(hkey)))
        parts.append(hkey)
        if hvalue is None:
            parts.append(encode_varint(-1))
        else:
            parts.append(encode_varint(len(hvalue)))
            parts.append(hvalue)
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def encode_batch(
    records: Sequence[NewRecord] | Iterable[NewRecord],
    *,
    base_offset: int = 0,
    compression: CompressionType = CompressionType.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int = NO_TIMESTAMP,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """One magic 2 batch, as Kafka's ``MemoryRecordsBuilder`` writes it.

    The base timestamp is the first record's, the max timestamp the largest (the log append
    time for LogAppendTime), the last offset delta that of the last record.
    """
    recs = list(records)
    if not recs:
        raise ValueError("a v2 batch needs at least one record")
    base_timestamp = recs[0].timestamp
    encoded = b"".join(
        encode_record(r.offset - base_offset, r.timestamp - base_timestamp, r) for r in recs
    )
    if compression != CompressionType.NONE:
        encoded = compress(compression, encoded, MAGIC_V2)
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        max_timestamp = log_append_time
    else:
        max_timestamp = max(r.timestamp for r in recs)
    attributes = int(compression)
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= V2_TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= V2_TRANSACTIONAL_FLAG_MASK
    if control:
        attributes |= V2_CONTROL_FLAG_MASK
    header = bytearray(
        V2_HEADER.pack(
            base_offset,
            V2_RECORDS_OFFSET - 12 + len(encoded),
            partition_leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            recs[-1].offset - base_offset,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(recs),
        )
    )
    crc = crc32c.crc32c(encoded, crc32c.crc32c(bytes(header[V2_ATTRIBUTES_OFFSET:])))
    _U32.pack_into(header, V2_CRC_OFFSET, crc)
    return bytes(header) + encoded
