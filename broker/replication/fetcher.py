"""One follower broker's fetcher from one leader broker (Kafka's ``ReplicaFetcherThread``).

A task per (follower, leader) pair loops as Kafka's ``AbstractFetcherThread.doWork``
(docs/kafka-behaviour.md §24): partitions in the truncating state truncate first (by
OffsetsForLeaderEpoch from 0.11, to the high watermark before, or after a log without
epochs), the others are fetched together in one Fetch with the follower's replica id; records
are appended as the leader wrote them, the follower's high watermark follows the leader's and
its log start offset follows the leader's. A diverging epoch in the answer (2.7 on) truncates;
an offset out of the leader's range truncates to its end or restarts at its start; other
partition errors and an unreachable leader back off by ``replica.fetch.backoff.ms``. An answer
is applied only if the partition's fetch state is still the one the request was built from.

Not here: which partitions to fetch (the replica manager adds and removes them), the leader
side (`zkbroker.broker.replication.hosted_partition`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Final

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.replication import truncation
from zkbroker.broker.replication.fault_view import ReplicationFaultView
from zkbroker.broker.replication.fetch_source import (
    TP,
    EpochEnd,
    FetchedPartition,
    FetchPartition,
    FetchSource,
    SourceUnavailable,
)
from zkbroker.broker.replication.replica_config import ReplicaConfig
from zkbroker.broker.storage import PartitionLog
from zkbroker.zk_layout.release import Release

_log = get_logger(__name__)

#: The most partitions one round truncates or fetches (the rest wait for the next round).
MAX_PARTITIONS_PER_ROUND: Final = 250

#: Partition errors after which the partition waits for new metadata or a backoff.
_BACKOFF_ERRORS = frozenset(
    {
        error_codes.NOT_LEADER_OR_FOLLOWER,
        error_codes.FENCED_LEADER_EPOCH,
        error_codes.UNKNOWN_LEADER_EPOCH,
        error_codes.UNKNOWN_TOPIC_OR_PARTITION,
        error_codes.UNKNOWN_TOPIC_ID,
        error_codes.KAFKA_STORAGE_ERROR,
    }
)


@dataclass(frozen=True, slots=True)
class FetchState:
    """Kafka's ``PartitionFetchState``."""

    topic_id: uuid.UUID | None
    fetch_offset: int
    current_leader_epoch: int
    truncating: bool
    last_fetched_epoch: int | None
    delayed_until: float = 0.0


