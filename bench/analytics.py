"""Capture analytics: Spark (the report job) against a plain-Python pass, on the same files.

Generates N capture lines (default 1M; `--lines 10000000` on request) with the real format
(`broker.report.synthetic`: the capture hook's exact lines, ~1.1 KB each with their bodies),
split into `--runs` files, cached in `--dir` between runs, and read once before anything is
timed (each pass then finds them in the page cache as far as it holds them; the figures
say how much the Spark job still read from storage). Then, in one run:
- SparkSession ready (local[2], driver memory 1 GB, as `zkbroker report` starts it, with
  its class-data archive: the first run on a machine writes it as the JVM exits, and says
  so; its figures are then a first run's);
- the whole job from JSONL (ingest to Parquet + every table + page + summary);
- the job again from the ingested Parquet (no inputs: reports only);
- a plain-Python single pass computing the same main tables (`broker.report.reference`),
  then the same over 2 processes (disjoint files, partial aggregates merged);
- DuckDB on the same JSONL, only when `duckdb` is importable (not a dependency).
Checks the counts are exact (Spark's totals and matrix = Python's) and prints the JVM's peak
resident memory (the driver, which in local mode also runs the tasks). Beside each wall time,
the CPU seconds it took (the JVM's; Python's own and its children's), and the load average:
on a shared machine wall time measures the load as much as the job.

Targets (the issue, local[2] on 2 cores): session <= 5 s, 1M lines end to end <= 25 s, 10M
<= 75 s and faster than 2-process Python, reports from Parquet <= 15 s at 10M; driver memory
<= 1.5 GB. Run: python bench/analytics.py [--lines N] [--runs R] [--dir D] [--master M]
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker.log import configure_logging
from broker.report import reference
from broker.report.job import run_report
from broker.report.options import ReportOptions
from broker.report.session import SparkSettings, build_session, plan_class_archive, stop_session
from broker.report.synthetic import SyntheticConfig, write_runs


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=20, help="capture files (runs)")
    parser.add_argument(
        "--dir", type=Path, default=Path(tempfile.gettempdir()) / "zkbroker-bench-analytics"
    )
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    configure_logging("warning", "console")
    logging.getLogger("py4j").setLevel(logging.WARNING)

    paths = captures(args.dir / f"{args.lines}", args.lines, args.runs)
    size_gb = sum(Path(p).stat().st_size for p in paths) / 1e9
    out = Path(tempfile.mkdtemp(prefix="zkbroker-bench-report-"))
    print(f"{args.lines:,} lines, {len(paths)} files, {size_gb:.2f} GB; master {args.master}")
    print(f"inputs read once into the page cache first: {read_through(paths):.1f} s")

    settings = SparkSettings(master=args.master)
    archive = plan_class_archive(settings)
    ready, spark = timed(lambda: build_session(settings, archive))
    # CPU seconds beside wall time: on a machine shared with other work, wall time measures
    # the load as much as the job.
    jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    cpu: dict[str, float] = {"ready": process_cpu_s(jvm)}
    try:
        options = ReportOptions(out=str(out), inputs=(str(args.dir / f"{args.lines}"),))
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
    before = python_cpu_s()
    one, ref = timed(lambda: python_one(paths))
    cpu["one"] = python_cpu_s() - before
    before = python_cpu_s()
    two, ref2 = timed(lambda: python_two(paths))
    cpu["two"] = python_cpu_s() - before
    duck = duckdb_pass(paths)

    totals = result.summary["totals"]
    spark_matrix = sorted((r["client_software"], r["api"], r["api_version"], r["requests"])
                          for r in result.tables["matrix"])
    py_matrix = sorted((r["client_software"], r["api"], r["api_version"], r["requests"])
                       for r in ref["matrix"])
    exact = (
        spark_matrix == py_matrix
        and totals["requests"] == sum(r["requests"] for r in ref["runs"])
        and totals["bad_lines"] == sum(r["bad_lines"] for r in ref["runs"])
        and sorted(map(str, ref["matrix"])) == sorted(map(str, ref2["matrix"]))
        and again.summary["totals"] == totals
    )
    # The targets exist for 1M and 10M lines only.
    jsonl_target = {1_000_000: 25.0, 10_000_000: 75.0}.get(args.lines)
    parquet_target = 15.0 if args.lines == 10_000_000 else None
    rows = [
        ("SparkSession ready", ready, cpu["ready"], 5.0),
        ("Spark job from JSONL (ingest + reports)", from_jsonl, cpu["jsonl"], jsonl_target),
        ("Spark reports from the Parquet dataset", from_parquet, cpu["parquet"],
         parquet_target),
        ("Spark total (session + JSONL job)", ready + from_jsonl, cpu["ready"] + cpu["jsonl"],
         None),
        ("plain Python, 1 process (same tables)", one, cpu["one"], None),
        ("plain Python, 2 processes", two, cpu["two"], None),
        ("DuckDB from JSONL (reference)", duck, None, None),
    ]
    print(f"\n{'what':44} {'seconds':>9} {'CPU s':>7}  target (seconds)")
    for name, seconds, cpu_s, target in rows:
        shown = "  n/a (duckdb not installed)" if seconds is None else f"{seconds:9.1f}"
        shown += "" if cpu_s is None else f" {cpu_s:7.1f}"
        verdict = "" if target is None or seconds is None else (
            f"  <= {target:.0f} s {'ok' if seconds <= target else 'MISSED'}")
        print(f"{name:44} {shown}{verdict}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    # What the page cache did not hold: the JSONL job's reads from storage (wall time).
    print("read from storage by the JSONL job: "
          + ("n/a" if disk_mb is None else f"{disk_mb:,.0f} MB of {size_gb * 1000:,.0f} MB"))
    print("class-data archive: " + (
        "none (off, or a JDK before 13)" if archive is None
        else f"used ({archive.final})" if archive.writing is None
        else f"none yet; this run wrote {archive.final} for the runs after it"))
    print(f"\nrequests {totals['requests']:,}, bad lines {totals['bad_lines']}, counts exact: "
          f"{'yes' if exact else 'NO'}; JVM peak RSS "
          f"{'n/a' if rss is None else f'{rss:,.0f} MB'} (target <= 1,536 MB)")
    print(f"Spark JSONL job vs 2-process Python: {from_jsonl / two:.2f}x the time")
    shutil.rmtree(out, ignore_errors=True)
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
