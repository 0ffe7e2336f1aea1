"""Consumer groups of the ZooKeeper (0.8) consumer registry through the group APIs.

Groups are written by plain kazoo in the old consumer's layout and must show up in real admin
clients (kafka-python, confluent-kafka) with members, assignments and offsets; offsets altered
and groups deleted through those clients are read back from ZooKeeper; every error code is
checked with wire requests.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TypeVar

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import CoordinatorNotAvailableError
from kafka.structs import OffsetAndMetadata
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until, wait_visible, write_topic_like_kafka
from zkbroker import Cluster
from zkbroker.broker.groups.zk_registry import coordinator_id
from zkbroker.broker.protocol import decode_response, error_codes
from zkbroker.broker.protocol.consumer_protocol import decode_assignment, decode_subscription
from zkbroker.broker.protocol.messages.delete_groups import DeleteGroupsRequest
from zkbroker.broker.protocol.messages.describe_groups import DescribeGroupsRequest
from zkbroker.broker.protocol.messages.find_coordinator import FindCoordinatorRequest
from zkbroker.broker.protocol.messages.list_groups import ListGroupsRequest
from zkbroker.broker.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from zkbroker.broker.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
)
from zkbroker.broker.rules.jvm_collections import java_abs_hash
from zkbroker.broker.toolkit.wire import WireClient

T = TypeVar("T")
GROUP_ID = "g1"
CONSUMER = "c1"


def _seed_group(
    kazoo: KazooClient,
    group: str = GROUP_ID,
    *,
    members: dict[str, dict] | None = None,
    owners: dict[tuple[str, int], str] | None = None,
    offsets: dict[tuple[str, int], int] | None = None,
) -> None:
    """Write a group as the old ZookeeperConsumerConnector left it."""
    base = f"/consumers/{group}"
    kazoo.ensure_path(f"{base}/ids")
    for consumer, registration in (members or {}).items():
        kazoo.create(f"{base}/ids/{consumer}", json.dumps(registration).encode())
    for (topic, partition), owner in (owners or {}).items():
        kazoo.create(f"{base}/owners/{topic}/{partition}", owner.encode(), makepath=True)
    for (topic, partition), offset in (offsets or {}).items():
        kazoo.create(f"{base}/offsets/{topic}/{partition}", str(offset).encode(), makepath=True)


def _static(subscription: dict[str, int]) -> dict:
    return {
        "version": 1,
        "pattern": "static",
        "subscription": subscription,
        "timestamp": "1700000000000",
    }


@pytest.fixture
def seeded(cluster_factory: Callable[..., Cluster], kazoo: KazooClient) -> Cluster:
    """A 3-broker 3.9 cluster with topic1 (2 partitions) and topic2 (1); g1: member c1 owning
    topic1-0/1, offsets on both; g-empty: an offset only."""
    cluster = cluster_factory(kafka_version=(3, 9))
    write_topic_like_kafka(kazoo, "topic1", {0: [0, 1, 2], 1: [1, 2, 0]})
    write_topic_like_kafka(kazoo, "topic2", {0: [2, 0, 1]})
    wait_visible(cluster, "topic1")
    wait_visible(cluster, "topic2")
    _seed_group(
        kazoo,
        members={CONSUMER: _static({"topic1": 1})},
        owners={("topic1", 0): f"{CONSUMER}-0", ("topic1", 1): f"{CONSUMER}-0"},
        offsets={("topic1", 0): 42, ("topic1", 1): 7},
    )
    # An Empty group: offsets only.
    _seed_group(kazoo, "g-empty", offsets={("topic2", 0): 5})
    return cluster


def _client(cluster: Cluster, broker_id: int) -> WireClient:
    node = cluster.engine.brokers[broker_id]
    return WireClient(node.host, node.port)


def _coordinator(cluster: Cluster, group: str) -> int:
    """The group's coordinator: its ``__consumer_offsets`` partition's leader once that topic
    exists, before that the registry's hash over the live brokers."""
    topic = cluster.engine.image.topics.get("__consumer_offsets")
    if topic is not None and topic.assignment:
        return int(topic.partitions[java_abs_hash(group) % len(topic.assignment)].leader)
    chosen = coordinator_id(group, cluster.engine.image.brokers)
    assert chosen is not None
    return chosen


