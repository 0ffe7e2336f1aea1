"""The report job: ingest, compute the tables, write Parquet, summary.json and report.html, and
decide the exit code.

The same code runs from `zkbroker report`, `python -m zkbroker.broker.report`, spark-submit
(`broker/report/submit.py`) and Python (`run_report(options, spark=...)`); the outputs are in
the README, "Analyse captures". Exit codes: 0 ok, 1 failure, 2 usage, a missing dependency or
input (refused before Spark starts where Python can tell), 3 findings of a `--fail-on` rule.
Tables are computed from the dataset's aggregates (`zkbroker.broker.report.aggregates`), never
from its rows; each is computed once, written and cached, and its rows collected from the
cache for the page and the summary.

Not here: the transformations (`tables`), the page (`page`), Spark settings (`session`), the
terminal text (`console`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zkbroker.broker.log import get_logger
from zkbroker.broker.report import aggregates, inputs, tables
from zkbroker.broker.report.aggregates import Aggregates
from zkbroker.broker.report.console import Progress, StderrProgress, plural, print_summary, quiet
from zkbroker.broker.report.ingest import IngestResult, ingest, load_requests
from zkbroker.broker.report.jvm_tuning import c2_paused
from zkbroker.broker.report.options import (
    EXIT_FAILURE,
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    ReportOptions,
    parse_options,
)
from zkbroker.broker.report.session import (
    MissingDependencyError,
    build_session,
    check_dependencies,
    plan_class_archive,
    stop_session,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = get_logger(__name__)

# Tables whose rows the page and the summary need (all of them but the per-fault events).
COLLECTED = (
    "matrix",
    "readiness",
    "errors",
    "latency",
    "latency_runs",
    "fault_summary",
    "runs",
    "error_diff",
    "version_diff",
    "run_diff",
)


@dataclass
class ReportResult:
    exit_code: int
    summary: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)


def jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        value = value if value.tzinfo else value.replace(tzinfo=UTC)
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def _dataset_exists(spark: SparkSession, uri: str) -> bool:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(f"{uri}/requests")
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return bool(fs.exists(path))


# Tables computed at once. Each is a Spark job using every core, so more threads only add
# memory and contention; a few overlap what runs on the driver (planning, commit). A step
# comes after the steps it needs, so with FIFO threads a waiting step's needs are running.
TABLE_THREADS = 3

# A table's step gets the tables it needs (cached as they were written), so a table built on
# another never recomputes it.
Step = Callable[[dict[str, "DataFrame"]], "DataFrame"]


@dataclass(frozen=True, slots=True)
class TableStep:
    name: str
    build: Step
    needs: tuple[str, ...] = ()


def table_steps(
    current: Aggregates,
    baseline_cube: DataFrame | None,
    rate_threshold: float,
) -> list[TableStep]:
    """Every report table, with the tables it is built on. Only the ingest's aggregates are
    read (cached): the counting tables are sums over the cube, latency comes from the
    histogram, and the fault events are already computed."""
    cube, histogram = current.cube, current.histogram
    steps = [
        TableStep("matrix", lambda _: tables.matrix(cube)),
        TableStep("errors", lambda _: tables.errors(cube)),
        TableStep("run_diff", lambda _: tables.run_diff(cube, rate_threshold)),
        TableStep("latency", lambda _: tables.latency(histogram)),
        TableStep("latency_runs", lambda _: tables.latency_runs(histogram, cube)),
        TableStep("fault_events", lambda _: current.fault_events),
        TableStep("readiness", lambda done: tables.readiness(done["matrix"]), ("matrix",)),
        TableStep(
            "fault_summary",
            lambda done: tables.fault_summary(done["fault_events"]),
            ("fault_events",),
        ),
        TableStep(
            "runs", lambda done: tables.runs(cube, done["latency_runs"]), ("latency_runs",)
        ),
    ]
    if baseline_cube is not None:
        base = baseline_cube
        steps += [
            TableStep("error_diff", lambda _: tables.error_diff(base, cube, rate_threshold)),
            TableStep("version_diff", lambda _: tables.version_diff(base, cube)),
        ]
    return steps


def load_aggregates(spark: SparkSession, dataset: str) -> Aggregates:
    """The dataset's aggregates (what the tables read), computed once from its requests
    when the dataset was ingested before they existed."""
    if not aggregates.exists(spark, dataset):
        log.info("report.aggregates.backfill", dataset=dataset)
        aggregates.write(load_requests(spark, dataset), dataset, "overwrite")
    return aggregates.load(spark, dataset)


def write_tables(
    steps: list[TableStep], uri: str
) -> tuple[dict[str, DataFrame], dict[str, list[dict[str, Any]]]]:
    """Write every table (Parquet under `uri`), `TABLE_THREADS` at a time from driver
    threads: Spark runs the jobs of several threads at once, and much of a small table's
    time is on the driver (planning, code generation, commit), which then overlaps. A step
    waits for the tables it needs, which were submitted before it."""
    futures: dict[str, Future[tuple[DataFrame, list[dict[str, Any]] | None]]] = {}

    def run(step: TableStep) -> tuple[DataFrame, list[dict[str, Any]] | None]:
        needed = {name: futures[name].result()[0] for name in step.needs}
        return _write_table(step, needed, uri)

    threads = min(len(steps), TABLE_THREADS)
    with ThreadPoolExecutor(threads, thread_name_prefix="report-table") as pool:
        for step in steps:  # every step's dependencies come before it
            futures[step.name] = pool.submit(run, step)
        results = {name: future.result() for name, future in futures.items()}
    frames = {name: df for name, (df, _) in results.items()}
    rows = {name: collected for name, (_, collected) in results.items() if collected is not None}
    return frames, rows


def _write_table(
    step: TableStep, done: dict[str, DataFrame], uri: str
) -> tuple[DataFrame, list[dict[str, Any]] | None]:
    name = step.name
    started = time.perf_counter()
    # Cached as it is written: the rows collected next, and later steps, read the cache.
    df = step.build(done).coalesce(1).cache()
    df.write.mode("overwrite").parquet(f"{uri}/{name}")
    rows = None
    if name in COLLECTED:
        rows = [jsonable(r.asDict(recursive=True)) for r in df.collect()]
    log.info("report.table", table=name, seconds=round(time.perf_counter() - started, 2))
    return df, rows


def findings_of(
    rules: Sequence[str], rows: dict[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """One entry per finding of each `--fail-on` rule."""
    found: list[dict[str, Any]] = []
    for rule in rules:
        if rule == "removed-in:4.0":
            for r in rows.get("readiness", []):
                if r["verdict"] != "ready":
                    found.append({"rule": rule, "client": f"{r['client_software']} "
                                  f"{r['client_version']}", "detail": r["removed_versions"]})
        elif rule in ("new-error-codes", "vanished-error-codes"):
            wanted = "new" if rule == "new-error-codes" else "vanished"
            for r in rows.get("error_diff", []):
                if r["status"] == wanted:
                    found.append({"rule": rule, "client": f"{r['client_software']} "
                                  f"{r['client_version']}", "detail": f"{r['api']} "
                                  f"{r['error_name']} ({r['error_code']})"})
        elif rule == "changed-versions":
            for r in rows.get("version_diff", []):
                if r["status"] != "same":
                    found.append({"rule": rule, "client": f"{r['client_software']} "
                                  f"{r['client_version']}", "detail": f"{r['api']} "
                                  f"{r['baseline_versions']} -> {r['current_versions']}"})
        elif rule == "bad-lines":
            for r in rows.get("runs", []):
                if r["bad_lines"]:
                    found.append({"rule": rule, "client": None,
                                  "detail": f"{r['run_id']}: {r['bad_lines']} bad lines"})
    return found


def build_summary(
    options: ReportOptions,
    ingested: IngestResult | None,
    rows: dict[str, list[dict[str, Any]]],
    findings: list[dict[str, Any]],
    event_count: int,
) -> dict[str, Any]:
    run_rows = rows["runs"]
    diff = None
    if "error_diff" in rows:
        diff = {
            "baseline": list(options.baseline),
            **{
                f"{status}_error_codes": [r for r in rows["error_diff"] if r["status"] == status]
                for status in ("new", "vanished", "changed")
            },
            "changed_versions": [r for r in rows["version_diff"] if r["status"] != "same"],
        }
    return jsonable(
        {
            "generated_at": datetime.now(UTC),
            "inputs": list(options.inputs),
            "dataset": options.dataset_path,
            "ingest": None
            if ingested is None
            else {
                "files_seen": ingested.files_seen,
                "files_ingested": ingested.files_ingested,
                "lines": ingested.lines,
                "bad_lines": ingested.bad_lines,
            },
            "totals": {
                "runs": len(run_rows),
                "lines": sum(r["lines"] for r in run_rows),
                "bad_lines": sum(r["bad_lines"] for r in run_rows),
                "requests": sum(r["requests"] for r in run_rows),
                "clients": len(rows["readiness"]),
                "apis": len({r["api"] for r in rows["matrix"]}),
                # Requests answered with an error code, faults excluded (as the runs count).
                "errors": sum(r["errors"] for r in run_rows),
                "faults": event_count,
            },
            "bad_lines": [
                {"run_id": r["run_id"], "lines": r["lines"], "bad_lines": r["bad_lines"]}
                for r in run_rows
                if r["bad_lines"]
            ],
            "readiness": rows["readiness"],
            "runs": run_rows,
            "diff": diff,
            "run_diff": rows["run_diff"],
            "fail_on": list(options.fail_on),
            "findings": findings,
        }
    )


def run_report(
    options: ReportOptions,
    spark: SparkSession | None = None,
    *,
    only_run_in_jvm: bool = False,
    progress: Progress = quiet,
) -> ReportResult:
    """Run the whole job; `spark` is used as is when given (and left running).

    `only_run_in_jvm`: nothing runs in the driver's JVM after this report (the command and
    spark-submit run one report per process), so its tables are computed with the JIT's C2
    kept off (`jvm_tuning.c2_paused`), which would leave a later run's code to C1.
    `progress` gets a line per step (the command prints them on stderr).

    Raises FileNotFoundError for an input that does not exist, before Spark starts when
    Python can tell (`zkbroker.broker.report.inputs`)."""
    from zkbroker.broker.report.plots import load_in_background

    inputs.check(options.inputs, options.baseline, options.dataset_path)
    load_in_background()
    own = spark is None
    archive = None
    if spark is None:
        archive = plan_class_archive(options.spark)
        progress(f"starting Spark ({options.spark.master or 'local[*]'})")
        spark = build_session(options.spark, archive)
    ok = False
    try:
        ingested, loaded = _load_inputs(spark, options, progress)
        steps = table_steps(
            loaded[0], loaded[1].cube if len(loaded) > 1 else None, options.rate_threshold
        )
        out = Path(options.out)
        out.mkdir(parents=True, exist_ok=True)
        rows, event_count = _compute_tables(
            spark, steps, loaded, options, only_run_in_jvm, progress
        )
        result = _write_outputs(options, out, ingested, rows, event_count, progress)
        ok = True
        return result
    finally:
        if own:
            if archive is not None and archive.writing is not None:
                # The JVM writes the archive as it exits: the one long pause a person
                # would otherwise take for a hang (a failed run's is discarded).
                progress("writing the JVM class archive (once, ~30 s)" if ok else
                         "stopping the JVM (~30 s: it writes a class archive, discarded)")
            stop_session(spark, archive, ok)


def _load_inputs(
    spark: SparkSession, options: ReportOptions, progress: Progress
) -> tuple[IngestResult | None, list[Aggregates]]:
    """Ingest the inputs (when given) and the baseline's; the ingest result of the inputs, and
    the aggregates of the dataset then of the baseline's dataset (when there is one)."""
    ingested = None
    if options.inputs:
        progress(f"reading captures: {_named(options.inputs)}")
        ingested = ingest(spark, options.inputs, options.dataset_path, options.incremental,
                          progress=progress)
    elif not _dataset_exists(spark, options.dataset_path):
        raise FileNotFoundError(
            f"no INPUT given and no dataset at {options.dataset_path} to report on"
        )
    loaded = [load_aggregates(spark, options.dataset_path)]
    if options.baseline:
        progress(f"reading the baseline's captures: {_named(options.baseline)}")
        ingest(spark, options.baseline, options.baseline_dataset_path,
               progress=lambda line: progress(f"baseline: {line}"))
        loaded.append(load_aggregates(spark, options.baseline_dataset_path))
    return ingested, loaded