class ReplicaFetcher:
    """The partitions one follower broker fetches from one leader broker."""

    def __init__(
        self,
        follower_id: int,
        source: FetchSource,
        release: Release,
        config: Callable[[], ReplicaConfig],
        log_of: Callable[[TP], PartitionLog | None],
        faults: ReplicationFaultView | None = None,
    ) -> None:
        self.follower_id = follower_id
        self._faults = faults
        self.source = source
        self._release = release
        self._config = config
        self._log_of = log_of
        self.partitions: dict[TP, FetchState] = {}
        self._changed = asyncio.Event()
        # Partitions fetched since the last round that could long-poll.
        self._round_partitions = 0
        self._task: asyncio.Task[None] | None = None
        self._log = _log.bind(broker_id=follower_id, leader=source.leader_id)

    # ---- partitions ---------------------------------------------------------------------

    def add(self, tp: TP, state: FetchState) -> None:
        """Fetch `tp` from `state`, unless it is fetched already at the same leader epoch
        (Kafka's ``partitionFetchState`` keeps the current state then)."""
        current = self.partitions.get(tp)
        if current is not None and current.current_leader_epoch == state.current_leader_epoch:
            return
        self.partitions[tp] = state
        self._changed.set()

    def remove(self, tp: TP) -> None:
        if self.partitions.pop(tp, None) is not None:
            self._changed.set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"replica-fetcher-{self.follower_id}-from-{self.source.leader_id}"
        )

    def take_task(self) -> asyncio.Task[None] | None:
        task, self._task = self._task, None
        return task

    @property
    def wake(self) -> asyncio.Event:
        """Set when the partitions change: an in-process leader's long poll ends early."""
        return self._changed

    # ---- the loop -------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            self._changed.clear()
            if not self.partitions:
                await self._idle(None)
                continue
            try:
                await self._truncate()
                fetched = await self._fetch_once()
            except SourceUnavailable as e:
                self._log.info("replica_fetcher.leader_unavailable", reason=str(e))
                self._back_off_all()
                fetched = False
            except Exception:
                self._log.exception("replica_fetcher.failed")
                self._back_off_all()
                fetched = False
            if not fetched:
                await self._idle(self._next_due())
            else:
                # An in-process leader may answer without suspending: let others run between
                # rounds.
                await asyncio.sleep(0)

    async def _idle(self, until: float | None) -> None:
        """Wait for a change of the partitions, or until `until` (monotonic)."""
        timeout = None if until is None else max(until - time.monotonic(), 0.0)
        try:
            async with asyncio.timeout(timeout):
                await self._changed.wait()
        except TimeoutError:
            pass

    def _next_due(self) -> float:
        """When to look again after a round that sent nothing: the next partition whose backoff
        ends, else after replica.fetch.backoff.ms (Kafka's fetcher waits that long when it has
        nothing to fetch; a fault that paused every partition is read again then)."""
        now = time.monotonic()
        due = [s.delayed_until for s in self.partitions.values() if s.delayed_until > now]
        return min(due) if due else now + self._config().fetch_backoff_ms / 1000

    def _back_off_all(self) -> None:
        until = time.monotonic() + self._config().fetch_backoff_ms / 1000
        for tp, state in list(self.partitions.items()):
            self.partitions[tp] = replace(state, delayed_until=until)

    def _back_off(self, tp: TP, state: FetchState) -> None:
        until = time.monotonic() + self._config().fetch_backoff_ms / 1000
        self.partitions[tp] = replace(state, delayed_until=until)

    def _ready(self, truncating: bool) -> dict[TP, FetchState]:
        """Up to `MAX_PARTITIONS_PER_ROUND` partitions out of backoff, in the given state,
        oldest served first: a round's work stays bounded however many partitions this
        leader has (a topic of 46,335 partitions), and every partition gets its turn."""
        now = time.monotonic()
        out: dict[TP, FetchState] = {}
        for tp, state in self.partitions.items():
            if state.delayed_until <= now and state.truncating == truncating:
                out[tp] = state
                if len(out) >= MAX_PARTITIONS_PER_ROUND:
                    break
        return out

    def _served(self, tps: Iterable[TP]) -> None:
        """Move `tps` behind the others (Kafka's ``updateAndMoveToEnd``)."""
        for tp in tps:
            state = self.partitions.pop(tp, None)
            if state is not None:
                self.partitions[tp] = state

    # ---- truncation -----------------------------------------------------------------------

    async def _truncate(self) -> None:
        """``maybeTruncate``: partitions with epochs ask the leader where their epoch ends
        (0.11 on); the others truncate to their fetch offset, the high watermark."""
        self._check_cut()
        with_epochs: list[tuple[TP, int, int]] = []
        ready = self._ready(truncating=True)
        self._served(ready)
        for tp, state in ready.items():
            log = self._log_of(tp)
            if log is None:
                self.remove(tp)
                continue
            epoch = log.latest_epoch
            if epoch is not None and truncation.asks_leader_epochs(self._release):
                with_epochs.append((tp, state.current_leader_epoch, epoch))
            else:
                self._truncate_to(tp, log, state, state.fetch_offset, completed=True)
        if with_epochs:
            answers = await self.source.epoch_ends(with_epochs)
            for tp, _, _ in with_epochs:
                self._apply_epoch_end(tp, answers.get(tp))

    def _apply_epoch_end(self, tp: TP, answer: EpochEnd | None) -> None:
        state = self.partitions.get(tp)
        log = self._log_of(tp)
        if state is None or log is None or answer is None:
            return
        if answer.error_code != error_codes.NONE:
            self._back_off(tp, state)
            return
        self._truncate_by_leader(tp, log, state, answer.leader_epoch, answer.end_offset)

    def _truncate_by_leader(
        self, tp: TP, log: PartitionLog, state: FetchState, leader_epoch: int, leader_end: int
    ) -> None:
        local = log.end_offset_for_epoch(leader_epoch) if leader_epoch >= 0 else (-1, -1)
        decided = truncation.truncation_for(
            leader_epoch,
            leader_end,
            fetch_offset=state.fetch_offset,
            log_end_offset=log.log_end_offset,
            local_end_for_epoch=None if local[0] < 0 else local,
        )
        self._truncate_to(tp, log, state, decided.offset, completed=decided.completed)

    def _truncate_to(
        self, tp: TP, log: PartitionLog, state: FetchState, offset: int, *, completed: bool
    ) -> None:
        if offset < log.log_end_offset:
            log.truncate_to(offset)
        self.partitions[tp] = replace(
            state,
            fetch_offset=log.log_end_offset,
            truncating=not completed,
            last_fetched_epoch=log.latest_epoch,
        )

    # ---- fetching -------------------------------------------------------------------------

    def _check_cut(self) -> None:
        faults = self._faults
        if faults is not None:
            for broker in (self.follower_id, self.source.leader_id):
                if faults.inter_broker_cut(broker):
                    raise SourceUnavailable(f"broker {broker}'s inter-broker traffic is cut")

    def _unpaused(self, ready: dict[TP, FetchState]) -> tuple[dict[TP, FetchState], float]:
        """The partitions no fault pauses, and the longest delay a fault adds to them."""
        faults = self._faults
        if faults is None:
            return ready, 0.0
        follower = self.follower_id
        kept = {tp: s for tp, s in ready.items() if not faults.fetch_paused(follower, *tp)}
        delay = max((faults.fetch_delay_s(follower, *tp) for tp in kept), default=0.0)
        return kept, delay

    async def _fetch_once(self) -> bool:
        """One Fetch of every ready, non-truncating partition; whether one was sent."""
        config = self._config()
        self._check_cut()
        sent, delay = self._unpaused(self._ready(truncating=False))
        if delay > 0:
            await asyncio.sleep(delay)
        parts = []
        for tp, state in sent.items():
            log = self._log_of(tp)
            if log is None:
                self.remove(tp)
                continue
            parts.append(
                FetchPartition(
                    topic=tp[0],
                    partition=tp[1],
                    topic_id=state.topic_id,
                    fetch_offset=state.fetch_offset,
                    log_start_offset=log.log_start_offset,
                    current_leader_epoch=state.current_leader_epoch,
                    last_fetched_epoch=-1
                    if state.last_fetched_epoch is None
                    else state.last_fetched_epoch,
                    max_bytes=config.fetch_max_bytes,
                )
            )
        if not parts:
            return False
        self._served(sent)
        # Only the round that ends a pass over every partition may long-poll: the others go
        # on at once, so data in a partition of a later round is not held back.
        self._round_partitions += len(parts)
        last_round = self._round_partitions >= len(self.partitions)
        if last_round:
            self._round_partitions = 0
        answers = await self.source.fetch(
            parts,
            max_wait_ms=config.fetch_wait_max_ms if last_round else 0,
            min_bytes=config.fetch_min_bytes,
            max_bytes=config.fetch_response_max_bytes,
            wake=self._changed,
        )
        for tp, state in sent.items():
            answer = answers.get(tp)
            # Applied only to the state the request was built from (Kafka's check that the
            # partition's fetch state did not change while the request was in flight).
            if answer is not None and self.partitions.get(tp) is state:
                await self._apply(tp, state, answer)
        return True

    async def _apply(self, tp: TP, state: FetchState, answer: FetchedPartition) -> None:
        log = self._log_of(tp)
        if log is None:
            self.remove(tp)
            return
        code = answer.error_code
        if code == error_codes.NONE and answer.diverging is not None:
            epoch, end = answer.diverging
            self._truncate_by_leader(tp, log, state, epoch, end)
            return
        if code == error_codes.NONE:
            self._append(tp, log, state, answer)
        elif code == error_codes.OFFSET_OUT_OF_RANGE:
            await self._out_of_range(tp, log, state)
        else:
            if code not in _BACKOFF_ERRORS:
                self._log.warning(
                    "replica_fetcher.partition_error",
                    topic=tp[0],
                    partition=tp[1],
                    error=error_codes.name_of(code),
                )
            self._back_off(tp, state)

    def _append(
        self, tp: TP, log: PartitionLog, state: FetchState, answer: FetchedPartition
    ) -> None:
        if answer.records:
            log.append_as_follower(answer.records)
        # processPartitionData: the follower's high watermark is the leader's, capped at its
        # own log end; its log start follows the leader's.
        log.update_high_watermark(min(answer.high_watermark, log.log_end_offset))
        if answer.log_start_offset > log.log_start_offset:
            log.delete_records_before(min(answer.log_start_offset, log.high_watermark))
        self.partitions[tp] = replace(
            state, fetch_offset=log.log_end_offset, last_fetched_epoch=log.latest_epoch
        )

    async def _out_of_range(self, tp: TP, log: PartitionLog, state: FetchState) -> None:
        """``fetchOffsetAndTruncate``: a log longer than the leader's is cut to its end (an
        unclean election); one behind the leader's start starts again there."""
        code, start, end = await self.source.log_offsets(tp, state.current_leader_epoch)
        if self.partitions.get(tp) is not state:
            return
        if code != error_codes.NONE:
            self._back_off(tp, state)
            return
        if end < log.log_end_offset:
            self._log.warning(
                "replica_fetcher.truncating_to_leader_end",
                topic=tp[0],
                partition=tp[1],
                log_end_offset=log.log_end_offset,
                leader_end_offset=end,
            )
            self._truncate_to(tp, log, state, end, completed=True)
            return
        if start > log.log_end_offset:
            log.truncate_fully_and_start_at(start)
        self.partitions[tp] = replace(
            state,
            fetch_offset=max(start, log.log_end_offset),
            last_fetched_epoch=log.latest_epoch,
        )
