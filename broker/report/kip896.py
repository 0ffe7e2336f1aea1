"""KIP-896 as Spark expressions: is a request's (api key, version) deprecated in 3.9 /
removed in Kafka 4.0?

The ranges are the generated tables of `broker.protocol.removed_in_4` (from the specs'
`deprecatedVersions`). They become literal Column expressions (an OR of range tests, a map of
api key to range text), evaluated in the JVM: executors need no Python, and no Python list
is turned into a DataFrame.

Deliberately not here: which clients are ready (`broker.report.tables.readiness`).
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

from broker.protocol.removed_in_4 import DEPRECATED_IN_3_9, REMOVED_IN_4_0

if TYPE_CHECKING:
    from pyspark.sql import Column

Ranges = dict[int, tuple[str, int, int]]


def _in_ranges(ranges: Ranges, api_key: Column, api_version: Column) -> Column:
    from pyspark.sql import functions as F

    tests = [
        (api_key == F.lit(key)) & api_version.between(F.lit(low), F.lit(high))
        for key, (_, low, high) in sorted(ranges.items())
    ]
    return reduce(lambda a, b: a | b, tests, F.lit(False))


def removed_in_4(api_key: Column, api_version: Column) -> Column:
    """True when Kafka 4.0 no longer serves this version of this API."""
    return _in_ranges(REMOVED_IN_4_0, api_key, api_version)


def deprecated_in_3_9(api_key: Column, api_version: Column) -> Column:
    return _in_ranges(DEPRECATED_IN_3_9, api_key, api_version)


def removed_range_text(api_key: Column) -> Column:
    """"v0-1" for an API with versions removed in 4.0, else null."""
    from pyspark.sql import functions as F

    pairs = []
    for key, (_, low, high) in sorted(REMOVED_IN_4_0.items()):
        pairs += [F.lit(key), F.lit(f"v{low}" if low == high else f"v{low}-{high}")]
    return F.try_element_at(F.create_map(*pairs), api_key)
