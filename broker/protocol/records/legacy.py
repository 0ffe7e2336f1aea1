"""Legacy message sets, magic 0 and 1 (KIP-32 added the v1 timestamp): read and encode.

A log entry is offset int64, size int32, then the message: crc uint32 (CRC-32 of
magic..end, zlib's), magic int8, attributes int8 (bits 0-2 codec, bit 3 LogAppendTime in v1),
timestamp int64 (v1 only), key and value (int32 length, -1 = null). A compressed set is one
wrapper message whose value is the compressed inner entries; in v1 the inner offsets are
relative (0..n-1) and the wrapper carries the absolute offset of the last one, in v0 they are
absolute. Follows Kafka's ``LegacyRecord`` and ``AbstractLegacyRecordBatch`` (its deep
iterator's checks and messages, Kafka 3.x).

Deliberately not here: validation rules (``zkbroker.broker.rules.log_validation``); xerial and
KAFKA-3160 framing details live in ``compression``.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from zkbroker.broker.protocol.records.batch_v2 import NewRecord
from zkbroker.broker.protocol.records.compression import compress, decompress
from zkbroker.broker.protocol.records.constants import (
    COMPRESSION_CODEC_MASK,
    LEGACY_HEADER_V0,
    LEGACY_HEADER_V1,
    LEGACY_RECORD_OVERHEAD_V0,
    LEGACY_RECORD_OVERHEAD_V1,
    LEGACY_TIMESTAMP_TYPE_MASK,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V0,
    MAGIC_V1,
    NO_TIMESTAMP,
    CompressionType,
    TimestampType,
    compression_of,
)
from zkbroker.broker.protocol.records.errors import (
    CorruptRecordError,
    InvalidRecordError,
)
from zkbroker.broker.protocol.records.record import Record

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")


class LegacyEntry:
    """One top-level message of a v0/v1 message set: a record, or a compressed wrapper."""

    __slots__ = (
        "attributes",
        "buffer",
        "crc",
        "key",
        "magic",
        "offset",
        "size",
        "timestamp",
        "value",
    )

    def __init__(self, buffer: bytes | memoryview) -> None:
        mv = memoryview(buffer)
        if len(mv) < LOG_OVERHEAD + LEGACY_RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"Record size {len(mv) - LOG_OVERHEAD} is less than the minimum record "
                f"overhead ({LEGACY_RECORD_OVERHEAD_V0})"
            )
        self.buffer = mv
        self.magic = mv[MAGIC_OFFSET]
        if self.magic == MAGIC_V0:
            self.offset, self.size, self.crc, _, self.attributes = LEGACY_HEADER_V0.unpack_from(mv)
            self.timestamp = NO_TIMESTAMP
            pos = LEGACY_HEADER_V0.size
        else:
            if len(mv) < LOG_OVERHEAD + LEGACY_RECORD_OVERHEAD_V1:
                raise CorruptRecordError(
                    f"Record size {len(mv) - LOG_OVERHEAD} is less than the minimum record "
                    f"overhead ({LEGACY_RECORD_OVERHEAD_V1})"
                )
            (self.offset, self.size, self.crc, _, self.attributes, self.timestamp) = (
                LEGACY_HEADER_V1.unpack_from(mv)
            )
            pos = LEGACY_HEADER_V1.size
        self.key, pos = _read_bytes(mv, pos)
        self.value, pos = _read_bytes(mv, pos)

    @property
    def size_in_bytes(self) -> int:
        return len(self.buffer)

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def compression(self) -> CompressionType:
        return compression_of(self.attributes)

    @property
    def is_compressed(self) -> bool:
        return self.attributes & COMPRESSION_CODEC_MASK != 0

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == MAGIC_V0:
            return TimestampType.NO_TIMESTAMP_TYPE
        if self.attributes & LEGACY_TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def max_timestamp(self) -> int:
        return self.timestamp

    # Fields a v2 batch has and a legacy entry does not, so callers need not branch.
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    partition_leader_epoch = -1
    is_transactional = False
    is_control = False
    has_producer_id = False

    def compute_checksum(self) -> int:
        return zlib.crc32(self.buffer[MAGIC_OFFSET:])

    def is_valid(self) -> bool:
        """Kafka's ``LegacyRecord.isValid``: the stored CRC-32 matches."""
        return self.crc == self.compute_checksum()

    def as_record(self, *, offset: int | None = None, wrapper: LegacyEntry | None = None) -> Record:
        ts_type = self.timestamp_type
        timestamp = self.timestamp
        if wrapper is not None and self.magic == MAGIC_V1:
            # An inner v1 message takes its timestamp type from the wrapper, and the
            # wrapper's timestamp when that is LogAppendTime (Kafka's LegacyRecord).
            ts_type = wrapper.timestamp_type
            if ts_type == TimestampType.LOG_APPEND_TIME:
                timestamp = wrapper.timestamp
        return Record(
            offset=self.offset if offset is None else offset,
            timestamp=timestamp,
            key=None if self.key is None else bytes(self.key),
            value=None if self.value is None else bytes(self.value),
            magic=self.magic,
            attributes=self.attributes,
            size_in_bytes=self.size_in_bytes,
            timestamp_type=ts_type,
            crc=self.crc,
            computed_crc=self.compute_checksum(),
        )

    def records(self) -> list[Record]:
        """The message itself, or a wrapper's inner messages with absolute offsets."""
        if not self.is_compressed:
            return [self.as_record()]
        if self.compression == CompressionType.ZSTD:
            raise InvalidRecordError(
                f"Invalid wrapper compressionType found in legacy deep record iterator {self.magic}"
            )
        if self.value is None:
            raise InvalidRecordError(
                f"Found invalid compressed record set with null value (magic = {self.magic})"
            )
        inner_bytes = decompress(self.compression, self.value, self.magic)
        inner = list(iter_inner_entries(inner_bytes))
        for entry in inner:
            if entry.magic != self.magic:
                raise InvalidRecordError(
                    f"Compressed message magic {entry.magic} does not match wrapper magic "
                    f"{self.magic}"
                )
        if not inner:
            raise InvalidRecordError("Found invalid compressed record set with no inner records")
        base = 0
        if self.magic == MAGIC_V1 and self.offset != 0:
            # Some librdkafka versions send wrapper offset 0: then the inner offsets are kept.
            last_inner = inner[-1].offset
            if self.offset < last_inner:
                raise InvalidRecordError(
                    "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                    f"'{self.offset}' is less than the last inner message offset '{last_inner}' "
                    "and it is not zero."
                )
            base = self.offset - last_inner
        out = []
        for entry in inner:
            if entry.is_compressed:
                raise InvalidRecordError("Inner messages must not be compressed")
            out.append(entry.as_record(offset=base + entry.offset, wrapper=self))
        return out

    def with_offset_and_timestamp(
        self, offset: int, timestamp: tuple[TimestampType, int] | None = None
    ) -> bytes:
        """The entry with a new offset and, for v1, Kafka's ``setMaxTimestamp`` applied."""
        out = bytearray(self.buffer)
        _I64.pack_into(out, 0, offset)
        if timestamp is not None and self.magic == MAGIC_V1:
            ts_type, ts = timestamp
            if ts_type != self.timestamp_type or ts != self.timestamp:
                attributes = self.attributes & ~LEGACY_TIMESTAMP_TYPE_MASK
                if ts_type == TimestampType.LOG_APPEND_TIME:
                    attributes |= LEGACY_TIMESTAMP_TYPE_MASK
                # The attributes are read as Java's signed byte; written back as its bits.
                out[17] = attributes & 0xFF
                _I64.pack_into(out, 18, ts)
                _U32.pack_into(out, 12, zlib.crc32(memoryview(out)[MAGIC_OFFSET:]))
        return bytes(out)