def _compute_tables(
    spark: SparkSession,
    steps: list[TableStep],
    loaded: list[Aggregates],
    options: ReportOptions,
    only_run_in_jvm: bool,
    progress: Progress,
) -> tuple[dict[str, list[dict[str, Any]]], int]:
    """Compute and write every table, then release them and the aggregates; the collected
    rows and the count of fault events."""
    tables_uri = options.tables_path.rstrip("/")
    progress(f"computing {plural(len(steps), 'table')} from the aggregates")
    started = time.perf_counter()
    with c2_paused(spark) if only_run_in_jvm else nullcontext():
        done, rows = write_tables(steps, tables_uri)
        event_count = done["fault_events"].count()
    progress(f"tables written to {tables_uri} ({time.perf_counter() - started:.1f} s)")
    for df in done.values():
        df.unpersist()
    for one in loaded:
        one.unpersist()
    return rows, event_count


def _write_outputs(
    options: ReportOptions,
    out: Path,
    ingested: IngestResult | None,
    rows: dict[str, list[dict[str, Any]]],
    event_count: int,
    progress: Progress,
) -> ReportResult:
    """The findings, the summary and the exit code; summary.json and report.html in ``out``."""
    from zkbroker.broker.report.page import render_page

    _sort_rows(rows)
    findings = findings_of(options.fail_on, rows)
    summary = build_summary(options, ingested, rows, findings, event_count)
    code = EXIT_FINDINGS if findings else EXIT_OK
    summary["exit_code"] = code
    progress(f"writing report.html and summary.json to {out}")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (out / "report.html").write_text(render_page(options.title, summary, rows), "utf-8")
    log.info("report.done", out=str(out), findings=len(findings), exit_code=code)
    return ReportResult(code, summary, rows, findings)


