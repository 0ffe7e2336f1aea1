"""The transaction coordinator over the wire: FindCoordinator, InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, DescribeTransactions and ListTransactions with their Kafka error codes
(docs/kafka-behaviour.md §17), against a real cluster on a real ZooKeeper.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.integration.helpers import wait_until, wait_visible
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from zkbroker.broker.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from zkbroker.broker.protocol.messages.describe_transactions import DescribeTransactionsRequest
from zkbroker.broker.protocol.messages.end_txn import EndTxnRequest
from zkbroker.broker.protocol.messages.find_coordinator import FindCoordinatorRequest
from zkbroker.broker.protocol.messages.init_producer_id import InitProducerIdRequest
from zkbroker.broker.protocol.messages.list_transactions import ListTransactionsRequest
from zkbroker.broker.rules.transactions.decisions import partition_for
from zkbroker.broker.toolkit.wire import WireClient

TXN = "txn-wire"
TOPIC = "txn-topic"
# A small transaction log keeps the topic's creation quick; the hash rule is the same.
CONFIGS = (("transaction.state.log.num.partitions", "5"),)


def _coordinator(cluster: Cluster, txn: str = TXN) -> WireClient:
    """FindCoordinator(TRANSACTION) until the log exists and its partition has a leader."""

    def ask() -> WireClient | None:
        with WireClient.to(cluster.bootstrap_servers) as client:
            got = client.request(3, FindCoordinatorRequest(key=txn, key_type=1))
        if got.error_code != ec.NONE:
            return None
        try:
            return WireClient(got.host, got.port)
        except ConnectionRefusedError:
            return None  # a broker just stopped, not yet out of the metadata

    return wait_until(ask, timeout=30)


def _init(client: WireClient, version: int = 4, timeout_ms: int = 60_000, **kw: Any) -> Any:
    return client.request(
        version,
        InitProducerIdRequest(transactional_id=TXN, transaction_timeout_ms=timeout_ms, **kw),
    )


def _add(client: WireClient, version: int, pid: int, epoch: int, topic: str = TOPIC) -> dict:
    got = client.request(
        version,
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=TXN,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnTopic(name=topic, partitions=[0])],
        ),
    )
    return {
        (t.name, p.partition_index): p.partition_error_code
        for t in got.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


def _describe(client: WireClient, txn: str = TXN) -> Any:
    got = client.request(0, DescribeTransactionsRequest(transactional_ids=[txn]))
    return got.transaction_states[0]


def _make_topic(cluster: Cluster) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(timeout=30)
    wait_visible(cluster, TOPIC)


def test_find_coordinator_creates_the_transaction_log(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(broker_configs=CONFIGS, kafka_version="3.9")
    with WireClient.to(cluster.bootstrap_servers) as client:
        first = client.request(3, FindCoordinatorRequest(key=TXN, key_type=1))
        assert first.error_code == ec.COORDINATOR_NOT_AVAILABLE
        assert (first.node_id, first.host, first.port) == (-1, "", -1)
    with _coordinator(cluster) as found:
        port = found.sock.getpeername()[1]
    topic = wait_visible(cluster, "__transaction_state")
    assert len(topic.partitions) == 5
    # Its leader is the leader of the id's partition.
    leader = topic.partitions[partition_for(TXN, 5)].leader
    assert port == cluster.brokers[leader].port


def test_init_add_end_describe_list(cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(broker_configs=CONFIGS, kafka_version="3.9")
    _make_topic(cluster)
    with _coordinator(cluster) as client:
        assert _init(client, timeout_ms=900_001).error_code == ec.INVALID_TRANSACTION_TIMEOUT
        assert _init(client, producer_id=5).error_code == ec.INVALID_REQUEST
        first = _init(client)
        assert (first.error_code, first.producer_epoch) == (ec.NONE, 0)
        pid = first.producer_id
        again = _init(client)
        assert (again.error_code, again.producer_id, again.producer_epoch) == (ec.NONE, pid, 1)
        # The first producer is fenced: PRODUCER_FENCED from v2, INVALID_PRODUCER_EPOCH below.
        assert _add(client, 3, pid, 0) == {(TOPIC, 0): ec.PRODUCER_FENCED}
        assert _add(client, 1, pid, 0) == {(TOPIC, 0): ec.INVALID_PRODUCER_EPOCH}
        assert _add(client, 3, pid + 1, 1) == {(TOPIC, 0): ec.INVALID_PRODUCER_ID_MAPPING}
        assert _add(client, 3, pid, 1, topic="nope") == {("nope", 0): ec.UNKNOWN_TOPIC_OR_PARTITION}
        assert _describe(client).transaction_state == "Empty"
        assert _add(client, 3, pid, 1) == {(TOPIC, 0): ec.NONE}
        state = _describe(client)
        assert (state.error_code, state.transaction_state) == (ec.NONE, "Ongoing")
        assert (state.producer_id, state.producer_epoch) == (pid, 1)
        assert [(t.topic, t.partitions) for t in state.topics] == [(TOPIC, [0])]
        assert state.transaction_timeout_ms == 60_000 and state.transaction_start_time_ms > 0
        home = partition_for(TXN, 5)
        same = next(f"other-{i}" for i in range(100) if partition_for(f"other-{i}", 5) == home)
        assert _describe(client, same).error_code == ec.TRANSACTIONAL_ID_NOT_FOUND
        listed = client.request(
            1, ListTransactionsRequest(state_filters=["Ongoing", "Bogus"], duration_filter=-1)
        )
        assert listed.error_code == ec.NONE
        assert listed.unknown_state_filters == ["Bogus"]
        assert [
            (s.transactional_id, s.producer_id, s.transaction_state)
            for s in listed.transaction_states
        ] == [(TXN, pid, "Ongoing")]
        none = client.request(0, ListTransactionsRequest(producer_id_filters=[pid + 7]))
        assert none.transaction_states == []
        # KIP-890 verification (v4, as a partition leader sends it).
        verified = client.request(
            4,
            AddPartitionsToTxnRequest(
                transactions=[
                    AddPartitionsToTxnTransaction(
                        transactional_id=TXN,
                        producer_id=pid,
                        producer_epoch=1,
                        verify_only=True,
                        topics=[
                            AddPartitionsToTxnTopic(name=TOPIC, partitions=[0]),
                            AddPartitionsToTxnTopic(name="__consumer_offsets", partitions=[0]),
                        ],
                    )
                ]
            ),
        )
        codes = {
            (t.name, p.partition_index): p.partition_error_code
            for r in verified.results_by_transaction
            for t in r.topic_results
            for p in t.results_by_partition
        }
        # __consumer_offsets does not exist yet here: the whole transaction fails the check.
        assert codes == {
            (TOPIC, 0): ec.OPERATION_NOT_ATTEMPTED,
            ("__consumer_offsets", 0): ec.UNKNOWN_TOPIC_OR_PARTITION,
        }
        # AddOffsetsToTxn with the fenced epoch; EndTxn with the fenced epoch.
        fenced = client.request(
            2,
            AddOffsetsToTxnRequest(
                transactional_id=TXN, producer_id=pid, producer_epoch=0, group_id="g"
            ),
        )
        assert fenced.error_code == ec.PRODUCER_FENCED
        end = EndTxnRequest(transactional_id=TXN, producer_id=pid, producer_epoch=0, committed=True)
        assert client.request(1, end).error_code == ec.INVALID_PRODUCER_EPOCH
        end.producer_epoch = 1
        assert client.request(3, end).error_code == ec.NONE
        # Committing again while the markers are written, or once complete, is fine; an abort
        # of the committed transaction is not.
        wait_until(lambda: _describe(client).transaction_state == "CompleteCommit")
        assert client.request(3, end).error_code == ec.NONE
        end.committed = False
        assert client.request(3, end).error_code == ec.INVALID_TXN_STATE
        assert _describe(client).topics == []


def test_other_brokers_are_not_the_coordinator(cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(broker_configs=CONFIGS, kafka_version="3.9")
    with _coordinator(cluster) as client:
        port = client.sock.getpeername()[1]
    other = next(b for b in cluster.brokers.values() if b.port != port)
    with WireClient(other.host, other.port) as client:
        assert _init(client).error_code == ec.NOT_COORDINATOR
        assert _describe(client).error_code == ec.NOT_COORDINATOR
        end = EndTxnRequest(transactional_id=TXN, producer_id=1, producer_epoch=0, committed=True)
        assert client.request(3, end).error_code == ec.NOT_COORDINATOR


def test_coordinator_failover_keeps_the_transaction(
    cluster_factory: Callable[..., Cluster],
) -> None:
    """The next leader of the id's partition replays __transaction_state: same producer id,
    epoch, state and partitions; the old producer's epoch is still fenced there."""
    cluster = cluster_factory(broker_configs=CONFIGS, kafka_version="3.9")
    _make_topic(cluster)
    with _coordinator(cluster) as client:
        port = client.sock.getpeername()[1]
        _init(client)
        again = _init(client)
        pid = again.producer_id
        assert _add(client, 3, pid, 1) == {(TOPIC, 0): ec.NONE}
        before = _describe(client)
    old = next(b for b, h in cluster.brokers.items() if h.port == port)
    cluster.stop_broker(old)
    with _coordinator(cluster) as client:
        assert client.sock.getpeername()[1] != port
        after = _describe(client)
        assert after == before
        assert _add(client, 3, pid, 0) == {(TOPIC, 0): ec.PRODUCER_FENCED}
        # A new producer instance bumps the epoch past the one the old leader gave.
        fenced = _init(client)
        assert fenced.error_code == ec.CONCURRENT_TRANSACTIONS  # aborting the ongoing one
        state = _describe(client)
        assert state.transaction_state in ("PrepareAbort", "CompleteAbort")
        assert state.producer_epoch == 2


