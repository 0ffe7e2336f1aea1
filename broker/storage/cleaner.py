"""Log compaction: Kafka's log cleaner for `cleanup.policy` compact (Kafka's behaviour: §15
"Compaction", §17 "Compaction and transactions").

`plan_cleaning` finds the dirty range, `clean_log` builds the offset map and rewrites segment
groups, swapped in by `PartitionLog.replace_segments`; all on the event loop in slices
(`zkbroker.broker.asyncutil.Pacer`). Not here: encoding the batches it keeps part of
(``cleaned_batch``), cleaner threads, I/O throttling, the dedupe buffer's size (the map is a
dict that never fills), `.deleted` files.
"""

from __future__ import annotations

import bisect
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from zkbroker.broker.asyncutil import SLICE_S, Pacer
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol.records import (
    NO_TIMESTAMP,
    Batch,
    LegacyEntry,
    NewRecord,
    Record,
    RecordBatchV2,
    RecordFormatError,
    TimestampType,
    encode_message_set,
    iter_batches,
)
from zkbroker.broker.storage.cleaned_batch import empty_batch, rebuild_batch
from zkbroker.broker.storage.partition_dir import discard_cleaned
from zkbroker.broker.storage.partition_log import PartitionLog
from zkbroker.broker.storage.segment import Segment, SegmentStore
from zkbroker.broker.storage.transactions import AbortedTxn

_log = get_logger(__name__)

LONG_MAX: Final = (1 << 63) - 1
_INT_MAX: Final = (1 << 31) - 1
#: Kafka's ``index.interval.bytes`` default: one offset / time index entry per 4 KiB of log.
_INDEX_INTERVAL_BYTES: Final = 4096
#: Bytes read from a segment at once (whole batches; a larger batch is read alone).
READ_CHUNK: Final = 1 << 20
#: Cleaned bytes buffered before they are written out.
WRITE_CHUNK: Final = 1 << 20
_CONTROL_KEY = struct.Struct(">hh")
_ABORT, _COMMIT = 0, 1


@dataclass(frozen=True)
class CompactionConfig:
    """The topic configs the cleaner reads (Kafka's ``LogConfig``), Kafka's defaults."""

    min_cleanable_ratio: float = 0.5
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    segment_bytes: int = 1 << 30
    max_index_bytes: int = 10 * 1024 * 1024


@dataclass(frozen=True)
class CleaningPlan:
    """Kafka's ``LogToClean``: the dirty range and how dirty the log is."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool
    reset_checkpoint: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    def should_clean(self, min_cleanable_ratio: float) -> bool:
        """``grabFilthiestCompactedLog``'s filter: strictly above the ratio, or overdue."""
        if self.total_bytes == 0:
            return False
        if self.need_compaction_now and self.cleanable_bytes > 0:
            return True
        return self.cleanable_ratio > min_cleanable_ratio


@dataclass
class CleanerStats:
    """Kafka's ``CleanerStats``, for the log line and tests."""

    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_written: int = 0
    invalid_records: int = 0
    map_records: int = 0
    groups: int = 0
    groups_abandoned: int = 0
    end_offset: int = -1
    elapsed_s: float = 0.0
    pauses: int = 0


def plan_cleaning(log: PartitionLog, now_ms: int, config: CompactionConfig) -> CleaningPlan:
    """``LogCleanerManager.cleanableOffsets`` + ``calculateCleanableBytes`` +
    ``maxCompactionDelay`` for one log."""
    segments = log.cleanable_segments()
    start, end = log.log_start_offset, log.log_end_offset
    checkpoint = log.first_dirty_offset
    first_dirty = start if checkpoint is None else checkpoint
    reset = False
    if first_dirty < start or first_dirty > end:
        first_dirty, reset = start, True
    first_uncleanable = _first_uncleanable_offset(log, segments, first_dirty, now_ms, config)
    clean_bytes = sum(s.size for s in segments if s.base_offset < first_dirty)
    lo = min(first_dirty, first_uncleanable)
    cleanable_bytes = sum(s.size for s in _overlapping(segments, lo, first_uncleanable))

    max_lag = max(config.max_compaction_lag_ms, 0)
    firsts = [
        s.rolling_timestamp
        for s in _non_active_from(segments, first_dirty)
        if s.rolling_timestamp is not None and s.rolling_timestamp > 0
    ]
    need_now = bool(firsts) and min(firsts) < now_ms - max_lag
    return CleaningPlan(
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=first_uncleanable,
        clean_bytes=clean_bytes,
        cleanable_bytes=cleanable_bytes,
        need_compaction_now=need_now,
        reset_checkpoint=reset,
    )


