"""KIP-848's consumer group keys on a ZooKeeper-mode broker: advertised from 3.7
(ConsumerGroupHeartbeat) and 3.8 (ConsumerGroupDescribe), as their JSON lists zkBroker, and
refused as Kafka's ZooKeeper brokers refuse them (the new group coordinator is KRaft only):
UNSUPPORTED_VERSION and nothing else, per group for Describe. Admin clients then fall back to
the classic DescribeGroups, which a real client shows here."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.helpers import wait_until
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    DescribedGroup,
)
from zkbroker.broker.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from zkbroker.broker.toolkit.wire import WireClient


def _client(cluster: Any) -> WireClient:
    node = next(iter(cluster.engine.brokers.values()))
    return WireClient(node.host, node.port)


@pytest.mark.parametrize(
    ("release", "expected"),
    [((3, 6), set()), ((3, 7), {68}), ((3, 8), {68, 69}), ((3, 9), {68, 69})],
)
def test_advertised_from_their_release(
    cluster_factory: Any, release: tuple[int, int], expected: set[int]
) -> None:
    cluster = cluster_factory(brokers=1, kafka_version=release)
    with _client(cluster) as client:
        answer = client.request(
            3, ApiVersionsRequest(client_software_name="tests", client_software_version="1")
        )
    assert answer.error_code == ec.NONE
    ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert {k for k in (68, 69) if k in ranges} == expected
    assert all(ranges[k] == (0, 0) for k in expected)


def test_refused_as_a_zookeeper_broker_refuses_them(cluster_factory: Any) -> None:
    cluster = cluster_factory(brokers=1, kafka_version=(3, 9))
    with _client(cluster) as client:
        heartbeat = client.request(
            0,
            ConsumerGroupHeartbeatRequest(
                group_id="g",
                member_epoch=0,
                rebalance_timeout_ms=30000,
                subscribed_topic_names=["t"],
                topic_partitions=[],
            ),
        )
        described = client.request(0, ConsumerGroupDescribeRequest(group_ids=["g1", "g2"]))
    # Exactly Kafka's getErrorResponse: the code, no message, no member.
    assert heartbeat == ConsumerGroupHeartbeatResponse(error_code=ec.UNSUPPORTED_VERSION)
    assert described.groups == [
        DescribedGroup(group_id="g1", error_code=ec.UNSUPPORTED_VERSION),
        DescribedGroup(group_id="g2", error_code=ec.UNSUPPORTED_VERSION),
    ]


def test_admin_client_still_describes_classic_groups(cluster_factory: Any) -> None:
    """librdkafka tries ConsumerGroupDescribe where advertised; a ZooKeeper broker's answer
    sends it to DescribeGroups, so a classic group is described as before."""
    cluster = cluster_factory(brokers=1, kafka_version=(3, 9))
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("kip848-topic", 1, 1)])["kip848-topic"].result(15)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "classic-group",
            "session.timeout.ms": 6000,
        }
    )
    try:
        consumer.subscribe(["kip848-topic"])

        def described() -> bool:
            consumer.poll(0.2)
            futures = admin.describe_consumer_groups(["classic-group"], request_timeout=10)
            group = futures["classic-group"].result()
            return len(group.members) == 1

        wait_until(described, timeout=30)
    finally:
        consumer.close()
