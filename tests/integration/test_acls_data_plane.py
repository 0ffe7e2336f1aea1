"""The authorizer's checks in the data-plane and transaction APIs (KafkaApis 3.9), driven by
real clients over SASL principals and, for the exact response shapes, by WireClient as
User:ANONYMOUS against a broker that allows everyone but what explicit DENY ACLs refuse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.security.cluster_security import Security
from zkbroker.broker.toolkit.wire import WireClient

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
AUTHORIZER = ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")


def _allow(rtype: ResourceType, name: str, user: str, op: AclOperation) -> AclBinding:
    return AclBinding(
        rtype, name, ResourcePatternType.LITERAL, f"User:{user}", "*", op, AclPermissionType.ALLOW
    )


def _deny_anonymous(rtype: ResourceType, name: str, op: AclOperation) -> AclBinding:
    return AclBinding(
        rtype,
        name,
        ResourcePatternType.LITERAL,
        "User:ANONYMOUS",
        "*",
        op,
        AclPermissionType.DENY,
    )


def _create_acls(admin: AdminClient, bindings: list[AclBinding]) -> None:
    for f in admin.create_acls(bindings).values():
        f.result(timeout=15)


def _create_topics(admin: AdminClient, *names: str) -> None:
    for f in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        f.result(timeout=15)


# ---- real clients over SASL --------------------------------------------------------------------


@pytest.fixture
def secured(cluster_factory: Callable[..., Cluster]) -> Cluster:
    return cluster_factory(
        brokers=1,
        kafka_version="3.9",
        security=Security(protocol="SASL_PLAINTEXT", mechanisms=("PLAIN",), users=USERS),
        broker_configs=(AUTHORIZER, ("super.users", "User:admin")),
    )


def _conf(cluster: Cluster, user: str) -> dict[str, Any]:
    assert cluster.security is not None
    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        **cluster.security.client_config("confluent", user, "PLAIN"),
    }


def _produce_error(cluster: Cluster, user: str, topic: str) -> str | None:
    """The delivery report's error name of one record (None when delivered)."""
    producer = Producer({**_conf(cluster, user), "message.timeout.ms": 10000})
    outcome: list[KafkaError | None] = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(20)
    assert outcome, "no delivery report"
    return None if outcome[0] is None else outcome[0].name()


def test_producer_needs_write_on_the_topic(secured: Cluster) -> None:
    admin = AdminClient(_conf(secured, "admin"))
    _create_topics(admin, "orders")
    assert _produce_error(secured, "alice", "orders") == "TOPIC_AUTHORIZATION_FAILED"
    _create_acls(admin, [_allow(ResourceType.TOPIC, "orders", "alice", AclOperation.WRITE)])
    assert _produce_error(secured, "alice", "orders") is None


def _consume_error(cluster: Cluster, user: str, topic: str, group: str) -> str:
    consumer = Consumer(
        {**_conf(cluster, user), "group.id": group, "auto.offset.reset": "earliest"}
    )
    try:
        consumer.subscribe([topic])
        for _ in range(40):
            msg = consumer.poll(0.5)
            error = None if msg is None else msg.error()
            if error is not None:
                return str(error.name())
        raise AssertionError("the consumer saw no error")
    finally:
        consumer.close()


def test_consumer_needs_read_on_topic_and_group(secured: Cluster) -> None:
    admin = AdminClient(_conf(secured, "admin"))
    _create_topics(admin, "events")
    # No ACL at all: the group is refused first (FindCoordinator needs DESCRIBE on it).
    assert _consume_error(secured, "bob", "events", "readers") == "GROUP_AUTHORIZATION_FAILED"
    _create_acls(admin, [_allow(ResourceType.GROUP, "readers", "bob", AclOperation.READ)])
    # The group is allowed, the topic is not.
    assert _consume_error(secured, "bob", "events", "readers") == "TOPIC_AUTHORIZATION_FAILED"


