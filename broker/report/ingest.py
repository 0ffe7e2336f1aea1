"""Ingest: capture files (JSONL, optionally gzip) -> one partitioned Parquet dataset.

Inputs are files, folders (searched recursively), globs or Hadoop URIs, listed by Spark's
binary-file source so the same code runs locally and on a cluster; hidden files are skipped.
Each file is one **run** (`run_id` its path; `project` from a `project=NAME` folder above it;
an optional `<file>.meta.json` adds `release`, `commit`, `ci_job`, `kafka_version`). Lines are
parsed once, with `zkbroker.broker.report.schema` in PERMISSIVE mode; unparsable lines and lines
with missing fields or impossible numbers are kept as `valid = false` rows (text left out), so
they are counted per file, never dropped, never fatal. The dataset holds every field but the
bodies, plus each batch's aggregates (`zkbroker.broker.report.aggregates`); `<dataset>/ingested`
lists the files read, so `--incremental` reads only new or changed ones.

Not here: reports (`zkbroker.broker.report.tables`), checking the inputs exist before Spark
starts (`zkbroker.broker.report.inputs`).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from zkbroker.broker.log import get_logger
from zkbroker.broker.report import aggregates
from zkbroker.broker.report.console import Progress, quiet
from zkbroker.broker.report.schema import (
    CORRUPT_COLUMN,
    INT16,
    REQUIRED_FOR_REPORTS,
    capture_read_schema,
    typed_column,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

log = get_logger(__name__)

CAPTURE_SUFFIXES = (".jsonl", ".jsonl.gz")
META_SUFFIX = ".meta.json"
META_FIELDS = ("release", "commit", "ci_job", "kafka_version")
DEFAULT_PROJECT = "default"
REQUESTS_TABLE = "requests"
INGESTED_TABLE = "ingested"
PROJECT_FOLDER = re.compile(r"/project=([^/]+)/")


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: str  # as Hadoop prints it, e.g. file:/tmp/runs/a.jsonl
    size: int
    modified_ms: int
    meta_path: str | None


@dataclass(frozen=True, slots=True)
class IngestResult:
    files_seen: int
    files_ingested: int
    lines: int
    bad_lines: int


def same_path(a: str) -> str:
    """A comparable form of a path: Spark's `_metadata.file_path` is URI-encoded and spells
    local files `file:///x`, Hadoop's listing `file:/x`."""
    text = unquote(a)
    return "file:/" + text.removeprefix("file:").lstrip("/") if text.startswith("file:") else text


def list_inputs(spark: SparkSession, inputs: Sequence[str]) -> list[SourceFile]:
    """Every capture file the inputs name, sorted by path, each once.

    Spark's file index lists the inputs (globs, folders recursively, files) and one job
    collects each file's path, size and time; the meta files come from the same listing, or
    from one more listing of the folders it did not cover whole. So the driver makes a fixed
    number of JVM calls however many files there are: a call per file and attribute, plus an
    `exists` per file for its meta file, would make the listing grow with the files' count,
    and on `s3a:` each `exists` is a request."""
    if not inputs:
        return []
    named, folders = _named_paths(spark, inputs)
    listed = _file_listing(spark, inputs, LISTED_NAMES)
    listed.update(named)
    metas = {p for p in listed if p.endswith(META_SUFFIX)}
    captures = {
        path: stamp
        for path, stamp in listed.items()
        if _is_capture(path.rsplit("/", 1)[-1], explicit=path in named)
    }
    # A capture found as a glob match or named file: its folder was not listed, nor its meta.
    unlisted = {
        path.rsplit("/", 1)[0]
        for path in captures
        if path + META_SUFFIX not in metas and not any(path.startswith(f + "/") for f in folders)
    }
    if unlisted:
        folders_to_list = [_glob_escaped(f) for f in sorted(unlisted)]
        metas.update(_file_listing(spark, folders_to_list, "*" + META_SUFFIX))
    return [
        SourceFile(
            path=path,
            size=size,
            modified_ms=modified_ms,
            meta_path=path + META_SUFFIX if path + META_SUFFIX in metas else None,
        )
        for path, (size, modified_ms) in sorted(captures.items())
    ]


# The names a listing keeps: captures and their meta files (a file named on its own is
# taken whatever its name, by `_named_paths`).
LISTED_NAMES = "*{" + ",".join((*CAPTURE_SUFFIXES, META_SUFFIX)) + "}"
GLOB_CHARS = "*?[]{}\\"


