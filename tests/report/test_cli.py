"""`zkbroker report`: usage errors and missing dependencies exit 2 with a hint, findings
under --fail-on exit 3 (a real run of the command, on local Spark)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from zkbroker.broker.cli.main import main
from zkbroker.broker.report import jvm_tuning, session
from zkbroker.broker.report.synthetic import SyntheticConfig, write_runs

ZKBROKER = str(Path(sys.executable).parent / "zkbroker")


def test_without_java_exits_2_with_a_hint(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PYSPARK_GATEWAY_PORT")}
    env["PATH"] = str(tmp_path)  # nothing there: no java
    done = subprocess.run(
        [sys.executable, "-m", "zkbroker", "report", str(tmp_path), "--out", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "java not found" in done.stderr and "install a JRE" in done.stderr


def test_without_pyspark_exits_2_with_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "pyspark" else real(name, *args)

    monkeypatch.setattr(session.importlib.util, "find_spec", find_spec)
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "pip install 'zkbroker[report]'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--fail-on", "new-error-codes"],  # needs --baseline
        ["--fail-on", "no-such-rule"],
        [],  # no --out
    ],
)
def test_usage_errors_exit_2(args: list[str], tmp_path: Path) -> None:
    out = [] if not args else ["--out", str(tmp_path)]
    with pytest.raises(SystemExit) as exited:
        main(["report", str(tmp_path), *out, *args])
    assert exited.value.code == 2


@pytest.mark.spark
@pytest.mark.timeout(600)  # two JVMs of their own
def test_findings_exit_3_from_the_command_whose_second_run_maps_the_first_ones_archive(
    tmp_path: Path,
) -> None:
    """Two runs of the command: the first writes the JVM's class-data archive as its JVM
    exits, the second maps it; both answer the same."""
    write_runs(str(tmp_path / "in"), SyntheticConfig(lines=400, runs=1), fast=True)
    kept = tmp_path / "archives"
    env = {**os.environ, "ZKBROKER_CLASS_ARCHIVE": str(kept),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    summaries = []
    for run in ("first", "second"):
        out = tmp_path / run
        done = subprocess.run(
            [ZKBROKER, "report", str(tmp_path / "in"), "--out", str(out),
             "--master", "local[1]", "--fail-on", "removed-in:4.0", "--driver-memory", "512m"],
            capture_output=True, text=True, timeout=300, env=env,
        )
        assert done.returncode == 3, done.stderr[-3000:]
        summary = json.loads((out / "summary.json").read_text())
        assert summary["exit_code"] == 3
        assert [f["client"] for f in summary["findings"]] == ["unknown unknown"]
        assert (out / "report.html").stat().st_size > 10_000
        summaries.append(summary)
        archives = list(kept.glob("*.jsa"))
        # The JVM ran with the JIT's directives, from zkbroker's cache folder, and the
        # command, its JVM's only run, kept C2 off its tables.
        cache = tmp_path / "cache" / "zkbroker"
        written = sorted(cache.glob("jit-*.json"))  # before the calls below find them
        directives = jvm_tuning.directives_file(str(cache))
        assert written == sorted([directives, jvm_tuning.no_c2_file(str(cache))])
        assert f"-XX:CompilerDirectivesFile={directives}" in done.stdout + done.stderr
        assert re.search(r"report\.jit\.c2_paused\s.*paused=True", done.stdout + done.stderr)
        if run == "first":
            assert "report.class_archive.written" in done.stdout + done.stderr
            assert len(archives) == 1 and archives[0].stat().st_size > 10_000_000
            assert not list(kept.glob("*.partial"))
        else:
            assert "using=True" in done.stdout + done.stderr
            assert "report.class_archive.written" not in done.stdout + done.stderr
    assert summaries[0]["totals"] == summaries[1]["totals"]
