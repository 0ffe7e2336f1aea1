"""Transaction and producer-state rules that differ between releases, on both sides of each
boundary (docs/kafka-behaviour.md §17), against real clusters on a real ZooKeeper:

- a producer's state when DeleteRecords moves the log start offset past its records (dropped
  before 2.4, kept from 2.4) and an unknown producer's first sequence (UNKNOWN_PRODUCER_ID
  from 1.0 to 2.4, any sequence from 2.5), with confluent-kafka's transactional producer and
  over the wire;
- EndTxn with the producer epoch + 1 (refused after PrepareCommit is written before 2.6, before
  any write from 2.6), over the wire: no client sends another epoch than its own;
- KIP-890 verification failures of Produce and TxnOffsetCommit from 3.6 (an unknown
  transactional id, a partition not in the transaction), over the wire.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.helpers import wait_until, wait_visible
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from zkbroker.broker.protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from zkbroker.broker.protocol.messages.end_txn import EndTxnRequest
from zkbroker.broker.protocol.messages.find_coordinator import FindCoordinatorRequest
from zkbroker.broker.protocol.messages.init_producer_id import InitProducerIdRequest
from zkbroker.broker.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from zkbroker.broker.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from zkbroker.broker.protocol.records import NewRecord, encode_batch
from zkbroker.broker.protocol.releases import advertised_range, parse_release
from zkbroker.broker.toolkit.wire import WireClient

TOPIC = "rules-out"
TXN = "rules-txn"
CONFIGS = (("transaction.state.log.num.partitions", "5"),)


def _start(cluster_factory: Callable[..., Cluster], version: str) -> Cluster:
    cluster = cluster_factory(broker_configs=CONFIGS, kafka_version=version)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(timeout=30)
    wait_visible(cluster, TOPIC)
    return cluster


def _top(version: str, api_key: int) -> int:
    found = advertised_range(parse_release(version), api_key)
    assert found is not None
    return found[1]


def _find(cluster: Cluster, key: str, key_type: int) -> WireClient:
    def ask() -> WireClient | None:
        try:
            with WireClient.to(cluster.bootstrap_servers) as client:
                got = client.request(1, FindCoordinatorRequest(key=key, key_type=key_type))
            return WireClient(got.host, got.port) if got.error_code == ec.NONE else None
        except ConnectionRefusedError:
            return None  # a broker just stopped, not yet out of the metadata

    return wait_until(ask, timeout=30)


def _leader(cluster: Cluster) -> WireClient:
    leader = cluster.engine.image.topics[TOPIC].partitions[0].leader
    node = cluster.engine.brokers[leader]
    return WireClient(node.host, node.port)


def _log_end(cluster: Cluster) -> int:
    log = cluster.engine.log_of(TOPIC, 0)
    return -1 if log is None else log.log_end_offset


def _produce(
    client: WireClient,
    version: int,
    *,
    pid: int,
    epoch: int,
    sequence: int,
    count: int = 1,
    transactional_id: str | None = None,
) -> int:
    now = int(time.time() * 1000)
    batch = encode_batch(
        [NewRecord(i, now, None, b"v") for i in range(count)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        transactional=transactional_id is not None,
    )
    got = client.request(
        version,
        ProduceRequest(
            transactional_id=transactional_id,
            acks=-1,
            timeout_ms=5000,
            topic_data=[
                TopicProduceData(
                    name=TOPIC, partition_data=[PartitionProduceData(index=0, records=batch)]
                )
            ],
        ),
    )
    return int(got.responses[0].partition_responses[0].error_code)


def _add(client: WireClient, pid: int, epoch: int) -> int:
    got = client.request(
        0,
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=TXN,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnTopic(name=TOPIC, partitions=[0])],
        ),
    )
    return int(got.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)


def _end(client: WireClient, pid: int, epoch: int, commit: bool = True) -> int:
    request = EndTxnRequest(
        transactional_id=TXN, producer_id=pid, producer_epoch=epoch, committed=commit
    )
    return int(client.request(0, request).error_code)


def _delete_records(cluster: Cluster, offset: int) -> int:
    with _leader(cluster) as client:
        got = client.request(
            0,
            DeleteRecordsRequest(
                topics=[
                    DeleteRecordsTopic(
                        name=TOPIC,
                        partitions=[DeleteRecordsPartition(partition_index=0, offset=offset)],
                    )
                ],
                timeout_ms=5000,
            ),
        )
    return int(got.topics[0].partitions[0].error_code)


# ---- producer state after DeleteRecords (item 1) -------------------------------------------


def _values(cluster: Cluster) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"reader-{time.monotonic_ns()}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, 0, -2)])  # from the log start
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                break
            values.append(message.value())
        return values
    finally:
        consumer.close()


@pytest.mark.parametrize(("version", "kept"), [("2.3", False), ("2.4", True), ("3.9", True)])
def test_a_transactional_producer_after_delete_records(
    cluster_factory: Callable[..., Cluster], version: str, kept: bool
) -> None:
    """Sequences 0-5 committed (marker at 6), DeleteRecords to 6, then the same producer's next
    transaction (base sequence 6): from 2.4 its state is still there and the commit goes
    through; 2.3 dropped it and answers UNKNOWN_PRODUCER_ID, which fails the transaction."""
    cluster = _start(cluster_factory, version)
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "transactional.id": f"dr-{version}",
            "linger.ms": 50,
        }
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(6):
        producer.produce(TOPIC, value=f"before-{i}".encode(), partition=0)
    producer.commit_transaction(30)
    wait_until(lambda: _log_end(cluster) == 7)  # six records and the COMMIT marker
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    moved = admin.delete_records([TopicPartition(TOPIC, 0, 6)])
    assert next(iter(moved.values())).result(30).low_watermark == 6
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"after", partition=0)
    if kept:
        producer.commit_transaction(30)
        assert _values(cluster) == [b"after"]
    else:
        with pytest.raises(KafkaException) as failure:
            producer.commit_transaction(30)
        assert failure.value.args[0].code() == KafkaError.UNKNOWN_PRODUCER_ID, failure.value
        assert _values(cluster) == []


@pytest.mark.parametrize(
    ("version", "after_delete", "unknown"),
    [
        ("0.11.0", ec.NONE, ec.OUT_OF_ORDER_SEQUENCE_NUMBER),  # its marker keeps it
        ("1.0", ec.UNKNOWN_PRODUCER_ID, ec.UNKNOWN_PRODUCER_ID),
        ("2.3", ec.UNKNOWN_PRODUCER_ID, ec.UNKNOWN_PRODUCER_ID),
        ("2.4", ec.NONE, ec.UNKNOWN_PRODUCER_ID),
        ("2.5", ec.NONE, ec.NONE),
    ],
)
def test_producer_state_codes_per_release(
    cluster_factory: Callable[..., Cluster], version: str, after_delete: int, unknown: int
) -> None:
    """Over the wire, the exact codes: the next batch of a producer whose records DeleteRecords
    moved the log start past (its COMMIT marker at the new start), and the first batch of a
    producer the partition never saw, starting at sequence 5."""
    cluster = _start(cluster_factory, version)
    produce_version = _top(version, 0)
    with _find(cluster, TXN, 1) as coordinator:
        init = coordinator.request(
            0, InitProducerIdRequest(transactional_id=TXN, transaction_timeout_ms=60_000)
        )
        pid, epoch = init.producer_id, init.producer_epoch
        assert _add(coordinator, pid, epoch) == ec.NONE
        with _leader(cluster) as leader:
            assert (
                _produce(
                    leader,
                    produce_version,
                    pid=pid,
                    epoch=epoch,
                    sequence=0,
                    count=6,
                    transactional_id=TXN,
                )
                == ec.NONE
            )
        assert _end(coordinator, pid, epoch) == ec.NONE
        wait_until(lambda: _log_end(cluster) == 7)
        assert _delete_records(cluster, 6) == ec.NONE
        assert _add(coordinator, pid, epoch) == ec.NONE
        with _leader(cluster) as leader:
            got = _produce(
                leader, produce_version, pid=pid, epoch=epoch, sequence=6, transactional_id=TXN
            )
            assert got == after_delete
            idempotent = leader.request(
                0, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000)
            )
            other = idempotent.producer_id
            assert _produce(leader, produce_version, pid=other, epoch=0, sequence=5) == unknown


# ---- EndTxn with the producer epoch + 1 (item 3) -------------------------------------------


@pytest.mark.parametrize("version", ["2.4", "2.5"])
def test_before_2_6_end_txn_with_a_newer_epoch_leaves_the_commit_prepared(
    cluster_factory: Callable[..., Cluster], version: str
) -> None:
    """endTransaction fences only an older epoch before it writes PrepareCommit, then finds
    the epoch changed and answers INVALID_PRODUCER_EPOCH: no markers are sent, the id stays in
    PrepareCommit until another coordinator loads the log and completes it."""
    cluster = _start(cluster_factory, version)
    with _find(cluster, TXN, 1) as coordinator:
        port = coordinator.sock.getpeername()[1]
        init = coordinator.request(
            0, InitProducerIdRequest(transactional_id=TXN, transaction_timeout_ms=60_000)
        )
        pid, epoch = init.producer_id, init.producer_epoch
        assert _add(coordinator, pid, epoch) == ec.NONE
        assert _end(coordinator, pid, epoch + 1) == ec.INVALID_PRODUCER_EPOCH
        # Prepared, never completed: the producer's own commit and a new instance both wait.
        assert _end(coordinator, pid, epoch) == ec.CONCURRENT_TRANSACTIONS
        again = InitProducerIdRequest(transactional_id=TXN, transaction_timeout_ms=60_000)
        # A negative check, so a window: nothing is left to complete the commit (no markers
        # are sent); half a second later it is still prepared.
        time.sleep(0.5)
        assert coordinator.request(0, again).error_code == ec.CONCURRENT_TRANSACTIONS
    old = next(b for b, h in cluster.brokers.items() if h.port == port)
    cluster.stop_broker(old)

    def completed() -> bool:
        with _find(cluster, TXN, 1) as client:
            return _end(client, pid, epoch) == ec.NONE  # a retry of a completed commit

    wait_until(completed, timeout=30)


@pytest.mark.parametrize("version", ["2.6", "3.9"])
def test_from_2_6_end_txn_with_a_newer_epoch_writes_nothing(
    cluster_factory: Callable[..., Cluster], version: str
) -> None:
    cluster = _start(cluster_factory, version)
    with _find(cluster, TXN, 1) as coordinator:
        init = coordinator.request(
            0, InitProducerIdRequest(transactional_id=TXN, transaction_timeout_ms=60_000)
        )
        pid, epoch = init.producer_id, init.producer_epoch
        assert _add(coordinator, pid, epoch) == ec.NONE
        # EndTxn v0 cannot read PRODUCER_FENCED: INVALID_PRODUCER_EPOCH on every release.
        assert _end(coordinator, pid, epoch + 1) == ec.INVALID_PRODUCER_EPOCH
        assert _end(coordinator, pid, epoch) == ec.NONE
        wait_until(lambda: _end(coordinator, pid, epoch) == ec.NONE)


# ---- KIP-890 verification failures (item 4) -------------------------------------------------


def _txn_offset_commit(cluster: Cluster, version: int, pid: int, epoch: int) -> int:
    group = "rules-group"
    with _find(cluster, group, 0) as client:

        def commit() -> tuple[int] | None:
            got = client.request(
                version,
                TxnOffsetCommitRequest(
                    transactional_id=TXN,
                    group_id=group,
                    producer_id=pid,
                    producer_epoch=epoch,
                    topics=[
                        TxnOffsetCommitRequestTopic(
                            name=TOPIC,
                            partitions=[
                                TxnOffsetCommitRequestPartition(
                                    partition_index=0, committed_offset=3
                                )
                            ],
                        )
                    ],
                ),
            )
            code = int(got.topics[0].partitions[0].error_code)
            # The offsets and transaction logs may still be loading.
            transient = (ec.COORDINATOR_LOAD_IN_PROGRESS, ec.COORDINATOR_NOT_AVAILABLE)
            return None if code in transient else (code,)

        return wait_until(commit, timeout=30)[0]


@pytest.mark.parametrize(
    ("version", "code"),
    [
        ("3.6", ec.NONE),  # its ZooKeeper-mode group coordinator did not verify
        ("3.7", ec.INVALID_PRODUCER_ID_MAPPING),
        ("3.8", ec.INVALID_PRODUCER_ID_MAPPING),
        ("3.9", ec.INVALID_PRODUCER_ID_MAPPING),
    ],
)
def test_txn_offset_commit_of_an_unknown_transactional_id(
    cluster_factory: Callable[..., Cluster], version: str, code: int
) -> None:
    cluster = _start(cluster_factory, version)
    with _find(cluster, TXN, 1):
        pass  # the transaction log exists: the verification reaches a coordinator
    assert _txn_offset_commit(cluster, _top(version, 28), 999, 999) == code


@pytest.mark.parametrize(
    ("version", "code"),
    [
        ("3.5", ec.NONE),  # no verification: appended
        ("3.6", ec.INVALID_PRODUCER_ID_MAPPING),
        ("3.9", ec.INVALID_PRODUCER_ID_MAPPING),
    ],
)
def test_produce_of_an_unknown_transactional_id(
    cluster_factory: Callable[..., Cluster], version: str, code: int
) -> None:
    cluster = _start(cluster_factory, version)
    with _find(cluster, TXN, 1):
        pass
    with _leader(cluster) as leader:
        got = _produce(
            leader, _top(version, 0), pid=999, epoch=999, sequence=0, transactional_id=TXN
        )
    assert got == code


@pytest.mark.parametrize(
    ("version", "produce", "offsets"),
    [
        ("3.7", {10: ec.INVALID_TXN_STATE}, {3: ec.INVALID_TXN_STATE}),
        (
            "3.8",
            {10: ec.INVALID_TXN_STATE, 11: ec.TRANSACTION_ABORTABLE},
            {3: ec.INVALID_TXN_STATE, 4: ec.TRANSACTION_ABORTABLE},
        ),
    ],
)
def test_a_partition_not_in_the_transaction(
    cluster_factory: Callable[..., Cluster],
    version: str,
    produce: dict[int, int],
    offsets: dict[int, int],
) -> None:
    """The coordinator answers INVALID_TXN_STATE (3.6-3.7) or TRANSACTION_ABORTABLE (3.8+) for a
    partition the producer did not add; from 3.8 only Produce v11+ and TxnOffsetCommit v4+
    get TRANSACTION_ABORTABLE, older versions INVALID_TXN_STATE."""
    cluster = _start(cluster_factory, version)
    with _find(cluster, TXN, 1) as coordinator:
        init = coordinator.request(
            0, InitProducerIdRequest(transactional_id=TXN, transaction_timeout_ms=60_000)
        )
        pid, epoch = init.producer_id, init.producer_epoch
    with _leader(cluster) as leader:
        for produce_version, code in produce.items():
            got = _produce(
                leader, produce_version, pid=pid, epoch=epoch, sequence=0, transactional_id=TXN
            )
            assert got == code, produce_version
    for commit_version, code in offsets.items():
        assert _txn_offset_commit(cluster, commit_version, pid, epoch) == code, commit_version