def _is_capture(name: str, explicit: bool) -> bool:
    if name.endswith(META_SUFFIX) or name.startswith((".", "_")):
        return False
    return explicit or name.endswith(CAPTURE_SUFFIXES)


def _named_paths(
    spark: SparkSession, inputs: Sequence[str]
) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """The inputs that are neither globs nor named like captures, looked up one by one
    (typically a folder or two): {path: (size, modified_ms)} of those that are files, and
    the paths of those that are folders (listed whole, their meta files with them)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    named: dict[str, tuple[int, int]] = {}
    folders: list[str] = []
    for given in inputs:
        if any(c in given for c in GLOB_CHARS) or given.rstrip("/").endswith(CAPTURE_SUFFIXES):
            continue
        path = jvm.org.apache.hadoop.fs.Path(given)
        try:
            status = path.getFileSystem(conf).getFileStatus(path)
        except Exception as e:  # py4j's error for Java's FileNotFoundException
            if "FileNotFoundException" in str(e):
                raise FileNotFoundError(f"no capture files at {given}") from None
            raise
        qualified = str(status.getPath().toString())
        if status.isDirectory():
            folders.append(qualified)
        else:
            named[qualified] = (int(status.getLen()), int(status.getModificationTime()))
    return named, folders


def _file_listing(
    spark: SparkSession, roots: Sequence[str], names: str
) -> dict[str, tuple[int, int]]:
    """{path: (size, modified_ms)} of the files under `roots` (globs, folders, files) whose
    name matches the glob `names`, from one Spark job. The binary-file source reads no
    file's content unless asked for it, and skips hidden files (`.x`, `_x`) as every Spark
    file source does (not the files inside hidden folders)."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    try:
        rows = (
            spark.read.format("binaryFile")
            .option("recursiveFileLookup", "true")  # no partition columns from `k=v` folders
            .option("pathGlobFilter", names)
            .load(list(roots))
            .select("path", "length", F.unix_millis("modificationTime").alias("modified_ms"))
            .collect()
        )
    except AnalysisException as e:
        condition = (getattr(e, "getCondition", None) or e.getErrorClass)()  # 3.5: no getCondition
        if condition == "PATH_NOT_FOUND":  # a missing path, or a glob that matched nothing
            where = (e.getMessageParameters() or {}).get("path", str(e))
            raise FileNotFoundError(f"no capture files at {where}") from None
        raise
    return {r["path"]: (int(r["length"]), int(r["modified_ms"])) for r in rows}


def _glob_escaped(path: str) -> str:
    """`path` as a Hadoop glob that matches only itself."""
    return "".join("\\" + c if c in GLOB_CHARS else c for c in path)


def project_of(path: str) -> str:
    """The `project=NAME` folder above a capture file, else the default project."""
    match = PROJECT_FOLDER.search(path)
    return match.group(1) if match else DEFAULT_PROJECT


def read_captures(spark: SparkSession, files: Sequence[SourceFile]) -> dict[str, DataFrame]:
    """The capture lines of `files` per project, with `run_id`, `project` and `valid`
    (bodies left out).

    Run columns that are functions of the file are not computed per line: the project is a
    literal of each project's read, and the run's name is derived from `run_id` by the
    aggregates (a regular expression per line costs a good part of parsing the line). Each
    project is its own frame, written on its own: the union of several projects, written
    partitioned by project, made Spark sort every line by project first."""
    from pyspark.sql import functions as F

    by_project: dict[str, list[SourceFile]] = {}
    for f in files:
        by_project.setdefault(project_of(f.path), []).append(f)
    return {
        project: _with_meta(
            spark,
            _read_project(spark, [f.path for f in own]).select(
                "*", F.lit(project).alias("project")
            ),
            own,
        )
        for project, own in sorted(by_project.items())
    }


def _read_project(spark: SparkSession, paths: list[str]) -> DataFrame:
    from pyspark.sql import functions as F

    # Bad lines become rows of the dataset, counted from Parquet: Spark refuses queries that
    # reference only the corrupt-record column of raw JSON unless the input is cached, and this
    # single pass needs neither.
    raw = (
        spark.read.schema(capture_read_schema())
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
        .json(paths)
    )
    narrow = ("api_key", "api_version")
    typed = raw.select(
        *[
            # Narrow types the reports group by (JSON integers are read as longs); a value
            # beyond `int` is null here and its line bad (`valid` below).
            F.expr(f"try_cast(`{c}` AS INT)").alias(c) if c in narrow else typed_column(c)
            for c in raw.columns
            if c != CORRUPT_COLUMN
        ],
        F.col(CORRUPT_COLUMN),
        F.col("_metadata.file_path").alias("run_id"),
    )
    valid = F.col(CORRUPT_COLUMN).isNull()
    for name in REQUIRED_FOR_REPORTS:
        valid = valid & F.col(name).isNotNull()
    valid = valid & _in_range(raw)
    fields = [c for c in typed.columns if c not in (CORRUPT_COLUMN, "run_id")]
    return typed.select(*fields, valid.alias("valid"), "run_id")


