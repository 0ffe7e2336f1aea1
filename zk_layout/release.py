"""Kafka releases as plain tuples of ints, and the comparisons the znode classes need.

A release is what the emulated broker "is": ``(2, 8)``, ``(0, 10, 1)``, ``(3, 4)``. It stands for
that release running with its default ``inter.broker.protocol.version``, so "IBP >= 2.7-IV0" in
Kafka's code becomes ``release_at_least(release, (2, 7))`` here. Trailing zeros do not matter:
``(2, 8)``, ``(2, 8, 0)`` and ``(2, 8, 0, 0)`` are the same release (plain tuple comparison would
order ``(2, 8) < (2, 8, 0)``, which is why the helpers normalise first).

This module does not know which releases exist or which APIs they serve; the protocol layer does.
"""

from __future__ import annotations

import re

Release = tuple[int, ...]

_RELEASE_TEXT = re.compile(r"^\d+(\.\d+)*$")


def normalize_release(release: Release) -> Release:
    """Drop trailing zero components (keeping at least one)."""
    parts = list(release)
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def release_at_least(release: Release, minimum: Release) -> bool:
    """True if ``release`` is ``minimum`` or later."""
    return normalize_release(release) >= normalize_release(minimum)


def parse_release(text: str) -> Release:
    """``"2.8.1"`` -> ``(2, 8, 1)``. Kafka's IBP suffixes (``"2.7-IV0"``) are not accepted:
    the emulator works in whole releases."""
    if not _RELEASE_TEXT.match(text):
        raise ValueError(f"not a Kafka release number: {text!r}")
    return tuple(int(p) for p in text.split("."))


def format_release(release: Release) -> str:
    return ".".join(str(p) for p in release)