def _offsets_topic_led(cluster: Cluster) -> bool:
    topic = cluster.engine.image.topics.get("__consumer_offsets")
    return (
        topic is not None
        and len(topic.partitions) == 50
        and all(state.leader in cluster.engine.image.brokers for state in topic.partitions.values())
    )


def _retry_until_coordinator(call: Callable[[], T]) -> T:
    """Run a kafka-python admin call as against a fresh Kafka: its first coordinator lookup
    creates ``__consumer_offsets`` and fails with CoordinatorNotAvailableError."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return call()
        except CoordinatorNotAvailableError:
            assert time.monotonic() < deadline, "no coordinator within 30 s"
            time.sleep(0.2)


# --- real clients ----------------------------------------------------------------------------


def test_kafka_python_lists_describes_alters_and_deletes(
    seeded: Cluster, kazoo: KazooClient
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=seeded.bootstrap_servers)
    try:
        listed = {
            g["group_id"]: (g["protocol_type"], g["group_state"]) for g in admin.list_groups()
        }
        assert listed == {"g1": ("consumer", "Stable"), "g-empty": ("consumer", "Empty")}

        with pytest.raises(CoordinatorNotAvailableError):
            admin.describe_groups([GROUP_ID, "g-empty", "nope"])
        described = _retry_until_coordinator(
            lambda: admin.describe_groups([GROUP_ID, "g-empty", "nope"])
        )
        g1 = described[GROUP_ID]
        assert (g1["group_state"], g1["protocol_type"], g1["protocol_data"]) == (
            "Stable",
            "consumer",
            "range",
        )
        (member,) = g1["members"]
        assert member["member_id"] == CONSUMER
        assert member["client_id"] == GROUP_ID
        assert member["member_metadata"]["topics"] == ["topic1"]
        assert member["member_assignment"]["assigned_partitions"] == [
            {"topic": "topic1", "partitions": [0, 1]}
        ]
        assert described["g-empty"]["group_state"] == "Empty"
        assert described["g-empty"]["members"] == []
        assert described["nope"]["group_state"] == "Dead"
        assert described["nope"]["error"] is None

        offsets = admin.list_group_offsets({GROUP_ID: None})[GROUP_ID]
        assert {(tp.topic, tp.partition): o.offset for tp, o in offsets.items()} == {
            ("topic1", 0): 42,
            ("topic1", 1): 7,
        }

        # An Empty group takes admin commits; they land in ZooKeeper as decimal text.
        admin.alter_group_offsets(
            "g-empty", {KafkaTopicPartition("topic2", 0): OffsetAndMetadata(99, "", -1)}
        )
        assert kazoo.get("/consumers/g-empty/offsets/topic2/0")[0] == b"99"

        admin.delete_groups(["g-empty"])
        assert kazoo.exists("/consumers/g-empty") is None
        assert [g["group_id"] for g in admin.list_groups()] == [GROUP_ID]
    finally:
        admin.close()


def test_confluent_kafka_lists_describes_alters_and_deletes(
    seeded: Cluster, kazoo: KazooClient
) -> None:
    admin = AdminClient({"bootstrap.servers": seeded.bootstrap_servers})
    listed = admin.list_consumer_groups(request_timeout=15).result()
    assert not listed.errors
    assert {g.group_id: str(g.state) for g in listed.valid} == {
        "g1": "ConsumerGroupState.STABLE",
        "g-empty": "ConsumerGroupState.EMPTY",
    }

    described = {
        g: f.result()
        for g, f in admin.describe_consumer_groups([GROUP_ID], request_timeout=15).items()
    }
    g1 = described[GROUP_ID]
    assert str(g1.state) == "ConsumerGroupState.STABLE"
    assert g1.partition_assignor == "range"
    assert g1.coordinator.id == _coordinator(seeded, GROUP_ID)
    (member,) = g1.members
    assert (member.member_id, member.client_id) == (CONSUMER, GROUP_ID)
    assert sorted((tp.topic, tp.partition) for tp in member.assignment.topic_partitions) == [
        ("topic1", 0),
        ("topic1", 1),
    ]

    fetched = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(GROUP_ID)], request_timeout=15
    )[GROUP_ID].result()
    assert sorted((tp.topic, tp.partition, tp.offset) for tp in fetched.topic_partitions) == [
        ("topic1", 0, 42),
        ("topic1", 1, 7),
    ]

    altered = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("g-empty", [ConfluentTopicPartition("topic2", 0, 1234)])],
        request_timeout=15,
    )["g-empty"].result()
    assert [(tp.topic, tp.partition, tp.error) for tp in altered.topic_partitions] == [
        ("topic2", 0, None)
    ]
    assert kazoo.get("/consumers/g-empty/offsets/topic2/0")[0] == b"1234"

    admin.delete_consumer_groups(["g-empty"], request_timeout=15)["g-empty"].result()
    assert kazoo.exists("/consumers/g-empty") is None
    # A group with a registered member stays.
    with pytest.raises(KafkaException) as refused:
        admin.delete_consumer_groups([GROUP_ID], request_timeout=15)[GROUP_ID].result()
    assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
    assert kazoo.exists(f"/consumers/{GROUP_ID}/ids/{CONSUMER}") is not None


# --- wire: every answer and error code ------------------------------------------------------


def test_find_coordinator_creates_the_offsets_topic_then_answers_its_leader(
    seeded: Cluster, kazoo: KazooClient
) -> None:
    """As Kafka's getCoordinator: the first GROUP lookup creates ``__consumer_offsets``
    (50 partitions, offsets.topic.replication.factor 3, compacted) and answers
    COORDINATOR_NOT_AVAILABLE; once its partitions have leaders the lookup answers the leader
    of the group's partition, registry groups included."""
    assert kazoo.exists("/brokers/topics/__consumer_offsets") is None
    registry_offsets = {("topic1", 0): 42, ("topic1", 1): 7}
    assert seeded.committed_offsets(GROUP_ID) == registry_offsets
    with _client(seeded, 0) as client:
        first = client.request(3, FindCoordinatorRequest(key=GROUP_ID, key_type=0))
        assert (first.error_code, first.error_message, first.node_id, first.host, first.port) == (
            error_codes.COORDINATOR_NOT_AVAILABLE,
            "The coordinator is not available.",
            -1,
            "",
            -1,
        )
        layout = json.loads(kazoo.get("/brokers/topics/__consumer_offsets")[0])
        assert len(layout["partitions"]) == 50
        assert {len(replicas) for replicas in layout["partitions"].values()} == {3}
        configs = json.loads(kazoo.get("/config/topics/__consumer_offsets")[0])["config"]
        assert configs == {
            "cleanup.policy": "compact",
            "compression.type": "producer",
            "segment.bytes": "104857600",
        }
        wait_until(lambda: _offsets_topic_led(seeded))
        chosen = _coordinator(seeded, GROUP_ID)
        old = client.request(3, FindCoordinatorRequest(key=GROUP_ID, key_type=0))
        assert (old.error_code, old.error_message, old.node_id, old.port) == (
            0,
            "NONE",
            chosen,
            seeded.engine.brokers[chosen].port,
        )
        v0 = client.request(0, FindCoordinatorRequest(key=GROUP_ID))
        assert (v0.error_code, v0.node_id) == (0, chosen)
        batched = client.request(
            4, FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP_ID, "other"])
        )
        assert [(c.key, c.error_code, c.node_id) for c in batched.coordinators] == [
            (GROUP_ID, 0, chosen),
            ("other", 0, _coordinator(seeded, "other")),
        ]
    # The registry group is now described by its partition's leader.
    with _client(seeded, chosen) as client:
        described = client.request(5, DescribeGroupsRequest(groups=[GROUP_ID]))
    assert (described.groups[0].error_code, described.groups[0].group_state) == (0, "Stable")
    assert seeded.committed_offsets(GROUP_ID) == registry_offsets


