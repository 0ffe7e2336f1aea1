"""Controller mutation quotas (KIP-599) and the authorization of the quota APIs, over TCP against
a real ZooKeeper.

A `controller_mutation_rate` set with AlterClientQuotas for a client id: CreateTopics v6+,
DeleteTopics v5+ and CreatePartitions v3+ are strict (a mutation accepted while tokens are
left never throttles; the next one, met with the bucket in deficit, is refused with
THROTTLING_QUOTA_EXCEEDED and a null message, with the throttle time), older versions are
permissive (accepted, throttled). kafka-python 3 speaks the strict versions, librdkafka the
permissive ones. With an authorizer, DescribeClientQuotas needs DESCRIBE_CONFIGS and
AlterClientQuotas ALTER_CONFIGS on the cluster (KafkaApis), else CLUSTER_AUTHORIZATION_FAILED.

The rate is 1 mutation per second with a burst of 2 (2 windows of 1 s), and each burst
creates 20 partitions: the bucket is 18 tokens in deficit, 18 s to refill, far more than a
test needs to send its next request, so no assertion depends on timing.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka.protocol.admin import AlterClientQuotasRequest as KpAlter
from kafka.protocol.admin import DescribeClientQuotasRequest as KpDescribe
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)
from zkbroker.broker.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from zkbroker.broker.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from zkbroker.broker.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from zkbroker.broker.security.cluster_security import Security
from zkbroker.broker.toolkit.wire import WireClient

WINDOWS = (("controller.quota.window.num", "2"), ("controller.quota.window.size.seconds", "1"))
PARTITIONS = 20
THROTTLED = error_codes.THROTTLING_QUOTA_EXCEEDED


@pytest.fixture
def cluster(cluster_factory: Callable[..., Cluster]) -> Cluster:
    return cluster_factory(brokers=1, kafka_version="3.9", broker_configs=WINDOWS)


def _client_id() -> str:
    return f"mq-{uuid.uuid4().hex[:8]}"


def _limit(cluster: Cluster, client_id: str, rate: float = 1.0) -> None:
    """controller_mutation_rate for `client_id`, once every broker applies it."""
    with WireClient.to(cluster.bootstrap_servers) as client:
        answer = client.request(
            1,
            AlterClientQuotasRequest(
                entries=[
                    EntryData(
                        entity=[EntityData(entity_type="client-id", entity_name=client_id)],
                        ops=[OpData(key="controller_mutation_rate", value=rate, remove=False)],
                    )
                ]
            ),
        )
    assert answer.entries[0].error_code == error_codes.NONE
    wait_until(lambda: f"clients/{client_id}" in cluster.engine.image.client_quotas.entities)


def _wire(cluster: Cluster, client_id: str) -> WireClient:
    """A new connection: a throttled answer mutes its connection, never the next one's."""
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    return WireClient(host, int(port), client_id=client_id)


def _create(cluster: Cluster, client_id: str, version: int, *names: str) -> Any:
    with _wire(cluster, client_id) as client:
        return client.request(
            version,
            CreateTopicsRequest(
                topics=[
                    CreatableTopic(name=n, num_partitions=PARTITIONS, replication_factor=1)
                    for n in names
                ],
                timeout_ms=30_000,
            ),
        )


def _codes(answer: Any) -> list[tuple[int, str | None]]:
    return [(t.error_code, t.error_message) for t in answer.topics]


