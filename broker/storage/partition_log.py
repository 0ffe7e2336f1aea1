"""The log of one partition: ordered segments of stored batches, shared by every replica
(Kafka's `UnifiedLog`/`LocalLog`/`LogSegment`; behaviour: §15, transactions §17).

Two backends behind one class: memory, or a directory in Kafka's layout that several
processes may share (an exclusive `flock` serialises appends, DeleteRecords, retention and
cleaning; whoever locks first indexes what the others appended). Opening scans every batch
header to rebuild the index and epoch cache, trimming a partial last batch. Not here: the
directory's names, lock and files (``partition_dir``), searching the segments for reads
(``log_reads``), which segments retention deletes (``retention``), replication,
`.index`/`.timeindex`/`.txnindex`/snapshot files (rebuilt by scanning), tiered storage,
fsync, and the API rules handlers check.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from zkbroker.broker.asyncutil import now_ms
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol.records import Batch, RecordBatchV2, read_batches
from zkbroker.broker.protocol.releases import DEFAULT_RELEASE
from zkbroker.broker.rules.producer_state import ProducerStateTable
from zkbroker.broker.storage.epoch_cache import LeaderEpochCache
from zkbroker.broker.storage.files import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LogStartOffsetCheckpoint,
    read_leader_epoch_checkpoint,
    read_partition_metadata,
    write_leader_epoch_checkpoint,
    write_partition_metadata,
)
from zkbroker.broker.storage.log_reads import (
    earliest_max_timestamp,
    first_at_timestamp,
    read_from,
)
from zkbroker.broker.storage.partition_dir import (
    cleaned_segment_path,
    discard_cleaned,
    lock_own_partition_dir,
    partition_dir_name,
    recover_swaps,
    segment_bases,
    segments_replaced,
    swap_in_cleaned,
)
from zkbroker.broker.storage.retention import (
    below_log_start,
    over_retention_bytes,
    past_retention_ms,
)
from zkbroker.broker.storage.segment import (
    FileStore,
    MemoryStore,
    Segment,
    SegmentStore,
    is_v2,
    scan_store,
    segment_file_name,
)
from zkbroker.broker.storage.transactions import AbortedTxn, PartitionTransactions
from zkbroker.broker.storage.types import UNDEFINED_EPOCH, OffsetOutOfRange, TimestampOffset
from zkbroker.zk_layout.release import Release

_log = get_logger(__name__)

DEFAULT_SEGMENT_BYTES = 1 << 30
DEFAULT_SEGMENT_MS = 7 * 24 * 3600 * 1000


class PartitionLog:
    """One partition's log. Build with `in_memory` or `open_dir`; every method runs on the
    event loop thread and returns after at most one file operation per touched segment,
    except opening and refreshing, which scan new batch headers."""

    def __init__(
        self,
        topic: str,
        partition: int,
        topic_id: uuid.UUID | None,
        *,
        directory: Path | None,
        checkpoint: LogStartOffsetCheckpoint | None,
        segment_bytes: int,
        segment_ms: int,
        on_append: Callable[[], None] | None,
        cleaner_checkpoint: LogStartOffsetCheckpoint | None = None,
        release: Release = DEFAULT_RELEASE,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self.segment_bytes = segment_bytes
        self.segment_ms = segment_ms
        self.directory = directory
        self._checkpoint = checkpoint
        self._cleaner_checkpoint = cleaner_checkpoint
        # In memory, the cleaner's first dirty offset (on disk: `cleaner-offset-checkpoint`).
        self._first_dirty_offset: int | None = None
        self._on_append = on_append
        self._segments: list[Segment] = []
        self._bases: list[int] = []
        self._log_start_offset = 0
        self._log_end_offset = 0
        self._epochs = LeaderEpochCache()
        # Idempotent producers' sequences (`zkbroker.broker.rules.producer_state`), kept by the
        # index.
        self.producers = ProducerStateTable(release)
        # Ongoing and aborted transactions (`zkbroker.broker.storage.transactions`), kept by the
        # index.
        self.transactions = PartitionTransactions()
        self._lock_fd = -1
        self._lock_depth = 0
        self._dir_stamp = 0
        self._closed = False

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def in_memory(
        cls,
        topic: str,
        partition: int,
        topic_id: uuid.UUID | None,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        segment_ms: int = DEFAULT_SEGMENT_MS,
        on_append: Callable[[], None] | None = None,
        release: Release = DEFAULT_RELEASE,
    ) -> PartitionLog:
        log = cls(
            topic,
            partition,
            topic_id,
            directory=None,
            checkpoint=None,
            segment_bytes=segment_bytes,
            segment_ms=segment_ms,
            on_append=on_append,
            release=release,
        )
        log._add_segment(Segment(0, MemoryStore()))
        return log

    @classmethod
    def open_dir(
        cls,
        log_dir: Path,
        topic: str,
        partition: int,
        topic_id: uuid.UUID | None,
        *,
        checkpoint: LogStartOffsetCheckpoint | None = None,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        segment_ms: int = DEFAULT_SEGMENT_MS,
        on_append: Callable[[], None] | None = None,
        cleaner_checkpoint: LogStartOffsetCheckpoint | None = None,
        release: Release = DEFAULT_RELEASE,
    ) -> PartitionLog:
        """Open (or create) ``<log_dir>/<topic>-<partition>``. A directory whose
        ``partition.metadata`` names another topic id is renamed aside (``-stray``, see the
        module's docstring) and the log starts empty."""
        directory = log_dir / partition_dir_name(topic, partition)
        checkpoint = checkpoint or LogStartOffsetCheckpoint(log_dir)
        cleaner_checkpoint = cleaner_checkpoint or LogStartOffsetCheckpoint(
            log_dir, CLEANER_OFFSET_CHECKPOINT_FILE
        )
        lock_fd = lock_own_partition_dir(
            directory, topic, partition, topic_id, (checkpoint, cleaner_checkpoint)
        )
        log = cls(
            topic,
            partition,
            topic_id,
            directory=directory,
            checkpoint=checkpoint,
            segment_bytes=segment_bytes,
            segment_ms=segment_ms,
            on_append=on_append,
            cleaner_checkpoint=cleaner_checkpoint,
            release=release,
        )
        log._lock_fd = lock_fd  # held since the topic id check
        try:
            log._lock_depth = 1
            try:
                log._open_locked()
            finally:
                log._lock_depth = 0
                fcntl.flock(log._lock_fd, fcntl.LOCK_UN)
        except BaseException:
            log.close()
            raise
        return log

    def _open_locked(self) -> None:
        assert self.directory is not None and self._checkpoint is not None
        stored_id = read_partition_metadata(self.directory)
        recover_swaps(self.directory, self.topic, self.partition)
        self._load_segments(trim=True)
        if self.topic_id is not None and stored_id != self.topic_id:
            write_partition_metadata(self.directory, self.topic_id)
        self._stamp_directory()

    def _load_segments(self, *, trim: bool) -> None:
        """(Re)build every segment's index from the files; ``trim`` (lock held) cuts a
        partial batch at a file's end and, like Kafka's recovery, drops the segments after
        a damaged one."""
        assert self.directory is not None and self._checkpoint is not None
        for seg in self._segments:
            seg.store.close()
        self._segments, self._bases = [], []
        self._epochs.clear()
        # Written by the cleaner: where epochs started whose first batches it dropped. The
        # batch headers scanned next only add newer epochs.
        for epoch, start in read_leader_epoch_checkpoint(self.directory):
            with contextlib.suppress(ValueError):
                self._epochs.assign(epoch, start)
        bases = segment_bases(self.directory)
        for n, base in enumerate(bases):
            seg = Segment(base, FileStore(self.directory / segment_file_name(base)))
            self._add_segment(seg)
            on_disk = scan_store(seg, self._on_batch)
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
        if not self._segments:
            # A new log starts at 0; a checkpoint entry left by an earlier topic is stale.
            self._add_segment(Segment(0, FileStore(self.directory / segment_file_name(0))))
            if trim and self._checkpoint.get(self.topic, self.partition) is not None:
                self._checkpoint.update({(self.topic, self.partition): None})
        self._log_end_offset = self._compute_log_end_offset()
        if self._log_end_offset < self.producers.synced_to:
            # Another log under the same name (recreated topic): its producers are not ours.
            self.producers = ProducerStateTable(self.producers.release)
            self.transactions = PartitionTransactions()
            for seg in self._segments:
                scan_from = Segment(seg.base_offset, seg.store)
                scan_store(scan_from, self._observe_producer)
        elif self._log_end_offset < self.transactions.synced_to:
            self.transactions = PartitionTransactions()
            for seg in self._segments:
                scan_store(Segment(seg.base_offset, seg.store), self._observe_transactional)
        self._log_start_offset = self._segments[0].base_offset
        self._refresh_log_start_offset()

    # -- state -----------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        """The next offset to assign."""
        return self._log_end_offset

    @property
    def high_watermark(self) -> int:
        """Every replica reads this log, so everything appended is replicated."""
        return self._log_end_offset

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed consumers stop: the first open transaction's first offset,
        else the high watermark (Kafka's ``UnifiedLog.lastStableOffset``)."""
        return self.transactions.last_stable_offset(self._log_end_offset)

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound_offset) (Kafka's
        ``UnifiedLog.collectAbortedTransactions``)."""
        return self.transactions.aborted_transactions(fetch_offset, upper_bound_offset)

    @property
    def size_bytes(self) -> int:
        return sum(seg.size for seg in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    @property
    def segment_base_offsets(self) -> list[int]:
        return list(self._bases)

    @property
    def latest_epoch(self) -> int | None:
        """The leader epoch of the latest epoch cache entry (Kafka's ``latestEpoch``)."""
        return self._epochs.latest_epoch

    def epoch_entries(self) -> list[tuple[int, int]]:
        """The leader epoch cache: (epoch, start offset), oldest first."""
        return self._epochs.entries()

    def epoch_for_offset(self, offset: int) -> int:
        """The leader epoch the cache says ``offset`` was written in; -1 when unknown."""
        epoch = self._epochs.epoch_for_offset(offset)
        return UNDEFINED_EPOCH if epoch is None else epoch

    def segment_points(self) -> list[tuple[int, int]]:
        """(first offset, last modified ms) of each segment, oldest first: what Kafka's
        ``legacyFetchOffsetsBefore`` (ListOffsets v0) lists, the first offset raised to the
        log start offset."""
        lso = self._log_start_offset
        return [(max(s.base_offset, lso), s.store.last_modified_ms()) for s in self._segments]

    def earliest_epoch(self) -> int | None:
        """ListOffsets EARLIEST's leader epoch: the first cached epoch when it starts at or
        below the log start offset (Kafka's ``fetchOffsetByTimestamp``), else None."""
        entry = self._epochs.earliest_entry
        if entry is not None and entry[1] <= self._log_start_offset:
            return entry[0]
        return None

    # -- appends ---------------------------------------------------------------------------

    def append_lock(self) -> contextlib.AbstractContextManager[None]:
        """Hold while reading `log_end_offset`, validating and calling `append`.

        In memory this does nothing (one event loop thread). On disk it takes an exclusive
        ``flock`` on the partition's lock file and indexes what other processes appended
        since, so `log_end_offset` is current; it blocks only while another process
        appends, deletes records or applies retention to this partition (a few file
        writes). Re-entrant within this object.
        """
        if self._lock_fd < 0:
            return contextlib.nullcontext()
        return self._locked()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if self._lock_fd < 0:
            yield
            return
        outer = self._lock_depth == 0
        if outer:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        self._lock_depth += 1
        try:
            if outer and self._refresh(trim=True):
                self._notify()
            yield
        finally:
            self._lock_depth -= 1
            if outer:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def append(
        self,
        records: bytes,
        *,
        base_offset: int,
        last_offset: int,
        max_timestamp: int,
        offset_of_max_timestamp: int,
        leader_epoch: int,
        now_ms: int | None = None,
    ) -> None:
        """Append validated batches (offsets assigned from ``base_offset`` on).

        ``base_offset`` must be the log end offset and ``records`` whole batches ending at
        ``last_offset`` (ValueError otherwise, nothing written). Rolls a new segment first
        when the active one would pass `segment_bytes` or is older than `segment_ms`
        (Kafka's ``LogSegment.shouldRoll``). The leader epoch cache takes each magic 2
        batch's stamped partition leader epoch (the header ``validate_append`` set from
        ``leader_epoch``; reading the header keeps it identical to a rebuild at open) when
        it is newer than the latest; a legacy batch clears the cache (Kafka's
        ``UnifiedLog.append``). ``offset_of_max_timestamp``
        is accepted for symmetry with Kafka's ``LogSegment.append``: the index keeps every
        batch's max timestamp, which answers MAX_TIMESTAMP without it. ``now_ms`` (wall
        clock by default) is the time ``segment.ms`` is measured against for batches
        without timestamps.
        """
        self._check_open()
        batches, covered = read_batches(records)
        if not batches or covered != len(records):
            raise ValueError("records must be one or more whole batches")
        if batches[-1].last_offset != last_offset:
            raise ValueError(
                f"last offset {last_offset} does not match the batches' {batches[-1].last_offset}"
            )
        first = batches[0]
        if isinstance(first, RecordBatchV2) and first.base_offset != base_offset:
            raise ValueError(
                f"base offset {base_offset} does not match the first batch's {first.base_offset}"
            )
        now = now_ms if now_ms is not None else _now()
        with self._locked():
            if base_offset != self._log_end_offset:
                raise ValueError(
                    f"append at offset {base_offset} but the log end offset is "
                    f"{self._log_end_offset} ({self.topic}-{self.partition})"
                )
            seg = self._segments[-1]
            if seg.should_roll(
                len(records), max_timestamp, last_offset, now, self.segment_bytes, self.segment_ms
            ):
                seg = self._roll(base_offset, now)
            position = seg.size
            seg.store.write(records)
            seg.index_bytes(records, position, self._on_batch)
            if position == 0:
                # Kafka measures segment.ms from the first append's largest timestamp.
                seg.rolling_timestamp = max_timestamp
            self._log_end_offset = last_offset + 1
            self._stamp_directory()
        self._notify()

    def _roll(self, base_offset: int, now: int) -> Segment:
        if self.directory is None:
            store: MemoryStore | FileStore = MemoryStore()
        else:
            store = FileStore(self.directory / segment_file_name(base_offset))
        seg = Segment(base_offset, store, created_ms=now)
        self._add_segment(seg)
        return seg

    def _add_segment(self, seg: Segment) -> None:
        self._segments.append(seg)
        self._bases.append(seg.base_offset)

    def _observe_transactional(self, batch: Batch, _base_offset: int, _epoch: int) -> None:
        if isinstance(batch, RecordBatchV2) and batch.is_transactional:
            self.transactions.observe(batch)

    def _observe_producer(self, batch: Batch, base_offset: int, _epoch: int) -> None:
        self.producers.observe_batch(batch, base_offset)

    def _on_batch(self, batch: Batch, base_offset: int, epoch: int) -> None:
        magic = batch.magic
        # Producer state follows the log: appends here and batches other processes wrote,
        # found when the index catches up. Re-indexing after another process cleaned the
        # log sees batches again; the table already holds them (and more than cleaning left).
        if batch.last_offset >= self.producers.synced_to:
            self.producers.observe_batch(batch, base_offset)
        # The transactional flag test is all a non-transactional batch pays.
        if batch.is_transactional and batch.last_offset >= self.transactions.synced_to:
            assert isinstance(batch, RecordBatchV2)
            self.transactions.observe(batch)
        if is_v2(magic):
            latest = self._epochs.latest_epoch
            # Only a newer epoch starts an entry: an older one (a process whose metadata
            # lags) must not truncate the cache, which Kafka's assign would do.
            if epoch >= 0 and (latest is None or epoch > latest):
                self._epochs.assign(epoch, base_offset)
        elif self._epochs.latest_epoch is not None:
            _log.warning(
                "clearing leader epoch cache after a legacy batch",
                topic=self.topic,
                partition=self.partition,
                magic=magic,
            )
            self._epochs.clear()

    def _compute_log_end_offset(self) -> int:
        active = self._segments[-1]
        last = active.last_offset
        if last is not None:
            return last + 1
        # An empty active segment was rolled at the log end offset (or is a new log's).
        return active.base_offset

    # -- reads -----------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, *, min_one_batch: bool = True) -> bytes:
        """Whole batches from the one holding ``offset`` (it may start before it), at most
        ``max_bytes`` of them, all from one segment as Kafka's ``LocalLog.read``; the first
        batch whole when it alone exceeds ``max_bytes`` and ``min_one_batch``; b"" at the log
        end. `OffsetOutOfRange` outside [log start offset, log end offset]."""
        self._check_open()
        if offset < self._log_start_offset or offset > self._log_end_offset:
            raise OffsetOutOfRange(offset, self._log_start_offset, self._log_end_offset)
        if offset == self._log_end_offset:
            return b""
        return read_from(self._segments, self._bases, offset, max_bytes, min_one_batch)

    def offset_for_timestamp(self, timestamp_ms: int) -> TimestampOffset | None:
        """ListOffsets by timestamp: the first record at or after the log start offset whose
        timestamp is >= ``timestamp_ms``, searched in the first segment whose largest
        timestamp reaches it (Kafka's ``searchOffsetInLocalLog``); batches whose max
        timestamp is below the target are skipped without decoding. None when no record
        qualifies."""
        self._check_open()
        return first_at_timestamp(self._segments, self._log_start_offset, timestamp_ms)

    def max_timestamp_offset(self) -> TimestampOffset | None:
        """ListOffsets MAX_TIMESTAMP (KIP-734): the earliest record carrying the largest
        timestamp of the log, with its batch's timestamp and leader epoch (Kafka 3.x: the
        first segment with the largest max timestamp, its first batch reaching it, that
        batch's first record with it). None for an empty log or magic 0 batches."""
        self._check_open()
        return earliest_max_timestamp(self._segments)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: (epoch, end offset), Kafka's ``endOffsetFor`` with the log
        end offset; (-1, -1) when undefined."""
        return self._epochs.end_offset_for(epoch, self._log_end_offset)

    # -- deletion --------------------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (never down), drop the
        segments wholly below it, persist it; returns the new log start offset.
        `OffsetOutOfRange` above the log end offset (the caller checks the high watermark,
        which is the same here)."""
        self._check_open()
        with self._locked():
            if offset > self._log_end_offset or offset < 0:
                raise OffsetOutOfRange(offset, self._log_start_offset, self._log_end_offset)
            if offset > self._log_start_offset:
                self._log_start_offset = offset
                self._epochs.truncate_from_start(offset)
                self._producers_below(offset)
                self._delete_segments(below_log_start(self._segments, offset))
                self._persist_log_start_offset()
            return self._log_start_offset

    def apply_retention(self, now_ms: int, *, retention_ms: int, retention_bytes: int) -> int:
        """Kafka's ``deleteOldSegments`` for ``cleanup.policy=delete``: segments wholly below
        the log start offset, then the oldest while the log exceeds ``retention_bytes``, then
        the oldest whose largest timestamp is more than ``retention_ms`` before ``now_ms``
        (-1: unlimited). Deleting every segment first rolls an empty one at the log end, so
        the log start offset becomes the log end offset. Returns the bytes freed."""
        self._check_open()
        with self._locked():
            freed = self._delete_segments(below_log_start(self._segments, self._log_start_offset))
            freed += self._delete_segments(over_retention_bytes(self._segments, retention_bytes))
            expired = past_retention_ms(self._segments, now_ms, retention_ms)
            freed += self._delete_segments(expired, now_ms)
            return freed

    def _delete_segments(self, count: int, now: int | None = None) -> int:
        if count == 0:
            return 0
        if count == len(self._segments):
            # A log always keeps a segment: roll an empty one at the log end first.
            self._roll(self._log_end_offset, now if now is not None else _now())
        doomed = self._segments[:count]
        del self._segments[:count]
        del self._bases[:count]
        freed = sum(seg.size for seg in doomed)
        for seg in doomed:
            seg.store.delete()
        # Each deleted segment's .txnindex goes with it in Kafka.
        self.transactions.drop_segments_below(self._segments[0].base_offset)
        if self._segments[0].base_offset > self._log_start_offset:
            self._log_start_offset = self._segments[0].base_offset
            self._epochs.truncate_from_start(self._log_start_offset)
            self._producers_below(self._log_start_offset)
        self._persist_log_start_offset()
        self._stamp_directory()
        return freed

    def _producers_below(self, log_start_offset: int) -> None:
        """The log start offset rose: producer state follows the release's rule, and before
        2.4 a dropped producer's open transaction goes with it (``truncateHead``)."""
        for producer_id in self.producers.truncate_below(log_start_offset):
            self.transactions.forget_producer(producer_id)

    def _persist_log_start_offset(self) -> None:
        """Kafka checkpoints a log start offset only when it is above the first segment's
        base offset (otherwise the base offset says it)."""
        if self._checkpoint is None:
            return
        key = (self.topic, self.partition)
        wanted = (
            self._log_start_offset
            if self._log_start_offset > self._segments[0].base_offset
            else None
        )
        if self._checkpoint.get(*key) != wanted:
            self._checkpoint.update({key: wanted})

    # -- compaction (zkbroker.broker.storage.cleaner)
    # -----------------------------------------------

    @property
    def first_dirty_offset(self) -> int | None:
        """The cleaner checkpoint: where the last cleaning ended (None: never cleaned)."""
        if self._cleaner_checkpoint is not None:
            return self._cleaner_checkpoint.get(self.topic, self.partition)
        return self._first_dirty_offset

    def set_first_dirty_offset(self, offset: int | None) -> None:
        """Checkpoint where cleaning ended (Kafka's ``LogCleanerManager.doneCleaning``)."""
        self._check_open()
        if self._cleaner_checkpoint is not None:
            key = (self.topic, self.partition)
            if self._cleaner_checkpoint.get(*key) != offset:
                self._cleaner_checkpoint.update({key: offset})
        else:
            self._first_dirty_offset = offset

    def cleanable_segments(self) -> list[Segment]:
        """The segments, oldest first (the last one is the active segment): what the cleaner
        plans with. Only `replace_segments` may change them from outside."""
        return list(self._segments)

    def holds(self, segment: Segment) -> bool:
        """Whether ``segment`` is still one of the log's (retention may have deleted it, or
        the log was closed with its topic)."""
        return not self._closed and any(seg is segment for seg in self._segments)

    def expire_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Drop producers silent for ``producer.id.expiration.ms``, except those with a
        transaction open here (``ProducerStateManager.removeExpiredProducers``)."""
        return self.producers.expire(now_ms, expiration_ms, self.transactions.ongoing)

    def last_producer_offsets(self) -> dict[int, tuple[int | None, int]]:
        """Each known producer's last data batch's last offset (None when it has none, e.g.
        after a marker bumped its epoch) and its epoch (Kafka's
        ``lastRecordsOfActiveProducers``): the cleaner keeps those batches, even empty, or
        without data the producer's marker of that epoch."""
        return {
            pid: (entry.batches[-1].last_offset if entry.batches else None, entry.epoch)
            for pid, entry in self.producers.entries.items()
        }

    def create_cleaned_store(self, base_offset: int) -> SegmentStore:
        """Where a cleaned group of segments is written before the swap: memory, or Kafka's
        ``<base>.log.cleaned`` file (written without the lock: nobody reads it)."""
        self._check_open()
        if self.directory is None:
            return MemoryStore()
        path = cleaned_segment_path(self.directory, base_offset)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return FileStore(path)

    def replace_segments(
        self, old: list[Segment], cleaned: SegmentStore, *, last_modified_ms: int
    ) -> Segment | None:
        """Swap ``cleaned`` in for the contiguous non-active segments ``old`` (Kafka's
        ``LocalLog.replaceSegments``), under the partition lock. None, with the cleaned
        store deleted, when ``old`` are no longer the log's (retention deleted one, or
        another process cleaned or truncated meanwhile). Offsets, the log start offset,
        the leader epoch cache and producer state are untouched: cleaning keeps every
        retained batch's offsets, and the cache is checkpointed so a re-index finds it."""
        self._check_open()
        if not old:
            raise ValueError("nothing to replace")
        base = old[0].base_offset
        with self._locked():
            try:
                first = next(n for n, seg in enumerate(self._segments) if seg is old[0])
            except StopIteration:
                first = -1
            stale = (
                first < 0
                or first + len(old) >= len(self._segments)
                or any(a is not b for a, b in zip(self._segments[first:], old, strict=False))
                # Another process cleaning the same segments replaced (or recovery at its
                # open deleted) our `.cleaned` file: the segments are its to swap.
                or (isinstance(cleaned, FileStore) and cleaned.replaced_on_disk())
            )
            if stale:
                discard_cleaned(cleaned)
                return None
            cleaned.set_last_modified_ms(last_modified_ms)
            if isinstance(cleaned, FileStore):
                assert self.directory is not None
                swap_in_cleaned(self.directory, cleaned, old, last_modified_ms)
                write_leader_epoch_checkpoint(self.directory, self._epochs.entries())
            else:
                for seg in old:
                    seg.store.delete()
            new = Segment(base, cleaned)
            scan_store(new)
            self._segments[first : first + len(old)] = [new]
            self._bases[first : first + len(old)] = [base]
            self._stamp_directory()
            return new

    # -- other processes -------------------------------------------------------------------

    def refresh_if_changed(self) -> bool:
        """Disk mode: index what other processes appended, without the lock (a batch being
        written is not indexed until whole). Costs a ``stat`` of the directory and of the
        active segment when nothing changed. True when the log grew or its start moved."""
        if self.directory is None or self._closed:
            return False
        try:
            dir_stamp = os.stat(self.directory).st_mtime_ns
        except FileNotFoundError:
            return False
        active = self._segments[-1]
        grown = active.store.size_on_store() > active.size
        start_before = self._log_start_offset
        if dir_stamp == self._dir_stamp and not grown:
            self._refresh_log_start_offset()
            return self._log_start_offset != start_before
        return self._refresh(trim=False)

    def _refresh(self, *, trim: bool) -> bool:
        """Bring the index up to date with the files (other processes' appends, rolls,
        deletions); ``trim`` only with the lock held. True when anything changed."""
        if self.directory is None:
            return False
        end_before, start_before = self._log_end_offset, self._log_start_offset
        bases = segment_bases(self.directory)
        if not bases:
            return False  # directory being removed with its topic: keep what we have
        gone = 0
        while gone < len(self._segments) - 1 and self._bases[gone] < bases[0]:
            gone += 1
        if self._bases[gone:] != bases[: len(self._bases) - gone] or segments_replaced(
            self.directory, self._dir_stamp, self._segments[gone:-1]
        ):
            # Not a continuation of what we know (the directory was replaced, or the log
            # cleaner rewrote segments: their sizes and positions changed): start over.
            self._load_segments(trim=trim)
            self._stamp_directory()
            return True
        for seg in self._segments[:gone]:
            seg.store.close()
        del self._segments[:gone]
        del self._bases[:gone]
        first_to_scan = len(self._segments) - 1  # only the active one and new ones grow
        for base in bases[len(self._bases) :]:
            self._add_segment(Segment(base, FileStore(self.directory / segment_file_name(base))))
        for seg in self._segments[first_to_scan:]:
            on_disk = scan_store(seg, self._on_batch)
            if seg.size < on_disk and trim:
                seg.store.truncate(seg.size)
        self._log_end_offset = self._compute_log_end_offset()
        self._log_start_offset = max(self._log_start_offset, self._segments[0].base_offset)
        self._refresh_log_start_offset()
        self._stamp_directory()
        return (
            gone > 0 or self._log_end_offset != end_before or self._log_start_offset != start_before
        )

    def _refresh_log_start_offset(self) -> None:
        if self._checkpoint is None:
            return
        stored = self._checkpoint.get(self.topic, self.partition)
        lso = max(self._log_start_offset, self._segments[0].base_offset, stored or 0)
        lso = min(lso, self._log_end_offset)
        if lso != self._log_start_offset:
            self._log_start_offset = lso
        self._epochs.truncate_from_start(lso)
        self._producers_below(lso)

    def _stamp_directory(self) -> None:
        if self.directory is not None:
            with contextlib.suppress(FileNotFoundError):
                self._dir_stamp = os.stat(self.directory).st_mtime_ns

    # -- lifecycle -------------------------------------------------------------------------

    def _notify(self) -> None:
        if self._on_append is not None:
            self._on_append()

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"log {self.topic}-{self.partition} is closed")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for seg in self._segments:
            seg.store.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.topic}-{self.partition}, start={self._log_start_offset}, "
            f"end={self._log_end_offset}, segments={len(self._segments)})"
        )


def _now() -> int:
    return now_ms()