def _in_range(raw: DataFrame) -> Column:
    """Whether a line's numbers are ones a broker could have captured: API key and version
    0..32767, error codes (the response's and a fault's) Kafka INT16s, a latency of at least
    zero (a negative one has no latency bucket). Null where a required field is missing,
    which `valid` already counts as bad."""
    from pyspark.sql import functions as F

    low, high = INT16
    fault_code = F.col("intervention.error_code")
    return (
        F.col("api_key").between(0, high)
        & F.col("api_version").between(0, high)
        & (F.col("latency_us") >= 0)
        # A line without error codes stays valid (no field the reports need); a null code
        # is no code a broker answers.
        & F.coalesce(
            F.forall("error_codes", lambda c: c.isNotNull() & c.between(low, high)),
            F.lit(True),
        )
        & (fault_code.isNull() | fault_code.between(low, high))
    )


def _with_meta(spark: SparkSession, df: DataFrame, files: Sequence[SourceFile]) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    metas = [f.meta_path for f in files if f.meta_path is not None]
    if not metas:
        return df.select("*", *[F.lit(None).cast("string").alias(m) for m in META_FIELDS])
    schema = T.StructType([T.StructField(m, T.StringType(), True) for m in META_FIELDS])
    meta = (
        spark.read.schema(schema)
        .option("multiLine", True)
        .json(metas)
        .select(
            F.expr(f"substring(_metadata.file_path, 1, length(_metadata.file_path) - "
                   f"{len(META_SUFFIX)})").alias("meta_run_id"),
            *META_FIELDS,
        )
    )
    joined = df.join(F.broadcast(meta), df["run_id"] == meta["meta_run_id"], "left")
    return joined.drop("meta_run_id")


def _ingested_paths(spark: SparkSession, dataset: str) -> dict[str, tuple[int, int]]:
    """{comparable path: (size, modified_ms)} of the files already in the dataset."""
    try:
        rows = spark.read.parquet(f"{dataset}/{INGESTED_TABLE}").collect()
    except Exception as e:  # no dataset yet (AnalysisException: path does not exist)
        if "PATH_NOT_FOUND" in str(e) or "does not exist" in str(e):
            return {}
        raise
    return {same_path(r["source"]): (r["size"], r["modified_ms"]) for r in rows}


def ingest(
    spark: SparkSession,
    inputs: Sequence[str],
    dataset: str,
    incremental: bool = False,
    progress: Progress = quiet,
) -> IngestResult:
    """Write the captures of `inputs` to the Parquet dataset at `dataset` (overwritten unless
    `incremental`, which appends only files not ingested before or changed since);
    `progress` gets a line per step (`zkbroker.broker.report.console`)."""
    from pyspark.sql import functions as F

    started_ingest = time.perf_counter()
    files = list_inputs(spark, inputs)
    new = _new_files(spark, files, dataset) if incremental else files
    log.info("report.ingest", files=len(files), new=len(new), dataset=dataset)
    if not new:
        progress(f"{_files(len(files))} found, none new")
        return IngestResult(len(files), 0, 0, 0)
    known_text = f" ({len(files) - len(new):,} already ingested)" if len(new) < len(files) else ""
    progress(f"parsing {_files(len(new))}{known_text} into the dataset {dataset}")
    batch = uuid.uuid4().hex
    mode = "append" if incremental else "overwrite"
    _write_requests(spark, new, dataset, batch, incremental)
    progress("counting the aggregates (requests cube, latency histogram, fault events)")
    started = time.perf_counter()
    # The batch's aggregates, from the Parquet just written (narrow columns, no JSON parsing);
    # the cube also counts the lines and bad lines per file.
    written = load_requests(spark, dataset)
    if incremental:
        written = written.where(F.col("ingest_batch") == batch)
    per_run = aggregates.write(written, dataset, mode)
    log.info("report.ingest.aggregated", seconds=round(time.perf_counter() - started, 2))
    counts = {same_path(run): (c.lines, c.bad_lines) for run, c in per_run.items()}
    _write_listing(spark, new, counts, f"{dataset}/{INGESTED_TABLE}", batch, mode)
    lines = sum(c[0] for c in counts.values())
    bad = sum(c[1] for c in counts.values())
    log.info("report.ingested", files=len(new), lines=lines, bad_lines=bad)
    progress(f"ingested {_files(len(new))}: {lines:,} lines, {bad:,} bad "
             f"({time.perf_counter() - started_ingest:.1f} s)")
    return IngestResult(len(files), len(new), lines, bad)


