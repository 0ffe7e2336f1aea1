"""One log segment: where its bytes live (memory or a `.log` file) and its batch index.

A segment holds whole batches from `base_offset` on. Its index is dense and in memory: four
arrays and a bytearray, one slot per batch (about 29 bytes: position, last offset, max
timestamp, leader epoch, magic), which answers what Kafka's sparse `.index` / `.timeindex`
files answer (docs/kafka-behaviour.md §15), exactly and without one object per batch.
`MemoryStore` keeps the bytes in chunks (a large append as the very bytes object it was
given), `FileStore` in Kafka's `<base offset>.log` (`os.write`, `os.pread`; a file hard-linked
into another log dir is copied before it is cut); `scan_store` indexes what a store holds
beyond its index, stopping at a partial batch (only a lock holder may trim it);
`Segment.truncate_batches` cuts a segment at a batch's start. `first_offset_of` and
`batch_span` read the offsets stored batches carry (a follower appends them as they are).

Not here: CRC checks at scan (zkbroker trusts its own writes), `.index` / `.timeindex` /
`.txnindex` / `.snapshot` files, roll decisions and offsets across segments (`local_log`,
`partition_log`).
"""

from __future__ import annotations

import bisect
import contextlib
import os
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from zkbroker.broker.asyncutil import now_ms
from zkbroker.broker.protocol.records import (
    MAGIC_V2,
    NO_TIMESTAMP,
    Batch,
    CorruptRecordError,
    RecordBatchV2,
    iter_batches,
)
from zkbroker.broker.protocol.records.constants import LOG_OVERHEAD

#: How much of a file one scan step reads (a batch larger than this is read whole).
SCAN_CHUNK: Final = 1 << 20
#: Where `FileStore.truncate` writes a private copy of a hard-linked segment before renaming it
#: over the link (the loader ignores the name: it does not end in ``.log``).
UNSHARE_SUFFIX: Final = ".unshare"
_I32_MAX: Final = 2**31 - 1


def segment_file_name(base_offset: int) -> str:
    """Kafka's ``LogFileUtils.logFile`` name: the base offset as 20 digits, ``.log``."""
    return f"{base_offset:020d}.log"


def parse_segment_file_name(name: str) -> int | None:
    stem, dot, ext = name.partition(".")
    if ext != "log" or not dot or len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


class SegmentStore(Protocol):
    def size_on_store(self) -> int: ...
    def write(self, data: bytes) -> None: ...
    def read(self, position: int, length: int) -> bytes: ...
    def truncate(self, size: int) -> None: ...
    def last_modified_ms(self) -> int: ...
    def set_last_modified_ms(self, ms: int) -> None: ...
    def close(self) -> None: ...
    def delete(self) -> None: ...


class MemoryStore:
    """A segment's bytes in memory, as a list of chunks.

    A large append (a produced batch) is kept as the bytes object it arrived in, so nothing
    is copied again: a growing ``bytearray`` would copy the whole segment on every
    reallocation, several copies per byte stored. Small appends are gathered in a bytearray
    chunk up to `GATHER_LIMIT`, so a stream of one-record batches does not cost an object
    per batch.
    """

    __slots__ = ("_chunks", "_ends", "_modified_ms")

    #: Appends below this size go into the last chunk when it is a bytearray under it.
    GATHER_LIMIT: Final = 1 << 16

    def __init__(self) -> None:
        self._chunks: list[bytes | bytearray] = []
        # _ends[i]: the store position just after chunk i (a running total).
        self._ends: list[int] = []
        self._modified_ms = now_ms()

    def size_on_store(self) -> int:
        return self._ends[-1] if self._ends else 0

    def write(self, data: bytes) -> None:
        if not data:
            return
        size = len(data)
        chunks, ends = self._chunks, self._ends
        last = chunks[-1] if chunks else None
        if (
            size < self.GATHER_LIMIT
            and isinstance(last, bytearray)
            and len(last) + size <= self.GATHER_LIMIT
        ):
            last += data
            ends[-1] += size
        else:
            chunks.append(bytearray(data) if size < self.GATHER_LIMIT else bytes(data))
            ends.append((ends[-1] if ends else 0) + size)
        self._modified_ms = now_ms()

    def read(self, position: int, length: int) -> bytes:
        chunks, ends = self._chunks, self._ends
        stop = min(position + length, ends[-1] if ends else 0)
        if stop <= position:
            return b""
        i = bisect.bisect_right(ends, position)
        start_of = ends[i - 1] if i else 0
        if stop <= ends[i]:  # the usual case: inside one chunk
            return bytes(chunks[i][position - start_of : stop - start_of])
        pieces = []
        while position < stop:
            chunk_start = ends[i - 1] if i else 0
            take = min(stop, ends[i]) - position
            pieces.append(memoryview(chunks[i])[position - chunk_start :][:take])
            position += take
            i += 1
        return b"".join(pieces)

    def truncate(self, size: int) -> None:
        chunks, ends = self._chunks, self._ends
        while ends and ends[-1] > size:
            start = ends[-2] if len(ends) > 1 else 0
            if start >= size:
                chunks.pop()
                ends.pop()
                continue
            chunks[-1] = chunks[-1][: size - start]
            ends[-1] = size

    def last_modified_ms(self) -> int:
        return self._modified_ms

    def set_last_modified_ms(self, ms: int) -> None:
        self._modified_ms = ms

    def close(self) -> None:
        pass

    def delete(self) -> None:
        self._chunks = []
        self._ends = []


