"""Log compaction (broker/storage/cleaner.py) on both backends, memory and a real directory.

Every expectation is worked out by hand from the batches appended, following Kafka 3.9's
LogCleaner (docs/kafka-behaviour.md §15, "Compaction"): which offsets survive, tombstones kept
then dropped by time, the idempotent producer's last batch kept empty, log start / epoch cache
/ producer state unchanged, reads at cleaned-away offsets, and a crash around the swap.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from zkbroker.broker.protocol.records import (
    CompressionType,
    NewRecord,
    RecordBatchV2,
    encode_batch,
    encode_message_set,
    iter_batches,
)
from zkbroker.broker.protocol.records.control import encode_end_txn_marker
from zkbroker.broker.rules.producer_state import ProducerBatch
from zkbroker.broker.storage import LogManager, PartitionLog
from zkbroker.broker.storage.cleaner import (
    CleanerStats,
    CompactionConfig,
    clean_log,
    plan_cleaning,
)
from zkbroker.broker.storage.segment import FileStore

TOPIC_ID = uuid.UUID(int=0xC0FFEE)
DAY = 86_400_000
#: Clean whenever anything is dirty (the ratio must be strictly above it).
EAGER = CompactionConfig(min_cleanable_ratio=0.0)

KV = tuple[bytes, bytes | None]


@pytest.fixture(params=["memory", "disk"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def manager(backend: str, tmp_path: Path) -> Iterator[LogManager]:
    mgr = LogManager(None if backend == "memory" else tmp_path / "logs")
    yield mgr
    mgr.close()


@pytest.fixture
def log(manager: LogManager) -> PartitionLog:
    return manager.get_or_create("t", 0, TOPIC_ID)


def put(
    log: PartitionLog,
    items: Sequence[KV],
    *,
    roll: bool = False,
    ts: int = 1_000,
    leader_epoch: int = 0,
    producer: tuple[int, int, int] | None = None,
    compression: CompressionType = CompressionType.NONE,
) -> int:
    """Append one batch at the log end (in a new segment with ``roll``); its base offset."""
    base = log.log_end_offset
    records = [NewRecord(base + i, ts + i, k, v) for i, (k, v) in enumerate(items)]
    pid, epoch, seq = producer if producer is not None else (-1, -1, -1)
    data = encode_batch(
        records,
        base_offset=base,
        partition_leader_epoch=leader_epoch,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        compression=compression,
    )
    return append_raw(log, data, base, base + len(items) - 1, ts + len(items) - 1, roll=roll)


def append_raw(
    log: PartitionLog, data: bytes, base: int, last: int, max_ts: int, *, roll: bool = False
) -> int:
    saved = log.segment_bytes
    if roll:
        log.segment_bytes = 1
    try:
        log.append(
            data,
            base_offset=base,
            last_offset=last,
            max_timestamp=max_ts,
            offset_of_max_timestamp=last,
            leader_epoch=0,
        )
    finally:
        log.segment_bytes = saved
    # Every replica has it: the cleaner stops at the last stable offset, below the HW.
    log.update_high_watermark(log.log_end_offset)
    return base


def batches(log: PartitionLog, offset: int | None = None) -> list[RecordBatchV2]:
    out: list[RecordBatchV2] = []
    offset = log.log_start_offset if offset is None else offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data:
            break
        for batch in iter_batches(data):
            assert isinstance(batch, RecordBatchV2)
            out.append(batch)
            offset = batch.last_offset + 1
    return out


def records(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for b in batches(log) for r in b.records()]


def clean(log: PartitionLog, now: int = 10_000, config: CompactionConfig = EAGER) -> CleanerStats:
    stats = asyncio.run(clean_log(log, config, now))
    assert stats is not None, "expected a cleaning round"
    return stats


def reopen(manager: LogManager, tmp_path: Path) -> tuple[LogManager, PartitionLog]:
    """Disk: a fresh manager on the same directory (a restart). Memory: the same log."""
    if manager.log_dir is None:
        log = manager.get("t", 0)
        assert log is not None
        return manager, log
    fresh = LogManager(manager.log_dir)
    return fresh, fresh.get_or_create("t", 0, TOPIC_ID)


# -- which records survive -------------------------------------------------------------------


def _three_segments(log: PartitionLog) -> None:
    # segment 0: k1=a0 k2=b0 k1=a1 (offsets 0-2); segment 3: k2=b1 k3=c0 (3-4); active 5: k1=a2
    put(log, [(b"k1", b"a0"), (b"k2", b"b0"), (b"k1", b"a1")])
    put(log, [(b"k2", b"b1"), (b"k3", b"c0")], roll=True)
    put(log, [(b"k1", b"a2")], roll=True)


def test_only_the_latest_record_per_key_survives_below_the_active_segment(
    log: PartitionLog, manager: LogManager, tmp_path: Path
) -> None:
    _three_segments(log)
    assert log.segment_base_offsets == [0, 3, 5]
    plan = plan_cleaning(log, 10_000, CompactionConfig())
    assert (plan.first_dirty_offset, plan.first_uncleanable_offset) == (0, 5)
    assert plan.cleanable_ratio == 1.0 and plan.should_clean(0.5)
    stats = clean(log, config=CompactionConfig())
    # The map covers [0, 5): k1 -> 2, k2 -> 3, k3 -> 4. k1@5 is in the active segment.
    assert records(log) == [
        (2, b"k1", b"a1"),
        (3, b"k2", b"b1"),
        (4, b"k3", b"c0"),
        (5, b"k1", b"a2"),
    ]
    assert stats.end_offset == 5 and stats.records_read == 5 and stats.records_written == 3
    # Both segments fit one group (segment.bytes 1 GiB): merged into segment 0.
    assert log.segment_base_offsets == [0, 5]
    assert (log.log_start_offset, log.log_end_offset) == (0, 6)
    assert log.first_dirty_offset == 5
    first = batches(log)[0]
    # Rebuilt with the original base offset and last offset (delta 2), one record left.
    assert (first.base_offset, first.last_offset, first.records_count) == (0, 2, 1)
    assert first.is_valid()
    # Nothing dirty below the active segment any more.
    assert asyncio.run(clean_log(log, EAGER, 10_000)) is None
    mgr2, log2 = reopen(manager, tmp_path)
    try:
        assert records(log2) == records(log)
        assert log2.first_dirty_offset == 5
    finally:
        if mgr2 is not manager:
            mgr2.close()


def test_reads_at_cleaned_offsets_return_the_next_retained_batch(log: PartitionLog) -> None:
    put(log, [(b"k1", b"a0")])  # 0: superseded, its batch goes
    put(log, [(b"k2", b"b0")])  # 1: kept
    put(log, [(b"k1", b"a1")], roll=True)  # 2: kept (last batch of the round)
    put(log, [(b"k9", b"z")], roll=True)  # 3: active
    clean(log)
    assert [b.base_offset for b in batches(log, 0)] == [1, 2, 3]
    assert batches(log, 0)[0].base_offset == 1
    assert [r.offset for r in batches(log, 2)[0].records()] == [2]
    assert log.log_start_offset == 0  # offsets never change, nor does the log start


def test_a_second_pass_recleans_the_clean_part_with_the_new_dirty_keys(log: PartitionLog) -> None:
    put(log, [(b"k1", b"a0"), (b"k2", b"b0")])
    put(log, [(b"k3", b"c0")], roll=True)  # active at 2
    clean(log)
    assert records(log) == [(0, b"k1", b"a0"), (1, b"k2", b"b0"), (2, b"k3", b"c0")]
    put(log, [(b"k1", b"a1")], roll=True)  # 3; segment 2 now dirty
    put(log, [(b"k4", b"d0")], roll=True)  # active at 4
    plan = plan_cleaning(log, 10_000, EAGER)
    assert (plan.first_dirty_offset, plan.first_uncleanable_offset) == (2, 4)
    clean(log)
    assert records(log) == [
        (1, b"k2", b"b0"),
        (2, b"k3", b"c0"),
        (3, b"k1", b"a1"),
        (4, b"k4", b"d0"),
    ]


def test_compressed_batches_keep_their_codec(log: PartitionLog) -> None:
    put(
        log,
        [(b"k1", b"a0"), (b"k2", b"b0"), (b"k1", b"a1")],
        compression=CompressionType.GZIP,
    )
    put(log, [(b"k9", b"z")], roll=True)
    clean(log)
    first = batches(log)[0]
    assert first.compression == CompressionType.GZIP
    assert [(r.offset, r.value, r.timestamp) for r in first.records()] == [
        (1, b"b0", 1_001),
        (2, b"a1", 1_002),
    ]


def test_dirty_ratio_threshold_is_strict(log: PartitionLog) -> None:
    _three_segments(log)
    assert asyncio.run(clean_log(log, CompactionConfig(min_cleanable_ratio=1.0), 10_000)) is None
    assert asyncio.run(clean_log(log, CompactionConfig(min_cleanable_ratio=0.99), 10_000))


# -- tombstones and markers ------------------------------------------------------------------


def test_tombstones_are_kept_for_delete_retention_ms_after_their_first_cleaning(
    log: PartitionLog,
) -> None:
    put(log, [(b"k1", b"v"), (b"k2", b"v")])  # 0, 1
    put(log, [(b"k1", None)], roll=True)  # 2: tombstone
    put(log, [(b"k9", b"z")], roll=True)  # 3: active
    t0 = 50_000
    config = CompactionConfig(min_cleanable_ratio=0.0, delete_retention_ms=DAY)
    clean(log, t0, config)
    assert records(log) == [(1, b"k2", b"v"), (2, b"k1", None), (3, b"k9", b"z")]
    tomb = batches(log, 2)[0]
    # KIP-534: the batch carries its delete horizon in the base timestamp.
    assert tomb.has_delete_horizon and tomb.base_timestamp == t0 + DAY
    assert [r.timestamp for r in tomb.records()] == [1_000]  # the record's own stays
    put(log, [(b"k8", b"y")], roll=True)  # 4: segment 3 becomes dirty
    clean(log, t0 + DAY - 1, config)
    assert (2, b"k1", None) in records(log)
    put(log, [(b"k7", b"x")], roll=True)  # 5
    clean(log, t0 + DAY, config)
    assert records(log) == [
        (1, b"k2", b"v"),
        (3, b"k9", b"z"),
        (4, b"k8", b"y"),
        (5, b"k7", b"x"),
    ]


def test_a_commit_marker_without_its_transaction_goes_after_the_delete_horizon(
    log: PartitionLog,
) -> None:
    put(log, [(b"k1", b"v")])  # 0
    marker = encode_end_txn_marker(
        commit=True,
        offset=1,
        timestamp=1_000,
        producer_id=9,
        producer_epoch=0,
        coordinator_epoch=0,
    )
    append_raw(log, marker, 1, 1, 1_000)  # 1
    put(log, [(b"k2", b"v")], roll=True)  # 2
    put(log, [(b"k9", b"z")], roll=True)  # 3 active
    clean(log, 10_000)
    kept = [b for b in batches(log) if b.is_control]
    assert len(kept) == 1 and kept[0].has_delete_horizon
    assert kept[0].base_timestamp == 10_000 + DAY
    put(log, [(b"k8", b"y")], roll=True)
    clean(log, 10_000 + DAY)
    # Its record goes; pid 9 has no data batch, so the marker of its epoch stays as an empty
    # header (isBatchLastRecordOfProducer: it carries the epoch fencing older ones).
    assert [(b.base_offset, b.records_count) for b in batches(log) if b.is_control] == [(1, 0)]


# -- producer state, epochs, log start -------------------------------------------------------


def test_an_idempotent_producers_last_batch_stays_empty(
    log: PartitionLog, manager: LogManager, tmp_path: Path
) -> None:
    put(log, [(b"k1", b"a0")], producer=(7, 3, 0))  # 0: pid 7's last batch
    put(log, [(b"k1", b"a1")], roll=True)  # 1
    put(log, [(b"k9", b"z")], roll=True)  # 2 active
    before = {p: (e.epoch, e.last_seq) for p, e in log.producers.entries.items()}
    clean(log)
    empty = batches(log, 0)[0]
    assert (empty.base_offset, empty.last_offset, empty.records_count) == (0, 0, 0)
    assert (empty.producer_id, empty.producer_epoch, empty.base_sequence) == (7, 3, 0)
    assert empty.is_valid() and empty.records() == []
    assert records(log) == [(1, b"k1", b"a1"), (2, b"k9", b"z")]
    assert {p: (e.epoch, e.last_seq) for p, e in log.producers.entries.items()} == before
    mgr2, log2 = reopen(manager, tmp_path)
    try:
        state = {p: (e.epoch, e.last_seq) for p, e in log2.producers.entries.items()}
        assert state == {7: (3, 0)}
        # The producer's next batch (sequence 1) is in sequence after a restart.
        nxt = ProducerBatch(7, 3, 1, 1, log2.log_end_offset, log2.log_end_offset, 2_000)
        assert log2.producers.check(nxt, "t-0") is None
    finally:
        if mgr2 is not manager:
            mgr2.close()


def test_epoch_cache_and_log_start_are_unchanged(
    log: PartitionLog, manager: LogManager, tmp_path: Path
) -> None:
    put(log, [(b"k0", b"x")], leader_epoch=1)  # 0
    put(log, [(b"k1", b"a0")], leader_epoch=1)  # 1: first batch of... epoch 1 continues
    put(log, [(b"k2", b"b0")], leader_epoch=2, roll=True)  # 2: epoch 2 starts here
    put(log, [(b"k2", b"b1")], leader_epoch=2)  # 3
    put(log, [(b"k0", b"y")], leader_epoch=3, roll=True)  # 4: epoch 3
    put(log, [(b"k1", b"a1")], leader_epoch=3, roll=True)  # 5 active
    assert log.delete_records_before(1) == 1
    epochs = log.epoch_entries()
    assert epochs == [(1, 1), (2, 2), (3, 4)]
    clean(log)
    # Offset 2 (epoch 2's first batch) is gone, offset 3 holds epoch 2's last value.
    assert [o for o, _, _ in records(log)] == [1, 3, 4, 5]
    assert log.epoch_entries() == epochs
    assert log.log_start_offset == 1
    assert log.end_offset_for_epoch(2) == (2, 4)
    mgr2, log2 = reopen(manager, tmp_path)
    try:
        assert log2.epoch_entries() == epochs
        assert log2.log_start_offset == 1
        assert records(log2) == records(log)
    finally:
        if mgr2 is not manager:
            mgr2.close()


# -- which segments are cleanable, and groups --------------------------------------------------


def test_min_compaction_lag_keeps_young_segments_dirty(log: PartitionLog) -> None:
    put(log, [(b"k1", b"a0")], ts=1_000)  # segment 0, old
    put(log, [(b"k1", b"a1")], ts=9_000, roll=True)  # segment 1, young at now=10,000
    put(log, [(b"k9", b"z")], ts=9_500, roll=True)  # active
    config = CompactionConfig(min_cleanable_ratio=0.0, min_compaction_lag_ms=5_000)
    plan = plan_cleaning(log, 10_000, config)
    assert plan.first_uncleanable_offset == 1
    clean(log, 10_000, config)
    # Only segment 0 was cleanable: k1@0 is the latest k1 of the map's range, so it stays.
    assert [o for o, _, _ in records(log)] == [0, 1, 2]
    assert log.first_dirty_offset == 1


def test_max_compaction_lag_forces_a_cleaning_below_the_ratio(log: PartitionLog) -> None:
    put(log, [(b"k1", b"a0")], ts=1_000)
    put(log, [(b"k9", b"z")], roll=True)
    strict = CompactionConfig(min_cleanable_ratio=1.0)
    assert asyncio.run(clean_log(log, strict, 10_000)) is None
    overdue = CompactionConfig(min_cleanable_ratio=1.0, max_compaction_lag_ms=5_000)
    assert plan_cleaning(log, 10_000, overdue).need_compaction_now
    assert asyncio.run(clean_log(log, overdue, 10_000)) is not None


def test_segments_are_grouped_up_to_segment_bytes(log: PartitionLog) -> None:
    for i in range(4):
        put(log, [(b"k%d" % i, b"x" * 100)], roll=i > 0)  # 4 segments of one batch each
    put(log, [(b"k9", b"z")], roll=True)  # active at 4
    size = log.cleanable_segments()[0].size
    clean(log, config=CompactionConfig(min_cleanable_ratio=0.0, segment_bytes=2 * size))
    assert log.segment_base_offsets == [0, 2, 4]
    assert [o for o, _, _ in records(log)] == [0, 1, 2, 3, 4]


def test_retention_deleting_a_segment_mid_cleaning_abandons_the_group(
    log: PartitionLog,
) -> None:
    _three_segments(log)
    expected_after_delete = [(3, b"k2", b"b1"), (4, b"k3", b"c0"), (5, b"k1", b"a2")]
    real_replace = log.replace_segments

    def replace_after_retention(*args: object, **kwargs: object) -> object:
        # Between the last slice of the group and its swap, DeleteRecords drops segment 0.
        log.delete_records_before(3)
        return real_replace(*args, **kwargs)  # type: ignore[arg-type]

    log.replace_segments = replace_after_retention  # type: ignore[method-assign,assignment]
    stats = clean(log)
    assert (stats.groups, stats.groups_abandoned) == (1, 1)
    assert log.first_dirty_offset is None  # the round did not finish: no checkpoint
    assert records(log) == expected_after_delete
    assert log.segment_base_offsets == [3, 5]
    if log.directory is not None:
        assert not [n for n in os.listdir(log.directory) if n.endswith((".cleaned", ".swap"))]


# -- on disk: crash safety and other processes -----------------------------------------------


def test_crash_after_writing_cleaned_leaves_the_log_as_it_was(tmp_path: Path) -> None:
    manager = LogManager(tmp_path / "logs")
    log = manager.get_or_create("t", 0, TOPIC_ID)
    _three_segments(log)
    expected = records(log)
    assert log.directory is not None
    directory = log.directory

    def crash(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("killed before the swap")

    log.replace_segments = crash  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        asyncio.run(clean_log(log, EAGER, 10_000))
    assert (directory / "00000000000000000000.log.cleaned").exists()
    manager.close()
    fresh = LogManager(tmp_path / "logs")
    try:
        log2 = fresh.get_or_create("t", 0, TOPIC_ID)
        assert not (directory / "00000000000000000000.log.cleaned").exists()
        assert records(log2) == expected
        assert log2.first_dirty_offset is None
    finally:
        fresh.close()


def test_crash_after_the_swap_commit_completes_it_at_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = LogManager(tmp_path / "logs")
    log = manager.get_or_create("t", 0, TOPIC_ID)
    _three_segments(log)
    assert log.directory is not None
    directory = log.directory
    real_delete = FileStore.delete

    def delete(self: FileStore) -> None:
        if self.path.name == "00000000000000000003.log":
            raise RuntimeError("killed while deleting the old segments")
        real_delete(self)

    monkeypatch.setattr(FileStore, "delete", delete)
    with pytest.raises(RuntimeError):
        asyncio.run(clean_log(log, EAGER, 10_000))
    monkeypatch.setattr(FileStore, "delete", real_delete)
    names = sorted(os.listdir(directory))
    assert "00000000000000000000.log.swap" in names
    assert "00000000000000000003.log" in names
    manager.close()
    fresh = LogManager(tmp_path / "logs")
    try:
        log2 = fresh.get_or_create("t", 0, TOPIC_ID)
        names = sorted(n for n in os.listdir(directory) if ".log" in n)
        assert names == ["00000000000000000000.log", "00000000000000000005.log"]
        assert records(log2) == [
            (2, b"k1", b"a1"),
            (3, b"k2", b"b1"),
            (4, b"k3", b"c0"),
            (5, b"k1", b"a2"),
        ]
    finally:
        fresh.close()


def test_another_process_sharing_the_directory_reindexes_after_a_cleaning(
    tmp_path: Path,
) -> None:
    one = LogManager(tmp_path / "logs")
    two = LogManager(tmp_path / "logs")
    try:
        log1 = one.get_or_create("t", 0, TOPIC_ID)
        put(log1, [(b"k1", b"a0"), (b"k2", b"b0")], producer=(5, 0, 0))
        put(log1, [(b"k1", b"a1")], roll=True)  # 2
        put(log1, [(b"k9", b"z")], roll=True)  # 3 active
        log2 = two.get_or_create("t", 0, TOPIC_ID)
        before = records(log2)
        # One segment per group: the base offsets stay, only the files change.
        size = log1.cleanable_segments()[0].size
        clean(log1, config=CompactionConfig(min_cleanable_ratio=0.0, segment_bytes=size))
        assert log1.segment_base_offsets == [0, 2, 3]
        # Until it looks, the other process still reads the old files (open descriptors).
        assert records(log2) == before
        assert log2.refresh_if_changed()
        assert (
            records(log2)
            == records(log1)
            == [
                (1, b"k2", b"b0"),
                (2, b"k1", b"a1"),
                (3, b"k9", b"z"),
            ]
        )
        assert {p: e.last_seq for p, e in log2.producers.entries.items()} == {5: 1}
        # And it appends where the log ends, under the lock.
        put(log2, [(b"k3", b"c")])
        assert log1.refresh_if_changed()
        assert records(log1)[-1] == (4, b"k3", b"c")
    finally:
        one.close()
        two.close()


def test_two_processes_cleaning_at_once_leave_one_swap(tmp_path: Path) -> None:
    one = LogManager(tmp_path / "logs")
    two = LogManager(tmp_path / "logs")
    try:
        log1 = one.get_or_create("t", 0, TOPIC_ID)
        _three_segments(log1)
        log2 = two.get_or_create("t", 0, TOPIC_ID)
        log2.update_high_watermark(log2.log_end_offset)  # each log keeps its own
        real_replace = log2.replace_segments

        def other_process_swaps_first(*args: object, **kwargs: object) -> object:
            # While process two was cleaning, process one cleaned the same segments (and
            # replaced two's `.cleaned` file with its own on the way).
            worker = threading.Thread(target=lambda: asyncio.run(clean_log(log1, EAGER, 10_000)))
            worker.start()
            worker.join()
            return real_replace(*args, **kwargs)  # type: ignore[arg-type]

        log2.replace_segments = other_process_swaps_first  # type: ignore[method-assign,assignment]
        stats = clean(log2)
        assert stats.groups_abandoned == 1
        expected = [(2, b"k1", b"a1"), (3, b"k2", b"b1"), (4, b"k3", b"c0"), (5, b"k1", b"a2")]
        assert records(log1) == records(log2) == expected
        assert log2.segment_base_offsets == [0, 5]
        assert log1.directory is not None
        assert not [n for n in os.listdir(log1.directory) if n.endswith((".cleaned", ".swap"))]
        assert log2.first_dirty_offset == 5  # one's checkpoint, in the shared file
    finally:
        one.close()
        two.close()


def test_a_legacy_compressed_wrapper_is_rewritten_with_the_kept_records(
    log: PartitionLog,
) -> None:
    legacy = encode_message_set(
        [
            NewRecord(0, 1_000, b"k1", b"a0"),
            NewRecord(1, 1_001, b"k2", b"b0"),
            NewRecord(2, 1_002, b"k1", b"a1"),
        ],
        magic=1,
        compression=CompressionType.GZIP,
    )
    append_raw(log, legacy, 0, 2, 1_002)
    more = encode_message_set([NewRecord(3, 1_003, b"k9", b"z")], magic=1)
    append_raw(log, more, 3, 3, 1_003, roll=True)
    clean(log)
    data = log.read(0, 1 << 20)
    entries = list(iter_batches(data))
    assert len(entries) == 1 and entries[0].magic == 1
    assert entries[0].compression == CompressionType.GZIP
    assert [(r.offset, r.key, r.value) for r in entries[0].records()] == [
        (1, b"k2", b"b0"),
        (2, b"k1", b"a1"),
    ]


def test_a_log_closed_mid_cleaning_abandons_the_round(log: PartitionLog) -> None:
    _three_segments(log)
    real_create = log.create_cleaned_store

    def create_then_close(base_offset: int) -> object:
        store = real_create(base_offset)
        log.close()  # its topic was deleted while the round was under way
        return store

    log.create_cleaned_store = create_then_close  # type: ignore[method-assign,assignment]
    stats = clean(log)
    assert (stats.groups, stats.groups_abandoned) == (1, 1)
    if log.directory is not None:
        assert not [n for n in os.listdir(log.directory) if n.endswith(".cleaned")]