def _new_files(spark: SparkSession, files: list[SourceFile], dataset: str) -> list[SourceFile]:
    """The files not in the dataset yet, or changed since they were ingested."""
    known = _ingested_paths(spark, dataset)
    new = [f for f in files if known.get(same_path(f.path)) != (f.size, f.modified_ms)]
    changed = [f.path for f in new if same_path(f.path) in known]
    if changed:
        # An appended file (a run still capturing) would be counted twice: say so.
        log.warning("report.ingest.changed_files_reingested", files=changed[:10])
    return new


def _write_requests(
    spark: SparkSession, new: list[SourceFile], dataset: str, batch: str, incremental: bool
) -> None:
    """Parse the files into the dataset's requests table, one project's folder at a time,
    each row marked with the ingest ``batch`` (the table is replaced unless ``incremental``)."""
    from pyspark.sql import functions as F

    requests_uri = f"{dataset}/{REQUESTS_TABLE}"
    started = time.perf_counter()
    if not incremental:
        _delete(spark, requests_uri)  # an overwrite, one project at a time
    for project, df in read_captures(spark, new).items():
        # Straight into the project's partition folder, named as Spark names it: the same
        # dataset as a write partitioned by project, whose writer instead computes every
        # row's partition and copies the row without it.
        folder = _partition_folder(spark, "project", project)
        df = df.drop("project").withColumn("ingest_batch", F.lit(batch))
        df.write.mode("append").parquet(f"{requests_uri}/{folder}")
    log.info("report.ingest.parsed", seconds=round(time.perf_counter() - started, 2))


def _write_listing(
    spark: SparkSession,
    new: list[SourceFile],
    counts: dict[str, tuple[int, int]],
    uri: str,
    batch: str,
    mode: str,
) -> None:
    """Record the ingested files at ``uri`` with their size, time, lines and bad lines, so an
    incremental run knows them."""
    listing = _listing(spark, [
        {"source": f.path, "size": f.size, "modified_ms": f.modified_ms,
         "lines": counts.get(same_path(f.path), (0, 0))[0],
         "bad_lines": counts.get(same_path(f.path), (0, 0))[1], "ingest_batch": batch}
        for f in new
    ])
    listing.coalesce(1).write.mode(mode).parquet(uri)


def _files(n: int) -> str:
    return f"{n:,} capture file" + ("" if n == 1 else "s")


LISTING_SCHEMA = (
    "array<struct<source: string, size: bigint, modified_ms: bigint, lines: bigint, "
    "bad_lines: bigint, ingest_batch: string>>"
)


def _listing(spark: SparkSession, entries: list[dict[str, Any]]) -> DataFrame:
    """The files of a batch as rows, from one JSON literal read in the JVM: no Python list
    becomes a DataFrame, and the batch costs two calls to the JVM however many files it
    has (a literal column per value would cost calls per file)."""
    from pyspark.sql import functions as F

    text = json.dumps(entries, ensure_ascii=False)
    # FAILFAST: a listing that failed to parse must stop the ingest, never list no files.
    rows = F.from_json(F.lit(text), LISTING_SCHEMA, {"mode": "FAILFAST"})
    return spark.range(1).select(F.inline(rows))


def _partition_folder(spark: SparkSession, column: str, value: str) -> str:
    """`column=value` with the value escaped as Spark's partitioned writes escape it (and
    its partition discovery reads back)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    utils = jvm.org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils
    return str(utils.getPartitionPathString(column, value))


def _delete(spark: SparkSession, uri: str) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(uri)
    path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(path, True)


def load_requests(spark: SparkSession, dataset: str) -> DataFrame:
    """Every row of the dataset (valid and bad lines)."""
    from pyspark.sql import types as T

    uri = f"{dataset}/{REQUESTS_TABLE}"
    # Read again with `project` a string: Spark types a partition column by its values, so
    # a dataset of only project "2024" would have an integer column (and "007" would be 7).
    found = spark.read.parquet(uri).schema
    schema = T.StructType(
        [T.StructField(f.name, T.StringType(), True) if f.name == "project" else f
         for f in found.fields]
    )
    return spark.read.schema(schema).parquet(uri)
