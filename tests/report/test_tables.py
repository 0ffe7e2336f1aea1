"""Each report transformation on a few hand-made rows, against expected frames written out
by hand (chispa compares them). The expected values come from reading the rows, not from
running any of zkbroker.broker.report's code."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import pytest
from chispa import assert_df_equality

from tests.report.conftest import at, fault
from zkbroker.broker.report import tables

pytestmark = pytest.mark.spark

Build = Callable[[list[dict[str, Any]]], Any]
KP = {"client_software_name": "kafka-python", "client_software_version": "3.0.12"}
LEGACY = {"client_software_name": None, "client_software_version": None}


def _df(spark: Any, ddl: str, rows: list[tuple[Any, ...]]) -> Any:
    return spark.createDataFrame(rows, ddl)


def _eq(actual: Any, expected: Any) -> None:
    assert_df_equality(
        actual.select(*expected.columns),
        expected,
        ignore_row_order=True,
        ignore_nullable=True,
        ignore_column_order=False,
    )


def test_with_client_keeps_valid_rows_and_names_unknown_clients(rows_df: Build) -> None:
    df = rows_df([{**LEGACY}, {**KP}, {"valid": False}])
    got = sorted(
        (r.client_software, r.client_version) for r in tables.with_client(df).collect()
    )
    assert got == [("kafka-python", "3.0.12"), ("unknown", "unknown")]


def test_matrix_shares_and_kip896_flags(spark: Any, rows_df: Build) -> None:
    df = rows_df(
        [
            {**LEGACY, "api": "CreateTopics", "api_key": 19, "api_version": 1},
            {**LEGACY, "api": "CreateTopics", "api_key": 19, "api_version": 1},
            {**LEGACY, "api": "Metadata", "api_key": 3, "api_version": 1},
            {**LEGACY, "api": "DescribeConfigs", "api_key": 32, "api_version": 0},
            {**KP, "api": "CreateTopics", "api_key": 19, "api_version": 7},
        ]
    )
    got = tables.matrix(tables.request_cube(df))
    expected = _df(
        spark,
        "client_software string, client_version string, api string, api_key int, "
        "api_version int, requests bigint, share double, deprecated_in_3_9 boolean, "
        "removed_in_4_0 boolean, removed_range string",
        [
            ("unknown", "unknown", "CreateTopics", 19, 1, 2, 0.5, True, True, "v0-1"),
            # Metadata v0-3: deprecated in 3.9, still served by 4.0.
            ("unknown", "unknown", "Metadata", 3, 1, 1, 0.25, True, False, None),
            ("unknown", "unknown", "DescribeConfigs", 32, 0, 1, 0.25, True, True, "v0"),
            ("kafka-python", "3.0.12", "CreateTopics", 19, 7, 1, 1.0, False, False, "v0-1"),
        ],
    )
    _eq(got, expected)


def test_readiness_verdicts(spark: Any, rows_df: Build) -> None:
    df = rows_df(
        [
            {**LEGACY, "api": "DeleteTopics", "api_key": 20, "api_version": 0},
            {**LEGACY, "api": "CreateTopics", "api_key": 19, "api_version": 0},
            {**LEGACY, "api": "CreateTopics", "api_key": 19, "api_version": 5},
            {**KP, "api": "DeleteTopics", "api_key": 20, "api_version": 6},
        ]
    )
    got = tables.readiness(tables.matrix(tables.request_cube(df)))
    expected = _df(
        spark,
        "client_software string, client_version string, requests bigint, "
        "removed_requests bigint, removed_versions array<string>, verdict string",
        [
            ("unknown", "unknown", 3, 2, ["CreateTopics v0", "DeleteTopics v0"], "not ready"),
            ("kafka-python", "3.0.12", 1, 0, [], "ready"),
        ],
    )
    _eq(got, expected)


def test_errors_count_each_code_once_per_request_and_skip_faults(
    spark: Any, rows_df: Build
) -> None:
    df = rows_df(
        [
            {"api": "CreateTopics", "api_key": 19, "api_version": 7, "error_codes": [36, 36]},
            {"api": "CreateTopics", "api_key": 19, "api_version": 7, "error_codes": [36, 38]},
            {"api": "CreateTopics", "api_key": 19, "api_version": 7, "error_codes": []},
            {"api": "CreateTopics", "api_key": 19, "api_version": 7, "error_codes": []},
            # Injected: not a conformance finding, and not in the denominator either.
            {"api": "CreateTopics", "api_key": 19, "api_version": 7, "error_codes": [44],
             "intervention": fault()},
        ]
    )
    got = tables.errors(tables.request_cube(df))
    ddl = (
        "client_software string, client_version string, api string, api_key int, "
        "api_version int, error_code int, error_name string, with_code bigint, "
        "requests bigint, rate double"
    )
    expected = _df(
        spark,
        ddl,
        [
            ("kafka-python", "3.0.12", "CreateTopics", 19, 7, 36, "TOPIC_ALREADY_EXISTS", 2, 4,
             0.5),
            ("kafka-python", "3.0.12", "CreateTopics", 19, 7, 38, "INVALID_REPLICATION_FACTOR",
             1, 4, 0.25),
        ],
    )
    _eq(got, expected)


def test_error_diff_new_vanished_changed_same(spark: Any, rows_df: Build) -> None:
    base = rows_df(
        [
            {"api": "AlterConfigs", "api_key": 33, "error_codes": [42]},
            {"api": "AlterConfigs", "api_key": 33, "error_codes": []},
            {"api": "Metadata", "error_codes": [3]},
            {"api": "Metadata", "error_codes": []},
            {"api": "DeleteTopics", "api_key": 20, "error_codes": [3]},
            # Only the baseline called CreateTopics: not an error-code difference.
            {"api": "CreateTopics", "api_key": 19, "error_codes": [36]},
        ]
    )
    current = rows_df(
        [
            {"api": "AlterConfigs", "api_key": 33, "error_codes": [40]},
            {"api": "AlterConfigs", "api_key": 33, "error_codes": []},
            {"api": "Metadata", "error_codes": [3]},
            {"api": "Metadata", "error_codes": [3]},
            {"api": "DeleteTopics", "api_key": 20, "error_codes": [3]},
        ]
    )
    got = tables.error_diff(tables.request_cube(base), tables.request_cube(current), 0.05)
    expected = _df(
        spark,
        "client_software string, client_version string, api string, error_code int, "
        "error_name string, baseline_rate double, current_rate double, status string",
        [
            ("kafka-python", "3.0.12", "AlterConfigs", 40, "INVALID_CONFIG", 0.0, 0.5, "new"),
            ("kafka-python", "3.0.12", "AlterConfigs", 42, "INVALID_REQUEST", 0.5, 0.0,
             "vanished"),
            ("kafka-python", "3.0.12", "Metadata", 3, "UNKNOWN_TOPIC_OR_PARTITION", 0.5, 1.0,
             "changed"),
            ("kafka-python", "3.0.12", "DeleteTopics", 3, "UNKNOWN_TOPIC_OR_PARTITION", 1.0,
             1.0, "same"),
        ],
    )
    _eq(got, expected)


def test_run_diff_compares_each_run_with_the_one_before_in_its_project(
    spark: Any, rows_df: Build
) -> None:
    r1 = {"run_id": "file:/ci/r1.jsonl", "run_name": "r1.jsonl"}
    r2 = {"run_id": "file:/ci/r2.jsonl", "run_name": "r2.jsonl"}
    r3 = {"run_id": "file:/ci/r3.jsonl", "run_name": "r3.jsonl"}
    other = {"run_id": "file:/x/r0.jsonl", "run_name": "r0.jsonl", "project": "other"}
    ct = {"api": "CreateTopics", "api_key": 19}
    df = rows_df(
        [
            # Another project's run, earlier than all: never compared with these.
            {**other, **ct, "time": at(0), "error_codes": [41]},
            {**r1, **ct, "time": at(10)},
            {**r1, **ct, "time": at(11), "error_codes": [36]},
            {**r1, "time": at(12)},  # Metadata, no error
            {**r1, "api": "DeleteTopics", "api_key": 20, "time": at(13), "error_codes": [3]},
            # r2: CreateTopics 36 stays at 0.5, 41 is new; Metadata answers 3 (new);
            # DeleteTopics was not called: its code is no difference; a fault is no answer.
            {**r2, **ct, "time": at(20), "error_codes": [36]},
            {**r2, **ct, "time": at(21), "error_codes": [41]},
            {**r2, **ct, "time": at(22), "intervention": fault(), "error_codes": [44]},
            {**r2, "time": at(23), "error_codes": [3]},
            # r3 (compared with r2): CreateTopics 36 and 41 vanish, Metadata 3 goes 1.0 -> 0.5.
            {**r3, **ct, "time": at(30)},
            {**r3, "time": at(31), "error_codes": [3]},
            {**r3, "time": at(32)},
        ]
    )
    got = tables.run_diff(tables.request_cube(df), 0.05)
    expected = _df(
        spark,
        "project string, run_name string, previous_run_name string, api string, "
        "error_code int, error_name string, previous_rate double, current_rate double, "
        "status string",
        [
            ("default", "r2.jsonl", "r1.jsonl", "CreateTopics", 41, "NOT_CONTROLLER",
             0.0, 0.5, "new"),
            ("default", "r2.jsonl", "r1.jsonl", "Metadata", 3, "UNKNOWN_TOPIC_OR_PARTITION",
             0.0, 1.0, "new"),
            ("default", "r3.jsonl", "r2.jsonl", "CreateTopics", 36, "TOPIC_ALREADY_EXISTS",
             0.5, 0.0, "vanished"),
            ("default", "r3.jsonl", "r2.jsonl", "CreateTopics", 41, "NOT_CONTROLLER",
             0.5, 0.0, "vanished"),
            ("default", "r3.jsonl", "r2.jsonl", "Metadata", 3, "UNKNOWN_TOPIC_OR_PARTITION",
             1.0, 0.5, "changed"),
        ],
    )
    _eq(got, expected)


def test_version_diff(spark: Any, rows_df: Build) -> None:
    base = rows_df([{"api_version": 11}, {"api": "ListGroups", "api_key": 16, "api_version": 4}])
    current = rows_df(
        [{"api_version": 12}, {"api_version": 11},
         {"api": "DescribeCluster", "api_key": 60, "api_version": 1}]
    )
    got = tables.version_diff(tables.request_cube(base), tables.request_cube(current))
    expected = _df(
        spark,
        "client_software string, client_version string, api string, "
        "baseline_versions array<int>, current_versions array<int>, status string",
        [
            ("kafka-python", "3.0.12", "Metadata", [11], [11, 12], "changed"),
            ("kafka-python", "3.0.12", "ListGroups", [4], None, "vanished"),
            ("kafka-python", "3.0.12", "DescribeCluster", None, [1], "new"),
        ],
    )
    _eq(got, expected)


def test_latency_is_nearest_rank_without_faults(spark: Any, rows_df: Build) -> None:
    # 1..20 ms: nearest rank p50 = 10th value, p95 = 19th, p99 = 20th.
    rows = [{"latency_us": ms * 1000} for ms in range(20, 0, -1)]
    rows.append({"latency_us": 999_000, "intervention": fault("delay", None)})
    got = tables.latency(tables.latency_histogram(rows_df(rows)))
    expected = _df(
        spark,
        "api string, api_key int, api_version int, requests bigint, p50_us bigint, "
        "p95_us bigint, p99_us bigint, max_us bigint",
        [("Metadata", 3, 12, 20, 10_000, 19_000, 20_000, 20_000)],
    )
    _eq(got, expected)


def test_latency_percentiles_stay_within_one_percent_below_exact(
    spark: Any, rows_df: Build
) -> None:
    # 1,000 latencies spread over 1 ms..10 s (10 000 distinct values): several share each
    # ~1% bucket, so the percentile is the bucket's smallest, at most 1% below exact.
    rnd = random.Random(7)
    values = [int(10 ** rnd.uniform(3, 7)) for _ in range(1000)]
    got = tables.latency(tables.latency_histogram(rows_df([{"latency_us": v}
                                                           for v in values]))).collect()
    (row,) = got
    ordered = sorted(values)
    for p, name in ((0.5, "p50_us"), (0.95, "p95_us"), (0.99, "p99_us")):
        exact = ordered[math.ceil(p * len(ordered)) - 1]
        assert exact * 0.99 < row[name] <= exact, (name, row[name], exact)
    assert (row.requests, row.max_us) == (1000, max(values))


def test_latency_histograms_of_batches_add_up_to_the_whole(spark: Any, rows_df: Build) -> None:
    # What --incremental relies on: the histograms of two ingest batches, unioned, give the
    # percentiles of one histogram over all their requests.
    rnd = random.Random(3)
    rows = [{"latency_us": rnd.randrange(50, 90_000)} for _ in range(400)]
    whole = tables.latency(tables.latency_histogram(rows_df(rows)))
    halves = tables.latency_histogram(rows_df(rows[:150])).unionByName(
        tables.latency_histogram(rows_df(rows[150:]))
    )
    _eq(tables.latency(halves), whole)


def test_latency_runs_per_run_with_run_start(spark: Any, rows_df: Build) -> None:
    df = rows_df(
        [
            {"run_id": "r1", "run_name": "r1", "latency_us": 10, "time": at(5)},
            {"run_id": "r1", "run_name": "r1", "latency_us": 30, "time": at(1)},
            {"run_id": "r2", "run_name": "r2", "latency_us": 7, "time": at(9)},
        ]
    )
    got = tables.latency_runs(tables.latency_histogram(df), tables.request_cube(df))
    expected = _df(
        spark,
        "run_id string, run_name string, run_start timestamp, api string, api_version int, "
        "requests bigint, p50_us bigint, p95_us bigint, p99_us bigint, max_us bigint",
        [
            ("r1", "r1", at(1), "Metadata", 12, 2, 10, 30, 30, 30),
            ("r2", "r2", at(9), "Metadata", 12, 1, 7, 7, 7, 7),
        ],
    )
    _eq(got, expected)


def test_fault_events_retries_and_time_to_success(spark: Any, rows_df: Build) -> None:
    ct = {"api": "CreateTopics", "api_key": 19, "api_version": 7}
    df = rows_df(
        [
            {**ct, "time": at(0), "intervention": fault("error", 44), "error_codes": [44]},
            {**ct, "time": at(10), "error_codes": [7]},  # a retry, still failing
            {"time": at(15)},  # another API: not a retry of CreateTopics
            {**ct, "time": at(30), "client_id": "other"},  # another client
            {**ct, "time": at(40)},  # success: 2 retries, 40 ms after the fault
            {**ct, "time": at(50), "intervention": fault("drop", None)},  # never recovered
        ]
    )
    cube = tables.request_cube(df)
    got = tables.fault_events(tables.with_client(df), cube)
    expected = _df(
        spark,
        "run_id string, client_id string, client_software string, client_version string, "
        "api string, time timestamp, kind string, error_code int, recovered boolean, "
        "retries int, time_to_success_ms double",
        [
            ("file:/runs/a.jsonl", "app", "kafka-python", "3.0.12", "CreateTopics", at(0),
             "error", 44, True, 2, 40.0),
            ("file:/runs/a.jsonl", "app", "kafka-python", "3.0.12", "CreateTopics", at(50),
             "drop", None, False, None, None),
        ],
    )
    _eq(got, expected)
    # The same events keyed by the sequences' strings, and sorted in more tasks.
    _eq(tables.fault_events(tables.with_client(df), cube, exact_keys=True), expected)
    _eq(tables.fault_events(tables.with_client(df), cube, partitions=3), expected)
    # Two requests of the faulted sequences, the cube says.
    assert tables.fault_plan(cube).first().asDict() == {"requests": 4, "collision": False}
    summary = tables.fault_summary(got).collect()
    assert {(r.kind, r.faults, r.recovered, r.max_retries) for r in summary} == {
        ("error", 1, 1, 2),
        ("drop", 1, 0, None),
    }


def test_fault_events_sort_their_requests_once_through_a_single_window(
    spark: Any, rows_df: Build
) -> None:
    """Positions come from the one sort (row ids), not from a second window: the plan holds
    one Window, one Sort and one exchange of the requests, whatever the task count."""
    ct = {"api": "CreateTopics", "api_key": 19, "api_version": 7}
    df = rows_df([{**ct, "time": at(0), "intervention": fault("error", 44)}, {**ct}])
    cube = tables.request_cube(df)
    for partitions in (None, 3):
        events = tables.fault_events(tables.with_client(df), cube, partitions=partitions)
        plan = events._jdf.queryExecution().executedPlan().toString()
        operators = [line.strip(" :+-*()0123456789").split(" ")[0] for line in plan.split("\n")]
        assert (operators.count("Window"), operators.count("Sort")) == (1, 1), plan
        assert plan.count("hashpartitioning(sequence") == 1, plan


def test_fault_events_use_the_strings_when_two_sequences_share_a_hash(
    spark: Any, rows_df: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark.sql import functions as F

    ct = {"api": "CreateTopics", "api_key": 19, "api_version": 7}
    df = rows_df(
        [
            {**ct, "time": at(0), "intervention": fault("error", 44), "error_codes": [44]},
            {"time": at(5)},  # Metadata, another sequence: a success, but not a retry
            {**ct, "time": at(20)},  # the retry that succeeded
        ]
    )
    # Every sequence under one hash: the two sequences collide.
    monkeypatch.setattr(tables, "sequence_hash", lambda *columns: F.lit(7).cast("long"))
    cube = tables.request_cube(df)
    assert tables.fault_plan(cube).first()["collision"] is True
    exact = tables.fault_events(tables.with_client(df), cube, exact_keys=True)
    assert [(r.retries, r.time_to_success_ms) for r in exact.collect()] == [(1, 20.0)]
    # What the shared hash would have answered: the Metadata request taken for the success.
    merged = tables.fault_events(tables.with_client(df), cube)
    assert [(r.retries, r.time_to_success_ms) for r in merged.collect()] == [(1, 5.0)]


def test_run_name_is_the_last_part_of_the_run_id(spark: Any) -> None:
    ids = [
        "file:///ci/r1.jsonl",
        "s3a://bucket/project=a%20b/2024-01-02.jsonl.gz",
        "hdfs://nn:8020/x/y/z.jsonl",
        "no-folder.jsonl",
        "ends-with/",
    ]
    df = _df(spark, "run_id string", [(i,) for i in ids])
    got = {r.run_id: r.run_name for r in
           df.select("run_id", tables.run_name_of(df.run_id).alias("run_name")).collect()}
    assert got == {
        "file:///ci/r1.jsonl": "r1.jsonl",
        "s3a://bucket/project=a%20b/2024-01-02.jsonl.gz": "2024-01-02.jsonl.gz",
        "hdfs://nn:8020/x/y/z.jsonl": "z.jsonl",
        "no-folder.jsonl": "no-folder.jsonl",
        "ends-with/": "",
    }


def test_sort_partitions_keep_a_task_within_memory() -> None:
    assert tables.sort_partitions(0, 4) == 4
    assert tables.sort_partitions(tables.ROWS_PER_SORT_TASK * 10 + 1, 4) == 11


def test_runs_summary(spark: Any, rows_df: Build) -> None:
    df = rows_df(
        [
            {"time": at(0), "valid": False, "api": None, "client_software_name": None},
            {"time": at(1), "latency_us": 500, "error_codes": [3]},
            {"time": at(2), "latency_us": 100, "client_id": "b"},
            {"time": at(3), "intervention": fault(), "error_codes": [44]},
        ]
    )
    cube = tables.request_cube(df)
    got = tables.runs(cube, tables.latency_runs(tables.latency_histogram(df), cube)).collect()
    (run,) = got
    assert (run.lines, run.bad_lines, run.requests, run.clients, run.errors, run.faults) == (
        4, 1, 3, 2, 1, 1
    )
    assert run.error_rate == pytest.approx(0.5)  # 1 of the 2 requests without a fault
    assert run.first_request == at(1)  # the bad line's time does not count
    assert run.slowest_apis == ["Metadata v12 p95=0.50ms"]
