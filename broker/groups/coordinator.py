"""One broker's group coordinator: the asyncio shell around `GroupStateMachine`.

Kafka's `GroupCoordinator` with `GroupMetadataManager`'s partition handling
(docs/kafka-behaviour.md §16, "Where a group lives", "zkbroker's deviations").
`GroupCoordinator` is a `zkbroker.broker.coordinator_runtime.CoordinatorRuntime` (ownership,
loading, unloading, appending, the follow loop) and its shard: what a replayed batch and a
load or unload mean to the state machine. It adds one timer task that runs the state machine's
`tick` at the earliest group deadline, and offset expiry every
`offsets.retention.check.interval.ms` from the runtime's follow loop.

Not here: the decisions (`zkbroker.broker.rules.groups.state_machine`), the wire (`handlers`),
creating the offsets topic (`zkbroker.handlers.find_coordinator`), compaction (the log
cleaner's, `zkbroker.broker.storage.cleaner`).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from zkbroker.broker.asyncutil import cancel_and_wait, now_ms, wait_for
from zkbroker.broker.coordinator_runtime import (
    AppendMark,
    CoordinatorRuntime,
    OwnedPartition,
    PartitionState,
)
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.records import RecordBatchV2
from zkbroker.broker.protocol.records.control import read_end_txn_marker
from zkbroker.broker.rules.groups.config import CoordinatorRecord, GroupConfig
from zkbroker.broker.rules.groups.offsets import convert_offset_commit_error
from zkbroker.broker.rules.groups.offsets_topic_codec import decode_key
from zkbroker.broker.rules.groups.state_machine import GroupStateMachine
from zkbroker.broker.rules.jvm_collections import java_abs_hash
from zkbroker.broker.storage import LogManager
from zkbroker.zk_layout.release import Release

if TYPE_CHECKING:
    from zkbroker.broker.replication.replica_manager import ReplicaManager

OFFSETS_TOPIC = "__consumer_offsets"
K = TypeVar("K")

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


class GroupCoordinator(CoordinatorRuntime[None, set[str]]):
    """The ``__consumer_offsets`` partitions this broker leads and every classic group in them
    (`machine`). As the runtime's shard, a replayed batch goes to the state machine (which
    holds every group of every partition: a partition has no data of its own) and a load
    accumulates the groups it saw. `status` is Kafka's validateGroupStatus after the id check:
    COORDINATOR_NOT_AVAILABLE while not started or without an offsets topic,
    COORDINATOR_LOAD_IN_PROGRESS while loading the group's partition, NOT_COORDINATOR when
    another broker leads it, else NONE."""

    def __init__(
        self,
        broker_id: int,
        image: MetadataImage,
        logs: LogManager,
        release: Release,
        config: Callable[[], GroupConfig],
        replicas: ReplicaManager | None = None,
    ) -> None:
        super().__init__(
            topic=OFFSETS_TOPIC,
            event_prefix="group",
            broker_id=broker_id,
            image=image,
            logs=logs,
            partition_of=lambda group_id, count: java_abs_hash(group_id) % count,
            log=_log.bind(broker_id=broker_id),
            replicas=replicas,
        )
        self._config = config
        self.machine = GroupStateMachine(config(), release, self._write, self._write_txn)
        self._heap: list[tuple[int, str]] = []
        self._wake: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._last_expiry = 0

    # ---- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        self._wake = asyncio.Event()
        self._last_expiry = now_ms()
        self._tasks = [
            asyncio.get_running_loop().create_task(
                self._timers(), name=f"group-timers-{self.broker_id}"
            )
        ]
        self.start_following()

    async def stop(self) -> None:
        tasks = self._tasks + self.take_tasks()
        self._tasks = []
        # The timer loop runs while `_wake` is its own event: a loop that lost its
        # cancellation still ends at its next wake-up, which this gives it.
        wake, self._wake = self._wake, None
        if wake is not None:
            wake.set()
        await cancel_and_wait(tasks, what="group_coordinator", log=self._log)
        self.machine.unload(list(self.machine.groups))
        self.clear()
        self._heap.clear()

    # ---- the runtime's shard -------------------------------------------------------------

    def new_data(self) -> None:
        return None

    def begin_load(self) -> set[str]:
        return set()

    def replay(self, batch: RecordBatchV2, offset: int, seen: set[str], now: int) -> None:
        if batch.is_control:
            if batch.records_count:
                # A transaction's end: its offsets in this partition's groups.
                marker = read_end_txn_marker(batch)
                self.machine.complete_txn(batch.producer_id, marker.commit, _always, now)
            return
        producer = batch.producer_id if batch.is_transactional else None
        for record in batch.records():
            if record.key is None or record.offset < offset:
                continue
            self.machine.replay(record.key, record.value, now, producer)
            key = decode_key(record.key)
            if key is not None:
                seen.add(key.group)

    def replayed(self, owned: OwnedPartition[None], seen: set[str]) -> None:
        self.machine.loaded(seen, now_ms())

    def loaded(self, owned: OwnedPartition[None], seen: set[str], start: float) -> None:
        for group_id in seen:
            self.touch(group_id)
        self._log.info(
            "group.partition_loaded",
            partition=owned.partition,
            groups=len(seen),
            ms=round((time.monotonic() - start) * 1000, 1),
        )

    def unloaded(self, partition: int, owned: OwnedPartition[None] | None) -> None:
        groups = self._groups_of(partition)
        self.machine.unload(groups)
        self._log.info("group.partition_unloaded", partition=partition, groups=len(groups))

    def periodic(self) -> None:
        """Expire offsets every ``offsets.retention.check.interval.ms``."""
        self.machine.config = self._config()
        now = now_ms()
        if now - self._last_expiry >= self.machine.config.offsets_retention_check_interval_ms:
            self._last_expiry = now
            removed = self.machine.expire_offsets(now)
            if removed:
                self._log.info("group.offsets_expired", count=removed)

    # ---- the partitions led --------------------------------------------------------------

    def owned_loaded(self) -> bool:
        """Whether every partition this broker leads is loaded (ListGroups' check)."""
        count = self.partition_count() or 0
        for partition in range(count):  # stops ensuring at the first partition still loading
            owned = self.ensure(partition)
            if owned is not None and owned.state is PartitionState.LOADING:
                return False
        return True

    def _groups_of(self, partition: int) -> list[str]:
        count = self.partition_count()
        return [g for g in self.machine.groups if count and java_abs_hash(g) % count == partition]

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
        self,
        group_id: str,
        records: Sequence[CoordinatorRecord],
        producer_id: int,
        producer_epoch: int,
    ) -> int:
        return self._write(group_id, records, producer=(producer_id, producer_epoch))

    def _write(
        self,
        group_id: str,
        records: Sequence[CoordinatorRecord],
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
        self.append(partition, epoch, records, _transactional(producer))
        return ec.NONE

    async def commit_replicated(self, mark: AppendMark | None, codes: dict[K, int]) -> dict[K, int]:
        """An offset commit's answer once the ISR has its records (Kafka's storeOffsets
        appends with `offsets.commit.required.acks`, -1, under `offsets.commit.timeout.ms`):
        `codes` as they are, or the partitions committed answer the failure as a commit
        words it (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, REQUEST_TIMED_OUT)."""
        config = self._config()
        if config.offsets_commit_required_acks != -1:
            return codes
        code = await self.replicated(mark, config.offsets_commit_timeout_ms)
        if code == ec.NONE:
            return codes
        failed = convert_offset_commit_error(code)
        return {key: failed if c == ec.NONE else c for key, c in codes.items()}

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
        wake = self._wake
        assert wake is not None
        # Woken by every `touch`: the wait must never lose a cancellation that arrives in the
        # turn it is woken in (`asyncutil.wait_for`), and a stopped coordinator's loop ends.
        while self._wake is wake:
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
            wake.clear()
            timeout = None if not self._heap else max(self._heap[0][0] - now_ms(), 0) / 1000
            with contextlib.suppress(TimeoutError):
                await wait_for(wake.wait(), timeout)
