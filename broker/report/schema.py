"""The Spark schema of a capture line, derived by code from `CAPTURE_LINE_SCHEMA`.

`capture_read_schema()` is what the ingest reads JSONL with: an explicit schema (schema
inference reads the files once more and guesses types per file), every property of the JSON
Schema except the request/response bodies, which no report needs (reading them as strings
would copy every body), plus the corrupt-record column Spark's PERMISSIVE mode fills with
lines it cannot parse. The mapping is mechanical (JSON Schema type -> Spark type), so a new
capture field appears here without an edit, and tests/report/test_schema.py keeps the two
equal.

Deliberately not here: reading files (`zkbroker.broker.report.ingest`) and any validation beyond
types (Spark marks a line corrupt when a value does not fit its declared type).

PySpark is imported inside the functions: importing this module needs no PySpark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zkbroker.broker.hooks.capture import CAPTURE_LINE_SCHEMA

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType, StructType

# Decoded messages: large, varied per API and version, and never read by a report.
BODY_FIELDS = ("request", "response")
CORRUPT_COLUMN = "_corrupt_record"


def _non_null_types(prop: dict[str, Any]) -> list[str]:
    if "enum" in prop:
        return ["string"]
    kind = prop.get("type", "object")
    kinds = [kind] if isinstance(kind, str) else list(kind)
    return [k for k in kinds if k != "null"]


def spark_type(prop: dict[str, Any]) -> DataType:
    """The Spark type of one JSON Schema property (nullability aside: Spark's JSON reader
    makes every field nullable)."""
    from pyspark.sql import types as T

    kinds = _non_null_types(prop)
    if len(kinds) != 1:
        raise ValueError(f"no single Spark type for {prop!r}")
    kind = kinds[0]
    if kind == "string":
        return T.TimestampType() if prop.get("format") == "date-time" else T.StringType()
    if kind == "integer":
        return T.LongType()
    if kind == "number":
        return T.DoubleType()
    if kind == "boolean":
        return T.BooleanType()
    if kind == "array":
        return T.ArrayType(spark_type(prop.get("items", {"type": "string"})), True)
    if kind == "object":
        if "properties" not in prop:
            raise ValueError("an object without properties has no fixed Spark type")
        return struct_of(prop)
    raise ValueError(f"unknown JSON Schema type {kind!r}")


def struct_of(schema: dict[str, Any], skip: tuple[str, ...] = ()) -> StructType:
    from pyspark.sql import types as T

    return T.StructType(
        [
            T.StructField(name, spark_type(prop), True)
            for name, prop in schema["properties"].items()
            if name not in skip
        ]
    )


def capture_schema() -> StructType:
    """Every capture field but the bodies, in the JSON Schema's order."""
    return struct_of(CAPTURE_LINE_SCHEMA, skip=BODY_FIELDS)


def capture_read_schema() -> StructType:
    """What the JSON reader is given: `capture_schema()` with its date-times read as strings
    (`typed_column` casts them), plus the corrupt-record column of the PERMISSIVE reader.

    Why strings: the JSON reader parses a timestamp through a `DateTimeFormatter` pattern
    per value; Spark's cast of an ISO-8601 string is hand-written and cheaper. It accepts
    the capture writer's form and a few more ISO-8601 spellings (a space for the "T", no
    fraction, another offset); a value it cannot read is null, so the line counts as bad, as
    a value the pattern refused did."""
    from pyspark.sql import types as T

    return T.StructType(
        [
            T.StructField(f.name, T.StringType(), True)
            if isinstance(f.dataType, T.TimestampType)
            else f
            for f in capture_schema().fields
        ]
    ).add(T.StructField(CORRUPT_COLUMN, T.StringType(), True))


def typed_column(name: str) -> Column:
    """Column `name` of lines read with `capture_read_schema()`, typed as `capture_schema()`
    types it (a date-time string that does not parse is null, never an error: Spark's ANSI
    mode would fail the whole job on one bad value)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    field = capture_schema()[name]
    if isinstance(field.dataType, T.TimestampType):
        return F.expr(f"try_cast(`{name}` AS TIMESTAMP)").alias(name)
    return F.col(name)


# The fields a valid line must carry; a line without one of them is counted as bad.
REQUIRED_FOR_REPORTS = ("time", "api", "api_key", "api_version", "latency_us")

# Kafka's INT16, the wire type of API keys, versions and error codes. A capture line holds
# what a broker decoded and answered, so a value outside it (a hand edit, a corrupt file)
# makes the line bad, like a value of the wrong type: narrowing it to the dataset's `int`
# would otherwise fail the whole job (Spark's ANSI casts), or wrap it into another code.
INT16 = (-(2**15), 2**15 - 1)
