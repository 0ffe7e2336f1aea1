"""Stopping and starting single brokers of a running cluster: in-process (`Cluster.stop_broker`
/ `start_broker` through `Cluster`) and from another process (`zkbroker broker ...`),
checked in ZooKeeper with kazoo, with real Kafka clients and with plain sockets."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from tests.integration.helpers import wait_until
from tests.log_events import capture_events
from zkbroker import Cluster


def registration(kazoo: KazooClient, broker_id: int) -> tuple[dict, int] | None:
    """(data, czxid = broker epoch) of /brokers/ids/<id>, or None."""
    try:
        data, stat = kazoo.get(f"/brokers/ids/{broker_id}")
    except NoNodeError:
        return None
    return json.loads(data), stat.czxid


def desired_state(kazoo: KazooClient, broker_id: int) -> str | None:
    try:
        doc = json.loads(kazoo.get(f"/zkbroker/brokers/{broker_id}")[0])
    except NoNodeError:
        return None
    assert doc["version"] == 1
    return str(doc["state"])


def confluent_broker_ids(bootstrap: str) -> set[int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return set(admin.list_topics(timeout=10).brokers)


def refuses_connections(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def controller_id(kazoo: KazooClient) -> int | None:
    try:
        return int(json.loads(kazoo.get("/controller")[0])["brokerid"])
    except NoNodeError:
        return None


def zkbroker(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`zkbroker ...` as a separate process, as a user would run it."""
    return subprocess.run(
        [sys.executable, "-m", "zkbroker", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


# ---- in-process ----------------------------------------------------------------------------


def test_stop_and_start_broker_in_process(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    # 3.7+: kafka-python's describe_cluster() needs DescribeCluster v1 (see the README).
    cluster = cluster_factory(kafka_version=(3, 9))
    node = cluster.engine.brokers[1]
    host, port = node.host, node.port
    assert port != 0  # the fixture uses port=0: the OS picked it
    before = registration(kazoo, 1)
    assert before is not None
    assert desired_state(kazoo, 1) == "running"
    assert confluent_broker_ids(cluster.bootstrap_servers) == {0, 1, 2}

    cluster.stop_broker(1)
    # The session is closed when stop_broker returns: the registration is gone at once.
    assert registration(kazoo, 1) is None
    assert desired_state(kazoo, 1) == "stopped"
    assert not node.running and node.broker_epoch == -1
    assert refuses_connections(host, port)
    assert f":{port}" not in cluster.bootstrap_servers
    assert wait_until(lambda: confluent_broker_ids(cluster.bootstrap_servers) == {0, 2})
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        assert {b["broker_id"] for b in admin.describe_cluster()["brokers"]} == {0, 2}
    finally:
        admin.close()

    cluster.start_broker(1)
    after = registration(kazoo, 1)
    assert after is not None
    assert after[1] > before[1]  # a new session, a new broker epoch
    assert after[1] == node.broker_epoch
    assert node.port == port and after[0]["port"] == port
    assert after[0]["endpoints"] == before[0]["endpoints"]
    assert desired_state(kazoo, 1) == "running"
    assert f"{host}:{port}" in cluster.bootstrap_servers.split(",")
    assert wait_until(lambda: confluent_broker_ids(f"{host}:{port}") == {0, 1, 2})


def test_stop_and_start_are_idempotent_and_check_the_id(cluster: Cluster) -> None:
    node = cluster.engine.brokers[2]
    epoch = node.broker_epoch
    cluster.start_broker(2)  # running already: nothing happens
    assert node.running and node.broker_epoch == epoch
    cluster.stop_broker(2)
    cluster.stop_broker(2)  # stopped already: nothing happens
    assert not node.running
    with pytest.raises(ValueError, match=r"broker 7 .*\(0, 1, 2\)"):
        cluster.stop_broker(7)
    with pytest.raises(ValueError, match="broker 7"):
        cluster.start_broker(7)


def test_restarted_broker_forgets_in_memory_state(cluster: Cluster) -> None:
    node = cluster.engine.brokers[0]
    cluster.run_sync(lambda: node.broker_loggers.apply(0, "kafka", "DEBUG"))
    assert node.broker_loggers.effective("kafka") == "DEBUG"
    cluster.stop_broker(0)
    cluster.start_broker(0)
    # log4j levels set at run time do not survive a Kafka broker restart.
    assert node.broker_loggers.effective("kafka") == "INFO"
    assert node.auto_create_in_flight == set()


def test_stopping_the_controller_moves_it(cluster: Cluster, kazoo: KazooClient) -> None:
    wait_until(lambda: controller_id(kazoo) is not None)
    first = controller_id(kazoo)
    assert first is not None
    epoch = int(kazoo.get("/controller_epoch")[0])
    cluster.stop_broker(first)
    wait_until(lambda: controller_id(kazoo) not in (None, first))
    moved = controller_id(kazoo)
    assert moved in {0, 1, 2} - {first}
    assert int(kazoo.get("/controller_epoch")[0]) > epoch
    assert wait_until(lambda: cluster.engine.controller_id == moved)
    # Coming back does not take the controller back (Kafka's election is first-come).
    cluster.start_broker(first)
    assert controller_id(kazoo) == moved


def test_fresh_cluster_resets_a_stale_stopped_state(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    kazoo.create("/zkbroker/brokers/0", b'{"version":1,"state":"stopped"}', makepath=True)
    runner = cluster_factory(broker_ids=(0,))
    assert runner.engine.brokers[0].running
    assert desired_state(kazoo, 0) == "running"
    assert registration(kazoo, 0) is not None


def test_control_node_written_by_any_tool_is_applied(
    cluster: Cluster, kazoo: KazooClient
) -> None:
    node = cluster.engine.brokers[2]
    kazoo.set("/zkbroker/brokers/2", b'{"version":1,"state":"stopped"}')
    wait_until(lambda: registration(kazoo, 2) is None and not node.running)
    # An undecodable control node expresses no wish: the broker stays as it is.
    with capture_events() as events:
        kazoo.set("/zkbroker/brokers/2", b'{"version":1,"state":"paused"}')
        wait_until(
            lambda: any(
                e["event"] == "broker.control_invalid" and e["broker_id"] == 2 for e in events
            )
        )
    assert not node.running
    kazoo.set("/zkbroker/brokers/2", b'{"version":1,"state":"running"}')
    wait_until(lambda: registration(kazoo, 2) is not None and node.running)


# ---- across processes ----------------------------------------------------------------------


def test_cli_stops_and_starts_a_broker_of_another_process(
    cluster: Cluster, zk_connect: str, kazoo: KazooClient
) -> None:
    node = cluster.engine.brokers[1]
    port, epoch = node.port, node.broker_epoch

    stopped = zkbroker("broker", "stop", "1", "--zookeeper", zk_connect)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout == "broker 1 stopped\n"
    assert registration(kazoo, 1) is None
    assert not node.running
    assert refuses_connections(node.host, port)

    listed = zkbroker("broker", "list", "--zookeeper", zk_connect)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "broker 0: registered=yes desired=running zkbroker=yes",
        "broker 1: registered=no desired=stopped zkbroker=yes",
        "broker 2: registered=yes desired=running zkbroker=yes",
    ]

    again = zkbroker("broker", "stop", "1", "--zookeeper", zk_connect, "--timeout", "5")
    assert (again.returncode, again.stdout) == (0, "broker 1 stopped\n")

    started = zkbroker("broker", "start", "1", "--zookeeper", zk_connect)
    assert started.returncode == 0, started.stderr
    assert started.stdout == "broker 1 started\n"
    after = registration(kazoo, 1)
    assert after is not None and after[1] > epoch
    assert node.running and node.port == port
    assert wait_until(lambda: confluent_broker_ids(f"{node.host}:{port}") == {0, 1, 2})


def test_cli_times_out_when_no_process_runs_the_id(
    cluster: Cluster, zk_connect: str, kazoo: KazooClient
) -> None:
    result = zkbroker("broker", "stop", "7", "--zookeeper", zk_connect, "--timeout", "1")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "broker 7 was not stopped within 1s" in result.stderr
    assert "no zkbroker process applied the request" in result.stderr
    # The wish is recorded, and harmless: nobody runs broker 7.
    assert desired_state(kazoo, 7) == "stopped"
    listed = zkbroker("broker", "list", "--zookeeper", zk_connect).stdout.splitlines()
    assert "broker 7: registered=no desired=stopped zkbroker=no" in listed
    assert all(cluster.engine.brokers[b].running for b in (0, 1, 2))


def test_cli_reports_an_unreachable_zookeeper() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free_port = s.getsockname()[1]
    result = zkbroker(
        "broker", "stop", "1", "--zookeeper", f"127.0.0.1:{free_port}", "--timeout", "1"
    )
    assert result.returncode == 1
    assert "cannot connect to ZooKeeper" in result.stderr
