"""The classic group coordinator with real clients (docs/kafka-behaviour.md §16).

A confluent-kafka group of two consumers rebalances (each gets partitions, one leaves, the
other gets all), committed offsets are read back by admin clients, group offsets are altered
and deleted (OffsetDelete), kafka-python describes, lists and deletes the group, offsets
survive a restart with a log directory, OffsetFetch answers the metadata and leader epoch
OffsetCommit stored, and when the coordinator's broker stops the group moves to the new leader
of its ``__consumer_offsets`` partition with its offsets, its consumer carrying on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until
from zkbroker import Cluster, OffsetsUnavailable
from zkbroker.broker.protocol.error_codes import COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
from zkbroker.broker.protocol.messages.find_coordinator import FindCoordinatorRequest
from zkbroker.broker.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from zkbroker.broker.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from zkbroker.broker.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from zkbroker.broker.toolkit.wire import WireClient

FAST = (("group.initial.rebalance.delay.ms", "0"),)


def _start(factory: Callable[..., Cluster], **kw: object) -> Cluster:
    return factory(kafka_version=(3, 9), broker_configs=FAST, **kw)


def _bootstrap(cluster: Cluster) -> str:
    return ",".join(f"{b.host}:{b.port}" for b in cluster.engine.brokers.values())


def _topic(bootstrap: str, name: str, partitions: int, replicas: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, replicas)])[name].result(30)
    _produce(bootstrap, name, partitions, 20)


def _produce(bootstrap: str, name: str, partitions: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(name, value=b"v%d" % i, partition=i % partitions)
    assert producer.flush(30) == 0


def _coordinator_of(cluster: Cluster, group: str, ask: int) -> int:
    """The node id broker ``ask`` names as the group's coordinator (-1 when none)."""
    node = cluster.engine.brokers[ask]
    with WireClient(node.host, node.port) as client:
        found = client.request(3, FindCoordinatorRequest(key=group, key_type=0))
    return int(found.node_id) if found.error_code == 0 else -1


def _consumer(bootstrap: str, group: str, **extra: object) -> Consumer:
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
    }
    conf.update(extra)
    return Consumer(conf)


def _poll_until(consumers: list[Consumer], done: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.1)
        if done():
            return
    raise AssertionError("condition not reached")


def test_confluent_group_rebalances_commits_and_admin(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = _start(cluster_factory)
    bootstrap = _bootstrap(cluster)
    _topic(bootstrap, "t4", 4)
    a = _consumer(bootstrap, "grp")
    b = _consumer(bootstrap, "grp")
    a.subscribe(["t4"])
    b.subscribe(["t4"])
    try:
        _poll_until(
            [a, b],
            lambda: (
                len(a.assignment()) + len(b.assignment()) == 4
                and bool(a.assignment())
                and bool(b.assignment())
            ),
        )
        a.commit(offsets=[CTP("t4", p.partition, 3) for p in a.assignment()], asynchronous=False)
        b.close()
        _poll_until([a], lambda: len(a.assignment()) == 4)
        committed = a.committed([CTP("t4", p) for p in range(4)], timeout=10)
        assert sorted(c.offset for c in committed).count(3) >= 1
    finally:
        a.close()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("grp")])
    got = listed["grp"].result(30)
    assert any(tp.offset == 3 for tp in got.topic_partitions)
    described = admin.describe_consumer_groups(["grp"])["grp"].result(30)
    assert str(described.state).endswith("EMPTY")
    # Alter then delete offsets (OffsetCommit as admin, then OffsetDelete).
    altered = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("grp", [CTP("t4", 0, 11)])]
    )
    altered["grp"].result(30)
    # OffsetDelete on the wire (this confluent-kafka has no delete_consumer_group_offsets).
    node = cluster.engine.brokers[0]
    with WireClient(node.host, node.port) as client:
        found = client.request(3, FindCoordinatorRequest(key="grp", key_type=0))
    home = cluster.engine.brokers[found.node_id]
    with WireClient(home.host, home.port) as client:
        deleted = client.request(
            0,
            OffsetDeleteRequest(
                group_id="grp",
                topics=[
                    OffsetDeleteRequestTopic(
                        name="t4", partitions=[OffsetDeleteRequestPartition(partition_index=0)]
                    )
                ],
            ),
        )
    assert deleted.error_code == 0
    assert deleted.topics[0].partitions[0].error_code == 0
    after = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("grp", [CTP("t4", 0)])]
    )["grp"].result(30)
    assert after.topic_partitions[0].offset < 0
    # A new consumer resumes from the committed offsets.
    c = _consumer(bootstrap, "grp")
    c.subscribe(["t4"])
    try:
        _poll_until([c], lambda: len(c.assignment()) == 4)
    finally:
        c.close()
    admin.delete_consumer_groups(["grp"])["grp"].result(30)
    groups = admin.list_consumer_groups().result(30)
    assert "grp" not in [g.group_id for g in groups.valid]


