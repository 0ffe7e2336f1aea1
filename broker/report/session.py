"""The SparkSession of a report run: dependency checks, spark-submit detection, settings.

Three launches run the same job: `zkbroker report` (we start Spark: `local[*]` unless
`--master`), spark-submit of `broker/report/submit.py` (Spark owns the master, deploy mode and
memory, which we never override) and Python with a session of one's own. Settings suit a small
machine (UI and progress bars off, UTC, few shuffle partitions, the driver on 127.0.0.1 for
local masters, Parquet TIMESTAMP_MICROS), and the driver memory and JVM options
(`zkbroker.broker.report.jvm_tuning`, the class-data archive) are set before the JVM starts.

Not here: what the job computes (`zkbroker.broker.report.job`). PySpark is imported only inside
functions, so `zkbroker` works without the `report` extra.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zkbroker.broker.jvm import class_archive as jvm_archive
from zkbroker.broker.jvm.class_archive import ArchivePlan
from zkbroker.broker.log import get_logger
from zkbroker.broker.report import class_archive, jvm_tuning

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = get_logger(__name__)

INSTALL_PYSPARK_HINT = "install the report extra: pip install 'zkbroker[report]'"
INSTALL_JAVA_HINT = (
    "Spark needs Java 17 or 21: install a JRE (e.g. apt-get install openjdk-17-jre-headless) "
    "or set JAVA_HOME"
)


class MissingDependencyError(Exception):
    """PySpark, matplotlib or Java is missing; the message says how to install it."""


@dataclass(frozen=True, slots=True)
class SparkSettings:
    master: str | None = None  # None: local[*], or whatever spark-submit chose
    # Reports aggregate to small tables: 4 partitions keep 2 cores busy without many tiny tasks.
    shuffle_partitions: int = 4
    driver_memory: str = "1g"
    app_name: str = "zkbroker-report"
    # percentile_approx keeps a hash aggregate up to this many groups per task (beyond Spark's
    # default, 128, it falls back to a sort-based aggregate, several times slower).
    percentile_groups_in_hash: int = 100_000
    # Where the JVM's class-data archive is kept (`zkbroker.broker.report.class_archive`); None:
    # none.
    class_archive: str | None = field(default_factory=jvm_archive.default_folder)


def java_available() -> bool:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(os.path.join(java_home, "bin", "java"), os.X_OK):
        return True
    return shutil.which("java") is not None


def check_dependencies() -> None:
    """Raise MissingDependencyError naming what to install."""
    missing = [m for m in ("pyspark", "matplotlib") if importlib.util.find_spec(m) is None]
    if missing:
        names = " and ".join(missing)
        raise MissingDependencyError(f"{names} not installed: {INSTALL_PYSPARK_HINT}")
    if not java_available() and not launched_by_spark_submit():
        raise MissingDependencyError(f"java not found: {INSTALL_JAVA_HINT}")


def launched_by_spark_submit() -> bool:
    """True when Spark already runs this driver (spark-submit, pyspark shell, notebooks)."""
    # Set by Spark's PythonRunner (PySpark's launch_gateway then connects to that JVM);
    # SparkConf() is still empty when a spark-submitted script starts.
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return True
    if importlib.util.find_spec("pyspark") is None:
        return False
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


def _is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-")


def plan_class_archive(settings: SparkSettings) -> ArchivePlan | None:
    """The class-data archive of a JVM this process is about to start; None when Spark runs
    us (spark-submit) or a JVM already runs here (its options are set)."""
    if launched_by_spark_submit() or importlib.util.find_spec("pyspark") is None:
        return None
    from pyspark import SparkContext

    if SparkContext._gateway is not None:
        return None
    return class_archive.plan(settings.class_archive)


def build_session(settings: SparkSettings, archive: ArchivePlan | None = None) -> SparkSession:
    """The session for a report run: ours when we start Spark, Spark's under spark-submit.
    `archive` (`plan_class_archive`) adds the class-data archive to the JVM's options."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(settings.app_name)
    # SQL settings: they apply to a running session too, so they are set in both cases.
    sql_conf = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": str(
            settings.percentile_groups_in_hash
        ),
        # Parquet's own timestamp type, not the legacy INT96 (Spark's default): the dataset's
        # times are written faster and its files are smaller.
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    }
    if launched_by_spark_submit():
        log.info("report.spark", launched_by="spark-submit")
        spark = builder.getOrCreate()
        for key, value in sql_conf.items():
            spark.conf.set(key, value)
        return spark
    master = settings.master or "local[*]"
    builder = builder.master(master)
    # Collector, metaspace and JIT directives (`jvm_tuning`): read at JVM start, like the
    # driver memory and the class-data archive.
    java_options = jvm_tuning.java_options()
    if archive is not None:
        java_options.append(archive.java_options)
        log.info("report.class_archive", path=str(archive.final),
                 using=archive.writing is None)
    for key, value in sql_conf.items():
        builder = builder.config(key, value)
    builder = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", settings.driver_memory)
        .config("spark.driver.extraJavaOptions", " ".join(java_options))
    )
    if _is_local(master):
        # Read by the JVM at start: without it Spark resolves the host name and warns.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
            "spark.driver.host", "127.0.0.1"
        )
    log.info("report.spark", master=master, driver_memory=settings.driver_memory,
             java_options=" ".join(java_options))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if _is_local(master):
        use_local_listing_tasks(spark)
    return spark


LISTING_PARALLELISM = "spark.sql.sources.parallelPartitionDiscovery.parallelism"


def use_local_listing_tasks(spark: SparkSession) -> None:
    """Spark lists more than 32 input paths in a job of one task per path (up to 10,000):
    on a local master each task costs milliseconds to list a file's status in microseconds
    (1,000 capture files: 2.7-5.5 s, against 0.2 s with a task per core). One task per
    core; a cluster keeps Spark's default (its executors may list a remote store in
    parallel)."""
    spark.conf.set(LISTING_PARALLELISM, str(spark.sparkContext.defaultParallelism))


def stop_session(spark: SparkSession, archive: ArchivePlan | None, ok: bool) -> None:
    """Stop a session `build_session` started. When its JVM is writing a class-data
    archive, the JVM is stopped too (it writes the archive as it exits) and the archive
    kept if `ok`; otherwise PySpark keeps the JVM for a later session, as it always does."""
    spark.stop()
    if archive is None or archive.writing is None:
        return
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if gateway is not None:
        gateway.shutdown()
    # A later session in this process starts a new JVM.
    SparkContext._gateway = None
    SparkContext._jvm = None
    jvm_archive.finish(archive, process, ok)