def test_verify_for_produce_from_another_broker(cluster_factory: Callable[..., Cluster]) -> None:
    """KIP-890 part 1: a partition leader asks the coordinator, in this process directly and in
    another one with AddPartitionsToTxn v4 verify_only over TCP; both give the same codes."""

    cluster = cluster_factory(broker_configs=CONFIGS, kafka_version="3.9")
    _make_topic(cluster)
    with _coordinator(cluster) as client:
        port = client.sock.getpeername()[1]
        pid = _init(client).producer_id
        assert _add(client, 3, pid, 0) == {(TOPIC, 0): ec.NONE}
    engine = cluster.engine
    coordinator_id = next(b for b, h in cluster.brokers.items() if h.port == port)
    other = next(node for b, node in engine.brokers.items() if b != coordinator_id)
    asked = [(TOPIC, 0), (TOPIC, 1)]
    expected = {(TOPIC, 0): ec.NONE, (TOPIC, 1): ec.TRANSACTION_ABORTABLE}
    verify = other.transaction_coordinator.verify_for_produce
    assert cluster.call(verify(TXN, pid, 0, asked)) == expected
    unknown = {(TOPIC, 0): ec.OPERATION_NOT_ATTEMPTED, (TOPIC, 9): ec.UNKNOWN_TOPIC_OR_PARTITION}
    assert cluster.call(verify(TXN, pid, 0, [(TOPIC, 0), (TOPIC, 9)])) == unknown
    assert cluster.call(verify(TXN, pid, 7, asked)) == dict.fromkeys(asked, ec.PRODUCER_FENCED)
    # As if the coordinator ran in another process: the request goes over the wire.
    node = engine.brokers[coordinator_id]
    cluster.run_sync(lambda: engine.local_brokers.unregister(coordinator_id, node))
    try:
        assert cluster.call(verify(TXN, pid, 0, asked)) == expected
        assert cluster.call(verify(TXN, pid, 0, [(TOPIC, 0), (TOPIC, 9)])) == unknown
    finally:
        cluster.run_sync(lambda: engine.local_brokers.register(coordinator_id, node))