def test_kafka_python_group_and_admin(cluster_factory: Callable[..., Cluster]) -> None:
    from kafka import KafkaConsumer
    from kafka.admin import KafkaAdminClient

    cluster = _start(cluster_factory)
    bootstrap = _bootstrap(cluster)
    _topic(bootstrap, "kp", 2)
    consumer = KafkaConsumer(
        "kp",
        bootstrap_servers=bootstrap,
        group_id="kpg",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        records = 0
        deadline = time.monotonic() + 60
        while records < 20 and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records += len(batch)
        assert records == 20
        consumer.commit()
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        if hasattr(admin, "describe_consumer_groups"):  # newer kafka-python only
            (described,) = admin.describe_consumer_groups(["kpg"])
            assert described.state == "Stable"
        if hasattr(admin, "list_consumer_groups"):
            assert "kpg" in [g for g, _ in admin.list_consumer_groups()]
        if hasattr(admin, "list_consumer_group_offsets"):
            offsets = admin.list_consumer_group_offsets("kpg")
            assert sum(o.offset for o in offsets.values()) == 20
    finally:
        consumer.close()
    if hasattr(admin, "delete_consumer_groups"):
        admin.delete_consumer_groups(["kpg"])
    admin.close()


def test_aiokafka_group(cluster_factory: Callable[..., Cluster]) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer

    cluster = _start(cluster_factory)
    bootstrap = _bootstrap(cluster)
    _topic(bootstrap, "aio", 2)

    async def run() -> int:
        consumer = AIOKafkaConsumer(
            "aio", bootstrap_servers=bootstrap, group_id="aiog", auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            count = 0
            while count < 20:
                got = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 60)
                count += sum(len(v) for v in got.values())
            await consumer.commit()
            return count
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == 20


def test_offsets_survive_restart_with_log_dir(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = _start(cluster_factory, log_dir=str(tmp_path))
    bootstrap = _bootstrap(cluster)
    _topic(bootstrap, "keep", 1)
    c = _consumer(bootstrap, "keeper")
    c.subscribe(["keep"])
    try:
        _poll_until([c], lambda: len(c.assignment()) == 1)
        c.commit(offsets=[CTP("keep", 0, 7)], asynchronous=False)
    finally:
        c.close()
    cluster.stop()
    again = _start(cluster_factory, log_dir=str(tmp_path))
    admin = AdminClient({"bootstrap.servers": _bootstrap(again)})

    def committed() -> int | None:
        try:
            got = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions("keeper", [CTP("keep", 0)])]
            )["keeper"].result(10)
        except (KafkaException, TimeoutError):  # the coordinator is still loading
            return None
        return int(got.topic_partitions[0].offset)

    wait_until(lambda: committed() == 7, timeout=60, interval=0.5)