def test_find_coordinator_batched_lookup_creates_the_topic_once(
    seeded: Cluster, kazoo: KazooClient
) -> None:
    with _client(seeded, 1) as client:
        # No key looked up, nothing created.
        empty = client.request(4, FindCoordinatorRequest(key_type=0, coordinator_keys=[]))
        assert empty.coordinators == []
        assert kazoo.exists("/brokers/topics/__consumer_offsets") is None
        batched = client.request(
            4, FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP_ID, "other"])
        )
        assert [(c.key, c.error_code, c.node_id, c.port) for c in batched.coordinators] == [
            (GROUP_ID, error_codes.COORDINATOR_NOT_AVAILABLE, -1, -1),
            ("other", error_codes.COORDINATOR_NOT_AVAILABLE, -1, -1),
        ]
    wait_until(lambda: _offsets_topic_led(seeded))


def test_find_coordinator_transaction_share_and_unknown_key_types(seeded: Cluster) -> None:
    with _client(seeded, 0) as client:
        # Both asked before the transaction state topic they start creating can have a
        # leader: sent together, answered in order.
        single = FindCoordinatorRequest(key="tx", key_type=1)
        batched = FindCoordinatorRequest(key_type=1, coordinator_keys=["a", "b"])
        (_, first), (_, second) = client.frame(10, 3, single), client.frame(10, 4, batched)
        client.send_raw(first + second)
        txn = decode_response(10, 3, client.recv_frame())[1]
        txns = decode_response(10, 4, client.recv_frame())[1]
        assert (txn.error_code, txn.node_id, txn.host, txn.port) == (
            error_codes.COORDINATOR_NOT_AVAILABLE,
            -1,
            "",
            -1,
        )
        assert txn.error_message == "The coordinator is not available."
        bad = client.request(3, FindCoordinatorRequest(key="x", key_type=9))
        assert (bad.error_code, bad.node_id) == (error_codes.INVALID_REQUEST, -1)

        assert [c.error_code for c in txns.coordinators] == [15, 15]
        share = client.request(4, FindCoordinatorRequest(key_type=2, coordinator_keys=["s"]))
        assert share.coordinators[0].error_code == error_codes.INVALID_REQUEST
        unknown = client.request(6, FindCoordinatorRequest(key_type=7, coordinator_keys=["a"]))
        assert [(c.error_code, c.node_id) for c in unknown.coordinators] == [
            (error_codes.INVALID_REQUEST, -1)
        ]


