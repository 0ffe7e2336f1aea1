"""Transaction markers: control batches that end a transaction (KIP-98).

A marker is a v2 batch with the transactional and control bits set and one record whose key
is (version int16 = 0, type int16: 0 abort, 1 commit) and whose value is Kafka's
``EndTransactionMarker`` (version int16 = 0, coordinator epoch int32). Follows Kafka's
``ControlRecordType``, ``EndTransactionMarker`` and ``MemoryRecords.withEndTransactionMarker``.

Deliberately not here: when to write one (the transaction coordinator), or
other control record types (KRaft's, which a ZooKeeper broker never writes).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from zkbroker.broker.protocol.records.batch_v2 import NewRecord, RecordBatchV2, encode_batch
from zkbroker.broker.protocol.records.errors import InvalidRecordError

ABORT = 0
COMMIT = 1

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def encode_end_txn_marker(
    *,
    commit: bool,
    offset: int,
    timestamp: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    partition_leader_epoch: int = -1,
) -> bytes:
    """One control batch holding a COMMIT or ABORT marker at ``offset``."""
    record = NewRecord(
        offset,
        timestamp,
        _KEY.pack(0, COMMIT if commit else ABORT),
        _VALUE.pack(0, coordinator_epoch),
    )
    return encode_batch(
        [record],
        base_offset=offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


@dataclass(frozen=True)
class EndTxnMarker:
    commit: bool
    coordinator_epoch: int


def read_end_txn_marker(batch: RecordBatchV2) -> EndTxnMarker:
    """The marker of a control batch (Kafka's ``EndTransactionMarker.deserialize``)."""
    records = batch.records()
    if not batch.is_control or len(records) != 1:
        raise InvalidRecordError("Expected a control batch with one record")
    key, value = records[0].key, records[0].value
    if key is None or len(key) < _KEY.size or value is None or len(value) < _VALUE.size:
        raise InvalidRecordError("Invalid end transaction marker")
    _, kind = _KEY.unpack_from(key)
    if kind not in (ABORT, COMMIT):
        raise InvalidRecordError(f"Invalid control record type {kind} for an end marker")
    _, coordinator_epoch = _VALUE.unpack_from(value)
    return EndTxnMarker(kind == COMMIT, coordinator_epoch)
