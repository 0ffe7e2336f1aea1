"""ACLs through real admin clients over SASL against a real ZooKeeper: Create/Describe/
DeleteAcls stored as Kafka's AclAuthorizer stores them, an ACL written by plain kazoo taking
effect, denied operations answered with Kafka's errors, super.users, SECURITY_DISABLED.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import errors as Errors
from kafka.admin import (
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KpResourceType
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.broker.security.cluster_security import Security

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


def _admin(cluster: Cluster, user: str) -> AdminClient:
    assert cluster.security is not None
    return AdminClient(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            **cluster.security.client_config("confluent", user, "PLAIN"),
        }
    )


def _wait(futures: dict[Any, Any]) -> dict[Any, Any]:
    return {k: f.result(timeout=15) for k, f in futures.items()}


def _topic_read(name: str, user: str, pattern: ResourcePatternType) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC,
        name,
        pattern,
        f"User:{user}",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )


@pytest.fixture
def kazoo_root(zk_connect: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=15)
    yield client
    client.stop()


def test_create_describe_delete_stored_as_kafka_does(
    secured: Cluster, kazoo_root: KazooClient
) -> None:
    admin = _admin(secured, "admin")
    literal = _topic_read("orders", "alice", ResourcePatternType.LITERAL)
    prefixed = _topic_read("pay-", "bob", ResourcePatternType.PREFIXED)
    group = AclBinding(
        ResourceType.GROUP,
        "g1",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    _wait(admin.create_acls([literal, prefixed, group]))

    data, _ = kazoo_root.get("/kafka-acl/Topic/orders")
    assert json.loads(data) == {
        "version": 1,
        "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}
        ],
    }
    assert kazoo_root.exists("/kafka-acl-extended/prefixed/Topic/pay-")
    changes = kazoo_root.get_children("/kafka-acl-changes")
    assert {kazoo_root.get(f"/kafka-acl-changes/{c}")[0] for c in changes} >= {
        b"Topic:orders",
        b"Group:g1",
    }
    extended = kazoo_root.get_children("/kafka-acl-extended-changes")
    assert json.loads(kazoo_root.get(f"/kafka-acl-extended-changes/{extended[0]}")[0]) == {
        "version": 1,
        "resourceType": "TOPIC",
        "name": "pay-",
        "patternType": "PREFIXED",
    }

    any_topic = AclBindingFilter(
        ResourceType.TOPIC,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    described = admin.describe_acls(any_topic).result(timeout=15)
    assert set(described) == {literal, prefixed}
    # MATCH: every pattern that covers the name "pay-1".
    match = AclBindingFilter(
        ResourceType.TOPIC,
        "pay-1",
        ResourcePatternType.MATCH,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert admin.describe_acls(match).result(timeout=15) == [prefixed]

    deleted = _wait(admin.delete_acls([any_topic]))
    assert set(deleted[any_topic]) == {literal, prefixed}
    assert kazoo_root.exists("/kafka-acl/Topic/orders") is None
    assert kazoo_root.exists("/kafka-acl/Group/g1") is not None


def test_invalid_creations_answer_kafkas_errors(secured: Cluster) -> None:
    admin = _admin(secured, "admin")
    bad_cluster = AclBinding(
        ResourceType.BROKER,
        "other",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.ALTER,
        AclPermissionType.ALLOW,
    )
    slash = _topic_read("a/b", "alice", ResourcePatternType.LITERAL)
    futures = admin.create_acls([bad_cluster, slash])
    with pytest.raises(KafkaException) as e:
        futures[bad_cluster].result(timeout=15)
    assert "The only valid name for the CLUSTER resource is kafka-cluster" in str(e.value)
    with pytest.raises(KafkaException) as e:
        futures[slash].result(timeout=15)
    assert "Failed to create ACL" in str(e.value)


def test_denied_without_acls_and_allowed_with_kazoo_written_acl(
    secured: Cluster, kazoo_root: KazooClient
) -> None:
    admin = _admin(secured, "admin")
    _wait(admin.create_topics([NewTopic("orders", 1, 1)]))
    alice = _admin(secured, "alice")
    # No ACL: alice sees no topic, cannot create one, cannot manage ACLs.
    assert "orders" not in alice.list_topics(timeout=15).topics
    with pytest.raises(KafkaException) as e:
        alice.create_topics([NewTopic("mine", 1, 1)])["mine"].result(timeout=15)
    assert e.value.args[0].name() == "TOPIC_AUTHORIZATION_FAILED"
    # kafka-python raises DescribeAcls' top-level error (librdkafka reports an empty list).
    assert secured.security is not None
    alice_kp = KafkaAdminClient(
        bootstrap_servers=secured.bootstrap_servers,
        **secured.security.client_config("kafka-python", "alice", "PLAIN"),
    )
    try:
        with pytest.raises(Errors.ClusterAuthorizationFailedError):
            alice_kp.describe_acls(
                ACLFilter(
                    principal=None,
                    host=None,
                    operation=ACLOperation.ANY,
                    permission_type=ACLPermissionType.ANY,
                    resource_pattern=ResourcePatternFilter(
                        KpResourceType.ANY, None, ACLResourcePatternType.ANY
                    ),
                )
            )
    finally:
        alice_kp.close()

    # An ACL written in Kafka's format by plain kazoo, with its change notification.
    kazoo_root.create(
        "/kafka-acl/Topic/orders",
        json.dumps(
            {
                "version": 1,
                "acls": [
                    {
                        "principal": "User:alice",
                        "permissionType": "Allow",
                        "operation": "Describe",
                        "host": "*",
                    }
                ],
            }
        ).encode(),
        makepath=True,
    )
    kazoo_root.create("/kafka-acl-changes/acl_changes_", b"Topic:orders", sequence=True)
    wait_until(lambda: "orders" in alice.list_topics(timeout=15).topics)


def test_without_authorizer_acl_apis_are_security_disabled(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(brokers=1, kafka_version="3.9")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    binding = _topic_read("t", "alice", ResourcePatternType.LITERAL)
    with pytest.raises(KafkaException) as e:
        admin.create_acls([binding])[binding].result(timeout=15)
    assert e.value.args[0].name() == "SECURITY_DISABLED"
    assert "No Authorizer is configured." in str(e.value)


def test_configs_groups_and_cluster_operations_follow_acls(secured: Cluster) -> None:
    from confluent_kafka.admin import ConfigResource

    admin = _admin(secured, "admin")
    _wait(admin.create_topics([NewTopic("orders", 1, 1)]))
    alice = _admin(secured, "alice")
    resource = ConfigResource(ConfigResource.Type.TOPIC, "orders")
    with pytest.raises(KafkaException) as e:
        alice.describe_configs([resource])[resource].result(timeout=15)
    assert e.value.args[0].name() == "TOPIC_AUTHORIZATION_FAILED"
    # The super user is allowed everything without any ACL.
    assert admin.describe_configs([resource])[resource].result(timeout=15)
    broker = ConfigResource(ConfigResource.Type.BROKER, "0")
    described = admin.describe_configs([broker])[broker].result(timeout=15)
    assert described["authorizer.class.name"].value == "kafka.security.authorizer.AclAuthorizer"
    # Not a KafkaConfig key: an original Kafka lists as sensitive (no value), as here.
    assert described["super.users"].is_sensitive and described["super.users"].value is None
    with pytest.raises(KafkaException) as e:
        alice.describe_configs([broker])[broker].result(timeout=15)
    assert e.value.args[0].name() == "CLUSTER_AUTHORIZATION_FAILED"
    with pytest.raises(KafkaException) as e:
        alice.delete_consumer_groups(["g1"])["g1"].result(timeout=15)
    assert e.value.args[0].name() == "GROUP_AUTHORIZATION_FAILED"

    # DescribeConfigs is implied by AlterConfigs; ALTER implies DESCRIBE.
    _wait(
        admin.create_acls(
            [
                AclBinding(
                    ResourceType.TOPIC,
                    "ord",
                    ResourcePatternType.PREFIXED,
                    "User:alice",
                    "*",
                    AclOperation.ALTER_CONFIGS,
                    AclPermissionType.ALLOW,
                ),
                AclBinding(
                    ResourceType.BROKER,
                    "kafka-cluster",
                    ResourcePatternType.LITERAL,
                    "User:alice",
                    "*",
                    AclOperation.ALTER,
                    AclPermissionType.ALLOW,
                ),
            ]
        )
    )
    assert alice.describe_configs([resource])[resource].result(timeout=15)
    _wait(
        admin.create_acls(
            [
                AclBinding(
                    ResourceType.GROUP,
                    "g1",
                    ResourcePatternType.LITERAL,
                    "User:alice",
                    "*",
                    AclOperation.READ,
                    AclPermissionType.ALLOW,
                )
            ]
        )
    )
    group = alice.describe_consumer_groups(["g1"], include_authorized_operations=True)["g1"]
    assert set(group.result(timeout=15).authorized_operations) == {
        AclOperation.READ,
        AclOperation.DESCRIBE,
    }
    cluster = alice.describe_cluster(include_authorized_operations=True).result(timeout=15)
    assert set(cluster.authorized_operations) == {AclOperation.ALTER, AclOperation.DESCRIBE}


def test_deny_wins_over_allow(secured: Cluster) -> None:
    admin = _admin(secured, "admin")
    _wait(admin.create_topics([NewTopic("orders", 1, 1)]))
    allow = AclBinding(
        ResourceType.TOPIC,
        "*",
        ResourcePatternType.LITERAL,
        "User:*",
        "*",
        AclOperation.DESCRIBE,
        AclPermissionType.ALLOW,
    )
    deny = AclBinding(
        ResourceType.TOPIC,
        "ord",
        ResourcePatternType.PREFIXED,
        "User:bob",
        "*",
        AclOperation.DESCRIBE,
        AclPermissionType.DENY,
    )
    _wait(admin.create_acls([allow, deny]))
    assert "orders" in _admin(secured, "alice").list_topics(timeout=15).topics
    assert "orders" not in _admin(secured, "bob").list_topics(timeout=15).topics


def test_anonymous_client_cannot_act_as_a_broker(cluster_factory: Callable[..., Cluster]) -> None:
    from zkbroker.broker.protocol import error_codes
    from zkbroker.broker.protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
    from zkbroker.broker.protocol.messages.controlled_shutdown import ControlledShutdownRequest
    from zkbroker.broker.protocol.messages.create_acls import AclCreation, CreateAclsRequest
    from zkbroker.broker.toolkit.wire import WireClient

    cluster = cluster_factory(brokers=1, kafka_version="3.9", broker_configs=(AUTHORIZER,))
    with WireClient.to(cluster.bootstrap_servers) as client:
        beat = client.request(0, BrokerHeartbeatRequest(broker_id=7, broker_epoch=1))
        assert beat.error_code == error_codes.CLUSTER_AUTHORIZATION_FAILED
        down = client.request(3, ControlledShutdownRequest(broker_id=0, broker_epoch=1))
        assert down.error_code == error_codes.CLUSTER_AUTHORIZATION_FAILED
        # Creating ACLs needs ALTER on the cluster; an UNKNOWN (0) operation closes the
        # connection, as Kafka's request parsing fails.
        created = client.request(
            3,
            CreateAclsRequest(
                [
                    AclCreation(2, "t", 3, "User:x", "*", 3, 3),
                    AclCreation(2, "t", 3, "User:x", "*", 3, 3),
                ]
            ),
        )
        assert [r.error_code for r in created.results] == [
            error_codes.CLUSTER_AUTHORIZATION_FAILED
        ] * 2
        # Kafka's ClusterAuthorizationException text (test_acls_gaps.py checks it whole).
        assert (created.results[0].error_message or "").endswith(") is not authorized.")
    with WireClient.to(cluster.bootstrap_servers) as client:
        unknown_op = CreateAclsRequest([AclCreation(2, "t", 3, "User:x", "*", 0, 3)])
        client.send_raw(client.frame(30, 3, unknown_op)[1])
        assert client.is_closed_by_peer()


def test_kafka_python_acls_reach_every_broker(cluster_factory: Callable[..., Cluster]) -> None:
    from kafka.admin import ACL, ResourcePattern

    from zkbroker.broker.protocol.messages.describe_acls import DescribeAclsRequest
    from zkbroker.broker.toolkit.wire import WireClient

    cluster = cluster_factory(
        brokers=2,
        kafka_version="3.9",
        broker_configs=(AUTHORIZER, ("super.users", "User:ANONYMOUS")),
    )
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        acl = ACL(
            principal="User:alice",
            host="*",
            operation=ACLOperation.WRITE,
            permission_type=ACLPermissionType.ALLOW,
            resource_pattern=ResourcePattern(
                KpResourceType.TOPIC, "logs-", ACLResourcePatternType.PREFIXED
            ),
        )
        created = admin.create_acls([acl])
        assert created["failed"] == [] and len(created["succeeded"]) == 1
        every = ACLFilter(
            principal=None,
            host=None,
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(
                KpResourceType.ANY, None, ACLResourcePatternType.ANY
            ),
        )
        found, _ = admin.describe_acls(every)
        assert [(a.principal, a.resource_pattern.resource_name) for a in found] == [
            ("User:alice", "logs-")
        ]
        # Both brokers' caches follow the change notification.
        for handle in cluster.brokers.values():
            with WireClient.to(handle.bootstrap) as client:
                describe = DescribeAclsRequest(
                    resource_type_filter=1,
                    resource_name_filter=None,
                    pattern_type_filter=1,
                    principal_filter=None,
                    host_filter=None,
                    operation=1,
                    permission_type=1,
                )
                wait_until(lambda c=client, d=describe: len(c.request(3, d).resources) == 1)
        deleted = admin.delete_acls([every])
        assert [len(matches) for _, matches, _ in deleted] == [1]
    finally:
        admin.close()


def test_release_1_1_serves_literal_acls_v0(cluster_factory: Callable[..., Cluster]) -> None:
    from zkbroker.broker.protocol.messages.create_acls import AclCreation, CreateAclsRequest
    from zkbroker.broker.toolkit.wire import WireClient

    cluster = cluster_factory(
        brokers=1,
        kafka_version="1.1",
        broker_configs=(AUTHORIZER, ("super.users", "User:ANONYMOUS")),
    )
    with WireClient.to(cluster.bootstrap_servers) as client:
        created = client.request(
            0, CreateAclsRequest([AclCreation(2, "t", 3, "User:x", "*", 3, 3)])
        )
        assert [r.error_code for r in created.results] == [0]
