"""The Spark schema of captures stays the capture format's (`CAPTURE_LINE_SCHEMA`), and the
writer's lines parse with it into the values written."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from zkbroker.broker.hooks.capture import CAPTURE_LINE_SCHEMA, record_to_line
from zkbroker.broker.report.schema import (
    BODY_FIELDS,
    CORRUPT_COLUMN,
    capture_read_schema,
    capture_schema,
    typed_column,
)
from zkbroker.broker.report.synthetic import SyntheticConfig, events, to_record

pytestmark = pytest.mark.spark

# Written out by hand from the JSON Schema's types: integer -> bigint, number -> double,
# date-time string -> timestamp, other strings (and enums) -> string.
EXPECTED = (
    "struct<time:timestamp,broker_id:bigint,connection_id:string,client_id:string,"
    "client_software_name:string,client_software_version:string,api:string,api_key:bigint,"
    "api_version:bigint,correlation_id:bigint,error_codes:array<bigint>,latency_us:bigint,"
    "intervention:struct<source:string,kind:string,delay_s:double,error_code:bigint>>"
)
# What the JSON reader is given: date-times as strings (cast after), the corrupt-record column.
EXPECTED_READ = EXPECTED.replace("time:timestamp", "time:string")[:-1] + ",_corrupt_record:string>"


def test_read_schema_is_the_capture_schema_without_bodies() -> None:
    assert capture_schema().simpleString() == EXPECTED
    schema = capture_read_schema()
    assert schema.simpleString() == EXPECTED_READ
    fields = [f.name for f in schema.fields]
    assert fields == [
        *[p for p in CAPTURE_LINE_SCHEMA["properties"] if p not in BODY_FIELDS],
        CORRUPT_COLUMN,
    ]
    # Every nested object with properties keeps them all.
    (intervention,) = [f for f in schema.fields if f.name == "intervention"]
    assert [f.name for f in intervention.dataType.fields] == list(
        CAPTURE_LINE_SCHEMA["properties"]["intervention"]["properties"]
    )


def test_writer_lines_parse_to_their_values(spark: Any, tmp_path: Any) -> None:
    items = list(events(SyntheticConfig(lines=200, runs=1, fault_rate=0.2, error_rate=0.3)))
    path = tmp_path / "c.jsonl"
    path.write_text("".join(record_to_line(to_record(e)) for e in items))
    raw = spark.read.schema(capture_read_schema()).json(str(path))
    rows = raw.select(*[typed_column(f.name) for f in capture_schema().fields], CORRUPT_COLUMN)
    rows = rows.collect()
    assert len(rows) == len(items)
    for row, event in zip(rows, items, strict=True):
        assert row[CORRUPT_COLUMN] is None
        assert row.api == event.api and row.api_version == event.api_version
        assert row.latency_us == event.latency_us
        assert row.error_codes == list(event.error_codes)
        assert row.client_software_name == event.client.software
        micros = int((row.time - datetime(1970, 1, 1)).total_seconds()) * 1_000_000
        assert micros + row.time.microsecond == event.time_us
        if event.fault is None:
            assert row.intervention is None
        else:
            assert row.intervention.kind == event.fault
            assert row.intervention.error_code == event.fault_code


def test_date_times_that_do_not_parse_are_null_not_errors(spark: Any, tmp_path: Any) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"time": "2026-01-01T00:00:00.003776Z"}\n{"time": "yesterday"}\n'
        '{"time": "2026-01-01T01:00:00+01:00"}\n{"time": 12}\n'
    )
    raw = spark.read.schema(capture_read_schema()).json(str(path))
    times = [r.time for r in raw.select(typed_column("time")).collect()]
    assert times == [
        datetime(2026, 1, 1, 0, 0, 0, 3776),
        None,
        datetime(2026, 1, 1, 0, 0, 0),
        None,
    ]
