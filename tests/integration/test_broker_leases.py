"""KIP-631 BrokerRegistration/BrokerHeartbeat as ZooKeeper leases, end to end: a test process
registers broker 7 over TCP, heartbeats, shows up in Metadata (confluent-kafka), hosts and
leads a replica, then stops heartbeating and is removed from /brokers/ids within the session
timeout, after which leadership moves. Every error code of the two APIs is checked, and the
znodes are read back with kazoo."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
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
from zkbroker.broker.protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from zkbroker.broker.protocol.messages.broker_registration import (
    BrokerRegistrationRequest,
    Feature,
    Listener,
)
from zkbroker.broker.protocol.messages.find_coordinator import FindCoordinatorRequest
from zkbroker.broker.rules.jvm_collections import java_abs_hash
from zkbroker.broker.toolkit.wire import WireClient

TIMEOUT_MS = 1500
# Nothing listens there: broker 7 exists only as a registration.
FAKE_PORT = 1


@pytest.fixture
def lease_cluster(cluster_factory: Callable[..., Cluster]) -> Cluster:
    return cluster_factory(broker_ids=(0, 1), broker_session_timeout_ms=TIMEOUT_MS)


def cluster_id(cluster: Cluster) -> str:
    value = wait_until(lambda: cluster.engine.image.cluster_id)
    assert isinstance(value, str)
    return value


def registration(
    cluster: Cluster,
    broker_id: int = 7,
    incarnation: uuid.UUID | None = None,
    **overrides: Any,
) -> BrokerRegistrationRequest:
    fields: dict[str, Any] = {
        "broker_id": broker_id,
        "cluster_id": cluster_id(cluster),
        "incarnation_id": incarnation or uuid.uuid4(),
        "listeners": [
            Listener(name="PLAINTEXT", host="127.0.0.1", port=FAKE_PORT, security_protocol=0)
        ],
        "features": [
            Feature(name="metadata.version", min_supported_version=1, max_supported_version=7)
        ],
        "rack": "r7",
    }
    fields.update(overrides)
    return BrokerRegistrationRequest(**fields)


def register(client: WireClient, request: BrokerRegistrationRequest, version: int = 0) -> Any:
    return client.request(version, request)


def heartbeat(
    client: WireClient, broker_id: int, epoch: int, version: int = 0, **flags: Any
) -> Any:
    request = BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch, **flags)
    return client.request(version, request)


def test_registered_broker_hosts_replicas_and_is_fenced_when_it_stops_heartbeating(
    lease_cluster: Cluster, kazoo: KazooClient
) -> None:
    cluster = lease_cluster
    with controller_client(cluster) as client:
        answer = register(client, registration(cluster), version=0)
        assert answer.error_code == ec.NONE
        epoch = answer.broker_epoch
        # The znode: the release's format (2.8: v5), the broker epoch is its czxid.
        data, stat = kazoo.get("/brokers/ids/7")
        assert stat.czxid == epoch and stat.version == 1
        doc = json.loads(data)
        assert doc["version"] == 5
        assert doc["endpoints"] == [f"PLAINTEXT://127.0.0.1:{FAKE_PORT}"]
        assert doc["rack"] == "r7"
        assert doc["features"] == {"metadata.version": {"min_version": 1, "max_version": 7}}
        lease, lease_stat = kazoo.get("/zkbroker/leases/7")
        assert lease_stat.czxid == epoch
        assert json.loads(lease)["version"] == 1

        # Heartbeats keep it for longer than the session timeout.
        until = time.monotonic() + 2 * TIMEOUT_MS / 1000
        while time.monotonic() < until:
            beat = heartbeat(client, 7, epoch)
            assert (beat.error_code, beat.is_caught_up, beat.is_fenced, beat.should_shut_down) == (
                ec.NONE,
                True,
                False,
                False,
            )
            time.sleep(0.3)
        assert kazoo.exists("/brokers/ids/7") is not None

        # Listed in Metadata with its listener (a real client).
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        brokers = admin.list_topics(timeout=10).brokers
        assert {b.id: (b.host, b.port) for b in brokers.values()}[7] == ("127.0.0.1", FAKE_PORT)

        # It can host, and lead, a replica.
        create_topic(cluster, "leased", {0: [7, 0]})
        assert state(kazoo, "leased", 0)["leader"] == 7
        assert state(kazoo, "leased", 0)["isr"] == [7, 0]
        heartbeat(client, 7, epoch)

        # Silence: within the session timeout the registration goes, and leadership moves.
        stopped = time.monotonic()
        wait_until(lambda: kazoo.exists("/brokers/ids/7") is None, timeout=10)
        assert time.monotonic() - stopped < TIMEOUT_MS / 1000 + 1.5
        assert kazoo.exists("/zkbroker/leases/7") is None
        wait_until(lambda: state(kazoo, "leased", 0)["leader"] == 0)
        assert state(kazoo, "leased", 0)["isr"] == [0]
        # The lease is gone: its epoch is stale now.
        assert heartbeat(client, 7, epoch).error_code == ec.STALE_BROKER_EPOCH


@pytest.mark.kafka_version("2.8")
def test_registration_and_heartbeat_errors(lease_cluster: Cluster, kazoo: KazooClient) -> None:
    cluster = lease_cluster
    incarnation = uuid.uuid4()
    with controller_client(cluster) as client:
        wrong_cluster = registration(cluster, cluster_id="not-this-cluster")
        assert register(client, wrong_cluster).error_code == ec.INCONSISTENT_CLUSTER_ID
        # Broker 0 is a running zkbroker broker (its ephemeral /brokers/ids/0).
        assert register(client, registration(cluster, 0)).error_code == (
            ec.DUPLICATE_BROKER_REGISTRATION
        )
        # 2.8 has no INVALID_REGISTRATION: a registration without listeners is invalid.
        assert register(client, registration(cluster, 8, listeners=[])).error_code == (
            ec.INVALID_REQUEST
        )
        no_host = [Listener(name="PLAINTEXT", host="", port=9, security_protocol=0)]
        assert register(client, registration(cluster, 8, listeners=no_host)).error_code == (
            ec.INVALID_REQUEST
        )
        assert kazoo.exists("/brokers/ids/8") is None

        first = register(client, registration(cluster, 7, incarnation))
        assert first.error_code == ec.NONE
        # Another incarnation while the lease lives: a duplicate.
        assert register(client, registration(cluster, 7)).error_code == (
            ec.DUPLICATE_BROKER_REGISTRATION
        )
        # The same incarnation again: the lease is refreshed, the epoch stays.
        again = register(
            client,
            registration(
                cluster,
                7,
                incarnation,
                listeners=[
                    Listener(
                        name="PLAINTEXT", host="127.0.0.2", port=FAKE_PORT, security_protocol=0
                    )
                ],
            ),
            version=0,
        )
        assert (again.error_code, again.broker_epoch) == (ec.NONE, first.broker_epoch)
        assert json.loads(kazoo.get("/brokers/ids/7")[0])["endpoints"] == [
            f"PLAINTEXT://127.0.0.2:{FAKE_PORT}"
        ]

        assert heartbeat(client, 7, first.broker_epoch + 1).error_code == ec.STALE_BROKER_EPOCH
        assert heartbeat(client, 9, first.broker_epoch).error_code == ec.STALE_BROKER_EPOCH
        fenced = heartbeat(client, 7, first.broker_epoch, want_fence=True)
        assert (fenced.error_code, fenced.is_fenced) == (ec.NONE, True)

    with other_client(cluster) as client:
        assert register(client, registration(cluster, 7, incarnation)).error_code == (
            ec.NOT_CONTROLLER
        )
        assert heartbeat(client, 7, first.broker_epoch).error_code == ec.NOT_CONTROLLER

    with controller_client(cluster) as client:
        # WantShutDown: ShouldShutDown, and the registration goes at once.
        bye = heartbeat(client, 7, first.broker_epoch, want_shut_down=True)
        assert (bye.error_code, bye.should_shut_down) == (ec.NONE, True)
        assert kazoo.exists("/brokers/ids/7") is None
        assert kazoo.exists("/zkbroker/leases/7") is None
        assert heartbeat(client, 7, first.broker_epoch).error_code == ec.STALE_BROKER_EPOCH


def test_lease_survives_controller_failover(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    cluster = cluster_factory(broker_ids=(0, 1, 2), broker_session_timeout_ms=4000)
    with controller_client(cluster) as client:
        answer = register(client, registration(cluster))
    assert answer.error_code == ec.NONE
    old = cluster.engine.controller_id
    cluster.stop_broker(old)
    wait_until(lambda: cluster.engine.controller_id not in (-1, old))
    # The new controller resumed the lease: same epoch, and heartbeats keep it.
    with controller_client(cluster) as client:
        beat = wait_until(
            lambda: (r := heartbeat(client, 7, answer.broker_epoch)).error_code == ec.NONE and r
        )
        assert beat.is_caught_up
    assert kazoo.get("/brokers/ids/7")[1].czxid == answer.broker_epoch
    # ... and expires it when they stop.
    wait_until(lambda: kazoo.exists("/brokers/ids/7") is None, timeout=15)


def test_latest_versions_on_kafka_3_9(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    cluster = cluster_factory(broker_ids=(0,), kafka_version=(3, 9))
    with controller_client(cluster) as client:
        bad = registration(cluster, listeners=[])
        assert register(client, bad, version=4).error_code == ec.INVALID_REGISTRATION
        answer = register(client, registration(cluster, previous_broker_epoch=5), version=4)
        assert answer.error_code == ec.NONE
        assert kazoo.get("/brokers/ids/7")[1].czxid == answer.broker_epoch
        beat = heartbeat(client, 7, answer.broker_epoch, version=1, offline_log_dirs=[])
        assert (beat.error_code, beat.is_caught_up, beat.is_fenced) == (ec.NONE, True, False)
        bye = heartbeat(client, 7, answer.broker_epoch, version=1, want_shut_down=True)
        assert (bye.error_code, bye.should_shut_down) == (ec.NONE, True)
        assert kazoo.exists("/brokers/ids/7") is None


def _partition(group: str) -> int:
    return java_abs_hash(group) % 50


def _offsets_leaders(cluster: Cluster) -> dict[int, int] | None:
    """Each ``__consumer_offsets`` partition's leader, once every one has a live leader."""
    topic = cluster.engine.image.topics.get("__consumer_offsets")
    if topic is None or len(topic.partitions) < 50:
        return None
    leaders = {p: state.leader for p, state in topic.partitions.items()}
    return leaders if all(b in cluster.engine.image.brokers for b in leaders.values()) else None


