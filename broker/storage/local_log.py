"""A partition's segments in offset order and where their bytes live: memory, or the segment
files of the partition's directory (Kafka's ``LocalLog`` over ``LogSegments``).

The segment-level half of a log: rolling a new segment, deleting the oldest, truncating from
the end (Kafka's ``LocalLog.truncateTo``: segments after the cut deleted, the one holding it
cut at a batch's start; each file deleted with a log line) and starting over at an offset
(``truncateFullyAndStartAt``), where a cleaning is written and swapping it in, and indexing the
files (at open, and what other processes appended).
docs/kafka-behaviour.md §15. Not here: the offsets a log keeps beyond its segments' (log start,
high watermark), the leader epoch cache, producer state, checkpoints and the partition lock
(``partition_log``); what a segment holds (``segment``); the directory's names (``partition_dir``).
"""

from __future__ import annotations

import bisect
import contextlib
import os
from pathlib import Path

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol.records import iter_batches
from zkbroker.broker.storage.log_reads import locate
from zkbroker.broker.storage.partition_dir import (
    cleaned_segment_path,
    segment_bases,
    segments_replaced,
    swap_in_cleaned,
)
from zkbroker.broker.storage.segment import (
    BatchListener,
    FileStore,
    MemoryStore,
    Segment,
    SegmentStore,
    first_offset_of,
    scan_store,
    segment_file_name,
)

_log = get_logger(__name__)


