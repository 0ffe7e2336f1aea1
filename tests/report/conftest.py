"""Fixtures of the capture-analytics tests (zkbroker.broker.report).

`spark`: one `local[1]` SparkSession for the whole session (a JVM start costs seconds), UI
and progress bars off, 2 shuffle partitions, bound to 127.0.0.1, UTC. Tests needing it are
marked `spark` and skip, with the reason, only where Java or PySpark is missing.
`capture_schema_df`: build a small DataFrame of capture rows (the dataset's columns) from
dicts, for the unit tests of each transformation.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from zkbroker.broker.report.session import java_available

# Report runs of the tests start JVMs without a class-data archive: none written to the
# user's cache, and every run starts as a first run would. test_cli writes and maps one in
# a folder of its own.
os.environ.setdefault("ZKBROKER_CLASS_ARCHIVE", "off")

NO_SPARK_REASON = (
    "Java not found: Spark needs a JRE (apt-get install openjdk-17-jre-headless)"
    if not java_available()
    else "PySpark not installed: pip install 'zkbroker[report]'"
    if importlib.util.find_spec("pyspark") is None
    else None
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if NO_SPARK_REASON is None:
        return
    for item in items:
        if item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.skip(reason=NO_SPARK_REASON))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (
        SparkSession.builder.master("local[1]")
        .appName("zkbroker-report-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


T0 = datetime(2026, 3, 1, tzinfo=UTC)


def at(ms: float) -> datetime:
    """T0 + ms milliseconds (naive UTC, as Spark hands timestamps back in a UTC session)."""
    return (T0 + timedelta(milliseconds=ms)).replace(tzinfo=None)


# The dataset's columns (what ingest writes), in the order tests build them.
ROW_DEFAULTS: dict[str, Any] = {
    "time": None,
    "broker_id": 0,
    "connection_id": "c1",
    "client_id": "app",
    "client_software_name": "kafka-python",
    "client_software_version": "3.0.12",
    "api": "Metadata",
    "api_key": 3,
    "api_version": 12,
    "correlation_id": 1,
    "error_codes": [],
    "latency_us": 100,
    "intervention": None,
    "valid": True,
    "run_id": "file:/runs/a.jsonl",
    "run_name": "a.jsonl",
    "project": "default",
    "release": None,
    "commit": None,
    "ci_job": None,
    "kafka_version": None,
}
DATASET_DDL = (
    "time timestamp, broker_id bigint, connection_id string, client_id string, "
    "client_software_name string, client_software_version string, api string, api_key int, "
    "api_version int, correlation_id bigint, error_codes array<bigint>, latency_us bigint, "
    "intervention struct<source:string,kind:string,delay_s:double,error_code:bigint>, "
    "valid boolean, run_id string, run_name string, project string, release string, "
    "commit string, ci_job string, kafka_version string"
)


@pytest.fixture
def rows_df(spark: Any) -> Callable[[list[dict[str, Any]]], Any]:
    def build(rows: list[dict[str, Any]]) -> Any:
        full = []
        for i, r in enumerate(rows):
            row = {**ROW_DEFAULTS, "time": at(i), "correlation_id": i + 1, **r}
            full.append(tuple(row[k] for k in ROW_DEFAULTS))
        return spark.createDataFrame(full, DATASET_DDL)

    return build


def fault(kind: str = "error", code: int | None = 44) -> dict[str, Any]:
    return {"source": "fault:1", "kind": kind, "delay_s": 0.0, "error_code": code}
