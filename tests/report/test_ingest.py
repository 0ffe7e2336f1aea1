"""Ingest: folders, globs and gzip in; one Parquet dataset out with run columns; bad lines
counted per file; `--incremental` reads only new files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from zkbroker.broker.report.ingest import ingest, list_inputs, load_requests, same_path
from zkbroker.broker.report.session import LISTING_PARALLELISM, use_local_listing_tasks
from zkbroker.broker.report.synthetic import SyntheticConfig, events, fast_line
from zkbroker.broker.report.tables import run_name_of

pytestmark = pytest.mark.spark


def _lines(n: int, seed: int) -> list[str]:
    return [fast_line(e) for e in events(SyntheticConfig(lines=n, runs=1, seed=seed))]


def test_bad_lines_are_counted_per_file_not_dropped(spark: Any, tmp_path: Path) -> None:
    good = tmp_path / "in" / "good.jsonl"
    bad = tmp_path / "in" / "bad.jsonl"
    good.parent.mkdir()
    good.write_text("".join(_lines(50, 1)))
    body = _lines(40, 2)
    wrong_type = json.loads(body[0])
    wrong_type["api_version"] = "twelve"  # a value of the wrong type
    missing = json.loads(body[1])
    del missing["latency_us"]  # a field the reports need
    bad.write_text(
        "".join(body[2:])
        + json.dumps(wrong_type) + "\n"
        + json.dumps(missing) + "\n"
        + "not json at all\n"
        + body[2][: len(body[2]) // 2]  # truncated: the writer was killed mid-line
    )
    result = ingest(spark, [str(tmp_path / "in")], str(tmp_path / "ds"))
    assert (result.files_ingested, result.lines, result.bad_lines) == (2, 92, 4)
    df = _with_run_name(load_requests(spark, str(tmp_path / "ds")))
    counts = {
        r["run_name"]: (r["lines"], r["bad"])
        for r in df.selectExpr("run_name", "valid")
        .groupBy("run_name")
        .agg({"valid": "count"})
        .withColumnRenamed("count(valid)", "lines")
        .join(
            df.where("not valid").groupBy("run_name").count().withColumnRenamed("count", "bad"),
            "run_name",
            "left",
        )
        .collect()
    }
    assert counts == {"good.jsonl": (50, None), "bad.jsonl": (42, 4)}
    # No body columns in the dataset.
    assert "request" not in df.columns and "response" not in df.columns


# A number no broker captures, per field: each made the whole report fail (a cast of the
# value to `int` under Spark's ANSI mode) or gave a latency no bucket.
OUT_OF_RANGE: dict[str, Any] = {
    "api key beyond int": {"api_key": 99_999_999_999},
    "api version beyond int": {"api_version": 99_999_999_999},
    "api version beyond int16": {"api_version": 40_000},
    "negative api version": {"api_version": -3},
    "negative latency": {"latency_us": -5},
    "error code beyond int": {"error_codes": [0, 99_999_999_999]},
    "error code beyond int16": {"error_codes": [-40_000]},
    "null error code": {"error_codes": [3, None]},
    "fault error code beyond int": {
        "intervention": {"source": "t", "kind": "error", "delay_s": 0.0,
                         "error_code": 99_999_999_999}
    },
}


def test_numbers_no_broker_captures_make_their_line_bad_and_never_fail_the_report(
    spark: Any, tmp_path: Path
) -> None:
    from zkbroker.broker.report.job import run_report
    from zkbroker.broker.report.options import ReportOptions
    from zkbroker.broker.report.reference import valid_line

    good = _lines(len(OUT_OF_RANGE) + 20, 7)
    lines = good[len(OUT_OF_RANGE):]
    for line, change in zip(good, OUT_OF_RANGE.values(), strict=False):
        d = {**json.loads(line), **change}
        assert not valid_line(d)  # the plain-Python reference agrees
        lines.append(json.dumps(d) + "\n")
    # Kafka's own extremes stay valid: error code -1, INT16's ends, a zero latency.
    edge = {**json.loads(good[0]), "api_version": 32767, "latency_us": 0,
            "error_codes": [-1, -32768, 32767]}
    assert valid_line(edge)
    lines.append(json.dumps(edge) + "\n")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "run.jsonl").write_text("".join(lines))
    result = run_report(
        ReportOptions(inputs=(str(tmp_path / "in"),), out=str(tmp_path / "out"),
                      dataset=str(tmp_path / "ds")),
        spark=spark,
    )
    totals = result.summary["totals"]
    assert (totals["lines"], totals["bad_lines"], totals["requests"]) == (
        len(lines), len(OUT_OF_RANGE), 21
    )


def _with_run_name(df: Any) -> Any:
    from pyspark.sql import functions as F

    return df.withColumn("run_name", run_name_of(F.col("run_id")))


def test_projects_meta_gzip_and_globs(spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "ci" / "project=orders"
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_text("".join(_lines(30, 3)))
    with gzip.open(folder / "b.jsonl.gz", "wt") as f:
        f.write("".join(_lines(20, 4)))
    (folder / "a.jsonl.meta.json").write_text(
        json.dumps({"release": "0.1.0", "commit": "abc", "ci_job": "ci/7", "kafka_version": "2.8",
                    "extra": "ignored"}, indent=2)
    )
    (folder / "notes.txt").write_text("not a capture")
    other = tmp_path / "ci" / "project=billing"
    other.mkdir()
    (other / "c.jsonl").write_text("".join(_lines(10, 5)))
    files = list_inputs(spark, [str(tmp_path / "ci" / "*")])
    # Sorted by path: project=billing first.
    assert [Path(f.path).name for f in files] == ["c.jsonl", "a.jsonl", "b.jsonl.gz"]
    assert files[1].meta_path is not None and files[2].meta_path is None
    ingest(spark, [str(tmp_path / "ci")], str(tmp_path / "ds"))
    requests = load_requests(spark, str(tmp_path / "ds"))
    # The run's name is derived from run_id where rows are few, never stored per request.
    assert "run_name" not in requests.columns
    rows = (
        _with_run_name(requests)
        .groupBy("run_name", "project", "release", "commit", "ci_job", "kafka_version")
        .count()
        .collect()
    )
    assert sorted(tuple(r) for r in rows) == [
        ("a.jsonl", "orders", "0.1.0", "abc", "ci/7", "2.8", 30),
        ("b.jsonl.gz", "orders", None, None, None, None, 20),
        ("c.jsonl", "billing", None, None, None, None, 10),
    ]


def test_project_names_come_back_as_written(spark: Any, tmp_path: Path) -> None:
    """A project's name is text whatever it looks like (Spark would type a folder of only
    "2024" as an integer), and names needing escapes in a folder name come back whole."""
    for name in ("2024", "a b%c=d"):
        folder = tmp_path / "in" / f"project={name}"
        folder.mkdir(parents=True)
        (folder / "run.jsonl").write_text("".join(_lines(5, 8)))
    ingest(spark, [str(tmp_path / "in" / "project=2024")], str(tmp_path / "one"))
    one = load_requests(spark, str(tmp_path / "one"))
    assert [tuple(r) for r in one.select("project").distinct().collect()] == [("2024",)]
    ingest(spark, [str(tmp_path / "in")], str(tmp_path / "both"))
    both = load_requests(spark, str(tmp_path / "both")).groupBy("project").count().collect()
    assert sorted(tuple(r) for r in both) == [("2024", 5), ("a b%c=d", 5)]


def test_incremental_ingests_only_new_files(spark: Any, tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "1.jsonl").write_text("".join(_lines(10, 5)))
    dataset = str(tmp_path / "ds")
    first = ingest(spark, [str(inputs)], dataset, incremental=True)
    assert (first.files_ingested, first.lines) == (1, 10)
    # A name the listing (one JSON literal) must carry as it is: a space, quotes and a
    # non-ASCII letter.
    odd = "2 it's \"ü\".jsonl"
    (inputs / odd).write_text("".join(_lines(7, 6)))
    second = ingest(spark, [str(inputs)], dataset, incremental=True)
    assert (second.files_seen, second.files_ingested, second.lines) == (2, 1, 7)
    third = ingest(spark, [str(inputs)], dataset, incremental=True)
    assert third.files_ingested == 0
    assert load_requests(spark, dataset).count() == 17
    listed = spark.read.parquet(f"{dataset}/ingested").collect()
    assert sorted((Path(same_path(r.source)).name, r.size, r.lines, r.bad_lines)
                  for r in listed) == [
        ("1.jsonl", (inputs / "1.jsonl").stat().st_size, 10, 0),
        (odd, (inputs / odd).stat().st_size, 7, 0),
    ]
    # Without --incremental the dataset is rebuilt from the inputs.
    again = ingest(spark, [str(inputs)], dataset)
    assert again.files_ingested == 2 and load_requests(spark, dataset).count() == 17


def _report_rows(spark: Any, dataset: str, out: Path) -> dict[str, list[str]]:
    from zkbroker.broker.report.job import run_report
    from zkbroker.broker.report.options import ReportOptions

    result = run_report(ReportOptions(out=str(out), dataset=dataset), spark=spark)
    return {name: sorted(json.dumps(r, sort_keys=True) for r in rows)
            for name, rows in result.tables.items()}


def test_incremental_reuses_the_aggregates_of_earlier_batches_and_merges_exactly(
    spark: Any, tmp_path: Path
) -> None:
    from zkbroker.broker.report import aggregates
    from zkbroker.broker.report.synthetic import write_runs

    paths = write_runs(str(tmp_path / "all"), SyntheticConfig(lines=3000, runs=3, seed=9,
                                                               fault_rate=0.03))
    inputs = tmp_path / "in"
    inputs.mkdir()
    for path in paths[:2]:
        Path(path).rename(inputs / Path(path).name)
    dataset = str(tmp_path / "ds")
    ingest(spark, [str(inputs)], dataset, incremental=True)
    kinds = (aggregates.CUBE, aggregates.HISTOGRAM, aggregates.FAULT_EVENTS)

    def files(kind: str) -> dict[str, int]:
        return {p.name: p.stat().st_mtime_ns for p in Path(dataset, kind).glob("*.parquet")}

    first = {kind: files(kind) for kind in kinds}
    Path(paths[2]).rename(inputs / Path(paths[2]).name)
    ingest(spark, [str(inputs)], dataset, incremental=True)
    for kind in kinds:
        after = files(kind)
        # The first batch's files are kept as written (not recomputed); the second adds its own.
        assert {name: after[name] for name in first[kind]} == first[kind], kind
        assert len(after) > len(first[kind]), kind
    # Two batches' aggregates give exactly the tables of one ingest of all three files.
    whole = str(tmp_path / "whole")
    ingest(spark, [str(inputs)], whole)
    assert _report_rows(spark, dataset, tmp_path / "out1") == _report_rows(
        spark, whole, tmp_path / "out2"
    )


def _one_file_dataset(spark: Any, tmp_path: Path) -> str:
    """A dataset ingested from one capture file of 300 lines; its URI."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.jsonl").write_text("".join(_lines(300, 4)))
    dataset = str(tmp_path / "ds")
    ingest(spark, [str(inputs)], dataset)
    return dataset


