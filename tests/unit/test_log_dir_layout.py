"""One log dir per broker under a ``--log-dir`` root (broker/storage/log_dir_layout.py), and
adopting the layout written before: partition directories directly in the root, shared by every
broker. Checked on a layout built here and on the archived one of tests/data (written by
`python -m tests.log_dir_fixture`): each broker's logs hold what the shared ones held, with
the high watermark at the log end offset (under the shared log all of it was acknowledged).
"""

from __future__ import annotations

import os
import tarfile
import uuid
from pathlib import Path

import pytest

from tests import log_dir_fixture
from tests.unit.test_replica_log import lead
from zkbroker.broker.protocol.records import iter_batches
from zkbroker.broker.storage import LogManager, PartitionLog, log_dir_layout, log_dirs_of
from zkbroker.broker.storage.log_dir_layout import adopt_shared_layout, broker_log_dir
from zkbroker.broker.storage.partition_dir import set_aside_dir_name

ARCHIVE = Path(__file__).resolve().parents[1] / "data" / "log-dir-2026-11-29.tar.gz"
TOPIC_ID = uuid.UUID(int=0xAD0)

Record = tuple[int, bytes | None, bytes | None, list[tuple[bytes, bytes | None]]]


def records(log: PartitionLog) -> list[Record]:
    out: list[Record] = []
    offset = log.log_start_offset
    while data := log.read(offset, 1 << 20):
        for batch in iter_batches(data):
            out += [(r.offset, r.key, r.value, list(r.headers)) for r in batch.records()]
            offset = batch.last_offset + 1
    return out


def state(log: PartitionLog) -> tuple[list[Record], int, int, int]:
    return records(log), log.log_start_offset, log.log_end_offset, log.high_watermark


def partition_names(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name[-1].isdigit())


def split(name: str) -> tuple[str, int]:
    topic, _, partition = name.rpartition("-")
    return topic, int(partition)


def shared_state(root: Path, names: list[str]) -> dict[str, tuple[list[Record], int, int, int]]:
    """What the shared layout gives each partition, opened as one log dir: its records, log
    start and log end, and (the shared-log rule) the high watermark at the log end."""
    mgr = LogManager(root)
    try:
        out = {}
        for name in names:
            log = mgr.get_or_create(*split(name), None)
            out[name] = (records(log), log.log_start_offset, log.log_end_offset, log.log_end_offset)
        return out
    finally:
        mgr.close()


def test_broker_log_dirs_sit_under_the_root() -> None:
    assert broker_log_dir(Path("/data/logs"), 2) == Path("/data/logs/broker-2")


def _shared_layout(root: Path) -> None:
    """The layout written until now: partition directories and checkpoints in the root."""
    mgr = LogManager(root)
    orders = mgr.get_or_create("orders", 0, TOPIC_ID)
    orders.segment_bytes = 1
    for _ in range(4):
        lead(orders, 2)
    orders.delete_records_before(3)  # log-start-offset-checkpoint: orders 0 3
    orders.set_first_dirty_offset(4)  # cleaner-offset-checkpoint
    for partition in (0, 1):  # a topic named like the broker dirs
        lead(mgr.get_or_create("broker", partition, TOPIC_ID), 3)
    mgr.close()
    (root / "replication-offset-checkpoint").unlink()  # the shared layout had none
    (root / set_aside_dir_name("gone", 0, "-delete")).mkdir()
    (root / set_aside_dir_name("kept", 0, "-stray")).mkdir()
    (root / "zookeeper").mkdir()
    (root / "zookeeper" / "zoo.cfg").write_text("dataDir=.")


def test_adopting_gives_each_broker_its_own_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "logs"
    _shared_layout(root)
    names = partition_names(root)
    assert names == ["broker-0", "broker-1", "orders-0"]
    expected = shared_state(root, names)
    adopt_shared_layout(root, [0, 1, 2])

    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == [
        "broker-0",
        "broker-1",
        "broker-2",
        "kept-0." + next(root.glob("kept-0.*")).name.split(".", 1)[1],
        "zookeeper",
    ]
    assert (root / "zookeeper" / "zoo.cfg").read_text() == "dataDir=."
    assert "storage.shared_layout_removed" in caplog.text and "orders-0" in caplog.text
    dirs = [broker_log_dir(root, n) for n in range(3)]
    for broker_dir in dirs:
        assert (broker_dir / "log-start-offset-checkpoint").read_text() == "0\n1\norders 0 3\n"
        assert (broker_dir / "cleaner-offset-checkpoint").read_text() == "0\n1\norders 0 4\n"
        assert (broker_dir / "replication-offset-checkpoint").read_text() == (
            "0\n3\nbroker 0 3\nbroker 1 3\norders 0 8\n"
        )
    # Sealed segments are shared, the active one is each broker's own.
    sealed, active = "orders-0/00000000000000000004.log", "orders-0/00000000000000000006.log"
    assert len({os.stat(d / sealed).st_ino for d in dirs}) == 1
    assert len({os.stat(d / active).st_ino for d in dirs}) == 3

    mgrs = [LogManager(d) for d in dirs]
    try:
        for mgr in mgrs:
            for name in names:
                assert state(mgr.get_or_create(*split(name), TOPIC_ID)) == expected[name]
        lead(mgrs[0].get_or_create("orders", 0, TOPIC_ID), 1)
        assert mgrs[1].get_or_create("orders", 0, TOPIC_ID).log_end_offset == 8
    finally:
        for mgr in mgrs:
            mgr.close()

    caplog.clear()
    adopt_shared_layout(root, [0, 1, 2])  # nothing left to adopt
    assert "shared_layout" not in caplog.text
    assert partition_names(root) == ["broker-0", "broker-1", "broker-2"]


