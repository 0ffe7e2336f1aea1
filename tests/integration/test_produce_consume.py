"""Produce, Fetch, ListOffsets, OffsetForLeaderEpoch and DeleteRecords with real clients."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTP
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTP
from kafka.errors import MessageSizeTooLargeError

from tests.integration.helpers import wait_until, wait_visible
from zkbroker import Cluster, ProduceFailed
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.init_producer_id import InitProducerIdRequest
from zkbroker.broker.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from zkbroker.broker.protocol.records import NewRecord, encode_batch
from zkbroker.broker.toolkit.wire import WireClient


def _create(cluster: Cluster, name: str, partitions: int = 1, rf: int = 3, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=rf, config=config)]
    )
    futures[name].result(timeout=30)
    wait_visible(cluster, name)


def _consume_confluent(cluster: Cluster, topic: str, count: int, **extra: object) -> list:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"reader-{topic}",
            "enable.auto.commit": False,
            **extra,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got: list = []
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message)
        return got
    finally:
        consumer.close()


def test_confluent_kafka_produce_then_consume(cluster: Cluster) -> None:
    _create(cluster, "orders")
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    reports: list = []
    for i in range(100):
        producer.produce(
            "orders",
            key=f"k{i}".encode(),
            value=f"v{i}".encode(),
            headers=[("h", b"x")],
            on_delivery=lambda err, msg: reports.append((err, msg.offset())),
        )
    assert producer.flush(30) == 0
    assert all(err is None for err, _ in reports)
    assert sorted(offset for _, offset in reports) == list(range(100))

    got = _consume_confluent(cluster, "orders", 100)
    assert [m.value() for m in got] == [f"v{i}".encode() for i in range(100)]
    assert [m.offset() for m in got] == list(range(100))
    assert got[0].headers() == [("h", b"x")]


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_confluent_kafka_compressed_batches_round_trip(cluster: Cluster, compression: str) -> None:
    topic = f"compressed-{compression}"
    _create(cluster, topic, rf=1)
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "compression.type": compression,
            "linger.ms": 50,
        }
    )
    for i in range(500):
        producer.produce(topic, value=b"%d" % i)
    assert producer.flush(30) == 0
    got = _consume_confluent(cluster, topic, 500)
    assert [int(m.value()) for m in got] == list(range(500))


def test_kafka_python_produce_and_consume(cluster: Cluster) -> None:
    _create(cluster, "kp-events", partitions=2)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
    try:
        metadata = [
            producer.send("kp-events", value=b"x%d" % i, partition=i % 2) for i in range(20)
        ]
        offsets = [m.get(timeout=30) for m in metadata]
        assert sorted((o.partition, o.offset) for o in offsets) == sorted(
            [(0, i) for i in range(10)] + [(1, i) for i in range(10)]
        )
    finally:
        producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        enable_auto_commit=False,
        consumer_timeout_ms=5000,
    )
    try:
        consumer.assign([KpTP("kp-events", 0), KpTP("kp-events", 1)])
        consumer.seek_to_beginning()
        values = sorted(r.value for r in consumer)
        assert values == sorted(b"x%d" % i for i in range(20))
        ends = consumer.end_offsets([KpTP("kp-events", 0), KpTP("kp-events", 1)])
        assert ends == {KpTP("kp-events", 0): 10, KpTP("kp-events", 1): 10}
    finally:
        consumer.close()


def test_kafka_python_sees_max_message_bytes(cluster: Cluster) -> None:
    _create(cluster, "small", rf=1, **{"max.message.bytes": "2000"})
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers, retries=0, max_request_size=10_000_000
    )
    try:
        future = producer.send("small", value=b"x" * 5000)
        with pytest.raises(MessageSizeTooLargeError):
            future.get(timeout=30)
        assert producer.send("small", value=b"y" * 100).get(timeout=30).offset == 0
    finally:
        producer.close()


def test_aiokafka_produce_and_consume(cluster: Cluster) -> None:
    _create(cluster, "aio")

    async def scenario() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
        await producer.start()
        try:
            for i in range(30):
                await producer.send_and_wait("aio", b"m%d" % i)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False
        )
        await consumer.start()
        try:
            tp = AioTP("aio", 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            got: list[bytes] = []
            while len(got) < 30:
                batch = await consumer.getmany(tp, timeout_ms=5000)
                got.extend(r.value for r in batch.get(tp, []))
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(scenario()) == [b"m%d" % i for i in range(30)]


def test_long_poll_wakes_on_produce(cluster: Cluster) -> None:
    _create(cluster, "waiting", rf=1)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "waiter",
            "fetch.wait.max.ms": 10_000,
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition("waiting", 0, 0)])
        consumer.poll(1.0)  # the consumer is now parked in a long poll
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        sent = time.monotonic()
        producer.produce("waiting", value=b"wake")
        producer.flush(10)
        message = None
        while message is None and time.monotonic() - sent < 8:
            message = consumer.poll(0.1)
        assert message is not None and message.value() == b"wake"
        # Well before fetch.wait.max.ms: the append completed the waiting fetch.
        assert time.monotonic() - sent < 5
    finally:
        consumer.close()


def test_list_offsets_and_delete_records_through_confluent_admin(cluster: Cluster) -> None:
    _create(cluster, "offsets", rf=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    base = 1_700_000_000_000
    for i in range(10):
        producer.produce("offsets", value=b"%d" % i, timestamp=base + i * 1000)
    producer.flush(10)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    tp = TopicPartition("offsets", 0)

    def offset_of(spec: OffsetSpec) -> tuple[int, int]:
        result = admin.list_offsets({tp: spec}, request_timeout=15)[tp].result()
        return result.offset, result.timestamp

    assert offset_of(OffsetSpec.earliest())[0] == 0
    assert offset_of(OffsetSpec.latest())[0] == 10
    assert offset_of(OffsetSpec.for_timestamp(base + 3500)) == (4, base + 4000)
    assert offset_of(OffsetSpec.for_timestamp(base + 60_000))[0] == -1
    assert offset_of(OffsetSpec.max_timestamp()) == (9, base + 9000)

    deleted = admin.delete_records([TopicPartition("offsets", 0, 4)])[tp].result()
    assert deleted.low_watermark == 4
    assert offset_of(OffsetSpec.earliest())[0] == 4
    # Reading below the new log start is out of range; the consumer resets to earliest.
    got = _consume_confluent(cluster, "offsets", 6, **{"auto.offset.reset": "earliest"})
    assert [int(m.value()) for m in got] == list(range(4, 10))

    with pytest.raises(KafkaException) as raised:
        admin.delete_records([TopicPartition("offsets", 0, 99)])[tp].result()
    assert raised.value.args[0].code() == error_codes.OFFSET_OUT_OF_RANGE


def test_produce_errors_on_the_wire(cluster: Cluster) -> None:
    _create(cluster, "wired", rf=1)
    leader = cluster.engine.image.topics["wired"].partitions[0].leader
    follower = next(b for b in (0, 1, 2) if b != leader)
    batch = encode_batch([NewRecord(0, int(time.time() * 1000), b"k", b"v")])

    def produce(broker_id: int, *, acks: int = -1, topic: str = "wired", records: bytes = batch):
        handle = cluster.engine.brokers[broker_id]
        with WireClient(handle.host, handle.port) as client:
            return client.request(
                9,
                ProduceRequest(
                    acks=acks,
                    timeout_ms=5000,
                    topic_data=[
                        TopicProduceData(
                            name=topic,
                            partition_data=[PartitionProduceData(index=0, records=records)],
                        )
                    ],
                ),
            )

    def code(response: object) -> int:
        return response.responses[0].partition_responses[0].error_code  # type: ignore[attr-defined]

    assert code(produce(leader)) == error_codes.NONE
    assert code(produce(follower)) == error_codes.NOT_LEADER_OR_FOLLOWER
    assert code(produce(leader, acks=2)) == error_codes.INVALID_REQUIRED_ACKS
    assert code(produce(leader, topic="nope")) == error_codes.UNKNOWN_TOPIC_OR_PARTITION
    corrupt = bytearray(batch)
    corrupt[-1] ^= 0xFF
    assert code(produce(leader, records=bytes(corrupt))) == error_codes.CORRUPT_MESSAGE
    assert code(produce(leader, topic="__consumer_offsets")) in (
        error_codes.INVALID_TOPIC_EXCEPTION,
        error_codes.UNKNOWN_TOPIC_OR_PARTITION,
    )


@pytest.mark.skipif(
    shutil.which("kcat") is None, reason="kcat is not installed (apt-get install kcat)"
)
def test_kcat_produces_and_consumes(cluster: Cluster) -> None:
    _create(cluster, "kcat-topic", rf=1)
    lines = "\n".join(f"line {i}" for i in range(50)) + "\n"
    subprocess.run(
        ["kcat", "-P", "-b", cluster.bootstrap_servers, "-t", "kcat-topic", "-p", "0"],
        input=lines.encode(),
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        [
            "kcat",
            "-C",
            "-b",
            cluster.bootstrap_servers,
            "-t",
            "kcat-topic",
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-q",
        ],
        check=True,
        timeout=60,
        capture_output=True,
    )
    assert out.stdout.decode().splitlines() == [f"line {i}" for i in range(50)]


def test_leader_moves_and_consumer_follows(cluster: Cluster) -> None:
    _create(cluster, "moving", rf=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(50):
        producer.produce("moving", value=b"%d" % i)
    producer.flush(10)
    old_leader = cluster.engine.image.topics["moving"].partitions[0].leader
    cluster.stop_broker(old_leader)
    wait_until(lambda: cluster.engine.image.topics["moving"].partitions[0].leader != old_leader)
    for i in range(50, 100):
        producer.produce("moving", value=b"%d" % i)
    assert producer.flush(30) == 0
    got = _consume_confluent(cluster, "moving", 100)
    assert [int(m.value()) for m in got] == list(range(100))


def _target(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:  # closed meanwhile
        return ""


def test_records_survive_a_restart_with_log_dir(
    cluster_factory: Callable[..., Cluster], tmp_path
) -> None:
    log_dir = tmp_path / "logs"
    first = cluster_factory(log_dir=str(log_dir))
    _create(first, "durable", rf=1)
    producer = Producer({"bootstrap.servers": first.bootstrap_servers})
    for i in range(20):
        producer.produce("durable", value=b"%d" % i)
    producer.flush(10)
    leader = first.engine.image.topics["durable"].partitions[0].leader
    # Each broker keeps its logs in its own directory (issue 43).
    assert any(p.suffix == ".log" for p in (log_dir / f"broker-{leader}" / "durable-0").iterdir())
    first.stop()
    # A stopped cluster keeps no log file open (the directory may be removed or reused).
    assert not [f for f in Path("/proc/self/fd").iterdir() if str(log_dir) in _target(f)]
    first.start()
    wait_visible(first, "durable")
    assert [r.value for r in first.records("durable")] == [b"%d" % i for i in range(20)]
    first.stop()

    second = cluster_factory(log_dir=str(log_dir))
    wait_visible(second, "durable")
    got = _consume_confluent(second, "durable", 20)
    assert [int(m.value()) for m in got] == list(range(20))


def test_idempotent_retries_are_not_written_twice(cluster: Cluster) -> None:
    _create(cluster, "idem", rf=1)
    leader = cluster.engine.image.topics["idem"].partitions[0].leader
    handle = cluster.engine.brokers[leader]
    with WireClient(handle.host, handle.port) as client:
        pid = client.request(4, InitProducerIdRequest(transactional_id=None)).producer_id
        assert pid >= 0
        now = int(time.time() * 1000)

        def send(first_seq: int, epoch: int = 0, count: int = 2) -> tuple[int, int]:
            batch = encode_batch(
                [NewRecord(i, now, None, b"r%d" % (first_seq + i)) for i in range(count)],
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=first_seq,
            )
            answer = (
                client.request(
                    9,
                    ProduceRequest(
                        acks=-1,
                        timeout_ms=5000,
                        topic_data=[
                            TopicProduceData(
                                name="idem",
                                partition_data=[PartitionProduceData(index=0, records=batch)],
                            )
                        ],
                    ),
                )
                .responses[0]
                .partition_responses[0]
            )
            return answer.error_code, answer.base_offset

        assert send(0) == (error_codes.NONE, 0)
        assert send(2) == (error_codes.NONE, 2)
        assert send(2) == (error_codes.NONE, 2)  # a retry: the same offsets, nothing appended
        assert send(7)[0] == error_codes.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert send(0, epoch=1) == (error_codes.NONE, 4)
        assert send(4, epoch=0)[0] == error_codes.INVALID_PRODUCER_EPOCH
        transactional = client.request(4, InitProducerIdRequest(transactional_id="tx"))
        # The coordinator checks the timeout first: 0 is outside (0, transaction.max.timeout.ms].
        assert transactional.error_code == error_codes.INVALID_TRANSACTION_TIMEOUT
    assert [r.value for r in cluster.records("idem")] == [b"r0", b"r1", b"r2", b"r3", b"r0", b"r1"]


def test_producer_ids_are_unique_across_brokers(cluster: Cluster, kazoo) -> None:
    seen = []
    for broker_id in (0, 1, 2):
        handle = cluster.engine.brokers[broker_id]
        with WireClient(handle.host, handle.port) as client:
            for _ in range(3):
                seen.append(
                    client.request(4, InitProducerIdRequest(transactional_id=None)).producer_id
                )
    assert len(set(seen)) == len(seen)
    block = json.loads(kazoo.get("/latest_producer_id_block")[0])
    assert block["version"] == 1 and block["block_end"] == "2999"


def test_cluster_produce_and_records(cluster: Cluster) -> None:
    _create(cluster, "helpers", rf=3)
    assert cluster.produce("helpers", b"one", key=b"k", headers=[("h", b"v")]) == 0
    assert cluster.produce("helpers", b"two") == 1
    records = cluster.records("helpers")
    assert [(r.offset, r.key, r.value) for r in records] == [(0, b"k", b"one"), (1, None, b"two")]
    assert records[0].headers == ((b"h", b"v"),)
    got = _consume_confluent(cluster, "helpers", 2)
    assert [m.value() for m in got] == [b"one", b"two"]
    with pytest.raises(ProduceFailed) as failed:
        cluster.produce("absent", b"x")
    assert failed.value.code == error_codes.UNKNOWN_TOPIC_OR_PARTITION


def test_injected_not_leader_on_produce_is_retried(cluster: Cluster) -> None:
    _create(cluster, "faulty", partitions=2, rf=1)
    cluster.capture()
    cluster.faults.push_error(
        "Produce", "NOT_LEADER_OR_FOLLOWER", count=2, topic="faulty", partition=1
    )
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "retry.backoff.ms": 10})
    errors: list = []
    producer.produce("faulty", b"p0", partition=0, on_delivery=lambda e, m: errors.append(e))
    producer.produce("faulty", b"p1", partition=1, on_delivery=lambda e, m: errors.append(e))
    assert producer.flush(30) == 0
    assert errors == [None, None]
    # The two injected answers wrote nothing; the retry wrote the record once.
    assert [r.value for r in cluster.records("faulty", 1)] == [b"p1"]
    produced = cluster.requests(api="Produce")
    injected = [r for r in produced if r.intervention is not None]
    assert len(injected) == 2
    assert all(r.error_codes == [error_codes.NOT_LEADER_OR_FOLLOWER] for r in injected)


def test_injected_error_on_the_third_produce_to_one_partition(cluster: Cluster) -> None:
    # skip=2: the first two Produce requests naming third/0 pass, the third is refused.
    _create(cluster, "third", partitions=1, rf=1)
    cluster.capture()
    fault_id = cluster.faults.push_error(
        "Produce", "NOT_LEADER_OR_FOLLOWER", topic="third", partition=0, skip=2
    )
    (listed,) = [f for f in cluster.faults.list() if f.fault_id == fault_id]
    assert "skip=2" in listed.describe()
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "retry.backoff.ms": 10, "linger.ms": 0}
    )
    errors: list = []
    for i in range(4):
        producer.produce("third", b"%d" % i, on_delivery=lambda e, m: errors.append(e))
        assert producer.flush(30) == 0  # one Produce request per record
    assert errors == [None] * 4
    codes = [r.error_codes for r in cluster.requests(api="Produce")]
    assert codes[:4] == [[], [], [error_codes.NOT_LEADER_OR_FOLLOWER], []]  # errors only
    # The refused request wrote nothing; its retry wrote the record once.
    assert [r.value for r in cluster.records("third")] == [b"0", b"1", b"2", b"3"]
    assert [f.fault_id for f in cluster.faults.observed(fault_id)] == [fault_id]
    assert fault_id not in [f.fault_id for f in cluster.faults.list()]  # consumed
