"""The directory backend: Kafka's file layout, reopening, and processes sharing a log dir.

Two `LogManager` instances on one directory stand in for two zkbroker processes: flock
locks are per open file description, so they exclude each other within one process too.
"""

from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path

import pytest

from tests.unit.test_storage_log import put, v2
from zkbroker.broker.protocol.records import NewRecord, encode_batch, encode_message_set
from zkbroker.broker.storage import LogManager, OffsetOutOfRange, PartitionLog, TimestampOffset

TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")


def kafka_uuid(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def open_log(
    log_dir: Path, topic_id: uuid.UUID | None = TOPIC_ID
) -> tuple[LogManager, PartitionLog]:
    mgr = LogManager(log_dir)
    return mgr, mgr.get_or_create("orders", 3, topic_id)


def test_kafka_layout_and_byte_identity(tmp_path: Path) -> None:
    mgr, log = open_log(tmp_path)
    log.segment_bytes = 3 * len(v2(0, [1]))
    sent = [put(log, [i], epoch=2) for i in range(5)]
    part = tmp_path / "orders-3"
    names = sorted(p.name for p in part.iterdir() if p.suffix == ".log")
    assert names == ["00000000000000000000.log", "00000000000000000003.log"]
    assert (part / names[0]).read_bytes() == b"".join(sent[:3])
    assert (part / names[1]).read_bytes() == b"".join(sent[3:])
    assert (part / "partition.metadata").read_text() == (
        f"version: 0\ntopic_id: {kafka_uuid(TOPIC_ID)}"
    )
    mgr.close()


def test_log_start_offset_checkpoint_format(tmp_path: Path) -> None:
    mgr, log = open_log(tmp_path)
    put(log, [1, 2, 3])
    checkpoint = tmp_path / "log-start-offset-checkpoint"
    log.delete_records_before(2)
    assert checkpoint.read_text() == "0\n1\norders 3 2\n"
    other = mgr.get_or_create("other", 0, None)
    put(other, [1, 2])
    other.delete_records_before(1)
    assert checkpoint.read_text() == "0\n2\norders 3 2\nother 0 1\n"
    mgr.delete_topic("other")
    assert checkpoint.read_text() == "0\n1\norders 3 2\n"
    mgr.close()


def test_reopen_keeps_records_offsets_epochs_and_log_start(tmp_path: Path) -> None:
    mgr, log = open_log(tmp_path)
    log.segment_bytes = 1
    a = put(log, [100, 300], epoch=1)  # 0-1, segment 0
    b = put(log, [200], epoch=4)  # 2, segment 2
    c = put(log, [50, 60], epoch=4)  # 3-4, segment 3
    log.delete_records_before(1)
    mgr.close()

    mgr, log = open_log(tmp_path)
    assert (log.log_start_offset, log.log_end_offset) == (1, 5)
    assert log.segment_base_offsets == [0, 2, 3]
    assert log.read(1, 10**6) == a
    assert log.read(2, 10**6) == b
    assert log.read(3, 10**6) == c
    assert log.epoch_entries() == [(1, 1), (4, 2)]
    assert log.end_offset_for_epoch(1) == (1, 2)
    assert log.offset_for_timestamp(150) == TimestampOffset(1, 300, 1)
    assert log.max_timestamp_offset() == TimestampOffset(1, 300, 1)
    with pytest.raises(OffsetOutOfRange):
        log.read(0, 100)
    put(log, [1], epoch=5)
    assert log.log_end_offset == 6
    mgr.close()


def test_reopen_trims_a_partial_batch(tmp_path: Path) -> None:
    mgr, log = open_log(tmp_path)
    a = put(log, [1, 2])
    mgr.close()
    segment = tmp_path / "orders-3" / "00000000000000000000.log"
    torn = v2(2, [3, 4, 5])
    with segment.open("ab") as f:
        f.write(torn[: len(torn) // 2])  # killed mid-write

    mgr, log = open_log(tmp_path)
    assert log.log_end_offset == 2
    assert segment.read_bytes() == a
    b = put(log, [3])
    assert segment.read_bytes() == a + b
    mgr.close()


def test_reopen_trims_a_partial_header(tmp_path: Path) -> None:
    mgr, log = open_log(tmp_path)
    a = put(log, [1])
    mgr.close()
    segment = tmp_path / "orders-3" / "00000000000000000000.log"
    with segment.open("ab") as f:
        f.write(b"\x00" * 7)
    mgr, log = open_log(tmp_path)
    assert segment.read_bytes() == a and log.log_end_offset == 1
    mgr.close()


def test_topic_id_mismatch_replaces_the_directory(tmp_path: Path) -> None:
    mgr, log = open_log(tmp_path)
    put(log, [1, 2, 3])
    log.delete_records_before(2)
    mgr.close()

    new_id = uuid.UUID(int=99)
    mgr, log = open_log(tmp_path, new_id)
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (0, 0, 0)
    part = tmp_path / "orders-3"
    assert (part / "partition.metadata").read_text().endswith(kafka_uuid(new_id))
    assert (part / "00000000000000000000.log").read_bytes() == b""
    assert "orders 3" not in (tmp_path / "log-start-offset-checkpoint").read_text()
    # Without a topic id (a pre-KIP-516 topic) the directory is kept as it is.
    put(log, [7])
    mgr.close()
    mgr, log = open_log(tmp_path, None)
    assert log.log_end_offset == 1
    mgr.close()


def test_open_log_replaced_when_the_topic_id_changes(tmp_path: Path) -> None:
    mgr, log = open_log(tmp_path)
    put(log, [1])
    fresh = mgr.get_or_create("orders", 3, uuid.UUID(int=5))
    assert fresh is not log and fresh.log_end_offset == 0
    assert mgr.get("orders", 3) is fresh
    assert mgr.get_or_create("orders", 3, None) is fresh
    mgr.close()


def test_two_processes_share_a_partition(tmp_path: Path) -> None:
    mgr_a, a = open_log(tmp_path)
    mgr_b, b = open_log(tmp_path)
    first = put(a, [1, 2])
    assert b.log_end_offset == 0  # not seen yet
    with b.append_lock():
        assert b.log_end_offset == 2  # the lock indexes A's append
        second = put(b, [3])
    assert b.read(0, 10**6) == first + second
    with a.append_lock():
        assert a.log_end_offset == 3
    assert a.read(2, 10**6) == second
    segment = tmp_path / "orders-3" / "00000000000000000000.log"
    assert segment.read_bytes() == first + second
    mgr_a.close()
    mgr_b.close()


def test_stale_append_is_refused_after_refresh(tmp_path: Path) -> None:
    mgr_a, a = open_log(tmp_path)
    mgr_b, b = open_log(tmp_path)
    put(a, [1])
    data = v2(0, [2])
    with pytest.raises(ValueError, match="log end offset is 1"):
        b.append(
            data,
            base_offset=0,
            last_offset=0,
            max_timestamp=2,
            offset_of_max_timestamp=0,
            leader_epoch=0,
        )
    mgr_a.close()
    mgr_b.close()


def test_refresh_without_lock_sees_rolls_deletions_and_log_start(tmp_path: Path) -> None:
    mgr_a, a = open_log(tmp_path)
    mgr_b, b = open_log(tmp_path)
    a.segment_bytes = 1
    for i in range(4):
        put(a, [i], epoch=i)
    assert mgr_b.poll_other_processes()
    assert b.log_end_offset == 4 and b.segment_base_offsets == [0, 1, 2, 3]
    assert b.epoch_entries() == [(0, 0), (1, 1), (2, 2), (3, 3)]
    a.delete_records_before(2)  # deletes segments 0 and 1
    mgr_b._last_poll = 0.0  # no need to wait out the poll interval in a test
    assert mgr_b.poll_other_processes()
    assert b.log_start_offset == 2 and b.segment_base_offsets == [2, 3]
    assert b.read(2, 10**6) == a.read(2, 10**6)
    mgr_b._last_poll = 0.0
    assert not mgr_b.poll_other_processes()
    mgr_a.close()
    mgr_b.close()


def test_refresh_without_lock_leaves_a_batch_being_written(tmp_path: Path) -> None:
    mgr_a, a = open_log(tmp_path)
    mgr_b, b = open_log(tmp_path)
    whole = put(a, [1])
    segment = tmp_path / "orders-3" / "00000000000000000000.log"
    half = v2(1, [2])
    with segment.open("ab") as f:
        f.write(half[:20])  # another process mid-write
    assert b.refresh_if_changed()
    assert b.log_end_offset == 1
    assert segment.read_bytes() == whole + half[:20]  # not trimmed without the lock
    with segment.open("ab") as f:
        f.write(half[20:])
    assert b.refresh_if_changed()
    assert b.log_end_offset == 2
    mgr_a.close()
    mgr_b.close()


def test_readers_keep_reading_a_segment_another_process_deleted(tmp_path: Path) -> None:
    mgr_a, a = open_log(tmp_path)
    mgr_b, b = open_log(tmp_path)
    a.segment_bytes = 1
    first = put(a, [1])
    put(a, [2])
    b.refresh_if_changed()
    a.update_high_watermark(a.log_end_offset)
    a.apply_retention(0, retention_ms=-1, retention_bytes=0)
    assert b.read(0, 10**6) == first  # its descriptor still reads the unlinked file
    with b.append_lock():
        pass
    assert b.log_start_offset == 2
    mgr_a.close()
    mgr_b.close()


def test_delete_topic_removes_directories(tmp_path: Path) -> None:
    mgr_a = LogManager(tmp_path)
    mgr_b = LogManager(tmp_path)
    for p in range(3):
        put(mgr_a.get_or_create("gone", p, TOPIC_ID), [1])
    keep = mgr_a.get_or_create("gone-too", 0, None)  # a name that merely starts alike
    put(keep, [1])
    mgr_b.get_or_create("gone", 0, TOPIC_ID)
    mgr_a.delete_topic("gone")
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["gone-too-0"]
    assert mgr_a.get("gone", 0) is None and mgr_a.logs() == [keep]
    mgr_b.delete_topic("gone")  # already removed by the other process: no error
    mgr_a.delete_topic("gone")  # idempotent
    assert mgr_b.get("gone", 0) is None
    mgr_a.close()
    mgr_b.close()


def test_memory_per_batch_is_a_few_dozen_bytes(tmp_path: Path) -> None:
    mgr, log = open_log(tmp_path)
    size = len(encode_batch([NewRecord(0, 1, None, b"x" * 1000)]))
    for base in range(200):
        data = encode_batch([NewRecord(base, 1, None, b"x" * 1000)], base_offset=base)
        log.append(
            data,
            base_offset=base,
            last_offset=base,
            max_timestamp=1,
            offset_of_max_timestamp=base,
            leader_epoch=0,
        )
    seg = log.cleanable_segments()[0]
    arrays = (seg.positions, seg.last_offsets, seg.max_timestamps, seg.epochs)
    per_batch = sum(arr.itemsize for arr in arrays) + 1  # + the magic byte
    assert per_batch <= 32 and len(seg.positions) == 200
    assert os.path.getsize(tmp_path / "orders-3" / "00000000000000000000.log") == 200 * size
    mgr.close()


def test_reopen_rebuilds_a_cleared_epoch_cache(tmp_path: Path) -> None:
    mgr, log = open_log(tmp_path)
    put(log, [1], epoch=3)
    legacy = encode_message_set([NewRecord(1, 2, None, b"a")], magic=1)
    log.append(
        legacy,
        base_offset=1,
        last_offset=1,
        max_timestamp=2,
        offset_of_max_timestamp=1,
        leader_epoch=3,
    )
    put(log, [3], epoch=4)
    assert log.epoch_entries() == [(4, 2)]
    mgr.close()
    mgr, log = open_log(tmp_path)
    assert log.epoch_entries() == [(4, 2)]
    assert log.log_end_offset == 3
    mgr.close()