def _first_uncleanable_offset(
    log: PartitionLog,
    segments: list[Segment],
    first_dirty: int,
    now_ms: int,
    config: CompactionConfig,
) -> int:
    """The base offset of the segment where cleaning stops (``cleanableOffsets``): the
    active segment, or an earlier one holding the last stable offset or a record younger
    than ``min.compaction.lag.ms``."""
    active = segments[-1]
    # Never at or past the last stable offset: everything cleaned is decided (committed or
    # aborted), so the aborted index tells which batches to drop.
    uncleanable = min(log.log_end_offset, log.last_stable_offset, active.base_offset)
    lag = max(config.min_compaction_lag_ms, 0)
    if lag > 0:
        young = next(
            (
                s
                for s in _non_active_from(segments, first_dirty)
                if s.largest_timestamp() > now_ms - lag
            ),
            None,
        )
        if young is not None:
            uncleanable = min(uncleanable, young.base_offset)
    uncleanable = max(first_dirty, uncleanable)
    holding = _non_active_from(segments, uncleanable)
    return holding[0].base_offset if holding else active.base_offset


def _non_active_from(segments: list[Segment], offset: int) -> list[Segment]:
    """The non-active segments (all but the last) from the one holding ``offset``
    (``nonActiveLogSegmentsFrom``)."""
    return [
        seg
        for n, seg in enumerate(segments[:-1])
        if n + 1 >= len(segments) or segments[n + 1].base_offset > offset
    ]


def _overlapping(segments: list[Segment], lo: int, hi: int) -> list[Segment]:
    """``logSegments(lo, hi)``: from the segment holding ``lo`` to those starting below
    ``hi``."""
    out = []
    for n, seg in enumerate(segments):
        nxt = segments[n + 1].base_offset if n + 1 < len(segments) else None
        if seg.base_offset < hi and (nxt is None or nxt > lo):
            out.append(seg)
    return out


def group_segments_by_size(
    segments: Sequence[Segment], max_size: int, max_index_size: int, first_uncleanable: int
) -> list[list[Segment]]:
    """Kafka's ``groupSegmentsBySize``: consecutive segments totalling at most ``max_size``
    log bytes and ``max_index_size`` bytes of offset index (8 bytes an entry) and time index
    (12 bytes), whose offsets stay within an int32 of the group's base. zkbroker writes no
    index files: the sizes are those Kafka's would have, one entry per 4 KiB."""
    groups: list[list[Segment]] = []
    n = 0
    while n < len(segments):
        group = [segments[n]]
        log_size = segments[n].size
        entries = segments[n].size // _INDEX_INTERVAL_BYTES
        n += 1
        while n < len(segments):
            seg = segments[n]
            seg_entries = seg.size // _INDEX_INTERVAL_BYTES
            last = (
                segments[n + 1].base_offset - 1 if n + 1 < len(segments) else first_uncleanable - 1
            )
            if (
                log_size + seg.size > max_size
                or (entries + seg_entries) * 12 > max_index_size
                or (seg.size != 0 and last - group[-1].base_offset > _INT_MAX)
            ):
                break
            group.append(seg)
            log_size += seg.size
            entries += seg_entries
            n += 1
        groups.append(group)
    return groups


class _Slices:
    """Yields to the loop once a slice's time is used up, looking at the clock on every
    call: the cleaner calls it per batch, and a batch of hundreds of records is already
    worth a clock read (``Pacer.due`` looks only every 64 calls)."""

    def __init__(self, pacer: Pacer) -> None:
        self.pacer = pacer
        self._deadline = time.perf_counter() + SLICE_S

    async def tick(self) -> None:
        if time.perf_counter() >= self._deadline:
            await self.pacer.pause()
            self._deadline = time.perf_counter() + SLICE_S


class _Abandon(Exception):
    """A segment being cleaned left the log (retention, another process): stop the round."""