def test_coordinator_moves_when_it_stops(seeded: Cluster) -> None:
    # Stop the group's coordinator (the leader of its offsets partition): the partition's new
    # leader coordinates it.
    with _client(seeded, 0) as client:
        client.request(3, FindCoordinatorRequest(key=GROUP_ID))
    wait_until(lambda: _offsets_topic_led(seeded))
    chosen = _coordinator(seeded, GROUP_ID)
    other = next(b for b in (0, 1, 2) if b != chosen)
    seeded.stop_broker(chosen)
    assert wait_until(lambda: chosen not in seeded.engine.image.brokers)
    wait_until(lambda: _offsets_topic_led(seeded))
    with _client(seeded, other) as client:
        found = client.request(3, FindCoordinatorRequest(key=GROUP_ID))
        assert found.error_code == 0
        assert found.node_id == _coordinator(seeded, GROUP_ID)
        assert found.node_id != chosen


def test_list_groups_filters_and_describe_errors(seeded: Cluster, kazoo: KazooClient) -> None:
    chosen = _coordinator(seeded, GROUP_ID)
    elsewhere = next(b for b in (0, 1, 2) if b != chosen)
    _seed_group(
        kazoo,
        "g-pattern",
        members={
            "g-pattern_host.example-1700000000000-0123abcd": {
                "version": 1,
                "pattern": "white_list",
                "subscription": {"topic.*": 1},
                "timestamp": "1",
            }
        },
    )
    pattern_home = _coordinator(seeded, "g-pattern")
    with _client(seeded, chosen) as client:
        stable = client.request(4, ListGroupsRequest(states_filter=["stable"]))
        assert GROUP_ID in [g.group_id for g in stable.groups]
        assert all(g.group_state == "Stable" for g in stable.groups)
        none = client.request(5, ListGroupsRequest(types_filter=["consumer"]))
        assert none.groups == []
        classic = client.request(5, ListGroupsRequest(types_filter=["Classic"]))
        assert {g.group_type for g in classic.groups} == {"classic"}

        described = client.request(5, DescribeGroupsRequest(groups=[GROUP_ID]))
        (member,) = described.groups[0].members
        assert decode_subscription(member.member_metadata) == (0, ["topic1"], None)
        assert decode_assignment(member.member_assignment) == (0, {"topic1": [0, 1]}, None)
    with _client(seeded, pattern_home) as client:
        (group,) = client.request(5, DescribeGroupsRequest(groups=["g-pattern"])).groups
        (member,) = group.members
        assert member.client_host == "/host.example"
        assert decode_subscription(member.member_metadata)[1] == ["topic1", "topic2"]
        assert decode_assignment(member.member_assignment)[1] == {}
    with _client(seeded, elsewhere) as client:
        assert GROUP_ID not in [g.group_id for g in client.request(4, ListGroupsRequest()).groups]
        (group,) = client.request(5, DescribeGroupsRequest(groups=[GROUP_ID])).groups
        assert (group.error_code, group.group_state, group.members) == (
            error_codes.NOT_COORDINATOR,
            "",
            [],
        )


