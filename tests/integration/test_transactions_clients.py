"""Transactional producers of real clients (confluent-kafka, kafka-python, aiokafka) against a
real cluster: commit, abort, a zombie fenced by a newer producer with the same transactional.id,
a transaction that times out and is aborted by the coordinator, offsets sent in a transaction,
and a coordinator failover in the middle of a transaction (docs/kafka-behaviour.md §17).

What each committed or aborted transaction left is read back with read_committed consumers
(the data plane's LSO and aborted-transactions list) and with DescribeTransactions.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer

from tests.integration.helpers import wait_until, wait_visible
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.describe_transactions import DescribeTransactionsRequest
from zkbroker.broker.protocol.messages.find_coordinator import FindCoordinatorRequest
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.handlers import produce as produce_handler

# Transactional Produce and read_committed Fetch are the data plane's (issue 14, landing
# concurrently): while Produce still refuses every transactional batch, these tests cannot run.
_STUBBED = "No transaction coordinator yet" in inspect.getsource(produce_handler)
needs_data_plane = pytest.mark.skipif(
    _STUBBED, reason="Produce still answers INVALID_TXN_STATE to transactional batches"
)

TOPIC = "txn-out"
CONFIGS = (
    ("transaction.state.log.num.partitions", "5"),
    # The coordinator looks for expired transactions this often (Kafka's default is 10 s).
    ("transaction.abort.timed.out.transaction.cleanup.interval.ms", "100"),
)


@pytest.fixture
def txn_cluster(cluster_factory: Callable[..., Cluster]) -> Cluster:
    cluster = cluster_factory(broker_configs=CONFIGS, kafka_version="3.9")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, 2, 3)])[TOPIC].result(timeout=30)
    wait_visible(cluster, TOPIC)
    return cluster


def _producer(cluster: Cluster, txn: str, **extra: Any) -> Producer:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn, **extra}
    )
    producer.init_transactions(30)
    return producer


def _read(cluster: Cluster, isolation: str, count: int | None = None) -> list[bytes]:
    """Every value of TOPIC up to its end, as a consumer with `isolation` sees it."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"reader-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in (0, 1)])
        values: list[bytes] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                at_end.add(message.partition())
                if len(at_end) == 2 and (count is None or len(values) >= count):
                    break
                continue
            at_end.discard(message.partition())
            values.append(message.value())
        return sorted(values)
    finally:
        consumer.close()


def _describe(cluster: Cluster, txn: str) -> Any:
    with WireClient.to(cluster.bootstrap_servers) as client:
        found = client.request(3, FindCoordinatorRequest(key=txn, key_type=1))
    with WireClient(found.host, found.port) as client:
        got = client.request(0, DescribeTransactionsRequest(transactional_ids=[txn]))
    return got.transaction_states[0]


@needs_data_plane
def test_confluent_commit_and_abort(txn_cluster: Cluster) -> None:
    producer = _producer(txn_cluster, "ck-1")
    producer.begin_transaction()
    for i in range(5):
        producer.produce(TOPIC, value=f"committed-{i}".encode(), partition=i % 2)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(TOPIC, value=f"aborted-{i}".encode(), partition=i % 2)
    producer.flush(30)
    producer.abort_transaction(30)
    state = _describe(txn_cluster, "ck-1")
    assert (state.error_code, state.transaction_state) == (ec.NONE, "CompleteAbort")
    committed = [f"committed-{i}".encode() for i in range(5)]
    assert _read(txn_cluster, "read_committed", 5) == committed
    everything = _read(txn_cluster, "read_uncommitted", 10)
    assert everything == sorted(committed + [f"aborted-{i}".encode() for i in range(5)])


