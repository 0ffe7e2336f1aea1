"""A replica's log (broker/storage/partition_log.py): the stored high watermark, appends as a
follower, reads bounded by the high watermark, truncation, and a follower's log start, on both
backends. Each broker has its own `LogManager`; a leader's log and a follower's are two logs.

Expectations are worked out by hand from the batches appended, following Kafka's UnifiedLog
(``updateHighWatermark``, ``appendAsFollower``, ``truncateTo``, ``truncateFullyAndStartAt``,
``maybeIncrementLogStartOffset``, ``deletableSegments``; docs/kafka-behaviour.md §15).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.test_storage_log import put_raw
from zkbroker.broker.protocol.records import (
    CompressionType,
    NewRecord,
    encode_batch,
    encode_message_set,
    iter_batches,
)
from zkbroker.broker.protocol.records.control import encode_end_txn_marker
from zkbroker.broker.rules.producer_state import ProducerBatch
from zkbroker.broker.storage import LogManager, OffsetOutOfRange, PartitionLog
from zkbroker.broker.storage.files import write_leader_epoch_checkpoint
from zkbroker.broker.storage.transactions import AbortedTxn

TOPIC_ID = uuid.UUID(int=0x43)
NOW = 1_700_000_000_000


@pytest.fixture(params=["memory", "disk"])
def managers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[LogManager]]:
    """Two brokers' log managers: the leader's and a follower's."""
    mgrs = [
        LogManager(None if request.param == "memory" else tmp_path / f"broker-{n}")
        for n in range(2)
    ]
    yield mgrs
    for mgr in mgrs:
        mgr.close()


@pytest.fixture
def leader(managers: list[LogManager]) -> PartitionLog:
    return managers[0].get_or_create("t", 0, TOPIC_ID)


@pytest.fixture
def follower(managers: list[LogManager]) -> PartitionLog:
    return managers[1].get_or_create("t", 0, TOPIC_ID)


def batch(
    base: int,
    count: int = 1,
    *,
    epoch: int = 0,
    pid: int = -1,
    seq: int = -1,
    txn: bool = False,
    value: bytes = b"v",
) -> bytes:
    records = [NewRecord(base + i, NOW + base + i, None, value) for i in range(count)]
    return encode_batch(
        records,
        base_offset=base,
        partition_leader_epoch=epoch,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=seq,
        transactional=txn,
    )


def lead(log: PartitionLog, count: int = 1, **kwargs: object) -> bytes:
    """Append one batch at the log end as the leader; its bytes."""
    base = log.log_end_offset
    data = batch(base, count, **kwargs)  # type: ignore[arg-type]
    append_raw(log, data)
    return data


def append_raw(log: PartitionLog, data: bytes) -> None:
    put_raw(log, data, epoch=list(iter_batches(data))[-1].partition_leader_epoch)


def marker(log: PartitionLog, pid: int, *, commit: bool, epoch: int = 0) -> None:
    append_raw(
        log,
        encode_end_txn_marker(
            commit=commit,
            offset=log.log_end_offset,
            timestamp=NOW,
            producer_id=pid,
            producer_epoch=0,
            coordinator_epoch=0,
            partition_leader_epoch=epoch,
        ),
    )


def everything(log: PartitionLog, max_offset: int | None = None) -> bytes:
    out, offset = b"", log.log_start_offset
    while True:
        data = log.read(offset, 1 << 20, max_offset=max_offset)
        if not data:
            return out
        out += data
        offset = list(iter_batches(data))[-1].last_offset + 1


def replicate(leader: PartitionLog, follower: PartitionLog) -> None:
    """What a fetcher does: the leader's batches from the follower's log end, appended."""
    while follower.log_end_offset < leader.log_end_offset:
        follower.append_as_follower(leader.read(follower.log_end_offset, 1 << 20))


# -- the high watermark ----------------------------------------------------------------------


def test_a_new_log_starts_at_high_watermark_0_and_appends_do_not_move_it(
    leader: PartitionLog,
) -> None:
    assert leader.high_watermark == 0
    lead(leader, 3)
    assert (leader.log_end_offset, leader.high_watermark) == (3, 0)


