"""A partition's transactions as Kafka 3.9's ProducerStateManager / TransactionIndex keep them:
ongoing transactions, the last stable offset, aborted transactions for Fetch, and markers
(docs/kafka-behaviour.md §17)."""

from __future__ import annotations

import struct

import pytest

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.records import NewRecord, RecordBatchV2, encode_batch
from zkbroker.broker.protocol.records.batch_v2 import crc32c_of
from zkbroker.broker.protocol.records.control import encode_end_txn_marker, read_end_txn_marker
from zkbroker.broker.storage.partition_log import PartitionLog
from zkbroker.broker.storage.transactions import (
    AbortedTxn,
    CompletedTxn,
    PartitionTransactions,
    TxnAppendError,
    append_end_txn_marker,
)


class Log:
    """Batches at consecutive offsets, each observed as an append would."""

    def __init__(self) -> None:
        self.txns = PartitionTransactions()
        self.next = 0
        self.completed: list[CompletedTxn] = []

    def data(self, pid: int, count: int = 1, transactional: bool = True) -> int:
        start = self.next
        recs = [NewRecord(start + i, 1000, None, b"v") for i in range(count)]
        raw = encode_batch(
            recs, base_offset=start, producer_id=pid, producer_epoch=0, transactional=transactional
        )
        self._observe(raw)
        return start

    def marker(self, pid: int, commit: bool, coordinator_epoch: int = 0) -> int:
        at = self.next
        raw = encode_end_txn_marker(
            commit=commit,
            offset=at,
            timestamp=1000,
            producer_id=pid,
            producer_epoch=0,
            coordinator_epoch=coordinator_epoch,
        )
        self._observe(raw)
        return at

    def _observe(self, raw: bytes) -> None:
        batch = RecordBatchV2(raw)
        assert self.txns.check(batch, "t-0") is None
        done = self.txns.observe(batch)
        if done is not None:
            self.completed.append(done)
        self.next = batch.last_offset + 1


def test_no_transactions_lso_is_the_high_watermark() -> None:
    log = Log()
    log.data(1, 3, transactional=False)
    assert log.txns.first_unstable_offset is None
    assert log.txns.last_stable_offset(3) == 3


def test_open_transaction_holds_the_lso_at_its_first_offset() -> None:
    log = Log()
    log.data(9, transactional=False)  # 0
    log.data(1, 2)  # 1-2 open
    log.data(2)  # 3 open
    log.data(1)  # 4: same transaction, first offset stays 1
    assert log.txns.ongoing == {1: 1, 2: 3}
    assert log.txns.last_stable_offset(5) == 1
    log.marker(1, commit=True)  # 5
    assert log.txns.last_stable_offset(6) == 3
    log.marker(2, commit=True)  # 6
    assert log.txns.last_stable_offset(7) == 7
    assert log.completed == [CompletedTxn(1, 1, 5, False), CompletedTxn(2, 3, 6, False)]
    assert log.txns.aborted == []  # commits are not indexed


def test_lso_never_passes_the_high_watermark() -> None:
    log = Log()
    log.data(1, 5, transactional=False)
    assert log.txns.last_stable_offset(2) == 2


def test_abort_is_indexed_with_the_lso_at_that_time() -> None:
    log = Log()
    log.data(1)  # 0: txn of producer 1
    log.data(2)  # 1: txn of producer 2
    log.marker(1, commit=False)  # 2: abort; producer 2 still open from 1
    log.data(3)  # 3
    log.marker(3, commit=False)  # 4: abort; producer 2 still open from 1
    log.marker(2, commit=False)  # 5: abort; nothing open: LSO = 6
    assert log.txns.aborted == [
        AbortedTxn(1, 0, 2, 1),
        AbortedTxn(3, 3, 4, 1),
        AbortedTxn(2, 1, 5, 6),
    ]


def test_marker_without_data_completes_nothing() -> None:
    log = Log()
    log.marker(1, commit=False)
    assert log.completed == [] and log.txns.aborted == []
    assert log.txns.last_stable_offset(1) == 1


@pytest.mark.parametrize(
    ("fetch", "upper", "expected"),
    [
        (0, 10, [(1, 0), (2, 3)]),
        (3, 4, [(2, 3)]),  # only the second overlaps [3, 4)
        (5, 10, [(2, 3)]),  # its marker (6) is at or after the fetch offset
        (7, 10, []),  # both ended before the fetch
        (0, 1, [(1, 0)]),
    ],
)
def test_aborted_transactions_for_a_fetch(
    fetch: int, upper: int, expected: list[tuple[int, int]]
) -> None:
    log = Log()
    log.data(1, 2)  # 0-1
    log.marker(1, commit=False)  # 2
    log.data(2, 2)  # 3-4
    log.data(3)  # 5: committed later, never listed
    log.marker(2, commit=False)  # 6
    log.marker(3, commit=True)  # 7
    got = log.txns.aborted_transactions(fetch, upper)
    assert [(t.producer_id, t.first_offset) for t in got] == expected


def test_search_stops_once_an_entry_is_stable_past_the_bound() -> None:
    # collectAbortedTxns' early stop: entries after one whose LSO reaches the bound are not read.
    txns = PartitionTransactions(
        aborted=[AbortedTxn(1, 0, 2, 3), AbortedTxn(2, 1, 9, 10)]  # a contrived later entry
    )
    assert txns.aborted_transactions(0, 3) == [AbortedTxn(1, 0, 2, 3)]


def test_retention_drops_entries_with_their_segment() -> None:
    log = Log()
    log.data(1)
    log.marker(1, commit=False)  # 1
    log.data(2)
    log.marker(2, commit=False)  # 3
    log.txns.drop_segments_below(2)
    assert [t.producer_id for t in log.txns.aborted] == [2]


