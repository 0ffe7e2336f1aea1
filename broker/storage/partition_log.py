"""The log of one replica of a partition (Kafka's `UnifiedLog`; behaviour: §15, transactions
§17): its offsets (log start, log end, high watermark), the leader epoch cache, producer state
and transactions over the segments (``local_log``), appends as leader and as follower, reads,
truncation, DeleteRecords, retention and the cleaner's swap.

Two backends behind one class: memory, or a directory in Kafka's layout that several
processes may share (an exclusive `flock` serialises appends, truncation, DeleteRecords,
retention and cleaning; whoever locks first indexes what the others appended). Opening scans
every batch header to rebuild the index and epoch cache, trimming a partial last batch. Not
here: the segments' files and their order (``local_log``), the directory's names, lock and
files (``partition_dir``), searching the segments for reads (``log_reads``), which segments
retention deletes (``retention``), when the high watermark moves and what a follower fetches
(the replica manager), `.index`/`.timeindex`/`.txnindex`/snapshot files (rebuilt by
scanning), tiered storage, fsync, and the API rules handlers check.
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
from zkbroker.broker.storage.batch_state import BatchState
from zkbroker.broker.storage.files import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LEADER_EPOCH_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    OffsetCheckpointFile,
    read_leader_epoch_checkpoint,
    read_partition_metadata,
    write_leader_epoch_checkpoint,
    write_partition_metadata,
)
from zkbroker.broker.storage.local_log import LocalLog
from zkbroker.broker.storage.log_reads import (
    earliest_max_timestamp,
    first_at_timestamp,
    read_from,
)
from zkbroker.broker.storage.partition_dir import (
    discard_cleaned,
    lock_own_partition_dir,
    partition_dir_name,
    recover_swaps,
)
from zkbroker.broker.storage.retention import (
    below_log_start,
    over_retention_bytes,
    past_retention_ms,
)
from zkbroker.broker.storage.segment import (
    MemoryStore,
    Segment,
    SegmentStore,
    batch_span,
)
from zkbroker.broker.storage.transactions import AbortedTxn, PartitionTransactions
from zkbroker.broker.storage.types import UNDEFINED_EPOCH, OffsetOutOfRange, TimestampOffset
from zkbroker.zk_layout.release import Release

_log = get_logger(__name__)

DEFAULT_SEGMENT_BYTES = 1 << 30
DEFAULT_SEGMENT_MS = 7 * 24 * 3600 * 1000


class PartitionLog:
    """One replica's log: a new empty one in memory (offsets and high watermark 0) when built
    without ``directory``, else built by `open_dir`. Every method runs on the event loop
    thread and returns after at most one file operation per touched segment, except opening,
    refreshing and truncation, which scan batch headers."""

    def __init__(
        self,
        topic: str,
        partition: int,
        topic_id: uuid.UUID | None,
        *,
        directory: Path | None = None,
        checkpoint: OffsetCheckpointFile | None = None,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        segment_ms: int = DEFAULT_SEGMENT_MS,
        on_append: Callable[[], None] | None = None,
        cleaner_checkpoint: OffsetCheckpointFile | None = None,
        release: Release = DEFAULT_RELEASE,
        on_high_watermark: Callable[[], None] | None = None,
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
        #: Told after each leader append (the replica manager raises the high watermark).
        self.on_leader_append: Callable[[PartitionLog], None] | None = None
        self._on_high_watermark = on_high_watermark
        self._local = LocalLog(topic, partition, directory)
        self._log_start_offset = 0
        self._log_end_offset = 0
        self._high_watermark = 0
        # The epoch cache, producers and transactions, kept by the index.
        self._state = BatchState(topic, partition, release)
        self._epochs = self._state.epochs  # the same cache for the log's life
        self._lock_fd = -1
        self._lock_depth = 0
        self._dir_stamp = 0
        self._closed = False
        if directory is None:
            self._local.add(Segment(0, MemoryStore()))

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def open_dir(
        cls,
        log_dir: Path,
        topic: str,
        partition: int,
        topic_id: uuid.UUID | None,
        *,
        checkpoint: OffsetCheckpointFile | None = None,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        segment_ms: int = DEFAULT_SEGMENT_MS,
        on_append: Callable[[], None] | None = None,
        cleaner_checkpoint: OffsetCheckpointFile | None = None,
        release: Release = DEFAULT_RELEASE,
        hw_checkpoint: OffsetCheckpointFile | None = None,
        on_high_watermark: Callable[[], None] | None = None,
    ) -> PartitionLog:
        """Open (or create) ``<log_dir>/<topic>-<partition>``. A directory whose
        ``partition.metadata`` names another topic id is renamed aside (``-stray``, see
        ``partition_dir``) and the log starts empty. The high watermark starts at the entry
        of ``hw_checkpoint`` (``replication-offset-checkpoint``), clamped to the log; without
        one at the log start offset (Kafka: "No checkpointed highwatermark is found", 0)."""
        directory = log_dir / partition_dir_name(topic, partition)
        checkpoint = checkpoint or OffsetCheckpointFile(log_dir)
        cleaner_checkpoint = cleaner_checkpoint or OffsetCheckpointFile(
            log_dir, CLEANER_OFFSET_CHECKPOINT_FILE
        )
        hw_checkpoint = hw_checkpoint or OffsetCheckpointFile(
            log_dir, REPLICATION_OFFSET_CHECKPOINT_FILE
        )
        lock_fd = lock_own_partition_dir(
            directory, topic, partition, topic_id, (checkpoint, cleaner_checkpoint, hw_checkpoint)
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
            on_high_watermark=on_high_watermark,
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
        stored = hw_checkpoint.get(topic, partition)
        log._clamp_high_watermark(log._log_start_offset if stored is None else stored)
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
        """(Re)build every segment's index from the files (`LocalLog.load`), the epoch cache
        and offsets with it."""
        assert self.directory is not None and self._checkpoint is not None
        self._epochs.clear()
        # Written by the cleaner: where epochs started whose first batches it dropped. The
        # batch headers scanned next only add newer epochs.
        for epoch, start in read_leader_epoch_checkpoint(self.directory):
            with contextlib.suppress(ValueError):
                self._epochs.assign(epoch, start)
        found = self._local.load(self._state.on_batch, trim=trim)
        # A new log starts at 0; a checkpoint entry left by an earlier topic is stale.
        if not found and trim and self._checkpoint.get(self.topic, self.partition) is not None:
            self._checkpoint.update({(self.topic, self.partition): None})
        self._log_end_offset = self._local.end_offset()
        # Kafka's LogLoader: no epoch may start at or past the recovered log end.
        self._epochs.truncate_from_end(self._log_end_offset)
        if self._state.behind(self._log_end_offset):
            # Another log under the same name (recreated topic): its producers are not ours.
            self._state.rebuild(self._local.segments)
        self._log_start_offset = self._local.segments[0].base_offset
        self._refresh_log_start_offset()
        self._clamp_high_watermark(self._high_watermark)

    # -- state -----------------------------------------------------------------------------

    @property
    def producers(self) -> ProducerStateTable:
        """Idempotent producers' sequences (`zkbroker.broker.rules.producer_state`)."""
        return self._state.producers

    @property
    def transactions(self) -> PartitionTransactions:
        """Ongoing and aborted transactions (`zkbroker.broker.storage.transactions`)."""
        return self._state.transactions

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        """The next offset to assign."""
        return self._log_end_offset

    @property
    def high_watermark(self) -> int:
        """The offset below which every in-sync replica holds the log (Kafka's
        ``UnifiedLog.highWatermark``): what consumers may read up to. Always within [log
        start offset, log end offset]."""
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> bool:
        """Set the high watermark to ``offset`` clamped to [log start offset, log end offset]
        (Kafka's ``updateHighWatermark``); True, after telling ``on_high_watermark``, when it
        changed. Appends never move it: the replica manager does, truncation lowers it."""
        before = self._high_watermark
        self._clamp_high_watermark(offset)
        if self._high_watermark == before:
            return False
        if self._on_high_watermark is not None:
            self._on_high_watermark()
        return True

    def _clamp_high_watermark(self, offset: int) -> None:
        self._high_watermark = min(max(offset, self._log_start_offset), self._log_end_offset)

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed consumers stop: the first open transaction's first offset,
        else the high watermark, never past it (Kafka's ``UnifiedLog.lastStableOffset``)."""
        return self.transactions.last_stable_offset(self._high_watermark)

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound_offset) (Kafka's
        ``UnifiedLog.collectAbortedTransactions``)."""
        return self.transactions.aborted_transactions(fetch_offset, upper_bound_offset)

    @property
    def size_bytes(self) -> int:
        return sum(seg.size for seg in self._local.segments)

    @property
    def segment_count(self) -> int:
        return len(self._local.segments)

    @property
    def segment_base_offsets(self) -> list[int]:
        return list(self._local.bases)

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
        return [(max(s.base_offset, lso), s.store.last_modified_ms()) for s in self._local.segments]

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
        """Append validated batches (offsets assigned from ``base_offset`` on), as leader.

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
        without timestamps. The high watermark does not move.
        """
        self._check_open()
        batches = _whole_batches(records)
        if batches[-1].last_offset != last_offset:
            raise ValueError(
                f"last offset {last_offset} does not match the batches' {batches[-1].last_offset}"
            )
        first = batches[0]
        if isinstance(first, RecordBatchV2) and first.base_offset != base_offset:
            raise ValueError(
                f"base offset {base_offset} does not match the first batch's {first.base_offset}"
            )
        self._write(records, base_offset, last_offset, max_timestamp, now_ms, follower=False)
        if self.on_leader_append is not None:
            self.on_leader_append(self)

    def append_as_follower(self, records: bytes) -> None:
        """Append whole batches as the leader wrote them (Kafka's ``appendAsFollower``):
        offsets and partition leader epochs are kept, nothing is assigned. The first batch's
        first offset must not be below the log end offset, nor the offsets go backwards
        (ValueError, nothing written); it may be above it where the leader's cleaner
        removed whole batches. Rolling, the index, producer state, transactions and the
        epoch cache follow as for `append`; the high watermark does not move. In memory the
        ``records`` object itself is kept (replicas in one process share its bytes)."""
        self._check_open()
        first, last, max_timestamp = batch_span(_whole_batches(records))
        self._write(records, first, last, max_timestamp, None, follower=True)

    def _write(
        self,
        records: bytes,
        first_offset: int,
        last_offset: int,
        max_timestamp: int,
        now_ms: int | None,
        *,
        follower: bool,
    ) -> None:
        """The append both roles share, under the partition lock: the offset check against
        the log end offset, rolling, writing and indexing."""
        now = now_ms if now_ms is not None else _now()
        with self._locked():
            end = self._log_end_offset
            if first_offset != end and not (follower and first_offset > end):
                raise ValueError(
                    f"append at offset {first_offset} but the log end offset is "
                    f"{end} ({self.topic}-{self.partition})"
                )
            seg = self._local.active
            if seg.should_roll(
                len(records), max_timestamp, last_offset, now, self.segment_bytes, self.segment_ms
            ):
                seg = self._local.roll(first_offset, now)
            position = seg.size
            seg.store.write(records)
            seg.index_bytes(records, position, self._state.on_batch)
            if position == 0:
                # Kafka measures segment.ms from the first append's largest timestamp.
                seg.rolling_timestamp = max_timestamp
            self._log_end_offset = last_offset + 1
            self._stamp_directory()
        self._notify()

    # -- reads -----------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        min_one_batch: bool = True,
        max_offset: int | None = None,
    ) -> bytes:
        """Whole batches from the one holding ``offset`` (it may start before it), at most
        ``max_bytes`` of them, all from one segment as Kafka's ``LocalLog.read``; the first
        batch whole when it alone exceeds ``max_bytes`` and ``min_one_batch``; b"" at the log
        end. With ``max_offset`` (a consumer's: the high watermark or the last stable
        offset, at a batch boundary), only batches whose last offset is below it; b"" from
        it on. `OffsetOutOfRange` outside [log start offset, log end offset]."""
        self._check_open()
        if offset < self._log_start_offset or offset > self._log_end_offset:
            raise OffsetOutOfRange(offset, self._log_start_offset, self._log_end_offset)
        if offset == self._log_end_offset or (max_offset is not None and offset >= max_offset):
            return b""
        local = self._local
        return read_from(local.segments, local.bases, offset, max_bytes, min_one_batch, max_offset)

    def offset_for_timestamp(self, timestamp_ms: int) -> TimestampOffset | None:
        """ListOffsets by timestamp: the first record at or after the log start offset whose
        timestamp is >= ``timestamp_ms``, searched in the first segment whose largest
        timestamp reaches it (Kafka's ``searchOffsetInLocalLog``); batches whose max
        timestamp is below the target are skipped without decoding. None when no record
        qualifies."""
        self._check_open()
        return first_at_timestamp(self._local.segments, self._log_start_offset, timestamp_ms)

    def max_timestamp_offset(self) -> TimestampOffset | None:
        """ListOffsets MAX_TIMESTAMP (KIP-734): the earliest record carrying the largest
        timestamp of the log, with its batch's timestamp and leader epoch (Kafka 3.x: the
        first segment with the largest max timestamp, its first batch reaching it, that
        batch's first record with it). None for an empty log or magic 0 batches."""
        self._check_open()
        return earliest_max_timestamp(self._local.segments)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: (epoch, end offset), Kafka's ``endOffsetFor`` with the log
        end offset; (-1, -1) when undefined."""
        return self._epochs.end_offset_for(epoch, self._log_end_offset)

    # -- truncation (a follower's, Kafka's truncateTo / truncateFullyAndStartAt) -----------

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch at or after ``offset`` (Kafka's ``UnifiedLog.truncateTo``): the
        segments from there deleted, the one holding it cut at the start of the batch holding
        ``offset``, which becomes the log end offset. Below the first segment's base offset
        this is `truncate_fully_and_start_at`. The epoch cache drops the epochs starting at
        or after the new end, producer state and transactions are rebuilt from what
        remains, the high watermark and the cleaner's first dirty offset come down to the
        new end. Nothing when ``offset`` >= the log end offset; True when anything went."""
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate {self.topic}-{self.partition} to {offset}")
        with self._locked():
            if offset >= self._log_end_offset:
                return False
            if offset < self._local.segments[0].base_offset:
                self._start_over_at(offset)
            else:
                self._truncate_locked(offset)
        self._notify()
        return True

    def _truncate_locked(self, offset: int) -> None:
        old_end = self._log_end_offset
        new_end = self._local.truncate_to(offset, _now())
        self._log_end_offset = new_end
        self._log_start_offset = min(self._log_start_offset, new_end)
        self._after_truncation()
        first_dirty = self.first_dirty_offset
        if first_dirty is not None and first_dirty > new_end:
            self.set_first_dirty_offset(new_end)
        self.update_high_watermark(min(self._high_watermark, new_end))
        _log.info(
            "log.truncated",
            topic=self.topic,
            partition=self.partition,
            old_end_offset=old_end,
            new_end_offset=new_end,
        )

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and start an empty log at ``offset``: log start, log end and
        high watermark all ``offset``, no epochs, no producers (Kafka's
        ``truncateFullyAndStartAt``, for a follower whose leader's log starts past its end)."""
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot start {self.topic}-{self.partition} at {offset}")
        with self._locked():
            self._start_over_at(offset)
        self._notify()

    def _start_over_at(self, offset: int) -> None:
        old_start, old_end = self._log_start_offset, self._log_end_offset
        self._local.start_over_at(offset, _now())
        self._log_start_offset = self._log_end_offset = offset
        self._epochs.clear()
        self._after_truncation()
        self.set_first_dirty_offset(None)
        self.update_high_watermark(offset)
        _log.info(
            "log.truncated_fully",
            topic=self.topic,
            partition=self.partition,
            old_start_offset=old_start,
            old_end_offset=old_end,
            new_offset=offset,
        )

    def _after_truncation(self) -> None:
        """What follows the segments' truncation: epochs from the new end on go (Kafka's
        ``truncateFromEnd``, kept in step in ``leader-epoch-checkpoint`` where the cleaner
        wrote one), producer state is rebuilt, the log start offset persisted."""
        self._state.truncated(self._local.segments, self._log_end_offset, self._log_start_offset)
        if self.directory is not None and (self.directory / LEADER_EPOCH_CHECKPOINT_FILE).exists():
            write_leader_epoch_checkpoint(self.directory, self._epochs.entries())
        self._persist_log_start_offset()
        self._stamp_directory()

    # -- deletion from the start -----------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords, and a follower following its leader's log start offset (Kafka's
        ``maybeIncrementLogStartOffset``): move the log start offset up to ``offset`` (never
        down), drop the segments wholly below it, persist it, raise the high watermark to it
        if below; returns the new log start offset. `OffsetOutOfRange` above the log end
        offset (the DeleteRecords handler checks the high watermark itself)."""
        self._check_open()
        with self._locked():
            if offset > self._log_end_offset or offset < 0:
                raise OffsetOutOfRange(offset, self._log_start_offset, self._log_end_offset)
            if offset > self._log_start_offset:
                self._advance_log_start(offset)
                hw = self._high_watermark
                self._delete_segments(below_log_start(self._local.segments, offset, hw))
                self._persist_log_start_offset()
            return self._log_start_offset

    def apply_retention(self, now_ms: int, *, retention_ms: int, retention_bytes: int) -> int:
        """Kafka's ``deleteOldSegments`` for ``cleanup.policy=delete``: segments wholly below
        the log start offset, then the oldest while the log exceeds ``retention_bytes``, then
        the oldest whose largest timestamp is more than ``retention_ms`` before ``now_ms``
        (-1: unlimited); never a segment holding offsets at or past the high watermark, so
        the log start offset never passes it. Deleting every segment first rolls an empty
        one at the log end, so the log start offset becomes the log end offset. Returns the
        bytes freed."""
        self._check_open()
        with self._locked():
            segments, hw = self._local.segments, self._high_watermark
            freed = self._delete_segments(below_log_start(segments, self._log_start_offset, hw))
            freed += self._delete_segments(over_retention_bytes(segments, retention_bytes, hw))
            expired = past_retention_ms(segments, now_ms, retention_ms, hw)
            freed += self._delete_segments(expired, now_ms)
            return freed

    def _delete_segments(self, count: int, now: int | None = None) -> int:
        if count == 0:
            return 0
        now = now if now is not None else _now()
        freed = self._local.delete_oldest(count, self._log_end_offset, now)
        first_base = self._local.segments[0].base_offset
        # Each deleted segment's .txnindex goes with it in Kafka.
        self.transactions.drop_segments_below(first_base)
        if first_base > self._log_start_offset:
            self._advance_log_start(first_base)
        self._persist_log_start_offset()
        self._stamp_directory()
        return freed

    def _advance_log_start(self, offset: int) -> None:
        """The log start offset rose to ``offset``: the epoch cache and producer state
        follow, and the high watermark is raised to it if below (Kafka's
        ``updateLogStartOffset``)."""
        self._log_start_offset = offset
        self._state.log_start_rose(offset)
        if self._high_watermark < offset:
            self.update_high_watermark(offset)

    def _persist_log_start_offset(self) -> None:
        """Kafka checkpoints a log start offset only when it is above the first segment's
        base offset (otherwise the base offset says it)."""
        if self._checkpoint is None:
            return
        key = (self.topic, self.partition)
        first_base = self._local.segments[0].base_offset
        wanted = self._log_start_offset if self._log_start_offset > first_base else None
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
        return list(self._local.segments)

    def holds(self, segment: Segment) -> bool:
        """Whether ``segment`` is still one of the log's (retention or truncation may have
        deleted it, or the log was closed with its topic)."""
        return not self._closed and any(seg is segment for seg in self._local.segments)

    def expire_producers(self, now_ms: int, expiration_ms: int) -> int:
        """`BatchState.expire_producers`."""
        return self._state.expire_producers(now_ms, expiration_ms)

    def last_producer_offsets(self) -> dict[int, tuple[int | None, int]]:
        """`BatchState.last_producer_offsets`: what the cleaner keeps of each producer."""
        return self._state.last_producer_offsets()

    def create_cleaned_store(self, base_offset: int) -> SegmentStore:
        """`LocalLog.cleaned_store`: where a cleaned group of segments is written."""
        self._check_open()
        return self._local.cleaned_store(base_offset)

    def replace_segments(
        self, old: list[Segment], cleaned: SegmentStore, *, last_modified_ms: int
    ) -> Segment | None:
        """Swap ``cleaned`` in for the contiguous non-active segments ``old`` (Kafka's
        ``LocalLog.replaceSegments``), under the partition lock. None, with the cleaned
        store deleted, when ``old`` are no longer the log's (retention or truncation deleted
        or cut one, or another process cleaned or truncated meanwhile). Offsets, the log
        start offset, the leader epoch cache and producer state are untouched: cleaning
        keeps every retained batch's offsets, and the cache is checkpointed so a re-index
        finds it."""
        self._check_open()
        if not old:
            raise ValueError("nothing to replace")
        with self._locked():
            new = self._local.replace(old, cleaned, last_modified_ms)
            if new is None:
                discard_cleaned(cleaned)
                return None
            if self.directory is not None:
                write_leader_epoch_checkpoint(self.directory, self._epochs.entries())
            self._stamp_directory()
            return new

    # -- other processes -------------------------------------------------------------------

    def refresh_if_changed(self) -> bool:
        """Disk mode: index what other processes appended, without the lock (a batch being
        written is not indexed until whole). Costs a ``stat`` of the directory and of the
        active segment when nothing changed. True when the log grew or its start moved."""
        if self.directory is None or self._closed:
            return False
        changed = self._local.changed_since(self._dir_stamp)
        if changed is None:
            return False
        if changed:
            return self._refresh(trim=False)
        start_before = self._log_start_offset
        self._refresh_log_start_offset()
        return self._log_start_offset != start_before

    def _refresh(self, *, trim: bool) -> bool:
        """Bring the index up to date with the files (other processes' appends, rolls,
        deletions); ``trim`` only with the lock held. True when anything changed."""
        if self.directory is None:
            return False
        end_before, start_before = self._log_end_offset, self._log_start_offset
        gone = self._local.catch_up(self._state.on_batch, trim=trim, dir_stamp=self._dir_stamp)
        if gone is None:
            self._load_segments(trim=trim)
            self._stamp_directory()
            return True
        self._log_end_offset = self._local.end_offset()
        self._log_start_offset = max(self._log_start_offset, self._local.segments[0].base_offset)
        self._refresh_log_start_offset()
        self._stamp_directory()
        return (
            gone > 0 or self._log_end_offset != end_before or self._log_start_offset != start_before
        )

    def _refresh_log_start_offset(self) -> None:
        if self._checkpoint is None:
            return
        stored = self._checkpoint.get(self.topic, self.partition)
        lso = max(self._log_start_offset, self._local.segments[0].base_offset, stored or 0)
        self._advance_log_start(min(lso, self._log_end_offset))

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
        self._local.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.topic}-{self.partition}, start={self._log_start_offset}, "
            f"end={self._log_end_offset}, hw={self._high_watermark}, "
            f"segments={len(self._local.segments)})"
        )


def _whole_batches(records: bytes) -> list[Batch]:
    batches, covered = read_batches(records)
    if not batches or covered != len(records):
        raise ValueError("records must be one or more whole batches")
    return batches


def _now() -> int:
    return now_ms()
