"""The controller loop end to end: reassignments, leader elections, broker failure and return,
controller failover. Real ZooKeeper, real clients (kafka-python, confluent-kafka) and raw
wire requests; every state is read back from ZooKeeper with kazoo, and every test checks
Kafka's invariant on what it saw: a partition's leader is in its ISR, or it has none (-1)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import ElectionType as CfElectionType
from confluent_kafka import TopicPartition as CfTopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until, wait_visible
from tests.log_events import capture_events
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from zkbroker.broker.protocol.messages.create_topics import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from zkbroker.broker.protocol.messages.elect_leaders import ElectLeadersRequest, TopicPartitions
from zkbroker.broker.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)
from zkbroker.broker.toolkit.wire import WireClient

REASSIGN = "/admin/reassign_partitions"
PREFERRED = "/admin/preferred_replica_election"


# ---- helpers -------------------------------------------------------------------------------


def controller_client(cluster: Cluster) -> WireClient:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    node = cluster.engine.brokers[cluster.engine.controller_id]
    return WireClient(node.host, node.port)


def other_client(cluster: Cluster) -> WireClient:
    controller = cluster.engine.controller_id
    node = next(b for i, b in cluster.engine.brokers.items() if i != controller and b.running)
    return WireClient(node.host, node.port)


def create_topic(
    cluster: Cluster,
    name: str,
    assignment: dict[int, list[int]],
    configs: dict[str, str] | None = None,
    version: int = 5,
) -> None:
    request = CreateTopicsRequest(
        topics=[
            CreatableTopic(
                name=name,
                num_partitions=-1,
                replication_factor=-1,
                assignments=[
                    CreatableReplicaAssignment(partition_index=p, broker_ids=r)
                    for p, r in assignment.items()
                ],
                configs=[CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
            )
        ],
        timeout_ms=15000,
    )
    with controller_client(cluster) as client:
        (result,) = client.request(version, request).topics
    assert result.error_code == ec.NONE, result
    wait_visible(cluster, name)


def handled(events: list[dict[str, Any]], event_name: str, after: Callable[[Any], bool]) -> bool:
    """The controller has finished an event `event_name` after logging an event that `after`
    matches (`events` from `capture_events()`, whose DEBUG level turns on the controller's
    `controller.event` lines)."""
    marks = [i for i, e in enumerate(events) if after(e)]
    return bool(marks) and any(
        e["event"] == "controller.event" and e["event_name"] == event_name
        for e in events[marks[0] + 1 :]
    )


def brokers_started(broker_id: int) -> Callable[[Any], bool]:
    return lambda e: e["event"] == "controller.brokers_started" and e["brokers"] == [broker_id]


def state(zk: KazooClient, topic: str, partition: int) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    doc = json.loads(data)
    assert doc["leader"] == -1 or doc["leader"] in doc["isr"], f"leader outside the ISR: {doc}"
    return doc


def topic_znode(zk: KazooClient, topic: str) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{topic}")
    return json.loads(data)


def leader_is(zk: KazooClient, topic: str, partition: int, leader: int) -> Callable[[], bool]:
    return lambda: state(zk, topic, partition)["leader"] == leader


def check_all_states(zk: KazooClient) -> None:
    """Kafka's invariant over every partition in ZooKeeper (state() asserts it)."""
    for topic in zk.get_children("/brokers/topics"):
        if zk.exists(f"/brokers/topics/{topic}/partitions"):
            for p in zk.get_children(f"/brokers/topics/{topic}/partitions"):
                if zk.exists(f"/brokers/topics/{topic}/partitions/{p}/state"):
                    state(zk, topic, int(p))


def alter(client: WireClient, topic: str, targets: dict[int, list[int] | None]) -> Any:
    return client.request(
        0,
        AlterPartitionReassignmentsRequest(
            topics=[
                ReassignableTopic(
                    name=topic,
                    partitions=[
                        ReassignablePartition(partition_index=p, replicas=r)
                        for p, r in targets.items()
                    ],
                )
            ]
        ),
    )


def partition_errors(response: Any) -> dict[tuple[str, int], tuple[int, str | None]]:
    return {
        (t.name, p.partition_index): (p.error_code, p.error_message)
        for t in response.responses
        for p in t.partitions
    }


