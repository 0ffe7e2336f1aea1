"""Constant lookup tables as one piece of SQL text (`zkbroker.broker.report.literals`), and the
KIP-896 and error-name lookups built on them, checked in a real Spark session against the
Python tables they come from, for every entry."""

from __future__ import annotations

from typing import Any

import pytest

from zkbroker.broker.protocol.error_codes import NAMES as ERROR_NAMES
from zkbroker.broker.protocol.removed_in_4 import DEPRECATED_IN_3_9, REMOVED_IN_4_0
from zkbroker.broker.report import kip896, literals, tables


def test_sql_text_of_integers_names_and_structs() -> None:
    assert literals.sql_literal(-7) == "-7"
    assert literals.sql_literal("UNKNOWN_SERVER_ERROR") == "'UNKNOWN_SERVER_ERROR'"
    assert literals.sql_literal({"low": 0, "high": 2}) == "named_struct('low', 0, 'high', 2)"


@pytest.mark.parametrize("text", ["it's", "a\\b", "tab\there", "ü"])
def test_a_name_needing_escapes_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a plain name"):
        literals.sql_literal(text)


def test_booleans_are_refused() -> None:
    with pytest.raises(TypeError):
        literals.sql_literal(True)


@pytest.mark.spark
def test_every_error_name_is_looked_up_in_the_jvm(spark: Any) -> None:
    from pyspark.sql import functions as F

    codes = spark.range(-2, 200).select(F.col("id").cast("int").alias("code"))
    got = {r.code: r.name for r in
           codes.select("code", tables.error_name(F.col("code")).alias("name")).collect()}
    assert got == {c: ERROR_NAMES.get(c, "UNKNOWN_CODE") for c in range(-2, 200)}


@pytest.mark.spark
def test_kip896_flags_match_the_generated_ranges_at_every_boundary(spark: Any) -> None:
    from pyspark.sql import functions as F

    keys = sorted(set(DEPRECATED_IN_3_9) | set(REMOVED_IN_4_0) | {999})
    pairs = spark.range(len(keys) * 40).select(
        F.element_at(F.array(*[F.lit(k) for k in keys]),
                     (F.col("id") / 40).cast("int") + 1).alias("k"),
        (F.col("id") % 40 - 1).cast("int").alias("v"),
    ).union(spark.createDataFrame([(None, 1), (3, None)], "k int, v int"))
    rows = pairs.select(
        "k", "v",
        kip896.deprecated_in_3_9(F.col("k"), F.col("v")).alias("deprecated"),
        kip896.removed_in_4(F.col("k"), F.col("v")).alias("removed"),
        kip896.removed_range_text(F.col("k")).alias("text"),
    ).collect()

    def inside(ranges: dict[int, tuple[str, int, int]], k: int, v: int) -> bool:
        return k in ranges and ranges[k][1] <= v <= ranges[k][2]

    for r in rows:
        if r.k is None or r.v is None:
            assert (r.deprecated, r.removed) == (None, None)
            continue
        assert r.deprecated == inside(DEPRECATED_IN_3_9, r.k, r.v), r
        assert r.removed == inside(REMOVED_IN_4_0, r.k, r.v), r
        if r.k in REMOVED_IN_4_0:
            _, low, high = REMOVED_IN_4_0[r.k]
            assert r.text == (f"v{low}" if low == high else f"v{low}-{high}")
        else:
            assert r.text is None
    assert any(r.removed for r in rows) and any(r.deprecated for r in rows)
