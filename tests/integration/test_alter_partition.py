"""AlterPartition (AlterIsr before 3.2) over TCP against a real ZooKeeper: the controller applies
a leader's ISR change to the state znode (Metadata shows it, through confluent-kafka) with the
checks of the emulated release's KafkaController, and a reassignment waiting for that ISR
completes. Wire requests: only a partition leader sends this."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until
from tests.integration.test_controller import (
    alter,
    controller_client,
    create_topic,
    other_client,
    state,
    topic_znode,
)
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.alter_partition import (
    AlterPartitionRequest,
    BrokerState,
    PartitionData,
    TopicData,
)
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.zk_layout.uuid_text import uuid_from_text


def epoch_of(kazoo: KazooClient, broker_id: int) -> int:
    return int(kazoo.get(f"/brokers/ids/{broker_id}")[1].czxid)


def version_of(kazoo: KazooClient, topic: str, partition: int) -> int:
    return int(kazoo.get(f"/brokers/topics/{topic}/partitions/{partition}/state")[1].version)


def send(
    client: WireClient,
    version: int,
    broker: int,
    epoch: int,
    topic: str | uuid.UUID,
    isr: list[int],
    leader_epoch: int,
    partition_epoch: int,
    partition: int = 0,
) -> Any:
    data = PartitionData(
        partition_index=partition,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        new_isr=isr,
        new_isr_with_epochs=[BrokerState(broker_id=b) for b in isr],
    )
    by = {"topic_id": topic} if isinstance(topic, uuid.UUID) else {"topic_name": topic}
    request = AlterPartitionRequest(
        broker_id=broker, broker_epoch=epoch, topics=[TopicData(partitions=[data], **by)]
    )
    return client.request(version, request)


def only(answer: Any) -> Any:
    assert answer.error_code == ec.NONE
    ((partition,),) = [t.partitions for t in answer.topics]
    return partition


def metadata_isr(cluster: Cluster, topic: str) -> list[int]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    return list(admin.list_topics(topic, timeout=10).topics[topic].partitions[0].isrs)


def _leave_the_isr_to_the_test(cluster: Cluster, topic: str) -> None:
    """The topic's followers fetch nothing, so its real leader neither adds one to the ISR nor
    (within replica.lag.time.max.ms) removes one: the test's AlterPartition requests alone
    change it."""
    for broker in (0, 1, 2):
        cluster.faults.pause_replication(broker, topic=topic)


def test_isr_changes_on_3_9(cluster_factory: Callable[..., Cluster], kazoo: KazooClient) -> None:
    cluster = cluster_factory(kafka_version=(3, 9))
    wait_until(lambda: cluster.engine.controller_id >= 0)
    create_topic(cluster, "ap", {0: [1, 2, 0]})
    _leave_the_isr_to_the_test(cluster, "ap")
    topic_id = uuid_from_text(topic_znode(kazoo, "ap")["topic_id"])
    before = state(kazoo, "ap", 0)
    pe = version_of(kazoo, "ap", 0)
    le = before["leader_epoch"]
    epoch = epoch_of(kazoo, 1)
    with controller_client(cluster) as client:
        # The leader shrinks its ISR (v3: members with broker epochs, topic by id).
        answer = only(send(client, 3, 1, epoch, topic_id, [1, 2], le, pe))
        assert (answer.error_code, answer.leader_id, answer.leader_epoch, answer.isr) == (
            ec.NONE,
            1,
            le,
            [1, 2],
        )
        assert answer.partition_epoch == pe + 1 == version_of(kazoo, "ap", 0)
        after = state(kazoo, "ap", 0)
        assert (after["leader"], after["leader_epoch"], after["isr"]) == (1, le, [1, 2])
        wait_until(lambda: sorted(metadata_isr(cluster, "ap")) == [1, 2])
        # The same again with the old partition epoch: the current state, nothing written.
        again = only(send(client, 3, 1, epoch, topic_id, [1, 2], le, pe))
        assert (again.error_code, again.partition_epoch) == (ec.NONE, pe + 1)
        assert version_of(kazoo, "ap", 0) == pe + 1
        # Refusals, per partition.
        cases = [
            (send(client, 3, 1, epoch, topic_id, [1], le, pe), ec.INVALID_UPDATE_VERSION),
            (send(client, 3, 1, epoch, topic_id, [1], le - 1, pe + 1), ec.FENCED_LEADER_EPOCH),
            (send(client, 3, 1, epoch, topic_id, [1], le + 1, pe + 1), ec.NOT_CONTROLLER),
            (send(client, 2, 1, epoch, topic_id, [1, 9], le, pe + 1), ec.INELIGIBLE_REPLICA),
            (send(client, 1, 1, epoch, "ap", [1, 9], le, pe + 1), ec.OPERATION_NOT_ATTEMPTED),
            (send(client, 1, 1, epoch, "nope", [1], le, 0), ec.UNKNOWN_TOPIC_OR_PARTITION),
            (send(client, 2, 1, epoch, uuid.uuid4(), [1], le, 0), ec.UNKNOWN_TOPIC_ID),
        ]
        assert [(only(a).error_code, a.topics[0].partitions[0].leader_id) for a, _ in cases] == [
            (code, 0) for _, code in cases
        ]
        assert version_of(kazoo, "ap", 0) == pe + 1
        # The whole request: a broker epoch other than the broker's.
        stale = send(client, 3, 1, epoch + 1, topic_id, [1], le, pe + 1)
        assert (stale.error_code, stale.topics) == (ec.STALE_BROKER_EPOCH, [])
        unknown = send(client, 3, 9, epoch, topic_id, [1], le, pe + 1)
        assert unknown.error_code == ec.STALE_BROKER_EPOCH
    with other_client(cluster) as client:
        moved = send(client, 3, 1, epoch, topic_id, [1], le, pe + 1)
        assert (moved.error_code, moved.topics) == (ec.NOT_CONTROLLER, [])


@pytest.mark.kafka_version("2.8")
def test_alter_isr_on_2_8_checks_less(cluster: Cluster, kazoo: KazooClient) -> None:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    create_topic(cluster, "ai", {0: [0, 1]})
    _leave_the_isr_to_the_test(cluster, "ai")
    le = state(kazoo, "ai", 0)["leader_epoch"]
    pe = version_of(kazoo, "ai", 0)
    epoch = epoch_of(kazoo, 0)
    with controller_client(cluster) as client:
        # No liveness check before 3.3: an ISR naming an unknown broker is written.
        answer = only(send(client, 0, 0, epoch, "ai", [0, 9], le, pe))
        assert (answer.error_code, answer.isr, answer.partition_epoch) == (ec.NONE, [0, 9], pe + 1)
        assert state(kazoo, "ai", 0)["isr"] == [0, 9]
        # A stale partition epoch fails at the conditional write.
        assert only(send(client, 0, 0, epoch, "ai", [0], le, pe)).error_code == (
            ec.INVALID_UPDATE_VERSION
        )
        # A newer leader epoch is written as it is (no NOT_CONTROLLER before 3.3).
        newer = only(send(client, 0, 0, epoch, "ai", [0, 1], le + 1, pe + 1))
        assert (newer.error_code, newer.leader_epoch) == (ec.NONE, le + 1)
        assert only(send(client, 0, 0, epoch, "ai", [0], le, pe + 2)).error_code == (
            ec.FENCED_LEADER_EPOCH
        )


def test_an_isr_expansion_completes_a_reassignment(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    # The new replica fetches nothing: the ISR change comes from this AlterPartition.
    cluster = cluster_factory(kafka_version=(3, 9))
    wait_until(lambda: cluster.engine.controller_id >= 0)
    create_topic(cluster, "ra", {0: [0]})
    cluster.faults.pause_replication(1, topic="ra")
    with controller_client(cluster) as client:
        assert alter(client, "ra", {0: [0, 1]}).error_code == ec.NONE
        wait_until(lambda: topic_znode(kazoo, "ra").get("adding_replicas") == {"0": [1]})
        current = state(kazoo, "ra", 0)
        answer = only(
            send(
                client,
                1,
                current["leader"],
                epoch_of(kazoo, current["leader"]),
                "ra",
                [0, 1],
                current["leader_epoch"],
                version_of(kazoo, "ra", 0),
            )
        )
        assert answer.error_code == ec.NONE
    wait_until(lambda: topic_znode(kazoo, "ra")["partitions"] == {"0": [0, 1]})
    assert topic_znode(kazoo, "ra").get("adding_replicas", {}) == {}
    wait_until(lambda: kazoo.exists("/admin/reassign_partitions") is None)
