"""A partition leader's own ISR write before Kafka 2.7 and the controller's handling of
`/isr_change_notification` (docs/kafka-behaviour.md §1.9, §10.3), on a real ZooKeeper: the
leader's conditional write of the state znode (`ZkStore.update_leader_and_isr`, refused on a
stale version), its notification (`ZkStore.create_isr_change_notification`), and the
controller, of an old and of a current release, deleting the notification and bringing its own
state (and the metadata image) to the new ISR, so that AlterPartition and reassignments work
from it. Failover deletes leftover notifications unread.

The partitions are led by brokers 7 and 8, registered by the test as a broker of another process
(a Kafka of the old release) would register: zkbroker's own leaders replicate for real and
would change the ISRs themselves meanwhile."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until
from tests.integration.test_alter_partition import epoch_of, only, send, version_of
from tests.integration.test_controller import (
    alter,
    controller_client,
    create_topic,
    state,
    topic_znode,
)
from tests.log_events import capture_events
from zkbroker import Cluster
from zkbroker.broker.controller import isr_change_notifications
from zkbroker.broker.controller.controller import Controller
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.zk_layout import PartitionState

NOTIFICATIONS = "/isr_change_notification"


def controller_of(cluster: Cluster) -> Controller:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    controller = cluster.engine.brokers[cluster.engine.controller_id].controller
    assert controller is not None
    wait_until(lambda: cluster.run_sync(controller.loaded.is_set))
    return controller


def controller_state(cluster: Cluster, controller: Controller, tp: tuple[str, int]) -> Any:
    return cluster.run_sync(lambda: controller.state.partition_states.get(tp))


def znode_state(kazoo: KazooClient, topic: str, partition: int) -> tuple[PartitionState, int]:
    doc = state(kazoo, topic, partition)
    value = PartitionState(
        doc["leader"], doc["leader_epoch"], tuple(doc["isr"]), doc["controller_epoch"]
    )
    return value, version_of(kazoo, topic, partition)


def no_notifications(kazoo: KazooClient) -> bool:
    return kazoo.get_children(NOTIFICATIONS) == []


def register_foreign_brokers(cluster: Cluster, kazoo: KazooClient, *ids: int) -> None:
    """Brokers of another process, as Kafka 2.6 registers them (v4, no listener answers)."""
    for broker_id in ids:
        doc = {
            "version": 4,
            "host": "127.0.0.1",
            "port": 1,
            "jmx_port": -1,
            "timestamp": "0",
            "endpoints": ["PLAINTEXT://127.0.0.1:1"],
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        }
        kazoo.create(f"/brokers/ids/{broker_id}", json.dumps(doc).encode(), ephemeral=True)
    wait_until(lambda: cluster.run_sync(lambda: set(ids) <= set(cluster.engine.image.brokers)))


def write_as_leader(
    cluster: Cluster, topic: str, partition: int, new: PartitionState, version: int
) -> int | None:
    """The foreign leader's write, through a zkbroker session (any broker's: the write is
    not the broker's own, it only needs a session)."""
    store = cluster.engine.brokers[0].store
    return cluster.call(store.update_leader_and_isr(topic, partition, new, version))


def notify(cluster: Cluster, partitions: list[tuple[str, int]]) -> str:
    store = cluster.engine.brokers[0].store
    return cluster.call(store.create_isr_change_notification(partitions))


@pytest.mark.parametrize("release", [(2, 6), (3, 9)], ids=["2.6", "3.9"])
def test_a_leaders_isr_write_reaches_the_controller(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient, release: tuple[int, int]
) -> None:
    cluster = cluster_factory(kafka_version=release)
    controller = controller_of(cluster)
    register_foreign_brokers(cluster, kazoo, 7, 8)
    create_topic(cluster, "lw", {0: [7, 8]})
    before, v0 = znode_state(kazoo, "lw", 0)
    assert (before.leader, before.isr) == (7, (7, 8))
    assert controller_state(cluster, controller, ("lw", 0)) == (before, v0)

    # The leader shrinks its ISR: same leader epoch, the controller epoch it was made leader in.
    shrunk = PartitionState(7, before.leader_epoch, (7,), before.controller_epoch)
    assert write_as_leader(cluster, "lw", 0, shrunk, v0) == v0 + 1
    assert json.loads(kazoo.get("/brokers/topics/lw/partitions/0/state")[0]) == {
        "controller_epoch": before.controller_epoch,
        "leader": 7,
        "version": 1,
        "leader_epoch": before.leader_epoch,
        "isr": [7],
    }
    # A stale version is refused and changes nothing; the same state again at the stale
    # version is the write that already happened (Kafka's checkLeaderAndIsrZkData).
    other = PartitionState(7, before.leader_epoch, (7, 8, 0), before.controller_epoch)
    assert write_as_leader(cluster, "lw", 0, other, v0) is None
    assert write_as_leader(cluster, "lw", 0, shrunk, v0) == v0 + 1
    assert write_as_leader(cluster, "lw", 9, shrunk, 0) is None  # no such partition
    assert znode_state(kazoo, "lw", 0) == (shrunk, v0 + 1)
    # The image follows the znode by its watch; the controller, until the notification,
    # still holds what it wrote itself.
    wait_until(lambda: cluster.engine.image.topics["lw"].partitions[0].isr == (7,))
    assert controller_state(cluster, controller, ("lw", 0)) == (before, v0)

    with capture_events() as events:
        path = notify(cluster, [("lw", 0)])
        assert path.startswith(f"{NOTIFICATIONS}/isr_change_")
        wait_until(lambda: no_notifications(kazoo))
        wait_until(lambda: controller_state(cluster, controller, ("lw", 0)) == (shrunk, v0 + 1))
    passes = [e for e in events if e["event"] == "controller.isr_change_notification"]
    assert [(e["notifications"], e["partitions"], e["sample"]) for e in passes] == [
        (1, 1, ["lw-0"])
    ]
    assert any(
        e["event"] == "controller.event" and e["event_name"] == "IsrChangeNotification"
        for e in events
    )

    if release >= (3, 3):
        # AlterPartition works from the refreshed partition epoch (a stale one would have
        # answered NOT_CONTROLLER: a partition epoch above the controller's).
        with controller_client(cluster) as client:
            answer = only(
                send(client, 1, 7, epoch_of(kazoo, 7), "lw", [7, 8], before.leader_epoch, v0 + 1)
            )
        assert (answer.error_code, answer.isr, answer.partition_epoch) == (ec.NONE, [7, 8], v0 + 2)
        assert controller_state(cluster, controller, ("lw", 0))[1] == v0 + 2
        wait_until(lambda: cluster.engine.image.topics["lw"].partitions[0].isr == (7, 8))


