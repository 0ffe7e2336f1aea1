"""One broker's group coordinator: the asyncio shell around ``GroupStateMachine``.

Kafka's ``GroupCoordinator`` with ``GroupMetadataManager``'s partition handling
(docs/kafka-behaviour.md §16): a group belongs to partition ``abs(hashCode(group)) %
partitions`` of ``__consumer_offsets`` and its coordinator is that partition's leader. This
broker coordinates the partitions its metadata image says it leads; when it becomes leader
(seen by a periodic check and by every request) it loads the partition by replaying its log
(COORDINATOR_LOAD_IN_PROGRESS meanwhile), and when leadership moves away it forgets the groups
(waiting members learn NOT_COORDINATOR). Every change is appended to the partition's log
(``zkbroker.broker.storage``, shared by the brokers of the process; on disk with ``--log-dir``), so
the next leader, or this broker after a restart, finds the same groups and offsets.

Timers: one task sleeps until the earliest group deadline (delayed joins, syncs, heartbeat
expiry) and runs the state machine's `tick`; the same periodic task that follows leadership
expires offsets every ``offsets.retention.check.interval.ms``. Loading runs in slices
(``zkbroker.broker.asyncutil.Pacer``) so a long log does not hold the event loop.

Deliberately not here: the decisions (``zkbroker.broker.groups.state_machine``), the wire
(``handlers``), creating the offsets topic (``zkbroker.handlers.find_coordinator``), compaction (the
log cleaner's, ``zkbroker.broker.storage.cleaner``, run by the retention pass; loading replays what
it kept).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

from zkbroker.broker.asyncutil import Pacer, now_ms
from zkbroker.broker.groups.config import GroupConfig, Record
from zkbroker.broker.groups.records import decode_key
from zkbroker.broker.groups.state_machine import GroupStateMachine
from zkbroker.broker.groups.zk_registry import java_abs_hash
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.records import NewRecord, RecordBatchV2, encode_batch, iter_batches
from zkbroker.broker.protocol.records.control import read_end_txn_marker
from zkbroker.broker.storage import LogManager, PartitionLog
from zkbroker.zk_layout.release import Release

OFFSETS_TOPIC = "__consumer_offsets"
_CHECK_INTERVAL_S = 0.2
# A log this small is replayed inline when leadership is found (no LOAD_IN_PROGRESS).
_LOAD_AT_ONCE_BYTES = 256 * 1024
_READ_BYTES = 1 << 20

_log = get_logger(__name__)


def _always(_group_id: str) -> bool:
    return True  # replaying one partition: every group in it


def _transactional(producer: tuple[int, int] | None) -> dict[str, Any]:
    # GroupMetadataManager.storeOffsets builds the batch with the producer's id and epoch and
    # base sequence 0 (the coordinator's appends skip sequence checks).
    if producer is None:
        return {}
    return {
        "producer_id": producer[0],
        "producer_epoch": producer[1],
        "base_sequence": 0,
        "transactional": True,
    }


class _Load(Enum):
    LOADING = "loading"
    LOADED = "loaded"


class GroupCoordinator:
    def __init__(
        self,
        broker_id: int,
        image: MetadataImage,
        logs: LogManager,
        release: Release,
        config: Callable[[], GroupConfig],
    ) -> None:
        self.broker_id = broker_id
        self._image = image
        self._logs = logs
        self._config = config
        self.machine = GroupStateMachine(config(), release, self._write)
        self.machine.write_txn = self._write_txn
        # partition -> (leader epoch it was loaded for, state)
        self._partitions: dict[int, tuple[int, _Load]] = {}
        self._loads: dict[int, asyncio.Task[None]] = {}
        self._heap: list[tuple[int, str]] = []
        self._wake: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._active = False
        self._last_expiry = 0
        self._log = _log.bind(broker_id=broker_id)

    # ---- lifecycle -----------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self._active

    async def start(self) -> None:
        self._active = True
        self._wake = asyncio.Event()
        self._last_expiry = now_ms()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._timers()), loop.create_task(self._follow())]

    async def stop(self) -> None:
        self._active = False
        tasks = self._tasks + list(self._loads.values())
        self._tasks, self._loads = [], {}
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.machine.unload(list(self.machine.groups))
        self._partitions.clear()
        self._heap.clear()

    # ---- where a group lives -------------------------------------------------------------

    def partition_count(self) -> int | None:
        topic = self._image.topics.get(OFFSETS_TOPIC)
        if topic is None or not topic.assignment:
            return None
        return len(topic.assignment)

    def partition_for(self, group_id: str) -> int | None:
        count = self.partition_count()
        return None if count is None else java_abs_hash(group_id) % count

    def leader_of(self, partition: int) -> tuple[int, int]:
        """(leader, leader epoch) of an offsets partition, (-1, -1) when unknown."""
        topic = self._image.topics.get(OFFSETS_TOPIC)
        state = None if topic is None else topic.partitions.get(partition)
        return (-1, -1) if state is None else (state.leader, state.leader_epoch)

    def status(self, group_id: str) -> int:
        """Kafka's validateGroupStatus after the id check: COORDINATOR_NOT_AVAILABLE while not
        started or without an offsets topic, COORDINATOR_LOAD_IN_PROGRESS while loading the
        group's partition, NOT_COORDINATOR when another broker leads it, else NONE."""
        if not self._active:
            return ec.COORDINATOR_NOT_AVAILABLE
        partition = self.partition_for(group_id)
        if partition is None:
            return ec.COORDINATOR_NOT_AVAILABLE
        state = self._ensure(partition)
        if state is None:
            return ec.NOT_COORDINATOR
        return ec.COORDINATOR_LOAD_IN_PROGRESS if state is _Load.LOADING else ec.NONE

    def owned_loaded(self) -> bool:
        """Whether every partition this broker leads is loaded (ListGroups' check)."""
        count = self.partition_count() or 0
        return all(self._ensure(p) is not _Load.LOADING for p in range(count))

    def _ensure(self, partition: int) -> _Load | None:
        leader, epoch = self.leader_of(partition)
        held = self._partitions.get(partition)
        if leader != self.broker_id:
            if held is not None:
                self._unload(partition)
            return None
        if held is not None and held[0] == epoch:
            return held[1]
        if held is not None:
            self._unload(partition)
        log = self._open(partition)
        if log.size_bytes <= _LOAD_AT_ONCE_BYTES:
            # Kafka loads a partition as soon as it becomes its leader, so clients rarely see
            # LOAD_IN_PROGRESS; a small log (every log of a fresh cluster) is replayed here
            # at once, in far less time than one slice of the loop.
            seen: set[str] = set()
            self._replay(log, log.log_start_offset, now_ms(), seen)
            self._finish_load(partition, epoch, seen, time.monotonic())
            return _Load.LOADED
        self._partitions[partition] = (epoch, _Load.LOADING)
        self._loads[partition] = asyncio.get_running_loop().create_task(
            self._load(partition, epoch)
        )
        return _Load.LOADING

    def _groups_of(self, partition: int) -> list[str]:
        count = self.partition_count()
        return [g for g in self.machine.groups if count and java_abs_hash(g) % count == partition]

    def _unload(self, partition: int) -> None:
        task = self._loads.pop(partition, None)
        if task is not None:
            task.cancel()
        self._partitions.pop(partition, None)
        groups = self._groups_of(partition)
        self.machine.unload(groups)
        self._log.info("group.partition_unloaded", partition=partition, groups=len(groups))

    async def _load(self, partition: int, epoch: int) -> None:
        pacer = Pacer()
        start = time.monotonic()
        log = self._open(partition)
        offset = log.log_start_offset
        seen: set[str] = set()
        try:
            while offset < log.log_end_offset:
                next_offset = self._replay(log, offset, now_ms(), seen, limit=_READ_BYTES)
                if next_offset == offset:
                    break
                offset = next_offset
                if pacer.due():
                    await pacer.pause()
        except Exception:
            self._log.exception("group.load_failed", partition=partition)
        self._finish_load(partition, epoch, seen, start)

    def _replay(
        self,
        log: PartitionLog,
        offset: int,
        now: int,
        seen: set[str],
        limit: int | None = None,
    ) -> int:
        """Replay the records from `offset` (one read of `limit` bytes, or to the log end);
        returns the offset after the last batch replayed."""
        while offset < log.log_end_offset:
            data = log.read(offset, limit or _READ_BYTES)
            if not data:
                break
            for batch in iter_batches(data):
                if batch.last_offset < offset or not isinstance(batch, RecordBatchV2):
                    continue
                if batch.is_control:
                    if batch.records_count:
                        # A transaction's end: its offsets in this partition's groups.
                        marker = read_end_txn_marker(batch)
                        self.machine.complete_txn(batch.producer_id, marker.commit, _always, now)
                else:
                    producer = batch.producer_id if batch.is_transactional else None
                    for record in batch.records():
                        if record.key is None or record.offset < offset:
                            continue
                        self.machine.replay(record.key, record.value, now, producer)
                        key = decode_key(record.key)
                        if key is not None:
                            seen.add(key.group)
                offset = batch.last_offset + 1
            if limit is not None:
                break
        return offset

    def _finish_load(self, partition: int, epoch: int, seen: set[str], start: float) -> None:
        self.machine.loaded(seen, now_ms())
        self._partitions[partition] = (epoch, _Load.LOADED)
        self._loads.pop(partition, None)
        for group_id in seen:
            self.touch(group_id)
        self._log.info(
            "group.partition_loaded",
            partition=partition,
            groups=len(seen),
            ms=round((time.monotonic() - start) * 1000, 1),
        )

    def _open(self, partition: int) -> PartitionLog:
        topic = self._image.topics.get(OFFSETS_TOPIC)
        return self._logs.get_or_create(OFFSETS_TOPIC, partition, topic.topic_id if topic else None)

    # ---- writing -------------------------------------------------------------------------

    def complete_txn(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker was written to ``__consumer_offsets``-`partition`: the
        producer's pending offsets of that partition's groups are materialized or dropped
        (GroupMetadataManager.handleTxnCompletion)."""
        touched = self.machine.complete_txn(
            producer_id, commit, lambda group: self.partition_for(group) == partition, now_ms()
        )
        for group_id in touched:
            self.touch(group_id)

    def _write_txn(
        self, group_id: str, records: Sequence[Record], producer_id: int, producer_epoch: int
    ) -> int:
        return self._write(group_id, records, producer=(producer_id, producer_epoch))

    def _write(
        self,
        group_id: str,
        records: Sequence[Record],
        producer: tuple[int, int] | None = None,
    ) -> int:
        """Append the records as one batch to the group's partition, if this broker still
        leads it (Kafka's storeGroup/storeOffsets through appendRecords); with `producer`, a
        transactional batch of that producer id and epoch (a TxnOffsetCommit)."""
        partition = self.partition_for(group_id)
        if partition is None:
            return ec.COORDINATOR_NOT_AVAILABLE
        leader, epoch = self.leader_of(partition)
        if leader != self.broker_id:
            return ec.NOT_COORDINATOR
        log = self._open(partition)
        now = now_ms()
        with log.append_lock():
            base = log.log_end_offset
            batch = encode_batch(
                [
                    NewRecord(offset=base + i, timestamp=now, key=key, value=value)
                    for i, (key, value) in enumerate(records)
                ],
                base_offset=base,
                partition_leader_epoch=epoch,
                **_transactional(producer),
            )
            log.append(
                batch,
                base_offset=base,
                last_offset=base + len(records) - 1,
                max_timestamp=now,
                offset_of_max_timestamp=base + len(records) - 1,
                leader_epoch=epoch,
            )
        return ec.NONE

    # ---- timers --------------------------------------------------------------------------

    def touch(self, group_id: str) -> None:
        """Re-arm the timer for the group's next deadline (call after every operation)."""
        group = self.machine.groups.get(group_id)
        if group is None:
            return
        deadline = self.machine.next_deadline(group)
        if deadline is not None:
            heapq.heappush(self._heap, (deadline, group_id))
            if self._wake is not None:
                self._wake.set()

    async def _timers(self) -> None:
        assert self._wake is not None
        while True:
            now = now_ms()
            due: set[str] = set()
            while self._heap and self._heap[0][0] <= now:
                due.add(heapq.heappop(self._heap)[1])
            for group_id in due:
                try:
                    self.machine.tick(group_id, now)
                except Exception:
                    self._log.exception("group.tick_failed", group=group_id)
                self.touch(group_id)
            self._wake.clear()
            timeout = None if not self._heap else max(self._heap[0][0] - now_ms(), 0) / 1000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _follow(self) -> None:
        """Load the partitions this broker came to lead, drop those it lost, expire offsets."""
        while True:
            try:
                count = self.partition_count() or 0
                for partition in range(count):
                    self._ensure(partition)
                for partition in [p for p in self._partitions if p >= count]:
                    self._unload(partition)
                self.machine.config = self._config()
                now = now_ms()
                if (
                    now - self._last_expiry
                    >= self.machine.config.offsets_retention_check_interval_ms
                ):
                    self._last_expiry = now
                    removed = self.machine.expire_offsets(now)
                    if removed:
                        self._log.info("group.offsets_expired", count=removed)
            except Exception:
                self._log.exception("group.follow_failed")
            await asyncio.sleep(_CHECK_INTERVAL_S)