def test_update_high_watermark_clamps_and_says_whether_it_moved() -> None:
    calls: list[int] = []
    log = PartitionLog("t", 0, None, on_high_watermark=lambda: calls.append(1))
    lead(log, 2)
    lead(log, 3)
    assert log.update_high_watermark(2) is True and log.high_watermark == 2
    assert log.update_high_watermark(2) is False
    assert log.update_high_watermark(99) is True and log.high_watermark == 5
    log.delete_records_before(3)
    assert log.update_high_watermark(0) is True and log.high_watermark == 3
    assert len(calls) == 3


def test_the_last_stable_offset_never_passes_the_high_watermark(leader: PartitionLog) -> None:
    lead(leader, 2)
    lead(leader, 1, pid=7, seq=0, txn=True)  # 2: open
    lead(leader, 1)  # 3
    assert leader.last_stable_offset == 0
    leader.update_high_watermark(1)
    assert leader.last_stable_offset == 1
    leader.update_high_watermark(4)
    assert leader.last_stable_offset == 2


async def test_a_moving_high_watermark_wakes_long_polls(managers: list[LogManager]) -> None:
    log = managers[0].get_or_create("t", 0, TOPIC_ID)
    lead(log, 2)
    waiter = asyncio.create_task(managers[0].wait_for_append(5.0))
    await asyncio.sleep(0.01)
    assert not waiter.done()
    log.update_high_watermark(2)
    await asyncio.wait_for(waiter, 1.0)


def test_high_watermarks_are_checkpointed_and_read_at_open(tmp_path: Path) -> None:
    mgr = LogManager(tmp_path)
    log = mgr.get_or_create("t", 0, TOPIC_ID)
    other = mgr.get_or_create("u", 1, TOPIC_ID)
    lead(log, 5)
    lead(other, 2)
    log.update_high_watermark(4)
    mgr.checkpoint_high_watermarks()
    checkpoint = tmp_path / "replication-offset-checkpoint"
    assert checkpoint.read_text() == "0\n2\nt 0 4\nu 1 0\n"
    log.update_high_watermark(5)
    mgr.close()  # a clean shutdown writes them too
    assert checkpoint.read_text() == "0\n2\nt 0 5\nu 1 0\n"

    mgr = LogManager(tmp_path)
    assert mgr.get_or_create("t", 0, TOPIC_ID).high_watermark == 5
    mgr.checkpoint_high_watermarks()  # a log not opened keeps its entry
    assert checkpoint.read_text() == "0\n2\nt 0 5\nu 1 0\n"
    mgr.delete_topic("u")
    assert checkpoint.read_text() == "0\n1\nt 0 5\n"
    mgr.close()


def test_a_checkpointed_high_watermark_is_clamped_and_a_missing_one_is_the_log_start(
    tmp_path: Path,
) -> None:
    mgr = LogManager(tmp_path)
    log = mgr.get_or_create("t", 0, TOPIC_ID)
    lead(log, 3)
    lead(log, 3)
    log.update_high_watermark(6)
    log.delete_records_before(2)
    mgr.close()
    checkpoint = tmp_path / "replication-offset-checkpoint"
    checkpoint.write_text("0\n1\nt 0 99\n")
    mgr = LogManager(tmp_path)
    assert mgr.get_or_create("t", 0, TOPIC_ID).high_watermark == 6
    mgr.release_files()
    checkpoint.write_text("0\n0\n")
    # Kafka: "No checkpointed highwatermark is found", 0, clamped to the log start offset.
    assert mgr.get_or_create("t", 0, TOPIC_ID).high_watermark == 2
    mgr.close()


# -- appends as a follower -------------------------------------------------------------------


def test_a_follower_stores_the_leaders_batches_as_they_are(
    leader: PartitionLog, follower: PartitionLog
) -> None:
    leader.segment_bytes = follower.segment_bytes = 2 * len(batch(0, 2))
    lead(leader, 2, epoch=1, pid=5, seq=0)
    lead(leader, 1, epoch=1)
    lead(leader, 3, epoch=4, pid=5, seq=2)
    lead(leader, 1, epoch=4)
    replicate(leader, follower)
    assert everything(follower) == everything(leader)
    assert follower.segment_base_offsets == leader.segment_base_offsets
    assert len(leader.segment_base_offsets) > 1
    assert follower.epoch_entries() == leader.epoch_entries() == [(1, 0), (4, 3)]
    assert follower.log_end_offset == 7 and follower.high_watermark == 0
    # Producer state as the leader's: the next sequence of producer 5 is 5.
    nxt = ProducerBatch(5, 0, 5, 5, 7, 7, NOW)
    assert follower.producers.check(nxt, "t-0") is None
    assert follower.producers.check(ProducerBatch(5, 0, 4, 4, 7, 7, NOW), "t-0") is not None


