"""`zkbroker report`: usage errors and missing dependencies exit 2 with a hint, findings
under --fail-on exit 3 (a real run of the command, on local Spark), which prints its
progress on stderr and a summary with the findings on stdout."""

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
from zkbroker.broker.report import jvm_tuning, reference, session
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
    exits, the second maps it; both answer the same, and print the same summary."""
    paths = write_runs(str(tmp_path / "in"), SyntheticConfig(lines=400, runs=1), fast=True)
    ref = reference.compute(paths)
    kept = tmp_path / "archives"
    env = {**os.environ, "ZKBROKER_CLASS_ARCHIVE": str(kept),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    summaries = []
    printed = []
    for run in ("first", "second"):
        out = tmp_path / run
        done = subprocess.run(
            [ZKBROKER, "report", str(tmp_path / "in"), "--out", str(out),
             "--master", "local[1]", "--fail-on", "removed-in:4.0", "--driver-memory", "512m",
             "--log-level", "info"],
            capture_output=True, text=True, timeout=300, env=env,
        )
        assert done.returncode == 3, done.stderr[-3000:]
        summary = json.loads((out / "summary.json").read_text())
        assert summary["exit_code"] == 3
        assert [f["client"] for f in summary["findings"]] == ["unknown unknown"]
        assert (out / "report.html").stat().st_size > 10_000
        summaries.append(summary)
        _check_summary_printed(done.stdout, ref, out)
        printed.append(done.stdout.replace(str(out), "OUT"))
        _check_progress(done.stderr, first=run == "first")
        archives = list(kept.glob("*.jsa"))
        # The JVM ran with the JIT's directives, from zkbroker's cache folder, and the
        # command, its JVM's only run, kept C2 off its tables.
        cache = tmp_path / "cache" / "zkbroker"
        written = sorted(cache.glob("jit-*.json"))  # before the calls below find them
        directives = jvm_tuning.directives_file(str(cache))
        assert written == sorted([directives, jvm_tuning.no_c2_file(str(cache))])
        assert f"-XX:CompilerDirectivesFile={directives}" in done.stderr
        assert re.search(r"report\.jit\.c2_paused\s.*paused=True", done.stderr)
        if run == "first":
            assert "report.class_archive.written" in done.stderr
            assert len(archives) == 1 and archives[0].stat().st_size > 10_000_000
            assert not list(kept.glob("*.partial"))
        else:
            assert "using=True" in done.stderr
            assert "report.class_archive.written" not in done.stderr
    assert summaries[0]["totals"] == summaries[1]["totals"]
    assert printed[0] == printed[1]


def _check_summary_printed(stdout: str, ref: dict[str, Any], out: Path) -> None:
    """The summary on stdout, and nothing else there (the JVM's messages go to stderr), with
    the numbers of the plain-Python reference and the finding that made the exit code 3."""
    lines = stdout.splitlines()
    assert lines[0] == (f"zkbroker report: exit 3 (findings under --fail-on): report.html and "
                        f"summary.json in {out}")
    requests = sum(r["requests"] for r in ref["runs"])
    clients = {(r["client_software"], r["client_version"]) for r in ref["matrix"]}
    apis = {r["api"] for r in ref["matrix"]}
    errors = sum(r["errors"] for r in ref["runs"])
    assert lines[1] == (f"  totals:     1 run, {requests:,} requests, {len(clients)} clients, "
                        f"{len(apis)} APIs")
    assert lines[2].startswith(f"  errors:     {errors:,} error responses (faults excluded)")
    assert lines[3].startswith(f"  readiness:  {len(clients) - 1} clients ready, 1 not ready")
    assert lines[4].startswith("  run to run: error codes 0 new, 0 vanished, 0 changed")
    removed = sorted(f"{r['api']} v{r['api_version']}" for r in ref["matrix"]
                     if r["client_software"] == "unknown" and r["removed_in_4_0"])
    assert lines[5:] == [
        "  --fail-on:  FAILED, 1 finding (removed-in:4.0: 1)",
        f"    removed-in:4.0: unknown unknown: {', '.join(removed)}",
    ]


def _check_progress(stderr: str, first: bool) -> None:
    steps = [line.split("] ", 1)[1] for line in stderr.splitlines()
             if line.startswith("zkbroker report: [")]
    assert steps[0] == "starting Spark (local[1])"
    assert any(s.startswith("parsing 1 capture file into the dataset") for s in steps)
    assert any(s.startswith("ingested 1 capture file: 400 lines, 0 bad") for s in steps)
    assert any(s.startswith("computing 9 tables") for s in steps)
    archive = "writing the JVM class archive (once, ~30 s)"
    assert (steps[-1] == archive) is first and (archive in steps) is first
    assert len(steps) <= 12