def test_timed_out_transaction_is_fenced_and_aborted(
    cluster_factory: Callable[..., Cluster],
) -> None:
    configs = (*CONFIGS, ("transaction.abort.timed.out.transaction.cleanup.interval.ms", "100"))
    cluster = cluster_factory(broker_configs=configs, kafka_version="3.9")
    _make_topic(cluster)
    with _coordinator(cluster) as client:
        pid = _init(client, timeout_ms=300).producer_id
        assert _add(client, 3, pid, 0) == {(TOPIC, 0): ec.NONE}
        # abortTimedOutTransactions: the epoch is fenced (bumped) and the transaction aborted.
        state = wait_until(
            lambda: (
                (s := _describe(client)).transaction_state in ("PrepareAbort", "CompleteAbort")
                and s
            )
        )
        assert (state.producer_id, state.producer_epoch) == (pid, 1)
        end = EndTxnRequest(transactional_id=TXN, producer_id=pid, producer_epoch=0, committed=True)
        assert client.request(3, end).error_code == ec.PRODUCER_FENCED
        wait_until(lambda: _describe(client).transaction_state == "CompleteAbort")


def test_idle_transactional_id_expires(cluster_factory: Callable[..., Cluster]) -> None:
    configs = (
        *CONFIGS,
        ("transactional.id.expiration.ms", "300"),
        ("transaction.remove.expired.transaction.cleanup.interval.ms", "100"),
    )
    cluster = cluster_factory(broker_configs=configs, kafka_version="3.9")
    _make_topic(cluster)
    with _coordinator(cluster) as client:
        pid = _init(client).producer_id
        assert _describe(client).transaction_state == "Empty"
        # A tombstone is written and the id forgotten: its producer id no longer maps.
        wait_until(lambda: _describe(client).error_code == ec.TRANSACTIONAL_ID_NOT_FOUND)
        assert _add(client, 3, pid, 0) == {(TOPIC, 0): ec.INVALID_PRODUCER_ID_MAPPING}
        again = _init(client)
        assert (again.error_code, again.producer_epoch) == (ec.NONE, 0)
        assert again.producer_id != pid


