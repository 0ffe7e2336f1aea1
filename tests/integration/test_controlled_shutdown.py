"""ControlledShutdown over TCP against a real ZooKeeper (KafkaController.doControlledShutdown):
the controller moves the broker's leaderships to other ISR members, takes it out of the ISRs it
follows, answers what it still leads, and refuses stale epochs, unknown brokers and requests
sent to another broker. Versions 0 (its header has no client id) to 3. Wire requests: only a
broker sends this; the result is read in ZooKeeper and through confluent-kafka's Metadata."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until
from tests.integration.test_controller import (
    controller_client,
    create_topic,
    other_client,
    state,
)
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.controlled_shutdown import ControlledShutdownRequest
from zkbroker.broker.toolkit.wire import WireClient


def shutdown(
    client: WireClient, version: int, broker_id: int, epoch: int = -1
) -> tuple[int, list[tuple[str, int]]]:
    answer = client.request(
        version, ControlledShutdownRequest(broker_id=broker_id, broker_epoch=epoch)
    )
    return answer.error_code, [
        (r.topic_name, r.partition_index) for r in answer.remaining_partitions
    ]


def epoch_of(kazoo: KazooClient, broker_id: int) -> int:
    return int(kazoo.get(f"/brokers/ids/{broker_id}")[1].czxid)


def leaders(cluster: Cluster, topic: str) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    meta = admin.list_topics(topic, timeout=10)
    return {p: m.leader for p, m in meta.topics[topic].partitions.items()}


def test_leaderships_move_and_isrs_shrink(cluster: Cluster, kazoo: KazooClient) -> None:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    b, x, y = 1, 2, 0
    # Kafka wants every partition of a topic to have as many replicas: two topics.
    create_topic(cluster, "cs", {0: [b, x], 1: [x, b], 2: [x, y]})
    create_topic(cluster, "single", {0: [b]})
    # A broker shutting down stops fetching (Kafka's controller sends it StopReplica): without
    # that, b would catch up and its leaders take it back into the ISR.
    cluster.faults.pause_replication(b, topic="cs")
    before = {p: state(kazoo, "cs", p) for p in range(3)}
    assert before[0]["leader"] == b and before[0]["isr"] == [b, x]
    with controller_client(cluster) as client:
        # Errors first: nothing changes.
        assert shutdown(client, 2, b, epoch_of(kazoo, b) - 1) == (ec.STALE_BROKER_EPOCH, [])
        assert shutdown(client, 3, 9, 5) == (ec.UNKNOWN_SERVER_ERROR, [])
        assert shutdown(client, 1, 9) == (ec.BROKER_NOT_AVAILABLE, [])
        assert {p: state(kazoo, "cs", p) for p in range(3)} == before

        assert shutdown(client, 3, b, epoch_of(kazoo, b)) == (ec.NONE, [("single", 0)])
        after = {p: state(kazoo, "cs", p) for p in range(3)}
        # Led with another ISR member: x leads, b left the ISR, leader epoch + 1.
        assert (after[0]["leader"], after[0]["isr"]) == (x, [x])
        assert after[0]["leader_epoch"] == before[0]["leader_epoch"] + 1
        # Followed: b leaves the ISR under the same leader.
        assert (after[1]["leader"], after[1]["isr"]) == (x, [x])
        assert after[1]["leader_epoch"] == before[1]["leader_epoch"] + 1
        # A partition b does not host: untouched; its single-replica one stays (remaining).
        assert after[2] == before[2]
        assert state(kazoo, "single", 0)["leader"] == b
        wait_until(lambda: leaders(cluster, "cs") == {0: x, 1: x, 2: x})

        # v0 (header without client id) and v1 carry no epoch; nothing left to move.
        assert shutdown(client, 0, b) == (ec.NONE, [("single", 0)])
        assert shutdown(client, 1, b) == (ec.NONE, [("single", 0)])
        assert {p: state(kazoo, "cs", p) for p in range(3)} == after
    with other_client(cluster) as client:
        assert shutdown(client, 3, b, epoch_of(kazoo, b)) == (ec.NOT_CONTROLLER, [])
