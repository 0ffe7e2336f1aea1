"""CreateTopics, DeleteTopics, CreatePartitions and Metadata auto-creation, end to end:
real clients and raw wire requests against a real cluster, ZooKeeper read back with kazoo."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewPartitions as CfNewPartitions
from confluent_kafka.admin import NewTopic as CfNewTopic
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic

from tests.integration.helpers import wait_until, wait_visible, write_topic_like_kafka
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.create_partitions import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from zkbroker.broker.protocol.messages.create_topics import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from zkbroker.broker.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from zkbroker.broker.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from zkbroker.broker.toolkit.wire import WireClient


def controller_client(cluster: Cluster) -> WireClient:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    node = cluster.engine.brokers[cluster.engine.controller_id]
    return WireClient(node.host, node.port)


def other_client(cluster: Cluster) -> WireClient:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    node = next(b for i, b in cluster.engine.brokers.items() if i != cluster.engine.controller_id)
    return WireClient(node.host, node.port)


def topic(name: str, partitions: int = 3, replication: int = 3, **kw) -> CreatableTopic:
    return CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=replication, **kw
    )


def create(client: WireClient, version: int, *topics: CreatableTopic, **kw):
    kw.setdefault("timeout_ms", 15000)
    return client.request(version, CreateTopicsRequest(topics=list(topics), **kw)).topics


# ---- CreateTopics -------------------------------------------------------------------------


def test_kafka_python_creates_topic_and_znodes_match_kafka(cluster: Cluster, kazoo) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("orders", 3, 2, topic_configs={"retention.ms": "1000"})])
        wait_visible(cluster, "orders")
        assert "orders" in admin.list_topics()
    finally:
        admin.close()
    topic_node = json.loads(kazoo.get("/brokers/topics/orders")[0])
    assert set(topic_node) == {
        "version",
        "partitions",
        "adding_replicas",
        "removing_replicas",
        "topic_id",
    }
    assert topic_node["version"] == 3 and len(topic_node["topic_id"]) == 22
    assert sorted(topic_node["partitions"]) == ["0", "1", "2"]
    assert all(len(r) == 2 and len(set(r)) == 2 for r in topic_node["partitions"].values())
    assert json.loads(kazoo.get("/config/topics/orders")[0]) == {
        "version": 1,
        "config": {"retention.ms": "1000"},
    }
    epoch = int(kazoo.get("/controller_epoch")[0])
    for p, replicas in topic_node["partitions"].items():
        state = json.loads(kazoo.get(f"/brokers/topics/orders/partitions/{p}/state")[0])
        assert state == {
            "controller_epoch": epoch,
            "leader": replicas[0],
            "version": 1,
            "leader_epoch": 0,
            "isr": replicas,
        }
    assert kazoo.get("/brokers/topics/orders/partitions")[0] in (b"", None)


def test_confluent_and_aiokafka_create_topics(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics([CfNewTopic("cf", num_partitions=2, replication_factor=3)])
    futures["cf"].result(30)
    validate = admin.create_topics(
        [CfNewTopic("cf-dry", num_partitions=1, replication_factor=1)], validate_only=True
    )
    validate["cf-dry"].result(30)
    assert "cf-dry" not in cluster.engine.image.topics

    async def aio() -> None:
        client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        await client.start()
        try:
            await client.create_topics([AioNewTopic("aio", 4, 1)])
        finally:
            await client.close()

    asyncio.run(aio())
    assert len(wait_visible(cluster, "aio").partitions) == 4
    assert len(wait_visible(cluster, "cf").partitions) == 2


def test_create_topics_v5_plus_reports_metadata_and_configs(cluster: Cluster, kazoo) -> None:
    with controller_client(cluster) as client:
        (result,) = create(
            client,
            7,
            topic("v7", 2, 3, configs=[CreatableTopicConfig("cleanup.policy", "compact")]),
        )
    assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 2, 3)
    configs = {c.name: (c.value, c.config_source) for c in result.configs}
    assert configs["cleanup.policy"] == ("compact", 1)  # TOPIC_CONFIG
    assert configs["retention.ms"] == ("604800000", 5)  # DEFAULT_CONFIG
    topic_id = json.loads(kazoo.get("/brokers/topics/v7")[0])["topic_id"]
    from zkbroker.zk_layout import uuid_to_text

    assert uuid_to_text(result.topic_id) == topic_id


@pytest.mark.kafka_version("2.8")
@pytest.mark.parametrize("version", [0, 1, 4, 5, 7])
def test_create_topics_errors_in_kafkas_order(cluster: Cluster, version: int) -> None:
    long_name = "x" * 250
    with controller_client(cluster) as client:
        create(client, version, topic("exists", 1, 1))
        create(client, version, topic("a.b", 1, 1))
        results = create(
            client,
            version,
            topic("dup", 1, 1),
            topic("dup", 1, 1),
            topic("exists", 1, 1),
            topic("", 1, 1),
            topic(".", 1, 1),
            topic(long_name, 1, 1),
            topic("bad name", 1, 1),
            topic("a_b", 1, 1),
            topic("zero-partitions", 0, 1),
            topic("zero-rf", 1, 0),
            topic("too-many-replicas", 1, 4),
            topic(
                "both",
                1,
                1,
                assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=[0])],
            ),
            topic(
                "uneven",
                -1,
                -1,
                assignments=[
                    CreatableReplicaAssignment(partition_index=0, broker_ids=[0, 1]),
                    CreatableReplicaAssignment(partition_index=1, broker_ids=[1]),
                ],
            ),
            topic(
                "dup-replica",
                -1,
                -1,
                assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 1])],
            ),
            topic(
                "gap",
                -1,
                -1,
                assignments=[
                    CreatableReplicaAssignment(partition_index=0, broker_ids=[0]),
                    CreatableReplicaAssignment(partition_index=2, broker_ids=[1]),
                ],
            ),
            topic("unknown-config", 1, 1, configs=[CreatableTopicConfig("foo", "1")]),
            topic("bad-config", 1, 1, configs=[CreatableTopicConfig("retention.ms", "abc")]),
            topic("null-config", 1, 1, configs=[CreatableTopicConfig("retention.ms", None)]),
        )
    got = [(r.name, r.error_code, r.error_message if version >= 1 else None) for r in results]
    expected = [
        ("dup", ec.INVALID_REQUEST, "Found multiple entries for this topic."),
        ("dup", ec.INVALID_REQUEST, "Found multiple entries for this topic."),
        ("exists", ec.TOPIC_ALREADY_EXISTS, "Topic 'exists' already exists."),
        ("", ec.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty"),
        (".", ec.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."'),
        (
            long_name,
            ec.INVALID_TOPIC_EXCEPTION,
            "Topic name is illegal, it can't be longer than 249 characters, "
            f"topic name: {long_name}",
        ),
        (
            "bad name",
            ec.INVALID_TOPIC_EXCEPTION,
            'Topic name "bad name" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'",
        ),
        ("a_b", ec.INVALID_TOPIC_EXCEPTION, "Topic 'a_b' collides with existing topics: a.b"),
        ("zero-partitions", ec.INVALID_PARTITIONS, "Number of partitions must be larger than 0."),
        ("zero-rf", ec.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."),
        (
            "too-many-replicas",
            ec.INVALID_REPLICATION_FACTOR,
            "Replication factor: 4 larger than available brokers: 3.",
        ),
        (
            "both",
            ec.INVALID_REQUEST,
            "Both numPartitions or replicationFactor and replicasAssignments were set. "
            "Both cannot be used at the same time.",
        ),
        (
            "uneven",
            ec.INVALID_REPLICA_ASSIGNMENT,
            "All partitions should have the same number of replicas",
        ),
        (
            "dup-replica",
            ec.INVALID_REPLICA_ASSIGNMENT,
            "Duplicate replica assignment found: HashMap(0 -> ArrayBuffer(1, 1))",
        ),
        (
            "gap",
            ec.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        ),
        ("unknown-config", ec.INVALID_CONFIG, "Unknown topic config name: foo"),
        (
            "bad-config",
            ec.INVALID_CONFIG,
            "Invalid value abc for configuration retention.ms: Not a number of type LONG",
        ),
        (
            "null-config",
            ec.INVALID_REQUEST,
            "Null value not supported for topic configs : retention.ms",
        ),
    ]
    if version == 0:
        expected = [(n, c, None) for n, c, _ in expected]
    assert got == expected
    assert {"dup", "zero-partitions", "a_b", "null-config"}.isdisjoint(cluster.engine.image.topics)


def test_create_topics_null_config_is_invalid_config_from_3_3(cluster_factory) -> None:
    cluster = cluster_factory(kafka_version=(3, 3))
    with controller_client(cluster) as client:
        (result,) = create(
            client, 7, topic("n", 1, 1, configs=[CreatableTopicConfig("retention.ms", None)])
        )
    assert (result.error_code, result.error_message) == (
        ec.INVALID_CONFIG,
        "Null value not supported for topic configs: retention.ms",
    )


def test_create_topics_defaults_validate_only_and_timeouts(cluster_factory, kazoo) -> None:
    cluster = cluster_factory(num_partitions=4, default_replication_factor=2)
    with controller_client(cluster) as client:
        (defaults,) = create(client, 5, topic("defaults", -1, -1))
        assert (defaults.error_code, defaults.num_partitions, defaults.replication_factor) == (
            0,
            4,
            2,
        )
        (dry,) = create(client, 5, topic("dry", 2, 2), validate_only=True)
        assert (dry.error_code, dry.num_partitions) == (0, 2)
        assert kazoo.exists("/brokers/topics/dry") is None
        (quick,) = create(client, 5, topic("quick", 1, 1), timeout_ms=0)
        assert (quick.error_code, quick.configs, quick.num_partitions) == (
            ec.REQUEST_TIMED_OUT,
            [],
            -1,
        )
    # Timed out, but created all the same (clients read 7 as "maybe created").
    wait_visible(cluster, "quick")


@pytest.mark.parametrize("version", [0, 3, 7])
def test_create_topics_on_a_non_controller(cluster: Cluster, version: int) -> None:
    with other_client(cluster) as client:
        results = create(client, version, topic("nc", 1, 1), validate_only=version > 0)
    assert [(r.name, r.error_code) for r in results] == [("nc", ec.NOT_CONTROLLER)]


def test_topic_written_by_plain_kazoo_gets_states_and_id(cluster: Cluster, kazoo) -> None:
    kazoo.create(
        "/brokers/topics/legacy",
        json.dumps({"version": 1, "partitions": {"0": [2, 0], "1": [0, 9]}}).encode(),
    )
    state0 = json.loads(
        wait_until(
            lambda: (
                kazoo.exists("/brokers/topics/legacy/partitions/0/state")
                and kazoo.get("/brokers/topics/legacy/partitions/0/state")[0]
            )
        )
    )
    assert (state0["leader"], state0["isr"], state0["leader_epoch"]) == (2, [2, 0], 0)
    state1 = json.loads(kazoo.get("/brokers/topics/legacy/partitions/1/state")[0])
    assert (state1["leader"], state1["isr"]) == (0, [0])  # broker 9 is not alive
    node = json.loads(
        wait_until(lambda: (d := kazoo.get("/brokers/topics/legacy")[0]) and b"topic_id" in d and d)
    )
    assert node["version"] == 3 and len(node["topic_id"]) == 22
    legacy = wait_visible(cluster, "legacy")
    assert legacy.topic_id is not None


@pytest.mark.parametrize(("release", "version"), [((2, 3), 1), ((2, 7), 2), ((2, 8), 3)])
def test_topic_znode_format_follows_release(cluster_factory, kazoo, release, version) -> None:
    cluster = cluster_factory(kafka_version=release)
    with controller_client(cluster) as client:
        (result,) = create(client, 3, topic("fmt", 1, 1))
    assert result.error_code == 0
    node = json.loads(kazoo.get("/brokers/topics/fmt")[0])
    assert node["version"] == version
    assert ("topic_id" in node) == (version == 3)
    assert ("adding_replicas" in node) == (version >= 2)


def test_rack_aware_assignment_spreads_replicas(cluster_factory) -> None:
    cluster = cluster_factory(broker_ids=(0, 1, 2, 3, 4), racks=("a", "a", "b", "b", "c"))
    with controller_client(cluster) as client:
        (result,) = create(client, 4, topic("racks", 10, 3))
    assert result.error_code == 0
    racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c"}
    spread = wait_visible(cluster, "racks")
    for replicas in spread.assignment.values():
        assert len({racks[r] for r in replicas}) == 3


# ---- DeleteTopics -------------------------------------------------------------------------


def test_delete_topics_completes_in_zookeeper(cluster: Cluster, kazoo) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("doomed", 2, 2)])
        wait_visible(cluster, "doomed")
        admin.delete_topics(["doomed"])
        wait_until(lambda: "doomed" not in admin.list_topics())
    finally:
        admin.close()
    for path in ("/brokers/topics/doomed", "/config/topics/doomed", "/admin/delete_topics/doomed"):
        assert kazoo.exists(path) is None, path


def test_delete_topics_errors(cluster: Cluster, kazoo) -> None:
    with controller_client(cluster) as client:
        create(client, 5, topic("keep", 1, 1), topic("byid", 1, 1))
        unknown = client.request(
            4, DeleteTopicsRequest(topic_names=["missing"], timeout_ms=5000)
        ).responses
        assert [(r.name, r.error_code) for r in unknown] == [
            ("missing", ec.UNKNOWN_TOPIC_OR_PARTITION)
        ]
        topic_id = wait_visible(cluster, "byid").topic_id
        by_id = client.request(
            6,
            DeleteTopicsRequest(
                topics=[
                    DeleteTopicState(name=None, topic_id=topic_id),
                    DeleteTopicState(name=None, topic_id=uuid.uuid4()),
                ],
                timeout_ms=15000,
            ),
        ).responses
        assert [(r.name, r.error_code) for r in by_id] == [
            ("byid", ec.NONE),
            (None, ec.UNKNOWN_TOPIC_ID),
        ]
        both = client.request(
            6,
            DeleteTopicsRequest(
                topics=[DeleteTopicState(name="keep", topic_id=uuid.uuid4())], timeout_ms=1000
            ),
        ).responses
        assert [r.error_code for r in both] == [ec.INVALID_REQUEST]
        quick = client.request(1, DeleteTopicsRequest(topic_names=["keep"], timeout_ms=0))
        assert [r.error_code for r in quick.responses] == [ec.REQUEST_TIMED_OUT]
    wait_until(lambda: "keep" not in cluster.engine.image.topics)
    with other_client(cluster) as client:
        response = client.request(
            0, DeleteTopicsRequest(topic_names=["any"], timeout_ms=1000)
        ).responses
        assert [r.error_code for r in response] == [ec.NOT_CONTROLLER]


@pytest.mark.parametrize(
    ("version", "code"), [(2, ec.INVALID_REQUEST), (3, ec.TOPIC_DELETION_DISABLED)]
)
def test_delete_topics_disabled(cluster_factory, kazoo, version: int, code: int) -> None:
    cluster = cluster_factory(delete_topic_enable=False)
    with controller_client(cluster) as client:
        create(client, 5, topic("stays", 1, 1))
        response = client.request(
            version, DeleteTopicsRequest(topic_names=["stays"], timeout_ms=1000)
        )
        assert [r.error_code for r in response.responses] == [code]
    assert kazoo.exists("/admin/delete_topics/stays") is None
    # A marker written by another tool is removed by the controller, the topic kept.
    kazoo.create("/admin/delete_topics/stays")
    wait_until(lambda: kazoo.exists("/admin/delete_topics/stays") is None)
    assert kazoo.exists("/brokers/topics/stays") is not None


def test_deletion_waits_for_a_dead_replica(cluster: Cluster, kazoo) -> None:
    write_topic_like_kafka(kazoo, "stuck", {0: [0, 9]})
    wait_visible(cluster, "stuck")
    with controller_client(cluster) as client:
        response = client.request(4, DeleteTopicsRequest(topic_names=["stuck"], timeout_ms=500))
        assert [r.error_code for r in response.responses] == [ec.REQUEST_TIMED_OUT]
        assert kazoo.exists("/admin/delete_topics/stuck") is not None
        # Growing a topic queued for deletion is refused.
        grown = client.request(
            1,
            CreatePartitionsRequest(
                topics=[CreatePartitionsTopic(name="stuck", count=2)], timeout_ms=1000
            ),
        ).results
        assert [(r.error_code, r.error_message) for r in grown] == [
            (ec.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion.")
        ]


# ---- CreatePartitions ---------------------------------------------------------------------


def test_create_partitions_with_real_clients(cluster: Cluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("grow", 2, 2)])
        wait_visible(cluster, "grow")
        admin.create_partitions({"grow": NewPartitions(4)})
    finally:
        admin.close()
    wait_until(lambda: _led_partitions(cluster, "grow") == 4)
    cf = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    cf.create_partitions([CfNewPartitions("grow", 6)])["grow"].result(30)
    wait_until(lambda: _led_partitions(cluster, "grow") == 6)


def _led_partitions(cluster: Cluster, name: str) -> int:
    topic = cluster.engine.image.topics.get(name)
    return len(topic.partitions) if topic is not None and topic.all_partitions_led else 0


def test_create_partitions_errors(cluster: Cluster, kazoo) -> None:
    with controller_client(cluster) as client:
        create(client, 5, topic("p", 3, 2))

        def grow(*topics: CreatePartitionsTopic, validate_only: bool = False):
            return [
                (r.name, r.error_code, r.error_message)
                for r in client.request(
                    2,
                    CreatePartitionsRequest(
                        topics=list(topics), timeout_ms=15000, validate_only=validate_only
                    ),
                ).results
            ]

        assert grow(CreatePartitionsTopic(name="p", count=3)) == [
            ("p", ec.INVALID_PARTITIONS, "Topic already has 3 partitions.")
        ]
        assert grow(CreatePartitionsTopic(name="p", count=2)) == [
            (
                "p",
                ec.INVALID_PARTITIONS,
                "Topic currently has 3 partitions, which is higher than the requested 2.",
            )
        ]
        assert grow(CreatePartitionsTopic(name="nope", count=2)) == [
            ("nope", ec.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist.")
        ]
        assert grow(
            CreatePartitionsTopic(name="p", count=4), CreatePartitionsTopic(name="p", count=5)
        ) == [("p", ec.INVALID_REQUEST, "Duplicate topic in request.")]
        assert grow(
            CreatePartitionsTopic(
                name="p", count=4, assignments=[CreatePartitionsAssignment(broker_ids=[7, 1])]
            )
        ) == [("p", ec.INVALID_REPLICA_ASSIGNMENT, "Unknown broker(s) in replica assignment: 7.")]
        assert grow(
            CreatePartitionsTopic(
                name="p", count=5, assignments=[CreatePartitionsAssignment(broker_ids=[0, 1])]
            )
        ) == [
            (
                "p",
                ec.INVALID_REPLICA_ASSIGNMENT,
                "Increasing the number of partitions by 2 but 1 assignments provided.",
            )
        ]
        assert grow(
            CreatePartitionsTopic(
                name="p", count=4, assignments=[CreatePartitionsAssignment(broker_ids=[0])]
            )
        ) == [
            (
                "p",
                ec.INVALID_REPLICA_ASSIGNMENT,
                "Inconsistent replication factor between partitions, partition 0 has 2 while "
                "partitions [3] have replication factors [1], respectively.",
            )
        ]
        assert grow(
            CreatePartitionsTopic(
                name="p", count=4, assignments=[CreatePartitionsAssignment(broker_ids=[2, 0])]
            ),
            validate_only=True,
        ) == [("p", ec.NONE, None)]
        assert len(json.loads(kazoo.get("/brokers/topics/p")[0])["partitions"]) == 3
        assert grow(
            CreatePartitionsTopic(
                name="p", count=4, assignments=[CreatePartitionsAssignment(broker_ids=[2, 0])]
            )
        ) == [("p", ec.NONE, None)]
    node = json.loads(kazoo.get("/brokers/topics/p")[0])
    assert node["partitions"]["3"] == [2, 0] and node["version"] == 3
    assert len(wait_visible(cluster, "p").partitions) == 4


def test_create_partitions_on_a_non_controller(cluster: Cluster) -> None:
    with other_client(cluster) as client:
        results = client.request(
            0,
            CreatePartitionsRequest(
                topics=[CreatePartitionsTopic(name="x", count=2)], timeout_ms=1
            ),
        ).results
    assert [(r.name, r.error_code) for r in results] == [("x", ec.NOT_CONTROLLER)]


# ---- Metadata auto-creation ---------------------------------------------------------------


def test_metadata_auto_creates_topics(cluster: Cluster, kazoo) -> None:
    with other_client(cluster) as client:  # any broker auto-creates in ZooKeeper mode
        first = client.request(1, MetadataRequest(topics=[MetadataRequestTopic(name="auto")]))
        assert [(t.name, t.error_code, t.partitions) for t in first.topics] == [
            ("auto", ec.LEADER_NOT_AVAILABLE, [])
        ]
        wait_visible(cluster, "auto")
        again = client.request(1, MetadataRequest(topics=[MetadataRequestTopic(name="auto")]))
        assert again.topics[0].error_code == 0 and len(again.topics[0].partitions) == 1
        refused = client.request(
            4,
            MetadataRequest(
                topics=[MetadataRequestTopic(name="no-auto")], allow_auto_topic_creation=False
            ),
        )
        assert refused.topics[0].error_code == ec.UNKNOWN_TOPIC_OR_PARTITION
        invalid = client.request(1, MetadataRequest(topics=[MetadataRequestTopic(name="b@d")]))
        assert invalid.topics[0].error_code == ec.INVALID_TOPIC_EXCEPTION
    assert kazoo.exists("/brokers/topics/no-auto") is None


def test_metadata_auto_creation_can_be_disabled(cluster_factory, kazoo) -> None:
    cluster = cluster_factory(auto_create_topics=False)
    with controller_client(cluster) as client:
        response = client.request(1, MetadataRequest(topics=[MetadataRequestTopic(name="x")]))
    assert response.topics[0].error_code == ec.UNKNOWN_TOPIC_OR_PARTITION
    assert kazoo.exists("/brokers/topics/x") is None


def test_confluent_list_topics_for_a_missing_topic_auto_creates(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.list_topics(topic="made-by-metadata", timeout=15)
    assert wait_visible(cluster, "made-by-metadata").name == "made-by-metadata"


def test_a_failing_controller_event_does_not_stop_the_controller(
    cluster: Cluster, kazoo
) -> None:
    # Regression: the failure log line itself once raised, ending the controller task.
    wait_until(lambda: cluster.engine.controller_id >= 0)
    node = cluster.engine.brokers[cluster.engine.controller_id]

    async def failing_event(controller: object) -> None:
        raise RuntimeError("injected controller event failure")

    cluster.run_sync(lambda: node.controller.submit("InjectedFailure", failing_event))
    kazoo.create(
        "/brokers/topics/after-failure",
        json.dumps({"version": 1, "partitions": {"0": [0]}}).encode(),
    )
    assert wait_visible(cluster, "after-failure").partitions[0].leader == 0


def test_auto_created_consumer_offsets_uses_kafkas_counts_and_configs(
    cluster: Cluster, kazoo
) -> None:
    with other_client(cluster) as client:
        response = client.request(
            1, MetadataRequest(topics=[MetadataRequestTopic(name="__consumer_offsets")])
        )
    assert response.topics[0].error_code == ec.LEADER_NOT_AVAILABLE
    assert response.topics[0].is_internal
    offsets = wait_visible(cluster, "__consumer_offsets")
    assert len(offsets.assignment) == 50
    assert all(len(replicas) == 3 for replicas in offsets.assignment.values())
    assert json.loads(kazoo.get("/config/topics/__consumer_offsets")[0])["config"] == {
        "cleanup.policy": "compact",
        "segment.bytes": "104857600",
        "compression.type": "producer",
    }


def test_auto_created_consumer_offsets_follows_the_offsets_topic_configs(
    cluster_factory, kazoo
) -> None:
    # Metadata's auto-creation asks for the same topic FindCoordinator does (Kafka's
    # AutoTopicCreationManager reads offsets.topic.*): on one broker the replication factor
    # zkbroker configures is 1, so the topic is created rather than refused.
    cluster = cluster_factory(
        broker_ids=(0,), broker_configs=(("offsets.topic.num.partitions", "5"),)
    )
    with controller_client(cluster) as client:
        response = client.request(
            1, MetadataRequest(topics=[MetadataRequestTopic(name="__consumer_offsets")])
        )
    assert response.topics[0].error_code == ec.LEADER_NOT_AVAILABLE
    offsets = wait_visible(cluster, "__consumer_offsets")
    assert offsets.assignment == {p: (0,) for p in range(5)}


def test_partition_added_to_a_topic_being_deleted_is_undone(cluster: Cluster, kazoo) -> None:
    write_topic_like_kafka(kazoo, "leaving", {0: [0, 9]})  # broker 9 is dead: deletion waits
    wait_visible(cluster, "leaving")
    kazoo.create("/admin/delete_topics/leaving")
    node_id = cluster.engine.controller_id
    controller = cluster.run_sync(lambda: cluster.engine.brokers[node_id].controller)
    wait_until(lambda: cluster.run_sync(lambda: "leaving" in controller.state.topics_to_delete))
    node = json.loads(kazoo.get("/brokers/topics/leaving")[0])
    node["partitions"]["1"] = [0]
    kazoo.set("/brokers/topics/leaving", json.dumps(node).encode())
    restored = wait_until(
        lambda: (
            (n := json.loads(kazoo.get("/brokers/topics/leaving")[0]))
            and list(n["partitions"]) == ["0"]
            and n
        )
    )
    assert restored["partitions"] == {"0": [0, 9]}
    assert kazoo.exists("/brokers/topics/leaving/partitions/1") is None