def test_offset_fetch_versions_and_not_coordinator(seeded: Cluster) -> None:
    chosen = _coordinator(seeded, GROUP_ID)
    elsewhere = next(b for b in (0, 1, 2) if b != chosen)
    wanted = [OffsetFetchRequestTopic(name="topic1", partition_indexes=[0, 5])]
    with _client(seeded, chosen) as client:
        v1 = client.request(1, OffsetFetchRequest(group_id=GROUP_ID, topics=wanted))
        assert [
            (p.partition_index, p.committed_offset, p.error_code) for p in v1.topics[0].partitions
        ] == [
            (0, 42, 0),
            (5, -1, 0),
        ]
        everything = client.request(7, OffsetFetchRequest(group_id=GROUP_ID, topics=None))
        assert [
            (t.name, [p.committed_offset for p in t.partitions]) for t in everything.topics
        ] == [("topic1", [42, 7])]
        batched = client.request(
            8,
            OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=GROUP_ID, topics=None)]),
        )
        assert [p.committed_offset for p in batched.groups[0].topics[0].partitions] == [42, 7]
    with _client(seeded, elsewhere) as client:
        # v0 reads ZooKeeper on any broker; a partition without an offset node is unknown.
        v0 = client.request(0, OffsetFetchRequest(group_id=GROUP_ID, topics=wanted))
        assert [(p.committed_offset, p.error_code) for p in v0.topics[0].partitions] == [
            (42, 0),
            (-1, error_codes.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        v1 = client.request(1, OffsetFetchRequest(group_id=GROUP_ID, topics=wanted))
        assert [p.error_code for p in v1.topics[0].partitions] == [16, 16]
        v5 = client.request(5, OffsetFetchRequest(group_id=GROUP_ID, topics=wanted))
        assert (v5.error_code, v5.topics) == (error_codes.NOT_COORDINATOR, [])
        v9 = client.request(
            9,
            OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=GROUP_ID, topics=None)]),
        )
        assert v9.groups[0].error_code == error_codes.NOT_COORDINATOR