def test_transactional_producer_needs_write_on_its_transactional_id(secured: Cluster) -> None:
    admin = AdminClient(_conf(secured, "admin"))
    _create_topics(admin, "payments")
    _create_acls(admin, [_allow(ResourceType.TOPIC, "payments", "alice", AclOperation.WRITE)])
    conf = {**_conf(secured, "alice"), "transactional.id": "tx-alice"}
    producer = Producer(conf)
    with pytest.raises(KafkaException) as e:
        producer.init_transactions(20)
    assert e.value.args[0].name() == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    _create_acls(
        admin, [_allow(ResourceType.TRANSACTIONAL_ID, "tx-alice", "alice", AclOperation.WRITE)]
    )
    producer = Producer(conf)
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce("payments", b"paid")
    producer.commit_transaction(20)


# ---- exact shapes over the wire ------------------------------------------------------------


@pytest.fixture
def denying(cluster_factory: Callable[..., Cluster]) -> Cluster:
    """Everyone may do everything where no ACL applies; User:ANONYMOUS is denied the topic
    "secret", the group "g-secret", the transactional id "t-secret" and CLUSTER_ACTION."""
    cluster = cluster_factory(
        brokers=1,
        kafka_version="3.9",
        broker_configs=(AUTHORIZER, ("allow.everyone.if.no.acl.found", "true")),
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    _create_topics(admin, "public", "secret")
    _create_acls(
        admin,
        [
            _deny_anonymous(ResourceType.TOPIC, "secret", AclOperation.ALL),
            _deny_anonymous(ResourceType.GROUP, "g-secret", AclOperation.ALL),
            _deny_anonymous(ResourceType.TRANSACTIONAL_ID, "t-secret", AclOperation.ALL),
            _deny_anonymous(ResourceType.BROKER, "kafka-cluster", AclOperation.CLUSTER_ACTION),
            # Usable (an id with ACLs needs an ALLOW), not listed or described (DENY wins
            # over the DESCRIBE that WRITE implies).
            _deny_anonymous(ResourceType.TRANSACTIONAL_ID, "t-hidden", AclOperation.DESCRIBE),
            _allow(ResourceType.TRANSACTIONAL_ID, "t-hidden", "ANONYMOUS", AclOperation.WRITE),
        ],
    )
    return cluster


def test_list_offsets_answers_unauthorized_topics_last(denying: Cluster) -> None:
    from zkbroker.broker.protocol.messages.list_offsets import (
        ListOffsetsPartition,
        ListOffsetsRequest,
        ListOffsetsTopic,
    )

    request = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic("secret", [ListOffsetsPartition(0, timestamp=-1)]),
            ListOffsetsTopic("public", [ListOffsetsPartition(0, timestamp=-1)]),
        ],
    )
    with WireClient.to(denying.bootstrap_servers) as client:
        answer = client.request(7, request)
    assert [(t.name, [p.error_code for p in t.partitions]) for t in answer.topics] == [
        ("public", [ec.NONE]),
        ("secret", [ec.TOPIC_AUTHORIZATION_FAILED]),
    ]
    assert answer.topics[1].partitions[0].offset == -1


def test_offset_fetch_group_and_topic_checks(denying: Cluster) -> None:
    from zkbroker.broker.protocol.messages.offset_fetch import (
        OffsetFetchRequest,
        OffsetFetchRequestGroup,
        OffsetFetchRequestTopic,
        OffsetFetchRequestTopics,
    )

    with WireClient.to(denying.bootstrap_servers) as client:
        denied = client.request(7, OffsetFetchRequest(group_id="g-secret", topics=None))
        assert denied.error_code == ec.GROUP_AUTHORIZATION_FAILED and denied.topics == []
        topics = [OffsetFetchRequestTopic("secret", [0]), OffsetFetchRequestTopic("public", [0])]
        v1 = client.request(1, OffsetFetchRequest(group_id="g-secret", topics=topics))
        assert {p.error_code for t in v1.topics for p in t.partitions} == {
            ec.GROUP_AUTHORIZATION_FAILED
        }
        groups = [
            OffsetFetchRequestGroup("g-secret", topics=None),
            OffsetFetchRequestGroup(
                "g",
                topics=[
                    OffsetFetchRequestTopics("secret", [0]),
                    OffsetFetchRequestTopics("public", [0]),
                ],
            ),
        ]
        # The offsets topic may still be on its way: wait for the coordinator.
        for _ in range(50):
            v8 = client.request(8, OffsetFetchRequest(groups=groups))
            if v8.groups[1].error_code == ec.NONE:
                break
    assert v8.groups[0].error_code == ec.GROUP_AUTHORIZATION_FAILED
    found = {
        (t.name, p.error_code, p.committed_offset)
        for t in v8.groups[1].topics
        for p in t.partitions
    }
    assert found == {("secret", ec.TOPIC_AUTHORIZATION_FAILED, -1), ("public", ec.NONE, -1)}
    assert [t.name for t in v8.groups[1].topics] == ["public", "secret"]