def elect(
    client: WireClient,
    election_type: int,
    partitions: dict[str, list[int]] | None,
    version: int = 2,
) -> dict[tuple[str, int], tuple[int, str | None]]:
    request = ElectLeadersRequest(
        election_type=election_type,
        topic_partitions=None
        if partitions is None
        else [TopicPartitions(topic=t, partitions=ps) for t, ps in partitions.items()],
        timeout_ms=10000,
    )
    response = client.request(version, request)
    return {
        (r.topic, p.partition_id): (p.error_code, p.error_message)
        for r in response.replica_election_results
        for p in r.partition_result
    }


# ---- reassignment --------------------------------------------------------------------------


def test_reassignment_written_by_kazoo_completes_with_kafkas_epochs(
    cluster: Cluster, kazoo: KazooClient
) -> None:
    create_topic(cluster, "zkmove", {0: [0, 1], 1: [1, 2]})
    kazoo.create(
        REASSIGN,
        json.dumps(
            {"version": 1, "partitions": [{"topic": "zkmove", "partition": 0, "replicas": [2, 1]}]}
        ).encode(),
    )
    wait_until(lambda: kazoo.exists(REASSIGN) is None)
    znode = topic_znode(kazoo, "zkmove")
    assert znode["partitions"] == {"0": [2, 1], "1": [1, 2]}
    assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
    # A1 epoch bump, B3 leader 0 -> 2 (first target replica in the ISR), B4 0 leaves the ISR.
    assert state(kazoo, "zkmove", 0) | {"controller_epoch": 0} == {
        "controller_epoch": 0,
        "leader": 2,
        "leader_epoch": 3,
        "isr": [1, 2],
        "version": 1,
    }
    assert state(kazoo, "zkmove", 1)["leader_epoch"] == 0  # untouched
    wait_until(lambda: cluster.engine.image.topics["zkmove"].partitions[0].leader == 2)
    assert cluster.engine.image.topics["zkmove"].assignment[0] == (2, 1)


def test_admin_node_with_unknown_partitions_is_pruned_and_bad_json_is_left(
    cluster: Cluster, kazoo: KazooClient
) -> None:
    create_topic(cluster, "prune", {0: [0]})
    kazoo.create(
        REASSIGN,
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": "prune", "partition": 0, "replicas": [1]},
                    {"topic": "nosuch", "partition": 0, "replicas": [1]},
                ],
            }
        ).encode(),
    )
    wait_until(lambda: kazoo.exists(REASSIGN) is None)
    assert topic_znode(kazoo, "prune")["partitions"] == {"0": [1]}
    # log_dirs (from the tool's own JSON) makes the node invalid for Kafka: ignored, kept.
    bad = {
        "version": 1,
        "partitions": [{"topic": "prune", "partition": 0, "replicas": [2], "log_dirs": ["any"]}],
    }
    with capture_events() as events:
        kazoo.create(REASSIGN, json.dumps(bad).encode())
        wait_until(
            lambda: handled(
                events,
                "ZkPartitionReassignment",
                lambda e: e["event"] == "controller.zk_reassignment_undecodable",
            )
        )
    assert kazoo.exists(REASSIGN) is not None
    assert topic_znode(kazoo, "prune")["partitions"] == {"0": [1]}