@dataclass
class _OffsetMap:
    """Kafka's ``SkimpyOffsetMap``: key -> latest offset, and the latest offset mapped."""

    offsets: dict[bytes, int] = field(default_factory=dict)
    latest_offset: int = -1


@dataclass
class _AbortedInProgress:
    """Kafka's ``AbortedTransactionMetadata``: an aborted transaction the cleaner is inside,
    and whether it saw one of its batches."""

    txn: AbortedTxn
    saw_batch: bool = False


@dataclass
class _TxnState:
    """Kafka's ``CleanedTransactionMetadata``: which batches belong to aborted transactions
    (from the partition's aborted index, consumed in first-offset order as the cleaner
    advances), which markers may go, and the aborted index entries that stay (the cleaned
    ``.txnindex``: those whose marker stays because a batch of theirs was seen).

    One state spans the whole round (Kafka starts one per group of segments): a COMMIT marker
    is then never dropped while a batch of its transaction survives in an earlier group, so a
    rebuild of the transaction state from the files (which is how zkbroker loads it: no
    producer snapshots) never sees a transaction without its end."""

    aborted: list[AbortedTxn] = field(default_factory=list)
    ongoing_committed: set[int] = field(default_factory=set)
    ongoing_aborted: dict[int, _AbortedInProgress] = field(default_factory=dict)
    kept_aborted: list[AbortedTxn] = field(default_factory=list)
    _next: int = 0

    @classmethod
    def overlapping(cls, txns: Sequence[AbortedTxn], lo: int, hi: int) -> _TxnState:
        """``collectAbortedTransactions(lo, hi)``: the entries overlapping [lo, hi), sorted by
        first offset (Kafka's min-heap)."""
        found = [t for t in txns if t.last_offset >= lo and t.first_offset < hi]
        return cls(aborted=sorted(found, key=lambda t: t.first_offset))

    def _consume_up_to(self, offset: int) -> None:
        while self._next < len(self.aborted) and self.aborted[self._next].first_offset <= offset:
            txn = self.aborted[self._next]
            self.ongoing_aborted.setdefault(txn.producer_id, _AbortedInProgress(txn))
            self._next += 1

    def on_batch(self, batch: Batch) -> bool:
        """``onBatchRead``: True when the batch belongs to an aborted transaction (its records
        go, whatever their keys)."""
        if not isinstance(batch, RecordBatchV2):
            return False
        self._consume_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        aborted = self.ongoing_aborted.get(batch.producer_id)
        if aborted is not None:
            aborted.saw_batch = True
            return True
        self.ongoing_committed.add(batch.producer_id)
        return False

    def on_control(self, batch: RecordBatchV2, records: list[Record]) -> bool:
        """``onControlBatchRead``: True when the marker may go (after its delete horizon)."""
        self._consume_up_to(batch.last_offset)
        if not records:
            return True  # an already cleaned empty marker batch
        key = records[0].key
        if key is None or len(key) < _CONTROL_KEY.size:
            return False
        _version, kind = _CONTROL_KEY.unpack_from(key)
        if kind == _ABORT:
            aborted = self.ongoing_aborted.pop(batch.producer_id, None)
            if aborted is not None and aborted.saw_batch:
                # Its batches were removed just now: the marker and index entry stay a round.
                self.kept_aborted.append(aborted.txn)
                return False
            return True
        if kind == _COMMIT:
            if batch.producer_id in self.ongoing_committed:
                self.ongoing_committed.discard(batch.producer_id)
                return False
            return True
        return False


def _read_span(log: PartitionLog, seg: Segment, i: int) -> tuple[bytes, int]:
    """Whole batches from index ``i`` of ``seg``, about `READ_CHUNK` bytes (at least one
    batch); returns the bytes and the index after the last batch read."""
    if not log.holds(seg):
        raise _Abandon
    start = seg.positions[i]
    k = bisect.bisect_left(seg.positions, start + READ_CHUNK, lo=i + 1)
    end = seg.batch_end(k - 1)
    data = seg.read(start, end - start)
    if len(data) != end - start:
        raise _Abandon
    return data, k


