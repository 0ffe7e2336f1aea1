"""Client quotas applied (ClientQuotaManager, KIP-219): a producer over its producer_byte_rate
gets throttle_time_ms in its Produce responses and its connection muted, while another client
id on the same broker is not throttled; the bytes the throttled client got through stay within
the quota over the time it was told to wait. A quota written by kazoo in Kafka's format (plus
its notification) applies too, and confluent-kafka's own statistics report the throttle."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.broker.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)
from zkbroker.broker.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from zkbroker.broker.protocol.records import NewRecord, encode_batch
from zkbroker.broker.toolkit.wire import WireClient

QUOTA = 100_000  # bytes per second
WINDOWS = (("quota.window.num", "2"), ("quota.window.size.seconds", "1"))


def _start(cluster_factory: Callable[..., Cluster], topic: str) -> Cluster:
    cluster = cluster_factory(brokers=1, broker_configs=WINDOWS)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    return cluster


def _set_quota(cluster: Cluster, client_id: str, key: str, value: float) -> None:
    with WireClient.to(cluster.bootstrap_servers) as client:
        answer = client.request(
            1,
            AlterClientQuotasRequest(
                entries=[
                    EntryData(
                        entity=[EntityData(entity_type="client-id", entity_name=client_id)],
                        ops=[OpData(key=key, value=value, remove=False)],
                    )
                ]
            ),
        )
    assert answer.entries[0].error_code == 0


def _produce_all(cluster: Cluster, client_id: str, topic: str, count: int, size: int) -> list[int]:
    """Send `count` batches of about `size` bytes on one connection; their throttle times."""
    batch = encode_batch([NewRecord(0, int(time.time() * 1000), b"k", b"x" * size)])
    throttles = []
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    with WireClient(host, int(port), client_id=client_id) as client:
        for _ in range(count):
            answer = client.request(
                9,
                ProduceRequest(
                    acks=1,
                    timeout_ms=5000,
                    topic_data=[
                        TopicProduceData(
                            name=topic,
                            partition_data=[PartitionProduceData(index=0, records=batch)],
                        )
                    ],
                ),
            )
            assert answer.responses[0].partition_responses[0].error_code == 0
            throttles.append(answer.throttle_time_ms)
    return throttles


def _quota_applied(cluster: Cluster, entity_path: str) -> Callable[[], bool]:
    return lambda: entity_path in cluster.engine.image.client_quotas.entities


def test_producer_over_its_byte_rate_is_throttled_others_are_not(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = _start(cluster_factory, "quota-t")
    _set_quota(cluster, "slow", "producer_byte_rate", QUOTA)
    wait_until(_quota_applied(cluster, "clients/slow"))

    size, count = 30_000, 12
    slow = _produce_all(cluster, "slow", "quota-t", count, size)
    fast = _produce_all(cluster, "fast", "quota-t", count, size)
    assert fast == [0] * count
    assert any(t > 0 for t in slow)
    # Kafka's rule: each throttle is what brings the rate over the sampled window back to the
    # quota, so everything the client sent fits in the quota over the windows plus the time
    # it was told to wait (and was muted for).
    sent = count * size
    windows_s = 2 * 1  # quota.window.num * quota.window.size.seconds
    assert sent <= QUOTA * (sum(slow) / 1000 + windows_s) * 1.1


def test_quota_from_kazoo_applies_and_confluent_kafka_sees_the_throttle(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    cluster = _start(cluster_factory, "quota-c")
    # What `kafka-configs --zookeeper --alter --entity-type clients --entity-name rdk` writes.
    kazoo.create(
        "/config/clients/rdk",
        json.dumps({"version": 1, "config": {"producer_byte_rate": str(QUOTA)}}).encode(),
        makepath=True,
    )
    kazoo.create(
        "/config/changes/config_change_",
        json.dumps({"version": 2, "entity_path": "clients/rdk"}).encode(),
        sequence=True,
    )
    wait_until(_quota_applied(cluster, "clients/rdk"))

    stats: list[dict[str, Any]] = []
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "client.id": "rdk",
            "linger.ms": 0,
            "statistics.interval.ms": 100,
            "stats_cb": lambda text: stats.append(json.loads(text)),
        }
    )
    payload = b"y" * 50_000
    for _ in range(10):
        producer.produce("quota-c", payload)
        producer.flush(30)

    def throttled() -> bool:
        producer.poll(0.1)
        return any(
            b.get("throttle", {}).get("max", 0) > 0
            for s in stats
            for b in s.get("brokers", {}).values()
        )

    wait_until(throttled)
    producer.flush(30)


def test_ip_connection_creation_rate(cluster_factory: Callable[..., Cluster]) -> None:
    from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest

    cluster = cluster_factory(brokers=1, broker_configs=WINDOWS)
    with WireClient.to(cluster.bootstrap_servers) as client:
        answer = client.request(
            1,
            AlterClientQuotasRequest(
                entries=[
                    EntryData(
                        entity=[EntityData(entity_type="ip", entity_name="127.0.0.1")],
                        ops=[OpData(key="connection_creation_rate", value=1, remove=False)],
                    )
                ]
            ),
        )
        assert answer.entries[0].error_code == 0
    wait_until(_quota_applied(cluster, "ips/127.0.0.1"))
    # One connection a second: the first is served; one more straight after is held unserved
    # and closed (after at most one window), as Kafka's Acceptor does.
    with WireClient.to(cluster.bootstrap_servers) as first:
        assert first.request(0, ApiVersionsRequest()).error_code == 0
        with WireClient.to(cluster.bootstrap_servers) as second:
            _, data = second.frame(18, 0, ApiVersionsRequest())
            second.send_raw(data)
            assert second.is_closed_by_peer(timeout=10)
