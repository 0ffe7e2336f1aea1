"""`zkbroker run --log-dir D` stopped and started again: the embedded ZooKeeper keeps the
cluster in `D/zookeeper`, so the same topics, records and cluster id are served; a second
process on the same D is refused; a partition directory of another topic id is set aside
(`-stray`), never deleted; a process of three brokers comes back with every leader where it
was, none moved to the broker that happened to register first.

Real parts only: `python -m zkbroker run` as a subprocess with its embedded ZooKeeper,
kafka-python over TCP.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

TOPIC = "kept"


class Run:
    """One `zkbroker run --log-dir` process, its stderr in a file."""

    def __init__(self, log_dir: Path, stderr_path: Path, *extra: str) -> None:
        self.stderr_path = stderr_path
        self._stderr: IO[bytes] = stderr_path.open("ab")
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "zkbroker", "run", "--brokers", "1", "--port", "0"),
                *("--log-dir", str(log_dir), *extra),
            ],
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.ready: dict[str, str] = {}

    def wait_ready(self, timeout: float = 60) -> dict[str, str]:
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while len(self.ready) < 2:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"zkbroker did not start: {self.stderr()}")
            line = self.proc.stdout.readline()
            if "=" in line:
                key, value = line.strip().split("=", 1)
                self.ready[key] = value
        return self.ready

    @property
    def bootstrap(self) -> str:
        return self.ready["bootstrap_servers"]

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        self.proc.send_signal(sig)
        assert self.proc.wait(60) == 0, self.stderr()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._stderr.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[list[Run]]:
    started: list[Run] = []
    yield started
    for run in started:
        run.kill()


def _start(runs: list[Run], log_dir: Path, name: str, *extra: str) -> Run:
    run = Run(log_dir, log_dir.parent / f"{name}.stderr", *extra)
    runs.append(run)
    run.wait_ready()
    return run


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for value in values:
            producer.send(topic, value=value, partition=0).get(timeout=30)
    finally:
        producer.close()


def _consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=15_000
    )
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        values: list[bytes] = []
        for message in consumer:
            values.append(message.value)
            if len(values) >= count:
                break
        return values
    finally:
        consumer.close()


def _describe(bootstrap: str) -> tuple[str, list[str]]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        cluster_id = admin.describe_cluster()["cluster_id"]
        return cluster_id, sorted(admin.list_topics())
    finally:
        admin.close()


def _segment(log_dir: Path, directory: str) -> bytes:
    return (log_dir / directory / "00000000000000000000.log").read_bytes()


def test_restart_serves_the_same_topics_records_and_cluster_id(
    tmp_path: Path, runs: list[Run]
) -> None:
    log_dir = tmp_path / "logs"
    first = _start(runs, log_dir, "first")
    admin = KafkaAdminClient(bootstrap_servers=first.bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=1)])
    finally:
        admin.close()
    _produce(first.bootstrap, TOPIC, [b"one", b"two", b"three"])
    cluster_id, topics = _describe(first.bootstrap)
    assert TOPIC in topics
    assert (log_dir / "zookeeper" / "version-2").is_dir()

    # A second process on the same log dir with its own embedded ZooKeeper is refused.
    second = Run(log_dir, tmp_path / "second.stderr")
    runs.append(second)
    assert second.proc.wait(60) == 1
    assert f"is in use by process {first.proc.pid}" in second.stderr()
    assert "--zookeeper" in second.stderr()

    first.stop(signal.SIGTERM)
    segment = _segment(log_dir, f"{TOPIC}-0")
    assert segment  # the records are in Kafka's layout on disk

    restarted = _start(runs, log_dir, "restarted")
    assert restarted.ready["zookeeper"]  # a port of its own, chosen again
    assert _describe(restarted.bootstrap) == (cluster_id, topics)
    assert _consume(restarted.bootstrap, TOPIC, 3) == [b"one", b"two", b"three"]
    _produce(restarted.bootstrap, TOPIC, [b"four"])
    assert _consume(restarted.bootstrap, TOPIC, 4)[-1] == b"four"
    assert _segment(log_dir, f"{TOPIC}-0").startswith(segment)  # appended, not replaced
    restarted.stop(signal.SIGINT)
    assert not list(log_dir.glob("*-stray"))


def test_a_partition_dir_of_another_topic_id_is_set_aside(tmp_path: Path, runs: list[Run]) -> None:
    log_dir = tmp_path / "logs"
    first = _start(runs, log_dir, "first")
    _produce(first.bootstrap, "orphaned", [b"old-1", b"old-2"])  # auto-created
    first.stop()
    old_segment = _segment(log_dir, "orphaned-0")
    metadata = (log_dir / "orphaned-0" / "partition.metadata").read_text()

    # The cluster's ZooKeeper data is lost (or the topic was deleted and re-created while
    # this directory was not looked at): the topic comes back with another topic id.
    for path in sorted((log_dir / "zookeeper").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()

    again = _start(runs, log_dir, "again")
    _produce(again.bootstrap, "orphaned", [b"new-1"])
    assert _consume(again.bootstrap, "orphaned", 1) == [b"new-1"]
    again.stop()

    (stray,) = log_dir.glob("orphaned-0.*-stray")
    suffix = stray.name.removeprefix("orphaned-0.").removesuffix("-stray")
    assert uuid.UUID(hex=suffix)  # Kafka's name: 32 hex digits
    assert _segment(log_dir, stray.name) == old_segment  # the old records, untouched
    assert (stray / "partition.metadata").read_text() == metadata
    assert (log_dir / "orphaned-0" / "partition.metadata").read_text() != metadata
    warnings = [line for line in again.stderr().splitlines() if "partition_dir_set_aside" in line]
    assert len(warnings) == 1 and str(stray) in warnings[0], again.stderr()

    # Later starts keep it and say so.
    third = _start(runs, log_dir, "third")
    third.stop()
    assert stray.is_dir()
    assert "storage.stray_partition_dir_kept" in third.stderr()


def _leaders(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int]]]:
    """Each partition's (leader, replicas) as the cluster's metadata says right now."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        (described,) = admin.describe_topics([topic])
        partitions = described["partitions"]
        return {p["partition_index"]: (p["leader_id"], p["replica_nodes"]) for p in partitions}
    finally:
        admin.close()


def test_a_restarted_process_of_three_brokers_keeps_its_leaders(
    tmp_path: Path, runs: list[Run]
) -> None:
    log_dir = tmp_path / "logs"
    first = _start(runs, log_dir, "first", "--brokers", "3")
    admin = KafkaAdminClient(bootstrap_servers=first.bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, num_partitions=6, replication_factor=3)])
    finally:
        admin.close()
    _produce(first.bootstrap, TOPIC, [b"kept"])
    before = _leaders(first.bootstrap, TOPIC)
    assert {leader for leader, _ in before.values()} == {0, 1, 2}
    first.stop()

    # Broker 0 used to register and win the election alone, moving the partitions of 1 and
    # 2 to itself just before they registered: "ready" was a cluster still moving leaders.
    again = _start(runs, log_dir, "again", "--brokers", "3")
    assert _leaders(again.bootstrap, TOPIC) == before
    assert "partitions_offline" not in again.stderr()
    assert _consume(again.bootstrap, TOPIC, 1) == [b"kept"]
