"""The benchmark's fast rendering of synthetic captures writes exactly the capture hook's
lines, so the benchmark measures the real format."""

from __future__ import annotations

import json
from pathlib import Path

from tests.json_schema import validate
from zkbroker.broker.hooks.capture import CAPTURE_LINE_SCHEMA, record_to_line
from zkbroker.broker.report.synthetic import (
    SyntheticConfig,
    events,
    fast_line,
    to_record,
    write_with_capture,
)


def test_fast_lines_are_the_writers_lines() -> None:
    config = SyntheticConfig(lines=3000, runs=2, fault_rate=0.1, error_rate=0.2)
    kinds = set()
    for event in events(config):
        assert fast_line(event) == record_to_line(to_record(event))
        kinds.add(event.fault)
    assert kinds == {None, "error", "delay", "drop"}


def test_capture_hook_writes_schema_valid_lines(tmp_path: Path) -> None:
    items = list(events(SyntheticConfig(lines=300, runs=1, fault_rate=0.1)))
    path = tmp_path / "c.jsonl"
    assert write_with_capture(str(path), items) == 300
    lines = path.read_text().splitlines()
    assert len(lines) == 300
    for line in lines[:50]:
        assert validate(json.loads(line), CAPTURE_LINE_SCHEMA) == []


def test_same_seed_same_captures() -> None:
    config = SyntheticConfig(lines=500, seed=11)
    assert [fast_line(e) for e in events(config)] == [fast_line(e) for e in events(config)]
    other = SyntheticConfig(lines=500, seed=12)
    assert [fast_line(e) for e in events(config)] != [fast_line(e) for e in events(other)]