@pytest.mark.kafka_version("2.6")
def test_an_isr_notification_completes_a_reassignment(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    cluster = cluster_factory()
    controller_of(cluster)
    register_foreign_brokers(cluster, kazoo, 7, 8)
    create_topic(cluster, "rn", {0: [7]})
    with controller_client(cluster) as client:
        assert alter(client, "rn", {0: [7, 8]}).error_code == ec.NONE
    wait_until(lambda: topic_znode(kazoo, "rn").get("adding_replicas") == {"0": [8]})
    # Phase A stays until the leader, 7, adds the new replica to the ISR and says so.
    current, version = znode_state(kazoo, "rn", 0)
    grown = PartitionState(7, current.leader_epoch, (7, 8), current.controller_epoch)
    assert write_as_leader(cluster, "rn", 0, grown, version) == version + 1
    assert topic_znode(kazoo, "rn").get("adding_replicas") == {"0": [8]}
    notify(cluster, [("rn", 0)])
    # Phase B: no replica left to add (the replicas were [7, 8] from phase A on).
    wait_until(lambda: not topic_znode(kazoo, "rn").get("adding_replicas"))
    assert topic_znode(kazoo, "rn")["partitions"] == {"0": [7, 8]}
    assert state(kazoo, "rn", 0)["isr"] == [7, 8]
    wait_until(lambda: no_notifications(kazoo))


def test_notifications_go_in_bounded_passes(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(isr_change_notifications, "MAX_NOTIFICATIONS_PER_PASS", 4)
    monkeypatch.setattr(isr_change_notifications, "REFRESH_CHUNK", 2)
    cluster = cluster_factory(kafka_version="2.6")
    controller = controller_of(cluster)
    register_foreign_brokers(cluster, kazoo, 7, 8)
    create_topic(cluster, "many", {p: [7, 8] for p in range(5)})
    written = {}
    for p in range(5):
        current, version = znode_state(kazoo, "many", p)
        new = PartitionState(7, current.leader_epoch, (7,), current.controller_epoch)
        assert write_as_leader(cluster, "many", p, new, version) == version + 1
        written[("many", p)] = (new, version + 1)
    body = json.dumps(
        {"version": 1, "partitions": [{"topic": "many", "partition": p} for p in range(5)]}
    ).encode()
    odd = {
        3: b'{"version":1}',  # unreadable: no "partitions"
        6: b'{"version":1,"partitions":[{"topic":"gone","partition":0}]}',  # unknown topic
    }
    with capture_events() as events:
        tx = kazoo.transaction()  # ten at once
        for i in range(10):
            tx.create(f"{NOTIFICATIONS}/isr_change_", odd.get(i, body), sequence=True)
        assert all(isinstance(r, str) for r in tx.commit())
        wait_until(lambda: no_notifications(kazoo))
        wait_until(
            lambda: all(controller_state(cluster, controller, tp) == w for tp, w in written.items())
        )
    passes = [
        e["notifications"] for e in events if e["event"] == "controller.isr_change_notification"
    ]
    assert max(passes) <= 4 and sum(passes) == 10
    unreadable = [
        e for e in events if e["event"] == "controller.isr_change_notification_unreadable"
    ]
    assert len(unreadable) == 1


def test_failover_deletes_leftover_notifications_unread(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    kazoo.ensure_path(NOTIFICATIONS)
    for _ in range(3):
        kazoo.create(
            f"{NOTIFICATIONS}/isr_change_", b'{"version":1,"partitions":[]}', sequence=True
        )
    kazoo.create(f"{NOTIFICATIONS}/isr_change_", b"not json", sequence=True)
    cluster = cluster_factory(kafka_version="3.9", brokers=1)
    controller_of(cluster)
    wait_until(lambda: no_notifications(kazoo))
