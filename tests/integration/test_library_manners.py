"""zkbroker inside someone else's process, and its command at a normal stop: nothing on stdout
from the library, events through `logging` under `zkbroker.*` at the level the application
configures (none of zkbroker's own: a NullHandler, no level), no error at a Ctrl-C, and the
process-wide collector pause shared safely by two clusters."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from zkbroker import Cluster
from zkbroker.broker.log import ROOT_LOGGER

REPO = Path(__file__).resolve().parents[2]


def test_a_cluster_in_a_script_writes_nothing_to_stdout(zk_connect: str, tmp_path: Path) -> None:
    # A script that configures no logging: zkbroker's INFO events stay quiet (Python prints
    # only warnings and worse when nobody configured logging), and nothing goes to stdout.
    script = tmp_path / "user_script.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from zkbroker import Cluster

            with Cluster(brokers=2, port=0, zookeeper={zk_connect!r}) as cluster:
                cluster.brokers[1].stop()
                cluster.brokers[1].start()
            """
        )
    )
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == ""


# A user's script: a cluster of one broker answers a Metadata request, then a frame whose
# header cannot be decoded (a WARNING event: the connection is closed), under the logging
# configuration the test puts first.
_SERVING_SCRIPT = """
import socket, struct
from zkbroker import Cluster
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.toolkit.wire import WireClient

with Cluster(brokers=1, port=0, zookeeper={zookeeper!r}) as cluster:
    with WireClient.to(cluster.bootstrap_servers) as client:
        assert client.request(9, MetadataRequest(topics=[])).brokers
    with WireClient.to(cluster.bootstrap_servers) as client:
        client.send_raw(struct.pack(">i", 1) + b"\\x00")
        assert client.is_closed_by_peer()
"""


def _serve_in_a_script(tmp_path: Path, zk_connect: str, logging_setup: str) -> tuple[str, str]:
    script = tmp_path / "user_script.py"
    script.write_text(logging_setup + _SERVING_SCRIPT.format(zookeeper=zk_connect))
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout, result.stderr


def test_an_application_at_critical_hears_nothing_from_a_serving_cluster(
    zk_connect: str, tmp_path: Path
) -> None:
    setup = "import logging\nlogging.basicConfig(level=logging.CRITICAL)\n"
    stdout, stderr = _serve_in_a_script(tmp_path, zk_connect, setup)
    assert (stdout, stderr) == ("", "")


def test_an_application_at_info_gets_the_events_under_zkbroker_names(
    zk_connect: str, tmp_path: Path
) -> None:
    setup = "import logging\nlogging.basicConfig(level=logging.INFO)\n"
    stdout, stderr = _serve_in_a_script(tmp_path, zk_connect, setup)
    assert stdout == ""
    # basicConfig's format: LEVEL:logger name:message (the event's text).
    lines = stderr.splitlines()
    assert any(
        line.startswith("INFO:zkbroker.broker.server.broker_node:broker.started ") for line in lines
    ), stderr[-3000:]
    assert any(
        line.startswith("WARNING:zkbroker.broker.server.listener:connection.closing ")
        for line in lines
    ), stderr[-3000:]
    ours = [line for line in lines if ":zkbroker." in line.split(" ")[0]]
    assert ours and not any(line.startswith("DEBUG:") for line in ours)


def test_zkbroker_alone_turned_up_or_quieted(zk_connect: str, tmp_path: Path) -> None:
    # The README's recipe: the application at WARNING, zkbroker alone at INFO.
    setup = (
        "import logging\nlogging.basicConfig(level=logging.WARNING)\n"
        'logging.getLogger("zkbroker").setLevel(logging.INFO)\n'
    )
    _, stderr = _serve_in_a_script(tmp_path, zk_connect, setup)
    assert "INFO:zkbroker.broker.server.broker_node:broker.started " in stderr
    # ... or quieted below the application's level: not even its warnings.
    setup = (
        "import logging\nlogging.basicConfig(level=logging.INFO)\n"
        'logging.getLogger("zkbroker").setLevel(logging.ERROR)\n'
    )
    _, stderr = _serve_in_a_script(tmp_path, zk_connect, setup)
    assert ":zkbroker." not in stderr