def test_a_crash_midway_leaves_the_old_layout_and_the_next_call_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "logs"
    _shared_layout(root)
    expected = shared_state(root, partition_names(root))
    real_copy = log_dir_layout._copy_partition_dir
    copies = 0

    def crash_in_the_second_broker(source: Path, target: Path) -> None:
        nonlocal copies
        copies += 1
        if copies == 5:  # three partitions each: the second of broker 1
            raise OSError("crash")
        real_copy(source, target)

    monkeypatch.setattr(log_dir_layout, "_copy_partition_dir", crash_in_the_second_broker)
    with pytest.raises(OSError, match="crash"):
        adopt_shared_layout(root, [0, 1])
    assert (root / "broker-0" / "orders-0").is_dir()
    assert (root / "broker-1.adopting").is_dir()
    assert (root / "orders-0").is_dir() and (root / "log-start-offset-checkpoint").is_file()
    monkeypatch.undo()

    adopt_shared_layout(root, [0, 1])
    assert not (root / "broker-1.adopting").exists() and not (root / "orders-0").exists()
    assert not (root / ".zkbroker-adopt-pending").exists()
    for broker_id in (0, 1):
        mgr = LogManager(broker_log_dir(root, broker_id))
        try:
            for name, want in expected.items():
                assert state(mgr.get_or_create(*split(name), TOPIC_ID)) == want
        finally:
            mgr.close()


def test_adopting_for_no_broker_touches_nothing(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    _shared_layout(root)
    with pytest.raises(ValueError, match="no broker"):
        adopt_shared_layout(root, [])
    assert (root / "orders-0").is_dir()
    adopt_shared_layout(tmp_path / "missing", [0])  # no root: nothing to do


def _extract(archive: Path, into: Path) -> Path:
    """The archived log dir, without ZooKeeper's preallocated transaction log (64 MiB of
    zeros nothing here reads)."""
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if not m.name.endswith("version-2/log.1")]
        tar.extractall(into, members=members, filter="data")
    return into / "log-dir"


def test_the_archived_shared_layout_is_adopted_with_its_data(tmp_path: Path) -> None:
    expected_root = _extract(ARCHIVE, tmp_path / "expected")
    root = _extract(ARCHIVE, tmp_path / "adopted")
    names = partition_names(root)
    assert {"plain-0", "plain-1", "plain-2", "compacted-0", "txn-0"} <= set(names)
    expected = shared_state(expected_root, names)
    for partition in range(log_dir_fixture.PARTITIONS):
        want = [
            (key, value, [(name.encode(), v) for name, v in headers])
            for key, value, headers in log_dir_fixture.plain_records(partition)
        ]
        got = [
            (key, value, headers) for _, key, value, headers in expected[f"plain-{partition}"][0]
        ]
        assert got == want
    zookeeper = {p: p.read_bytes() for p in (root / "zookeeper").rglob("*") if p.is_file()}

    adopt_shared_layout(root, [0, 1, 2])

    assert partition_names(root) == ["broker-0", "broker-1", "broker-2"]
    assert {p: p.read_bytes() for p in (root / "zookeeper").rglob("*") if p.is_file()} == zookeeper
    for broker_id in (0, 1, 2):
        mgr = LogManager(broker_log_dir(root, broker_id))
        try:
            for name in names:
                assert state(mgr.get_or_create(*split(name), None)) == expected[name], name
        finally:
            mgr.close()


def test_one_broker_keeps_kafkas_layout_in_the_root(tmp_path: Path) -> None:
    """A process of one broker uses the log dir as Kafka does; an old log there gets its
    high watermarks at its log ends once; several brokers get a directory each."""
    root = tmp_path / "logs"
    names = log_dir_fixture_partitions(root)
    assert log_dirs_of(root, [0]) == {0: root}
    checkpoint = root / "replication-offset-checkpoint"
    assert checkpoint.is_file()
    mgr = LogManager(root)
    try:
        for name in names:
            log = mgr.get_or_create(*split(name), None)
            assert log.high_watermark == log.log_end_offset
    finally:
        mgr.close()
    written = checkpoint.read_bytes()
    assert log_dirs_of(root, [0]) == {0: root} and checkpoint.read_bytes() == written
    assert log_dirs_of(root, [0, 1]) == {0: root / "broker-0", 1: root / "broker-1"}
    assert partition_names(root) == ["broker-0", "broker-1"]
    # Its own directory from then on, even alone.
    assert log_dirs_of(root, [0]) == {0: root / "broker-0"}


def log_dir_fixture_partitions(root: Path) -> list[str]:
    """A root written in the shared layout: two partitions with records."""
    mgr = LogManager(root)
    try:
        for partition in (0, 1):
            log = mgr.get_or_create("t", partition, TOPIC_ID)
            lead(log, 2)
    finally:
        mgr.close()
    # The shared layout had no high-watermark checkpoint.
    (root / "replication-offset-checkpoint").unlink(missing_ok=True)
    return ["t-0", "t-1"]