@needs_data_plane
def test_zombie_is_fenced(txn_cluster: Cluster) -> None:
    zombie = _producer(txn_cluster, "ck-zombie")
    zombie.begin_transaction()
    zombie.produce(TOPIC, value=b"zombie", partition=0)
    zombie.flush(30)
    # The new instance aborts the zombie's transaction and takes a newer epoch.
    successor = _producer(txn_cluster, "ck-zombie")
    with pytest.raises(KafkaException) as failure:
        zombie.commit_transaction(30)
    assert failure.value.args[0].fatal() or failure.value.args[0].txn_requires_abort()
    successor.begin_transaction()
    successor.produce(TOPIC, value=b"successor", partition=1)
    successor.commit_transaction(30)
    assert _read(txn_cluster, "read_committed", 1) == [b"successor"]
    state = _describe(txn_cluster, "ck-zombie")
    assert state.transaction_state == "CompleteCommit"


def test_timed_out_transaction_is_aborted(txn_cluster: Cluster) -> None:
    producer = _producer(txn_cluster, "ck-timeout", **{"transaction.timeout.ms": 1000})
    epoch = _describe(txn_cluster, "ck-timeout").producer_epoch
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"too-slow", partition=0)
    producer.flush(30)
    # The coordinator aborts it with a bumped epoch (Kafka's fence before the abort).
    state = wait_until(
        lambda: (
            (s := _describe(txn_cluster, "ck-timeout")).transaction_state == "CompleteAbort" and s
        ),
        timeout=30,
    )
    assert state.producer_epoch == epoch + 1
    with pytest.raises(KafkaException) as failure:
        producer.commit_transaction(30)
    # Fenced by the bumped epoch (fatal), not a timeout.
    assert failure.value.args[0].code() == KafkaError._FENCED, failure.value
    assert _read(txn_cluster, "read_committed") == []


@needs_data_plane
def test_send_offsets_to_transaction(txn_cluster: Cluster) -> None:
    producer = _producer(txn_cluster, "ck-offsets")
    group = "ctp-group"
    consumer = Consumer(
        {
            "bootstrap.servers": txn_cluster.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
        }
    )
    try:
        producer.begin_transaction()
        producer.produce(TOPIC, value=b"transformed", partition=0)
        producer.send_offsets_to_transaction(
            [TopicPartition(TOPIC, 1, 42)], consumer.consumer_group_metadata(), 30
        )
        producer.commit_transaction(30)
        committed = consumer.committed([TopicPartition(TOPIC, 1)], timeout=30)
        assert committed[0].offset == 42
    finally:
        consumer.close()
    assert _read(txn_cluster, "read_committed", 1) == [b"transformed"]


@needs_data_plane
def test_coordinator_failover_mid_transaction(txn_cluster: Cluster) -> None:
    producer = _producer(txn_cluster, "ck-failover")
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"survives", partition=0)
    producer.flush(30)
    with WireClient.to(txn_cluster.bootstrap_servers) as client:
        found = client.request(3, FindCoordinatorRequest(key="ck-failover", key_type=1))
    txn_cluster.stop_broker(found.node_id)
    producer.commit_transaction(60)
    assert _read(txn_cluster, "read_committed", 1) == [b"survives"]


@needs_data_plane
def test_kafka_python_transaction(txn_cluster: Cluster) -> None:
    producer = KafkaProducer(
        bootstrap_servers=txn_cluster.bootstrap_servers, transactional_id="kp-1"
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(TOPIC, b"kafka-python", partition=0)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(TOPIC, b"kafka-python-aborted", partition=1)
        producer.abort_transaction()
    finally:
        producer.close()
    assert _read(txn_cluster, "read_committed", 1) == [b"kafka-python"]


@needs_data_plane
def test_aiokafka_transaction(txn_cluster: Cluster) -> None:
    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=txn_cluster.bootstrap_servers, transactional_id="aio-1"
        )
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait(TOPIC, b"aiokafka", partition=0)
            await producer.begin_transaction()
            await producer.send_and_wait(TOPIC, b"aiokafka-aborted", partition=1)
            await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(run())
    assert _read(txn_cluster, "read_committed", 1) == [b"aiokafka"]