def test_offset_fetch_returns_committed_metadata_and_leader_epoch(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = _start(cluster_factory)
    bootstrap = _bootstrap(cluster)
    _topic(bootstrap, "meta", 2)
    c = _consumer(bootstrap, "metag")
    c.subscribe(["meta"])
    try:
        _poll_until([c], lambda: len(c.assignment()) == 2)
        c.commit(
            offsets=[
                CTP("meta", 0, 5, metadata="m0", leader_epoch=0),
                CTP("meta", 1, 6, metadata="m1"),
            ],
            asynchronous=False,
        )
        got = {tp.partition: tp for tp in c.committed([CTP("meta", 0), CTP("meta", 1)], 10)}
        assert (got[0].offset, got[0].metadata, got[0].leader_epoch) == (5, "m0", 0)
        assert (got[1].offset, got[1].metadata, got[1].leader_epoch) == (6, "m1", None)
    finally:
        c.close()
    # On the wire: an OffsetCommit v8 by an admin (generation -1) to the now Empty group, then
    # OffsetFetch in the versions before, with and after the leader epoch (v5) and groups (v8).
    home = cluster.engine.brokers[_coordinator_of(cluster, "metag", 0)]
    with WireClient(home.host, home.port) as client:
        committed = client.request(
            8,
            OffsetCommitRequest(
                group_id="metag",
                topics=[
                    OffsetCommitRequestTopic(
                        name="meta",
                        partitions=[
                            OffsetCommitRequestPartition(
                                partition_index=0,
                                committed_offset=9,
                                committed_leader_epoch=4,
                                committed_metadata="wire",
                            )
                        ],
                    )
                ],
            ),
        )
        assert committed.topics[0].partitions[0].error_code == 0
        wanted = [OffsetFetchRequestTopic(name="meta", partition_indexes=[0, 1])]
        rows = {}
        for version in (1, 4, 5, 7):
            answer = client.request(version, OffsetFetchRequest(group_id="metag", topics=wanted))
            # confluent-kafka sends a C string's terminating NUL with the metadata (Kafka
            # stores what it is sent); its committed() strips it, the wire does not.
            rows[version] = [
                (p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata)
                for p in answer.topics[0].partitions
            ]
            rows[version][1] = (*rows[version][1][:3], rows[version][1][3].rstrip("\0"))
        # Below v5 the field does not exist: the decoder leaves its default, -1.
        assert rows[1] == rows[4] == [(0, 9, -1, "wire"), (1, 6, -1, "m1")]
        assert rows[5] == rows[7] == [(0, 9, 4, "wire"), (1, 6, -1, "m1")]
        answer = client.request(
            8,
            OffsetFetchRequest(
                groups=[
                    OffsetFetchRequestGroup(
                        group_id="metag",
                        topics=[OffsetFetchRequestTopics(name="meta", partition_indexes=[0, 2])],
                    )
                ]
            ),
        )
        parts = answer.groups[0].topics[0].partitions
        assert [(p.committed_offset, p.committed_leader_epoch, p.metadata) for p in parts] == [
            (9, 4, "wire"),
            (-1, -1, ""),
        ]


def test_coordinator_moves_when_its_broker_stops(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = _start(cluster_factory)  # brokers 0, 1, 2; __consumer_offsets has 3 replicas
    bootstrap = _bootstrap(cluster)
    _topic(bootstrap, "mv", 3, replicas=3)
    c = _consumer(bootstrap, "mover")
    c.subscribe(["mv"])
    received: list[bytes] = []

    def consumed(count: int) -> Callable[[], bool]:
        def check() -> bool:
            msg = c.poll(0.1)
            if msg is not None and msg.error() is None:
                received.append(msg.value() or b"")
            return len(received) >= count

        return check

    try:
        _poll_until([], consumed(20))
        c.commit(asynchronous=False)
        before = {tp.partition: tp.offset for tp in c.committed([CTP("mv", p) for p in range(3)])}
        assert sum(before.values()) == 20
        old = _coordinator_of(cluster, "mover", 0)
        assert old >= 0
        survivor = next(b for b in cluster.engine.brokers if b != old)
        cluster.stop_broker(old)

        # The partition's new leader becomes the coordinator and loads the group from the log.
        deadline = time.monotonic() + 60
        while _coordinator_of(cluster, "mover", survivor) in (old, -1):
            assert time.monotonic() < deadline, "the coordinator did not move"
            c.poll(0.2)
        new = _coordinator_of(cluster, "mover", survivor)
        assert new != old
        alive = ",".join(
            f"{b.host}:{b.port}" for i, b in cluster.engine.brokers.items() if i != old
        )
        admin = AdminClient({"bootstrap.servers": alive})

        def fetched() -> dict[int, int] | None:
            c.poll(0.2)  # the consumer goes on meanwhile
            try:
                listed = admin.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions("mover", [CTP("mv", p) for p in range(3)])]
                )["mover"].result(10)
            except (KafkaException, TimeoutError):  # the new coordinator is still loading
                return None
            return {tp.partition: tp.offset for tp in listed.topic_partitions}

        wait_until(lambda: fetched() == before, timeout=60, interval=0)

        # The consumer carries on: new records arrive, and it commits to the new coordinator.
        _produce(alive, "mv", 3, 9)
        _poll_until([], consumed(29))
        c.commit(asynchronous=False)
        after = c.committed([CTP("mv", p) for p in range(3)], timeout=10)
        assert sum(tp.offset for tp in after) == 29
        assert len(c.assignment()) == 3
        described = admin.describe_consumer_groups(["mover"])["mover"].result(30)
        assert str(described.state).endswith("STABLE") and len(described.members) == 1
        assert described.coordinator.id == new
    finally:
        c.close()


