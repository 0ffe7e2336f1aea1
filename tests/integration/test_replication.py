"""Replication as Kafka does it, seen by real clients (docs/kafka-behaviour.md §24): each
replica its own log, followers that fetch, a high watermark that waits for the ISR, acks=all
and min.insync.replicas, an ISR that follows lag, and followers that truncate after a leader
change the way each release does it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient

from tests.integration.helpers import wait_until, wait_visible
from tests.log_events import capture_events
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.init_producer_id import InitProducerIdRequest
from zkbroker.broker.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from zkbroker.broker.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from zkbroker.broker.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from zkbroker.broker.protocol.records import NewRecord, encode_batch
from zkbroker.broker.toolkit.wire import WireClient

# Short enough for a test to see an ISR shrink, long enough for a busy machine's fetches.
LAG_MS = 1500


def _cluster(factory: Callable[..., Cluster], **settings: Any) -> Cluster:
    configs = dict(settings.pop("broker_configs", ()))
    configs.setdefault("replica.lag.time.max.ms", str(LAG_MS))
    return factory(broker_configs=tuple(configs.items()), **settings)


def _create(
    cluster: Cluster, topic: str, replicas: list[int], configs: dict[str, str] | None = None
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    new = NewTopic(topic, num_partitions=1, replica_assignment=[replicas], config=configs or {})
    admin.create_topics([new])[topic].result(30)
    wait_visible(cluster, topic)


def _isr(cluster: Cluster, topic: str) -> list[int]:
    return sorted(cluster.engine.image.topics[topic].partitions[0].isr)


def _produce(cluster: Cluster, topic: str, values: list[bytes], acks: str = "all") -> list[Any]:
    """Each record's delivery outcome: its offset, or the KafkaError."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": acks,
            "request.timeout.ms": 3000,
            "message.timeout.ms": 4000,
            "retries": 0,
            "linger.ms": 0,
        }
    )
    outcomes: list[Any] = []

    def done(error: KafkaError | None, message: Any) -> None:
        outcomes.append(error if error is not None else message.offset())

    for value in values:
        producer.produce(topic, value=value, partition=0, on_delivery=done)
        producer.flush(10)
    return outcomes


