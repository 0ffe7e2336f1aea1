"""Rolling restarts of every broker while real clients keep a consumer group and a
transactional producer busy (issue 41, item 8).

A broker's stop cancels its group and transaction coordinators' tasks and waits for them; a
group coordinator's timer loop once lost its cancellation (Python 3.11's `asyncio.wait_for`,
woken by the very heartbeats these consumers send) and `zkbroker broker stop` hung with the
broker's coordinators unloaded. Here each broker is stopped and started in turn, in-process
(`ClusterEngine.stop_broker`) and from another process (`zkbroker broker stop|start`), while
confluent-kafka consumers in one group consume and commit, an idempotent producer feeds them and
a transactional producer commits transactions. Every stop and start must complete within its
timeout, and the clients finish their work afterwards: everything produced consumed and the
group's offsets committed to the log end, transactions committing again after the last restart,
read_committed seeing exactly the committed ones.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.helpers import wait_until, wait_visible
from zkbroker import Cluster, OffsetsUnavailable

IN, OUT, GROUP, TXN_ID = "rr-in", "rr-out", "rr-group", "rr-txn"
PARTITIONS = 3
BROKERS = (0, 1, 2)
PAST = {"stop": "stopped", "start": "started"}
#: What a stop or a start may take, as `zkbroker broker stop|start` waits by default.
STEP_TIMEOUT_S = 30.0
#: Liveness deadlines of the clients' work (never a measurement).
WORK_DEADLINE_S = 90.0
CONFIGS = (
    ("offsets.topic.num.partitions", "3"),
    ("transaction.state.log.num.partitions", "3"),
    ("group.initial.rebalance.delay.ms", "0"),
)


@pytest.fixture
def cluster(cluster_factory: Callable[..., Cluster]) -> Cluster:
    cluster = cluster_factory(kafka_version=(3, 9), broker_configs=CONFIGS)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for name, future in admin.create_topics(
        [NewTopic(IN, PARTITIONS, 3), NewTopic(OUT, PARTITIONS, 3)]
    ).items():
        future.result(30)
        wait_visible(cluster, name)
    return cluster


def _bootstrap(cluster: Cluster) -> str:
    # Every broker, running or not: the clients keep their list while brokers come and go.
    return ",".join(f"{b.host}:{b.port}" for _, b in sorted(cluster.engine.brokers.items()))


class Work(threading.Thread):
    """A client's loop in a thread of its own; `failure` is what ended it abnormally."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.stopping = threading.Event()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            self.work()
        except BaseException as e:  # reported by the test
            self.failure = e

    def work(self) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        self.stopping.set()
        self.join(WORK_DEADLINE_S)
        assert not self.is_alive(), f"{self.name} did not end"
        assert self.failure is None, f"{self.name} failed: {self.failure!r}"


class Feeder(Work):
    """An idempotent producer writing numbered values to IN."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__("feeder")
        self.bootstrap = bootstrap
        self.acked: set[bytes] = set()
        self.lock = threading.Lock()

    def work(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True})

        def delivered(error: Any, message: Any) -> None:
            if error is None:
                with self.lock:
                    self.acked.add(message.value())

        n = 0
        while not self.stopping.is_set():
            value, partition = b"in-%d" % n, n % PARTITIONS
            producer.produce(IN, value=value, partition=partition, on_delivery=delivered)
            n += 1
            producer.poll(0.02)
        assert producer.flush(WORK_DEADLINE_S) == 0, "records left undelivered"


class Member(Work):
    """A consumer of GROUP: consumes IN and commits what it consumed every few hundred ms."""

    def __init__(self, bootstrap: str, index: int, consumed: set[bytes], lock: threading.Lock):
        super().__init__(f"member-{index}")
        self.bootstrap, self.index = bootstrap, index
        self.consumed, self.lock = consumed, lock
        self.commits = 0
        self.commit_errors: list[str] = []

    def work(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": GROUP,
                "client.id": self.name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10000,
                # Heartbeats wake the group coordinator's timer loop often.
                "heartbeat.interval.ms": 200,
            }
        )
        consumer.subscribe([IN])
        pending, last_commit = False, time.monotonic()
        try:
            while not self.stopping.is_set():
                message = consumer.poll(0.1)
                if message is not None and message.error() is None:
                    with self.lock:
                        self.consumed.add(message.value())
                    pending = True
                if pending and time.monotonic() - last_commit > 0.3:
                    last_commit = time.monotonic()
                    try:
                        consumer.commit(asynchronous=False)
                    except KafkaException as e:  # coordinator moving, rebalance: later
                        self.commit_errors.append(e.args[0].name())
                    else:
                        self.commits += 1
                        pending = False
        finally:
            consumer.close()


class Transactions(Work):
    """A transactional producer committing transactions of 5 records to OUT, one after the
    other; a transaction the broker makes abortable is aborted and counted."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__("transactions")
        self.bootstrap = bootstrap
        self.committed: list[list[bytes]] = []
        self.aborted: list[list[bytes]] = []
        self.retried: list[str] = []

    def work(self) -> None:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "transactional.id": TXN_ID,
                "transaction.timeout.ms": 60000,
            }
        )
        producer.init_transactions(WORK_DEADLINE_S)
        n = 0
        while not self.stopping.is_set():
            values = [b"txn-%d-%d" % (n, k) for k in range(5)]
            n += 1
            producer.begin_transaction()
            try:
                for k, value in enumerate(values):
                    producer.produce(OUT, value=value, partition=k % PARTITIONS)
                self._commit(producer)
            except KafkaException as e:
                error = e.args[0]
                if error.fatal() or not error.txn_requires_abort():
                    raise
                self.retried.append(error.name())
                producer.abort_transaction(WORK_DEADLINE_S)
                self.aborted.append(values)
            else:
                self.committed.append(values)

    def _commit(self, producer: Producer) -> None:
        deadline = time.monotonic() + WORK_DEADLINE_S
        while True:
            try:
                producer.commit_transaction(STEP_TIMEOUT_S)
                return
            except KafkaException as e:
                error = e.args[0]
                # librdkafka's documented loop: a retriable commit is committed again.
                if not error.retriable() or time.monotonic() > deadline:
                    raise
                self.retried.append(error.name())


