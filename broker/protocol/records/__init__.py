"""Kafka's record formats as pure code: batch v2 (KIP-98) and legacy v0/v1 message sets.

- ``reader.iter_batches``: a produce payload split into batches, headers parsed lazily;
- ``batch_v2``: read records, rewrite broker-assigned header fields, encode batches;
- ``legacy``: magic 0/1 messages and compressed wrappers;
- ``control``: transaction markers (control batches);
- ``compression``: gzip, snappy (xerial framing), lz4 (Kafka's frame, KAFKA-3160), zstd
  (KIP-110);
- ``varint``: zig-zag varints.

Deliberately not here: Kafka's validation rules (``zkbroker.broker.rules.log_validation``), storage,
and any API handler.
"""

from __future__ import annotations

from zkbroker.broker.protocol.records.batch_v2 import NewRecord, RecordBatchV2, encode_batch
from zkbroker.broker.protocol.records.constants import (
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_TIMESTAMP,
    CompressionType,
    TimestampType,
)
from zkbroker.broker.protocol.records.errors import (
    CorruptRecordError,
    DecompressionError,
    InvalidRecordError,
    RecordFormatError,
    UnknownCompressionError,
)
from zkbroker.broker.protocol.records.legacy import LegacyEntry, encode_message_set
from zkbroker.broker.protocol.records.reader import Batch, iter_batches, read_batches
from zkbroker.broker.protocol.records.record import Header, Record

__all__ = [
    "MAGIC_V0",
    "MAGIC_V1",
    "MAGIC_V2",
    "NO_TIMESTAMP",
    "Batch",
    "CompressionType",
    "CorruptRecordError",
    "DecompressionError",
    "Header",
    "InvalidRecordError",
    "LegacyEntry",
    "NewRecord",
    "Record",
    "RecordBatchV2",
    "RecordFormatError",
    "TimestampType",
    "UnknownCompressionError",
    "encode_batch",
    "encode_message_set",
    "iter_batches",
    "read_batches",
]