def _high_watermark(cluster: Cluster, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "hw"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def _read_all(cluster: Cluster, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"read-{topic}-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while len(got) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
        # Nothing beyond what was expected arrives either.
        extra = consumer.poll(1.0)
        assert extra is None or extra.error() is not None, extra.value()
    finally:
        consumer.close()
    return got


def _log(cluster: Cluster, broker: int, topic: str) -> Any:
    return cluster.engine.logs_of[broker].get(topic, 0)


def test_followers_replicate_each_into_its_own_log(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = _cluster(cluster_factory)
    _create(cluster, "copies", [0, 1, 2])
    assert _produce(cluster, "copies", [b"a", b"b", b"c"]) == [0, 1, 2]
    for broker in (0, 1, 2):
        wait_until(lambda b=broker: _log(cluster, b, "copies").log_end_offset == 3)
    logs = [_log(cluster, b, "copies") for b in (0, 1, 2)]
    assert len({id(log) for log in logs}) == 3
    assert logs[1].read(0, 1 << 20) == logs[0].read(0, 1 << 20) == logs[2].read(0, 1 << 20)
    assert _read_all(cluster, "copies", 3) == [b"a", b"b", b"c"]


def test_the_high_watermark_waits_for_the_isr(cluster_factory: Callable[..., Cluster]) -> None:
    """acks=1 is answered at once; the records stay invisible to consumers until every ISR
    member has them."""
    cluster = _cluster(cluster_factory, broker_configs={"replica.lag.time.max.ms": "60000"})
    _create(cluster, "behind", [0, 1, 2])
    paused = cluster.faults.pause_replication(2, topic="behind")
    assert _produce(cluster, "behind", [b"x", b"y"], acks="1") == [0, 1]
    assert _log(cluster, 0, "behind").log_end_offset == 2
    assert _high_watermark(cluster, "behind") == 0
    assert _read_all(cluster, "behind", 0) == []
    cluster.faults.clear(paused)
    wait_until(lambda: _high_watermark(cluster, "behind") == 2)
    assert _read_all(cluster, "behind", 2) == [b"x", b"y"]


def test_the_isr_shrinks_after_the_lag_and_expands_when_caught_up(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = _cluster(cluster_factory)
    _create(cluster, "lagging", [0, 1, 2])
    with capture_events() as events:
        paused = cluster.faults.pause_replication(2, topic="lagging")
        # A follower at the leader's end stays in sync however long it is quiet (Kafka's
        # isCaughtUp): the lag starts with a record it does not fetch.
        assert _produce(cluster, "lagging", [b"0"], acks="1") == [0]
        wait_until(lambda: _isr(cluster, "lagging") == [0, 1], timeout=LAG_MS / 1000 * 4 + 10)
    shrinks = [e for e in events if e["event"] == "replica.isr_shrinking"]
    assert shrinks and shrinks[0]["out_of_sync"] == [2]
    # With 2 out of the ISR, acks=all needs only 0 and 1.
    assert _produce(cluster, "lagging", [b"1", b"2"]) == [1, 2]
    cluster.faults.clear(paused)
    wait_until(lambda: _isr(cluster, "lagging") == [0, 1, 2], timeout=15)
    wait_until(lambda: _log(cluster, 2, "lagging").log_end_offset == 3)


@pytest.mark.parametrize(
    ("release", "late"),
    [
        # Before 3.7 the high watermark moves once the ISR shrank: the waiting produce learns
        # the ISR it reached is too small.
        ((3, 6), "NOT_ENOUGH_REPLICAS_AFTER_APPEND"),
        # From 3.7 (KAFKA-15583) it does not move under min.insync.replicas: it times out.
        ((3, 9), "REQUEST_TIMED_OUT"),
    ],
)
def test_acks_all_and_min_insync_replicas(
    cluster_factory: Callable[..., Cluster], release: tuple[int, int], late: str
) -> None:
    cluster = _cluster(cluster_factory, kafka_version=release)
    _create(cluster, "strict", [0, 1, 2], {"min.insync.replicas": "2"})
    assert _produce(cluster, "strict", [b"ok"]) == [0]
    for broker in (1, 2):
        cluster.faults.pause_replication(broker, topic="strict")
    # The ISR still holds 1 and 2 (their lag is not over yet): the append is made, and the
    # answer waits until the leader drops them.
    (outcome,) = _produce(cluster, "strict", [b"late"])
    assert isinstance(outcome, KafkaError)
    assert outcome.name() in (late, "_MSG_TIMED_OUT"), outcome
    wait_until(lambda: _isr(cluster, "strict") == [0], timeout=LAG_MS / 1000 * 4 + 10)
    (refused,) = _produce(cluster, "strict", [b"refused"])
    assert isinstance(refused, KafkaError) and refused.name() == "NOT_ENOUGH_REPLICAS"
    assert _log(cluster, 0, "strict").log_end_offset == 2  # "late" written, "refused" not


def test_acks_all_answers_not_enough_replicas_after_append(
    cluster_factory: Callable[..., Cluster],
) -> None:
    """A produce waiting for the ISR when the leader drops its followers (3.6: the high
    watermark then moves with an ISR under min.insync.replicas)."""
    cluster = _cluster(cluster_factory, kafka_version=(3, 6))
    _create(cluster, "after", [0, 1, 2], {"min.insync.replicas": "2"})
    for broker in (1, 2):
        cluster.faults.pause_replication(broker, topic="after")
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "request.timeout.ms": 20000,
            "retries": 0,
        }
    )
    outcomes: list[Any] = []
    producer.produce("after", value=b"v", partition=0, on_delivery=lambda e, m: outcomes.append(e))
    producer.flush(30)
    assert outcomes and outcomes[0] is not None
    assert outcomes[0].name() == "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
    assert _log(cluster, 0, "after").log_end_offset == 1


@pytest.mark.parametrize(
    ("release", "how"),
    [
        ((0, 10, 2), "high watermark"),
        ((2, 0), "OffsetsForLeaderEpoch"),
        ((3, 9), "diverging epoch"),
    ],
)
def test_a_returning_leader_truncates_what_was_never_committed(
    cluster_factory: Callable[..., Cluster], release: tuple[int, ...], how: str
) -> None:
    """Leader 0 appends records its follower never fetched; 1 takes over (clean: it is in the
    ISR) and appends others; 0 comes back as follower, cuts its own suffix and copies 1's."""
    cluster = _cluster(
        cluster_factory,
        kafka_version=release,
        auto_leader_rebalance=False,
        broker_configs={"replica.lag.time.max.ms": "60000"},
    )
    _create(cluster, "cut", [0, 1])
    assert _produce(cluster, "cut", [b"both"]) == [0]
    wait_until(lambda: _log(cluster, 1, "cut").log_end_offset == 1)
    paused = cluster.faults.pause_replication(1, topic="cut")
    assert _produce(cluster, "cut", [b"lost-1", b"lost-2"], acks="1") == [1, 2]
    assert _log(cluster, 0, "cut").log_end_offset == 3
    cluster.stop_broker(0)
    wait_until(lambda: cluster.engine.image.topics["cut"].partitions[0].leader == 1)
    cluster.faults.clear(paused)
    assert _produce(cluster, "cut", [b"new"]) == [1]
    with capture_events() as events:
        cluster.start_broker(0)
        wait_until(lambda: _log(cluster, 0, "cut").log_end_offset == 2, timeout=20)
        wait_until(lambda: _isr(cluster, "cut") == [0, 1], timeout=20)
    truncated = [e for e in events if e["event"] == "log.truncated" and e.get("topic") == "cut"]
    assert truncated, f"no truncation logged ({how})"
    assert _log(cluster, 0, "cut").read(0, 1 << 20) == _log(cluster, 1, "cut").read(0, 1 << 20)
    assert _read_all(cluster, "cut", 2) == [b"both", b"new"]


def test_an_unclean_election_loses_records_and_consumers_see_it(
    cluster_factory: Callable[..., Cluster],
) -> None:
    """The only in-sync replica goes; the out-of-sync one is elected (unclean): what only the
    old leader had is gone, and a consumer positioned past the new log end is reset."""
    cluster = _cluster(cluster_factory, auto_leader_rebalance=False)
    _create(cluster, "unclean", [0, 1], {"unclean.leader.election.enable": "true"})
    paused = cluster.faults.pause_replication(1, topic="unclean")
    assert _produce(cluster, "unclean", [b"a"], acks="1") == [0]
    wait_until(lambda: _isr(cluster, "unclean") == [0], timeout=LAG_MS / 1000 * 4 + 10)
    assert _produce(cluster, "unclean", [b"b", b"c"]) == [1, 2]
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "unclean-reader",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition("unclean", 0, 3)])
    cluster.stop_broker(0)
    cluster.faults.clear(paused)
    wait_until(lambda: cluster.engine.image.topics["unclean"].partitions[0].leader == 1)
    assert _log(cluster, 1, "unclean").log_end_offset == 0
    assert _produce(cluster, "unclean", [b"after"]) == [0]
    try:
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
        # Offset 3 is past the new leader's end: OFFSET_OUT_OF_RANGE, reset to the earliest.
        assert got == [b"after"]
    finally:
        consumer.close()
    cluster.start_broker(0)
    wait_until(lambda: _log(cluster, 0, "unclean").log_end_offset == 1, timeout=20)
    assert _read_all(cluster, "unclean", 1) == [b"after"]


