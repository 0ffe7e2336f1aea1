"""The transactional data plane with real clients on a real cluster (docs/kafka-behaviour.md §17):
read_committed consumers (confluent-kafka, kafka-python, aiokafka) see committed records only,
aborted ones never, and stop at the last stable offset while a transaction is open; Fetch and
ListOffsets report that offset; offsets committed in a transaction are pending
(UNSTABLE_OFFSET_COMMIT with require_stable) until the commit, and an abort drops them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTopicPartition

from tests.integration.helpers import wait_until, wait_visible
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from zkbroker.broker.protocol.messages.find_coordinator import FindCoordinatorRequest
from zkbroker.broker.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from zkbroker.broker.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
)
from zkbroker.broker.toolkit.wire import WireClient

TOPIC = "rc-topic"
CONFIGS = (("transaction.state.log.num.partitions", "3"),)


@pytest.fixture
def cluster(cluster_factory: Callable[..., Cluster]) -> Cluster:
    cluster = cluster_factory(broker_configs=CONFIGS, kafka_version="3.9")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=30)
    wait_visible(cluster, TOPIC)
    return cluster


def _producer(cluster: Cluster, txn: str) -> Producer:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn})
    producer.init_transactions(30)
    return producer


def _confluent_values(cluster: Cluster, isolation: str) -> list[bytes]:
    """Every value of the partition up to where `isolation` lets a consumer read."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"rc-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == -191:  # _PARTITION_EOF
                    return values
                raise AssertionError(msg.error())
            values.append(msg.value())
        raise AssertionError("no end of partition reached")
    finally:
        consumer.close()


def _kafka_python_values(cluster: Cluster) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        isolation_level="read_committed",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    try:
        consumer.assign([KpTopicPartition(TOPIC, 0)])
        consumer.seek_to_beginning()
        return [record.value for record in consumer]
    finally:
        consumer.close()


async def _aiokafka_values(cluster: Cluster) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        tp = AioTopicPartition(TOPIC, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        got = await consumer.getmany(timeout_ms=3000)
        return [record.value for record in got.get(tp, [])]
    finally:
        await consumer.stop()


def _leader(cluster: Cluster) -> WireClient:
    leader = cluster.engine.image.topics[TOPIC].partitions[0].leader
    node = cluster.engine.brokers[leader]
    return WireClient(node.host, node.port)


def _group_coordinator(cluster: Cluster, group: str) -> WireClient:
    with WireClient.to(cluster.bootstrap_servers) as client:
        got = client.request(3, FindCoordinatorRequest(key=group, key_type=0))
    assert got.error_code == ec.NONE
    return WireClient(got.host, got.port)


def _list_latest(cluster: Cluster, isolation: int) -> int:
    with _leader(cluster) as client:
        got = client.request(
            7,
            ListOffsetsRequest(
                replica_id=-1,
                isolation_level=isolation,
                topics=[
                    ListOffsetsTopic(
                        name=TOPIC,
                        partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)],
                    )
                ],
            ),
        )
    partition = got.topics[0].partitions[0]
    assert partition.error_code == ec.NONE
    return int(partition.offset)


def _fetch(cluster: Cluster, isolation: int) -> tuple[int, int, list[tuple[int, int]], int]:
    """(high watermark, last stable offset, aborted (producer, first offset), record bytes)."""
    with _leader(cluster) as client:
        got = client.request(
            11,
            FetchRequest(
                replica_id=-1,
                max_wait_ms=0,
                min_bytes=0,
                max_bytes=1 << 20,
                isolation_level=isolation,
                topics=[
                    FetchTopic(
                        topic=TOPIC,
                        partitions=[
                            FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
                        ],
                    )
                ],
            ),
        )
    p = got.responses[0].partitions[0]
    assert p.error_code == ec.NONE
    aborted = [(a.producer_id, a.first_offset) for a in p.aborted_transactions or []]
    return p.high_watermark, p.last_stable_offset, aborted, len(p.records or b"")


def test_read_committed_sees_committed_only_and_stops_at_the_lso(cluster: Cluster) -> None:
    producer = _producer(cluster, "rc-1")
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"aborted", partition=0)
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"committed", partition=0)
    producer.commit_transaction(30)
    # An open transaction: its record is in the log, but read_committed stops before it.
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"open", partition=0)
    producer.flush(30)

    assert _confluent_values(cluster, "read_uncommitted") == [b"aborted", b"committed", b"open"]
    assert _confluent_values(cluster, "read_committed") == [b"committed"]
    assert _kafka_python_values(cluster) == [b"committed"]
    assert asyncio.run(_aiokafka_values(cluster)) == [b"committed"]
    # Offsets: aborted 0, its marker 1, committed 2, marker 3, open 4.
    hw, lso, aborted, size_committed = _fetch(cluster, 1)
    assert (hw, lso) == (5, 4)
    assert [first for _pid, first in aborted] == [0]
    _hw, lso_uncommitted, aborted_uncommitted, size_all = _fetch(cluster, 0)
    assert lso_uncommitted == 4 and aborted_uncommitted == [] and size_all > size_committed
    assert _list_latest(cluster, 1) == 4
    assert _list_latest(cluster, 0) == 5

    producer.commit_transaction(30)
    assert _confluent_values(cluster, "read_committed") == [b"committed", b"open"]
    assert _list_latest(cluster, 1) == _list_latest(cluster, 0) == 6


def _offset_fetch(cluster: Cluster, group: str, *, require_stable: bool) -> tuple[int, int]:
    with _group_coordinator(cluster, group) as client:
        got = client.request(
            7,
            OffsetFetchRequest(
                group_id=group,
                require_stable=require_stable,
                topics=[OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])],
            ),
        )
    p = got.topics[0].partitions[0]
    return int(p.committed_offset), int(p.error_code)


def _find_group_coordinator(cluster: Cluster, group: str) -> None:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    try:
        consumer.committed([TopicPartition(TOPIC, 0)], timeout=30)
    finally:
        consumer.close()


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_offsets_in_a_transaction_appear_only_after_commit(cluster: Cluster, commit: bool) -> None:
    group = f"txn-offsets-{commit}"
    _find_group_coordinator(cluster, group)  # creates __consumer_offsets
    producer = _producer(cluster, f"rc-offsets-{commit}")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    try:
        producer.begin_transaction()
        producer.produce(TOPIC, value=b"x", partition=0)
        producer.send_offsets_to_transaction(
            [TopicPartition(TOPIC, 0, 7)], consumer.consumer_group_metadata(), 30
        )
        assert _offset_fetch(cluster, group, require_stable=True) == (
            -1,
            ec.UNSTABLE_OFFSET_COMMIT,
        )
        assert _offset_fetch(cluster, group, require_stable=False) == (-1, ec.NONE)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
        expected = (7 if commit else -1, ec.NONE)
        wait_until(lambda: _offset_fetch(cluster, group, require_stable=True) == expected)
    finally:
        consumer.close()
