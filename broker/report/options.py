"""The report's command-line options, shared by `zkbroker report`, `python -m
zkbroker.broker.report` and spark-submit (`broker/report/submit.py`), so the three take the same
arguments.

Deliberately not here: running anything (`zkbroker.broker.report.job`). Importing this module
imports no PySpark.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zkbroker.broker.report.session import SparkSettings
from zkbroker.broker.report.tables import DEFAULT_RATE_THRESHOLD

# --fail-on rules: each finding of one of them makes the exit code 3.
FAIL_ON_RULES: dict[str, str] = {
    "removed-in:4.0": "a client used an API version Kafka 4.0 removed (KIP-896)",
    "new-error-codes": "an API answered an error code the baseline never answered",
    "vanished-error-codes": "an error code the baseline answered is no longer answered",
    "changed-versions": "a client used other versions of an API than in the baseline",
    "bad-lines": "a capture line was truncated or invalid",
}
NEEDS_BASELINE = frozenset({"new-error-codes", "vanished-error-codes", "changed-versions"})

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_FINDINGS = 3


@dataclass(frozen=True, slots=True)
class ReportOptions:
    out: str
    inputs: tuple[str, ...] = ()
    baseline: tuple[str, ...] = ()
    fail_on: tuple[str, ...] = ()
    incremental: bool = False
    dataset: str | None = None  # default: <out>/dataset
    tables: str | None = None  # default: <out>/tables
    rate_threshold: float = DEFAULT_RATE_THRESHOLD
    title: str = "zkbroker capture report"
    log_level: str = "warning"
    spark: SparkSettings = field(default_factory=SparkSettings)

    @property
    def dataset_path(self) -> str:
        return self.dataset or f"{self.out.rstrip('/')}/dataset"

    @property
    def tables_path(self) -> str:
        """Where executors write the tables: on a cluster, a URI they all reach."""
        return self.tables or Path(self.out, "tables").resolve().as_uri()

    @property
    def baseline_dataset_path(self) -> str:
        return f"{self.dataset_path.rstrip('/')}-baseline"


def _fail_on_rule(text: str) -> str:
    if text not in FAIL_ON_RULES:
        raise argparse.ArgumentTypeError(
            f"unknown rule {text!r}; rules: {', '.join(FAIL_ON_RULES)}"
        )
    return text


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """The report's arguments, in the order its help lists them."""
    _add_data_arguments(parser)
    _add_run_arguments(parser)


def _add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """What is read and written: the captures, the baseline, the rules, the dataset, tables."""
    parser.add_argument(
        "inputs",
        nargs="*",
        metavar="INPUT",
        help="capture files, folders, globs or URIs (hdfs:, s3a:); none: report on the "
        "dataset already ingested",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="local output folder")
    parser.add_argument(
        "--baseline",
        nargs="+",
        default=[],
        metavar="INPUT",
        help="captures of the run set to compare with (the error-code and version diff)",
    )
    parser.add_argument(
        "--fail-on",
        action="append",
        default=[],
        type=_fail_on_rule,
        metavar="RULE",
        help="exit 3 when a finding of RULE exists (repeatable): "
        + "; ".join(f"{k}: {v}" for k, v in FAIL_ON_RULES.items()),
    )
    parser.add_argument(
        "--incremental",
        action="store_true",
        help="ingest only files not in the dataset yet (or changed), append them",
    )
    parser.add_argument(
        "--dataset", metavar="URI", help="where the Parquet dataset lives (DIR/dataset)"
    )
    parser.add_argument(
        "--tables",
        metavar="URI",
        help="where the Parquet tables are written (DIR/tables); on a multi-host cluster a "
        "URI every executor reaches (hdfs:, s3a:)",
    )


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """How the job runs and reports: Spark, the diff's threshold, the page's title, logs."""
    parser.add_argument(
        "--master",
        help="Spark master when zkbroker starts Spark (local[*]); under spark-submit, "
        "spark-submit's --master decides",
    )
    parser.add_argument(
        "--shuffle-partitions", type=int, default=4, help="spark.sql.shuffle.partitions (4)"
    )
    parser.add_argument(
        "--driver-memory", default="1g", help="spark.driver.memory when we start Spark (1g)"
    )
    parser.add_argument(
        "--rate-threshold",
        type=float,
        default=DEFAULT_RATE_THRESHOLD,
        help=f"smallest error-rate change the diff reports ({DEFAULT_RATE_THRESHOLD})",
    )
    parser.add_argument("--title", default="zkbroker capture report", help="the page's title")
    parser.add_argument(
        "--log-level",
        default="warning",
        help="structured logs on stderr: debug, info (each step's timings), warning (default), "
        "error; the progress lines and the summary are printed at any level",
    )


def build_report_parser(prog: str = "zkbroker report") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Capture analytics on Spark: client/version matrix with Kafka 4.0 "
        "readiness, error codes and their diff, latency percentiles, faults, runs.",
    )
    add_report_arguments(parser)
    return parser


def options_from_args(args: argparse.Namespace) -> ReportOptions:
    missing = sorted(set(args.fail_on) & NEEDS_BASELINE) if not args.baseline else []
    if missing:
        raise ValueError(f"--fail-on {', '.join(missing)} needs --baseline")
    return ReportOptions(
        out=args.out,
        inputs=tuple(args.inputs),
        baseline=tuple(args.baseline),
        fail_on=tuple(dict.fromkeys(args.fail_on)),
        incremental=args.incremental,
        dataset=args.dataset,
        tables=args.tables,
        rate_threshold=args.rate_threshold,
        title=args.title,
        log_level=args.log_level,
        spark=SparkSettings(
            master=args.master,
            shuffle_partitions=args.shuffle_partitions,
            driver_memory=args.driver_memory,
        ),
    )


def parse_options(argv: Sequence[str], prog: str = "zkbroker report") -> ReportOptions:
    """Options from a command line; exits 2 (argparse) on bad usage."""
    parser = build_report_parser(prog)
    args = parser.parse_args(list(argv))
    try:
        return options_from_args(args)
    except ValueError as e:
        parser.error(str(e))
