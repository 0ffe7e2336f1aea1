"""Every option of every `zkbroker` subcommand is named in the README, so the README's
tables and examples cannot fall behind the command."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

from zkbroker.broker.cli.main import build_parser

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def _options(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, (*path, name))
        else:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    yield f"{' '.join(path)} {option}"


def test_every_option_is_in_the_readme() -> None:
    missing = [
        named
        for named in _options(build_parser(), ("zkbroker",))
        if not re.search(rf"{re.escape(named.rsplit(' ', 1)[1])}(?![\w-])", README)
    ]
    assert missing == []