def test_create_topics_v6_is_strict(cluster: Cluster) -> None:
    client_id = _client_id()
    _limit(cluster, client_id)
    # The bucket holds 2 tokens: the topic is accepted (20 partitions, 18 in deficit) and,
    # strict, not throttled; the next one, met with the deficit, is refused and not created.
    first = _create(cluster, client_id, 6, "strict-a")
    assert (_codes(first), first.throttle_time_ms) == ([(0, None)], 0)
    second = _create(cluster, client_id, 7, "strict-b", "strict-c")
    assert _codes(second) == [(THROTTLED, None), (THROTTLED, None)]
    assert second.topics[0].num_partitions == -1 and second.topics[0].configs == []
    assert second.throttle_time_ms > 0
    assert "strict-a" in cluster.engine.image.topics
    assert "strict-b" not in cluster.engine.image.topics
    # validate_only is never charged, and other clients are not limited.
    with _wire(cluster, client_id) as client:
        dry = client.request(
            7,
            CreateTopicsRequest(
                topics=[CreatableTopic(name="strict-d", num_partitions=1, replication_factor=1)],
                timeout_ms=30_000,
                validate_only=True,
            ),
        )
    assert _codes(dry) == [(0, None)]
    other = _create(cluster, _client_id(), 7, "strict-e")
    assert (_codes(other), other.throttle_time_ms) == ([(0, None)], 0)


def test_create_topics_v5_is_permissive(cluster: Cluster) -> None:
    client_id = _client_id()
    _limit(cluster, client_id)
    first = _create(cluster, client_id, 5, "perm-a", "perm-b")
    assert _codes(first) == [(0, None), (0, None)]
    assert first.throttle_time_ms > 0
    second = _create(cluster, client_id, 5, "perm-c")
    assert _codes(second) == [(0, None)]
    assert second.throttle_time_ms > 0


def test_kafka_python_admin_is_refused_at_its_strict_version(cluster: Cluster) -> None:
    client_id = _client_id()
    _limit(cluster, client_id)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id=client_id)
    try:
        spec = {"num_partitions": PARTITIONS, "replication_factor": 1}
        first = admin.create_topics({"kp-a": spec}, timeout_ms=30_000, raise_errors=False)
        second = admin.create_topics({"kp-b": spec}, timeout_ms=30_000, raise_errors=False)
    finally:
        admin.close()
    assert [(t["name"], t["error_code"]) for t in first["topics"]] == [("kp-a", 0)]
    assert [(t["name"], t["error_code"], t["error_message"]) for t in second["topics"]] == [
        ("kp-b", THROTTLED, None)
    ]


def test_kafka_python_pinned_to_26_is_throttled_not_refused(cluster: Cluster) -> None:
    """kafka-python told the broker is 2.6 sends CreateTopics v5: permissive, so a topic after
    the one that exhausted the bucket is created all the same (v6+ would refuse it)."""
    client_id = _client_id()
    _limit(cluster, client_id)
    admin = KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap_servers, client_id=client_id, api_version=(2, 6)
    )
    try:
        spec = {"num_partitions": PARTITIONS, "replication_factor": 1}
        answer = admin.create_topics(
            {"kp26-a": spec, "kp26-b": spec}, timeout_ms=30_000, raise_errors=False
        )
    finally:
        admin.close()
    assert sorted((t["name"], t["error_code"]) for t in answer["topics"]) == [
        ("kp26-a", 0),
        ("kp26-b", 0),
    ]


def test_confluent_kafka_admin_is_throttled_not_refused(cluster: Cluster) -> None:
    """librdkafka sends CreateTopics up to v4: permissive, every topic created, the throttle
    reported to the client (its statistics show it, and it waits that long before its next
    request to the broker)."""
    client_id = _client_id()
    _limit(cluster, client_id)
    stats: list[dict[str, Any]] = []
    conf: dict[str, Any] = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "client.id": client_id,
        "statistics.interval.ms": 100,
        "stats_cb": lambda text: stats.append(json.loads(text)),
    }
    admin = AdminClient(conf)
    # Both topics are created although the first one already exhausts the bucket.
    futures = admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in ("rdk-a", "rdk-b")])
    for future in futures.values():
        future.result(timeout=30)

    def throttled() -> bool:
        admin.poll(0.1)
        return any(
            b.get("throttle", {}).get("max", 0) > 0
            for s in stats
            for b in s.get("brokers", {}).values()
        )

    wait_until(throttled)
    assert {"rdk-a", "rdk-b"} <= set(cluster.engine.image.topics)


