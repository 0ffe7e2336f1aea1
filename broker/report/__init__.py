"""Capture analytics on Spark (`zkbroker report`): request captures of many runs turned into
a client x API x version matrix with Kafka 4.0 readiness, error codes and their diff against
a baseline, latency percentiles, injected faults and what followed, and a per-run summary.

A layer beside `zkbroker.broker.toolkit` (only `zkbroker.broker.cli` imports it). Modules: `schema`
(the Spark schema, derived from the capture schema), `ingest` (JSONL -> Parquet dataset),
`aggregates` (the small tables ingest writes beside it, which every report reads), `tables` (the
transformations), `kip896` (removed versions as Spark expressions), `job` (the run, exit
codes), `page` and `plots` (report.html), `session` (Spark settings, spark-submit
detection), `options` (the command line), `submit` (the spark-submit entry).

Deliberately not here: anything running on executors but Spark's own JVM code (no UDFs), and
importing PySpark at import time: the `report` extra is optional, so every module imports it
inside its functions. Follows the capture format of `zkbroker.broker.hooks.capture`.
"""

from __future__ import annotations

from zkbroker.broker.report.options import ReportOptions

__all__ = ["ReportOptions", "run_report"]


def __getattr__(name: str) -> object:
    # `run_report` lives in job, which needs nothing heavy either, but keep the package light.
    if name == "run_report":
        from zkbroker.broker.report.job import run_report

        return run_report
    raise AttributeError(name)