def test_releases_before_2_7_answer_invalid_producer_epoch(
    cluster_factory: Callable[..., Cluster],
) -> None:
    """No PRODUCER_FENCED before KIP-588 (2.7): a fenced producer gets INVALID_PRODUCER_EPOCH
    at every request version."""
    cluster = cluster_factory(broker_configs=CONFIGS, kafka_version="2.4")
    _make_topic(cluster)
    with _coordinator(cluster) as client:
        pid = _init(client, version=2).producer_id
        assert _init(client, version=2).producer_epoch == 1
        assert _add(client, 1, pid, 0) == {(TOPIC, 0): ec.INVALID_PRODUCER_EPOCH}
        assert _add(client, 1, pid, 1) == {(TOPIC, 0): ec.NONE}
        end = EndTxnRequest(transactional_id=TXN, producer_id=pid, producer_epoch=0, committed=True)
        assert client.request(1, end).error_code == ec.INVALID_PRODUCER_EPOCH
        end.producer_epoch = 1
        assert client.request(1, end).error_code == ec.NONE


def test_new_coordinator_writes_the_markers_it_finds_owed(
    cluster_factory: Callable[..., Cluster],
) -> None:
    """PrepareCommit is written but a partition's leader is down: the markers wait. The
    coordinator then stops; the next one replays PrepareCommit, and once the partition is back
    it writes the marker and completes the commit (loadTransactionsForTxnTopicPartition)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    cluster = cluster_factory(broker_configs=CONFIGS, kafka_version="3.9")
    with _coordinator(cluster) as client:
        port = client.sock.getpeername()[1]
    coordinator = next(b for b, h in cluster.brokers.items() if h.port == port)
    holder = next(b for b in cluster.brokers if b != coordinator)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("owed", num_partitions=1, replica_assignment=[[holder]])])[
        "owed"
    ].result(30)
    wait_visible(cluster, "owed")
    with _coordinator(cluster) as client:
        pid = _init(client).producer_id
        assert _add(client, 3, pid, 0, topic="owed") == {("owed", 0): ec.NONE}
        cluster.stop_broker(holder)
        end = EndTxnRequest(transactional_id=TXN, producer_id=pid, producer_epoch=0, committed=True)
        assert client.request(3, end).error_code == ec.NONE
        assert _describe(client).transaction_state == "PrepareCommit"
    cluster.stop_broker(coordinator)
    with _coordinator(cluster) as client:
        assert client.sock.getpeername()[1] != port
        assert _describe(client).transaction_state == "PrepareCommit"
        cluster.start_broker(holder)
        wait_until(lambda: _describe(client).transaction_state == "CompleteCommit", timeout=30)
    batches = cluster.records("owed")
    assert batches == []  # only the COMMIT control batch: no data records