def _isrs_full(cluster: Cluster) -> bool:
    topics = cluster.engine.image.topics
    names = (IN, OUT, "__consumer_offsets", "__transaction_state")
    return all(
        name in topics and all(len(p.isr) == 3 for p in topics[name].partitions.values())
        for name in names
    )


def _zkbroker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zkbroker", *args],
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S + 30,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _read_committed(bootstrap: str) -> set[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "rr-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(OUT, p, 0) for p in range(PARTITIONS)])
        values: set[bytes] = set()
        at_end: set[int] = set()
        deadline = time.monotonic() + WORK_DEADLINE_S
        while len(at_end) < PARTITIONS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            values.add(message.value())
        assert len(at_end) == PARTITIONS, "read_committed did not reach the end"
        return values
    finally:
        consumer.close()


def test_rolling_restarts_with_a_busy_group_and_transactions(
    cluster: Cluster, zk_connect: str
) -> None:
    bootstrap = _bootstrap(cluster)
    consumed: set[bytes] = set()
    lock = threading.Lock()
    feeder = Feeder(bootstrap)
    members = [Member(bootstrap, i, consumed, lock) for i in range(2)]
    transactions = Transactions(bootstrap)
    workers: list[Work] = [feeder, *members, transactions]
    for worker in workers:
        worker.start()
    # The clients are under way: the group is consuming, transactions are committing.
    wait_until(lambda: len(consumed) >= 20, timeout=WORK_DEADLINE_S)
    wait_until(lambda: len(transactions.committed) >= 2, timeout=WORK_DEADLINE_S)

    def in_process(action: str, broker_id: int) -> None:
        step = cluster.engine.stop_broker if action == "stop" else cluster.engine.start_broker
        cluster.call(step(broker_id), timeout=STEP_TIMEOUT_S)

    def by_command(action: str, broker_id: int) -> None:
        done = _zkbroker(
            "broker", action, str(broker_id), "--zookeeper", zk_connect,
            "--timeout", str(int(STEP_TIMEOUT_S)),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"broker {broker_id} {PAST[action]}\n"

    steps: list[tuple[str, str, int, float]] = []
    for round_name, apply in (("in-process", in_process), ("zkbroker broker", by_command)):
        for broker_id in BROKERS:
            for action in ("stop", "start"):
                before = (len(consumed), len(transactions.committed))
                started = time.monotonic()
                apply(action, broker_id)
                steps.append((round_name, action, broker_id, time.monotonic() - started))
                assert cluster.engine.brokers[broker_id].running == (action == "start")
                # The clients go on meanwhile: something new consumed and committed.
                wait_until(
                    lambda b=before: len(consumed) > b[0] and len(transactions.committed) > b[1],
                    timeout=WORK_DEADLINE_S,
                )
            wait_until(lambda: _isrs_full(cluster), timeout=WORK_DEADLINE_S)
    for round_name, action, broker_id, seconds in steps:
        print(f"{round_name}: {action} broker {broker_id}: {seconds:.2f} s")

    # After the restarts the clients finish their work.
    committed_after = len(transactions.committed)
    wait_until(lambda: len(transactions.committed) >= committed_after + 3, timeout=WORK_DEADLINE_S)
    feeder.finish()
    acked = set(feeder.acked)
    wait_until(lambda: acked <= consumed, timeout=WORK_DEADLINE_S)

    def log_end(partition: int) -> int:
        log = cluster.engine.log_of(IN, partition)
        assert log is not None
        return log.log_end_offset

    log_ends = {(IN, p): cluster.run_sync(lambda p=p: log_end(p)) for p in range(PARTITIONS)}

    def all_committed() -> bool:
        try:
            return cluster.committed_offsets(GROUP) == log_ends
        except OffsetsUnavailable:  # its coordinator is loading or moving
            return False

    wait_until(all_committed, timeout=WORK_DEADLINE_S)
    for member in members:
        member.finish()
    transactions.finish()

    seen = _read_committed(bootstrap)
    committed_values = {v for values in transactions.committed for v in values}
    aborted_values = {v for values in transactions.aborted for v in values}
    assert committed_values <= seen
    assert not aborted_values & seen
    print(
        f"consumed {len(consumed)} records ({len(acked)} acknowledged), "
        f"{sum(m.commits for m in members)} group commits "
        f"({sum(len(m.commit_errors) for m in members)} retried later), "
        f"{len(transactions.committed)} transactions committed, "
        f"{len(transactions.aborted)} aborted, {len(transactions.retried)} retried"
    )