def test_paused_replication_holds_a_reassignment_in_flight(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = _cluster(cluster_factory)
    _create(cluster, "moving", [0, 1])
    assert _produce(cluster, "moving", [b"r%d" % i for i in range(50)]) == list(range(50))
    paused = cluster.faults.pause_replication(2, topic="moving")
    kafka_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        kafka_admin.alter_partition_reassignments({KafkaTopicPartition("moving", 0): [2, 1]})
        time.sleep(0.5)  # a negative window: the paused replica must not join meanwhile
        listed = kafka_admin.list_partition_reassignments()
        assert listed[KafkaTopicPartition("moving", 0)]["adding_replicas"] == [2]
        cluster.faults.clear(paused)
        wait_until(lambda: not kafka_admin.list_partition_reassignments(), timeout=20)
    finally:
        kafka_admin.close()
    wait_until(lambda: _log(cluster, 2, "moving").log_end_offset == 50)
    assert sorted(cluster.engine.image.topics["moving"].partitions[0].replicas) == [1, 2]


def test_no_acknowledged_record_is_lost_when_leaders_stop(
    cluster_factory: Callable[..., Cluster],
) -> None:
    """acks=all with min.insync.replicas=2, the leader stopped twice: every acknowledged
    record is read back, in order, without gaps."""
    cluster = _cluster(cluster_factory, auto_leader_rebalance=False)
    _create(cluster, "durable", [0, 1, 2], {"min.insync.replicas": "2"})
    acknowledged: list[bytes] = []
    for round_ in range(2):
        values = [b"%d-%d" % (round_, i) for i in range(200)]
        outcomes = _produce(cluster, "durable", values)
        acknowledged += [v for v, o in zip(values, outcomes, strict=True) if isinstance(o, int)]
        leader = cluster.engine.image.topics["durable"].partitions[0].leader
        cluster.stop_broker(leader)
        wait_until(
            lambda old=leader: (
                cluster.engine.image.topics["durable"].partitions[0].leader not in (-1, old)
            )
        )
        cluster.start_broker(leader)
        wait_until(lambda: _isr(cluster, "durable") == [0, 1, 2], timeout=20)
    assert len(acknowledged) >= 200
    got = _read_all(cluster, "durable", len(acknowledged))
    assert got == acknowledged


def test_remote_follower_fetches_over_the_inter_broker_listener(
    cluster_factory: Callable[..., Cluster],
) -> None:
    """Two processes' worth of brokers (two clusters on one ZooKeeper): a follower whose
    leader is in the other one fetches with its replica id over TCP."""
    first = _cluster(cluster_factory, broker_ids=(0, 1))
    second = _cluster(cluster_factory, broker_ids=(2,))
    _create(first, "across", [0, 2])
    assert _produce(first, "across", [b"p%d" % i for i in range(20)]) == list(range(20))
    wait_until(lambda: second.engine.logs_of[2].get("across", 0) is not None)
    wait_until(lambda: second.engine.logs_of[2].get("across", 0).log_end_offset == 20)
    assert _isr(first, "across") == [0, 2]
    assert second.engine.logs_of[2].get("across", 0).read(0, 1 << 20) == _log(
        first, 0, "across"
    ).read(0, 1 << 20)


def test_a_retried_batch_with_acks_all_waits_for_the_isr(
    cluster_factory: Callable[..., Cluster],
) -> None:
    """A producer's retry of a batch the leader already has is answered with its offsets, and
    under acks=all only once the ISR has it (Kafka's DelayedProduce on the duplicate): never
    an acknowledgement of records only the leader holds."""
    cluster = _cluster(cluster_factory, broker_configs={"replica.lag.time.max.ms": "60000"})
    _create(cluster, "retried", [0, 1])
    handle = cluster.engine.brokers[0]
    with WireClient(handle.host, handle.port) as client:
        pid = client.request(4, InitProducerIdRequest(transactional_id=None)).producer_id
        batch = encode_batch(
            [NewRecord(0, int(time.time() * 1000), None, b"once")],
            producer_id=pid,
            producer_epoch=0,
            base_sequence=0,
        )

        def send(acks: int, timeout_ms: int) -> tuple[int, int]:
            data = [
                TopicProduceData(
                    name="retried", partition_data=[PartitionProduceData(index=0, records=batch)]
                )
            ]
            request = ProduceRequest(acks=acks, timeout_ms=timeout_ms, topic_data=data)
            answer = client.request(9, request).responses[0].partition_responses[0]
            return answer.error_code, answer.base_offset

        paused = cluster.faults.pause_replication(1, topic="retried")
        assert send(1, 5000) == (0, 0)  # written on the leader only
        # The retry with acks=all: the follower still lacks it, so the answer waits.
        assert send(-1, 1000)[0] == error_codes.REQUEST_TIMED_OUT
        cluster.faults.clear(paused)
        assert send(-1, 10000) == (0, 0)
    assert _log(cluster, 0, "retried").log_end_offset == 1  # written once


def test_a_new_leader_answers_offset_not_available_until_its_high_watermark_catches_up(
    cluster_factory: Callable[..., Cluster],
) -> None:
    """KIP-207: broker 1 takes over with records its high watermark does not cover yet (2
    never fetched them); until the ISR has them, the latest offset is not available, rather
    than an offset lower than a consumer may have seen from the old leader."""
    cluster = _cluster(
        cluster_factory,
        auto_leader_rebalance=False,
        broker_configs={"replica.lag.time.max.ms": "60000"},
    )
    _create(cluster, "handover", [0, 1, 2])
    paused = cluster.faults.pause_replication(2, topic="handover")
    assert _produce(cluster, "handover", [b"a", b"b"], acks="1") == [0, 1]
    wait_until(lambda: _log(cluster, 1, "handover").log_end_offset == 2)
    cluster.stop_broker(0)
    wait_until(lambda: cluster.engine.image.topics["handover"].partitions[0].leader == 1)
    new_leader = cluster.engine.brokers[1]

    def latest() -> tuple[int, int]:
        wanted = ListOffsetsPartition(partition_index=0, timestamp=-1)
        request = ListOffsetsRequest(
            replica_id=-1, topics=[ListOffsetsTopic(name="handover", partitions=[wanted])]
        )
        with WireClient(new_leader.host, new_leader.port) as client:
            answer = client.request(5, request).topics[0].partitions[0]
        return answer.error_code, answer.offset

    assert latest() == (error_codes.OFFSET_NOT_AVAILABLE, -1)
    cluster.faults.clear(paused)
    wait_until(lambda: latest() == (error_codes.NONE, 2), timeout=20)
    assert _high_watermark(cluster, "handover") == 2


def test_delete_records_waits_for_every_live_replica(
    cluster_factory: Callable[..., Cluster],
) -> None:
    """DelayedDeleteRecords: the answer waits until each live follower moved its log start
    offset too (they follow the leader's in their fetches); a paused follower holds it until
    the request's timeout, and a stopped one no longer counts."""
    cluster = _cluster(
        cluster_factory,
        auto_leader_rebalance=False,
        broker_configs={"replica.lag.time.max.ms": "60000"},
    )
    _create(cluster, "trimmed", [0, 1, 2])
    assert _produce(cluster, "trimmed", [b"%d" % i for i in range(6)]) == list(range(6))
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    tp = TopicPartition("trimmed", 0)

    def delete_before(offset: int, timeout_s: float) -> Any:
        wanted = TopicPartition("trimmed", 0, offset)
        return admin.delete_records([wanted], operation_timeout=timeout_s)[tp]

    deleted = delete_before(2, 30).result()
    assert deleted.low_watermark == 2
    assert [_log(cluster, b, "trimmed").log_start_offset for b in (0, 1, 2)] == [2, 2, 2]

    paused = cluster.faults.pause_replication(2, topic="trimmed")
    with pytest.raises(Exception) as raised:
        delete_before(4, 1).result()
    assert raised.value.args[0].code() == error_codes.REQUEST_TIMED_OUT
    assert _log(cluster, 0, "trimmed").log_start_offset == 4  # deleted on the leader anyway
    assert _log(cluster, 2, "trimmed").log_start_offset == 2
    cluster.faults.clear(paused)
    assert delete_before(4, 30).result().low_watermark == 4
    assert _log(cluster, 2, "trimmed").log_start_offset == 4

    cluster.stop_broker(2)
    assert delete_before(5, 30).result().low_watermark == 5


def test_an_offset_commit_is_answered_once_the_isr_has_it(
    cluster_factory: Callable[..., Cluster],
) -> None:
    """The group coordinator appends commits with acks=-1 (offsets.commit.required.acks):
    a commit whose __consumer_offsets follower does not fetch times out after
    offsets.commit.timeout.ms; once answered NONE, every ISR member holds the record."""
    cluster = _cluster(
        cluster_factory,
        broker_configs={"replica.lag.time.max.ms": "60000", "offsets.commit.timeout.ms": "1000"},
    )
    _create(cluster, "source", [0, 1, 2])
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "durable"})
    try:
        consumer.commit(offsets=[TopicPartition("source", 0, 1)], asynchronous=False)
        partition = cluster.engine.brokers[0].group_coordinator.partition_for("durable")
        assert partition is not None
        state = cluster.engine.image.topics["__consumer_offsets"].partitions[partition]
        leader, follower = state.leader, next(b for b in state.isr if b != state.leader)
        coordinator = cluster.engine.brokers[leader]

        def commit(offset: int) -> int:
            wanted = OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)
            request = OffsetCommitRequest(
                group_id="durable",
                topics=[OffsetCommitRequestTopic(name="source", partitions=[wanted])],
            )
            with WireClient(coordinator.host, coordinator.port) as client:
                return client.request(2, request).topics[0].partitions[0].error_code

        paused = cluster.faults.pause_replication(follower, topic="__consumer_offsets")
        assert commit(2) == error_codes.REQUEST_TIMED_OUT
        cluster.faults.clear(paused)
        assert commit(3) == error_codes.NONE
        ends = {
            b: cluster.engine.logs_of[b].get("__consumer_offsets", partition).log_end_offset
            for b in state.isr
        }
        assert len(set(ends.values())) == 1, ends
        (committed,) = consumer.committed([TopicPartition("source", 0)], timeout=10)
        assert committed.offset == 3
    finally:
        consumer.close()