def _named(paths: Sequence[str], shown: int = 3) -> str:
    more = len(paths) - shown
    return ", ".join(paths[:shown]) + (f" and {more} more" if more > 0 else "")


def _sort_rows(rows: dict[str, list[dict[str, Any]]]) -> None:
    """Deterministic order (Parquet read-back order is not), so pages and summaries of the
    same data are identical: runs by first request, each run's diff in that order."""
    runs = rows.get("runs", [])
    runs.sort(key=lambda r: (r["first_request"] or "", r["run_id"]))
    position = {r["run_id"]: i for i, r in enumerate(runs)}
    for name, items in rows.items():
        if name == "run_diff":
            items.sort(key=lambda r: (position.get(r["run_id"], -1), json.dumps(r, sort_keys=True)))
        elif name != "runs":
            items.sort(key=lambda r: json.dumps(r, sort_keys=True, default=str))


def main(argv: Sequence[str] | None = None, prog: str = "zkbroker report") -> int:
    """Parse, check dependencies, run; returns the exit code."""
    options = parse_options(sys.argv[1:] if argv is None else argv, prog)
    return run_cli(options, prog)


def run_cli(options: ReportOptions, prog: str = "zkbroker report") -> int:
    """The command's run for parsed options: logging, dependency check, job, exit code.
    Progress lines go to stderr, the summary to stdout (`zkbroker.broker.report.console`)."""
    import logging

    from zkbroker.broker.log import configure_logging

    configure_logging(options.log_level, "console")
    # py4j logs every gateway call at INFO through the root logger.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    try:
        check_dependencies()
    except MissingDependencyError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        result = run_report(options, only_run_in_jvm=True, progress=StderrProgress(prog))
    except FileNotFoundError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:
        log.exception("report.failed")
        print(f"{prog}: failed: {e}", file=sys.stderr)
        return EXIT_FAILURE
    print_summary(result.summary, options.out, prog)
    return result.exit_code