def test_a_follower_replicates_transactions(leader: PartitionLog, follower: PartitionLog) -> None:
    lead(leader, 2, pid=8, seq=0, txn=True)  # 0-1
    lead(leader, 1)  # 2
    marker(leader, 8, commit=False)  # 3
    lead(leader, 1, pid=9, seq=0, txn=True)  # 4: open
    replicate(leader, follower)
    follower.update_high_watermark(5)
    assert follower.aborted_transactions(0, 5) == [AbortedTxn(8, 0, 3, 4)]
    assert follower.last_stable_offset == 4


def test_a_follower_append_must_not_overlap_or_go_backwards(follower: PartitionLog) -> None:
    follower.append_as_follower(batch(0, 2))
    with pytest.raises(ValueError, match="log end offset is 2"):
        follower.append_as_follower(batch(1, 2))
    with pytest.raises(ValueError, match="out of order"):
        follower.append_as_follower(batch(2, 2) + batch(3, 1))
    with pytest.raises(ValueError, match="whole batches"):
        follower.append_as_follower(batch(2, 2)[:-1])
    assert follower.log_end_offset == 2 and everything(follower) == batch(0, 2)


def test_a_follower_takes_a_gap_the_leaders_cleaner_left(follower: PartitionLog) -> None:
    follower.append_as_follower(batch(0, 2))
    follower.append_as_follower(batch(5, 1))
    assert follower.log_end_offset == 6
    assert follower.read(2, 1 << 20) == batch(5, 1)


def test_a_follower_takes_legacy_message_sets_by_their_first_offset(
    follower: PartitionLog,
) -> None:
    plain = encode_message_set([NewRecord(0, NOW, None, b"a")], magic=0)
    wrapped = encode_message_set(
        [NewRecord(1, NOW, None, b"b"), NewRecord(2, NOW, None, b"c")],
        magic=1,
        compression=CompressionType.GZIP,
    )
    follower.append_as_follower(plain)
    with pytest.raises(ValueError, match="log end offset is 1"):
        follower.append_as_follower(plain)  # offset 0 again
    follower.append_as_follower(wrapped)  # the wrapper says 2, its first record 1
    assert follower.log_end_offset == 3
    assert [r.offset for b in iter_batches(everything(follower)) for r in b.records()] == [0, 1, 2]


def test_in_memory_a_follower_keeps_the_leaders_bytes_object() -> None:
    leader, follower = PartitionLog("t", 0, None), PartitionLog("t", 0, None)
    big = lead(leader, 1, value=b"x" * 100_000)
    fetched = leader.read(0, 1 << 20)
    follower.append_as_follower(fetched)
    assert fetched is big
    assert follower.read(0, 1 << 20) is big


# -- reads up to the high watermark ----------------------------------------------------------


def test_reads_stop_below_max_offset(leader: PartitionLog) -> None:
    a, b, c = lead(leader, 2), lead(leader, 3), lead(leader, 1)
    assert leader.read(0, 1 << 20, max_offset=5) == a + b
    assert leader.read(3, 1 << 20, max_offset=5) == b
    assert leader.read(0, 1 << 20, max_offset=2) == a
    assert leader.read(2, 1 << 20, max_offset=2) == b""
    assert leader.read(4, 1 << 20, max_offset=2) == b""  # past it, within the log
    assert leader.read(0, 1 << 20, max_offset=6) == a + b + c
    assert leader.read(0, len(a) + 1, max_offset=6) == a  # max_bytes still counts
    assert leader.read(0, 1, max_offset=6) == a  # the first batch whole
    assert leader.read(0, 1, min_one_batch=False, max_offset=6) == b""
    with pytest.raises(OffsetOutOfRange):
        leader.read(7, 1 << 20, max_offset=6)


