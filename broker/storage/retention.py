"""Which of a log's oldest segments retention deletes: those wholly below the log start
offset, those beyond ``retention.bytes``, those older than ``retention.ms``; never one holding
offsets at or past the high watermark, so the log start offset cannot pass it.

Follows Kafka's ``UnifiedLog.deletableSegments`` and the three deletions of
``deleteOldSegments`` (docs/kafka-behaviour.md §15). Each function counts segments from the
oldest and changes nothing. Not here: deleting them and moving the log start offset
(``partition_log``), when retention runs (``zkbroker.broker.engine.log_retention``).
"""

from __future__ import annotations

from collections.abc import Callable

from zkbroker.broker.storage.segment import Segment


def below_log_start(segments: list[Segment], log_start_offset: int, high_watermark: int) -> int:
    """How many segments lie wholly below ``log_start_offset`` (the next one starts at or
    below it)."""

    def breached(_seg: Segment, nxt: Segment | None) -> bool:
        return nxt is not None and nxt.base_offset <= log_start_offset

    return _deletable(segments, breached, high_watermark)


def over_retention_bytes(segments: list[Segment], retention_bytes: int, high_watermark: int) -> int:
    """How many of the oldest segments go so that the log keeps at most ``retention_bytes``
    (-1: unlimited), each one only if the log stays at or above the limit without it."""
    size = sum(seg.size for seg in segments)
    if retention_bytes < 0 or size < retention_bytes:
        return 0
    excess = size - retention_bytes

    def over_size(seg: Segment, _next: Segment | None) -> bool:
        nonlocal excess
        if excess - seg.size < 0:
            return False
        excess -= seg.size
        return True

    return _deletable(segments, over_size, high_watermark)


def past_retention_ms(
    segments: list[Segment], now_ms: int, retention_ms: int, high_watermark: int
) -> int:
    """How many of the oldest segments have a largest timestamp more than ``retention_ms``
    before ``now_ms`` (-1: unlimited)."""
    if retention_ms < 0:
        return 0

    def expired(seg: Segment, _next: Segment | None) -> bool:
        return now_ms - seg.largest_timestamp() > retention_ms

    return _deletable(segments, expired, high_watermark)


def _deletable(
    segments: list[Segment],
    predicate: Callable[[Segment, Segment | None], bool],
    high_watermark: int,
) -> int:
    """How many segments from the oldest the predicate deletes (Kafka's
    ``deletableSegments``: it stops at the first refusal, at an empty last segment and at
    the first segment whose offsets reach the high watermark)."""
    count = 0
    for n, seg in enumerate(segments):
        nxt = segments[n + 1] if n + 1 < len(segments) else None
        if nxt is not None:
            upper = nxt.base_offset
        else:
            upper = seg.base_offset if seg.last_offset is None else seg.last_offset + 1
        if upper > high_watermark or not predicate(seg, nxt) or (nxt is None and seg.size == 0):
            break
        count += 1
    return count
