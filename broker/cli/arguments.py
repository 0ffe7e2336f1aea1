"""Argument types shared by the `zkbroker` subcommands: each turns a string into a value or
raises `argparse.ArgumentTypeError` with a message that says what was expected, so argparse
prints it and exits 2.

Deliberately not here: the parsers themselves (`zkbroker.broker.cli.main`,
`zkbroker.broker.cli.fault_command`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def parsed_by(parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argument type from a parser that raises ValueError with a user-facing message."""

    def argument(text: str) -> T:
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    argument.__name__ = getattr(parse, "__name__", "value")  # argparse names it in errors
    return argument


def int_at_least(minimum: int, what: str | None = None) -> Callable[[str], int]:
    """An integer >= `minimum`; `what` names it in the error ("a broker id ...")."""
    expected = what or f"an integer >= {minimum}"

    def argument(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return argument


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def int_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


def key_value(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return name.strip(), value
