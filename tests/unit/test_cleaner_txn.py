"""The log cleaner (broker/storage/cleaner.py) on transactional data, both backends.

Expectations are worked out by hand from the batches appended, following Kafka 3.9's
``LogCleaner`` (``cleanableOffsets``' last stable offset bound, ``CleanedTransactionMetadata``,
``cleanInto``'s batch retention; docs/kafka-behaviour.md §15 and §17): nothing at or past the
first unstable offset is cleaned, aborted transactions' records go whatever their keys and
never shadow a committed key, markers stay while their transaction's batches are seen, then
get a delete horizon and go after it, and the aborted index keeps only the entries whose marker
stayed with batches seen.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from zkbroker.broker.protocol.records import NewRecord, RecordBatchV2, encode_batch, iter_batches
from zkbroker.broker.protocol.records.control import encode_end_txn_marker
from zkbroker.broker.storage import LogManager, PartitionLog
from zkbroker.broker.storage.cleaner import CleanerStats, CompactionConfig, clean_log
from zkbroker.broker.storage.transactions import AbortedTxn

TOPIC_ID = uuid.UUID(int=0x7C1EA7)
DAY = 86_400_000
NOW = 10_000
EAGER = CompactionConfig(min_cleanable_ratio=0.0)

KV = tuple[bytes, bytes | None]


@pytest.fixture(params=["memory", "disk"])
def manager(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogManager]:
    mgr = LogManager(None if request.param == "memory" else tmp_path / "logs")
    yield mgr
    mgr.close()


@pytest.fixture
def log(manager: LogManager) -> PartitionLog:
    return manager.get_or_create("t", 0, TOPIC_ID)


def _append(log: PartitionLog, data: bytes, count: int, *, roll: bool) -> int:
    base = log.log_end_offset
    saved = log.segment_bytes
    if roll:
        log.segment_bytes = 1
    try:
        log.append(
            data,
            base_offset=base,
            last_offset=base + count - 1,
            max_timestamp=1_000,
            offset_of_max_timestamp=base + count - 1,
            leader_epoch=0,
        )
    finally:
        log.segment_bytes = saved
    # Every replica has it: the cleaner stops at the last stable offset, below the HW.
    log.update_high_watermark(log.log_end_offset)
    return base


def put(
    log: PartitionLog,
    items: Sequence[KV],
    *,
    pid: int = -1,
    seq: int = -1,
    txn: bool = False,
    roll: bool = False,
) -> int:
    """One batch at the log end (a new segment with ``roll``); transactional with ``txn``."""
    base = log.log_end_offset
    data = encode_batch(
        [NewRecord(base + i, 1_000, k, v) for i, (k, v) in enumerate(items)],
        base_offset=base,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=seq,
        transactional=txn,
    )
    return _append(log, data, len(items), roll=roll)


def marker(log: PartitionLog, pid: int, *, commit: bool, roll: bool = False) -> int:
    data = encode_end_txn_marker(
        commit=commit,
        offset=log.log_end_offset,
        timestamp=1_000,
        producer_id=pid,
        producer_epoch=0,
        coordinator_epoch=0,
    )
    return _append(log, data, 1, roll=roll)


def batches(log: PartitionLog) -> list[RecordBatchV2]:
    out: list[RecordBatchV2] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data:
            break
        for batch in iter_batches(data):
            assert isinstance(batch, RecordBatchV2)
            out.append(batch)
            offset = batch.last_offset + 1
    return out


def data_records(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [
        (r.offset, r.key, r.value) for b in batches(log) if not b.is_control for r in b.records()
    ]


def read_committed(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    """What a read_committed consumer gets: below the LSO, skipping the batches of the aborted
    transactions Fetch lists (as the clients do with the aborted list)."""
    lso = log.last_stable_offset
    aborted = log.aborted_transactions(0, lso)
    out = []
    for b in batches(log):
        if b.is_control or b.base_offset >= lso:
            continue
        if b.is_transactional and any(
            t.producer_id == b.producer_id and t.first_offset <= b.base_offset <= t.last_offset
            for t in aborted
        ):
            continue
        out.extend((r.offset, r.key, r.value) for r in b.records())
    return out


def markers(log: PartitionLog) -> list[tuple[int, int, bool]]:
    """(offset, records, has a delete horizon) of each control batch."""
    return [
        (b.base_offset, b.records_count, b.has_delete_horizon) for b in batches(log) if b.is_control
    ]


def clean(log: PartitionLog, now: int = NOW, config: CompactionConfig = EAGER) -> CleanerStats:
    stats = asyncio.run(clean_log(log, config, now))
    assert stats is not None, "expected a cleaning round"
    return stats


def reopened(manager: LogManager) -> tuple[LogManager, PartitionLog] | None:
    if manager.log_dir is None:
        return None
    manager.checkpoint_high_watermarks()  # what a restart finds
    fresh = LogManager(manager.log_dir)
    return fresh, fresh.get_or_create("t", 0, TOPIC_ID)


def test_nothing_at_or_past_the_first_unstable_offset_is_cleaned(log: PartitionLog) -> None:
    put(log, [(b"k1", b"a0"), (b"k1", b"a1")])  # 0-1
    put(log, [(b"k1", b"t")], pid=5, seq=0, txn=True, roll=True)  # 2: open transaction
    put(log, [(b"k2", b"b")], roll=True)  # 3
    put(log, [(b"k9", b"z")], roll=True)  # 4: active
    assert log.last_stable_offset == 2
    stats = clean(log)
    # The round stops at the segment holding the LSO: k1=a1 is not shadowed by the open
    # transaction's k1=t, which may still abort.
    assert stats.end_offset == 2
    assert data_records(log) == [
        (1, b"k1", b"a1"),
        (2, b"k1", b"t"),
        (3, b"k2", b"b"),
        (4, b"k9", b"z"),
    ]
    assert log.last_stable_offset == 2


def _committed_and_aborted(log: PartitionLog) -> None:
    put(log, [(b"k1", b"v0")])  # 0
    put(log, [(b"k1", b"c1"), (b"k2", b"c2")], pid=10, seq=0, txn=True)  # 1-2
    marker(log, 10, commit=True)  # 3
    put(log, [(b"k1", b"x1"), (b"k3", b"x3")], pid=11, seq=0, txn=True)  # 4-5
    marker(log, 11, commit=False)  # 6
    put(log, [(b"k4", b"y")], pid=11, seq=2, txn=True)  # 7
    marker(log, 11, commit=True)  # 8
    put(log, [(b"k9", b"z")], roll=True)  # 9: active


def test_aborted_records_go_and_never_shadow_a_committed_key(log: PartitionLog) -> None:
    _committed_and_aborted(log)
    assert log.aborted_transactions(0, 10) == [AbortedTxn(11, 4, 6, 7)]
    before_committed = read_committed(log)
    clean(log)
    expected = [(1, b"k1", b"c1"), (2, b"k2", b"c2"), (7, b"k4", b"y"), (9, b"k9", b"z")]
    assert data_records(log) == expected  # read_uncommitted: the aborted k1=x1, k3=x3 are gone
    assert read_committed(log) == expected
    assert [r for r in before_committed if r[0] != 0] == expected  # k1=v0 was superseded
    # Every marker stays: each one's batches were seen this round (the ABORT's were removed now).
    assert markers(log) == [(3, 1, False), (6, 1, False), (8, 1, False)]
    # The cleaned index keeps the entry whose marker stayed with batches seen.
    assert log.aborted_transactions(0, 10) == [AbortedTxn(11, 4, 6, 7)]
    assert log.last_stable_offset == log.log_end_offset


def test_an_abort_marker_gets_a_horizon_once_its_batches_are_gone_then_goes(
    log: PartitionLog,
) -> None:
    _committed_and_aborted(log)
    clean(log)
    put(log, [(b"k5", b"w")], roll=True)  # 10: active, 9 now dirty
    clean(log, NOW)
    # No batch of the aborted transaction is left: its index entry goes, its marker waits out
    # delete.retention.ms; the COMMIT markers stay (their batches survive).
    assert markers(log) == [(3, 1, False), (6, 1, True), (8, 1, False)]
    assert log.aborted_transactions(0, 11) == []
    horizon = next(b for b in batches(log) if b.base_offset == 6).base_timestamp
    assert horizon == NOW + DAY
    put(log, [(b"k6", b"u")], roll=True)  # 11
    clean(log, NOW + DAY - 1)
    assert [m[0] for m in markers(log)] == [3, 6, 8]
    put(log, [(b"k7", b"s")], roll=True)  # 12
    clean(log, NOW + DAY)
    assert markers(log) == [(3, 1, False), (8, 1, False)]
    assert read_committed(log) == [
        (1, b"k1", b"c1"),
        (2, b"k2", b"c2"),
        (7, b"k4", b"y"),
        (9, b"k9", b"z"),
        (10, b"k5", b"w"),
        (11, b"k6", b"u"),
        (12, b"k7", b"s"),
    ]


def test_a_producers_last_aborted_batch_stays_empty_and_the_rebuild_agrees(
    log: PartitionLog, manager: LogManager
) -> None:
    put(log, [(b"k1", b"c")], pid=10, seq=0, txn=True)  # 0
    marker(log, 10, commit=True)  # 1
    put(log, [(b"k1", b"x")], pid=11, seq=0, txn=True)  # 2: pid 11's last batch
    marker(log, 11, commit=False)  # 3
    put(log, [(b"k9", b"z")], roll=True)  # 4: active
    clean(log)
    emptied = next(b for b in batches(log) if b.base_offset == 2)
    assert (emptied.records_count, emptied.producer_id, emptied.is_transactional) == (0, 11, True)
    assert data_records(log) == [(0, b"k1", b"c"), (4, b"k9", b"z")]
    assert log.aborted_transactions(0, 5) == [AbortedTxn(11, 2, 3, 4)]
    again = reopened(manager)
    if again is not None:
        mgr2, log2 = again
        try:
            # Rebuilt from the files: the same aborted entry, no transaction left open.
            assert log2.aborted_transactions(0, 5) == [AbortedTxn(11, 2, 3, 4)]
            assert log2.last_stable_offset == log2.log_end_offset
        finally:
            mgr2.close()


def test_a_commit_marker_stays_while_its_batch_survives_in_an_earlier_group(
    log: PartitionLog, manager: LogManager
) -> None:
    put(log, [(b"k1", b"c")], pid=10, seq=0, txn=True)  # 0
    marker(log, 10, commit=True, roll=True)  # 1: its own segment, so its own group
    put(log, [(b"k2", b"b")], roll=True)  # 2
    put(log, [(b"k9", b"z")], roll=True)  # 3: active
    one_segment_a_group = CompactionConfig(min_cleanable_ratio=0.0, segment_bytes=1)
    clean(log, NOW, one_segment_a_group)
    put(log, [(b"k8", b"y")], roll=True)
    clean(log, NOW + 2 * DAY, one_segment_a_group)
    assert markers(log) == [(1, 1, False)]
    again = reopened(manager)
    if again is not None:
        mgr2, log2 = again
        try:
            assert log2.last_stable_offset == log2.log_end_offset
        finally:
            mgr2.close()


def test_producer_expiry_never_drops_a_producer_with_an_open_transaction(
    log: PartitionLog,
) -> None:
    put(log, [(b"k1", b"t")], pid=5, seq=0, txn=True)  # 0: pid 5's transaction stays open
    put(log, [(b"k2", b"i")], pid=6, seq=0)  # 1: an idempotent producer
    later = 1_000 + DAY
    assert log.expire_producers(later, DAY) == 1
    assert set(log.producers.entries) == {5}
    marker(log, 5, commit=True)  # 2: the transaction ends; pid 5 may now expire
    assert log.expire_producers(later, DAY) == 1
    assert log.producers.entries == {}


def test_a_producers_last_marker_without_data_stays_empty_and_still_fences(
    log: PartitionLog, manager: LogManager
) -> None:
    put(log, [(b"k1", b"x")], pid=9, seq=0, txn=True)  # 0: epoch 0
    data = encode_end_txn_marker(
        commit=False,
        offset=1,
        timestamp=1_000,
        producer_id=9,
        producer_epoch=1,  # the coordinator bumped the epoch when it aborted
        coordinator_epoch=0,
    )
    _append(log, data, 1, roll=False)  # 1: pid 9 now has no data batch of epoch 1
    for n, now in enumerate((NOW, NOW, NOW + DAY)):
        put(log, [(f"f{n}".encode(), b"f")], roll=True)
        put(log, [(b"k9", b"z")], roll=True)
        clean(log, now)
    # The aborted record went; the marker's record went after its horizon, its header stays.
    assert [(b.base_offset, b.records_count) for b in batches(log) if b.is_control] == [(1, 0)]
    assert data_records(log)[0][0] > 1
    again = reopened(manager)
    if again is not None:
        mgr2, log2 = again
        try:
            assert log2.producers.entries[9].epoch == 1
            assert log2.producers.check_marker(9, 0, log2.log_end_offset, "t-0") is not None
            assert log2.last_stable_offset == log2.log_end_offset
        finally:
            mgr2.close()
