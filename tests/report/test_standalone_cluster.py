"""The cluster path for real: a Spark standalone master and worker started from the pyspark
package on 127.0.0.1 (free ports), `spark-submit --master spark://...` of the job's entry
script, and the same tables and summary as the job on local Spark.

Executors run no Python here (the worker has none configured for them: PYSPARK_PYTHON is set
only for the driver), so a Python UDF slipping into the job would fail this test. Both JVMs
are killed afterwards, by their process ids.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import zkbroker.broker.report.submit as submit_module
from zkbroker.broker.report.job import run_report
from zkbroker.broker.report.options import EXIT_FINDINGS, ReportOptions
from zkbroker.broker.report.synthetic import SyntheticConfig, write_runs

# Four JVMs (master, worker, driver, executor): more than the suite's 120 s on a busy machine.
pytestmark = [pytest.mark.spark, pytest.mark.timeout(420)]

START_TIMEOUT_S = 90


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(_spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(tmp / "logs"),
        SPARK_WORKER_DIR=str(tmp / "work"),
        SPARK_NO_DAEMONIZE="1",
    )
    return env


def _wait_for(path: Path, pattern: str, proc: subprocess.Popen[bytes]) -> re.Match[str]:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        found = re.search(pattern, path.read_text(errors="replace")) if path.exists() else None
        if found:
            return found
        if proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode}: {path.read_text()[-2000:]}")
        time.sleep(0.3)
    raise AssertionError(f"{pattern!r} not seen in {START_TIMEOUT_S}s: {path.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(master URL, the worker's work folder)."""
    tmp = tmp_path_factory.mktemp("standalone")
    env = _env(tmp)
    spark_class = str(_spark_home() / "bin" / "spark-class")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        master_log = tmp / "master.log"
        with open(master_log, "wb") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", "0", "--webui-port", "0"],
                stdout=out, stderr=subprocess.STDOUT, env=env,
            ))
        url = _wait_for(master_log, r"spark://127\.0\.0\.1:\d+", procs[0]).group(0)
        worker_log = tmp / "worker.log"
        with open(worker_log, "wb") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host",
                 "127.0.0.1", "--port", "0", "--webui-port", "0", "--cores", "1", "--memory",
                 "1g", "--work-dir", str(tmp / "work")],
                stdout=out, stderr=subprocess.STDOUT, env=env,
            ))
        _wait_for(master_log, r"Registering worker", procs[0])
        yield url, tmp / "work"
    finally:
        for proc in reversed(procs):
            proc.kill()
            proc.wait(timeout=30)


def _comparable(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: summary[k] for k in ("totals", "bad_lines", "readiness", "runs", "findings")}


def _table(spark: Any, out: Path, name: str) -> list[tuple[Any, ...]]:
    rows = spark.read.parquet(str(out / "tables" / name)).collect()
    return sorted((tuple(r) for r in rows), key=repr)


def test_spark_submit_on_a_standalone_cluster_matches_local(
    standalone: tuple[str, Path], spark: Any, tmp_path: Path
) -> None:
    master, work = standalone
    inputs = tmp_path / "in"
    write_runs(str(inputs), SyntheticConfig(lines=3000, runs=2, seed=9), fast=True)
    env = _env(tmp_path)
    # The driver's Python (spark-submit runs the script with it); executors get none.
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    cluster_out = tmp_path / "cluster"
    submitted = subprocess.run(
        [str(_spark_home() / "bin" / "spark-submit"), "--master", master,
         "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
         "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.executor.memory=512m",
         "--driver-memory", "512m",
         submit_module.__file__, str(inputs), "--out", str(cluster_out),
         "--fail-on", "removed-in:4.0", "--log-level", "info"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert submitted.returncode == EXIT_FINDINGS, submitted.stderr[-3000:]
    assert "launched_by=spark-submit" in submitted.stdout + submitted.stderr
    # The same summary as from `zkbroker report`, under spark-submit too (whose PythonRunner
    # merges the driver's stderr into its stdout).
    assert "  --fail-on:  FAILED, 1 finding (removed-in:4.0: 1)" in submitted.stdout
    # It really ran on the cluster: the worker started an executor for the application.
    assert list(work.glob("app-*/*/stderr")), sorted(work.iterdir())

    local_out = tmp_path / "local"
    local = run_report(
        ReportOptions(out=str(local_out), inputs=(str(inputs),), fail_on=("removed-in:4.0",)),
        spark=spark,
    )
    remote = json.loads((cluster_out / "summary.json").read_text())
    assert _comparable(remote) == _comparable(local.summary)
    assert remote["exit_code"] == local.exit_code == EXIT_FINDINGS
    for name in ("matrix", "readiness", "errors", "latency", "latency_runs", "fault_events",
                 "runs"):
        assert _table(spark, cluster_out, name) == _table(spark, local_out, name), name
