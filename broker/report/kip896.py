"""KIP-896 as Spark expressions: is a request's (api key, version) deprecated in 3.9 /
removed in Kafka 4.0?

The ranges are the generated tables of `zkbroker.broker.protocol.removed_in_4` (from the specs'
`deprecatedVersions`). They become constant maps (api key to its range, api key to the
range's text; `zkbroker.broker.report.literals`) looked up in the JVM: executors need no Python, and
no Python list is turned into a DataFrame.

Deliberately not here: which clients are ready (`zkbroker.broker.report.tables.readiness`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zkbroker.broker.protocol.removed_in_4 import DEPRECATED_IN_3_9, REMOVED_IN_4_0
from zkbroker.broker.report.literals import literal_map

if TYPE_CHECKING:
    from pyspark.sql import Column

Ranges = dict[int, tuple[str, int, int]]


def _in_ranges(ranges: Ranges, api_key: Column, api_version: Column) -> Column:
    """Whether the version is in the key's range: false for a key without one, null when
    the key or the version is null."""
    from pyspark.sql import functions as F

    bounds = F.try_element_at(
        literal_map({key: {"low": low, "high": high} for key, (_, low, high) in ranges.items()}),
        api_key,
    )
    inside = api_version.between(bounds.getField("low"), bounds.getField("high"))
    return F.when(api_key.isNotNull() & api_version.isNotNull(), F.coalesce(inside, F.lit(False)))


def removed_in_4(api_key: Column, api_version: Column) -> Column:
    """True when Kafka 4.0 no longer serves this version of this API."""
    return _in_ranges(REMOVED_IN_4_0, api_key, api_version)


def deprecated_in_3_9(api_key: Column, api_version: Column) -> Column:
    return _in_ranges(DEPRECATED_IN_3_9, api_key, api_version)


def removed_range_text(api_key: Column) -> Column:
    """"v0-1" for an API with versions removed in 4.0, else null."""
    from pyspark.sql import functions as F

    text = {key: f"v{low}" if low == high else f"v{low}-{high}"
            for key, (_, low, high) in REMOVED_IN_4_0.items()}
    return F.try_element_at(literal_map(text), api_key)
