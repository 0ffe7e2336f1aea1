"""Reads over a partition's segments: whole batches from an offset (Fetch), and the records
ListOffsets looks up by timestamp and by the largest timestamp.

Follows Kafka's ``LocalLog.read``, ``UnifiedLog.fetchOffsetByTimestamp`` and
``searchOffsetInLocalLog`` (docs/kafka-behaviour.md §15, KIP-734 for MAX_TIMESTAMP). Each
function reads the segments it is given and changes nothing. Not here: the range checks
against the log start and end offsets, and the lock (``partition_log``).
"""

from __future__ import annotations

import bisect

from zkbroker.broker.protocol.records import iter_batches
from zkbroker.broker.storage.segment import Segment
from zkbroker.broker.storage.types import UNDEFINED_EPOCH, TimestampOffset


def locate(segments: list[Segment], bases: list[int], offset: int) -> tuple[Segment, int] | None:
    """The segment and index of the first batch whose last offset is >= ``offset``
    (``bases``: the segments' base offsets)."""
    s = max(bisect.bisect_right(bases, offset) - 1, 0)
    while s < len(segments):
        seg = segments[s]
        i = bisect.bisect_left(seg.last_offsets, offset)
        if i < seg.batch_count:
            return seg, i
        s += 1
    return None


def read_from(
    segments: list[Segment],
    bases: list[int],
    offset: int,
    max_bytes: int,
    min_one_batch: bool,
    max_offset: int | None = None,
) -> bytes:
    """Whole batches from the one holding ``offset``, at most ``max_bytes`` of them, all from
    one segment; the first batch whole when it alone exceeds ``max_bytes`` and
    ``min_one_batch``; b"" past the last batch. With ``max_offset``, only batches whose last
    offset is below it (Kafka's ``maxOffsetMetadata``: a consumer reads up to the high
    watermark)."""
    found = locate(segments, bases, offset)
    if found is None:
        return b""
    seg, i = found
    if max_offset is not None and seg.last_offsets[i] >= max_offset:
        return b""
    start = seg.positions[i]
    first_end = seg.batch_end(i)
    limit = start + max(max_bytes, 0)
    if first_end > limit:
        return seg.read(start, first_end - start) if min_one_batch else b""
    if max_offset is not None:
        # Where the first batch reaching max_offset starts: a batch boundary.
        stop = bisect.bisect_left(seg.last_offsets, max_offset, lo=i)
        limit = min(limit, seg.positions[stop] if stop < seg.batch_count else seg.size)
    # The last batch boundary at or below the limit: batch k ends where k+1 starts.
    k = bisect.bisect_right(seg.positions, limit, lo=i + 1)
    end = seg.size if k == seg.batch_count and seg.size <= limit else seg.positions[k - 1]
    return seg.read(start, end - start)


def first_at_timestamp(
    segments: list[Segment], log_start_offset: int, timestamp_ms: int
) -> TimestampOffset | None:
    """The first record at or after ``log_start_offset`` whose timestamp is >=
    ``timestamp_ms``, searched in the first segment whose largest timestamp reaches it;
    batches whose max timestamp is below the target are skipped without decoding. None when
    no record qualifies."""
    # Cleaning can leave a segment empty: it holds no timestamp to find.
    seg = next(
        (s for s in segments if s.batch_count > 0 and s.largest_timestamp() >= timestamp_ms),
        None,
    )
    if seg is None or seg.batch_count == 0:
        return None
    first = bisect.bisect_left(seg.last_offsets, log_start_offset)
    max_ts = seg.max_timestamps
    for i in range(first, seg.batch_count):
        if max_ts[i] < timestamp_ms:
            continue
        data = seg.read(seg.positions[i], seg.batch_end(i) - seg.positions[i])
        batch = next(iter(iter_batches(data)))
        for record in batch.records():
            if record.timestamp >= timestamp_ms and record.offset >= log_start_offset:
                return TimestampOffset(record.offset, record.timestamp, _epoch_of(seg, i))
    return None


def earliest_max_timestamp(segments: list[Segment]) -> TimestampOffset | None:
    """The earliest record carrying the largest timestamp (Kafka 3.x: the first segment with
    the largest max timestamp, its first batch reaching it, that batch's first record with
    it), with its batch's leader epoch. None without segments or for magic 0 batches."""
    best: Segment | None = None
    for seg in segments:
        if best is None or seg.max_timestamp > best.max_timestamp:
            best = seg
    if best is None:
        return None
    target = best.max_timestamp
    for i in range(best.batch_count):
        if best.max_timestamps[i] != target:
            continue
        if best.magics[i] == 0:
            return None
        data = best.read(best.positions[i], best.batch_end(i) - best.positions[i])
        batch = next(iter(iter_batches(data)))
        for record in batch.records():
            if record.timestamp == target:
                return TimestampOffset(record.offset, target, _epoch_of(best, i))
        return None
    return None


def _epoch_of(seg: Segment, i: int) -> int:
    """The leader epoch of batch ``i`` of ``seg``; -1 when it has none."""
    epoch = seg.epochs[i]
    return epoch if epoch >= 0 else UNDEFINED_EPOCH