def test_kafka_python_reassignment_in_flight_then_done(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    cluster = cluster_factory()
    create_topic(cluster, "slow", {0: [0, 1]})
    # The new replica fetches nothing until the move has been looked at.
    paused = cluster.faults.pause_replication(2, topic="slow")
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        result = admin.alter_partition_reassignments({TopicPartition("slow", 0): [2, 1]})
        assert result == {TopicPartition("slow", 0): None}
        listed = admin.list_partition_reassignments()
        assert listed == {
            TopicPartition("slow", 0): {
                "replicas": [2, 1, 0],
                "adding_replicas": [2],
                "removing_replicas": [0],
            }
        }
        znode = topic_znode(kazoo, "slow")
        assert znode["partitions"]["0"] == [2, 1, 0]
        assert znode["adding_replicas"] == {"0": [2]}
        assert znode["removing_replicas"] == {"0": [0]}
        in_flight = state(kazoo, "slow", 0)
        assert (in_flight["leader"], in_flight["leader_epoch"], in_flight["isr"]) == (0, 1, [0, 1])
        cluster.faults.clear(paused)
        wait_until(lambda: not admin.list_partition_reassignments(), timeout=20)
    finally:
        admin.close()
    assert topic_znode(kazoo, "slow")["partitions"]["0"] == [2, 1]
    final = state(kazoo, "slow", 0)
    assert (final["leader"], final["leader_epoch"], final["isr"]) == (2, 3, [1, 2])


def test_cancel_and_every_alter_error(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    cluster = cluster_factory()
    create_topic(cluster, "cancel", {0: [0, 1], 1: [1, 2]})
    cluster.faults.pause_replication(2, topic="cancel")
    with controller_client(cluster) as client:
        assert partition_errors(alter(client, "cancel", {1: None})) == {
            ("cancel", 1): (
                ec.NO_REASSIGNMENT_IN_PROGRESS,
                "No partition reassignment is in progress.",
            )
        }
        assert partition_errors(alter(client, "cancel", {0: [2, 0]})) == {("cancel", 0): (0, None)}
        assert topic_znode(kazoo, "cancel")["adding_replicas"] == {"0": [2]}
        assert partition_errors(alter(client, "cancel", {0: None})) == {("cancel", 0): (0, None)}
        znode = topic_znode(kazoo, "cancel")
        assert znode["partitions"]["0"] == [0, 1]
        assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
        listing = client.request(0, ListPartitionReassignmentsRequest(topics=None))
        assert listing.error_code == 0 and listing.topics == []

        errors = (
            partition_errors(alter(client, "cancel", {0: [-1, 2]}))
            | partition_errors(alter(client, "cancel", {1: [1, 7]}))
            | partition_errors(alter(client, "nosuch", {0: [1]}))
        )
        assert errors == {
            ("cancel", 0): (
                ec.INVALID_REPLICA_ASSIGNMENT,
                "Invalid broker id in replica list: ArrayBuffer(-1, 2)",
            ),
            ("cancel", 1): (
                ec.INVALID_REPLICA_ASSIGNMENT,
                "Replica assignment has brokers that are not alive. Replica list: "
                "ArrayBuffer(7), live broker list: Set(0, 1, 2)",
            ),
            ("nosuch", 0): (ec.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."),
        }
        first = partition_errors(alter(client, "cancel", {0: [], 1: [1, 1]}))
        assert first == {
            ("cancel", 0): (
                ec.INVALID_REPLICA_ASSIGNMENT,
                "Empty replica list specified in partition reassignment.",
            ),
            ("cancel", 1): (
                ec.INVALID_REPLICA_ASSIGNMENT,
                "Duplicate replica ids in partition reassignment replica list: ArrayBuffer(1, 1)",
            ),
        }
    with other_client(cluster) as client:
        response = alter(client, "cancel", {0: [1]})
        assert (response.error_code, response.responses) == (ec.NOT_CONTROLLER, [])
        listing = client.request(0, ListPartitionReassignmentsRequest(topics=None))
        assert listing.error_code == ec.NOT_CONTROLLER


def test_list_reports_only_partitions_in_flight(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory()
    create_topic(cluster, "listed", {0: [0], 1: [1]})
    cluster.faults.pause_replication(2, topic="listed")
    with controller_client(cluster) as client:
        alter(client, "listed", {1: [2]})
        listing = client.request(
            0,
            ListPartitionReassignmentsRequest(
                topics=[
                    ListPartitionReassignmentsTopics(name="listed", partition_indexes=[0, 1, 9]),
                    ListPartitionReassignmentsTopics(name="nosuch", partition_indexes=[0]),
                ]
            ),
        )
    assert [
        (
            t.name,
            [
                (p.partition_index, p.replicas, p.adding_replicas, p.removing_replicas)
                for p in t.partitions
            ],
        )
        for t in listing.topics
    ] == [("listed", [(1, [2, 1], [2], [1])])]


def test_deletion_waits_for_reassignment(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    cluster = cluster_factory()
    create_topic(cluster, "doomed", {0: [0]})
    paused = cluster.faults.pause_replication(1, topic="doomed")
    with controller_client(cluster) as client:
        alter(client, "doomed", {0: [1]})
    with capture_events() as events:
        kazoo.create("/admin/delete_topics/doomed")
        wait_until(
            lambda: any(
                e["event"] == "controller.deletion_waiting"
                and (e["topic"], e["reason"]) == ("doomed", "reassignment in progress")
                for e in events
            )
        )
    assert kazoo.exists("/brokers/topics/doomed") is not None  # waits for the reassignment
    cluster.faults.clear(paused)
    wait_until(lambda: kazoo.exists("/brokers/topics/doomed") is None, timeout=20)
    assert kazoo.exists("/admin/delete_topics/doomed") is None


def test_a_deletion_whose_marker_is_already_gone_still_deletes(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    """Regression (seen while a test's cleaning deleted topics the clients were still
    re-creating): the deletion's last multi named a marker another writer had removed, and the
    whole multi was rolled back, leaving the topic in place. Kafka deletes the marker apart and
    ignores a missing one."""
    from zkbroker.broker.controller import topics as controller_topics

    cluster = cluster_factory()
    create_topic(cluster, "markerless", {0: [0]})
    assert kazoo.exists("/admin/delete_topics/markerless") is None
    controller = cluster.engine.brokers[cluster.engine.controller_id].controller
    assert controller is not None

    async def delete(c: Any) -> None:
        await controller_topics._delete_topic(c, "markerless")

    cluster.call(controller.call("TopicDeletion", delete))
    assert kazoo.exists("/brokers/topics/markerless") is None
    assert "markerless" not in controller.state.topics


# ---- broker failure and return, elections --------------------------------------------------


def test_an_election_lost_to_a_winner_already_gone_is_run_again(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression (CI, stop 47): a broker lost the election to one that stopped at once;
    /controller went from vacant to vacant, the level-triggered watch delivered nothing, and
    the cluster stayed without a controller. The rival here wins and leaves in one multi, between
    the broker's read of /controller_epoch and its own multi."""
    cluster = cluster_factory(brokers=1)
    store = cluster.engine.brokers[0].store
    read_epoch = store._read_or_create_controller_epoch
    rivals: list[int] = []

    async def raced() -> tuple[int, int]:
        epoch, version = await read_epoch()
        if not rivals:
            rivals.append(epoch + 1)
            rival = json.dumps({"version": 2, "brokerid": 7, "timestamp": "0"}).encode()
            tx = kazoo.transaction()
            tx.create("/controller", rival, ephemeral=True)
            tx.set_data("/controller_epoch", b"%d" % (epoch + 1), version=version)
            tx.delete("/controller")
            assert all(r is not False and not isinstance(r, Exception) for r in tx.commit())
        return epoch, version

    monkeypatch.setattr(store, "_read_or_create_controller_epoch", raced)
    kazoo.delete("/controller")

    def controller() -> Any:
        got = kazoo.exists("/controller") and json.loads(kazoo.get("/controller")[0])
        return got and (got["brokerid"], kazoo.get("/controller_epoch")[0])

    assert wait_until(controller, timeout=15) == (0, b"3")
    assert rivals == [2]
    assert cluster.engine.brokers[0].is_controller


def test_broker_failure_moves_leaders_shrinks_isrs_and_election_restores(
    cluster: Cluster, kazoo: KazooClient
) -> None:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    ctrl = cluster.engine.controller_id
    victim, other = (b for b in (0, 1, 2) if b != ctrl)
    create_topic(cluster, "fail", {0: [victim, ctrl, other], 1: [ctrl, victim, other]})
    cluster.stop_broker(victim)
    wait_until(leader_is(kazoo, "fail", 0, ctrl))
    wait_until(lambda: state(kazoo, "fail", 1)["isr"] == [ctrl, other])
    # The dead leader's partition: the first live ISR replica leads, the ISR loses the dead.
    assert state(kazoo, "fail", 0) | {"controller_epoch": 0} == {
        "controller_epoch": 0,
        "leader": ctrl,
        "leader_epoch": 1,
        "isr": [ctrl, other],
        "version": 1,
    }
    # A follower that died leaves the ISR with a leader-epoch bump; the leader stays.
    assert (state(kazoo, "fail", 1)["leader"], state(kazoo, "fail", 1)["leader_epoch"]) == (ctrl, 1)
    wait_until(lambda: cluster.engine.image.topics["fail"].partitions[0].leader == ctrl)

    cluster.start_broker(victim)
    wait_until(lambda: state(kazoo, "fail", 0)["isr"] == [ctrl, other, victim])
    assert state(kazoo, "fail", 0)["leader_epoch"] == 1  # catching up changes no epoch
    wait_until(lambda: state(kazoo, "fail", 1)["isr"] == [ctrl, other, victim])

    with controller_client(cluster) as client:
        results = elect(client, 0, None)
        assert results == {("fail", 0): (0, None)}  # not-needed entries are left out
        not_needed = (ec.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
        assert elect(client, 0, {"fail": [0, 1]}) == {
            ("fail", 0): not_needed,
            ("fail", 1): not_needed,
        }
    restored = state(kazoo, "fail", 0)
    assert (restored["leader"], restored["leader_epoch"]) == (victim, 2)
    assert restored["isr"] == [ctrl, other, victim]
    check_all_states(kazoo)


def test_controller_broker_failure_new_controller_cleans_up(
    cluster: Cluster, kazoo: KazooClient
) -> None:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    ctrl = cluster.engine.controller_id
    a, b = (x for x in (0, 1, 2) if x != ctrl)
    create_topic(cluster, "ctrlfail", {0: [ctrl, a, b], 1: [a, ctrl, b]})
    epoch = int(kazoo.get("/controller_epoch")[0])
    cluster.stop_broker(ctrl)
    wait_until(lambda: cluster.engine.controller_id not in (-1, ctrl))
    assert int(kazoo.get("/controller_epoch")[0]) == epoch + 1
    # The new controller elects a leader for the partition the dead controller led ...
    wait_until(leader_is(kazoo, "ctrlfail", 0, a))
    assert state(kazoo, "ctrlfail", 0)["isr"] == [a, b]
    # ... and the live leader drops the dead follower from its ISR (same leader epoch).
    wait_until(lambda: state(kazoo, "ctrlfail", 1)["isr"] == [a, b])
    assert state(kazoo, "ctrlfail", 1)["leader_epoch"] == 0
    assert state(kazoo, "ctrlfail", 1)["controller_epoch"] == epoch + 1


def test_preferred_leader_not_available_and_unknown_and_not_controller(
    cluster: Cluster, kazoo: KazooClient
) -> None:
    create_topic(cluster, "pref", {0: [2, 1]})
    cluster.stop_broker(2)
    wait_until(leader_is(kazoo, "pref", 0, 1))
    with controller_client(cluster) as client:
        assert elect(client, 0, {"pref": [0, 5], "nosuch": [0]}) == {
            ("pref", 0): (
                ec.PREFERRED_LEADER_NOT_AVAILABLE,
                "Failed to elect leader for partition pref-0 under strategy "
                "PreferredReplicaPartitionLeaderElectionStrategy",
            ),
            ("pref", 5): (ec.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."),
            ("nosuch", 0): (ec.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."),
        }
    with other_client(cluster) as client:
        assert elect(client, 0, {"pref": [0]}) == {("pref", 0): (ec.NOT_CONTROLLER, None)}


def test_offline_partition_and_unclean_election(cluster: Cluster, kazoo: KazooClient) -> None:
    create_topic(cluster, "unclean", {0: [2, 1]})
    cluster.stop_broker(1)
    wait_until(lambda: state(kazoo, "unclean", 0)["isr"] == [2])
    cluster.stop_broker(2)
    # No live ISR replica and unclean election disabled: offline, the last ISR member kept.
    wait_until(leader_is(kazoo, "unclean", 0, -1))
    assert state(kazoo, "unclean", 0)["isr"] == [2]
    with capture_events() as events:
        cluster.start_broker(1)
        wait_until(lambda: handled(events, "BrokerChange", brokers_started(1)))
    assert state(kazoo, "unclean", 0)["leader"] == -1  # 1 is not in the ISR
    with controller_client(cluster) as client:
        assert elect(client, 1, {"unclean": [0]}) == {("unclean", 0): (0, None)}
        after = state(kazoo, "unclean", 0)
        assert (after["leader"], after["isr"]) == (1, [1])
        assert elect(client, 1, {"unclean": [0]}) == {
            ("unclean", 0): (
                ec.ELECTION_NOT_NEEDED,
                "Leader election not needed for topic partition.",
            )
        }
    cluster.stop_broker(1)
    wait_until(leader_is(kazoo, "unclean", 0, -1))
    with controller_client(cluster) as client:
        assert elect(client, 1, {"unclean": [0]}) == {
            ("unclean", 0): (
                ec.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                "Failed to elect leader for partition unclean-0 under strategy "
                "OfflinePartitionLeaderElectionStrategy(true)",
            )
        }
    check_all_states(kazoo)


def test_topic_unclean_config_elects_a_returning_out_of_sync_replica(
    cluster: Cluster, kazoo: KazooClient
) -> None:
    create_topic(cluster, "dirty", {0: [2, 1]}, {"unclean.leader.election.enable": "true"})
    cluster.stop_broker(1)
    wait_until(lambda: state(kazoo, "dirty", 0)["isr"] == [2])
    cluster.stop_broker(2)
    wait_until(leader_is(kazoo, "dirty", 0, -1))
    cluster.start_broker(1)
    wait_until(leader_is(kazoo, "dirty", 0, 1))
    assert state(kazoo, "dirty", 0)["isr"] == [1]


def test_confluent_and_kafka_python_elect_leaders(cluster: Cluster, kazoo: KazooClient) -> None:
    create_topic(cluster, "clients", {0: [1, 2], 1: [2, 1]})
    cluster.stop_broker(1)
    wait_until(leader_is(kazoo, "clients", 0, 2))
    cluster.start_broker(1)
    wait_until(lambda: state(kazoo, "clients", 0)["isr"] == [2, 1])
    wait_until(lambda: state(kazoo, "clients", 1)["isr"] == [2, 1])
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    result = admin.elect_leaders(
        CfElectionType.PREFERRED, [CfTopicPartition("clients", 0), CfTopicPartition("clients", 1)]
    ).result(timeout=20)
    outcome = {(tp.topic, tp.partition): err for tp, err in result.items()}
    assert outcome[("clients", 0)] is None
    assert outcome[("clients", 1)].code() == ec.ELECTION_NOT_NEEDED
    assert state(kazoo, "clients", 0)["leader"] == 1
    cluster.stop_broker(1)
    wait_until(leader_is(kazoo, "clients", 0, 2))
    cluster.start_broker(1)
    wait_until(lambda: state(kazoo, "clients", 0)["isr"] == [2, 1])
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        kp.elect_leaders(0, {"clients": [0]})
    finally:
        kp.close()
    assert state(kazoo, "clients", 0)["leader"] == 1


def test_preferred_replica_election_znode_is_consumed(cluster: Cluster, kazoo: KazooClient) -> None:
    create_topic(cluster, "znodepref", {0: [0, 1], 1: [1, 0]})
    cluster.stop_broker(0)
    wait_until(leader_is(kazoo, "znodepref", 0, 1))
    cluster.start_broker(0)
    wait_until(lambda: state(kazoo, "znodepref", 0)["isr"] == [1, 0])
    kazoo.create(
        PREFERRED,
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": "znodepref", "partition": 0},
                    {"topic": "znodepref", "partition": 1},
                    {"topic": "gone", "partition": 0},
                ],
            }
        ).encode(),
    )
    wait_until(lambda: kazoo.exists(PREFERRED) is None)
    assert state(kazoo, "znodepref", 0)["leader"] == 0
    assert state(kazoo, "znodepref", 1)["leader_epoch"] == 0  # already preferred
    # Valid JSON without `partitions`: Kafka's processing throws and leaves the node.
    with capture_events() as events:
        kazoo.create(PREFERRED, b'{"version":1}')
        wait_until(
            lambda: handled(
                events,
                "ReplicaLeaderElection",
                lambda e: e["event"] == "controller.preferred_election_undecodable",
            )
        )
    assert kazoo.exists(PREFERRED) is not None


def test_auto_leader_rebalance(cluster_factory: Callable[..., Cluster], kazoo: KazooClient) -> None:
    cluster = cluster_factory(leader_imbalance_check_interval_s=0.5)
    create_topic(cluster, "auto", {0: [0, 1]})
    cluster.stop_broker(0)
    wait_until(leader_is(kazoo, "auto", 0, 1))
    cluster.start_broker(0)
    wait_until(leader_is(kazoo, "auto", 0, 0), timeout=20)
    assert state(kazoo, "auto", 0)["isr"] == [1, 0]


def test_no_auto_rebalance_when_disabled(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    cluster = cluster_factory(auto_leader_rebalance=False, leader_imbalance_check_interval_s=0.3)
    create_topic(cluster, "manual", {0: [0, 1]})
    cluster.stop_broker(0)
    wait_until(leader_is(kazoo, "manual", 0, 1))
    cluster.start_broker(0)
    wait_until(lambda: state(kazoo, "manual", 0)["isr"] == [1, 0])
    # A negative check, so a window: five check intervals, in which an enabled rebalance runs
    # its check (an event) at least once, whether or not it elects.
    with capture_events() as events:
        time.sleep(1.5)
    assert not [e for e in events if e.get("event_name") == "AutoPreferredReplicaLeaderElection"]
    assert state(kazoo, "manual", 0)["leader"] == 1


# ---- controller failover --------------------------------------------------------------------


def test_failover_resumes_reassignment_and_bumps_the_epoch(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    cluster = cluster_factory()
    wait_until(lambda: cluster.engine.controller_id >= 0)
    old = cluster.engine.controller_id
    a, b = (x for x in (0, 1, 2) if x != old)
    create_topic(cluster, "resume", {0: [a]})
    paused = cluster.faults.pause_replication(b, topic="resume")
    epoch_before = int(kazoo.get("/controller_epoch")[0])
    with controller_client(cluster) as client:
        assert partition_errors(alter(client, "resume", {0: [b]})) == {("resume", 0): (0, None)}
    assert topic_znode(kazoo, "resume")["adding_replicas"] == {"0": [b]}
    cluster.stop_broker(old)
    wait_until(lambda: cluster.engine.controller_id not in (-1, old))
    assert int(kazoo.get("/controller_epoch")[0]) == epoch_before + 1
    cluster.faults.clear(paused)
    wait_until(lambda: not topic_znode(kazoo, "resume")["adding_replicas"], timeout=20)
    assert topic_znode(kazoo, "resume")["partitions"] == {"0": [b]}
    final = state(kazoo, "resume", 0)
    # A1 by the first controller, A1 again on resuming, B3 leader moved, B4 `a` removed.
    assert (final["leader"], final["isr"], final["leader_epoch"]) == (b, [b], 4)
    assert final["controller_epoch"] == epoch_before + 1
    check_all_states(kazoo)


@pytest.mark.parametrize("version", [0, 1])
def test_elect_leaders_old_versions(cluster: Cluster, version: int) -> None:
    create_topic(cluster, f"old{version}", {0: [0, 1]})
    with controller_client(cluster) as client:
        assert elect(client, 0, {f"old{version}": [0]}, version=version) == {
            (f"old{version}", 0): (
                ec.ELECTION_NOT_NEEDED,
                "Leader election not needed for topic partition.",
            )
        }


def test_turning_unclean_election_on_elects_offline_partitions(
    cluster: Cluster, kazoo: KazooClient
) -> None:
    create_topic(cluster, "later", {0: [2, 1]})
    cluster.stop_broker(1)
    wait_until(lambda: state(kazoo, "later", 0)["isr"] == [2])
    cluster.stop_broker(2)
    wait_until(leader_is(kazoo, "later", 0, -1))
    with capture_events() as events:
        cluster.start_broker(1)
        wait_until(lambda: handled(events, "BrokerChange", brokers_started(1)))
    assert state(kazoo, "later", 0)["leader"] == -1
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    resource = ConfigResource(
        "topic",
        "later",
        incremental_configs=[
            ConfigEntry(
                "unclean.leader.election.enable",
                "true",
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(timeout=20)
    wait_until(leader_is(kazoo, "later", 0, 1))
    assert state(kazoo, "later", 0)["isr"] == [1]


def test_every_observed_state_keeps_kafkas_invariants(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    """Watch one partition's state znode through failure, return, election, reassignment and
    failover: every version seen has its leader in the ISR (or none), leader epochs never go
    back, and every leader change comes with a higher leader epoch."""
    cluster = cluster_factory(auto_leader_rebalance=False)
    create_topic(cluster, "watched", {0: [0, 1, 2]})
    seen: list[dict[str, Any]] = []

    def record(data: bytes | None, stat: Any) -> None:
        if data:
            seen.append(json.loads(data))

    kazoo.DataWatch("/brokers/topics/watched/partitions/0/state", record)
    cluster.stop_broker(1)
    cluster.stop_broker(0)
    wait_until(leader_is(kazoo, "watched", 0, 2))
    cluster.start_broker(0)
    cluster.start_broker(1)
    # The leader adds each returning follower once it caught up, in the order they do.
    wait_until(lambda: sorted(state(kazoo, "watched", 0)["isr"]) == [0, 1, 2])
    with controller_client(cluster) as client:
        assert elect(client, 0, {"watched": [0]}) == {("watched", 0): (0, None)}
        alter(client, "watched", {0: [1, 2]})
    wait_until(lambda: topic_znode(kazoo, "watched")["partitions"]["0"] == [1, 2])
    cluster.stop_broker(cluster.engine.controller_id)
    wait_until(lambda: cluster.engine.controller_id >= 0)
    wait_until(lambda: set(state(kazoo, "watched", 0)["isr"]) == {1, 2})
    # The watch has delivered the last version.
    wait_until(lambda: bool(seen) and seen[-1] == state(kazoo, "watched", 0))
    for before, after in itertools.pairwise(seen):
        assert after["leader"] == -1 or after["leader"] in after["isr"], after
        assert after["leader_epoch"] >= before["leader_epoch"], (before, after)
        assert after["controller_epoch"] >= before["controller_epoch"], (before, after)
        if after["leader"] != before["leader"]:
            assert after["leader_epoch"] > before["leader_epoch"], (before, after)
    assert seen[0]["leader"] == 0 and len(seen) >= 6
    assert seen[-1]["leader"] in (1, 2)


@pytest.mark.parametrize("release", [(1, 0), (2, 3)])
def test_zk_reassignment_before_kip_455(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient, release: tuple[int, int]
) -> None:
    """Before 2.4 the topic znode (v1) has no adding/removing lists: the full replica set
    is written while in flight and `/admin/reassign_partitions` alone records progress."""
    # A short lag: 0 may rejoin the ISR before the leader learns it is gone (below).
    cluster = cluster_factory(
        kafka_version=release, broker_configs=(("replica.lag.time.max.ms", "1000"),)
    )
    create_topic(cluster, "legacy", {0: [0]}, version=2)
    paused = cluster.faults.pause_replication(1, topic="legacy")
    kazoo.create(
        REASSIGN,
        json.dumps(
            {"version": 1, "partitions": [{"topic": "legacy", "partition": 0, "replicas": [1]}]}
        ).encode(),
    )
    wait_until(lambda: topic_znode(kazoo, "legacy")["partitions"] == {"0": [1, 0]})
    assert "adding_replicas" not in topic_znode(kazoo, "legacy")
    # The new replica catches up; its leader writes the ISR itself (before 2.7), which
    # completes the move.
    cluster.faults.clear(paused)
    wait_until(lambda: kazoo.exists(REASSIGN) is None, timeout=20)
    assert topic_znode(kazoo, "legacy") == {"version": 1, "partitions": {"0": [1]}}
    # Before 2.4 the leader learns that 0 is gone only from the topic znode (Kafka's
    # StopReplica stops 0 fetching at once): 0 may rejoin meanwhile, and then leaves the ISR
    # at the leader's next lag check (an unassigned member is out of sync).
    wait_until(
        lambda: (state(kazoo, "legacy", 0)["leader"], state(kazoo, "legacy", 0)["isr"]) == (1, [1])
    )
