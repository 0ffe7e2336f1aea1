#!/usr/bin/env python3
"""Write README.md's API table ("What it emulates") from the handler registry.

Usage (from the repo root)::

    .venv/bin/python scripts/readme_api_table.py [--check]

The table is `zkbroker.handlers.registry.readme_api_table()`: a row per API key the default
release advertises, its versions from the release history (`zkbroker.broker.protocol.releases`)
and its notes from the handler module's `README_NOTE`. `--check` compares instead of writing
and exits 1 on a difference (tests/unit/test_readme_api_table.py does the same).

Not here: the rest of README.md, which is written by hand.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from zkbroker.handlers.registry import README_TABLE_HEADER, readme_api_table  # noqa: E402

README = REPO_ROOT / "README.md"


def table_span(text: str) -> tuple[int, int]:
    """Where the API table is in `text`: from its header line to the end of its last row."""
    start = text.find(README_TABLE_HEADER[0] + "\n")
    if start < 0:
        raise ValueError(f"README.md has no API table (a line {README_TABLE_HEADER[0]!r})")
    end = start
    while text.startswith("|", end):
        end = text.index("\n", end) + 1
    return start, end


def with_table(text: str, table: str) -> str:
    """`text` with its API table replaced by `table`."""
    start, end = table_span(text)
    return text[:start] + table + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    wanted = with_table(text, readme_api_table())
    if args.check:
        if wanted != text:
            print(f"{README}: the API table differs from the handler registry", file=sys.stderr)
            return 1
        return 0
    if wanted != text:
        README.write_text(wanted, encoding="utf-8")
        print(f"wrote the API table of {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