def _commit(
    client: WireClient,
    version: int,
    group: str,
    offsets: dict[tuple[str, int], int],
    *,
    generation: int = -1,
    member: str = "",
    metadata: str = "",
) -> dict[tuple[str, int], int]:
    topics: dict[str, list[OffsetCommitRequestPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata=metadata
            )
        )
    response = client.request(
        version,
        OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member,
            topics=[OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in topics.items()],
        ),
    )
    return {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


def test_offset_commit_errors_and_writes(seeded: Cluster, kazoo: KazooClient) -> None:
    chosen = _coordinator(seeded, GROUP_ID)
    elsewhere = next(b for b in (0, 1, 2) if b != chosen)
    generation = kazoo.exists(f"/consumers/{GROUP_ID}/ids").cversion
    with _client(seeded, chosen) as client:
        # Live members: an admin commit is refused, as Kafka refuses it for a non-empty group.
        assert _commit(client, 8, GROUP_ID, {("topic1", 0): 1}) == {
            ("topic1", 0): error_codes.UNKNOWN_MEMBER_ID
        }
        assert _commit(
            client, 8, GROUP_ID, {("topic1", 0): 1}, generation=generation + 1, member=CONSUMER
        ) == {("topic1", 0): error_codes.ILLEGAL_GENERATION}
        assert _commit(
            client,
            8,
            GROUP_ID,
            {("topic1", 0): 43, ("nope", 0): 1, ("topic1", 9): 1},
            generation=generation,
            member=CONSUMER,
        ) == {
            ("topic1", 0): 0,
            ("nope", 0): error_codes.UNKNOWN_TOPIC_OR_PARTITION,
            ("topic1", 9): error_codes.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert kazoo.get(f"/consumers/{GROUP_ID}/offsets/topic1/0")[0] == b"43"
        assert _commit(
            client,
            8,
            GROUP_ID,
            {("topic1", 1): 1},
            generation=generation,
            member=CONSUMER,
            metadata="x" * 4097,
        ) == {("topic1", 1): error_codes.OFFSET_METADATA_TOO_LARGE}

    new_home = _coordinator(seeded, "g-new")
    with _client(seeded, new_home) as client:
        # No such group: a generation >= 0 is from a generation that never was.
        assert _commit(client, 8, "g-new", {("topic2", 0): 3}, generation=4) == {
            ("topic2", 0): error_codes.ILLEGAL_GENERATION
        }
        assert kazoo.exists("/consumers/g-new") is None
        # A simple (admin) commit creates it.
        assert _commit(client, 2, "g-new", {("topic2", 0): 3}) == {("topic2", 0): 0}
        assert kazoo.get("/consumers/g-new/offsets/topic2/0")[0] == b"3"
        assert _commit(client, 8, "", {("topic2", 0): 3}) == {
            ("topic2", 0): error_codes.INVALID_GROUP_ID
        }
    with _client(seeded, elsewhere) as client:
        assert _commit(client, 8, GROUP_ID, {("topic1", 0): 1}) == {
            ("topic1", 0): error_codes.NOT_COORDINATOR
        }
        # v0 writes ZooKeeper directly on any broker, as Kafka's v0 did.
        assert _commit(client, 0, GROUP_ID, {("topic1", 1): 77}) == {("topic1", 1): 0}
        assert kazoo.get(f"/consumers/{GROUP_ID}/offsets/topic1/1")[0] == b"77"


def test_delete_groups_errors(seeded: Cluster, kazoo: KazooClient) -> None:
    chosen = _coordinator(seeded, GROUP_ID)
    elsewhere = next(b for b in (0, 1, 2) if b != chosen)
    missing = next(
        g for g in (f"gone-{i}" for i in range(100)) if _coordinator(seeded, g) == chosen
    )
    with _client(seeded, chosen) as client:
        response = client.request(
            2, DeleteGroupsRequest(groups_names=[GROUP_ID, missing, GROUP_ID])
        )
        assert [(r.group_id, r.error_code) for r in response.results] == [
            (GROUP_ID, error_codes.NON_EMPTY_GROUP),
            (missing, error_codes.GROUP_ID_NOT_FOUND),
        ]
    with _client(seeded, elsewhere) as client:
        response = client.request(0, DeleteGroupsRequest(groups_names=[GROUP_ID]))
        assert response.results[0].error_code == error_codes.NOT_COORDINATOR
    # Once the member's registration is gone the group is Empty and can be deleted.
    kazoo.delete(f"/consumers/{GROUP_ID}/ids/{CONSUMER}")
    with _client(seeded, chosen) as client:
        response = client.request(1, DeleteGroupsRequest(groups_names=[GROUP_ID]))
        assert response.results[0].error_code == 0
    assert kazoo.exists(f"/consumers/{GROUP_ID}") is None