def _read_bytes(mv: memoryview, pos: int) -> tuple[memoryview | None, int]:
    if pos + 4 > len(mv):
        raise InvalidRecordError("Found invalid record structure")
    (size,) = _I32.unpack_from(mv, pos)
    pos += 4
    if size < 0:
        return None, pos
    if pos + size > len(mv):
        raise InvalidRecordError("Found invalid record structure")
    return mv[pos : pos + size], pos + size


def iter_inner_entries(data: bytes) -> list[LegacyEntry]:
    """The messages inside a decompressed wrapper (Kafka's DataLogInputStream)."""
    out = []
    pos = 0
    end = len(data)
    mv = memoryview(data)
    while end - pos >= LOG_OVERHEAD:
        (size,) = _I32.unpack_from(data, pos + 8)
        if size < LEGACY_RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                "Record size is less than the minimum record overhead "
                f"({LEGACY_RECORD_OVERHEAD_V0})"
            )
        if end - pos < LOG_OVERHEAD + size:
            break  # a partial trailing message ends the stream, as in Kafka
        out.append(LegacyEntry(mv[pos : pos + LOG_OVERHEAD + size]))
        pos += LOG_OVERHEAD + size
    return out


# -- encoding ------------------------------------------------------------------------------


def encode_message(
    magic: int,
    offset: int,
    timestamp: int,
    key: bytes | None,
    value: bytes | None,
    attributes: int = 0,
) -> bytes:
    """One log entry (offset, size, message) of magic 0 or 1."""
    if magic == MAGIC_V0:
        body = struct.pack(">bb", magic, attributes)
    else:
        body = struct.pack(">bbq", magic, attributes, timestamp)
    parts = [body]
    for blob in (key, value):
        if blob is None:
            parts.append(_I32.pack(-1))
        else:
            parts.append(_I32.pack(len(blob)))
            parts.append(bytes(blob))
    message = b"".join(parts)
    crc = zlib.crc32(message)
    return struct.pack(">qiI", offset, len(message) + 4, crc) + message


def encode_message_set(
    records: Sequence[NewRecord],
    *,
    magic: int,
    compression: CompressionType = CompressionType.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int = NO_TIMESTAMP,
) -> bytes:
    """A v0/v1 message set as Kafka's ``MemoryRecordsBuilder`` writes it.

    Offsets are the records' (absolute). Compressed: one wrapper whose offset is the last
    record's, with relative inner offsets in v1 and absolute ones in v0.
    """
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    if compression == CompressionType.ZSTD:
        raise ValueError("zstd needs magic 2")
    log_append = magic == MAGIC_V1 and timestamp_type == TimestampType.LOG_APPEND_TIME
    inner_attributes = LEGACY_TIMESTAMP_TYPE_MASK if log_append else 0

    def stamp(r: NewRecord) -> int:
        return log_append_time if log_append else r.timestamp

    if compression == CompressionType.NONE:
        return b"".join(
            encode_message(magic, r.offset, stamp(r), r.key, r.value, inner_attributes)
            for r in records
        )
    if not records:
        raise ValueError("a compressed message set needs at least one record")
    first = records[0].offset
    inner = b"".join(
        encode_message(
            magic,
            r.offset - first if magic == MAGIC_V1 else r.offset,
            stamp(r),
            r.key,
            r.value,
            inner_attributes,
        )
        for r in records
    )
    wrapper_ts = log_append_time if log_append else max(r.timestamp for r in records)
    return encode_message(
        magic,
        records[-1].offset,
        wrapper_ts,
        None,
        compress(compression, inner, magic),
        int(compression) | inner_attributes,
    )