def test_release_26_has_no_mutation_quota(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    """KIP-599 came with 2.7: a 2.6 broker ignores a controller_mutation_rate that
    `kafka-configs --zookeeper` wrote (its AlterClientQuotas refuses the key)."""
    cluster = cluster_factory(brokers=1, kafka_version="2.6")
    client_id = _client_id()
    kazoo.create(
        f"/config/clients/{client_id}",
        json.dumps({"version": 1, "config": {"controller_mutation_rate": "1.0"}}).encode(),
        makepath=True,
    )
    kazoo.create(
        "/config/changes/config_change_",
        json.dumps({"version": 2, "entity_path": f"clients/{client_id}"}).encode(),
        sequence=True,
    )
    wait_until(lambda: f"clients/{client_id}" in cluster.engine.image.client_quotas.entities)
    # 40 partitions: past the default burst of 11 (11 windows of 1 s at 1/s).
    answer = _create(cluster, client_id, 5, "old-a", "old-b")
    assert (_codes(answer), answer.throttle_time_ms) == ([(0, None), (0, None)], 0)


def _delete(cluster: Cluster, client_id: str, version: int, *names: str) -> Any:
    with _wire(cluster, client_id) as client:
        request = (
            DeleteTopicsRequest(topics=[DeleteTopicState(name=n) for n in names], timeout_ms=30_000)
            if version >= 6
            else DeleteTopicsRequest(topic_names=list(names), timeout_ms=30_000)
        )
        return client.request(version, request)


def test_delete_topics_strict_from_v5_permissive_before(cluster: Cluster) -> None:
    unlimited = _client_id()
    _create(cluster, unlimited, 7, "del-a", "del-b", "del-c", "del-d")
    strict, permissive = _client_id(), _client_id()
    _limit(cluster, strict)
    _limit(cluster, permissive)

    answer = _delete(cluster, strict, 5, "del-a", "del-b")
    assert [(r.name, r.error_code, r.error_message) for r in answer.responses] == [
        ("del-a", 0, None),
        ("del-b", THROTTLED, None),
    ]
    assert answer.throttle_time_ms > 0
    assert "del-b" in cluster.engine.image.topics

    answer = _delete(cluster, permissive, 4, "del-c", "del-d")
    assert [(r.name, r.error_code) for r in answer.responses] == [("del-c", 0), ("del-d", 0)]
    assert answer.throttle_time_ms > 0


def _grow(cluster: Cluster, client_id: str, version: int, *names: str) -> Any:
    with _wire(cluster, client_id) as client:
        return client.request(
            version,
            CreatePartitionsRequest(
                topics=[
                    CreatePartitionsTopic(name=n, count=PARTITIONS + 1, assignments=None)
                    for n in names
                ],
                timeout_ms=30_000,
            ),
        )


def test_create_partitions_strict_from_v3_permissive_before(cluster: Cluster) -> None:
    unlimited = _client_id()
    with _wire(cluster, unlimited) as client:
        client.request(
            7,
            CreateTopicsRequest(
                topics=[
                    CreatableTopic(name=n, num_partitions=1, replication_factor=1)
                    for n in ("grow-a", "grow-b", "grow-c", "grow-d")
                ],
                timeout_ms=30_000,
            ),
        )
    strict, permissive = _client_id(), _client_id()
    _limit(cluster, strict)
    _limit(cluster, permissive)

    # Each topic grows by 20 partitions (1 -> 21).
    answer = _grow(cluster, strict, 3, "grow-a", "grow-b")
    assert [(r.name, r.error_code, r.error_message) for r in answer.results] == [
        ("grow-a", 0, None),
        ("grow-b", THROTTLED, None),
    ]
    assert answer.throttle_time_ms > 0
    assert len(cluster.engine.image.topics["grow-b"].assignment) == 1

    answer = _grow(cluster, permissive, 2, "grow-c", "grow-d")
    assert [(r.name, r.error_code) for r in answer.results] == [("grow-c", 0), ("grow-d", 0)]
    assert answer.throttle_time_ms > 0


# ---- authorization of DescribeClientQuotas / AlterClientQuotas --------------------------------

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
AUTHORIZER = ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")


@pytest.fixture
def secured(cluster_factory: Callable[..., Cluster]) -> Cluster:
    return cluster_factory(
        brokers=1,
        kafka_version="3.9",
        security=Security(protocol="SASL_PLAINTEXT", mechanisms=("PLAIN",), users=USERS),
        broker_configs=(AUTHORIZER, ("super.users", "User:admin")),
    )


def _kp_admin(cluster: Cluster, user: str) -> KafkaAdminClient:
    assert cluster.security is not None
    return KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap_servers,
        **cluster.security.client_config("kafka-python", user, "PLAIN"),
    )