async def _build_offset_map(
    log: PartitionLog,
    segments: Sequence[Segment],
    start: int,
    end: int,
    stats: CleanerStats,
    slices: _Slices,
) -> _OffsetMap:
    """Kafka's ``buildOffsetMap`` over the dirty segments [start, end)."""
    omap = _OffsetMap()
    txn = _TxnState.overlapping(log.transactions.aborted, start, end)
    dirty = [
        s
        for n, s in enumerate(segments)
        if s.base_offset < end and _seg_end(segments, n, end) > start
    ]
    for n, seg in enumerate(dirty):
        next_start = dirty[n + 1].base_offset if n + 1 < len(dirty) else end
        i = 0
        while i < seg.batch_count:
            if seg.last_offsets[i] < start:
                i += 1
                continue
            data, i = _read_span(log, seg, i)
            for batch in iter_batches(data):
                if isinstance(batch, RecordBatchV2) and batch.is_control:
                    txn.on_control(batch, batch.records())
                elif not txn.on_batch(batch):
                    # An aborted transaction's records never enter the map (they go anyway,
                    # and must not shadow a committed record of the same key).
                    for record in batch.records():
                        if record.key is not None and record.offset >= start:
                            omap.offsets[record.key] = record.offset
                        stats.map_records += 1
                if batch.last_offset >= start:
                    omap.latest_offset = max(omap.latest_offset, batch.last_offset)
                await slices.tick()
        # Offsets may have gaps (earlier cleanings): the map covers the segment whole.
        omap.latest_offset = max(omap.latest_offset, next_start - 1)
    return omap


def _seg_end(segments: Sequence[Segment], n: int, default: int) -> int:
    return segments[n + 1].base_offset if n + 1 < len(segments) else default


@dataclass
class _Filter:
    """The round's retention rules (Kafka's ``RecordFilter`` in ``cleanInto``)."""

    omap: _OffsetMap
    now_ms: int
    delete_retention_ms: int
    upper_bound: int
    last_of_producers: dict[int, tuple[int | None, int]]
    txn: _TxnState
    stats: CleanerStats

    def retain_record(self, batch: Batch, record: Record, retain_legacy_deletes: bool) -> bool:
        """Kafka's ``shouldRetainRecord``."""
        if record.offset > self.omap.latest_offset:
            return True
        if record.key is None:
            self.stats.invalid_records += 1
            return False
        latest = record.offset >= self.omap.offsets.get(record.key, -1)
        if not latest:
            return False
        if record.value is not None:
            return True
        if isinstance(batch, RecordBatchV2):
            return not batch.has_delete_horizon or self.now_ms < batch.base_timestamp
        return retain_legacy_deletes

    def filter_v2(self, batch: RecordBatchV2) -> bytes:
        """``MemoryRecords.filterTo`` for one v2 batch: the bytes to write (maybe b"")."""
        records = batch.records()
        self.stats.records_read += len(records)
        if batch.is_control:
            can_discard = self.txn.on_control(batch, records)
            discard_records = (
                can_discard and batch.has_delete_horizon and batch.base_timestamp <= self.now_ms
            )
        else:
            can_discard = self.txn.on_batch(batch)
            discard_records = can_discard
        marker_for_empty_txn = can_discard and batch.is_control
        if batch.has_producer_id and self._last_of_producer(batch):
            retention = "retain_empty"
        elif batch.last_offset + 1 == self.upper_bound:
            # The round's last batch stays, even empty: it carries the end offset.
            retention = "retain_empty"
        elif discard_records:
            return b""
        else:
            retention = "delete_empty"
        kept: list[Record] = []
        tombstones = False
        for record in records:
            if discard_records:
                keep = False
            elif batch.is_control:
                keep = True
            else:
                keep = self.retain_record(batch, record, True)
            if keep:
                kept.append(record)
                tombstones |= record.value is None
        if kept:
            set_horizon = (tombstones or marker_for_empty_txn) and not batch.has_delete_horizon
            self.stats.records_written += len(kept)
            if len(kept) == len(records) and not set_horizon:
                return bytes(batch.buffer)
            if set_horizon:
                horizon = self.now_ms + self.delete_retention_ms
            elif batch.has_delete_horizon:
                horizon = batch.base_timestamp
            else:
                horizon = NO_TIMESTAMP
            return rebuild_batch(batch, kept, horizon)
        if retention == "retain_empty":
            return empty_batch(batch)
        return b""

    def _last_of_producer(self, batch: RecordBatchV2) -> bool:
        """``isBatchLastRecordOfProducer``: the batch holding the producer's last data offset,
        or, when it has none, its marker of the current epoch (it carries the epoch that
        fences older ones)."""
        last = self.last_of_producers.get(batch.producer_id)
        if last is None:
            return False
        data_offset, epoch = last
        if data_offset is not None:
            return batch.last_offset == data_offset
        return batch.is_control and batch.producer_epoch == epoch

    def filter_legacy(self, entry: LegacyEntry, retain_deletes: bool) -> bytes:
        """A magic 0/1 entry: kept whole, dropped, or (a compressed wrapper losing some
        inner records) re-encoded with the kept ones, as Kafka's builder does."""
        records = entry.records()
        self.stats.records_read += len(records)
        self.txn.on_batch(entry)  # never transactional; keeps the aborted list in step
        kept = [r for r in records if self.retain_record(entry, r, retain_deletes)]
        self.stats.records_written += len(kept)
        if len(kept) == len(records):
            return bytes(entry.buffer)
        if not kept:
            return b""
        log_append = entry.timestamp_type == TimestampType.LOG_APPEND_TIME
        return encode_message_set(
            [NewRecord(r.offset, r.timestamp, r.key, r.value) for r in kept],
            magic=entry.magic,
            compression=entry.compression,
            timestamp_type=entry.timestamp_type,
            log_append_time=entry.timestamp if log_append else NO_TIMESTAMP,
        )