def test_find_coordinator_and_transactions_hide_what_is_denied(denying: Cluster) -> None:
    from zkbroker.broker.protocol.messages.describe_transactions import DescribeTransactionsRequest
    from zkbroker.broker.protocol.messages.find_coordinator import FindCoordinatorRequest
    from zkbroker.broker.protocol.messages.init_producer_id import InitProducerIdRequest

    with WireClient.to(denying.bootstrap_servers) as client:
        found = client.request(4, FindCoordinatorRequest(key_type=0, coordinator_keys=["g-secret"]))
        assert [(c.error_code, c.node_id) for c in found.coordinators] == [
            (ec.GROUP_AUTHORIZATION_FAILED, -1)
        ]
        old = client.request(3, FindCoordinatorRequest(key="t-secret", key_type=1))
        assert old.error_code == ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert old.error_message == "Transactional Id authorization failed."
        described = client.request(0, DescribeTransactionsRequest(["t-secret"]))
        assert described.transaction_states[0].error_code == (
            ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        )
        init = client.request(
            4, InitProducerIdRequest(transactional_id="t-secret", transaction_timeout_ms=60000)
        )
        assert init.error_code == ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        # Idempotent: IDEMPOTENT_WRITE on the cluster (allowed here: no ACL on it).
        idempotent = client.request(4, InitProducerIdRequest(transactional_id=None))
        assert idempotent.error_code == ec.NONE and idempotent.producer_id >= 0


def test_broker_only_apis_need_cluster_action(denying: Cluster) -> None:
    from zkbroker.broker.protocol.messages.add_partitions_to_txn import (
        AddPartitionsToTxnRequest,
        AddPartitionsToTxnTopic,
        AddPartitionsToTxnTransaction,
    )
    from zkbroker.broker.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
    from zkbroker.broker.protocol.messages.write_txn_markers import (
        WritableTxnMarker,
        WritableTxnMarkerTopic,
        WriteTxnMarkersRequest,
    )

    markers = WriteTxnMarkersRequest(
        [WritableTxnMarker(1, 0, True, [WritableTxnMarkerTopic("public", [0])], 0)]
    )
    follower = FetchRequest(
        replica_id=1,
        max_bytes=1 << 20,
        topics=[FetchTopic("public", partitions=[FetchPartition(0, partition_max_bytes=1024)])],
    )
    consumer = FetchRequest(
        replica_id=-1,
        max_bytes=1 << 20,
        topics=[
            FetchTopic("secret", partitions=[FetchPartition(0, partition_max_bytes=1024)]),
            FetchTopic("public", partitions=[FetchPartition(0, partition_max_bytes=1024)]),
        ],
    )
    verify = AddPartitionsToTxnRequest(
        transactions=[
            AddPartitionsToTxnTransaction("t", 1, 0, True, [AddPartitionsToTxnTopic("public", [0])])
        ]
    )
    with WireClient.to(denying.bootstrap_servers) as client:
        written = client.request(1, markers)
        assert written.markers[0].topics[0].partitions[0].error_code == (
            ec.CLUSTER_AUTHORIZATION_FAILED
        )
        fetched = client.request(11, follower)
        assert fetched.responses[0].partitions[0].error_code == ec.TOPIC_AUTHORIZATION_FAILED
        read = client.request(11, consumer)
        assert {t.topic: t.partitions[0].error_code for t in read.responses} == {
            "secret": ec.TOPIC_AUTHORIZATION_FAILED,
            "public": ec.NONE,
        }
        verified = client.request(4, verify)
        assert verified.error_code == ec.CLUSTER_AUTHORIZATION_FAILED


