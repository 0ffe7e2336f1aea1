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

from zkbroker.broker.protocol.releases import RELEASES, Release, parse_release, release_name

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


def int_between(minimum: int, maximum: int, what: str) -> Callable[[str], int]:
    """An integer within minimum..maximum; `what` names it in the error."""

    def argument(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
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


# The patch releases of each release line Apache published, as `--kafka-version` accepts them
# (a line's own name, such as 2.8, means its latest behaviour).
KAFKA_PATCH_RELEASES: dict[Release, tuple[int, ...]] = {
    (0, 10, 0): (0, 1),
    (0, 10, 1): (0, 1),
    (0, 10, 2): (0, 1, 2),
    (0, 11, 0): (0, 1, 2, 3),
    (1, 0): (0, 1, 2),
    (1, 1): (0, 1),
    (2, 0): (0, 1),
    (2, 1): (0, 1),
    (2, 2): (0, 1, 2),
    (2, 3): (0, 1),
    (2, 4): (0, 1),
    (2, 5): (0, 1),
    (2, 6): (0, 1, 2, 3),
    (2, 7): (0, 1, 2),
    (2, 8): (0, 1, 2),
    (3, 0): (0, 1, 2),
    (3, 1): (0, 1, 2),
    (3, 2): (0, 1, 2, 3),
    (3, 3): (1, 2),  # 3.3.0 was never published: 3.3.1 was the first
    (3, 4): (0, 1),
    (3, 5): (0, 1, 2),
    (3, 6): (0, 1, 2),
    (3, 7): (0, 1, 2),
    (3, 8): (0, 1),
    (3, 9): (0, 1),
}


def accepted_releases() -> str:
    """The accepted `--kafka-version` values, one line: each line and its patch range."""
    parts = []
    for line in RELEASES:
        name = release_name(line)
        patches = KAFKA_PATCH_RELEASES.get(line, ())
        parts.append(f"{name} ({name}.{patches[0]}-{patches[-1]})" if patches else name)
    return ", ".join(parts)


def kafka_release(text: str) -> Release:
    """A release line (`2.8`, `0.11.0`) or one of its published patch releases (`2.8.2`,
    `0.11.0.3`); ArgumentTypeError listing the accepted ones otherwise."""
    refused = argparse.ArgumentTypeError(
        f"unknown Kafka release {text!r}; accepted: {accepted_releases()}"
    )
    try:
        line = parse_release(text.strip())
    except ValueError:
        raise refused from None
    parts = tuple(int(p) for p in text.strip().split("."))
    if len(parts) > len(line) and parts[-1] not in KAFKA_PATCH_RELEASES.get(line, ()):
        raise refused
    return line
