"""PartitionLog's transactions: the last stable offset and the aborted index as appends, end
markers, retention and a rebuild from the log directory leave them (Kafka's
ProducerStateManager / TransactionIndex as UnifiedLog.append drives them, docs/kafka-behaviour.md
§17). Expected values are worked out by hand from the batches appended.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.records import NewRecord, RecordBatchV2, encode_batch
from zkbroker.broker.rules.producer_state import ProducerBatch
from zkbroker.broker.storage import LogManager, PartitionLog
from zkbroker.broker.storage.transactions import (
    AbortedTxn,
    CompletedTxn,
    TxnAppendError,
    append_end_txn_marker,
)

TOPIC_ID = uuid.UUID(int=0x77)
NOW = 1_700_000_000_000


@pytest.fixture(params=["memory", "disk"])
def manager(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogManager]:
    mgr = LogManager(None if request.param == "memory" else tmp_path / "logs")
    yield mgr
    mgr.close()


@pytest.fixture
def log(manager: LogManager) -> PartitionLog:
    return manager.get_or_create("t", 0, TOPIC_ID)


def _append(
    log: PartitionLog,
    count: int,
    *,
    producer_id: int = -1,
    epoch: int = -1,
    sequence: int = -1,
    transactional: bool = False,
    timestamp: int = NOW,
) -> None:
    base = log.log_end_offset
    records = [NewRecord(base + i, timestamp, None, b"v") for i in range(count)]
    data = encode_batch(
        records,
        base_offset=base,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        transactional=transactional,
        partition_leader_epoch=0,
    )
    log.append(
        data,
        base_offset=base,
        last_offset=base + count - 1,
        max_timestamp=timestamp,
        offset_of_max_timestamp=base,
        leader_epoch=0,
        now_ms=timestamp,
    )
    # Every replica has it (the LSO never passes the high watermark).
    log.update_high_watermark(log.log_end_offset)


def _marker(
    log: PartitionLog, producer_id: int, *, commit: bool, epoch: int = 0, coordinator: int = 0
) -> TxnAppendError | CompletedTxn | None:
    done = append_end_txn_marker(
        log,
        commit=commit,
        producer_id=producer_id,
        producer_epoch=epoch,
        coordinator_epoch=coordinator,
        leader_epoch=0,
        now_ms=NOW,
    )
    log.update_high_watermark(log.log_end_offset)
    return done


def test_plain_appends_keep_lso_at_the_high_watermark(log: PartitionLog) -> None:
    _append(log, 3)
    _append(log, 2, producer_id=5, epoch=0, sequence=0)
    assert log.last_stable_offset == log.high_watermark == 5
    assert log.transactions.ongoing == {}


def test_open_transaction_holds_the_lso_until_its_marker(log: PartitionLog) -> None:
    _append(log, 2)  # 0-1
    _append(log, 3, producer_id=7, epoch=0, sequence=0, transactional=True)  # 2-4
    _append(log, 1)  # 5
    assert log.high_watermark == 6
    assert log.last_stable_offset == 2
    done = _marker(log, 7, commit=True)  # 6
    assert done == CompletedTxn(7, 2, 6, aborted=False)
    assert log.last_stable_offset == log.high_watermark == 7
    assert log.aborted_transactions(0, 7) == []


def test_aborted_transactions_are_indexed_with_their_lso(log: PartitionLog) -> None:
    _append(log, 2, producer_id=1, epoch=0, sequence=0, transactional=True)  # 0-1
    _append(log, 2, producer_id=2, epoch=0, sequence=0, transactional=True)  # 2-3
    assert _marker(log, 1, commit=False) == CompletedTxn(1, 0, 4, aborted=True)  # 4
    # Producer 2's transaction is still open: the entry's LSO is its first offset.
    assert log.last_stable_offset == 2
    assert _marker(log, 2, commit=False) == CompletedTxn(2, 2, 5, aborted=True)  # 5
    assert log.last_stable_offset == 6
    assert log.aborted_transactions(0, 6) == [AbortedTxn(1, 0, 4, 2), AbortedTxn(2, 2, 5, 6)]
    # Listed while the marker is at or after the fetch offset (collectAbortedTxns).
    assert [t.producer_id for t in log.aborted_transactions(4, 6)] == [1, 2]
    assert [t.producer_id for t in log.aborted_transactions(5, 6)] == [2]
    assert log.aborted_transactions(6, 7) == []
    # An upper bound at or below the first transaction's LSO stops the scan there.
    assert [t.producer_id for t in log.aborted_transactions(0, 1)] == [1]


def test_marker_without_data_completes_nothing(log: PartitionLog) -> None:
    _append(log, 1)
    assert _marker(log, 9, commit=False) is None
    assert log.last_stable_offset == 2
    assert log.aborted_transactions(0, 2) == []


def test_non_transactional_write_while_ongoing_is_refused_by_check(log: PartitionLog) -> None:
    _append(log, 1, producer_id=3, epoch=0, sequence=0, transactional=True)
    records = [NewRecord(1, NOW, None, b"v")]
    batch_bytes = encode_batch(
        records, base_offset=1, producer_id=3, producer_epoch=0, base_sequence=1
    )
    error = log.transactions.check(RecordBatchV2(batch_bytes), "t-0")
    assert error is not None and error.code == ec.INVALID_TXN_STATE
    assert error.message == (
        "Expected transactional write from producer 3 at offset (offset=1, segment=[-1:-1]) "
        "in partition t-0"
    )


def test_marker_epoch_fences_the_older_epoch(log: PartitionLog) -> None:
    _append(log, 1, producer_id=4, epoch=0, sequence=0, transactional=True)
    # The coordinator bumped the epoch when fencing: the abort marker carries epoch 1.
    assert _marker(log, 4, commit=False, epoch=1) == CompletedTxn(4, 0, 1, aborted=True)
    assert log.producers.entries[4].epoch == 1
    stale = ProducerBatch(4, 0, 1, 1, 2, 2, NOW)
    problem = log.producers.check(stale, "t-0")
    assert problem is not None and problem.code == ec.INVALID_PRODUCER_EPOCH
    # A marker older than the producer's epoch is refused before anything is written.
    refused = _marker(log, 4, commit=True, epoch=0)
    assert isinstance(refused, TxnAppendError)
    assert refused.code == ec.INVALID_PRODUCER_EPOCH
    assert refused.message == (
        "Epoch of producer 4 at offset 2 in t-0 is 0, which is smaller than the last seen epoch 1"
    )
    assert log.log_end_offset == 2


def test_zombie_coordinator_is_fenced(log: PartitionLog) -> None:
    _append(log, 1, producer_id=6, epoch=0, sequence=0, transactional=True)
    assert isinstance(_marker(log, 6, commit=True, coordinator=3), CompletedTxn)
    _append(log, 1, producer_id=6, epoch=0, sequence=1, transactional=True)
    refused = _marker(log, 6, commit=False, coordinator=2)
    assert isinstance(refused, TxnAppendError)
    assert refused.code == ec.TRANSACTION_COORDINATOR_FENCED
    assert log.last_stable_offset == 2


def test_rebuild_from_the_directory_gives_the_same_state(tmp_path: Path) -> None:
    first = LogManager(tmp_path / "logs")
    log = first.get_or_create("t", 0, TOPIC_ID)
    _append(log, 2, producer_id=1, epoch=0, sequence=0, transactional=True)  # 0-1
    _append(log, 1)  # 2
    _marker(log, 1, commit=False)  # 3
    _append(log, 2, producer_id=2, epoch=0, sequence=0, transactional=True)  # 4-5
    expected = (log.last_stable_offset, log.aborted_transactions(0, 6), log.transactions.ongoing)
    first.close()
    second = LogManager(tmp_path / "logs")
    try:
        again = second.get_or_create("t", 0, TOPIC_ID)
        got = (again.last_stable_offset, again.aborted_transactions(0, 6))
        assert (*got, again.transactions.ongoing) == expected
        assert expected[0] == 4 and expected[2] == {2: 4}
    finally:
        second.close()


def test_another_process_appends_are_observed(tmp_path: Path) -> None:
    writer_mgr, reader_mgr = LogManager(tmp_path / "logs"), LogManager(tmp_path / "logs")
    try:
        writer = writer_mgr.get_or_create("t", 0, TOPIC_ID)
        reader = reader_mgr.get_or_create("t", 0, TOPIC_ID)
        _append(writer, 1, producer_id=8, epoch=0, sequence=0, transactional=True)
        reader.refresh_if_changed()
        # Each PartitionLog keeps its own high watermark: the reader's follows its log end.
        reader.update_high_watermark(reader.log_end_offset)
        assert reader.last_stable_offset == 0
        with writer.append_lock():
            _marker(writer, 8, commit=False)
        reader.refresh_if_changed()
        reader.update_high_watermark(reader.log_end_offset)
        assert reader.last_stable_offset == 2
        assert reader.aborted_transactions(0, 2) == [AbortedTxn(8, 0, 1, 2)]
    finally:
        writer_mgr.close()
        reader_mgr.close()


def test_retention_drops_index_entries_with_their_segments(manager: LogManager) -> None:
    log = manager.get_or_create("r", 0, TOPIC_ID)
    log.segment_bytes = 1  # every batch rolls a segment
    _append(log, 1, producer_id=1, epoch=0, sequence=0, transactional=True, timestamp=NOW)
    _marker(log, 1, commit=False)  # aborted, marker at 1
    _append(log, 1, timestamp=NOW + 10_000)  # 2
    assert len(log.aborted_transactions(0, 3)) == 1
    log.apply_retention(NOW + 10_000, retention_ms=5_000, retention_bytes=-1)
    assert log.log_start_offset == 2
    assert log.aborted_transactions(0, 3) == []
