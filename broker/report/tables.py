"""The report tables: pure DataFrame -> DataFrame transformations over the ingested dataset.

Row-level requests are read only at ingest, into three aggregates (`request_cube`,
`latency_histogram`, `fault_events`; `zkbroker.broker.report.aggregates`) whose per-batch
results add up exactly; every table (`matrix`, `readiness`, `errors`, the diffs, `latency`,
`fault_summary`, `runs`) is computed from them. The definitions of client, conformance and
percentile are the README's ("Analyse captures"). A **retry** is a later request of the same
API by the same client in the same run; a fault is **recovered** at the first such request
answered without error or fault. Only the DataFrame API is used: no UDFs, no Python on
executors.

Not here: reading files (`ingest`), rendering (`page`, `plots`), exit codes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from zkbroker.broker.protocol.error_codes import NAMES as ERROR_NAMES
from zkbroker.broker.report.kip896 import deprecated_in_3_9, removed_in_4, removed_range_text
from zkbroker.broker.report.literals import literal_map

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

# Only for the time to success of the (few) fault events.
PERCENTILE_ACCURACY = 10_000
UNKNOWN = "unknown"
CLIENT = ("client_software", "client_version")
# A rate change smaller than this (absolute, 0..1) is not a difference.
DEFAULT_RATE_THRESHOLD = 0.05


def with_client(requests: DataFrame) -> DataFrame:
    """Valid requests with `client_software` / `client_version` (never null)."""
    from pyspark.sql import functions as F

    return requests.where(F.col("valid")).select(
        "*",
        F.coalesce("client_software_name", F.lit(UNKNOWN)).alias("client_software"),
        F.coalesce("client_software_version", F.lit(UNKNOWN)).alias("client_version"),
    )


def error_name(code: Column) -> Column:
    from pyspark.sql import functions as F

    return F.coalesce(F.try_element_at(literal_map(ERROR_NAMES), code), F.lit("UNKNOWN_CODE"))


# -- 0. the cube: one pass over the requests for every count -----------------------------------

RUN_COLUMNS = ("run_id", "run_name", "project", "release", "commit", "ci_job", "kafka_version")


def run_name_of(run_id: Column) -> Column:
    """A run's name: its capture file's name (the last part of `run_id`). Derived where rows
    are few (aggregated), never per request; by a plain search for the last "/", not a
    regular expression: `([^/]+)$` retries from every character of the path, a cost paid on
    each of the latency histogram's many rows."""
    from pyspark.sql import functions as F

    return F.substring_index(run_id, "/", -1)


def request_cube(requests: DataFrame) -> DataFrame:
    """The requests counted per run x client (id, software, version) x API x version x
    faulted x the distinct error codes answered, with the first and last request time; bad
    lines (``valid`` false) are counted per run. Every count of the report (matrix, errors,
    runs, the diffs) is a sum over these rows: one pass over the dataset instead of one per
    table, and a small table (thousands of rows for millions of requests)."""
    from pyspark.sql import functions as F

    valid = F.col("valid")
    run_columns = [c for c in RUN_COLUMNS if c != "run_name"]
    # The run columns and the API's name are functions of run_id and api_key, so grouping by
    # them too adds no group; taking them with `first` instead would put strings in the
    # aggregation buffer, which only a sort-based aggregate holds (a sort of every request).
    keys: list[Column | str] = [
        *run_columns,
        valid.alias("valid"),
        F.when(valid, F.coalesce("client_software_name", F.lit(UNKNOWN))).alias(
            "client_software"
        ),
        F.when(valid, F.coalesce("client_software_version", F.lit(UNKNOWN))).alias(
            "client_version"
        ),
        F.when(valid, F.coalesce("client_id", F.lit(""))).alias("client_id"),
        F.when(valid, F.col("api")).alias("api"),
        F.when(valid, F.col("api_key")).alias("api_key"),
        F.when(valid, F.col("api_version")).alias("api_version"),
        (valid & F.col("intervention").isNotNull()).alias("faulted"),
    ]
    # Two steps: the requests grouped by their codes as answered, then those few rows by the
    # distinct codes in order (sorting and de-duplicating every request's codes instead would
    # cost a large part of the whole aggregation).
    answered = requests.groupBy(*keys, F.when(valid, F.col("error_codes")).alias("answered")).agg(
        F.count("*").alias("n"),
        F.min(F.when(valid, F.col("time"))).alias("first_time"),
        F.max(F.when(valid, F.col("time"))).alias("last_time"),
    )
    names = [*run_columns, "valid", *CLIENT, "client_id", "api", "api_key", "api_version",
             "faulted"]
    cube = answered.groupBy(
        *names, F.array_sort(F.array_distinct("answered")).alias("codes")
    ).agg(
        F.sum("n").alias("n"),
        F.min("first_time").alias("first_time"),
        F.max("last_time").alias("last_time"),
    )
    return cube.select(
        "run_id",
        run_name_of(F.col("run_id")).alias("run_name"),
        *RUN_COLUMNS[2:], "valid", "client_software", "client_version", "client_id", "api",
        "api_key", "api_version", "faulted", "codes", "n", "first_time", "last_time",
    )