def test_add_partitions_v3_denied_topic_fails_the_transaction(denying: Cluster) -> None:
    from zkbroker.broker.protocol.messages.add_partitions_to_txn import (
        AddPartitionsToTxnRequest,
        AddPartitionsToTxnTopic,
    )

    request = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="t",
        v3_and_below_producer_id=1,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=[
            AddPartitionsToTxnTopic("secret", [0]),
            AddPartitionsToTxnTopic("public", [0]),
            AddPartitionsToTxnTopic("__consumer_offsets", [0]),
        ],
    )
    with WireClient.to(denying.bootstrap_servers) as client:
        answer = client.request(3, request)
        codes = {
            t.name: [p.partition_error_code for p in t.results_by_partition]
            for t in answer.results_by_topic_v3_and_below
        }
        assert codes == {
            "secret": [ec.TOPIC_AUTHORIZATION_FAILED],
            "public": [ec.OPERATION_NOT_ATTEMPTED],
            # Kafka leaves internal topics out of the WRITE check: never writable here.
            "__consumer_offsets": [ec.TOPIC_AUTHORIZATION_FAILED],
        }
        request.v3_and_below_transactional_id = "t-secret"
        answer = client.request(3, request)
        assert {
            p.partition_error_code
            for t in answer.results_by_topic_v3_and_below
            for p in t.results_by_partition
        } == {ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}


def test_produce_whole_request_and_per_partition_refusals(denying: Cluster) -> None:
    import time

    from zkbroker.broker.protocol.messages.describe_producers import (
        DescribeProducersRequest,
        TopicRequest,
    )
    from zkbroker.broker.protocol.messages.produce import (
        PartitionProduceData,
        ProduceRequest,
        TopicProduceData,
    )
    from zkbroker.broker.protocol.records import NewRecord, encode_batch

    def request(transactional_id: str | None, transactional: bool) -> ProduceRequest:
        batch = encode_batch(
            [NewRecord(0, int(time.time() * 1000), None, b"v")],
            base_offset=0,
            producer_id=-1 if not transactional else 5,
            producer_epoch=-1 if not transactional else 0,
            base_sequence=-1 if not transactional else 0,
            transactional=transactional,
        )
        return ProduceRequest(
            transactional_id=transactional_id,
            acks=-1,
            timeout_ms=5000,
            topic_data=[
                TopicProduceData(name=n, partition_data=[PartitionProduceData(0, records=batch)])
                for n in ("secret", "public")
            ],
        )

    def codes(answer: object) -> dict[str, int]:
        return {
            t.name: t.partition_responses[0].error_code
            for t in answer.responses  # type: ignore[attr-defined]
        }

    with WireClient.to(denying.bootstrap_servers) as client:
        # Transactional records for a denied transactional id: the whole request.
        refused = client.request(9, request("t-secret", transactional=True))
        assert codes(refused) == dict.fromkeys(
            ("secret", "public"), ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        )
        assert refused.responses[0].partition_responses[0].error_message == (
            "Transactional Id authorization failed."
        )
        # Plain records: WRITE per topic.
        plain = client.request(9, request(None, transactional=False))
        assert codes(plain) == {"secret": ec.TOPIC_AUTHORIZATION_FAILED, "public": ec.NONE}
        producers = client.request(
            0,
            DescribeProducersRequest([TopicRequest("secret", [0]), TopicRequest("public", [0])]),
        )
        secret, public = producers.topics
        assert secret.partitions[0].error_code == ec.TOPIC_AUTHORIZATION_FAILED
        assert secret.partitions[0].error_message == "Topic authorization failed."
        assert public.partitions[0].error_code == ec.NONE


