"""Argument types shared by the `zkbroker` subcommands: each turns a string into a value or
raises `argparse.ArgumentTypeError` with a message that says what was expected, so argparse
prints it and exits 2.

Light on purpose: parsing imports nothing of zkbroker beyond the standard library, so a refused
command line returns at once. The release lines `--kafka-version` accepts are therefore the
keys of `KAFKA_PATCH_RELEASES` here, not `zkbroker.broker.protocol.releases.RELEASES` (whose
import loads the codec); a unit test holds the two equal, and `Settings` checks the release
again.

Deliberately not here: the parsers themselves (`zkbroker.broker.cli.main`,
`zkbroker.broker.cli.run_options`, `zkbroker.broker.cli.fault_command`).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from zkbroker.zk_layout.release import Release

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


# Every release line zkbroker emulates, oldest first, with the patch releases of each that
# Apache published, as `--kafka-version` accepts them (a line's own name, such as 2.8, means its
# latest behaviour). The lines are `zkbroker.broker.protocol.releases.RELEASES`.
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
#: What `--kafka-version` defaults to: the newest line, the last with ZooKeeper mode
#: (`zkbroker.broker.protocol.releases.DEFAULT_RELEASE`).
DEFAULT_KAFKA_RELEASE: Release = max(KAFKA_PATCH_RELEASES)

_VERSION_RE = re.compile(r"(?:0|[1-9][0-9]*)(?:\.(?:0|[1-9][0-9]*))*")


def release_text(release: Release) -> str:
    """`(2, 8)` -> `2.8`, as Kafka names its releases."""
    return ".".join(str(part) for part in release)


def accepted_releases() -> str:
    """The accepted `--kafka-version` values, one line: each line and its patch range."""
    parts = []
    for line, patches in KAFKA_PATCH_RELEASES.items():
        name = release_text(line)
        parts.append(f"{name} ({name}.{patches[0]}-{patches[-1]})" if patches else name)
    return ", ".join(parts)


def kafka_release(text: str) -> Release:
    """A release line (`2.8`, `0.11.0`) or one of its published patch releases (`2.8.2`,
    `0.11.0.3`); ArgumentTypeError listing the accepted ones otherwise."""
    version = text.strip()
    if _VERSION_RE.fullmatch(version) is not None:
        parts = tuple(int(p) for p in version.split("."))
        # 0.x lines are named by three numbers (0.10.1), later ones by two (2.8); one more
        # number is the patch release.
        line = parts[: 3 if parts[0] == 0 else 2]
        patches = KAFKA_PATCH_RELEASES.get(line)
        patch = parts[len(line) :]
        if patches is not None and (not patch or (len(patch) == 1 and patch[0] in patches)):
            return line
    raise argparse.ArgumentTypeError(
        f"unknown Kafka release {text!r}; accepted: {accepted_releases()}"
    )
