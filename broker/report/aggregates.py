"""The aggregates written at ingest, beside the row-level requests: what every report reads.

Each ingest batch adds, under the dataset, `cube/` (`tables.request_cube`: counts per run,
client, API, version, fault and error codes), `latency_histogram/` (~1% buckets) and
`fault_events/` (each injected fault and what followed). A capture file is read whole by one
batch, so the aggregates of several batches add up exactly: `--incremental` computes only the
new files' and reports read the union, never the row-level dataset. The batch's requests are
read back from the Parquet just written; the fault events follow the cube (`tables.fault_plan`).
A dataset that lacks the tables gets them computed once from its requests (`exists`).

Not here: the transformations (`tables`), reading capture files (`ingest`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zkbroker.broker.log import get_logger
from zkbroker.broker.report import tables

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = get_logger(__name__)

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
        # The sequences with a fault are read from the cube: a scan of every request less.
        cube_written.result()
        with _timed(FAULT_EVENTS):
            plan = tables.fault_plan(cube).first()
            assert plan is not None
            if plan["collision"]:
                log.warning("report.fault_events.hash_shared", using="the sequences' strings")
            shuffle = requests.sparkSession.conf.get("spark.sql.shuffle.partitions")
            partitions = tables.sort_partitions(plan["requests"], int(shuffle or 1))
            # Not coalesced: the sequences' window runs in `partitions` tasks.
            events = tables.fault_events(
                tables.with_client(requests), cube, plan["collision"], partitions
            )
            events.write.mode(mode).parquet(f"{dataset}/{FAULT_EVENTS}")

    def count_lines() -> dict[str, RunCounts]:
        cube_written.result()
        counted = cube.groupBy("run_id").agg(
            F.sum("n").alias("lines"),
            F.sum(F.when(~F.col("valid"), F.col("n")).otherwise(F.lit(0))).alias("bad"),
        )
        return {r["run_id"]: RunCounts(r["lines"], r["bad"]) for r in counted.collect()}

    try:
        # Spark jobs at once from driver threads: the histogram's scan runs beside the
        # cube's, and planning, code generation and commits on the driver overlap tasks;
        # the fault events and the line counts follow the cube. (The ingest's listing of
        # files is written only after all of them: a failed aggregate leaves the files to
        # be ingested again, never listed as done.)
        with ThreadPoolExecutor(4, thread_name_prefix="report-aggregate") as pool:
            cube_written = pool.submit(write_cube)
            others = [pool.submit(write_histogram), pool.submit(write_events)]
            counted = pool.submit(count_lines)
            for future in [cube_written, *others]:
                future.result()
            return counted.result()
    finally:
        cube.unpersist()


@contextmanager
def _timed(name: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    log.info("report.aggregate", table=name, seconds=round(time.perf_counter() - started, 2))


# Aggregates up to this size (Parquet bytes) are read into one partition. At 10M requests
# the largest, the latency histogram, is a few MB; a dataset of many months may exceed it,
# and is then read in Parquet's splits, every table's work spread over the executors.
ONE_PARTITION_BYTES = 64 * 1024 * 1024


def _size(spark: SparkSession, uri: str) -> int:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(uri)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return int(fs.getContentSummary(path).getLength())


def exists(spark: SparkSession, dataset: str) -> bool:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(f"{dataset}/{CUBE}")
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return bool(fs.exists(path))


def load(spark: SparkSession, dataset: str) -> Aggregates:
    """Every batch's aggregates, cached (each is read by several tables); small ones in one
    partition."""
    def read(name: str) -> DataFrame:
        uri = f"{dataset}/{name}"
        df = spark.read.parquet(uri)
        if _size(spark, uri) <= ONE_PARTITION_BYTES:
            # One partition: every table's aggregations, windows and joins then need no
            # shuffle (a single partition satisfies any distribution), so a table is one or
            # two Spark jobs instead of a job per stage.
            df = df.coalesce(1)
        return df.cache()

    return Aggregates(cube=read(CUBE), histogram=read(HISTOGRAM), fault_events=read(FAULT_EVENTS))
