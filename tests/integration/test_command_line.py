"""`zkbroker run`'s start-up as users run it (the installed console script, in a child process),
with Java and ZooKeeper installed: the embedded ZooKeeper started once the settings are built
is the one the cluster runs on (one `zookeeper.starting`, also with `--log-dir`, where it keeps
the cluster in DIR/zookeeper), and the recording `java` of the refusal tests
(`tests/unit/test_command_line.py`) does see a start, so their "no JVM" holds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.unit.test_command_line import ZKBROKER, sandbox_env


def _events(stderr: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("log_dir", [False, True], ids=["in-memory", "log-dir"])
def test_the_cluster_runs_on_the_early_zookeeper(tmp_path: Path, log_dir: bool) -> None:
    args = ["run", "--brokers", "1", "--port", "0", "--log-format", "json"]
    if log_dir:
        args += ["--log-dir", str(tmp_path / "logs")]
    process = subprocess.Popen(
        [str(ZKBROKER), *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = process.stdout.readline() if process.stdout is not None else ""
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert first.startswith("bootstrap_servers=127.0.0.1:"), err
    assert process.returncode == 0, err
    events = [e["event"] for e in _events(err)]
    assert events.count("zookeeper.starting") == 1, events
    assert events.count("zookeeper.stopped") == 1, events
    assert events.index("zookeeper.starting") < events.index("cluster.started")
    starting = next(e for e in _events(err) if e["event"] == "zookeeper.starting")
    if log_dir:
        assert starting["data_dir"] == str((tmp_path / "logs" / "zookeeper").resolve())
        assert (tmp_path / "logs" / "zookeeper").is_dir()


def test_the_recording_java_sees_a_start(tmp_path: Path) -> None:
    marker = tmp_path / "java-ran"
    env = sandbox_env(tmp_path, marker)
    if "ZOOKEEPER_HOME" in os.environ:
        env["ZOOKEEPER_HOME"] = os.environ["ZOOKEEPER_HOME"]
    done = subprocess.run(
        [str(ZKBROKER), "run", "--brokers", "1", "--port", "0"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert marker.exists(), done.stderr
    assert "zookeeper.starting" in done.stderr
