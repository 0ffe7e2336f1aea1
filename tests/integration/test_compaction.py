"""Log compaction with real clients (docs/kafka-behaviour.md §15, "Compaction").

A compacted topic with small segments is cleaned by the retention task's pass (every
``log.retention.check.interval.ms``): a consumer reading from the beginning sees only the
last value of each key, at the offsets the producer was given. ``__consumer_offsets`` (which
the group coordinator writes, ``cleanup.policy=compact``) shrinks after many commits of one
group, and the committed offsets still load after a restart.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.helpers import wait_until, wait_visible
from zkbroker import Cluster
from zkbroker.broker.engine.log_retention import LogRetention

FAST_PASSES = ("log.retention.check.interval.ms", "200")


def _create(cluster: Cluster, name: str, config: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=1, replication_factor=3, config=config)]
    )
    futures[name].result(timeout=30)
    wait_visible(cluster, name)


def _log_size(cluster: Cluster, topic: str) -> int:
    def size() -> int:
        log = cluster.engine.log_of(topic, 0)
        return -1 if log is None else log.size_bytes

    return cluster.run_sync(size)


def test_a_compacted_topic_keeps_the_last_value_of_each_key(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = cluster_factory(log_dir=str(tmp_path), broker_configs=(FAST_PASSES,))
    _create(
        cluster,
        "latest",
        {"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"},
    )
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True}
    )
    offsets: dict[str, int] = {}
    failures: list[object] = []

    def delivered(err: object, msg: object) -> None:
        if err is not None:
            failures.append(err)
        else:
            offsets[msg.key().decode()] = msg.offset()  # type: ignore[attr-defined]

    for round_ in range(20):
        for k in range(10):
            producer.produce("latest", key=f"k{k}", value=f"v{round_}", on_delivery=delivered)
        assert producer.flush(30) == 0
    # Two large records, one request each: the second rolls a new active segment, so every
    # keyed value above lies in a cleanable segment.
    for _ in range(2):
        producer.produce("latest", key="filler", value="x" * 600, on_delivery=delivered)
        assert producer.flush(30) == 0
    assert not failures
    last = {k: o for k, o in offsets.items() if k != "filler"}
    assert len(last) == 10

    def compacted() -> bool:
        keys = [r.key for r in cluster.records("latest") if r.key != b"filler"]
        return len(keys) == 10

    wait_until(compacted, timeout=30)

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "compaction-reader",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([CTP("latest", 0, 0)])
        seen: list[tuple[str, str, int]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len([s for s in seen if s[0] != "filler"]) < 10:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                key, value = message.key() or b"", message.value() or b""
                seen.append((key.decode(), value.decode(), message.offset() or 0))
    finally:
        consumer.close()
    keyed = [(k, v, o) for k, v, o in seen if k != "filler"]
    assert sorted(keyed) == sorted((f"k{k}", "v19", last[f"k{k}"]) for k in range(10))
    assert [o for _, _, o in seen] == sorted(o for _, _, o in seen)


def test_consumer_offsets_shrinks_and_still_loads_after_a_restart(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    configs = (
        FAST_PASSES,
        ("offsets.topic.num.partitions", "1"),
        ("offsets.topic.segment.bytes", "2048"),
        ("group.initial.rebalance.delay.ms", "0"),
    )
    cluster = cluster_factory(log_dir=str(tmp_path), broker_configs=configs)
    _create(cluster, "src", {})
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "committer",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    )
    try:
        # A member of the group (JoinGroup creates `__consumer_offsets`), committing 300 times.
        consumer.subscribe(["src"])
        deadline = time.monotonic() + 60
        while not consumer.assignment():
            assert time.monotonic() < deadline, "no assignment"
            consumer.poll(0.1)
        for i in range(1, 301):
            consumer.commit(offsets=[CTP("src", 0, i)], asynchronous=False)
    finally:
        consumer.close()

    def end_offset() -> int:
        log = cluster.engine.log_of("__consumer_offsets", 0)
        return -1 if log is None else log.log_end_offset

    # 300 commit batches of one record (over 100 bytes each) were appended: uncleaned, the
    # log would hold more than 30 KB in 15 segments of 2 KB.
    assert cluster.run_sync(end_offset) > 300

    def shrunk() -> int | None:
        size = _log_size(cluster, "__consumer_offsets")
        return size if 0 <= size < 3 * 2048 else None

    wait_until(shrunk, timeout=30)
    offset_records = [r for r in cluster.records("__consumer_offsets") if r.key is not None]
    assert len(offset_records) < 60

    cluster.stop()
    again = cluster_factory(log_dir=str(tmp_path), broker_configs=configs)
    admin = AdminClient({"bootstrap.servers": again.bootstrap_servers})

    def committed() -> int | None:
        try:
            got = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions("committer", [CTP("src", 0)])]
            )["committer"].result(10)
        except (KafkaException, TimeoutError):  # the coordinator is still loading
            return None
        return int(got.topic_partitions[0].offset)

    wait_until(lambda: committed() == 300, timeout=60, interval=0.5)


def test_log_cleaner_enable_false_keeps_every_record(
    cluster_factory: Callable[..., Cluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    passes = 0
    run_once = LogRetention.run_once

    async def counted(self: LogRetention) -> int:
        nonlocal passes
        freed = await run_once(self)
        passes += 1
        return freed

    monkeypatch.setattr(LogRetention, "run_once", counted)
    cluster = cluster_factory(
        broker_configs=(FAST_PASSES, ("log.cleaner.enable", "false")),
    )
    _create(
        cluster,
        "kept",
        {"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"},
    )
    for i in range(60):
        cluster.produce("kept", b"v%d" % i, key=b"same")
    # A negative check: five retention passes, each of which would clean the log if the
    # cleaner were enabled (the tests above), have run.
    after = passes
    wait_until(lambda: passes >= after + 5)
    assert [r.offset for r in cluster.records("kept")] == list(range(60))