# -- truncation ------------------------------------------------------------------------------


def test_truncate_to_cuts_at_the_start_of_the_batch_holding_the_offset(
    leader: PartitionLog, caplog: pytest.LogCaptureFixture
) -> None:
    leader.segment_bytes = 2 * len(batch(0, 2))
    kept = lead(leader, 2, epoch=1, pid=5, seq=0)  # 0-1
    kept += lead(leader, 2, epoch=2)  # 2-3
    lead(leader, 2, epoch=3, pid=5, seq=2)  # 4-5: a new segment
    lead(leader, 2, epoch=4, pid=6, seq=0)  # 6-7
    leader.update_high_watermark(7)
    assert leader.segment_base_offsets == [0, 4]
    assert leader.truncate_to(8) is False and leader.truncate_to(99) is False
    assert leader.truncate_to(5) is True
    assert (leader.log_end_offset, leader.high_watermark) == (4, 4)
    assert leader.segment_base_offsets == [0, 4]  # the segment holding 5 is kept, emptied
    assert everything(leader) == kept
    assert leader.epoch_entries() == [(1, 0), (2, 2)]
    assert set(leader.producers.entries) == {5}
    assert leader.producers.check(ProducerBatch(5, 0, 2, 2, 4, 4, NOW), "t-0") is None
    assert "log.truncated" in caplog.text
    lead(leader, 1, epoch=5)
    assert leader.epoch_entries() == [(1, 0), (2, 2), (5, 4)]


def test_truncate_to_a_segments_base_leaves_the_segment_before_active(
    leader: PartitionLog,
) -> None:
    leader.segment_bytes = 1
    first = lead(leader, 2)
    lead(leader, 2)
    lead(leader, 2)
    assert leader.truncate_to(2) is True
    assert leader.segment_base_offsets == [0] and leader.log_end_offset == 2
    assert everything(leader) == first
    leader.segment_bytes = 1 << 20
    lead(leader, 1)
    assert leader.segment_base_offsets == [0] and leader.log_end_offset == 3


def test_truncation_rebuilds_the_transaction_index(leader: PartitionLog) -> None:
    lead(leader, 1, pid=8, seq=0, txn=True)  # 0
    marker(leader, 8, commit=False)  # 1
    lead(leader, 1, pid=9, seq=0, txn=True)  # 2
    marker(leader, 9, commit=False)  # 3
    leader.update_high_watermark(4)
    assert len(leader.aborted_transactions(0, 4)) == 2
    leader.truncate_to(3)  # pid 9's marker goes: its transaction is open again
    assert leader.aborted_transactions(0, 4) == [AbortedTxn(8, 0, 1, 2)]
    assert leader.transactions.ongoing == {9: 2}
    assert leader.last_stable_offset == 2


def test_truncation_clamps_the_cleaners_first_dirty_offset(leader: PartitionLog) -> None:
    lead(leader, 4)
    lead(leader, 4)
    leader.set_first_dirty_offset(8)
    leader.truncate_to(6)
    assert leader.first_dirty_offset == 4


def test_truncate_to_below_the_first_segment_starts_over(leader: PartitionLog) -> None:
    leader.segment_bytes = 1
    for _ in range(3):
        lead(leader, 2)
    leader.update_high_watermark(6)
    leader.apply_retention(NOW, retention_ms=-1, retention_bytes=0)
    assert leader.log_start_offset == 6
    lead(leader, 2)
    assert leader.truncate_to(3) is True
    assert (leader.log_start_offset, leader.log_end_offset, leader.high_watermark) == (3, 3, 3)


def test_truncate_fully_and_start_at(
    leader: PartitionLog, caplog: pytest.LogCaptureFixture
) -> None:
    leader.segment_bytes = 1
    lead(leader, 2, epoch=1, pid=5, seq=0)
    lead(leader, 2, epoch=2, pid=6, seq=0, txn=True)
    leader.update_high_watermark(4)
    leader.truncate_fully_and_start_at(10)
    assert (leader.log_start_offset, leader.log_end_offset, leader.high_watermark) == (10, 10, 10)
    assert leader.segment_base_offsets == [10] and leader.size_bytes == 0
    assert leader.epoch_entries() == [] and leader.producers.entries == {}
    assert leader.transactions.ongoing == {} and leader.last_stable_offset == 10
    assert "log.truncated_fully" in caplog.text
    leader.append_as_follower(batch(10, 1, epoch=3))
    assert leader.epoch_entries() == [(3, 10)] and leader.log_end_offset == 11


