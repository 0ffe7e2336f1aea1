"""The partitions of a coordinator's internal topic: the base both coordinators build on.

In the spirit of Kafka's `CoordinatorRuntime` / `CoordinatorShard` (docs/kafka-behaviour.md
§16 "Where a group lives", §17): a key (group id, transactional id) belongs to a partition of
`__consumer_offsets` or `__transaction_state`, coordinated by its leader. `CoordinatorRuntime`
follows which partitions this broker leads (metadata image, on every request and from a
periodic loop), loads one when it becomes led (replaying its log; LOADING meanwhile,
COORDINATOR_LOAD_IN_PROGRESS to callers), unloads it when leadership moves, and appends
batches, whose callers may wait for the ISR to have them (Kafka's coordinators append with
acks=-1; `mark` and `replicated`). A small log is replayed at once; a larger one by a task in slices
(`zkbroker.broker.asyncutil.Pacer`), so the event loop is not held.

A coordinator is a subclass: it is the shard, and implements the hooks below (what a replayed
batch, a finished load, an unload and the periodic pass mean to its state), so the runtime
never reaches into another object and a coordinator is whole once constructed.

Not here: what records mean and the checks before an append (the coordinators:
`zkbroker.broker.groups.coordinator`, `zkbroker.broker.transactions.coordinator`), creating
the internal topics (`zkbroker.handlers.find_coordinator`).
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from zkbroker.broker.asyncutil import Pacer, now_ms
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.records import NewRecord, RecordBatchV2, encode_batch, iter_batches
from zkbroker.broker.storage import LogManager, PartitionLog

if TYPE_CHECKING:
    from zkbroker.broker.replication.replica_manager import ReplicaManager

#: The follow loop's period (seconds).
CHECK_INTERVAL_S = 0.2
#: A log this small is replayed inline when leadership is found (no LOAD_IN_PROGRESS).
LOAD_AT_ONCE_BYTES = 256 * 1024
#: One read of a replay (one slice of a paced load).
READ_BYTES = 1 << 20

D = TypeVar("D")
A = TypeVar("A")


class PartitionState(Enum):
    LOADING = "loading"
    LOADED = "loaded"


@dataclass(slots=True, eq=False)
class OwnedPartition(Generic[D]):
    """A partition this broker leads: the leader epoch it was loaded for (the coordinator
    epoch), its state, and the shard's data for it."""

    partition: int
    epoch: int
    state: PartitionState
    data: D


class AppendMark(NamedTuple):
    """Where a coordinator partition's log ended before a request's appends."""

    partition: int
    log_end_offset: int


