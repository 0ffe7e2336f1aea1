"""The batches the log cleaner writes in place of a v2 batch it keeps only part of: the kept
records re-encoded under the original header, or the header alone when none is kept.

Follows Kafka's ``MemoryRecords.buildRetainedRecordsInto`` and
``DefaultRecordBatch.writeEmptyHeader``, with the delete horizon of KIP-534
(docs/kafka-behaviour.md §15 "Compaction", §17 for transactional batches and markers). Not
here: which records are kept (``cleaner``), legacy (magic 0/1) entries, which the cleaner
re-encodes with ``encode_message_set``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import crc32c

from zkbroker.broker.protocol.records import (
    MAGIC_V2,
    NO_TIMESTAMP,
    CompressionType,
    NewRecord,
    Record,
    RecordBatchV2,
    TimestampType,
)
from zkbroker.broker.protocol.records.batch_v2 import encode_record
from zkbroker.broker.protocol.records.compression import compress
from zkbroker.broker.protocol.records.constants import (
    V2_ATTRIBUTES_OFFSET,
    V2_CONTROL_FLAG_MASK,
    V2_CRC_OFFSET,
    V2_DELETE_HORIZON_FLAG_MASK,
    V2_HEADER,
    V2_RECORDS_OFFSET,
    V2_TIMESTAMP_TYPE_MASK,
    V2_TRANSACTIONAL_FLAG_MASK,
)


def rebuild_batch(batch: RecordBatchV2, kept: Sequence[Record], delete_horizon_ms: int) -> bytes:
    """The kept records as one v2 batch with the original's header fields (Kafka's
    ``buildRetainedRecordsInto``: same base offset, last offset delta, producer fields,
    compression, timestamp type, leader epoch); with a delete horizon, the base timestamp
    is the horizon (KIP-534) and the record timestamp deltas are taken from it."""
    log_append = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    base_ts = delete_horizon_ms if delete_horizon_ms != NO_TIMESTAMP else kept[0].timestamp
    body = b"".join(
        encode_record(
            r.offset - batch.base_offset,
            r.timestamp - base_ts,
            NewRecord(r.offset, r.timestamp, r.key, r.value, r.headers),
        )
        for r in kept
    )
    if batch.compression != CompressionType.NONE:
        body = compress(batch.compression, body, MAGIC_V2)
    max_ts = batch.max_timestamp if log_append else max(r.timestamp for r in kept)
    attributes = int(batch.compression)
    if log_append:
        attributes |= V2_TIMESTAMP_TYPE_MASK
    if batch.is_transactional:
        attributes |= V2_TRANSACTIONAL_FLAG_MASK
    if batch.is_control:
        attributes |= V2_CONTROL_FLAG_MASK
    if delete_horizon_ms != NO_TIMESTAMP:
        attributes |= V2_DELETE_HORIZON_FLAG_MASK
    return _with_crc(
        V2_HEADER.pack(
            batch.base_offset,
            V2_RECORDS_OFFSET - 12 + len(body),
            batch.partition_leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            batch.last_offset_delta,
            base_ts,
            max_ts,
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            len(kept),
        ),
        body,
    )


def empty_batch(batch: RecordBatchV2) -> bytes:
    """Kafka's ``DefaultRecordBatch.writeEmptyHeader``: the header alone, no records,
    uncompressed, base timestamp -1 and the original max timestamp."""
    attributes = 0
    if batch.timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= V2_TIMESTAMP_TYPE_MASK
    if batch.is_transactional:
        attributes |= V2_TRANSACTIONAL_FLAG_MASK
    if batch.is_control:
        attributes |= V2_CONTROL_FLAG_MASK
    return _with_crc(
        V2_HEADER.pack(
            batch.base_offset,
            V2_RECORDS_OFFSET - 12,
            batch.partition_leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            batch.last_offset_delta,
            NO_TIMESTAMP,
            batch.max_timestamp,
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            0,
        ),
        b"",
    )


def _with_crc(header: bytes, body: bytes) -> bytes:
    out = bytearray(header)
    crc = crc32c.crc32c(body, crc32c.crc32c(bytes(out[V2_ATTRIBUTES_OFFSET:])))
    struct.pack_into(">I", out, V2_CRC_OFFSET, crc)
    return bytes(out) + body
