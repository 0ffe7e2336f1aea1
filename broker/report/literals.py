"""Constant lookup tables as Spark expressions built from one piece of SQL text each.

A Column built with PySpark's functions costs a round trip to the JVM (py4j) for every
literal and every operator: the map of Kafka's error names and the KIP-896 range tests, built
that way, cost every report a noticeable wait on the driver while its tables were planned.
The same map written as SQL text is one call, parsed by Spark in milliseconds. The entries
are the project's own generated tables (integers, names such as `UNKNOWN_TOPIC_OR_PARTITION`,
"v0-1"), so the text holds only integers and plain quoted names: a name that would need
escaping is refused rather than quoted in a way that depends on a session setting
(`spark.sql.parser.escapedStringLiterals`).

Deliberately not here: what the tables mean (`zkbroker.broker.report.kip896`,
`zkbroker.broker.report.tables.error_name`). Data of the run itself (paths, counts) never goes
through SQL text: `zkbroker.broker.report.ingest` passes its file listing as one JSON literal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column

# Printable ASCII but the quote and the backslash: the same text under either parser mode.
_PLAIN = re.compile(r"[ -&(-\[\]-~]*")

Value = int | str | Mapping[str, int]


def sql_literal(value: Value) -> str:
    """An integer, a plain string, or a mapping of field names to integers (a named struct),
    as Spark SQL text."""
    if isinstance(value, bool):
        raise TypeError("booleans are not map entries here")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if not _PLAIN.fullmatch(value):
            raise ValueError(f"not a plain name: {value!r}")
        return f"'{value}'"
    fields = [f"{sql_literal(name)}, {sql_literal(v)}" for name, v in value.items()]
    return f"named_struct({', '.join(fields)})"


def literal_map(entries: Mapping[int, Value]) -> Column:
    """A constant `map(key, value, ...)` of `entries`, in key order."""
    from pyspark.sql import functions as F

    items = [f"{sql_literal(k)}, {sql_literal(v)}" for k, v in sorted(entries.items())]
    return F.expr(f"map({', '.join(items)})")
