"""ZooKeeper trouble inside a handler is answered with a retriable error, and a real client
retrying it succeeds once ZooKeeper is back (issue 17, finding 6).

Each test runs a cluster on its own ZooKeeper (a given port and data directory, so it can be
restarted with the sessions it had). ZooKeeper is frozen (SIGSTOP), the client's request is
sent (its handler's ZooKeeper request now waits for an answer), then ZooKeeper is killed:
the pending request fails with a connection loss inside the handler. Before, the client got
UNKNOWN_SERVER_ERROR (not retriable: it gave up). Now it gets its API family's retriable
error (`zkbroker.handlers.support.zk_trouble`), retries as applications do on a retriable error (the
client library's own `retriable` flag decides), and once ZooKeeper is restarted the retry
succeeds. The captured responses show the error answered. Bounded: a 60 s budget per test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import KafkaError
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.server.hooks import Intervention, RequestCall, RequestRecord
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper
from zkbroker.broker.zookeeper.network import pick_free_port

BUDGET_S = 60.0


class Arrivals:
    """A request hook that notes the API of every request as it reaches its handler."""

    def __init__(self) -> None:
        self.apis: list[str] = []

    async def intervene(self, call: RequestCall) -> Intervention | None:
        self.apis.append(call.api_name)
        return None

    def observe(self, record: RequestRecord) -> None:
        pass


class Outage:
    """A cluster on a ZooKeeper this test may freeze, kill and restart."""

    def __init__(self, tmp_path: Path, cluster_factory: Callable[..., Cluster]) -> None:
        self.port = pick_free_port()
        self.data_dir = tmp_path / "zk-data"
        self.zk = EmbeddedZooKeeper(port=self.port, data_dir=self.data_dir).start()
        self.cluster = cluster_factory(zookeeper=self.zk.connect_string + "/trouble")
        wait_until(lambda: self.cluster.engine.controller_id >= 0)
        self.cluster.capture()
        self.arrivals = Arrivals()
        self.cluster.engine.hooks.add(self.arrivals)

    def kazoo(self) -> KazooClient:
        client = KazooClient(hosts=self.zk.connect_string + "/trouble")
        client.start(timeout=15)
        return client

    def freeze(self) -> None:
        assert self.zk.pid is not None
        os.kill(self.zk.pid, signal.SIGSTOP)

    def kill_and_restart(self, down_s: float = 1.0) -> None:
        """SIGKILL the frozen server (its pending requests fail with a connection loss), then
        start it again on the same port and data, where the brokers' sessions survive."""
        assert self.zk.pid is not None
        os.kill(self.zk.pid, signal.SIGKILL)
        self.zk.stop()
        time.sleep(down_s)
        self.zk = EmbeddedZooKeeper(port=self.port, data_dir=self.data_dir).start()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.cluster.stop()
        with contextlib.suppress(Exception):
            if self.zk.pid is not None:
                os.kill(self.zk.pid, signal.SIGCONT)
        self.zk.stop()


@pytest.fixture
def outage(tmp_path: Path, cluster_factory: Callable[..., Cluster]) -> Iterator[Outage]:
    trouble = Outage(tmp_path, cluster_factory)
    try:
        yield trouble
    finally:
        trouble.close()


def _retrying(call: Callable[[], Any], seen: list[KafkaError]) -> Any:
    """What an application does: retry on an error the client library calls retriable."""
    deadline = time.monotonic() + BUDGET_S
    while True:
        try:
            return call()
        except KafkaError as e:
            assert e.retriable, f"not retriable: {e!r}"
            seen.append(e)
            assert time.monotonic() < deadline, f"still failing after {BUDGET_S}s: {seen}"
            time.sleep(0.2)


def _all_sent(cluster: Cluster) -> bool:
    """Nothing is left in the queues of the cluster's ZooKeeper sessions (kazoo's `_queue`:
    requests not yet written to the socket)."""
    engine = cluster.engine
    stores = [engine._store, *(b.store for b in engine.brokers.values() if b.running)]
    return all(not store.client._queue for store in stores if store is not None)