def _valid(cube: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return cube.where(F.col("valid"))


def _answered(cube: DataFrame) -> DataFrame:
    """Valid requests without an injected fault (what conformance tables count)."""
    from pyspark.sql import functions as F

    return cube.where(F.col("valid") & ~F.col("faulted"))


# -- 1. client x API x version ----------------------------------------------------------------


def matrix(cube: DataFrame) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    counts = _valid(cube).groupBy(*CLIENT, "api", "api_key", "api_version").agg(
        F.sum("n").alias("requests")
    )
    per_client = Window.partitionBy(*CLIENT)
    key, version = F.col("api_key"), F.col("api_version")
    return counts.select(
        *CLIENT,
        "api",
        "api_key",
        "api_version",
        "requests",
        (F.col("requests") / F.sum("requests").over(per_client)).alias("share"),
        deprecated_in_3_9(key, version).alias("deprecated_in_3_9"),
        removed_in_4(key, version).alias("removed_in_4_0"),
        removed_range_text(key).alias("removed_range"),
    )


def readiness(matrix_df: DataFrame) -> DataFrame:
    """Kafka 4.0 readiness per client: "ready", or "not ready" with what 4.0 removed."""
    from pyspark.sql import functions as F

    removed = F.col("removed_in_4_0")
    label = F.concat(F.col("api"), F.lit(" v"), F.col("api_version").cast("string"))
    return (
        matrix_df.groupBy(*CLIENT)
        .agg(
            F.sum("requests").alias("requests"),
            F.sum(F.when(removed, F.col("requests")).otherwise(F.lit(0))).alias(
                "removed_requests"
            ),
            F.array_sort(F.collect_list(F.when(removed, label))).alias("removed_versions"),
        )
        .select(
            "*",
            F.when(F.col("removed_requests") > 0, F.lit("not ready"))
            .otherwise(F.lit("ready"))
            .alias("verdict"),
        )
    )


# -- 2. error codes and the diff -------------------------------------------------------------


def _code_counts(cube: DataFrame, keys: tuple[str, ...]) -> tuple[DataFrame, DataFrame]:
    """(requests per `keys`, requests answering each code per `keys` + error_code), over
    requests without a fault; a request answering a code several times counts once."""
    from pyspark.sql import functions as F

    answered = _answered(cube)
    totals = answered.groupBy(*keys).agg(F.sum("n").alias("requests"))
    codes = (
        answered.select(*keys, "n", F.explode("codes").alias("error_code"))
        .groupBy(*keys, "error_code")
        .agg(F.sum("n").alias("with_code"))
    )
    return totals, codes


def errors(cube: DataFrame) -> DataFrame:
    """One row per client x API x version x error code answered (faults excluded)."""
    from pyspark.sql import functions as F

    keys = (*CLIENT, "api", "api_key", "api_version")
    totals, codes = _code_counts(cube, keys)
    return codes.join(totals, list(keys)).select(
        *keys,
        F.col("error_code").cast("int").alias("error_code"),
        error_name(F.col("error_code")).alias("error_name"),
        "with_code",
        "requests",
        (F.col("with_code") / F.col("requests")).alias("rate"),
    )


def _rates(cube: DataFrame, by: tuple[str, ...] = ()) -> DataFrame:
    """Error-code rates per client x API over all versions (versions differ between releases,
    so the diff compares what a client's calls of an API answered, whatever version), per
    `by` columns too (the run, for the run-to-run diff)."""
    from pyspark.sql import functions as F

    keys = (*by, *CLIENT, "api")
    totals, codes = _code_counts(cube, keys)
    return codes.join(totals, list(keys)).select(
        *keys, "error_code", (F.col("with_code") / F.col("requests")).alias("rate")
    )


def error_diff(
    baseline: DataFrame, current: DataFrame, threshold: float = DEFAULT_RATE_THRESHOLD
) -> DataFrame:
    """Error codes per client x API: new, vanished, changed rate, or same. Both inputs are
    `request_cube` frames; an API a side never called is not a difference of error codes."""
    from pyspark.sql import functions as F

    keys = [*CLIENT, "api"]
    b_calls = _answered(baseline).select(*keys).distinct()
    c_calls = _answered(current).select(*keys).distinct()
    both_called = b_calls.join(c_calls, keys)
    b = _rates(baseline).withColumnRenamed("rate", "baseline_rate")
    c = _rates(current).withColumnRenamed("rate", "current_rate")
    joined = b.join(c, [*keys, "error_code"], "full_outer").join(both_called, keys)
    b_rate = F.coalesce("baseline_rate", F.lit(0.0))
    c_rate = F.coalesce("current_rate", F.lit(0.0))
    status = (
        F.when(F.col("baseline_rate").isNull(), F.lit("new"))
        .when(F.col("current_rate").isNull(), F.lit("vanished"))
        .when(F.abs(c_rate - b_rate) >= F.lit(threshold), F.lit("changed"))
        .otherwise(F.lit("same"))
    )
    return joined.select(
        *keys,
        F.col("error_code").cast("int").alias("error_code"),
        error_name(F.col("error_code")).alias("error_name"),
        b_rate.alias("baseline_rate"),
        c_rate.alias("current_rate"),
        status.alias("status"),
    )


def run_diff(cube: DataFrame, threshold: float = DEFAULT_RATE_THRESHOLD) -> DataFrame:
    """Each run against the run before it in its project (runs ordered by their first
    request): the error codes per client x API that are new, vanished or changed by
    `threshold`, where both runs called that API. Codes that stayed the same are left out."""
    from pyspark.sql import functions as F

    keys = [*CLIENT, "api"]
    pairs = _run_pairs(cube)
    pair_keys = ["project", "run_id", "previous_run_id"]
    rates = _rates(cube, ("run_id",))
    current = rates.join(F.broadcast(pairs), "run_id").withColumnRenamed("rate", "current_rate")
    previous = (
        rates.withColumnRenamed("run_id", "previous_run_id")
        .join(F.broadcast(pairs), "previous_run_id")
        .withColumnRenamed("rate", "previous_rate")
        .drop("run_name", "previous_run_name")
    )
    calls = _answered(cube).select("run_id", *keys).distinct()
    both_called = (
        calls.join(F.broadcast(pairs.select("run_id", "previous_run_id")), "run_id")
        .join(calls.withColumnRenamed("run_id", "previous_run_id"), ["previous_run_id", *keys])
        .select("run_id", "previous_run_id", *keys)
    )
    joined = (
        current.drop("run_name", "previous_run_name")
        .join(previous, [*pair_keys, *keys, "error_code"], "full_outer")
        .join(both_called, ["run_id", "previous_run_id", *keys])
        .join(F.broadcast(pairs.drop("project")), ["run_id", "previous_run_id"])
    )
    p_rate = F.coalesce("previous_rate", F.lit(0.0))
    c_rate = F.coalesce("current_rate", F.lit(0.0))
    status = (
        F.when(F.col("previous_rate").isNull(), F.lit("new"))
        .when(F.col("current_rate").isNull(), F.lit("vanished"))
        .when(F.abs(c_rate - p_rate) >= F.lit(threshold), F.lit("changed"))
        .otherwise(F.lit("same"))
    )
    return joined.select(
        "project",
        "run_id",
        "run_name",
        "previous_run_id",
        "previous_run_name",
        *keys,
        F.col("error_code").cast("int").alias("error_code"),
        error_name(F.col("error_code")).alias("error_name"),
        p_rate.alias("previous_rate"),
        c_rate.alias("current_rate"),
        status.alias("status"),
    ).where(F.col("status") != "same")


def _run_pairs(cube: DataFrame) -> DataFrame:
    """Each run (`project`, `run_id`, `run_name`) with the run before it in its project by
    first request (`previous_run_id`, `previous_run_name`); a project's first run has none and
    is left out."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    runs = _valid(cube).groupBy("project", "run_id", "run_name").agg(
        F.min("first_time").alias("run_start")
    )
    order = Window.partitionBy("project").orderBy("run_start", "run_id")
    return runs.select(
        "project",
        "run_id",
        "run_name",
        F.lag("run_id").over(order).alias("previous_run_id"),
        F.lag("run_name").over(order).alias("previous_run_name"),
    ).where(F.col("previous_run_id").isNotNull())


def version_diff(baseline: DataFrame, current: DataFrame) -> DataFrame:
    """The API versions each client used, baseline vs current: changed / new / vanished /
    same (e.g. Metadata v11 against 2.8, v12 against 3.9)."""
    from pyspark.sql import functions as F

    keys = [*CLIENT, "api"]

    def versions(cube: DataFrame, name: str) -> DataFrame:
        return (
            _valid(cube)
            .groupBy(*keys)
            .agg(F.array_sort(F.collect_set("api_version")).alias(name))
        )

    joined = versions(baseline, "baseline_versions").join(
        versions(current, "current_versions"), keys, "full_outer"
    )
    status = (
        F.when(F.col("baseline_versions").isNull(), F.lit("new"))
        .when(F.col("current_versions").isNull(), F.lit("vanished"))
        .when(F.col("baseline_versions") != F.col("current_versions"), F.lit("changed"))
        .otherwise(F.lit("same"))
    )
    return joined.select(*keys, "baseline_versions", "current_versions", status.alias("status"))


# -- 3. latency ------------------------------------------------------------------------------

# Histogram buckets ~1% wide: bucket b holds the latencies v with floor(ln(1 + v) / ln 1.01) = b,
# so two latencies of one bucket differ by less than 1% of the larger (below 100 us every
# bucket holds one value: exact), whatever the group's size, and histograms merge by addition.
BUCKET_GROWTH = 1.01


def latency_bucket(latency_us: Column) -> Column:
    from pyspark.sql import functions as F

    return F.floor(F.log1p(latency_us) / F.lit(math.log(BUCKET_GROWTH))).cast("int")


def latency_histogram(requests: DataFrame) -> DataFrame:
    """Requests without a fault counted per run x API x version x latency bucket, with the
    smallest and largest latency of each bucket: what the latency tables are computed from.
    Written at ingest (one per ingest batch); batches add up exactly (sums, mins, maxes)."""
    from pyspark.sql import functions as F

    latency_us = F.col("latency_us")
    keys = ("run_id", "api_key", "api_version", "bucket")
    return (
        requests.where(F.col("valid") & F.col("intervention").isNull())
        # The API's name is a function of api_key (a key adding no group: see request_cube),
        # run_name of run_id.
        .groupBy(*keys[:3], latency_bucket(latency_us).alias("bucket"), "api")
        .agg(
            F.count("*").alias("n"),
            F.min(latency_us).alias("min_us"),
            F.max(latency_us).alias("max_us"),
        )
        .select(
            *keys, run_name_of(F.col("run_id")).alias("run_name"), "api", "n", "min_us", "max_us"
        )
    )


def _percentiles(histogram: DataFrame, keys: list[str]) -> DataFrame:
    """p50/p95/p99 per `keys`: for each p, the nearest rank r = ceil(p x requests), and the
    smallest latency of the bucket holding the r-th request (buckets in latency order). The
    exact nearest-rank value is in that bucket too, so the answer is at most 1% below it,
    never above; requests and max_us are exact."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    buckets = histogram.groupBy(*keys, "bucket").agg(
        F.sum("n").alias("n"), F.min("min_us").alias("min_us"), F.max("max_us").alias("max_us")
    )
    group = Window.partitionBy(*keys)
    running = group.orderBy("bucket").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    buckets = buckets.select(
        "*",
        F.sum("n").over(running).alias("at_or_below"),
        F.sum("n").over(group).alias("total"),
    )

    def at_rank(p: float) -> Column:
        # The first bucket reaching the rank has the smallest latency of the buckets that
        # do (buckets are latency ranges, in order), so a plain minimum finds it: a minimum
        # of (bucket, latency) structs would need Spark's sort-based aggregate.
        reached = F.col("at_or_below") >= F.ceil(F.lit(p) * F.col("total"))
        return F.min(F.when(reached, F.col("min_us")))

    return buckets.groupBy(*keys).agg(
        F.sum("n").alias("requests"),
        at_rank(0.5).alias("p50_us"),
        at_rank(0.95).alias("p95_us"),
        at_rank(0.99).alias("p99_us"),
        F.max("max_us").alias("max_us"),
    )