async def clean_log(
    log: PartitionLog,
    config: CompactionConfig,
    now_ms: int,
    *,
    pacer: Pacer | None = None,
    force: bool = False,
) -> CleanerStats | None:
    """One cleaning round of ``log`` when it is dirty enough (``force``: whenever anything
    is cleanable). None when nothing was cleaned."""
    plan = plan_cleaning(log, now_ms, config)
    if plan.reset_checkpoint:
        log.set_first_dirty_offset(plan.first_dirty_offset)
    if not (plan.should_clean(config.min_cleanable_ratio) or (force and plan.cleanable_bytes)):
        return None
    pacer = pacer or Pacer()
    slices = _Slices(pacer)
    started = time.perf_counter()
    pauses_before = pacer.pauses
    stats = CleanerStats()
    segments = log.cleanable_segments()
    try:
        omap = await _build_offset_map(
            log,
            segments[:-1],
            plan.first_dirty_offset,
            plan.first_uncleanable_offset,
            stats,
            slices,
        )
    except _Abandon:
        return None
    end_offset = omap.latest_offset + 1
    stats.end_offset = end_offset
    # Tombstones of legacy batches: relative to the last clean segment's modification.
    clean = [s for s in segments[:-1] if s.base_offset < plan.first_dirty_offset]
    legacy_horizon = clean[-1].store.last_modified_ms() - config.delete_retention_ms if clean else 0
    filt = _round_filter(log, config, plan, omap, now_ms, stats)
    to_clean = [s for s in segments[:-1] if s.base_offset < end_offset]
    groups = group_segments_by_size(
        to_clean, config.segment_bytes, config.max_index_bytes, plan.first_uncleanable_offset
    )
    await _clean_groups(log, groups, filt, legacy_horizon, slices)
    if stats.groups_abandoned == 0:
        log.set_first_dirty_offset(end_offset)
    stats.elapsed_s = time.perf_counter() - started
    stats.pauses = pacer.pauses - pauses_before
    _log_round(log, plan, stats)
    return stats


def _round_filter(
    log: PartitionLog,
    config: CompactionConfig,
    plan: CleaningPlan,
    omap: _OffsetMap,
    now_ms: int,
    stats: CleanerStats,
) -> _Filter:
    """The round's retention rules, over the offset map of its dirty range."""
    return _Filter(
        omap=omap,
        now_ms=now_ms,
        delete_retention_ms=config.delete_retention_ms,
        upper_bound=plan.first_uncleanable_offset,
        last_of_producers=log.last_producer_offsets(),
        # One transaction state for the whole round, not one per group as in Kafka: a COMMIT
        # marker must not go while a batch of its transaction survives in an earlier group,
        # since zkbroker rebuilds transactions from the files and would reopen it.
        txn=_TxnState.overlapping(log.transactions.aborted, 0, omap.latest_offset + 1),
        stats=stats,
    )