# --- __consumer_offsets: created by the first FindCoordinator ----------------------------------


def test_one_broker_cluster_serves_a_group_from_a_fresh_start(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    """`Cluster(brokers=1)` writes offsets.topic.replication.factor=1 (as Kafka's shipped
    server.properties does), so the consumer's first FindCoordinator creates a one-replica
    ``__consumer_offsets`` and the group works; `committed_offsets` reads what it committed."""
    cluster = _start(cluster_factory, brokers=1)
    bootstrap = _bootstrap(cluster)
    _topic(bootstrap, "solo", 2)
    assert kazoo.exists("/brokers/topics/__consumer_offsets") is None
    assert cluster.committed_offsets("solog") == {}
    c = _consumer(bootstrap, "solog")
    c.subscribe(["solo"])
    try:
        _poll_until([c], lambda: len(c.assignment()) == 2)
        c.commit(offsets=[CTP("solo", 0, 4), CTP("solo", 1, 6)], asynchronous=False)
    finally:
        c.close()
    layout = json.loads(kazoo.get("/brokers/topics/__consumer_offsets")[0])
    assert {tuple(r) for r in layout["partitions"].values()} == {(0,)}
    # The factor shows as a server.properties line would.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    broker = ConfigResource(ConfigResource.Type.BROKER, "0")
    entry = admin.describe_configs([broker])[broker].result(30)["offsets.topic.replication.factor"]
    assert (entry.value, entry.source) == ("1", ConfigSource.STATIC_BROKER_CONFIG.value)
    assert cluster.committed_offsets("solog") == {("solo", 0): 4, ("solo", 1): 6}
    assert cluster.committed_offsets("never-committed") == {}
    # A second process of the same cluster leads no offsets partition: it cannot answer.
    other = _start(cluster_factory, broker_ids=(7,))
    with pytest.raises(OffsetsUnavailable) as elsewhere:
        other.committed_offsets("solog")
    assert elsewhere.value.code == NOT_COORDINATOR


@pytest.mark.parametrize("release", [(3, 9), (2, 4)])
def test_too_few_brokers_for_the_offsets_replication_factor(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient, release: tuple[int, int]
) -> None:
    """offsets.topic.replication.factor=3 on two brokers: every lookup answers
    COORDINATOR_NOT_AVAILABLE and the topic is never created (2.8+: the creation fails with
    INVALID_REPLICATION_FACTOR; 0.11-2.7: the broker refuses before creating), as in Kafka."""
    cluster = cluster_factory(
        brokers=2,
        kafka_version=release,
        broker_configs=(("offsets.topic.replication.factor", "3"),),
    )
    node = cluster.engine.brokers[0]
    with WireClient(node.host, node.port) as client:
        for _ in range(2):
            found = client.request(1, FindCoordinatorRequest(key="g", key_type=0))
            assert (found.error_code, found.node_id, found.port) == (
                COORDINATOR_NOT_AVAILABLE,
                -1,
                -1,
            )
    assert kazoo.exists("/brokers/topics/__consumer_offsets") is None


def test_before_kip_115_the_offsets_topic_takes_the_live_brokers(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    """0.10.x cuts offsets.topic.replication.factor down to the live brokers."""
    cluster = cluster_factory(
        brokers=2,
        kafka_version=(0, 10, 2),
        broker_configs=(("offsets.topic.replication.factor", "3"),),
    )
    node = cluster.engine.brokers[0]
    with WireClient(node.host, node.port) as client:
        found = client.request(0, FindCoordinatorRequest(key="g"))
    assert found.error_code == COORDINATOR_NOT_AVAILABLE
    layout = json.loads(kazoo.get("/brokers/topics/__consumer_offsets")[0])
    assert {len(r) for r in layout["partitions"].values()} == {2}