def latency(histogram: DataFrame) -> DataFrame:
    """Per API x version over every run, from `latency_histogram` rows."""
    return _percentiles(histogram, ["api", "api_key", "api_version"])


def latency_runs(histogram: DataFrame, cube: DataFrame) -> DataFrame:
    """Per run x API x version, with the run's first request time (the trend's x axis)."""
    from pyspark.sql import functions as F

    starts = _valid(cube).groupBy("run_id").agg(F.min("first_time").alias("run_start"))
    per_run = _percentiles(histogram, ["run_id", "run_name", "api", "api_version"])
    return per_run.join(F.broadcast(starts), "run_id").select(
        "run_id", "run_name", "run_start", *[c for c in per_run.columns if c not in
                                              ("run_id", "run_name")]
    )


# -- 4. faults -------------------------------------------------------------------------------


# A sequence: the requests of one API by one client in one run, in time order.
SEQUENCE = ("run_id", "client_id", *CLIENT, "api")
# Requests per task of the fault events' sort: ~80 bytes each in the sorter, so two tasks
# at once sort in memory within a 1 GB driver instead of spilling to disk.
ROWS_PER_SORT_TASK = 1_000_000


def sequence_hash(*columns: Column) -> Column:
    """The 64-bit key the fault events sort a sequence's requests under, in place of its
    strings (a broadcast join of every request on five strings is a large part of the
    events' cost, and the strings would widen every sorted row). `fault_plan` checks that no two
    sequences share one; if two ever do, the events use the strings instead."""
    from pyspark.sql import functions as F

    return F.xxhash64(*columns)