def test_truncation_persists_on_disk(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    mgr = LogManager(tmp_path)
    log = mgr.get_or_create("t", 0, TOPIC_ID)
    log.segment_bytes = 1
    for epoch in range(1, 5):
        lead(log, 2, epoch=epoch)
    log.update_high_watermark(8)
    assert log.directory is not None
    # As the cleaner leaves it: a leader-epoch-checkpoint naming every epoch.
    write_leader_epoch_checkpoint(log.directory, log.epoch_entries())
    log.truncate_to(3)
    names = sorted(n for n in os.listdir(log.directory) if n.endswith(".log"))
    assert names == ["00000000000000000000.log", "00000000000000000002.log"]
    assert caplog.text.count("log.segment_deleted") == 2
    assert (log.directory / "leader-epoch-checkpoint").read_text() == "0\n1\n1 0\n"
    mgr.close()
    mgr = LogManager(tmp_path)
    log = mgr.get_or_create("t", 0, TOPIC_ID)
    assert (log.log_end_offset, log.high_watermark, log.epoch_entries()) == (2, 2, [(1, 0)])
    log.truncate_fully_and_start_at(7)
    mgr.close()
    mgr = LogManager(tmp_path)
    log = mgr.get_or_create("t", 0, TOPIC_ID)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (7, 7, 7)
    assert log.directory is not None
    assert sorted(n for n in os.listdir(log.directory) if n.endswith(".log")) == [
        "00000000000000000007.log"
    ]
    mgr.close()


def test_cutting_a_hard_linked_segment_leaves_the_other_link_whole(tmp_path: Path) -> None:
    mgr = LogManager(tmp_path / "broker-0")
    log = mgr.get_or_create("t", 0, TOPIC_ID)
    log.segment_bytes = 1
    lead(log, 2)
    lead(log, 2)
    lead(log, 2)
    assert log.directory is not None
    sealed = [log.directory / f"{base:020d}.log" for base in (0, 2)]
    others = [tmp_path / f"other-{n}.log" for n in range(2)]
    for path, other in zip(sealed, others, strict=True):
        os.link(path, other)  # as adopt_shared_layout links sealed segments
    before = [other.read_bytes() for other in others]
    log.segment_bytes = 1 << 20
    log.truncate_to(3)  # segment 2 is cut (to nothing) and stays the active one
    lead(log, 1)
    log.truncate_to(2)  # segment 2 goes: segment 0 becomes the active one
    lead(log, 1)
    assert [other.read_bytes() for other in others] == before
    assert os.stat(sealed[0]).st_nlink == 1
    assert everything(log) == before[0] + batch(2, 1)
    mgr.close()


# -- a follower's log start, retention -------------------------------------------------------


def test_a_follower_follows_the_leaders_log_start_past_its_high_watermark(
    follower: PartitionLog,
) -> None:
    follower.segment_bytes = 1
    for base in (0, 2, 4):
        follower.append_as_follower(batch(base, 2))
    follower.update_high_watermark(2)
    assert follower.delete_records_before(5) == 5
    assert (follower.log_start_offset, follower.high_watermark) == (5, 5)
    assert follower.segment_base_offsets == [4]
    with pytest.raises(OffsetOutOfRange):
        follower.delete_records_before(7)


def test_retention_never_deletes_at_or_past_the_high_watermark(leader: PartitionLog) -> None:
    leader.segment_bytes = 1
    for _ in range(4):
        lead(leader, 2)
    assert leader.apply_retention(NOW, retention_ms=-1, retention_bytes=0) == 0
    leader.update_high_watermark(5)  # inside the third segment
    leader.apply_retention(NOW, retention_ms=-1, retention_bytes=0)
    assert leader.segment_base_offsets == [4, 6] and leader.log_start_offset == 4
    leader.update_high_watermark(8)
    leader.apply_retention(NOW, retention_ms=-1, retention_bytes=0)
    assert (leader.log_start_offset, leader.log_end_offset) == (8, 8)
