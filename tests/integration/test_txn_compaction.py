"""The log cleaner on transactional data written by real clients (docs/kafka-behaviour.md §15
"Compaction" and §17; Kafka 3.9's ``LogCleaner`` with ``CleanedTransactionMetadata``).

* A compacted topic holding plain records, then a committed and an aborted transaction over
  the same keys: once cleaned, read_uncommitted and read_committed consumers both see the
  committed values only (the aborted records went whatever their keys and did not shadow the
  committed ones), and no transaction is left open.
* ``__consumer_offsets`` holding a group's offsets sent in transactions, committed and aborted
  in turn: once cleaned and loaded by a new coordinator (a restart), the group's offset is the
  last committed one, never an aborted one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.helpers import wait_until, wait_visible
from zkbroker import Cluster

FAST_PASSES = ("log.retention.check.interval.ms", "200")
TXN_CONFIGS = (("transaction.state.log.num.partitions", "1"),)
KEYS = [f"k{i}".encode() for i in range(5)]


def _create(cluster: Cluster, name: str, config: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=1, replication_factor=3, config=config)]
    )
    futures[name].result(timeout=30)
    wait_visible(cluster, name)


def _txn_producer(cluster: Cluster, txn: str) -> Producer:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn})
    producer.init_transactions(30)
    return producer


def _read(cluster: Cluster, topic: str, isolation: str) -> list[tuple[bytes, bytes]]:
    """(key, value) of every record up to the partition's end, as a consumer with `isolation`
    reads them."""
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
        consumer.assign([TopicPartition(topic, 0, 0)])
        out: list[tuple[bytes, bytes]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                break  # end of partition
            out.append((message.key() or b"", message.value() or b""))
        return out
    finally:
        consumer.close()


def test_committed_and_aborted_transactions_on_a_compacted_topic(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = cluster_factory(
        log_dir=str(tmp_path), broker_configs=(FAST_PASSES, *TXN_CONFIGS), kafka_version="3.9"
    )
    topic = "txn-compacted"
    _create(
        cluster,
        topic,
        {"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"},
    )
    plain = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for key in KEYS:
        plain.produce(topic, key=key, value=b"base", partition=0)
    assert plain.flush(30) == 0

    committer = _txn_producer(cluster, "committer")
    committer.begin_transaction()
    for key in KEYS:
        committer.produce(topic, key=key, value=b"committed", partition=0)
    committer.commit_transaction(30)

    aborter = _txn_producer(cluster, "aborter")
    aborter.begin_transaction()
    for key in KEYS:
        aborter.produce(topic, key=key, value=b"aborted", partition=0)
    assert aborter.flush(30) == 0  # the aborted records are in the log before the marker
    aborter.abort_transaction(30)

    # Two large records, one request each: the second rolls a new active segment, so every
    # keyed record and marker above lies in a cleanable segment.
    for _ in range(2):
        plain.produce(topic, key=b"filler", value=b"x" * 600, partition=0)
        assert plain.flush(30) == 0

    def cleaned() -> bool:
        kept = [r for r in cluster.records(topic) if r.key in KEYS]
        return len(kept) == len(KEYS)

    wait_until(cleaned, timeout=30)
    expected = sorted((key, b"committed") for key in KEYS)
    in_log = sorted((r.key or b"", r.value or b"") for r in cluster.records(topic) if r.key in KEYS)
    assert in_log == expected
    for isolation in ("read_uncommitted", "read_committed"):
        got = [kv for kv in _read(cluster, topic, isolation) if kv[0] != b"filler"]
        assert sorted(got) == expected, isolation

    def stable() -> tuple[int, int]:
        log = cluster.engine.log_of(topic, 0)
        assert log is not None
        return log.last_stable_offset, log.log_end_offset

    lso, leo = cluster.run_sync(stable)
    assert lso == leo


def test_consumer_offsets_with_transactional_commits_reload_after_compaction(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    configs = (
        FAST_PASSES,
        *TXN_CONFIGS,
        ("offsets.topic.num.partitions", "1"),
        ("offsets.topic.segment.bytes", "2048"),
    )
    cluster = cluster_factory(log_dir=str(tmp_path), broker_configs=configs, kafka_version="3.9")
    _create(cluster, "src", {})
    group = "txn-committer"
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
        }
    )
    producer = _txn_producer(cluster, "offsets-sender")
    try:
        metadata = consumer.consumer_group_metadata()
        # Offsets 1..41 sent in transactions; the odd ones are aborted, the last one too.
        for offset in range(1, 42):
            producer.begin_transaction()
            producer.send_offsets_to_transaction([TopicPartition("src", 0, offset)], metadata, 30)
            if offset % 2 == 0:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)
        assert consumer.committed([TopicPartition("src", 0)], timeout=30)[0].offset == 40
    finally:
        consumer.close()

    # Another group's plain commits roll `__consumer_offsets` past the transactions, so each
    # of their records lies in a cleanable segment.
    filler = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "filler",
            "enable.auto.commit": False,
        }
    )
    try:
        for offset in range(1, 61):
            filler.commit(offsets=[TopicPartition("src", 0, offset)], asynchronous=False)
    finally:
        filler.close()

    def records_of_group() -> int:
        key = group.encode()
        return sum(1 for r in cluster.records("__consumer_offsets") if r.key and key in r.key)

    # One record of the group's offset is left: the committed 40 (the aborted 41 went).
    wait_until(lambda: records_of_group() == 1, timeout=30)

    cluster.stop()
    again = cluster_factory(log_dir=str(tmp_path), broker_configs=configs, kafka_version="3.9")
    admin = AdminClient({"bootstrap.servers": again.bootstrap_servers})

    def committed() -> int | None:
        try:
            answer = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, [TopicPartition("src", 0)])]
            )[group].result(10)
        except (KafkaException, TimeoutError):  # the coordinator is still loading
            return None
        offset = int(answer.topic_partitions[0].offset)
        return offset if offset >= 0 else None

    assert wait_until(committed, timeout=60, interval=0.5) == 40
