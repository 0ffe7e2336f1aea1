"""Fault injection (`zkbroker.broker.hooks.faults`) seen by real clients: exact error codes consumed
in order, topic scopes, latency, dropped connections, blackholes, and faults pushed by another
process (`zkbroker fault ...`) consumed by this one's brokers."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaConnectionError

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.zk_layout.nodes.zkbroker import FaultKind


def wire(cluster: Cluster, broker_id: int = 0) -> WireClient:
    node = cluster.engine.brokers[broker_id]
    return WireClient(node.host, node.port)


def create(*names: str) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=[CreatableTopic(name=n, num_partitions=1, replication_factor=1) for n in names],
        timeout_ms=10000,
    )


def kp_create(admin: KafkaAdminClient, name: str) -> int:
    """CreateTopics through kafka-python; the topic's error code."""
    result = admin.create_topics(
        {name: {"num_partitions": 1, "replication_factor": 1}}, raise_errors=False
    )
    (topic,) = result["topics"]
    return int(topic["error_code"])


def cf_create(admin: AdminClient, name: str) -> int:
    """CreateTopics through confluent-kafka; the error code (0 on success)."""
    future = admin.create_topics([NewTopic(name, 1, 1)], request_timeout=15)[name]
    try:
        future.result()
        return 0
    except Exception as e:  # confluent_kafka.KafkaException wrapping a KafkaError
        return int(e.args[0].code())


def zkbroker_cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "zkbroker", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_error_for_create_topics_seen_by_kafka_python_then_consumed(
    cluster: Cluster,
) -> None:
    fault_id = cluster.faults.push_error("CreateTopics", ec.POLICY_VIOLATION)
    assert [f.fault_id for f in cluster.faults.list()] == [fault_id]
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        assert kp_create(admin, "injected") == ec.POLICY_VIOLATION
        assert kp_create(admin, "injected") == ec.NONE  # consumed: the next one succeeds
    finally:
        admin.close()
    assert cluster.faults.list() == []
    (seen,) = cluster.faults.observed(fault_id)
    assert (seen.kind, seen.api, seen.error_code) == (
        FaultKind.ERROR,
        "CreateTopics",
        ec.POLICY_VIOLATION,
    )
    assert cluster.engine.faults.injector.injected[(fault_id, "error")] == 1
    assert cluster.faults.observed(api="CreateTopics", error_code=ec.POLICY_VIOLATION) == [seen]


def test_n_errors_consumed_in_order_by_confluent_kafka(cluster: Cluster) -> None:
    first = cluster.faults.push_error("CreateTopics", ec.INVALID_REPLICATION_FACTOR, count=2)
    second = cluster.faults.push_error(19, "POLICY_VIOLATION")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    codes = [cf_create(admin, f"ordered-{i}") for i in range(4)]
    assert codes == [
        ec.INVALID_REPLICATION_FACTOR,
        ec.INVALID_REPLICATION_FACTOR,
        ec.POLICY_VIOLATION,
        ec.NONE,
    ]
    assert len(cluster.faults.observed(first)) == 2
    assert len(cluster.faults.observed(second)) == 1
    assert cluster.faults.list() == []


def test_topic_scope_only_matches_that_topic(cluster: Cluster) -> None:
    cluster.faults.push_error("CreateTopics", ec.POLICY_VIOLATION, topic="bad", delay_ms=200)
    with wire(cluster, cluster.engine.controller_id) as c:
        (good,) = c.request(5, create("good")).topics
        assert good.error_code == ec.NONE
        started = time.monotonic()
        (bad,) = c.request(5, create("bad")).topics
        assert time.monotonic() - started >= 0.2
        assert (bad.name, bad.error_code) == ("bad", ec.POLICY_VIOLATION)
        (again,) = c.request(5, create("bad")).topics
        assert again.error_code == ec.NONE


def test_latency_per_api_and_per_broker(cluster: Cluster) -> None:
    fault_id = cluster.faults.add_latency(400, api="Metadata", broker=1)
    with wire(cluster, 0) as other, wire(cluster, 1) as slow:
        other.request(9, MetadataRequest(topics=None))  # not delayed (no upper bound asserted)
        for _ in range(2):  # until cleared, not consumed
            started = time.monotonic()
            slow.request(9, MetadataRequest(topics=None))
            assert time.monotonic() - started >= 0.4
        assert cluster.faults.clear(fault_id) == 1
        slow.request(9, MetadataRequest(topics=None))
    assert [r.broker_id for r in cluster.faults.observed(kind="latency")] == [1, 1]

    cluster.faults.add_latency(300)  # every API, every broker
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    started = time.monotonic()
    admin.list_topics(timeout=15)
    assert time.monotonic() - started >= 0.3


