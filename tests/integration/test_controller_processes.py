"""Controller failover across processes: two zkbroker processes on one ZooKeeper; the one
holding the controller is killed with SIGKILL in the middle of a reassignment, and the other
one's broker takes over (epoch + 1) and finishes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from tests.integration.helpers import wait_until
from zkbroker import Cluster

REASSIGN = "/admin/reassign_partitions"
SESSION_TIMEOUT_MS = 4000


def _controller_id(zk: KazooClient) -> int:
    # One read: the node may go between an exists() and a get() (a controller's session
    # ending), which is "no controller" too.
    try:
        node = zk.get("/controller")[0]
    except NoNodeError:
        return -1
    return json.loads(node)["brokerid"] if node else -1


def _state(zk: KazooClient, topic: str, partition: int) -> dict[str, object]:
    doc = json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")[0])
    assert doc["leader"] == -1 or doc["leader"] in doc["isr"], doc
    return doc


@pytest.fixture
def first_process(zk_connect: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`zkbroker run` with brokers 0-2 whose replicas never catch up (600 s)."""
    log = (tmp_path / "first.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "zkbroker",
            "run",
            "--zookeeper",
            zk_connect,
            "--broker-ids",
            "0,1,2",
            "--port",
            "0",
            "--no-auto-leader-rebalance",
            "--zookeeper-session-timeout-ms",
            str(SESSION_TIMEOUT_MS),
        ],
        stdout=subprocess.PIPE,
        stderr=log,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().decode()
        assert first.startswith("bootstrap_servers="), (tmp_path / "first.log").read_text()
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)
        log.close()


def test_kill_9_of_the_controller_process_mid_reassignment(
    first_process: subprocess.Popen[bytes],
    cluster_factory: Callable[..., Cluster],
    kazoo: KazooClient,
) -> None:
    wait_until(lambda: _controller_id(kazoo) == 0)
    epoch = int(kazoo.get("/controller_epoch")[0])
    second = cluster_factory(broker_ids=(3, 4, 5), zk_session_timeout_s=SESSION_TIMEOUT_MS / 1000)
    # The second process's replicas of the topic fetch nothing until the first process is gone.
    paused = [second.faults.pause_replication(b, topic="xproc") for b in (3, 4, 5)]
    assert second.engine.controller_id == 0
    topic = {"version": 1, "partitions": {"0": [0, 3], "1": [1, 4]}}
    kazoo.create("/brokers/topics/xproc", json.dumps(topic).encode())
    wait_until(lambda: kazoo.exists("/brokers/topics/xproc/partitions/1/state"))
    kazoo.create(
        REASSIGN,
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": "xproc", "partition": 0, "replicas": [4, 5]},
                    {"topic": "xproc", "partition": 1, "replicas": [5, 3]},
                ],
            }
        ).encode(),
    )
    # The first process's controller starts it; its new replicas do not catch up (paused).
    wait_until(
        lambda: (
            json.loads(kazoo.get("/brokers/topics/xproc")[0])["adding_replicas"]
            == {"0": [4, 5], "1": [5, 3]}
        )
    )
    assert _state(kazoo, "xproc", 0)["leader_epoch"] == 1  # A1
    assert kazoo.exists(REASSIGN) is not None

    os.kill(first_process.pid, signal.SIGKILL)
    first_process.wait(10)
    wait_until(lambda: _controller_id(kazoo) in (3, 4, 5), timeout=SESSION_TIMEOUT_MS / 1000 + 15)
    assert int(kazoo.get("/controller_epoch")[0]) == epoch + 1
    for fault in paused:
        second.faults.clear(fault)

    wait_until(lambda: kazoo.exists(REASSIGN) is None, timeout=30)
    assignment = json.loads(kazoo.get("/brokers/topics/xproc")[0])
    assert assignment["partitions"] == {"0": [4, 5], "1": [5, 3]}
    assert assignment["adding_replicas"] == {} and assignment["removing_replicas"] == {}
    p0, p1 = _state(kazoo, "xproc", 0), _state(kazoo, "xproc", 1)
    # The ISR lists followers in the order they caught up (their leader added them).
    assert (p0["leader"], sorted(p0["isr"])) == (4, [4, 5])
    assert (p1["leader"], sorted(p1["isr"])) == (5, [3, 5])
    assert p0["controller_epoch"] == p1["controller_epoch"] == epoch + 1
    assert not kazoo.get_children("/brokers/ids") or set(kazoo.get_children("/brokers/ids")) == {
        "3",
        "4",
        "5",
    }
    wait_until(lambda: second.engine.image.topics["xproc"].partitions[1].leader == 5)
