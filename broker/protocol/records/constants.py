"""Constants of Kafka's record formats: magic values, attribute bits, header offsets.

Follows Kafka's ``RecordBatch``, ``DefaultRecordBatch`` (KIP-98: magic 2), ``LegacyRecord``
(magic 0 and 1, KIP-32 timestamps) and ``CompressionType`` (KIP-110 adds zstd).

Deliberately not here: any parsing (``batch_v2``, ``legacy``) or codec (``compression``).
"""

from __future__ import annotations

import struct
from enum import IntEnum

from zkbroker.broker.protocol.records.errors import UnknownCompressionError

MAGIC_V0 = 0
MAGIC_V1 = 1
MAGIC_V2 = 2

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

# Every batch, whatever its magic, starts with an int64 offset and an int32 size; the magic
# byte sits at the same position (16) in all three formats.
LOG_OVERHEAD = 12
MAGIC_OFFSET = 16
HEADER_SIZE_UP_TO_MAGIC = 17


class CompressionType(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def kafka_name(self) -> str:
        """Kafka's ``CompressionType.name`` (what its toString prints)."""
        return self.name.lower()


class TimestampType(IntEnum):
    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def kafka_name(self) -> str:
        return {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}[int(self)]


COMPRESSION_CODEC_MASK = 0x07

# Magic 2 batch header (KIP-98). Offsets are from the start of the batch.
V2_CRC_OFFSET = 17  # the CRC-32C covers attributes..end
V2_ATTRIBUTES_OFFSET = 21
V2_MAX_TIMESTAMP_OFFSET = 35
V2_RECORDS_OFFSET = 61
V2_RECORD_BATCH_OVERHEAD = V2_RECORDS_OFFSET

V2_TIMESTAMP_TYPE_MASK = 0x08
V2_TRANSACTIONAL_FLAG_MASK = 0x10
V2_CONTROL_FLAG_MASK = 0x20
V2_DELETE_HORIZON_FLAG_MASK = 0x40  # KIP-534: base timestamp is the delete horizon

# baseOffset, length, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
V2_HEADER = struct.Struct(">qiibIhiqqqhii")

# Legacy messages (magic 0 and 1): offset, size, crc, magic, attributes [, timestamp]
LEGACY_TIMESTAMP_TYPE_MASK = 0x08
LEGACY_HEADER_V0 = struct.Struct(">qiIbb")
LEGACY_HEADER_V1 = struct.Struct(">qiIbbq")
LEGACY_RECORD_OVERHEAD_V0 = 14  # crc, magic, attributes, key length, value length
LEGACY_RECORD_OVERHEAD_V1 = 22  # the same and the timestamp
# The CRC-32 of a legacy message covers magic..end (from MAGIC_OFFSET in a log entry).


def compression_of(attributes: int) -> CompressionType:
    """The codec named by a batch's or wrapper message's attributes (the same low 3 bits in
    every magic); ids 5-7 are Kafka's "Unknown compression type id"."""
    codec = attributes & COMPRESSION_CODEC_MASK
    if codec > CompressionType.ZSTD:
        raise UnknownCompressionError(f"Unknown compression type id: {codec}")
    return CompressionType(codec)
