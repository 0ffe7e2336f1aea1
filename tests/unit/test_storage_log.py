"""PartitionLog behaviours, each run against both backends (memory and a real directory).

Expectations are computed by hand from the batches appended, following Kafka's UnifiedLog /
LogSegment semantics (see broker/storage/partition_log.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from zkbroker.broker.protocol.records import (
    CompressionType,
    NewRecord,
    TimestampType,
    encode_batch,
    encode_message_set,
    iter_batches,
)
from zkbroker.broker.storage import LogManager, OffsetOutOfRange, PartitionLog, TimestampOffset

TOPIC_ID = uuid.UUID(int=0x1234)


@pytest.fixture(params=["memory", "disk"])
def manager(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogManager]:
    mgr = LogManager(None if request.param == "memory" else tmp_path / "logs")
    yield mgr
    mgr.close()


@pytest.fixture
def log(manager: LogManager) -> PartitionLog:
    return manager.get_or_create("t", 0, TOPIC_ID)


def v2(
    base: int,
    timestamps: Sequence[int],
    *,
    epoch: int = 0,
    compression: CompressionType = CompressionType.NONE,
    value: bytes = b"v",
) -> bytes:
    records = [NewRecord(base + i, ts, None, value) for i, ts in enumerate(timestamps)]
    return encode_batch(
        records, base_offset=base, partition_leader_epoch=epoch, compression=compression
    )


def put(
    log: PartitionLog,
    timestamps: Sequence[int],
    *,
    epoch: int = 0,
    now_ms: int | None = None,
    value: bytes = b"v",
    compression: CompressionType = CompressionType.NONE,
) -> bytes:
    """Append one v2 batch at the log end; returns its bytes."""
    base = log.log_end_offset
    data = v2(base, timestamps, epoch=epoch, value=value, compression=compression)
    top = max(timestamps)
    log.append(
        data,
        base_offset=base,
        last_offset=base + len(timestamps) - 1,
        max_timestamp=top,
        offset_of_max_timestamp=base + list(timestamps).index(top),
        leader_epoch=epoch,
        now_ms=now_ms,
    )
    return data


def put_raw(log: PartitionLog, data: bytes, *, epoch: int = -1) -> None:
    batches = list(iter_batches(data))
    last = batches[-1].last_offset
    log.append(
        data,
        base_offset=log.log_end_offset,
        last_offset=last,
        max_timestamp=max(b.max_timestamp for b in batches),
        offset_of_max_timestamp=last,
        leader_epoch=epoch,
    )


def offsets_of(data: bytes) -> list[int]:
    return [r.offset for b in iter_batches(data) for r in b.records()]


# -- offsets ---------------------------------------------------------------------------------


def test_empty_log(log: PartitionLog) -> None:
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 0, 0)
    assert log.size_bytes == 0
    assert log.read(0, 1000) == b""
    assert log.latest_epoch is None
    assert log.offset_for_timestamp(0) is None
    assert log.max_timestamp_offset() is None
    assert log.topic == "t" and log.partition == 0 and log.topic_id == TOPIC_ID


def test_appends_advance_the_log_end(log: PartitionLog) -> None:
    a = put(log, [10, 11, 12])
    b = put(log, [13])
    assert log.log_end_offset == 4
    assert log.high_watermark == 0  # the replica manager moves it, not an append
    assert log.size_bytes == len(a) + len(b)
    assert log.read(0, 10_000) == a + b


def test_append_must_start_at_the_log_end(log: PartitionLog) -> None:
    put(log, [1, 2])
    data = v2(5, [3])
    with pytest.raises(ValueError, match="log end offset is 2"):
        log.append(
            data,
            base_offset=5,
            last_offset=5,
            max_timestamp=3,
            offset_of_max_timestamp=5,
            leader_epoch=0,
        )
    assert log.log_end_offset == 2


def test_append_refuses_partial_batches(log: PartitionLog) -> None:
    data = v2(0, [1, 2])
    with pytest.raises(ValueError, match="whole batches"):
        log.append(
            data[:-3],
            base_offset=0,
            last_offset=1,
            max_timestamp=2,
            offset_of_max_timestamp=1,
            leader_epoch=0,
        )
    with pytest.raises(ValueError, match="last offset"):
        log.append(
            data,
            base_offset=0,
            last_offset=5,
            max_timestamp=2,
            offset_of_max_timestamp=1,
            leader_epoch=0,
        )
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_append_lock_is_reentrant_and_usable(log: PartitionLog) -> None:
    with log.append_lock(), log.append_lock():
        put(log, [1])
    assert log.log_end_offset == 1


# -- reads -----------------------------------------------------------------------------------


def test_read_boundaries(log: PartitionLog) -> None:
    a = put(log, [1, 2, 3])  # offsets 0-2
    b = put(log, [4, 5])  # 3-4
    c = put(log, [6])  # 5
    # From inside a batch: the whole batch holding the offset, as Kafka.
    assert log.read(1, 10_000) == a + b + c
    assert log.read(3, 10_000) == b + c
    assert log.read(4, 10_000) == b + c
    assert log.read(5, 10_000) == c
    # max_bytes cuts at a batch boundary, never inside one.
    assert log.read(0, len(a) + len(b)) == a + b
    assert log.read(0, len(a) + len(b) - 1) == a
    assert log.read(0, len(a) + len(b) + len(c) - 1) == a + b
    # The first batch alone over max_bytes: whole with min_one_batch, else nothing.
    assert log.read(0, 1) == a
    assert log.read(0, 0) == a
    assert log.read(0, 1, min_one_batch=False) == b""
    assert log.read(0, len(a), min_one_batch=False) == a
    # The log end reads empty; beyond it, and below the start, is out of range.
    assert log.read(6, 100) == b""
    with pytest.raises(OffsetOutOfRange):
        log.read(7, 100)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 100)


def test_read_after_delete_records_starts_at_the_holding_batch(log: PartitionLog) -> None:
    put(log, [1, 2, 3])
    b = put(log, [4, 5, 6])  # 3-5
    assert log.delete_records_before(4) == 4
    assert log.log_start_offset == 4
    with pytest.raises(OffsetOutOfRange):
        log.read(3, 100)
    assert log.read(4, 10_000) == b


def test_read_stays_in_one_segment(log: PartitionLog) -> None:
    log.segment_bytes = 1  # every append after the first rolls
    a = put(log, [1])
    b = put(log, [2])
    assert log.segment_count == 2
    assert log.read(0, 10_000) == a  # Kafka's LocalLog.read: one segment per read
    assert log.read(1, 10_000) == b


def test_compressed_batches_are_read_whole(log: PartitionLog) -> None:
    a = put(log, [1, 2, 3, 4], compression=CompressionType.GZIP)
    assert log.read(2, 10) == a
    assert offsets_of(log.read(2, 10)) == [0, 1, 2, 3]


# -- segments --------------------------------------------------------------------------------


def test_segment_rolls_on_size(log: PartitionLog) -> None:
    one = len(v2(0, [1]))
    log.segment_bytes = 2 * one
    for ts in range(5):
        put(log, [ts])
    # Kafka rolls when size > segment.bytes - the append's size: two batches a segment.
    assert log.segment_base_offsets == [0, 2, 4]
    assert log.size_bytes == 5 * one


def test_segment_rolls_on_time_from_the_first_timestamp(log: PartitionLog) -> None:
    log.segment_ms = 1000
    put(log, [5000])
    put(log, [6000])  # waited 1000: not more than segment.ms
    assert log.segment_count == 1
    put(log, [6001])
    assert log.segment_base_offsets == [0, 2]
    # Settable at run time (a per-topic config change).
    log.segment_ms = 10**9
    put(log, [10**6])
    assert log.segment_count == 2


def test_segment_rolls_on_wall_clock_without_timestamps(log: PartitionLog) -> None:
    log.segment_ms = 1000
    put(log, [-1], now_ms=0)
    put(log, [-1], now_ms=10**15)
    assert log.segment_count == 2


# -- timestamps ------------------------------------------------------------------------------


def test_offset_for_timestamp(log: PartitionLog) -> None:
    put(log, [100, 300, 200], epoch=3)  # 0-2
    put(log, [150, 400], epoch=5)  # 3-4
    assert log.offset_for_timestamp(50) == TimestampOffset(0, 100, 3)
    assert log.offset_for_timestamp(100) == TimestampOffset(0, 100, 3)
    assert log.offset_for_timestamp(101) == TimestampOffset(1, 300, 3)
    assert log.offset_for_timestamp(301) == TimestampOffset(4, 400, 5)
    assert log.offset_for_timestamp(401) is None


def test_offset_for_timestamp_respects_the_log_start(log: PartitionLog) -> None:
    put(log, [100, 300, 200])
    log.delete_records_before(2)
    assert log.offset_for_timestamp(100) == TimestampOffset(2, 200, 0)


def test_offset_for_timestamp_searches_the_first_segment_reaching_it(log: PartitionLog) -> None:
    log.segment_bytes = 1
    put(log, [100])
    put(log, [500])
    put(log, [300])
    assert log.segment_count == 3
    assert log.offset_for_timestamp(200) == TimestampOffset(1, 500, 0)
    assert log.offset_for_timestamp(501) is None


def test_offset_for_timestamp_with_legacy_entries(log: PartitionLog) -> None:
    data = encode_message_set(
        [NewRecord(0, 10, None, b"a"), NewRecord(1, 30, None, b"b"), NewRecord(2, 20, None, b"c")],
        magic=1,
        compression=CompressionType.GZIP,
    )
    put_raw(log, data)
    assert log.log_end_offset == 3
    assert log.offset_for_timestamp(15) == TimestampOffset(1, 30, -1)
    assert log.max_timestamp_offset() == TimestampOffset(1, 30, -1)


def test_max_timestamp_offset_is_the_earliest_record_with_it(log: PartitionLog) -> None:
    put(log, [100, 900, 200], epoch=1)  # 0-2
    put(log, [900, 50], epoch=2)  # 3-4: same max, later
    assert log.max_timestamp_offset() == TimestampOffset(1, 900, 1)
    put(log, [901], epoch=2)
    assert log.max_timestamp_offset() == TimestampOffset(5, 901, 2)


def test_max_timestamp_across_segments(log: PartitionLog) -> None:
    log.segment_bytes = 1
    put(log, [100])
    put(log, [700, 700])
    put(log, [700])
    assert log.max_timestamp_offset() == TimestampOffset(1, 700, 0)


def test_max_timestamp_with_log_append_time(log: PartitionLog) -> None:
    data = encode_batch(
        [NewRecord(0, 5, None, b"a"), NewRecord(1, 9, None, b"b")],
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=1234,
        partition_leader_epoch=7,
    )
    put_raw(log, data, epoch=7)
    assert log.max_timestamp_offset() == TimestampOffset(0, 1234, 7)
    assert log.offset_for_timestamp(1000) == TimestampOffset(0, 1234, 7)


def test_magic_0_has_no_timestamps(log: PartitionLog) -> None:
    put_raw(log, encode_message_set([NewRecord(0, -1, None, b"a")], magic=0))
    assert log.max_timestamp_offset() is None
    assert log.offset_for_timestamp(0) is None


# -- leader epochs ---------------------------------------------------------------------------


def test_epoch_cache_and_end_offsets(log: PartitionLog) -> None:
    put(log, [1, 1], epoch=1)  # 0-1
    put(log, [1], epoch=1)  # 2: same epoch, no entry
    put(log, [1, 1], epoch=3)  # 3-4
    put(log, [1], epoch=2)  # 5: an older epoch adds nothing
    put(log, [1], epoch=6)  # 6
    assert log.epoch_entries() == [(1, 0), (3, 3), (6, 6)]
    assert log.latest_epoch == 6
    assert log.log_end_offset == 7
    # Kafka's endOffsetFor, computed by hand:
    assert log.end_offset_for_epoch(6) == (6, 7)  # the latest: the log end
    assert log.end_offset_for_epoch(1) == (1, 3)
    assert log.end_offset_for_epoch(2) == (1, 3)  # unknown epoch: the one below it
    assert log.end_offset_for_epoch(4) == (3, 6)
    assert log.end_offset_for_epoch(0) == (0, 0)  # older than the first: its start
    assert log.end_offset_for_epoch(7) == (-1, -1)  # above every epoch
    assert log.end_offset_for_epoch(-1) == (-1, -1)  # UNDEFINED
    assert log.epoch_for_offset(4) == 3
    assert log.epoch_for_offset(6) == 6


def test_empty_epoch_cache_is_undefined(log: PartitionLog) -> None:
    assert log.end_offset_for_epoch(0) == (-1, -1)
    assert log.epoch_for_offset(0) == -1


def test_legacy_append_clears_the_epoch_cache(log: PartitionLog) -> None:
    put(log, [1], epoch=4)
    assert log.latest_epoch == 4
    put_raw(log, encode_message_set([NewRecord(1, 5, None, b"a")], magic=1))
    assert log.latest_epoch is None
    assert log.end_offset_for_epoch(4) == (-1, -1)


def test_delete_records_moves_the_first_epoch_entry(log: PartitionLog) -> None:
    put(log, [1, 1], epoch=1)  # 0-1
    put(log, [1, 1], epoch=2)  # 2-3
    log.delete_records_before(1)
    assert log.epoch_entries() == [(1, 1), (2, 2)]
    assert log.earliest_epoch() == 1
    log.delete_records_before(3)
    assert log.epoch_entries() == [(2, 3)]
    assert log.end_offset_for_epoch(1) == (1, 3)


# -- delete records and retention ------------------------------------------------------------


def test_delete_records(log: PartitionLog) -> None:
    log.segment_bytes = 1
    a = put(log, [1, 1])  # segment 0: 0-1
    b = put(log, [1, 1])  # segment 2: 2-3
    c = put(log, [1])  # segment 4: 4
    assert log.delete_records_before(1) == 1
    assert log.segment_base_offsets == [0, 2, 4]  # segment 0 still holds offset 1
    assert log.delete_records_before(0) == 1  # never backwards
    assert log.delete_records_before(3) == 3
    assert log.segment_base_offsets == [2, 4]
    assert log.size_bytes == len(b) + len(c)
    assert log.read(3, 10_000) == b
    assert log.delete_records_before(5) == 5  # up to the log end: the active segment stays
    assert log.segment_base_offsets == [4]
    assert log.read(5, 100) == b""
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(6)
    del a


def test_retention_by_size(log: PartitionLog) -> None:
    one = len(v2(0, [1]))
    log.segment_bytes = 1
    for _ in range(4):
        put(log, [1])
    log.update_high_watermark(log.log_end_offset)
    freed = log.apply_retention(10, retention_ms=-1, retention_bytes=2 * one)
    assert freed == 2 * one
    assert log.segment_base_offsets == [2, 3]
    assert log.log_start_offset == 2
    assert log.apply_retention(10, retention_ms=-1, retention_bytes=2 * one) == 0
    assert log.apply_retention(10, retention_ms=-1, retention_bytes=-1) == 0


def test_retention_by_size_may_take_the_active_segment(log: PartitionLog) -> None:
    one = len(v2(0, [1]))
    put(log, [1])
    put(log, [1])
    log.update_high_watermark(log.log_end_offset)
    # retention.bytes 0: everything goes; Kafka rolls an empty segment at the log end first.
    assert log.apply_retention(10, retention_ms=-1, retention_bytes=0) == 2 * one
    assert log.segment_base_offsets == [2]
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (2, 2, 0)
    assert log.read(2, 100) == b""
    put(log, [1])
    assert log.read(2, 100) != b""


def test_retention_by_time(log: PartitionLog) -> None:
    log.segment_bytes = 1
    put(log, [1000])
    put(log, [2000])
    put(log, [3000])
    log.update_high_watermark(log.log_end_offset)
    # Deletes oldest segments whose largest timestamp is more than retention.ms old.
    assert log.apply_retention(2500, retention_ms=1000, retention_bytes=-1) > 0
    assert log.segment_base_offsets == [1, 2]
    assert log.log_start_offset == 1
    assert log.apply_retention(2500, retention_ms=-1, retention_bytes=-1) == 0
    assert log.apply_retention(10_000, retention_ms=1000, retention_bytes=-1) > 0
    assert log.segment_base_offsets == [3]
    assert log.log_start_offset == log.log_end_offset == 3


def test_retention_never_deletes_an_empty_active_segment(log: PartitionLog) -> None:
    assert log.apply_retention(10**15, retention_ms=0, retention_bytes=0) == 0
    assert log.segment_base_offsets == [0]


def test_retention_applies_delete_records_segments(log: PartitionLog) -> None:
    log.segment_bytes = 1
    put(log, [1])
    put(log, [1])
    log.delete_records_before(1)
    assert log.segment_base_offsets == [1]  # deleted at once
    assert log.apply_retention(0, retention_ms=-1, retention_bytes=-1) == 0


# -- many small batches: the index is compact ------------------------------------------------


def test_many_batches(log: PartitionLog) -> None:
    sent = [put(log, [i]) for i in range(500)]
    assert log.log_end_offset == 500
    assert log.read(250, 10**9) == b"".join(sent[250:])
    assert log.offset_for_timestamp(321) == TimestampOffset(321, 321, 0)
    assert log.max_timestamp_offset() == TimestampOffset(499, 499, 0)


def test_legacy_message_set_entries(log: PartitionLog) -> None:
    data = encode_message_set(
        [NewRecord(i, 10 + i, None, b"m") for i in range(4)], magic=1
    )  # four top-level entries, one append
    put_raw(log, data)
    assert log.log_end_offset == 4
    entries = list(iter_batches(data))
    size = entries[0].size_in_bytes
    assert log.read(2, 2 * size) == b"".join(bytes(e.buffer) for e in entries[2:4])
    assert log.read(0, size + 1) == bytes(entries[0].buffer)
    assert log.offset_for_timestamp(12) == TimestampOffset(2, 12, -1)
    assert log.max_timestamp_offset() == TimestampOffset(3, 13, -1)