class FileStore:
    """A ``.log`` file. Appends go through an ``O_APPEND`` descriptor: the caller holds the
    partition's flock, so the end of the file is where this process's index ends."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)

    def size_on_store(self) -> int:
        return os.fstat(self._fd).st_size

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def read(self, position: int, length: int) -> bytes:
        return os.pread(self._fd, length, position)

    def truncate(self, size: int) -> None:
        """Cut the file to ``size`` bytes. A file shared with another log dir through a hard
        link (a sealed segment `adopt_shared_layout` linked into each broker's dir) is first
        replaced by a private copy of its first ``size`` bytes, so neither the cut nor the
        appends that may follow (truncation can make it the active segment) reach the others."""
        st = os.fstat(self._fd)
        if st.st_nlink <= 1:
            os.ftruncate(self._fd, size)
            return
        tmp = self.path.with_name(self.path.name + UNSHARE_SUFFIX)
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            done = 0
            while done < size:
                chunk = os.pread(self._fd, min(SCAN_CHUNK, size - done), done)
                if not chunk:
                    break
                os.write(out, chunk)
                done += len(chunk)
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(out)
        os.replace(tmp, self.path)
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND)

    def last_modified_ms(self) -> int:
        return os.fstat(self._fd).st_mtime_ns // 1_000_000

    def set_last_modified_ms(self, ms: int) -> None:
        ns = ms * 1_000_000
        os.utime(self._fd, ns=(ns, ns))

    def replaced_on_disk(self) -> bool:
        """Whether the path now names another file than the one open (the log cleaner
        swapped a rewritten segment in, or the file is gone)."""
        try:
            return os.stat(self.path).st_ino != os.fstat(self._fd).st_ino
        except (FileNotFoundError, OSError):
            return True

    def rename(self, path: Path) -> None:
        """Rename the file (the descriptor stays valid)."""
        os.replace(self.path, path)
        self.path = path

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        # Another process sharing the dir may have deleted it first.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


@dataclass(eq=False)
class Segment:
    """A store and the index of the whole batches it holds, in offset order."""

    base_offset: int
    store: SegmentStore
    positions: array[int] = field(default_factory=lambda: array("q"))
    last_offsets: array[int] = field(default_factory=lambda: array("q"))
    max_timestamps: array[int] = field(default_factory=lambda: array("q"))
    epochs: array[int] = field(default_factory=lambda: array("i"))
    magics: bytearray = field(default_factory=bytearray)
    size: int = 0
    """Bytes of whole, indexed batches (the file may hold more: another process's append)."""
    max_timestamp: int = NO_TIMESTAMP
    """Kafka's ``maxTimestampSoFar``: the largest batch max timestamp in the segment."""
    rolling_timestamp: int | None = None
    """Kafka's ``rollingBasedTimestamp``: the first batch's max timestamp, for segment.ms."""
    created_ms: int = field(default_factory=now_ms)

    @property
    def batch_count(self) -> int:
        return len(self.positions)

    @property
    def last_offset(self) -> int | None:
        return self.last_offsets[-1] if self.last_offsets else None

    def batch_end(self, i: int) -> int:
        return self.positions[i + 1] if i + 1 < len(self.positions) else self.size

    def largest_timestamp(self) -> int:
        """Kafka's ``LogSegment.largestTimestamp``: the max timestamp, else the file's mtime."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.store.last_modified_ms()

    def index_bytes(
        self, data: bytes | memoryview, position: int, on_batch: BatchListener | None = None
    ) -> int:
        """Index the whole batches of ``data``, which sits at ``position`` in the store;
        returns how many bytes they cover (a partial batch at the end is left out)."""
        covered = 0
        for batch in iter_batches(data):
            size = batch.size_in_bytes
            if isinstance(batch, RecordBatchV2):
                base, epoch = batch.base_offset, batch.partition_leader_epoch
            else:
                base, epoch = batch.offset, -1
            last, max_ts, magic = batch.last_offset, batch.max_timestamp, batch.magic
            self.positions.append(position + covered)
            self.last_offsets.append(last)
            self.max_timestamps.append(max_ts)
            self.epochs.append(epoch)
            self.magics.append(magic)
            if self.rolling_timestamp is None:
                self.rolling_timestamp = max_ts
            if max_ts > self.max_timestamp:
                self.max_timestamp = max_ts
            if on_batch is not None:
                on_batch(batch, base, epoch)
            covered += size
            # Per batch, so a corrupt header further on leaves the good prefix indexed.
            self.size = position + covered
        return covered

    def read(self, position: int, length: int) -> bytes:
        return self.store.read(position, length)

    def truncate_batches(self, n: int) -> None:
        """Drop batch ``n`` and every later one, from the store and the index (Kafka's
        ``LogSegment.truncateTo`` at a batch's start)."""
        position = self.positions[n] if n < self.batch_count else self.size
        self.store.truncate(position)
        del self.positions[n:]
        del self.last_offsets[n:]
        del self.max_timestamps[n:]
        del self.epochs[n:]
        del self.magics[n:]
        self.size = position
        self.max_timestamp = max(self.max_timestamps, default=NO_TIMESTAMP)
        if n == 0:
            self.rolling_timestamp = None

    def should_roll(
        self,
        size: int,
        max_timestamp: int,
        last_offset: int,
        now: int,
        segment_bytes: int,
        segment_ms: int,
    ) -> bool:
        """Kafka's ``LogSegment.shouldRoll``: whether an append of ``size`` bytes up to
        ``last_offset`` goes to a new segment, this one passing ``segment_bytes`` or older
        than ``segment_ms`` (from its first batch's max timestamp, else its creation at
        ``now``'s clock)."""
        if self.size == 0:
            return False  # Kafka would recreate the same empty segment
        if self.size > segment_bytes - size:
            return True
        rolling = self.rolling_timestamp
        if rolling is not None and rolling >= 0:
            waited = max_timestamp - rolling
        else:
            waited = now - self.created_ms
        return waited > segment_ms or self.offset_overflows(last_offset)

    def offset_overflows(self, last_offset: int) -> bool:
        """Kafka rolls when an offset no longer fits the index's relative int32."""
        return last_offset - self.base_offset > _I32_MAX


#: Told (batch, base offset, partition leader epoch) of each newly indexed batch.
BatchListener = Callable[[Batch, int, int], None]


def scan_store(segment: Segment, on_batch: BatchListener | None = None) -> int:
    """Index what the store holds past ``segment.size``; returns the store's size, so the
    caller sees whether a partial batch remains (``segment.size < returned``).

    Cost is proportional to the new batches' count (headers only), read ``SCAN_CHUNK`` at a
    time. A corrupt header ends the scan as a partial batch would.
    """
    end = segment.store.size_on_store()
    while segment.size < end:
        pos = segment.size
        chunk = segment.read(pos, min(SCAN_CHUNK, end - pos))
        try:
            covered = segment.index_bytes(chunk, pos, on_batch)
        except CorruptRecordError:
            return end
        if covered == 0:
            # One batch larger than the chunk: read exactly it, if it is all there.
            if len(chunk) < LOG_OVERHEAD:
                return end
            need = int.from_bytes(chunk[8:12], "big", signed=True) + LOG_OVERHEAD
            if need <= len(chunk) or pos + need > end:
                return end
            try:
                covered = segment.index_bytes(segment.read(pos, need), pos, on_batch)
            except CorruptRecordError:
                return end
            if covered == 0:
                return end
    return end


def is_v2(magic: int) -> bool:
    return magic >= MAGIC_V2


def first_offset_of(batch: Batch) -> int:
    """The first offset a stored batch holds: a v2 batch's base offset; a legacy entry's own
    offset, or for a compressed wrapper (which carries its last inner offset) its first inner
    record's, which takes decompressing it."""
    if isinstance(batch, RecordBatchV2):
        return batch.base_offset
    if batch.is_compressed:
        return batch.records()[0].offset
    return batch.offset


def batch_span(batches: Sequence[Batch]) -> tuple[int, int, int]:
    """(first offset, last offset, largest max timestamp) of batches stored one after the
    other. ValueError when their offsets do not increase from batch to batch (Kafka's
    ``OffsetsOutOfOrderException``)."""
    first = first_offset_of(batches[0])
    last = first - 1
    for batch in batches:
        start = batch.base_offset if isinstance(batch, RecordBatchV2) else batch.last_offset
        if start <= last or batch.last_offset < start:
            raise ValueError(f"out of order offsets in the batches from offset {first}")
        last = batch.last_offset
    return first, last, max(batch.max_timestamp for batch in batches)