def test_non_transactional_write_during_a_transaction_is_rejected() -> None:
    log = Log()
    log.data(1)
    raw = encode_batch(
        [NewRecord(1, 0, None, b"v")], base_offset=1, producer_id=1, producer_epoch=0
    )
    err = log.txns.check(RecordBatchV2(raw), "t-0")
    # ProducerAppendInfo: InvalidTxnStateException
    assert err == TxnAppendError(
        ec.INVALID_TXN_STATE,
        "Expected transactional write from producer 1 at offset (offset=1, segment=[-1:-1]) in "
        "partition t-0",
    )


def test_emptied_control_batch_completes_nothing() -> None:
    # ProducerAppendInfo.append: a control batch the cleaner emptied is skipped.
    log = Log()
    log.data(1)
    marker = encode_end_txn_marker(
        commit=False, offset=1, timestamp=0, producer_id=1, producer_epoch=0, coordinator_epoch=0
    )
    # The same header with no records: length 49, count 0, CRC over attributes..count again.
    header = bytearray(marker[:61])
    struct.pack_into(">i", header, 8, 49)
    struct.pack_into(">i", header, 57, 0)
    struct.pack_into(">I", header, 17, crc32c_of(bytes(header[21:])))
    empty = RecordBatchV2(bytes(header))
    assert empty.is_valid() and empty.is_control and empty.records_count == 0
    assert log.txns.check(empty, "t-0") is None
    assert log.txns.observe(empty) is None
    assert log.txns.ongoing == {1: 0}


def test_zombie_coordinator_marker_is_fenced() -> None:
    log = Log()
    log.data(1)
    log.marker(1, commit=True, coordinator_epoch=5)
    raw = encode_end_txn_marker(
        commit=False, offset=2, timestamp=0, producer_id=1, producer_epoch=0, coordinator_epoch=4
    )
    err = log.txns.check(RecordBatchV2(raw), "t-0")
    assert err == TxnAppendError(
        ec.TRANSACTION_COORDINATOR_FENCED,
        "Invalid coordinator epoch for producerId 1 at offset 2 in partition t-0: 4 (zombie), "
        "5 (current)",
    )


def test_append_end_txn_marker_writes_a_control_batch() -> None:
    plog = PartitionLog("t", 0, None)
    txns = PartitionTransactions()
    raw = encode_batch(
        [NewRecord(0, 1000, None, b"a"), NewRecord(1, 1000, None, b"b")],
        producer_id=4,
        producer_epoch=2,
        base_sequence=0,
        transactional=True,
    )
    plog.append(
        raw, base_offset=0, last_offset=1, max_timestamp=1000, offset_of_max_timestamp=1,
        leader_epoch=0, now_ms=1000,
    )  # fmt: skip
    txns.observe(RecordBatchV2(raw))
    plog.update_high_watermark(plog.log_end_offset)
    assert txns.last_stable_offset(plog.high_watermark) == 0
    done = append_end_txn_marker(
        plog,
        txns,
        commit=False,
        producer_id=4,
        producer_epoch=2,
        coordinator_epoch=3,
        leader_epoch=0,
        now_ms=2000,
    )
    assert done == CompletedTxn(4, 0, 2, True)
    assert plog.log_end_offset == 3
    plog.update_high_watermark(plog.log_end_offset)
    assert txns.last_stable_offset(plog.high_watermark) == 3
    assert txns.aborted_transactions(0, 3) == [AbortedTxn(4, 0, 2, 3)]
    marker_batch = RecordBatchV2(plog.read(2, 1 << 20))
    assert marker_batch.is_control and marker_batch.is_transactional
    assert (marker_batch.base_offset, marker_batch.producer_id, marker_batch.producer_epoch) == (
        2,
        4,
        2,
    )
    marker = read_end_txn_marker(marker_batch)
    assert (marker.commit, marker.coordinator_epoch) == (False, 3)
    # A zombie coordinator's marker is refused and nothing is written.
    zombie = append_end_txn_marker(
        plog,
        txns,
        commit=True,
        producer_id=4,
        producer_epoch=2,
        coordinator_epoch=2,
        leader_epoch=0,
        now_ms=3000,
    )
    assert isinstance(zombie, TxnAppendError) and zombie.code == ec.TRANSACTION_COORDINATOR_FENCED
    assert plog.log_end_offset == 3


def test_rebuild_from_log_chunks_matches_the_appends() -> None:
    log = Log()
    chunks = []
    for step in range(3):
        start = log.next
        log.data(1)
        log.data(2, 2)
        log.marker(1, commit=step % 2 == 0)
        raw = [
            encode_batch(
                [NewRecord(start, 1000, None, b"v")],
                base_offset=start, producer_id=1, producer_epoch=0, transactional=True,
            ),
            encode_batch(
                [NewRecord(start + 1, 1000, None, b"v"), NewRecord(start + 2, 1000, None, b"v")],
                base_offset=start + 1, producer_id=2, producer_epoch=0, transactional=True,
            ),
            encode_end_txn_marker(
                commit=step % 2 == 0, offset=start + 3, timestamp=1000, producer_id=1,
                producer_epoch=0, coordinator_epoch=0,
            ),
        ]  # fmt: skip
        chunks.append(b"".join(raw))
    rebuilt = PartitionTransactions()
    for chunk in chunks:
        rebuilt.observe_chunk(chunk)
    assert rebuilt.observe_chunk(chunks[0]) == log.next  # already seen: nothing changes
    assert rebuilt == log.txns