def test_a_dataset_without_aggregates_gets_them_from_its_requests(
    spark: Any, tmp_path: Path
) -> None:
    import shutil

    from zkbroker.broker.report import aggregates

    dataset = _one_file_dataset(spark, tmp_path)
    expected = _report_rows(spark, dataset, tmp_path / "out1")
    for kind in (aggregates.CUBE, aggregates.HISTOGRAM, aggregates.FAULT_EVENTS):
        shutil.rmtree(Path(dataset, kind))  # as a dataset ingested before they existed
    assert _report_rows(spark, dataset, tmp_path / "out2") == expected
    assert aggregates.exists(spark, dataset)


def test_missing_input_is_an_error(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("")
    for missing in ("nothing-here", "nothing-here.jsonl", "*.nomatch", "capture.log"):
        with pytest.raises(FileNotFoundError, match="no capture files at"):
            list_inputs(spark, [str(tmp_path / "a.jsonl"), str(tmp_path / missing)])


def _listed(files: list[Any]) -> list[tuple[str, int, int, str | None]]:
    return [
        (f.path.removeprefix("file:"), f.size, f.modified_ms,
         f.meta_path.removeprefix("file:") if f.meta_path else None)
        for f in files
    ]


def _expected(*paths: Path) -> list[tuple[str, int, int, str | None]]:
    """What the listing must say of each file, from the file system itself."""
    out = []
    for path in sorted(paths, key=str):
        stat = path.stat()
        meta = Path(f"{path}.meta.json")
        out.append((str(path), stat.st_size, stat.st_mtime_ns // 1_000_000,
                    str(meta) if meta.exists() else None))
    return out


def test_listing_of_folders_globs_and_named_files(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "caps"
    deep = root / "2026" / "11"
    odd = root / "runs[1]"  # glob characters in a folder's name
    for folder in (deep, odd):
        folder.mkdir(parents=True)
    a, b, c = root / "a.jsonl", deep / "b.jsonl.gz", odd / "c.jsonl"
    quoted = deep / "it's \"ü\" 1.jsonl"
    named = tmp_path / "capture.log"  # any name, when named on its own
    for i, path in enumerate((a, b, c, quoted, named)):
        path.write_text("x" * (i + 1))
    for path in (a, c, quoted, named):
        Path(f"{path}.meta.json").write_text("{}")
    for skipped in (root / "notes.txt", root / ".hidden.jsonl", root / "_partial.jsonl",
                    deep / "b.jsonl.gz._COPYING_"):
        skipped.write_text("not listed")
    everything = _expected(a, b, c, quoted)

    assert _listed(list_inputs(spark, [str(root)])) == everything
    assert _listed(list_inputs(spark, [f"file://{root}/"])) == everything
    # Globs and files named one by one (a shell's expansion): metas from their folders.
    assert _listed(list_inputs(spark, [f"{root}/*"])) == everything
    assert _listed(list_inputs(spark, [f"{root}/*.jsonl", f"{deep}/*.jsonl*"])) == (
        _expected(a, b, quoted)
    )
    assert _listed(list_inputs(spark, [str(quoted), str(b), str(named)])) == (
        _expected(b, quoted, named)
    )
    assert _listed(list_inputs(spark, [str(odd).replace("[", "\\[").replace("]", "\\]")])) == (
        _expected(c)
    )
    # Overlapping inputs: each file once.
    assert _listed(list_inputs(spark, [str(root), str(a), f"{root}/*.jsonl"])) == everything
    # Hidden files stay out even when named.
    assert list_inputs(spark, [str(root / ".hidden.jsonl")]) == []
    # An empty folder holds no captures: not an error.
    (tmp_path / "empty").mkdir()
    assert list_inputs(spark, [str(tmp_path / "empty")]) == []


def test_listing_costs_the_driver_the_same_calls_for_many_files(
    spark: Any, tmp_path: Path
) -> None:
    """Each call from Python into the JVM takes ~1 ms: a listing that made calls per file
    took seconds for a thousand files (and an `exists` per file, one request each on s3a)."""
    client = spark.sparkContext._gateway._gateway_client
    sent = client.send_command
    calls = 0

    def counted(command: str, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        # Not py4j's notices of Python objects collected ("m", memory): they come whenever
        # Python's collector runs, for objects of earlier tests too.
        if not command.startswith("m\n"):
            calls += 1
        return sent(command, *args, **kwargs)

    def calls_to_list(count: int) -> int:
        nonlocal calls
        folder = tmp_path / str(count)
        folder.mkdir()
        for i in range(count):
            (folder / f"{i}.jsonl").write_text("x")
            if i % 2:
                (folder / f"{i}.jsonl.meta.json").write_text("{}")
        # Named files cost one list element each (PySpark hands the paths over as a list).
        inputs = [str(folder), f"{folder}/*.jsonl", str(folder / "1.jsonl")]
        calls = 0
        client.send_command = counted
        try:
            listed = list_inputs(spark, inputs)
        finally:
            del client.send_command  # the class's method again
        assert len(listed) == count
        assert sum(f.meta_path is not None for f in listed) == count // 2
        return calls

    calls_to_list(3)  # the first listing also warms PySpark's own lookups
    few, many = calls_to_list(4), calls_to_list(120)
    assert many <= few + 5, (few, many)


def test_lines_parse_the_same_whatever_their_key_order_and_bodies(
    spark: Any, tmp_path: Path
) -> None:
    """Key order does not matter, nor bodies holding the trailer's key names (a nested
    "error_codes", the same text inside a string): the row is the line's top-level fields."""
    written = _lines(30, 3)
    docs = [json.loads(line) for line in written]
    for i, d in enumerate(docs):
        # Markers inside bodies: a nested "error_codes" key and one inside a string value.
        d["response"] = {"error_codes": [9099], "note": ',"error_codes":[9007],"x":"', "i": i}
        d["request"] = {"request": {"error_codes": []}}
    writer_order = [json.dumps(d, separators=(",", ":")) + "\n" for d in docs]
    reordered = [
        json.dumps({"response": d["response"], **{k: v for k, v in reversed(d.items())}})
        + "\n"
        for d in docs
    ]
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a-writer.jsonl").write_text("".join(writer_order))
    (folder / "b-reordered.jsonl").write_text("".join(reordered))
    result = ingest(spark, [str(folder)], str(tmp_path / "ds"))
    assert (result.lines, result.bad_lines) == (60, 0)
    df = _with_run_name(load_requests(spark, str(tmp_path / "ds")))
    columns = [c for c in df.columns if c not in ("run_id", "run_name", "ingest_batch")]

    def rows(name: str) -> list[tuple[Any, ...]]:
        got = df.where(df.run_name == name).select(*columns).collect()
        return sorted((tuple(r) for r in got), key=repr)

    assert rows("a-writer.jsonl") == rows("b-reordered.jsonl")
    assert len(rows("a-writer.jsonl")) == 30
    # The trailer's own error codes, not the body's.
    codes = {c for r in df.select("error_codes").collect() for c in r.error_codes}
    assert not codes & {9099, 9007}


def test_small_aggregates_are_read_into_one_partition_so_tables_need_no_shuffle(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zkbroker.broker.report import aggregates, tables

    dataset = _one_file_dataset(spark, tmp_path)

    def exchanges() -> int:
        loaded = aggregates.load(spark, dataset)
        try:
            plan = tables.matrix(loaded.cube)._jdf.queryExecution().executedPlan().toString()
            return int(plan.count("Exchange"))
        finally:
            loaded.unpersist()

    assert exchanges() == 0
    # Past the size, the aggregates keep Parquet's splits: the tables shuffle.
    monkeypatch.setattr(aggregates, "ONE_PARTITION_BYTES", 0)
    assert exchanges() > 0


def test_a_local_session_lists_many_inputs_in_a_task_per_core(
    spark: Any, tmp_path: Path
) -> None:
    """Past 32 paths Spark lists inputs in a job; left to itself, one task per path."""
    names = [tmp_path / f"{i}.jsonl" for i in range(40)]
    for path in names:
        path.write_text("x")
    context = spark.sparkContext
    tracker = context.statusTracker()
    use_local_listing_tasks(spark)
    context.setLocalProperty("spark.jobGroup.id", "listing-test")
    try:
        assert len(list_inputs(spark, [str(p) for p in names])) == 40
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        spark.conf.unset(LISTING_PARALLELISM)
    # The listing is the job the load runs (the collect's own tasks read the files' status).
    listing_tasks = [
        info.numTasks
        for job in tracker.getJobIdsForGroup("listing-test")
        for info in map(tracker.getStageInfo, tracker.getJobInfo(job).stageIds)
        if info.name.startswith("load at ")
    ]
    assert listing_tasks == [context.defaultParallelism]