def _sequences(cube: DataFrame) -> DataFrame:
    """Every sequence of the cube (client ids as the cube spells them: "" for none), with
    its requests, whether a fault intervened in it, and its hash."""
    from pyspark.sql import functions as F

    return (
        _valid(cube)
        .groupBy(*SEQUENCE)
        .agg(F.sum("n").alias("n"), F.max("faulted").alias("faulted"))
        .select("*", sequence_hash(*[F.col(k) for k in SEQUENCE]).alias("sequence"))
    )


def fault_plan(cube: DataFrame) -> DataFrame:
    """One row: `requests`, the requests of the sequences with a fault (what the events
    sort), and `collision`, whether two sequences share a hash. Read from the cube (small)."""
    from pyspark.sql import functions as F

    per_hash = _sequences(cube).groupBy("sequence").agg(
        F.count("*").alias("sequences"),
        F.sum(F.when(F.col("faulted"), F.col("n")).otherwise(F.lit(0))).alias("n"),
    )
    return per_hash.agg(
        F.coalesce(F.sum("n"), F.lit(0)).cast("long").alias("requests"),
        F.coalesce(F.max("sequences") > 1, F.lit(False)).alias("collision"),
    )


def sort_partitions(requests: int, minimum: int) -> int:
    """Tasks for sorting `requests` rows: enough that each sorts in memory."""
    return max(minimum, -(-requests // ROWS_PER_SORT_TASK))


def fault_events(
    clients: DataFrame,
    cube: DataFrame,
    exact_keys: bool = False,
    partitions: int | None = None,
) -> DataFrame:
    """One row per request a fault intervened on, with what the same client did next.

    The sequences with a fault come from `cube` (the requests' cube); only their requests
    are sorted, keyed by `sequence_hash` unless `exact_keys` (`fault_plan` says when a hash
    is shared), in `partitions` tasks when given (`sort_partitions`), else Spark's shuffle
    partitions. A sorted row carries only what the window reads; what an event reports of
    its fault rides in one struct, null on the other requests."""
    from pyspark.sql import functions as F

    sequences = _sequences(cube).where(F.col("faulted"))
    by = list(SEQUENCE) if exact_keys else ["sequence"]
    requests = _fault_sequence_requests(clients, sequences, by, exact_keys)
    seq = _with_next_success(requests, by, partitions)
    recovered = F.col("success_rn").isNotNull()
    events = seq.where(F.col("fault").isNotNull()).select(
        *by,
        "time",
        "fault.*",
        recovered.alias("recovered"),
        # An int, as row_number's difference was (within one task's rows).
        F.when(recovered, (F.col("rn") - F.col("success_rn")).cast("int")).alias("retries"),
        F.when(
            recovered,
            (F.unix_micros("success_at") - F.unix_micros("time")) / F.lit(1000.0),
        ).alias("time_to_success_ms"),
    )
    if not exact_keys:  # the few events get their sequence's strings back
        events = events.join(F.broadcast(sequences.select(*SEQUENCE, "sequence")), "sequence")
    return events.select(
        *SEQUENCE,
        "time",
        "api_version",
        "source",
        "kind",
        "error_code",
        "recovered",
        "retries",
        "time_to_success_ms",
    )


def _fault_sequence_requests(
    clients: DataFrame, sequences: DataFrame, by: list[str], exact_keys: bool
) -> DataFrame:
    """The requests of the faulted ``sequences``, keyed by ``by``: when each was sent, whether
    it succeeded (no fault, no error code), and its fault as a struct (null on the others)."""
    from pyspark.sql import functions as F

    fault = F.col("intervention")
    # The cube's spelling of the keys: "" for a request without a client id.
    keys = [F.coalesce(k, F.lit("")) if k == "client_id" else F.col(k) for k in SEQUENCE]
    return clients.select(
        *([k.alias(n) for k, n in zip(keys, SEQUENCE, strict=True)] if exact_keys
          else [sequence_hash(*keys).alias("sequence")]),
        "time",
        "connection_id",
        "correlation_id",
        (fault.isNull() & (F.size("error_codes") == 0)).alias("success"),
        F.when(
            fault.isNotNull(),
            F.struct(
                F.col("api_version"),
                fault.source.alias("source"),
                fault.kind.alias("kind"),
                fault.error_code.cast("int").alias("error_code"),
            ),
        ).alias("fault"),
    ).join(F.broadcast(sequences.select(*by)), by, "left_semi")


def _with_next_success(requests: DataFrame, by: list[str], partitions: int | None) -> DataFrame:
    """``requests`` with a row number `rn` (counting down as time goes on) and the row number
    and time of the sequence's next successful request (`success_rn`, `success_at`; null when
    none follows)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    # Newest first, so "the next success" is the nearest one among the rows already seen: a
    # frame growing from the partition's start, which Spark computes incrementally (a frame
    # "1 following .. unbounded following" is recomputed for every row: quadratic).
    newest_first = [F.desc("time"), F.desc("connection_id"), F.desc("correlation_id")]
    # Each sequence whole in one partition and sorted as the window orders it; then a row's
    # id (`monotonically_increasing_id`: the partition's number, then the row's index in it)
    # counts the rows before it, so two ids of a sequence differ by the rows between them.
    # That makes `row_number`, a second window over every row, unneeded.
    # The window finds its child partitioned and sorted as it needs: no exchange, no sort.
    spread = requests.repartition(partitions, *by) if partitions else requests.repartition(*by)
    numbered = spread.sortWithinPartitions(*by, *newest_first).select(
        "*", F.monotonically_increasing_id().alias("rn")  # counts down as time goes on
    )
    later = Window.partitionBy(*by).orderBy(*newest_first).rowsBetween(
        Window.unboundedPreceding, -1
    )
    success = F.col("success")
    return numbered.select(
        "*",
        F.last(F.when(success, F.col("rn")), ignorenulls=True).over(later).alias("success_rn"),
        F.last(F.when(success, F.col("time")), ignorenulls=True).over(later).alias("success_at"),
    )


def fault_summary(events: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return events.groupBy(*CLIENT, "api", "kind", "error_code").agg(
        F.count("*").alias("faults"),
        F.sum(F.col("recovered").cast("long")).alias("recovered"),
        F.avg("retries").alias("mean_retries"),
        F.max("retries").alias("max_retries"),
        F.percentile_approx("time_to_success_ms", 0.5, PERCENTILE_ACCURACY).alias(
            "p50_time_to_success_ms"
        ),
        F.max("time_to_success_ms").alias("max_time_to_success_ms"),
    )


# -- 5. runs ---------------------------------------------------------------------------------


def runs(cube: DataFrame, per_run_latency: DataFrame, slowest: int = 3) -> DataFrame:
    """One row per run: lines, bad lines, requests, clients, error rate, faults, slowest APIs
    (highest p95). Counted from the cube, bad lines included."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    valid = F.col("valid")
    client = F.concat_ws("/", "client_software", "client_version", "client_id")
    no_fault = valid & ~F.col("faulted")
    errored = no_fault & (F.size("codes") > 0)

    def total(condition: Column) -> Column:
        return F.coalesce(F.sum(F.when(condition, F.col("n"))), F.lit(0)).cast("long")

    base = cube.groupBy(*RUN_COLUMNS).agg(
        F.sum("n").alias("lines"),
        total(~valid).alias("bad_lines"),
        total(valid).alias("requests"),
        F.size(F.collect_set(F.when(valid, client))).alias("clients"),
        total(errored).alias("errors"),
        total(no_fault).alias("answered"),
        total(valid & F.col("faulted")).alias("faults"),
        F.min("first_time").alias("first_request"),
        F.max("last_time").alias("last_request"),
    )
    rank = F.row_number().over(Window.partitionBy("run_id").orderBy(F.desc("p95_us"), "api"))
    top = (
        per_run_latency.select("*", rank.alias("rank"))
        .where(F.col("rank") <= slowest)
        .groupBy("run_id")
        .agg(
            F.array_sort(
                F.collect_list(
                    F.struct(
                        F.col("rank"),
                        F.concat(
                            F.col("api"),
                            F.lit(" v"),
                            F.col("api_version").cast("string"),
                            F.lit(" p95="),
                            F.format_number(F.col("p95_us") / 1000.0, 2),
                            F.lit("ms"),
                        ).alias("text"),
                    )
                )
            ).alias("top")
        )
        .select("run_id", F.col("top.text").alias("slowest_apis"))
    )
    return (
        base.join(top, "run_id", "left")
        .select(
            "*",
            F.when(F.col("answered") > 0, F.col("errors") / F.col("answered")).alias(
                "error_rate"
            ),
        )
        .drop("answered")
        .orderBy("first_request", "run_id")
    )