def test_events_reach_logging_under_zkbroker_names_at_info(
    cluster_factory: Callable[..., Cluster], caplog: pytest.LogCaptureFixture
) -> None:
    # The suite's application level is INFO (pytest's log_level); zkbroker sets none.
    assert logging.getLogger(ROOT_LOGGER).level == logging.NOTSET
    caplog.set_level(logging.INFO)  # the root: the user asks nothing of zkbroker
    cluster = cluster_factory(broker_ids=(0,))
    ours = [r for r in caplog.records if r.name.startswith("zkbroker.")]
    started = [r for r in ours if r.msg["event"] == "broker.started"]
    assert started and started[0].name == "zkbroker.broker.server.broker_node"
    # The text a plain handler prints: the event, then its fields.
    assert started[0].getMessage().startswith("broker.started ")
    assert f"port={cluster.brokers[0].port}" in started[0].getMessage()
    # The line that logged, not structlog's frames.
    assert started[0].filename == "broker_node.py"
    assert min(r.levelno for r in ours) == logging.INFO


def test_debug_events_when_the_user_asks_for_them(
    cluster_factory: Callable[..., Cluster], caplog: pytest.LogCaptureFixture
) -> None:
    from zkbroker.broker.protocol.messages.metadata import MetadataRequest
    from zkbroker.broker.toolkit.wire import WireClient

    caplog.set_level(logging.DEBUG, logger=ROOT_LOGGER)
    cluster = cluster_factory(broker_ids=(0,))
    with WireClient.to(cluster.bootstrap_servers) as client:
        client.request(9, MetadataRequest(topics=[]))  # each request has its debug line
    assert any(r.levelno == logging.DEBUG for r in caplog.records if r.name.startswith("zkbroker."))


def _json_events(stderr: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def test_ctrl_c_stops_the_command_without_an_error(zk_connect: str) -> None:
    # Partitions of one replica on each broker: as the brokers leave one by one, a controller
    # still running would find them offline and say so at ERROR.
    process = subprocess.Popen(
        [
            sys.executable, "-m", "zkbroker", "run", "--brokers", "3", "--port", "0",
            "--zookeeper", zk_connect, "--log-format", "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("bootstrap_servers="), first
        bootstrap = first.strip().partition("=")[2]
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic("spread", 6, 1)])
            deadline = time.monotonic() + 30
            while not admin.describe_topics(["spread"])[0]["partitions"]:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        finally:
            admin.close()
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr[-3000:]
    events = _json_events(stderr)
    assert events and all("event" in e and "level" in e for e in events)
    assert {e["event"] for e in events} >= {"cluster.started", "cluster.stopped"}
    loud = [e for e in events if e["level"] in ("error", "critical")]
    assert loud == []
    # stdout carries the command's own lines only, never an event.
    assert "cluster.started" not in stdout


def test_two_clusters_in_one_process_leave_the_collector_on(
    zk_cluster_factory: Callable[..., Cluster],
) -> None:
    # Each cluster's loop runs in its own thread; a request over LARGE_FRAME_BYTES pauses the
    # process's one cyclic collector while it is decoded and answered. Both at once, twice.
    import gc
    import threading

    from zkbroker.broker.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
    from zkbroker.broker.server.request_pipeline import LARGE_FRAME_BYTES
    from zkbroker.broker.toolkit.wire import WireClient

    names = [f"absent-topic-{i:08d}" for i in range(LARGE_FRAME_BYTES // 20)]
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name=n) for n in names], allow_auto_topic_creation=False
    )
    # Each on a chroot of its own: two clusters, as two test modules of a project might start.
    clusters = [zk_cluster_factory(brokers=1), zk_cluster_factory(brokers=1)]
    answered: list[int] = []

    def ask(cluster: Cluster) -> None:
        with WireClient.to(cluster.bootstrap_servers) as client:
            for _ in range(2):
                answered.append(len(client.request(9, request).topics))

    threads = [threading.Thread(target=ask, args=(c,)) for c in clusters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert answered == [len(names)] * 4
    assert gc.isenabled()