async def _clean_groups(
    log: PartitionLog,
    groups: list[list[Segment]],
    filt: _Filter,
    legacy_horizon: int,
    slices: _Slices,
) -> None:
    """Clean and swap in each group in turn (`_clean_group`), stopping at the first one not
    swapped in; counted in ``filt.stats``."""
    for group in groups:
        try:
            swapped = await _clean_group(log, group, filt, legacy_horizon, slices)
        except _Abandon:
            swapped = False
        filt.stats.groups += 1
        if not swapped:
            filt.stats.groups_abandoned += 1
            break
        _keep_cleaned_index(log, group, filt.txn)


def _log_round(log: PartitionLog, plan: CleaningPlan, stats: CleanerStats) -> None:
    _log.info(
        "log_cleaner.cleaned",
        topic=log.topic,
        partition=log.partition,
        first_dirty_offset=plan.first_dirty_offset,
        end_offset=stats.end_offset,
        dirty_ratio=round(plan.cleanable_ratio, 3),
        bytes_read=stats.bytes_read,
        bytes_written=stats.bytes_written,
        records_read=stats.records_read,
        records_written=stats.records_written,
        groups=stats.groups,
        abandoned=stats.groups_abandoned,
        ms=round(stats.elapsed_s * 1000, 1),
    )


async def _clean_group(
    log: PartitionLog,
    group: list[Segment],
    filt: _Filter,
    legacy_horizon: int,
    slices: _Slices,
) -> bool:
    """Kafka's ``cleanSegments``: the group into one cleaned store, then the swap."""
    store: SegmentStore = log.create_cleaned_store(group[0].base_offset)
    try:
        pending: list[bytes] = []
        pending_size = 0
        for seg in group:
            if not log.holds(seg):
                raise _Abandon
            retain_legacy_deletes = seg.store.last_modified_ms() > legacy_horizon
            i = 0
            while i < seg.batch_count:
                data, i = _read_span(log, seg, i)
                filt.stats.bytes_read += len(data)
                for batch in iter_batches(data):
                    try:
                        if isinstance(batch, RecordBatchV2):
                            out = filt.filter_v2(batch)
                        else:
                            out = filt.filter_legacy(batch, retain_legacy_deletes)
                    except RecordFormatError:
                        # A batch the cleaner cannot read stays as it is.
                        _log.warning(
                            "log_cleaner.unreadable_batch",
                            topic=log.topic,
                            partition=log.partition,
                            offset=batch.last_offset,
                        )
                        out = bytes(batch.buffer)
                    if out:
                        pending.append(out)
                        pending_size += len(out)
                    if pending_size >= WRITE_CHUNK:
                        _flush(store, pending, filt.stats)
                        pending, pending_size = [], 0
                    await slices.tick()
        _flush(store, pending, filt.stats)
    except BaseException:
        discard_cleaned(store)
        raise
    if not all(log.holds(seg) for seg in group):
        discard_cleaned(store)
        return False
    replaced = log.replace_segments(
        group, store, last_modified_ms=group[-1].store.last_modified_ms()
    )
    return replaced is not None


def _keep_cleaned_index(log: PartitionLog, group: list[Segment], txn: _TxnState) -> None:
    """The swapped group's ``.txnindex`` becomes the cleaned one (``cleanSegments`` writes
    ``cleanedIndex``): of the aborted entries whose marker lies in the group's offsets, those
    whose marker stayed with batches seen remain.

    Another process re-indexing the cleaned log rebuilds its aborted index from the batches
    left, so an entry whose batches all went is gone a round earlier than Kafka drops it."""
    segments = log.cleanable_segments()
    base = group[0].base_offset
    after = next((s.base_offset for s in segments if s.base_offset > base), None)
    if after is None:
        return
    log.transactions.keep_aborted_between(base, after, set(txn.kept_aborted))


def _flush(store: SegmentStore, pending: list[bytes], stats: CleanerStats) -> None:
    if pending:
        data = b"".join(pending)
        store.write(data)
        stats.bytes_written += len(data)


__all__ = [
    "CleanerStats",
    "CleaningPlan",
    "CompactionConfig",
    "clean_log",
    "group_segments_by_size",
    "plan_cleaning",
]
