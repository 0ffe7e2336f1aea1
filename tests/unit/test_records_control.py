"""Transaction markers (KIP-98 control batches), read back by kafka-python."""

from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatch

from zkbroker.broker.protocol.records import RecordBatchV2
from zkbroker.broker.protocol.records.control import encode_end_txn_marker, read_end_txn_marker


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_marker(commit: bool) -> None:
    data = encode_end_txn_marker(
        commit=commit,
        offset=42,
        timestamp=1000,
        producer_id=7,
        producer_epoch=3,
        coordinator_epoch=11,
    )
    header = struct.unpack_from(">qiibIhiqqqhii", data)
    assert header[0] == 42 and header[5] == 0x10 | 0x20  # transactional, control
    assert (header[9], header[10], header[11]) == (7, 3, -1)
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc() and theirs.is_control_batch and theirs.is_transactional
    (record,) = list(theirs)
    assert (record.offset, record.version, record.commit) == (42, 0, commit)
    assert record.value == struct.pack(">hi", 0, 11)
    marker = read_end_txn_marker(RecordBatchV2(data))
    assert (marker.commit, marker.coordinator_epoch) == (commit, 11)
