"""The aggregates written at ingest, beside the row-level requests: what every report reads.

Each ingest batch (the files one `ingest` call reads) adds, under the dataset:
- `cube/`: `tables.request_cube` of the batch (counts per run x client x API x version x
  faulted x error codes, bad lines per run);
- `latency_histogram/`: `tables.latency_histogram` of the batch (~1% latency buckets);
- `fault_events/`: `tables.fault_events` of the batch (each injected fault, what followed).

A run is one capture file and a file is read whole by one batch, so a batch's fault events
are final, and the aggregates of several batches add up exactly (counts sum, bucket minima
and maxima merge): `--incremental` computes only the new files' aggregates and reports read
the union of every batch's. Reports thus never read the row-level dataset (millions of rows):
only these tables (thousands of rows, plus one per fault).

The requests of the batch are read back from the Parquet just written (a few narrow columns,
vectorised), not re-parsed from JSON. A dataset written before these tables existed gets them
computed once from its requests (the job checks `exists`).

Deliberately not here: the transformations (`tables`), reading capture files (`ingest`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from broker.report import tables

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = structlog.get_logger(__name__)

CUBE = "cube"
HISTOGRAM = "latency_histogram"
FAULT_EVENTS = "fault_events"


@dataclass(frozen=True, slots=True)
class Aggregates:
    cube: DataFrame
    histogram: DataFrame
    fault_events: DataFrame

    def unpersist(self) -> None:
        for df in (self.cube, self.histogram, self.fault_events):
            df.unpersist()


@dataclass(frozen=True, slots=True)
class RunCounts:
    lines: int
    bad_lines: int


def write(requests: DataFrame, dataset: str, mode: str) -> dict[str, RunCounts]:
    """Compute the aggregates of `requests` (one ingest batch, or a whole dataset) and write
    them under `dataset` (`mode` "append" or "overwrite"); returns the lines and bad lines per
    run (`run_id`), counted by the cube."""
    from pyspark.sql import functions as F

    # The cube is small, written and then read for the line counts: cache it.
    cube = tables.request_cube(requests).coalesce(1).cache()

    def write_cube() -> None:
        with _timed(CUBE):
            cube.write.mode(mode).parquet(f"{dataset}/{CUBE}")  # computes the cache too

    def write_histogram() -> None:
        with _timed(HISTOGRAM):
            histogram = tables.latency_histogram(requests).coalesce(1)
            histogram.write.mode(mode).parquet(f"{dataset}/{HISTOGRAM}")

    def write_events() -> None:
        with _timed(FAULT_EVENTS):
            # Not coalesced: that would run the sequences' window in one task. The faulted
            # sequences come from the requests, so this starts beside the cube.
            events = tables.fault_events(tables.with_client(requests))
            events.write.mode(mode).parquet(f"{dataset}/{FAULT_EVENTS}")

    try:
        # Spark jobs at once from driver threads: the histogram's scan runs beside the
        # cube's, and planning, code generation and commits on the driver overlap tasks.
        with ThreadPoolExecutor(3, thread_name_prefix="report-aggregate") as pool:
            cube_written = pool.submit(write_cube)
            others = [pool.submit(write_histogram), pool.submit(write_events)]
            for future in [cube_written, *others]:
                future.result()
        counted = cube.groupBy("run_id").agg(
            F.sum("n").alias("lines"),
            F.sum(F.when(~F.col("valid"), F.col("n")).otherwise(F.lit(0))).alias("bad"),
        )
        return {r["run_id"]: RunCounts(r["lines"], r["bad"]) for r in counted.collect()}
    finally:
        cube.unpersist()


@contextmanager
def _timed(name: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    log.info("report.aggregate", table=name, seconds=round(time.perf_counter() - started, 2))


def exists(spark: SparkSession, dataset: str) -> bool:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(f"{dataset}/{CUBE}")
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return bool(fs.exists(path))


def load(spark: SparkSession, dataset: str) -> Aggregates:
    """Every batch's aggregates, cached (each is read by several tables)."""
    read = spark.read.parquet
    return Aggregates(
        cube=read(f"{dataset}/{CUBE}").cache(),
        histogram=read(f"{dataset}/{HISTOGRAM}").cache(),
        fault_events=read(f"{dataset}/{FAULT_EVENTS}").cache(),
    )
