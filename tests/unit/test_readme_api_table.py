"""README.md's API table ("What it emulates") is the one the handler registry renders
(`zkbroker.handlers.registry.readme_api_table`): keys and versions from the release history of
the default release, notes from each handler module's README_NOTE."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.releases import DEFAULT_RELEASE
from zkbroker.handlers.registry import HANDLERS, api_table, readme_api_table

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "readme_api_table.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_api_table", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_table_is_the_rendered_one() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start, end = _script().table_span(text)
    assert text[start:end] == readme_api_table(), (
        "README.md's API table differs from the handler registry: run "
        ".venv/bin/python scripts/readme_api_table.py (notes live in each handler's README_NOTE)"
    )


def test_one_row_per_advertised_key_with_its_versions() -> None:
    rows = readme_api_table().splitlines()[2:]
    ranges = api_table(DEFAULT_RELEASE).ranges
    assert len(rows) == len(ranges) == len(HANDLERS)
    for row, (key, (low, high)) in zip(rows, sorted(ranges.items()), strict=True):
        name, number, versions, note = row.strip("| ").split(" | ")
        assert (name, int(number)) == (HANDLERS[ApiKey(key)].name, key)
        assert versions == (str(low) if low == high else f"{low}\N{EN DASH}{high}")
        assert note == HANDLERS[ApiKey(key)].readme_note and "|" not in note and "\n" not in note


def test_the_script_replaces_only_the_table() -> None:
    text = "# Title\n\nbefore\n\n| API | key | versions | notes |\n|---|\n| old | 1 |\n\nafter\n"
    replaced = _script().with_table(text, "| API | key | versions | notes |\n| new |\n")
    assert replaced == "# Title\n\nbefore\n\n| API | key | versions | notes |\n| new |\n\nafter\n"