def test_drop_closes_only_that_connection(cluster: Cluster) -> None:
    fault_id = cluster.faults.drop_next("Metadata", broker=0)
    with wire(cluster, 0) as dropped, wire(cluster, 0) as other:
        with pytest.raises(ConnectionError):
            dropped.request(9, MetadataRequest(topics=None))
        assert other.request(9, MetadataRequest(topics=None)).brokers
    assert [r.kind for r in cluster.faults.observed(fault_id)] == [FaultKind.DROP]
    assert cluster.faults.list() == []


def test_kafka_python_sees_a_disconnect_and_recovers(cluster: Cluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        fault_id = cluster.faults.drop_next("CreateTopics")
        # kafka-python reports the disconnect; the topic can be created afterwards.
        with pytest.raises(KafkaConnectionError):
            admin.create_topics(
                {"after-drop": {"num_partitions": 1, "replication_factor": 1}}, timeout_ms=5000
            )
        assert len(cluster.faults.observed(fault_id)) == 1
        assert kp_create(admin, "after-drop") in (ec.NONE, ec.TOPIC_ALREADY_EXISTS)
    finally:
        admin.close()


def test_blackhole_holds_until_cleared(cluster: Cluster) -> None:
    fault_id = cluster.faults.blackhole(api="Metadata", broker=0)
    answered = threading.Event()
    result: dict[str, Any] = {}

    def ask() -> None:
        with wire(cluster, 0) as c:
            result["answer"] = c.request(9, MetadataRequest(topics=None))
            answered.set()

    asker = threading.Thread(target=ask)
    asker.start()
    assert not answered.wait(0.5)  # held
    with wire(cluster, 1) as c:  # another broker answers
        assert c.request(9, MetadataRequest(topics=None)).brokers
    assert cluster.faults.clear() == 1
    assert answered.wait(10)
    asker.join(10)
    assert result["answer"].brokers
    assert [r.kind for r in cluster.faults.observed(fault_id)] == [FaultKind.BLACKHOLE]


def test_fault_pushed_by_another_process_is_consumed(cluster: Cluster) -> None:
    zk = cluster.zookeeper_connect
    out = zkbroker_cli(
        "fault", "push", "CreateTopics", "POLICY_VIOLATION", "--count", "2", "--zookeeper", zk
    )
    assert out.startswith("fault ") and "error_code=44 count=2" in out
    fault_id = int(out.split()[1].rstrip(":"))
    # The children watch brings it into the brokers' cache.
    wait_until(lambda: cluster.run_sync(lambda: bool(cluster.engine.faults.injector.faults())))
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        assert [kp_create(admin, "remote") for _ in range(3)] == [
            ec.POLICY_VIOLATION,
            ec.POLICY_VIOLATION,
            ec.NONE,
        ]
    finally:
        admin.close()
    assert len(cluster.faults.observed(fault_id)) == 2
    assert zkbroker_cli("fault", "list", "--zookeeper", zk) == ""

    out = zkbroker_cli("fault", "latency", "300", "--api", "Metadata", "--zookeeper", zk)
    assert "latency api=Metadata" in out and "count=until-cleared" in out
    assert "latency" in zkbroker_cli("fault", "list", "--zookeeper", zk)
    assert zkbroker_cli("fault", "clear", "--zookeeper", zk).strip() == "cleared 1"
    wait_until(lambda: cluster.run_sync(lambda: not cluster.engine.faults.injector.faults()))


def test_two_processes_never_consume_the_same_unit(
    cluster_factory: Callable[..., Cluster],
) -> None:
    # Two clusters on one ZooKeeper: two stores, two caches, as two processes would have.
    first = cluster_factory(broker_ids=(0, 1))
    second = cluster_factory(broker_ids=(2, 3))
    fault_id = first.faults.push_error("CreateTopics", ec.POLICY_VIOLATION, count=5)
    second.faults.refresh()

    def attempt(i: int) -> int:
        runner = (first, second)[i % 2]
        broker_id = sorted(runner.engine.brokers)[i // 2 % 2]
        with wire(runner, broker_id) as c:
            (topic,) = c.request(5, create(f"race-{i}")).topics
            return int(topic.error_code)

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(attempt, range(16)))
    assert codes.count(ec.POLICY_VIOLATION) == 5
    observed = first.faults.observed(fault_id) + second.faults.observed(fault_id)
    assert len(observed) == 5
    assert first.faults.list() == []
