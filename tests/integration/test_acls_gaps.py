"""The authorizer where Kafka 3.9's answers are easy to get slightly wrong, over TCP against a
real ZooKeeper: CreateTopics without DESCRIBE_CONFIGS (topic_config_error_code), the text of a
ClusterAuthorizationException, the kafka.authorizer.logger audit lines (levels, log flags,
BROKER_LOGGER through a real admin client), and super.users / allow.everyone.if.no.acl.found
in DescribeConfigs.

The clients are PLAINTEXT (User:ANONYMOUS): with allow.everyone.if.no.acl.found=true a client
first grants itself ALTER on the cluster, then each topic's ACLs decide alone.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kazoo.client import KazooClient

from tests.log_events import capture_events
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from zkbroker.broker.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from zkbroker.broker.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from zkbroker.broker.rules import acl_matching as m
from zkbroker.broker.security.authorizer import AUDIT_LOG, AUDIT_LOGGER
from zkbroker.broker.toolkit.wire import WireClient

AUTHORIZER = ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")
EVERYONE = ("allow.everyone.if.no.acl.found", "true")
ANONYMOUS = "User:ANONYMOUS"
ZERO = uuid.UUID(int=0)


def _acl(rt: int, name: str, op: int, principal: str = ANONYMOUS, pt: int = m.PT_LITERAL) -> Any:
    return AclCreation(rt, name, pt, principal, "*", op, m.ALLOW)


def _grant(client: WireClient, *acls: AclCreation) -> None:
    created = client.request(3, CreateAclsRequest(list(acls)))
    assert [r.error_code for r in created.results] == [0] * len(acls)


@pytest.fixture
def open_cluster(cluster_factory: Callable[..., Cluster]) -> Cluster:
    cluster = cluster_factory(brokers=1, kafka_version="3.9", broker_configs=(AUTHORIZER, EVERYONE))
    with WireClient.to(cluster.bootstrap_servers) as client:
        _grant(client, _acl(m.CLUSTER, m.CLUSTER_NAME, m.ALTER))
        _grant(client, _acl(m.CLUSTER, m.CLUSTER_NAME, m.ALTER_CONFIGS))
        _grant(
            client,
            _acl(m.TOPIC, "hidden", m.CREATE),
            _acl(m.TOPIC, "hidden-check", m.CREATE),
            _acl(m.TOPIC, "shown", m.CREATE),
            _acl(m.TOPIC, "shown", m.ALTER_CONFIGS),  # implies DESCRIBE_CONFIGS
            _acl(m.TOPIC, "denied", m.READ, principal="User:bob"),
        )
    return cluster


def _create(client: WireClient, version: int, *names: str, validate_only: bool = False) -> Any:
    request = CreateTopicsRequest(
        topics=[CreatableTopic(name=n, num_partitions=1, replication_factor=1) for n in names],
        timeout_ms=15000,
        validate_only=validate_only,
    )
    return {t.name: t for t in client.request(version, request).topics}


def test_create_topics_hides_configs_without_describe_configs(
    open_cluster: Cluster, kazoo: KazooClient
) -> None:
    with WireClient.to(open_cluster.bootstrap_servers) as client:
        got = _create(client, 7, "hidden", "shown", "free", "denied")
    hidden, shown, free, denied = got["hidden"], got["shown"], got["free"], got["denied"]
    # Created, but the configs are not the principal's to see (KafkaApis 3.9).
    assert hidden.error_code == error_codes.NONE
    assert hidden.topic_config_error_code == error_codes.TOPIC_AUTHORIZATION_FAILED
    assert (hidden.configs, hidden.num_partitions, hidden.replication_factor) == ([], -1, -1)
    assert hidden.topic_id == ZERO
    for visible in (shown, free):  # DESCRIBE_CONFIGS by ACL, and by no ACL at all
        assert visible.error_code == error_codes.NONE
        assert visible.topic_config_error_code == error_codes.NONE
        assert (visible.num_partitions, visible.replication_factor) == (1, 1)
        assert visible.configs and visible.topic_id != ZERO
    # Refused CREATE keeps the config error Kafka set before anything else.
    assert (denied.error_code, denied.error_message) == (
        error_codes.TOPIC_AUTHORIZATION_FAILED,
        "Authorization failed.",
    )
    assert denied.topic_config_error_code == error_codes.TOPIC_AUTHORIZATION_FAILED
    # Written all the same (Metadata would not show it: no DESCRIBE on it).
    assert kazoo.exists("/brokers/topics/hidden") is not None


def test_validate_only_and_failed_creations(open_cluster: Cluster) -> None:
    with WireClient.to(open_cluster.bootstrap_servers) as client:
        checked = _create(client, 5, "hidden-check", validate_only=True)["hidden-check"]
        assert checked.error_code == error_codes.NONE
        assert checked.topic_config_error_code == error_codes.TOPIC_AUTHORIZATION_FAILED
        assert (checked.configs, checked.num_partitions) == ([], -1)
        # Before v5 the field does not exist: Kafka drops it (ignorable), the answer is plain.
        old = _create(client, 4, "hidden-check", validate_only=True)["hidden-check"]
        assert old.error_code == error_codes.NONE
        _create(client, 7, "hidden")
        # A creation failing after the checks clears the config error (handleCreateTopicsResults).
        again = _create(client, 7, "hidden")["hidden"]
        assert again.error_code == error_codes.TOPIC_ALREADY_EXISTS
        assert again.topic_config_error_code == error_codes.NONE
        # 3.9: the KRaft metadata topic cannot be created, before any ACL is looked at.
        meta = _create(client, 7, "__cluster_metadata")["__cluster_metadata"]
        assert (meta.error_code, meta.error_message, meta.topic_config_error_code) == (
            error_codes.INVALID_REQUEST,
            "Creation of internal topic __cluster_metadata is prohibited.",
            error_codes.NONE,
        )


_REQUEST_TEXT = re.compile(
    r"Request Request\(processor=(\d+), connectionId=(\S+)-(\d+), "
    r"session=Session\(User:ANONYMOUS,/127\.0\.0\.1\), listenerName=ListenerName\(PLAINTEXT\), "
    r"securityProtocol=PLAINTEXT, buffer=(.*), envelope=None\) is not authorized\."
)


def test_cluster_authorization_message_prints_the_request_as_kafka(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(brokers=1, kafka_version="3.9", broker_configs=(AUTHORIZER,))
    seen: list[tuple[int, int]] = []
    for _ in range(2):
        with WireClient.to(cluster.bootstrap_servers) as client:
            body = CreateAclsRequest([_acl(m.TOPIC, "t", m.READ)])
            size = len(client.frame(30, 3, body)[1]) - 4
            created = client.request(3, body)
            [result] = created.results
            assert result.error_code == error_codes.CLUSTER_AUTHORIZATION_FAILED
            found = _REQUEST_TEXT.fullmatch(result.error_message or "")
            assert found is not None, result.error_message
            server, local = client.sock.getpeername(), client.sock.getsockname()
            assert found.group(2) == f"{server[0]}:{server[1]}-{local[0]}:{local[1]}"
            # CreateAcls is forwardable: Kafka keeps its buffer, read to the end.
            assert found.group(4) == f"java.nio.HeapByteBuffer[pos={size} lim={size} cap={size}]"
            seen.append((int(found.group(1)), int(found.group(3))))
            # DescribeAcls is not: its buffer was released once parsed.
            from zkbroker.broker.protocol.messages.describe_acls import DescribeAclsRequest

            described = client.request(3, DescribeAclsRequest(2, None, 1, None, None, 1, 1))
            assert (described.error_message or "").endswith(
                "buffer=null, envelope=None) is not authorized."
            )
    # Round robin over num.network.threads (3) processors of the listener.
    (first, index), (second, _) = seen
    assert second == (first + 1) % 3 and index >= 0


@pytest.fixture
def audit_lines() -> Iterator[list[dict[str, Any]]]:
    logger = logging.getLogger(AUDIT_LOG)
    saved = logger.level
    logger.setLevel(logging.DEBUG)
    with capture_events() as logs:
        yield logs
    logger.setLevel(saved)


def _audits(logs: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return [
        (e["result"], e["operation"], e["resource"], e["request"])
        for e in logs
        if e["event"] == "authorizer.audit"
    ]


def test_audit_lines_follow_kafkas_flags_and_the_broker_logger(
    open_cluster: Cluster, audit_lines: list[dict[str, Any]]
) -> None:
    with WireClient.to(open_cluster.bootstrap_servers) as client:
        _grant(client, _acl(m.TOPIC, "secret", m.READ, principal="User:bob"))
        audit_lines.clear()
        # CreateTopics: the cluster CREATE and the DESCRIBE_CONFIGS denials are not audited,
        # the topic's CREATE is allowed (DEBUG, hidden at the stock INFO).
        assert _create(client, 7, "hidden")["hidden"].topic_config_error_code != 0
        _create(client, 7, "free")
        assert _audits(audit_lines) == []
        client.request(12, MetadataRequest(topics=None))  # all topics: denials not logged
        assert _audits(audit_lines) == []
        named = MetadataRequest(
            topics=[MetadataRequestTopic(name="secret")], allow_auto_topic_creation=False
        )
        client.request(12, named)
        assert _audits(audit_lines) == [("Denied", "Describe", "Topic:LITERAL:secret", "METADATA")]
        [line] = [e for e in audit_lines if e["event"] == "authorizer.audit"]
        assert (line["log_level"], line["reason"], line["principal"]) == (
            "info",
            "no_matching_allow_acl",
            ANONYMOUS,
        )
    # Allowed decisions need the broker's kafka.authorizer.logger at DEBUG (BROKER_LOGGER),
    # set here through a real admin client, as an operator does with Kafka.
    admin = KafkaAdminClient(bootstrap_servers=open_cluster.bootstrap_servers)
    try:
        logger = KpConfigResource(ConfigResourceType.BROKER_LOGGER, "0", {AUDIT_LOGGER: "DEBUG"})
        altered = admin.alter_configs([logger], raise_on_unknown=False, incremental=True)
        assert altered == {"broker_logger": {"0": "OK"}}
    finally:
        admin.close()
    audit_lines.clear()
    with WireClient.to(open_cluster.bootstrap_servers) as client:
        client.request(12, MetadataRequest(topics=[MetadataRequestTopic(name="free")]))
    assert ("Allowed", "Describe", "Topic:LITERAL:free", "METADATA") in _audits(audit_lines)


def test_authorizer_keys_in_describe_configs_as_kafka_lists_unknown_originals(
    open_cluster: Cluster,
) -> None:
    admin = AdminClient({"bootstrap.servers": open_cluster.bootstrap_servers})
    broker = ConfigResource(ConfigResource.Type.BROKER, "0")
    described = admin.describe_configs([broker])[broker].result(timeout=15)
    entry = described["allow.everyone.if.no.acl.found"]
    # Not KafkaConfig keys: configType is None, so maybeSensitive; from server.properties.
    assert (entry.value, entry.is_sensitive, entry.is_read_only) == (None, True, True)
    assert ConfigSource(entry.source) == ConfigSource.STATIC_BROKER_CONFIG
    assert [(s.name, s.value) for s in entry.synonyms.values()] == [
        ("allow.everyone.if.no.acl.found", None)
    ]


@pytest.mark.parametrize(("release", "listed"), [("1.0", False), ("1.1", True), ("3.9", True)])
def test_authorizer_keys_are_listed_from_1_1(
    cluster_factory: Callable[..., Cluster], release: str, listed: bool
) -> None:
    from zkbroker.broker.protocol.messages.describe_configs import (
        DescribeConfigsRequest,
        DescribeConfigsResource,
    )

    cluster = cluster_factory(
        brokers=1,
        kafka_version=release,
        broker_configs=(AUTHORIZER, ("super.users", "User:ANONYMOUS")),
    )
    with WireClient.to(cluster.bootstrap_servers) as client:
        request = DescribeConfigsRequest([DescribeConfigsResource(4, "0", None)])
        [result] = client.request(0, request).results
    configs = {c.name: c for c in result.configs}
    assert configs["authorizer.class.name"].value == AUTHORIZER[1]
    assert ("super.users" in configs) is listed
    if listed:
        assert (configs["super.users"].value, configs["super.users"].is_sensitive) == (None, True)


@pytest.mark.parametrize(("release", "allowed"), [("3.8", False), ("3.9", True)])
def test_write_txn_markers_accepts_alter_on_the_cluster_from_3_9(
    cluster_factory: Callable[..., Cluster], release: str, allowed: bool
) -> None:
    from zkbroker.broker.protocol.messages.write_txn_markers import (
        WritableTxnMarker,
        WritableTxnMarkerTopic,
        WriteTxnMarkersRequest,
    )

    cluster = cluster_factory(
        brokers=1, kafka_version=release, broker_configs=(AUTHORIZER, EVERYONE)
    )
    marker = WritableTxnMarker(
        producer_id=7, producer_epoch=0, topics=[WritableTxnMarkerTopic("nowhere", [0])]
    )
    with WireClient.to(cluster.bootstrap_servers) as client:
        _grant(client, _acl(m.CLUSTER, m.CLUSTER_NAME, m.ALTER))  # and not CLUSTER_ACTION
        got = client.request(1, WriteTxnMarkersRequest([marker]))
    [code] = [p.error_code for r in got.markers for t in r.topics for p in t.partitions]
    assert code == (
        error_codes.UNKNOWN_TOPIC_OR_PARTITION
        if allowed
        else error_codes.CLUSTER_AUTHORIZATION_FAILED
    )


def test_metadata_and_describe_cluster_authorized_operations_as_kafka(
    open_cluster: Cluster, kazoo: KazooClient
) -> None:

    with WireClient.to(open_cluster.bootstrap_servers) as client:
        _grant(
            client,
            _acl(m.TOPIC, "seen", m.CREATE),
            _acl(m.TOPIC, "seen", m.DESCRIBE),
            _acl(m.TOPIC, "unseen", m.CREATE),
        )
        created = _create(client, 7, "seen", "unseen")
        # The client may ALTER the cluster (implies DESCRIBE): every granted bit is answered.
        cluster_ops = client.request(
            10, MetadataRequest(topics=[], include_cluster_authorized_operations=True)
        ).cluster_authorized_operations
        implied = (1 << m.DESCRIBE) | (1 << m.DESCRIBE_CONFIGS)
        assert cluster_ops == (1 << m.ALTER) | (1 << m.ALTER_CONFIGS) | implied
        unseen_id = created["unseen"].topic_id
        assert unseen_id == ZERO  # no DESCRIBE_CONFIGS: no id in the CreateTopics answer
        by_name = client.request(
            12,
            MetadataRequest(
                topics=[MetadataRequestTopic(name="unseen"), MetadataRequestTopic(name="seen")],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=True,
            ),
        )
        answers = [(t.name, t.error_code, t.topic_authorized_operations) for t in by_name.topics]
        seen_ops = (1 << m.CREATE) | (1 << m.DESCRIBE)
        # A refused topic comes last, with the schema default, not its operations.
        assert answers == [
            ("seen", error_codes.NONE, seen_ops),
            ("unseen", error_codes.TOPIC_AUTHORIZATION_FAILED, -(2**31)),
        ]
        seen_id = by_name.topics[0].topic_id
        unknown_id = uuid.uuid4()
        data, _ = kazoo.get("/brokers/topics/unseen")
        unseen_id = uuid.UUID(bytes=base64.urlsafe_b64decode(json.loads(data)["topic_id"] + "=="))
        by_id = client.request(
            12,
            MetadataRequest(
                topics=[
                    MetadataRequestTopic(topic_id=unseen_id, name=None),
                    MetadataRequestTopic(topic_id=seen_id, name=None),
                    MetadataRequestTopic(topic_id=unknown_id, name=None),
                ],
                allow_auto_topic_creation=False,
            ),
        )
        # Unknown ids first, refused ones last: TOPIC_AUTHORIZATION_FAILED with the id, no name
        # ("Topic IDs are not considered sensitive information").
        assert [(t.topic_id, t.name, t.error_code) for t in by_id.topics] == [
            (unknown_id, None, error_codes.UNKNOWN_TOPIC_ID),
            (seen_id, "seen", error_codes.NONE),
            (unseen_id, None, error_codes.TOPIC_AUTHORIZATION_FAILED),
        ]


def test_cluster_operations_need_describe_on_the_cluster(
    cluster_factory: Callable[..., Cluster],
) -> None:
    from zkbroker.broker.protocol.messages.describe_cluster import DescribeClusterRequest

    cluster = cluster_factory(brokers=1, kafka_version="3.9", broker_configs=(AUTHORIZER, EVERYONE))
    with WireClient.to(cluster.bootstrap_servers) as client:
        # ALTER_CONFIGS does not imply DESCRIBE: Kafka answers 0, not the ALTER_CONFIGS bit.
        _grant(client, _acl(m.CLUSTER, m.CLUSTER_NAME, m.ALTER_CONFIGS))
        described = client.request(
            0, DescribeClusterRequest(include_cluster_authorized_operations=True)
        )
        assert described.cluster_authorized_operations == 0
        metadata = client.request(
            10, MetadataRequest(topics=[], include_cluster_authorized_operations=True)
        )
        assert metadata.cluster_authorized_operations == 0


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        ((3, 3), (error_codes.NONE, None, error_codes.NONE)),
        (
            (3, 8),
            (error_codes.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.",
             error_codes.TOPIC_AUTHORIZATION_FAILED),
        ),
    ],
)
def test_the_kraft_metadata_topic_before_3_9(
    cluster_factory: Callable[..., Cluster], release: tuple[int, int], expected: Any
) -> None:
    # KafkaApis 3.4-3.8 leave __cluster_metadata out of the creatable topics, with no
    # authorizer at all: "Authorization failed." (3.9 names the reason); before 3.4 it is a
    # topic like any other.
    cluster = cluster_factory(kafka_version=release)
    with WireClient.to(cluster.bootstrap_servers) as client:
        meta = _create(client, 7, "__cluster_metadata")["__cluster_metadata"]
        assert (meta.error_code, meta.error_message, meta.topic_config_error_code) == expected
        # A name given twice is that first, as in every release.
        twice = client.request(7, CreateTopicsRequest(
            topics=[CreatableTopic(name="__cluster_metadata", num_partitions=1,
                                   replication_factor=1)] * 2,
            timeout_ms=15000,
        )).topics
        assert [t.error_message for t in twice] == ["Found multiple entries for this topic."] * 2
