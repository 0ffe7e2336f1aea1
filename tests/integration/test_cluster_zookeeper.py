"""What the cluster writes to ZooKeeper, controller election and failover, several processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from confluent_kafka.admin import AdminClient

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.zk_layout import BrokerIdInUseError

PERSISTENT_PATHS = [
    "/consumers",
    "/brokers/ids",
    "/brokers/topics",
    "/config/changes",
    "/admin/delete_topics",
    "/brokers/seqid",
    "/isr_change_notification",
    "/latest_producer_id_block",
    "/log_dir_event_notification",
    "/config/topics",
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
]


@pytest.mark.kafka_version("2.8")
def test_brokers_controller_and_cluster_id_in_kafka_formats(cluster: Cluster, kazoo) -> None:
    assert sorted(kazoo.get_children("/brokers/ids")) == ["0", "1", "2"]
    for broker_id in (0, 1, 2):
        data, stat = kazoo.get(f"/brokers/ids/{broker_id}")
        info = json.loads(data)
        port = cluster.engine.brokers[broker_id].port
        assert info == {
            "version": 5,
            "host": "127.0.0.1",
            "port": port,
            "jmx_port": -1,
            "timestamp": info["timestamp"],
            "endpoints": [f"PLAINTEXT://127.0.0.1:{port}"],
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "features": {},
        }
        assert isinstance(info["timestamp"], str) and info["timestamp"].isdigit()
        assert stat.ephemeralOwner != 0
        # Kafka's checkedEphemeralCreate: create with no data, then set -> data version 1.
        assert stat.version == 1

    controller = json.loads(
        wait_until(lambda: kazoo.exists("/controller") and kazoo.get("/controller")[0])
    )
    assert set(controller) == {"version", "brokerid", "timestamp"}
    assert controller["version"] == 1 and controller["brokerid"] in (0, 1, 2)
    assert kazoo.get("/controller")[1].ephemeralOwner != 0
    assert kazoo.get("/controller_epoch")[0] == b"1"

    cluster_id = json.loads(kazoo.get("/cluster/id")[0])
    assert cluster_id["version"] == "1" and len(cluster_id["id"]) == 22
    for path in PERSISTENT_PATHS:
        assert kazoo.exists(path), path
    feature = json.loads(wait_until(lambda: kazoo.exists("/feature") and kazoo.get("/feature")[0]))
    assert feature == {"version": 1, "status": 1, "features": {}}


@pytest.mark.parametrize(
    ("release", "broker_version", "controller_version"),
    [((2, 6), 4, 1), ((3, 4), 5, 2), ((3, 9), 5, 2)],
)
def test_znode_formats_follow_the_emulated_release(
    cluster_factory, kazoo, release, broker_version, controller_version
) -> None:
    cluster_factory(broker_ids=(4,), kafka_version=release, racks=("r1",))
    info = json.loads(kazoo.get("/brokers/ids/4")[0])
    assert info["version"] == broker_version
    assert info["rack"] == "r1"
    assert ("features" in info) == (broker_version == 5)
    controller = json.loads(
        wait_until(lambda: kazoo.exists("/controller") and kazoo.get("/controller")[0])
    )
    assert controller["version"] == controller_version
    if controller_version == 2:
        assert controller["kraftControllerEpoch"] == -1


def test_controller_failover_bumps_epoch(cluster: Cluster, kazoo) -> None:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    first = cluster.engine.controller_id
    assert kazoo.get("/controller_epoch")[0] == b"1"
    cluster.call(cluster.engine.brokers[first].stop())
    assert not kazoo.exists(f"/brokers/ids/{first}")
    wait_until(lambda: cluster.engine.controller_id not in (-1, first))
    second = cluster.engine.controller_id
    assert second in {0, 1, 2} - {first}
    assert kazoo.get("/controller_epoch")[0] == b"2"
    assert json.loads(kazoo.get("/controller")[0])["brokerid"] == second
    assert cluster.run_sync(lambda: cluster.engine.brokers[second].is_controller)
    # Exactly one broker believes it is the controller.
    assert cluster.run_sync(
        lambda: [b for b, node in cluster.engine.brokers.items() if node.is_controller]
    ) == [second]

    node = cluster.engine.brokers[second]
    admin = AdminClient({"bootstrap.servers": f"{node.host}:{node.port}"})
    described = admin.describe_cluster(request_timeout=15).result()
    assert described.controller.id == second
    assert sorted(n.id for n in described.nodes) == sorted({0, 1, 2} - {first})


def test_clashing_broker_id_is_refused(cluster: Cluster, zk_connect: str) -> None:
    from zkbroker.broker.settings import Settings

    second = Cluster(Settings(broker_ids=(1,), port=0, zookeeper=zk_connect))
    with pytest.raises(BrokerIdInUseError, match="1"):
        second.start()
    # The refused process left nothing behind, and the first cluster is untouched.
    assert sorted(cluster.run_sync(lambda: list(cluster.engine.image.brokers))) == [0, 1, 2]


def _zkbroker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "zkbroker", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _read_ready(proc: subprocess.Popen[str], timeout: float = 60) -> dict[str, str]:
    values: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while len(values) < 2:
        if time.monotonic() > deadline or proc.poll() is not None:
            raise AssertionError(
                f"zkbroker did not start: {proc.stderr.read() if proc.stderr else ''}"
            )
        line = proc.stdout.readline()
        if "=" in line:
            key, value = line.strip().split("=", 1)
            values[key] = value
    return values


def test_two_processes_form_one_cluster(cluster: Cluster, zk_connect: str, kazoo) -> None:
    proc = _zkbroker("run", "--zookeeper", zk_connect, "--broker-ids", "7", "--port", "0")
    try:
        ready = _read_ready(proc)
        assert ready["zookeeper"] == zk_connect
        wait_until(lambda: 7 in cluster.engine.image.brokers)
        admin = AdminClient({"bootstrap.servers": ready["bootstrap_servers"]})
        described = admin.describe_cluster(request_timeout=15).result()
        assert sorted(n.id for n in described.nodes) == [0, 1, 2, 7]
        assert described.controller.id == cluster.engine.controller_id
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert not kazoo.exists("/brokers/ids/7")
        wait_until(lambda: 7 not in cluster.engine.image.brokers)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_cli_refuses_clashing_id_with_clear_error(cluster: Cluster, zk_connect: str) -> None:
    proc = _zkbroker("run", "--zookeeper", zk_connect, "--broker-ids", "0", "--port", "0")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "already registered" in err


def test_cli_embedded_zookeeper_lifecycle() -> None:
    proc = _zkbroker("run", "--brokers", "1", "--port", "0")
    try:
        ready = _read_ready(proc)
        host, port = ready["zookeeper"].rsplit(":", 1)
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=ready["zookeeper"])
        zk.start(timeout=15)
        try:
            assert zk.get_children("/brokers/ids") == ["0"]
        finally:
            zk.stop()
            zk.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
        with pytest.raises(OSError):
            socket.create_connection((host, int(port)), timeout=2).close()
    finally:
        if proc.poll() is None:
            proc.kill()
