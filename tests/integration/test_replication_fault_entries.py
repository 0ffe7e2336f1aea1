"""Replication faults in a running cluster: entries added through the toolkit and through the
`zkbroker fault` command (another process) reach the injector's replication view, which
answers for the right brokers and partitions, and leave it when cleared; requests are
untouched by them. What the fetchers do with the answers (ISR shrink, lag) is tested with the
replica manager."""

from __future__ import annotations

import pytest

from tests.integration.helpers import wait_until
from tests.integration.test_faults import zkbroker_cli
from zkbroker import Cluster
from zkbroker.broker.hooks.faults import SyncFaults
from zkbroker.broker.hooks.replication_faults import ReplicationFaults
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.toolkit.wire import WireClient


def _view(cluster: Cluster) -> ReplicationFaults:
    return cluster.engine.faults.injector.replication


def _ask(cluster: Cluster, question: str, *args: int | str) -> object:
    """One answer of the view, asked on the cluster's loop as the replica manager asks."""
    return cluster.run_sync(lambda: getattr(_view(cluster), question)(*args))


def _faults(cluster: Cluster) -> SyncFaults:
    faults = cluster.faults
    assert isinstance(faults, SyncFaults)  # `with` mode: the blocking methods
    return faults


def test_toolkit_entries_answer_in_the_view(cluster: Cluster) -> None:
    faults = _faults(cluster)
    paused = faults.pause_replication(1, "orders", 0)
    faults.slow_replication(2, 300)
    slow_orders = faults.slow_replication(2, 800, topic="orders")
    cut = faults.cut_inter_broker(0)
    # In this process's view as soon as the methods return.
    assert _ask(cluster, "fetch_paused", 1, "orders", 0) is True
    assert _ask(cluster, "fetch_paused", 1, "orders", 1) is False
    assert _ask(cluster, "fetch_paused", 2, "orders", 0) is False
    assert _ask(cluster, "fetch_delay_s", 2, "orders", 0) == 0.8
    assert _ask(cluster, "fetch_delay_s", 2, "other", 0) == 0.3
    assert _ask(cluster, "fetch_delay_s", 1, "orders", 0) == 0.0
    assert _ask(cluster, "inter_broker_cut", 0) is True
    assert _ask(cluster, "inter_broker_cut", 1) is False
    assert [f.describe() for f in faults.list()] == [
        f"fault {paused}: pause-replication broker=1 topic=orders partition=0 count=until-cleared",
        f"fault {paused + 1}: slow-replication broker=2 delay_ms=300 count=until-cleared",
        f"fault {slow_orders}: slow-replication broker=2 topic=orders delay_ms=800"
        " count=until-cleared",
        f"fault {cut}: cut-inter-broker broker=0 count=until-cleared",
    ]
    # Requests pay nothing for them: the injector stays out of the hook chain.
    assert not cluster.run_sync(lambda: bool(cluster.engine.hooks))
    node = cluster.engine.brokers[0]
    with WireClient(node.host, node.port) as client:
        assert client.request(3, MetadataRequest(topics=None)).brokers
    assert faults.observed() == []

    assert faults.clear(slow_orders) == 1
    assert _ask(cluster, "fetch_delay_s", 2, "orders", 0) == 0.3
    assert faults.clear(cut) == 1
    assert _ask(cluster, "inter_broker_cut", 0) is False
    assert faults.clear() == 2
    assert _ask(cluster, "fetch_paused", 1, "orders", 0) is False
    assert _ask(cluster, "fetch_delay_s", 2, "other", 0) == 0.0


def test_refused_entries_write_nothing(cluster: Cluster) -> None:
    faults = _faults(cluster)
    with pytest.raises(ValueError, match="delay_ms"):
        faults.slow_replication(1, -5)
    with pytest.raises(ValueError, match="broker id"):
        faults.cut_inter_broker(-1)
    assert faults.list() == []


def test_request_faults_beside_replication_ones(cluster: Cluster) -> None:
    faults = _faults(cluster)
    faults.pause_replication(2)
    latency = faults.add_latency(1, api="Metadata")
    assert cluster.run_sync(lambda: bool(cluster.engine.hooks))  # for the latency entry
    node = cluster.engine.brokers[0]
    with WireClient(node.host, node.port) as client:
        assert client.request(3, MetadataRequest(topics=None)).brokers
    assert [r.fault_id for r in faults.observed()] == [latency]
    faults.clear(latency)
    assert not cluster.run_sync(lambda: bool(cluster.engine.hooks))
    assert _ask(cluster, "fetch_paused", 2, "any", 5) is True


def test_cli_entries_reach_a_running_cluster(cluster: Cluster) -> None:
    zk = ["--zookeeper", cluster.zookeeper_connect]
    out = zkbroker_cli("fault", "pause-replication", "--broker", "1", "--topic", "orders", *zk)
    assert out.strip().endswith("pause-replication broker=1 topic=orders count=until-cleared")
    paused = int(out.split()[1].rstrip(":"))
    zkbroker_cli("fault", "slow-replication", "--broker", "2", "--delay-ms", "250", *zk)
    zkbroker_cli("fault", "cut-inter-broker", "--broker", "0", *zk)
    # The children watch brings them into the running process's view.
    wait_until(lambda: _ask(cluster, "inter_broker_cut", 0))
    assert _ask(cluster, "fetch_paused", 1, "orders", 3) is True
    assert _ask(cluster, "fetch_paused", 1, "other", 3) is False
    assert _ask(cluster, "fetch_delay_s", 2, "orders", 0) == 0.25
    listed = zkbroker_cli("fault", "list", *zk).splitlines()
    assert [line.split()[2] for line in listed] == [
        "pause-replication",
        "slow-replication",
        "cut-inter-broker",
    ]
    assert zkbroker_cli("fault", "clear", str(paused), *zk).strip() == "cleared 1"
    wait_until(lambda: not _ask(cluster, "fetch_paused", 1, "orders", 3))
    assert zkbroker_cli("fault", "clear", *zk).strip() == "cleared 2"
    wait_until(lambda: not _ask(cluster, "inter_broker_cut", 0))
    assert _ask(cluster, "fetch_delay_s", 2, "orders", 0) == 0.0