def test_group_coordinator_without_an_endpoint_on_the_listener_is_not_available(
    lease_cluster: Cluster,
) -> None:
    """FindCoordinator GROUP answers COORDINATOR_NOT_AVAILABLE when the group's coordinator
    (here broker 7, registered over KIP-631 with only an EXTERNAL listener) has no endpoint
    on the listener the request came in on."""
    with controller_client(lease_cluster) as client:
        request = registration(
            lease_cluster,
            listeners=[
                Listener(name="EXTERNAL", host="127.0.0.1", port=FAKE_PORT, security_protocol=0)
            ],
            # Brokers 0 and 1 have no rack: a rack here would fail the offsets topic's
            # rack-aware placement, as in Kafka.
            rack=None,
        )
        response = register(client, request)
        assert response.error_code == ec.NONE
        heartbeat(client, 7, response.broker_epoch)
        wait_until(lambda: 7 in lease_cluster.engine.image.brokers)
        # The first lookup creates __consumer_offsets (COORDINATOR_NOT_AVAILABLE meanwhile).
        client.request(3, FindCoordinatorRequest(key="any", key_type=0))
        leaders = wait_until(lambda: _offsets_leaders(lease_cluster))
        group = next(g for g in (f"g{i}" for i in range(1000)) if leaders[_partition(g)] == 7)
        other = next(g for g in (f"g{i}" for i in range(1000)) if leaders[_partition(g)] == 0)
        answers = [
            client.request(3, FindCoordinatorRequest(key=g, key_type=0)) for g in (group, other)
        ]
    assert [(a.error_code, a.node_id, a.port) for a in answers] == [
        (ec.COORDINATOR_NOT_AVAILABLE, -1, -1),
        (ec.NONE, 0, lease_cluster.engine.brokers[0].port),
    ]