class CoordinatorRuntime(ABC, Generic[D, A]):
    """One internal topic's partitions as this broker leads them, for a coordinator that
    subclasses it and implements the shard's hooks. A load runs `begin_load` once, then
    `replay` for every data or control batch read (in offset order, with the offset the read
    started from: records before it were replayed already), then `replayed`, after which the
    runtime marks the partition LOADED, then `loaded`."""

    def __init__(
        self,
        *,
        topic: str,
        event_prefix: str,
        broker_id: int,
        image: MetadataImage,
        logs: LogManager,
        partition_of: Callable[[str, int], int],
        log: Any,
        replicas: ReplicaManager | None = None,
    ) -> None:
        self.topic = topic
        self.broker_id = broker_id
        self.active = False
        #: partition -> the partition as loaded (LOADING or LOADED); only the runtime adds or
        #: removes one.
        self.partitions: dict[int, OwnedPartition[D]] = {}
        self._prefix = event_prefix
        self._image = image
        self._logs = logs
        self._partition_of = partition_of
        self._loads: dict[int, asyncio.Task[None]] = {}
        self._follow_task: asyncio.Task[None] | None = None
        self._log = log
        self._replicas = replicas

    # ---- the shard's hooks ---------------------------------------------------------------

    @abstractmethod
    def new_data(self) -> D:
        """The shard's data of a partition about to load."""

    @abstractmethod
    def begin_load(self) -> A:
        """What one load accumulates while replaying."""

    @abstractmethod
    def replay(self, batch: RecordBatchV2, offset: int, acc: A, now: int) -> None:
        """One batch of the partition's log, read from `offset`."""

    @abstractmethod
    def replayed(self, owned: OwnedPartition[D], acc: A) -> None:
        """The log is replayed; the partition is still LOADING."""

    @abstractmethod
    def loaded(self, owned: OwnedPartition[D], acc: A, start: float) -> None:
        """The partition is LOADED (`start`: `time.monotonic()` when its load began)."""

    @abstractmethod
    def unloaded(self, partition: int, owned: OwnedPartition[D] | None) -> None:
        """Leadership moved away (or the topic shrank): forget the partition's keys."""

    @abstractmethod
    def periodic(self) -> None:
        """The follow loop's own work after following leadership (expiry, timeouts)."""

    # ---- lifecycle -----------------------------------------------------------------------

    def start_following(self) -> None:
        """Active, and the follow loop started (the coordinator's start calls it)."""
        self.active = True
        self._follow_task = asyncio.get_running_loop().create_task(
            self._follow(), name=f"{self._prefix}-follow-{self.broker_id}"
        )

    def take_tasks(self) -> list[asyncio.Task[None]]:
        """Inactive; the follow loop and the running loads, for the caller to cancel (with its
        own tasks, `zkbroker.broker.asyncutil.cancel_and_wait`) before `clear`."""
        self.active = False
        tasks = [] if self._follow_task is None else [self._follow_task]
        tasks += list(self._loads.values())
        self._follow_task, self._loads = None, {}
        return tasks

    def clear(self) -> None:
        self.partitions.clear()

    # ---- where a key lives ---------------------------------------------------------------

    def partition_count(self) -> int | None:
        topic = self._image.topics.get(self.topic)
        if topic is None or not topic.assignment:
            return None
        return len(topic.assignment)

    def partition_for(self, key: str) -> int | None:
        count = self.partition_count()
        return None if count is None else self._partition_of(key, count)

    def leader_of(self, partition: int) -> tuple[int, int]:
        """(leader, leader epoch) of a partition of the topic, (-1, -1) when unknown."""
        topic = self._image.topics.get(self.topic)
        state = None if topic is None else topic.partitions.get(partition)
        return (-1, -1) if state is None else (state.leader, state.leader_epoch)

    def status(self, key: str) -> int:
        """COORDINATOR_NOT_AVAILABLE while not started or without the topic, NOT_COORDINATOR
        when another broker leads the key's partition, COORDINATOR_LOAD_IN_PROGRESS while
        loading it, else NONE."""
        if not self.active:
            return ec.COORDINATOR_NOT_AVAILABLE
        partition = self.partition_for(key)
        if partition is None:
            return ec.COORDINATOR_NOT_AVAILABLE
        owned = self.ensure(partition)
        if owned is None:
            return ec.NOT_COORDINATOR
        return ec.COORDINATOR_LOAD_IN_PROGRESS if owned.state is PartitionState.LOADING else ec.NONE

    def owned(self) -> list[OwnedPartition[D]]:
        """Every partition this broker leads, as `ensure` finds it now."""
        count = self.partition_count() or 0
        return [o for o in (self.ensure(p) for p in range(count)) if o is not None]

    # ---- loading and unloading -----------------------------------------------------------

    def ensure(self, partition: int) -> OwnedPartition[D] | None:
        """The partition if this broker leads it, loaded or loading (a load starts when this
        broker came to lead it, or at a new leader epoch); None, unloading it, if not."""
        leader, epoch = self.leader_of(partition)
        owned = self.partitions.get(partition)
        if leader != self.broker_id:
            if owned is not None:
                self.unload(partition)
            return None
        if owned is not None and owned.epoch == epoch:
            return owned
        if owned is not None:
            self.unload(partition)
        log = self.open(partition)
        owned = OwnedPartition(partition, epoch, PartitionState.LOADING, self.new_data())
        if log.size_bytes <= LOAD_AT_ONCE_BYTES:
            acc = self.begin_load()
            try:
                self._replay(log, log.log_start_offset, acc, now_ms(), None)
            except Exception:
                self._log_load_failed(partition)
            self._finish_load(owned, acc, time.monotonic())
            return owned
        self.partitions[partition] = owned
        self._loads[partition] = asyncio.get_running_loop().create_task(
            self._load(owned), name=f"{self._prefix}-load-{self.broker_id}-{partition}"
        )
        return owned

    def unload(self, partition: int) -> None:
        task = self._loads.pop(partition, None)
        if task is not None:
            task.cancel()
        owned = self.partitions.pop(partition, None)
        self.unloaded(partition, owned)

    async def _load(self, owned: OwnedPartition[D]) -> None:
        pacer = Pacer()
        start = time.monotonic()
        log = self.open(owned.partition)
        offset = log.log_start_offset
        acc = self.begin_load()
        try:
            while offset < log.log_end_offset:
                next_offset = self._replay(log, offset, acc, now_ms(), READ_BYTES)
                if next_offset == offset:
                    break
                offset = next_offset
                if pacer.due():
                    await pacer.pause()
        except Exception:
            self._log_load_failed(owned.partition)
        self._loads.pop(owned.partition, None)
        self._finish_load(owned, acc, start)

    def _replay(self, log: PartitionLog, offset: int, acc: A, now: int, limit: int | None) -> int:
        """Replay the batches from `offset` (one read of `limit` bytes, or to the log end);
        returns the offset after the last batch replayed."""
        while offset < log.log_end_offset:
            data = log.read(offset, limit or READ_BYTES)
            if not data:
                break
            for batch in iter_batches(data):
                if batch.last_offset < offset or not isinstance(batch, RecordBatchV2):
                    continue
                self.replay(batch, offset, acc, now)
                offset = batch.last_offset + 1
            if limit is not None:
                break
        return offset

    def _log_load_failed(self, partition: int) -> None:
        # As Kafka's coordinators (the `finally` of GroupMetadataManager.loadGroupsAndOffsets
        # and TransactionStateManager's load): a failed load is logged, and the partition is
        # owned all the same, with what was replayed before the failure.
        self._log.exception(f"{self._prefix}.load_failed", partition=partition)

    def _finish_load(self, owned: OwnedPartition[D], acc: A, start: float) -> None:
        self.replayed(owned, acc)
        owned.state = PartitionState.LOADED
        self.partitions[owned.partition] = owned
        self.loaded(owned, acc, start)

    def open(self, partition: int) -> PartitionLog:
        topic = self._image.topics.get(self.topic)
        return self._logs.get_or_create(self.topic, partition, topic.topic_id if topic else None)

    # ---- writing -------------------------------------------------------------------------

    def append(
        self,
        partition: int,
        leader_epoch: int,
        records: Sequence[tuple[bytes | None, bytes | None]],
        batch_fields: Mapping[str, Any] | None = None,
    ) -> None:
        """Append the records as one batch stamped with `leader_epoch` (the caller checked
        leadership); `batch_fields` are `encode_batch`'s (a transactional batch's producer)."""
        now = now_ms()
        log = self.open(partition)
        with log.append_lock():
            base = log.log_end_offset
            batch = encode_batch(
                [
                    NewRecord(offset=base + i, timestamp=now, key=key, value=value)
                    for i, (key, value) in enumerate(records)
                ],
                base_offset=base,
                partition_leader_epoch=leader_epoch,
                **(batch_fields or {}),
            )
            log.append(
                batch,
                base_offset=base,
                last_offset=base + len(records) - 1,
                max_timestamp=now,
                offset_of_max_timestamp=base + len(records) - 1,
                leader_epoch=leader_epoch,
            )

    def mark(self, key: str) -> AppendMark | None:
        """Where the log of `key`'s partition ends now (None when this broker has not loaded
        it), taken before a request appends so `replicated` knows what it appended."""
        partition = self.partition_for(key)
        if partition is None or partition not in self.partitions:
            return None
        return AppendMark(partition, self.open(partition).log_end_offset)

    async def replicated(self, mark: AppendMark | None, timeout_ms: int) -> int:
        """acks=-1 for what was appended to the mark's partition since the mark: NONE at once
        when nothing was, else once the ISR has it, or the replica manager's code
        (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT)."""
        if mark is None:
            return ec.NONE
        end = self.open(mark.partition).log_end_offset
        if end <= mark.log_end_offset:
            return ec.NONE
        return await self.replicated_to(mark.partition, end, timeout_ms)

    async def replicated_to(self, partition: int, offset: int, timeout_ms: int) -> int:
        """acks=-1 for the records of `partition` below `offset`."""
        if self._replicas is None:
            return ec.NONE
        tp = (self.topic, partition)
        return (await self._replicas.wait_for_acks({tp: offset}, timeout_ms))[tp]

    # ---- the follow loop -----------------------------------------------------------------

    async def _follow(self) -> None:
        """Load the partitions this broker came to lead, drop those it lost, then the shard's
        periodic work."""
        while True:
            try:
                count = self.partition_count() or 0
                for partition in range(count):
                    self.ensure(partition)
                for partition in [p for p in self.partitions if p >= count]:
                    self.unload(partition)
                self.periodic()
            except Exception:
                self._log.exception(f"{self._prefix}.follow_failed")
            await asyncio.sleep(CHECK_INTERVAL_S)