def test_transaction_log_writes_are_answered_once_the_isr_has_them(
    cluster_factory: Callable[..., Cluster],
) -> None:
    """The transaction coordinator appends with acks=-1 under request.timeout.ms: while a
    follower of the id's __transaction_state partition does not fetch, InitProducerId is
    answered COORDINATOR_NOT_AVAILABLE (the producer retries, then gives up); once it
    fetches, the transaction runs and commits."""
    cluster = _cluster(
        cluster_factory,
        broker_configs={"replica.lag.time.max.ms": "60000", "request.timeout.ms": "1000"},
    )
    _create(cluster, "txn-out", [0, 1, 2])
    warm = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "warm"})
    warm.init_transactions(30)  # creates __transaction_state
    partition = cluster.engine.brokers[0].transaction_coordinator.partition_for("durable-txn")
    assert partition is not None
    state = cluster.engine.image.topics["__transaction_state"].partitions[partition]
    follower = next(b for b in state.isr if b != state.leader)

    settings = {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "durable-txn"}
    paused = cluster.faults.pause_replication(follower, topic="__transaction_state")
    stalled = Producer(settings)
    with pytest.raises(Exception) as raised:
        stalled.init_transactions(4)
    assert raised.value.args[0].retriable() or raised.value.args[0].code() == KafkaError._TIMED_OUT
    cluster.faults.clear(paused)

    producer = Producer(settings)
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("txn-out", value=b"committed", partition=0)
    producer.commit_transaction(30)
    assert _read_all(cluster, "txn-out", 1) == [b"committed"]