def test_transaction_apis_check_id_group_and_topics(denying: Cluster) -> None:
    from zkbroker.broker.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
    from zkbroker.broker.protocol.messages.end_txn import EndTxnRequest
    from zkbroker.broker.protocol.messages.offset_for_leader_epoch import (
        OffsetForLeaderEpochRequest,
        OffsetForLeaderPartition,
        OffsetForLeaderTopic,
    )
    from zkbroker.broker.protocol.messages.txn_offset_commit import (
        TxnOffsetCommitRequest,
        TxnOffsetCommitRequestPartition,
        TxnOffsetCommitRequestTopic,
    )

    def commit(tid: str, group: str) -> dict[str, int]:
        answer = client.request(
            3,
            TxnOffsetCommitRequest(
                transactional_id=tid,
                group_id=group,
                producer_id=1,
                producer_epoch=0,
                topics=[
                    TxnOffsetCommitRequestTopic(n, [TxnOffsetCommitRequestPartition(0, 1)])
                    for n in ("secret", "public")
                ],
            ),
        )
        return {t.name: t.partitions[0].error_code for t in answer.topics}

    epochs = OffsetForLeaderEpochRequest(
        replica_id=-1,
        topics=[
            OffsetForLeaderTopic(n, [OffsetForLeaderPartition(0, leader_epoch=0)])
            for n in ("secret", "public")
        ],
    )
    with WireClient.to(denying.bootstrap_servers) as client:
        # No CLUSTER_ACTION (denied): DESCRIBE per topic, refused topics last.
        ended = client.request(4, epochs)
        assert [(t.topic, t.partitions[0].error_code) for t in ended.topics] == [
            ("public", ec.NONE),
            ("secret", ec.TOPIC_AUTHORIZATION_FAILED),
        ]
        end = client.request(3, EndTxnRequest("t-secret", 1, 0, True))
        assert end.error_code == ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        added = client.request(3, AddOffsetsToTxnRequest("t-secret", 1, 0, "g"))
        assert added.error_code == ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        added = client.request(3, AddOffsetsToTxnRequest("t", 1, 0, "g-secret"))
        assert added.error_code == ec.GROUP_AUTHORIZATION_FAILED
        assert commit("t-secret", "g") == dict.fromkeys(
            ("secret", "public"), ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        )
        assert commit("t", "g-secret") == dict.fromkeys(
            ("secret", "public"), ec.GROUP_AUTHORIZATION_FAILED
        )
        codes = commit("t", "g")
        assert codes["secret"] == ec.TOPIC_AUTHORIZATION_FAILED
        assert codes["public"] != ec.TOPIC_AUTHORIZATION_FAILED


def test_list_and_describe_transactions_hide_undescribable_ids(denying: Cluster) -> None:
    from zkbroker.broker.protocol.messages.describe_transactions import DescribeTransactionsRequest
    from zkbroker.broker.protocol.messages.find_coordinator import FindCoordinatorRequest
    from zkbroker.broker.protocol.messages.init_producer_id import InitProducerIdRequest
    from zkbroker.broker.protocol.messages.list_transactions import ListTransactionsRequest

    with WireClient.to(denying.bootstrap_servers) as client:
        # __transaction_state is created by the first lookup.
        find = FindCoordinatorRequest(key="t-open", key_type=1)
        wait_until(lambda: client.request(3, find).error_code == ec.NONE, interval=0.1)
        for tid in ("t-open", "t-hidden"):
            init = InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000)
            wait_until(lambda i=init: client.request(4, i).error_code == ec.NONE, interval=0.1)
        listed = client.request(0, ListTransactionsRequest())
        assert [t.transactional_id for t in listed.transaction_states] == ["t-open"]
        described = client.request(0, DescribeTransactionsRequest(["t-hidden", "t-open"]))
        assert [(t.transactional_id, t.error_code) for t in described.transaction_states] == [
            ("t-hidden", ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
            ("t-open", ec.NONE),
        ]
