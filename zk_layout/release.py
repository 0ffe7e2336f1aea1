"""Kafka releases as plain tuples of ints, and the comparisons the znode classes need.

A release is what the emulated broker "is": ``(2, 8)``, ``(0, 10, 1)``, ``(3, 4)``. It stands for
that release running with its default ``inter.broker.protocol.version``, so "IBP >= 2.7-IV0" in
Kafka's code becomes ``release_at_least(release, (2, 7))`` here. Trailing zeros do not matter:
``(2, 8)``, ``(2, 8, 0)`` and ``(2, 8, 0, 0)`` are the same release (plain tuple comparison would
order ``(2, 8) < (2, 8, 0)``, which is why the helpers normalise first).

This module does not know which releases exist or which APIs they serve, nor how a version
string maps to one: ``zkbroker.broker.protocol.releases`` does (``parse_release``).
"""

from __future__ import annotations

Release = tuple[int, ...]


def normalize_release(release: Release) -> Release:
    """Drop trailing zero components (keeping at least one)."""
    parts = list(release)
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def release_at_least(release: Release, minimum: Release) -> bool:
    """True if ``release`` is ``minimum`` or later."""
    return normalize_release(release) >= normalize_release(minimum)


def release_name(release: Release) -> str:
    """``(2, 8)`` -> ``"2.8"``; ``(0, 10, 1)`` -> ``"0.10.1"``."""
    return ".".join(str(p) for p in release)