def _during_outage(
    outage: Outage, api: str, call: Callable[[], Any]
) -> tuple[Any, list[KafkaError]]:
    """Run `call` (with retries) while ZooKeeper is frozen, killed and restarted; `api` is
    the request whose handler waits for ZooKeeper."""
    seen: list[KafkaError] = []
    result: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(_retrying(call, seen))
        except BaseException as e:
            failure.append(e)

    outage.freeze()
    before = outage.arrivals.apis.count(api)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    # The request reached its handler, the loop has run the handler up to where it waits (a
    # loop turn after it), and kazoo has written what it queued: the handler's ZooKeeper
    # request is pending now, so killing ZooKeeper fails it with a connection loss.
    wait_until(lambda: outage.arrivals.apis.count(api) > before, timeout=30)
    outage.cluster.run_sync(lambda: None)
    wait_until(lambda: _all_sent(outage.cluster))
    outage.kill_and_restart()
    thread.join(BUDGET_S)
    assert not thread.is_alive(), "the client never succeeded"
    assert not failure, failure
    return result[0], seen


def _answered(outage: Outage, api: str, code: int) -> bool:
    return any(code in r.record.error_codes for r in outage.cluster.requests(api=api))


def _admin(outage: Outage) -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=outage.cluster.bootstrap_servers, request_timeout_ms=30_000
    )


def test_topic_admin_answers_request_timed_out_and_the_retry_creates_the_topic(
    outage: Outage,
) -> None:
    admin = _admin(outage)
    try:
        admin.list_topics()
        _, seen = _during_outage(
            outage, "CreateTopics", lambda: admin.create_topics([NewTopic("after-outage", 2, 1)])
        )
    finally:
        admin.close()
    assert _answered(outage, "CreateTopics", ec.REQUEST_TIMED_OUT), seen
    zk = outage.kazoo()
    try:
        assert zk.exists("/brokers/topics/after-outage") is not None
    finally:
        zk.stop()
        zk.close()


def test_configs_answer_request_timed_out_and_the_retry_describes(outage: Outage) -> None:
    admin = _admin(outage)
    try:
        admin.create_topics([NewTopic("configured", 1, 1, topic_configs={"retention.ms": "1234"})])
        resource = ConfigResource(ConfigResourceType.TOPIC, "configured")
        wait_until(lambda: "configured" in outage.cluster.engine.image.topics)
        described, _ = _during_outage(
            outage,
            "DescribeConfigs",
            lambda: admin.describe_configs([resource], config_filter="all"),
        )
    finally:
        admin.close()
    assert _answered(outage, "DescribeConfigs", ec.REQUEST_TIMED_OUT)
    assert "configured" in described["topic"]


def test_groups_answer_coordinator_not_available_and_the_retry_fetches_offsets(
    outage: Outage,
) -> None:
    zk = outage.kazoo()
    try:
        zk.create("/consumers/g1/offsets/t1/0", b"42", makepath=True)
    finally:
        zk.stop()
        zk.close()
    admin = _admin(outage)
    try:
        # The first lookup creates __consumer_offsets (COORDINATOR_NOT_AVAILABLE, as Kafka).
        _retrying(lambda: admin.list_group_offsets("g1"), [])
        offsets, _ = _during_outage(outage, "OffsetFetch", lambda: admin.list_group_offsets("g1"))
    finally:
        admin.close()
    assert _answered(outage, "OffsetFetch", ec.COORDINATOR_NOT_AVAILABLE)
    assert offsets["g1"][TopicPartition("t1", 0)].offset == 42


def test_reassignment_answers_request_timed_out_and_the_retry_reassigns(
    outage: Outage,
) -> None:
    admin = _admin(outage)
    try:
        admin.create_topics([NewTopic("moving", 1, 1)])
        wait_until(lambda: "moving" in outage.cluster.engine.image.topics)
        current = outage.cluster.engine.image.topics["moving"].assignment[0][0]
        target = next(b for b in (0, 1, 2) if b != current)
        tp = TopicPartition("moving", 0)
        _during_outage(
            outage,
            "AlterPartitionReassignments",
            lambda: admin.alter_partition_reassignments({tp: [target]}),
        )
    finally:
        admin.close()
    assert _answered(outage, "AlterPartitionReassignments", ec.REQUEST_TIMED_OUT)
    wait_until(
        lambda: outage.cluster.engine.image.topics["moving"].assignment[0] == (target,),
        timeout=30,
    )