class LocalLog:
    """The segments of one partition, oldest first; the last one is the active segment. A
    log always holds at least one segment once built."""

    def __init__(self, topic: str, partition: int, directory: Path | None) -> None:
        self.topic = topic
        self.partition = partition
        self.directory = directory
        self.segments: list[Segment] = []
        # The segments' base offsets, for bisecting.
        self.bases: list[int] = []

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    def end_offset(self) -> int:
        """The offset after the active segment's last batch; an empty active segment's base
        offset (it was rolled at the log end, or is a new log's)."""
        last = self.active.last_offset
        return self.active.base_offset if last is None else last + 1

    def add(self, seg: Segment) -> None:
        self.segments.append(seg)
        self.bases.append(seg.base_offset)

    def new_store(self, base_offset: int) -> SegmentStore:
        if self.directory is None:
            return MemoryStore()
        return FileStore(self.directory / segment_file_name(base_offset))

    def roll(self, base_offset: int, now: int) -> Segment:
        seg = Segment(base_offset, self.new_store(base_offset), created_ms=now)
        self.add(seg)
        return seg

    def delete_oldest(self, count: int, end_offset: int, now: int) -> int:
        """Delete the ``count`` oldest segments (all of them: an empty one is rolled at
        ``end_offset`` first, a log keeps a segment); returns the bytes freed."""
        if count == len(self.segments):
            self.roll(end_offset, now)
        doomed = self.segments[:count]
        del self.segments[:count]
        del self.bases[:count]
        for seg in doomed:
            seg.store.delete()
        return sum(seg.size for seg in doomed)

    # -- truncation from the end -----------------------------------------------------------

    def truncate_to(self, offset: int, now: int) -> int:
        """Remove the batch holding ``offset`` and every later one: the segments whose base
        offset is ``offset`` or more are deleted, the one holding it is cut at the start of
        that batch (an empty segment is rolled there when none is left). Returns the new end
        offset, that batch's base offset (the end offset unchanged when no batch reaches
        ``offset``)."""
        found = locate(self.segments, self.bases, offset)
        if found is None:
            return self.end_offset()
        seg, i = found
        data = seg.read(seg.positions[i], seg.batch_end(i) - seg.positions[i])
        # Past a gap the leader's cleaner left, the batch found starts after ``offset``.
        cut = min(first_offset_of(next(iter(iter_batches(data)))), offset)
        keep = bisect.bisect_left(self.bases, offset)
        self._delete_newest(len(self.segments) - keep, "truncation")
        if not self.segments:
            self.roll(cut, now)
            return cut
        last = self.active
        # Batches from the cut on go; with none, the store is still cut to its size, which
        # gives a segment shared through a hard link a copy of its own before appends reach it.
        last.truncate_batches(bisect.bisect_left(last.last_offsets, cut))
        return self.end_offset()

    def start_over_at(self, offset: int, now: int) -> None:
        """Kafka's ``truncateFullyAndStartAt`` for the segments: every one deleted, one empty
        segment at ``offset`` left (created before the others go, so a crash midway leaves it)."""
        reused = [seg for seg in self.segments if seg.base_offset == offset]
        doomed = [seg for seg in self.segments if seg.base_offset != offset]
        self.segments, self.bases = reused, [seg.base_offset for seg in reused]
        if reused:
            reused[0].truncate_batches(0)
        else:
            self.roll(offset, now)
        for seg in reversed(doomed):
            self._delete_segment(seg, "truncated fully")

    def _delete_newest(self, count: int, reason: str) -> None:
        """Delete the ``count`` newest segments, newest first (a crash midway leaves a log
        without a hole)."""
        for _ in range(count):
            self.bases.pop()
            self._delete_segment(self.segments.pop(), reason)

    def _delete_segment(self, seg: Segment, reason: str) -> None:
        if isinstance(seg.store, FileStore):
            _log.info(
                "log.segment_deleted",
                topic=self.topic,
                partition=self.partition,
                file=str(seg.store.path),
                base_offset=seg.base_offset,
                reason=reason,
            )
        seg.store.delete()

    # -- the cleaner's swap ----------------------------------------------------------------

    def replace(
        self, old: list[Segment], cleaned: SegmentStore, last_modified_ms: int
    ) -> Segment | None:
        """Swap ``cleaned`` in for the contiguous non-active segments ``old`` (Kafka's
        ``LocalLog.replaceSegments``); None, changing nothing, when ``old`` are no longer
        such segments of this log (retention or truncation deleted or cut one, or another
        process cleaned or truncated meanwhile)."""
        try:
            first = next(n for n, seg in enumerate(self.segments) if seg is old[0])
        except StopIteration:
            return None
        if (
            first + len(old) >= len(self.segments)
            or any(a is not b for a, b in zip(self.segments[first:], old, strict=False))
            # Another process cleaning the same segments replaced (or recovery at its open
            # deleted) our `.cleaned` file: the segments are its to swap.
            or (isinstance(cleaned, FileStore) and cleaned.replaced_on_disk())
        ):
            return None
        cleaned.set_last_modified_ms(last_modified_ms)
        if isinstance(cleaned, FileStore):
            assert self.directory is not None
            swap_in_cleaned(self.directory, cleaned, old, last_modified_ms)
        else:
            for seg in old:
                seg.store.delete()
        new = Segment(old[0].base_offset, cleaned)
        scan_store(new)
        self.segments[first : first + len(old)] = [new]
        self.bases[first : first + len(old)] = [new.base_offset]
        return new

    def cleaned_store(self, base_offset: int) -> SegmentStore:
        """Where a cleaned group of segments is written before the swap: memory, or Kafka's
        ``<base>.log.cleaned`` file (written without the lock: nobody reads it)."""
        if self.directory is None:
            return MemoryStore()
        path = cleaned_segment_path(self.directory, base_offset)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return FileStore(path)

    # -- the directory's files -------------------------------------------------------------

    def changed_since(self, dir_stamp: int) -> bool | None:
        """Whether the directory's mtime is no longer ``dir_stamp`` or the active segment's
        file grew (another process wrote); None without the directory. A ``stat`` of each."""
        assert self.directory is not None
        try:
            stamp = os.stat(self.directory).st_mtime_ns
        except FileNotFoundError:
            return None
        return stamp != dir_stamp or self.active.store.size_on_store() > self.active.size

    def load(self, on_batch: BatchListener, *, trim: bool) -> bool:
        """(Re)build every segment's index from the directory's files; ``trim`` (lock held)
        cuts a partial batch at a file's end and, like Kafka's recovery, drops the segments
        after a damaged one. Without segment files, an empty segment at 0 is created and
        False returned."""
        assert self.directory is not None
        self.close()
        self.segments, self.bases = [], []
        bases = segment_bases(self.directory)
        for n, base in enumerate(bases):
            seg = Segment(base, FileStore(self.directory / segment_file_name(base)))
            self.add(seg)
            on_disk = scan_store(seg, on_batch)
            if seg.size < on_disk and trim:
                _log.warning(
                    "trimming a partial batch at a segment's end",
                    topic=self.topic,
                    partition=self.partition,
                    segment=base,
                    valid_bytes=seg.size,
                    file_bytes=on_disk,
                )
                seg.store.truncate(seg.size)
                for later in bases[n + 1 :]:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.directory / segment_file_name(later))
                break
        if self.segments:
            return True
        self.add(Segment(0, FileStore(self.directory / segment_file_name(0))))
        return False

    def catch_up(self, on_batch: BatchListener, *, trim: bool, dir_stamp: int) -> int | None:
        """Index what other processes did to the files since the directory's mtime was
        ``dir_stamp``: segments deleted from the start, batches appended, segments rolled.
        Returns how many segments went, or None when the files are not a continuation of
        what is indexed (the directory was replaced, or the cleaner rewrote segments): the
        caller loads them afresh. ``trim`` only with the lock held."""
        assert self.directory is not None
        bases = segment_bases(self.directory)
        if not bases:
            return 0  # directory being removed with its topic: keep what we have
        gone = 0
        while gone < len(self.segments) - 1 and self.bases[gone] < bases[0]:
            gone += 1
        if self.bases[gone:] != bases[: len(self.bases) - gone] or segments_replaced(
            self.directory, dir_stamp, self.segments[gone:-1]
        ):
            return None
        for seg in self.segments[:gone]:
            seg.store.close()
        del self.segments[:gone]
        del self.bases[:gone]
        first_to_scan = len(self.segments) - 1  # only the active one and new ones grow
        for base in bases[len(self.bases) :]:
            self.add(Segment(base, FileStore(self.directory / segment_file_name(base))))
        for seg in self.segments[first_to_scan:]:
            on_disk = scan_store(seg, on_batch)
            if seg.size < on_disk and trim:
                seg.store.truncate(seg.size)
        return gone

    def close(self) -> None:
        for seg in self.segments:
            seg.store.close()