def _send(admin: KafkaAdminClient, request: Any) -> Any:
    """kafka-python's own codec of the message, over its authenticated connection."""
    return admin._manager.run(admin._manager.send, request)


def _describe_request() -> Any:
    return KpDescribe[1](
        components=[KpDescribe.ComponentData(entity_type="client-id", match_type=2, match=None)],
        strict=False,
    )


def _alter_request(client_id: str) -> Any:
    return KpAlter[1](
        entries=[
            KpAlter.EntryData(
                entity=[
                    KpAlter.EntryData.EntityData(entity_type="client-id", entity_name=client_id)
                ],
                ops=[KpAlter.EntryData.OpData(key="request_percentage", value=50.0, remove=False)],
            )
        ],
        validate_only=False,
    )


def _allow_cluster(admin: KafkaAdminClient, user: str, operation: str) -> None:
    from kafka.admin import (
        ACL,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
    )
    from kafka.admin import ResourceType as KpResourceType

    acl = ACL(
        principal=f"User:{user}",
        host="*",
        operation=ACLOperation[operation],
        permission_type=ACLPermissionType.ALLOW,
        resource_pattern=ResourcePattern(
            KpResourceType.CLUSTER, "kafka-cluster", ACLResourcePatternType.LITERAL
        ),
    )
    result = admin.create_acls([acl])
    assert not result["failed"], result


def test_quota_apis_need_cluster_config_permissions(secured: Cluster) -> None:
    alice = _kp_admin(secured, "alice")
    admin = _kp_admin(secured, "admin")
    try:
        answer = _send(alice, _describe_request())
        assert (answer.error_code, answer.error_message, answer.entries) == (
            error_codes.CLUSTER_AUTHORIZATION_FAILED,
            None,
            None,
        )
        answer = _send(alice, _alter_request("denied-app"))
        assert [
            (
                [(e.entity_type, e.entity_name) for e in x.entity],
                x.error_code,
                x.error_message,
            )
            for x in answer.entries
        ] == [([("client-id", "denied-app")], error_codes.CLUSTER_AUTHORIZATION_FAILED, None)]
        assert "clients/denied-app" not in secured.engine.image.client_quotas.entities

        # The super user may; then alice with the ACLs Kafka checks.
        answer = _send(admin, _alter_request("admin-app"))
        assert [x.error_code for x in answer.entries] == [0]
        _allow_cluster(admin, "alice", "DESCRIBE_CONFIGS")
        wait_until(lambda: _send(alice, _describe_request()).error_code == 0)
        answer = _send(alice, _alter_request("alice-app"))
        assert [x.error_code for x in answer.entries] == [error_codes.CLUSTER_AUTHORIZATION_FAILED]
        _allow_cluster(admin, "alice", "ALTER_CONFIGS")
        wait_until(lambda: _send(alice, _alter_request("alice-app")).entries[0].error_code == 0)
    finally:
        alice.close()
        admin.close()
