"""Capture analytics: Spark (the report job) against a plain-Python pass, on the same files.

Generates N capture lines (default 1M) in the real format (`zkbroker.broker.report.synthetic`),
split into `--runs` files cached in `--dir` and read once before timing. Each of `--rounds`
rounds runs, in a fresh interpreter and JVM as `zkbroker report` starts them (local[2], 1 GB
driver, class-data archive), the whole job from JSONL and again from the ingested Parquet, then
the plain-Python pass (`zkbroker.broker.report.reference`) in 1 and 2 processes; DuckDB runs
once for reference when installed (the `bench` extra). Counts are checked exact every round.
Printed: wall times and their median (judged against the targets, since load on a shared
machine moves wall time), CPU seconds, load average, the JVM's peak RSS.

Targets (local[2], 2 cores): session <= 5 s, 1M lines <= 25 s, 10M <= 75 s and faster than
2-process Python, reports from Parquet <= 15 s at 10M, driver <= 1.5 GB.
Run: python bench/analytics.py [--lines N] [--runs R] [--rounds K] [--dir D] [--master M]
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zkbroker.broker.log import configure_logging
from zkbroker.broker.report import reference
from zkbroker.broker.report.job import run_report
from zkbroker.broker.report.options import ReportOptions
from zkbroker.broker.report.session import (
    SparkSettings,
    build_session,
    plan_class_archive,
    stop_session,
)
from zkbroker.broker.report.synthetic import SyntheticConfig, write_runs


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (from /proc: Linux only)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def disk_read_mb(pid: int) -> float | None:
    """Bytes a process has read from storage so far (not from the page cache), in MB."""
    try:
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            if line.startswith("read_bytes:"):
                return int(line.split()[1]) / 1e6
    except OSError:  # another user's process, or no /proc
        return None
    return None


def read_through(paths: list[str]) -> float:
    """Read every input once before anything is timed. The Spark job runs first: without
    this it alone would read from disk the files that the Python passes after it find in
    the page cache. Returns the seconds it took."""
    started = time.perf_counter()
    for path in paths:
        with open(path, "rb") as f:
            while f.read(16 << 20):
                pass
    return time.perf_counter() - started


def python_cpu_s() -> float:
    """CPU seconds of this process and its waited-for children (the 2-process pass)."""
    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def captures(folder: Path, lines: int, runs: int) -> list[str]:
    """The capture files for (lines, runs), generated once and reused."""
    marker = folder / f".complete-{lines}-{runs}"
    if not marker.exists():
        shutil.rmtree(folder, ignore_errors=True)
        print(f"generating {lines:,} lines in {runs} files under {folder} ...", flush=True)
        elapsed, _ = timed(
            lambda: _generate(folder, lines, runs)
        )
        marker.touch()
        print(f"  generated in {elapsed:.1f} s", flush=True)
    return sorted(str(p) for p in folder.glob("run-*.jsonl"))


def _generate_part(args: tuple[str, int, int, int]) -> None:
    folder, lines, runs, seed = args
    write_runs(folder, SyntheticConfig(lines=lines, runs=runs, seed=seed), fast=True)


def _generate(folder: Path, lines: int, runs: int) -> None:
    # Two halves in two processes (disjoint file names through their sub-folders).
    halves = [(str(folder / f"part{i}"), lines // 2 + (lines % 2 if i == 0 else 0),
               max(1, runs // 2), 100 + i) for i in range(2)]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.map(_generate_part, halves)
    for i in range(2):
        for path in sorted((folder / f"part{i}").glob("run-*.jsonl")):
            path.rename(folder / f"run-{i}{path.name[4:]}")
        (folder / f"part{i}").rmdir()


def python_one(paths: list[str]) -> dict[str, list[dict[str, Any]]]:
    return reference.compute(paths)


def python_two(paths: list[str]) -> dict[str, list[dict[str, Any]]]:
    halves = [paths[0::2], paths[1::2]]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        partials = pool.map(reference.scan, halves)
    merged = partials[0]
    merged.merge(partials[1])
    return reference.finish(merged)


def duckdb_pass(paths: list[str]) -> float | None:
    try:
        import duckdb
    except ImportError:
        return None
    columns = (
        "{'time': 'VARCHAR', 'client_software_name': 'VARCHAR', "
        "'client_software_version': 'VARCHAR', 'api': 'VARCHAR', 'api_key': 'INTEGER', "
        "'api_version': 'INTEGER', 'error_codes': 'BIGINT[]', 'latency_us': 'BIGINT', "
        "'intervention': 'JSON'}"
    )
    files = "[" + ",".join(f"'{p}'" for p in paths) + "]"
    source = f"read_json({files}, format='newline_delimited', columns={columns})"
    con = duckdb.connect()
    start = time.perf_counter()
    con.execute(f"CREATE TEMP TABLE r AS SELECT * FROM {source}")
    con.execute(
        "SELECT client_software_name, client_software_version, api, api_version, count(*) "
        "FROM r GROUP BY ALL"
    ).fetchall()
    con.execute(
        "SELECT api, api_version, quantile_disc(latency_us, [0.5, 0.95, 0.99]), "
        "max(latency_us) FROM r WHERE intervention IS NULL GROUP BY ALL"
    ).fetchall()
    con.execute(
        "SELECT api, api_version, e, count(*) FROM (SELECT api, api_version, "
        "unnest(list_distinct(error_codes)) AS e FROM r WHERE intervention IS NULL) GROUP BY ALL"
    ).fetchall()
    return time.perf_counter() - start


def jvm_peak_rss_mb(spark: Any) -> float | None:
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


ROUND_MARK = "zkbroker-bench-round "


def spark_round(folder: Path, master: str) -> dict[str, Any]:
    """One Spark round, in this (fresh) interpreter: session, job from JSONL, job from the
    Parquet it wrote. Returns its figures and what the counts check needs."""
    out = Path(tempfile.mkdtemp(prefix="zkbroker-bench-report-"))
    settings = SparkSettings(master=master)
    archive = plan_class_archive(settings)
    ready, spark = timed(lambda: build_session(settings, archive))
    # CPU seconds beside wall time: on a machine shared with other work, wall time measures
    # the load as much as the job.
    jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    cpu: dict[str, float] = {"ready": process_cpu_s(jvm)}
    try:
        options = ReportOptions(out=str(out), inputs=(str(folder),))
        before, read_before = process_cpu_s(jvm), disk_read_mb(jvm)
        # As `zkbroker report` runs (`only_run_in_jvm`: C2 off for the tables); the run from
        # Parquet after it computes tables only, which is what that leaves to C1.
        from_jsonl, result = timed(
            lambda: run_report(options, spark=spark, only_run_in_jvm=True)
        )
        cpu["jsonl"] = process_cpu_s(jvm) - before
        read_after = disk_read_mb(jvm)
        disk_mb = None if read_before is None or read_after is None else read_after - read_before
        before = process_cpu_s(jvm)
        from_parquet, again = timed(
            lambda: run_report(ReportOptions(out=str(out)), spark=spark, only_run_in_jvm=True)
        )
        cpu["parquet"] = process_cpu_s(jvm) - before
        rss = jvm_peak_rss_mb(spark)
    finally:
        stop_session(spark, archive, ok=True)
        shutil.rmtree(out, ignore_errors=True)
    return {
        "ready": ready, "jsonl": from_jsonl, "parquet": from_parquet, "cpu": cpu,
        "disk_mb": disk_mb, "rss_mb": rss,
        "archive": (
            "none (off, or a JDK before 13)" if archive is None
            else f"used ({archive.final})" if archive.writing is None
            else f"none yet; this round wrote {archive.final} for the runs after it"
        ),
        "totals": result.summary["totals"],
        "totals_from_parquet": again.summary["totals"],
        "matrix": sorted(
            [r["client_software"], r["api"], r["api_version"], r["requests"]]
            for r in result.tables["matrix"]
        ),
    }


def spark_round_in_new_process(folder: Path, master: str) -> dict[str, Any]:
    """`spark_round` in a new interpreter: each round starts its JVM cold, as the command
    does (a second session in one process would reuse the first one's JVM, its code
    already compiled)."""
    done = subprocess.run(
        [sys.executable, __file__, "--spark-round", str(folder), "--master", master],
        stdout=subprocess.PIPE, text=True, check=True,
    )
    line = next(x for x in reversed(done.stdout.splitlines()) if x.startswith(ROUND_MARK))
    figures: dict[str, Any] = json.loads(line.removeprefix(ROUND_MARK))
    return figures


@dataclass(frozen=True, slots=True)
class Round:
    spark: dict[str, Any]
    one: float
    one_cpu: float
    two: float
    two_cpu: float
    exact: bool


def bench_round(paths: list[str], folder: Path, master: str) -> Round:
    spark = spark_round_in_new_process(folder, master)
    before = python_cpu_s()
    one, ref = timed(lambda: python_one(paths))
    one_cpu = python_cpu_s() - before
    before = python_cpu_s()
    two, ref2 = timed(lambda: python_two(paths))
    two_cpu = python_cpu_s() - before
    totals = spark["totals"]
    py_matrix = sorted([r["client_software"], r["api"], r["api_version"], r["requests"]]
                       for r in ref["matrix"])
    exact = (
        spark["matrix"] == py_matrix
        and totals["requests"] == sum(r["requests"] for r in ref["runs"])
        and totals["bad_lines"] == sum(r["bad_lines"] for r in ref["runs"])
        and sorted(map(str, ref["matrix"])) == sorted(map(str, ref2["matrix"]))
        and spark["totals_from_parquet"] == totals
    )
    return Round(spark, one, one_cpu, two, two_cpu, exact)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=20, help="capture files (runs)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of Spark then Python; the targets take their median")
    parser.add_argument(
        "--dir", type=Path, default=Path(tempfile.gettempdir()) / "zkbroker-bench-analytics"
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--spark-round", type=Path, help=argparse.SUPPRESS)  # a round's child
    args = parser.parse_args()
    configure_logging("warning", "console")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    if args.spark_round is not None:
        print(ROUND_MARK + json.dumps(spark_round(args.spark_round, args.master)), flush=True)
        return 0
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    folder = args.dir / f"{args.lines}"
    paths = captures(folder, args.lines, args.runs)
    size_gb = sum(Path(p).stat().st_size for p in paths) / 1e9
    print(f"{args.lines:,} lines, {len(paths)} files, {size_gb:.2f} GB; master {args.master}; "
          f"{args.rounds} round(s)")
    print(f"inputs read once into the page cache first: {read_through(paths):.1f} s")
    rounds: list[Round] = []
    for i in range(args.rounds):
        done = bench_round(paths, folder, args.master)
        rounds.append(done)
        spark = done.spark
        print(f"round {i + 1}: Spark ready {spark['ready']:.1f} s, from JSONL "
              f"{spark['jsonl']:.1f} s, from Parquet {spark['parquet']:.1f} s; Python "
              f"{done.one:.1f} s, 2 processes {done.two:.1f} s; load "
              f"{os.getloadavg()[0]:.2f}; archive {spark['archive']}", flush=True)
    duck = duckdb_pass(paths)

    def column(fn: Callable[[Round], float]) -> list[float]:
        return [fn(r) for r in rounds]

    # The targets exist for 1M and 10M lines only.
    jsonl_target = {1_000_000: 25.0, 10_000_000: 75.0}.get(args.lines)
    parquet_target = 15.0 if args.lines == 10_000_000 else None
    rows: list[tuple[str, list[float], list[float], float | None]] = [
        ("SparkSession ready", column(lambda r: r.spark["ready"]),
         column(lambda r: r.spark["cpu"]["ready"]), 5.0),
        ("Spark job from JSONL (ingest + reports)", column(lambda r: r.spark["jsonl"]),
         column(lambda r: r.spark["cpu"]["jsonl"]), jsonl_target),
        ("Spark reports from the Parquet dataset", column(lambda r: r.spark["parquet"]),
         column(lambda r: r.spark["cpu"]["parquet"]), parquet_target),
        ("Spark total (session + JSONL job)",
         column(lambda r: r.spark["ready"] + r.spark["jsonl"]),
         column(lambda r: r.spark["cpu"]["ready"] + r.spark["cpu"]["jsonl"]), None),
        ("plain Python, 1 process (same tables)", column(lambda r: r.one),
         column(lambda r: r.one_cpu), None),
        ("plain Python, 2 processes", column(lambda r: r.two), column(lambda r: r.two_cpu),
         None),
    ]
    each = "".join(f" {'round ' + str(i + 1):>8}" for i in range(len(rounds)))
    print(f"\n{'what':41}{each} {'median':>8} {'CPU s':>7}  target (median, seconds)")
    for name, seconds, cpu_s, target in rows:
        median = statistics.median(seconds)
        verdict = "" if target is None else (
            f"  <= {target:.0f} s {'ok' if median <= target else 'MISSED'}")
        print(f"{name:41}" + "".join(f" {x:8.1f}" for x in seconds)
              + f" {median:8.1f} {statistics.median(cpu_s):7.1f}{verdict}")
    print(f"{'DuckDB from JSONL (reference, once)':41} "
          + ("n/a (duckdb not installed)" if duck is None else f"{duck:8.1f}"))
    print(f"load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    # What the page cache did not hold: the JSONL job's reads from storage (wall time).
    disk = [r.spark["disk_mb"] for r in rounds]
    print("read from storage by the JSONL job: " + (
        "n/a" if None in disk
        else ", ".join(f"{d:,.0f}" for d in disk) + f" MB of {size_gb * 1000:,.0f} MB"))
    exact = all(r.exact for r in rounds)
    rss = [r.spark["rss_mb"] for r in rounds]
    totals = rounds[0].spark["totals"]
    print(f"\nrequests {totals['requests']:,}, bad lines {totals['bad_lines']}, counts exact in "
          f"every round: {'yes' if exact else 'NO'}; JVM peak RSS "
          + ("n/a" if None in rss else f"{max(rss):,.0f} MB (the largest round)")
          + " (target <= 1,536 MB)")
    ratios = [r.spark["jsonl"] / r.two for r in rounds]
    print("Spark JSONL job vs 2-process Python in the same round: "
          + ", ".join(f"{x:.2f}x" for x in ratios)
          + f" (median {statistics.median(ratios):.2f}x; under 1 is faster)")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
