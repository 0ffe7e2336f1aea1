"""A partition leader's bookkeeping of its replicas, as pure code: what each follower's fetches
told it, the high watermark they allow, which ISR members fell behind, which follower may join,
and ISR changes as proposals that are then committed or aborted.

Follows Kafka 3.9's `kafka.cluster.Replica` (`ReplicaState`, `updateFetchStateOrThrow`,
`resetReplicaState`) and the leader half of `kafka.cluster.Partition` (`makeLeader`,
`updateAssignmentAndIsr`, `maybeIncrementLeaderHW`, `getOutOfSyncReplicas`, `needsExpandIsr`,
`checkEnoughReplicasReachOffset`, `effectiveMinIsr`, and KIP-497's `CommittedPartitionState`,
`PendingExpandIsr`, `PendingShrinkIsr`); docs/kafka-behaviour.md §24.

Not here: logs, the high watermark itself (the caller keeps it and only ever raises it, as
`UnifiedLog.maybeIncrementHighWatermark`), the AlterPartition write, clocks (every method takes
the time to use), and KRaft's broker-epoch fencing of fetches.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from zkbroker.broker.protocol import error_codes

#: A log offset the leader has not learnt yet (Kafka's `UnifiedLog.UnknownOffset`).
UNKNOWN_OFFSET = -1


class NotAssignedReplica(Exception):
    """The broker is not a follower of this partition (Kafka's NotAssignedReplicaException;
    a follower fetch from it is answered UNKNOWN_LEADER_EPOCH or NOT_LEADER_OR_FOLLOWER)."""


class IsrChangeInFlight(Exception):
    """An ISR change is already proposed and not yet committed or aborted (Kafka sends one
    AlterPartition per partition at a time)."""


@dataclass(frozen=True, slots=True)
class FollowerState:
    """What the leader knows of one follower (Kafka's `ReplicaState`). A new replica knows
    nothing: offsets unknown, never caught up."""

    broker_id: int
    log_start_offset: int = UNKNOWN_OFFSET
    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = 0
    # The leader's log end offset and the time at the follower's previous fetch: a fetch that
    # reaches the former shows the follower was caught up at the latter.
    last_fetch_leader_log_end_offset: int = 0
    last_fetch_ms: int = 0

    def update(
        self,
        fetch_offset: int,
        follower_log_start: int,
        leader_log_end_offset: int,
        fetch_time_ms: int,
    ) -> FollowerState:
        """The state after a fetch at `fetch_offset` (Kafka's `updateFetchStateOrThrow`): caught
        up now when it reads to the leader's end, else at the previous fetch when it reads to
        the end the leader had then. The caught-up time never goes back, so a follower fed by
        many small appends, always a little behind, still counts as caught up."""
        if fetch_offset >= leader_log_end_offset:
            caught_up = max(self.last_caught_up_ms, fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            caught_up = max(self.last_caught_up_ms, self.last_fetch_ms)
        else:
            caught_up = self.last_caught_up_ms
        return replace(
            self,
            log_start_offset=follower_log_start,
            log_end_offset=fetch_offset,
            last_fetch_leader_log_end_offset=max(
                leader_log_end_offset, self.last_fetch_leader_log_end_offset
            ),
            last_fetch_ms=fetch_time_ms,
            last_caught_up_ms=caught_up,
        )

    def reset(
        self, now_ms: int, leader_log_end_offset: int, *, new_leader: bool, in_sync: bool
    ) -> FollowerState:
        """The state at a new leader epoch (Kafka's `resetReplicaState`). An ISR member counts
        as caught up now, so the new leader does not drop it before it could fetch; anyone else
        as never, so it cannot hold the high watermark back. A broker that just became leader
        forgets the offsets (they were a previous term's); one re-elected keeps them."""
        caught_up = now_ms if in_sync else 0
        if new_leader:
            return FollowerState(
                self.broker_id,
                last_caught_up_ms=caught_up,
                last_fetch_leader_log_end_offset=UNKNOWN_OFFSET,
            )
        return replace(
            self,
            last_fetch_leader_log_end_offset=leader_log_end_offset,
            # 0 outside the ISR: a re-elected leader does not take the old fetch as caught up.
            last_fetch_ms=caught_up,
            last_caught_up_ms=caught_up,
        )

    def is_caught_up(self, leader_log_end_offset: int, now_ms: int, lag_max_ms: int) -> bool:
        """At the leader's end, or caught up within the last `lag_max_ms`
        (`replica.lag.time.max.ms`; Kafka's `ReplicaState.isCaughtUp`)."""
        return (
            leader_log_end_offset == self.log_end_offset
            or now_ms - self.last_caught_up_ms <= lag_max_ms
        )


@dataclass(frozen=True)
class PendingIsrChange:
    """An ISR change sent for writing and not yet answered (Kafka's `PendingExpandIsr` or
    `PendingShrinkIsr`). `isr` is the proposed ISR; the object is the proposal's identity."""

    isr: frozenset[int]
    last_committed: frozenset[int]

    @property
    def is_expand(self) -> bool:
        return len(self.isr) > len(self.last_committed)

    @property
    def maximal_isr(self) -> frozenset[int]:
        """An added follower counts at once (a larger ISR only holds the high watermark back);
        removed ones count until the shrink is committed, as it may fail."""
        return self.isr | self.last_committed


class LeaderReplicas:
    """One partition's replicas as its leader sees them, from the moment it became leader
    (construction: Kafka's `makeLeader` at a new leader epoch) until it stops leading (drop
    the object). Not thread-safe; the caller serialises calls per partition."""

    def __init__(
        self, leader_id: int, replicas: Sequence[int], isr: Iterable[int], now_ms: int
    ) -> None:
        self._leader_id = leader_id
        self._replicas: tuple[int, ...] = ()
        self._followers: dict[int, FollowerState] = {}
        self._isr: frozenset[int] = frozenset()
        self._pending: PendingIsrChange | None = None
        self.assignment_changed(replicas, isr, now_ms)
        for fid, state in self._followers.items():
            self._followers[fid] = state.reset(
                now_ms, UNKNOWN_OFFSET, new_leader=True, in_sync=fid in self._isr
            )

    @property
    def leader_id(self) -> int:
        return self._leader_id

    @property
    def replicas(self) -> tuple[int, ...]:
        return self._replicas

    @property
    def isr(self) -> frozenset[int]:
        """The committed ISR: what ZooKeeper holds."""
        return self._isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The ISR for the high watermark and `acks=-1`: the committed one plus a follower
        whose addition is in flight (KIP-497)."""
        return self._pending.maximal_isr if self._pending else self._isr

    @property
    def pending(self) -> PendingIsrChange | None:
        return self._pending

    @property
    def followers(self) -> Mapping[int, FollowerState]:
        return MappingProxyType(self._followers)

    def follower(self, follower_id: int) -> FollowerState:
        try:
            return self._followers[follower_id]
        except KeyError:
            raise NotAssignedReplica(follower_id) from None

    def update_follower(
        self,
        follower_id: int,
        fetch_offset: int,
        follower_log_start: int,
        leader_log_end_offset: int,
        now_ms: int,
    ) -> FollowerState:
        """Record a follower's fetch; `leader_log_end_offset` is the leader's end when the fetch
        arrived. Raises NotAssignedReplica for a broker that is not a follower."""
        state = self.follower(follower_id).update(
            fetch_offset, follower_log_start, leader_log_end_offset, now_ms
        )
        self._followers[follower_id] = state
        return state

    def effective_min_isr(self, min_insync_replicas: int) -> int:
        """`min.insync.replicas`, capped by the replication factor (Kafka's `effectiveMinIsr`)."""
        return min(min_insync_replicas, len(self._replicas))

    def under_min_isr(self, min_insync_replicas: int) -> bool:
        """The committed ISR is smaller than the effective minimum: `acks=-1` appends are
        refused (NOT_ENOUGH_REPLICAS) and the high watermark holds."""
        return len(self._isr) < self.effective_min_isr(min_insync_replicas)

    def high_watermark(
        self,
        leader_log_end_offset: int,
        *,
        now_ms: int | None = None,
        lag_max_ms: int | None = None,
        alive: Container[int] | None = None,
        min_insync_replicas: int = 1,
    ) -> int:
        """The offset the high watermark may be raised to (Kafka's `maybeIncrementLeaderHW`):
        the least log end offset of the leader and the maximal ISR. A member whose end is not
        known yet (it has not fetched from this leader) holds the high watermark where it is:
        the result is then 0, and the caller never lowers its high watermark. So does a
        committed ISR under `min_insync_replicas`.

        With `now_ms` and `lag_max_ms`, a follower outside the ISR that is caught up and alive
        (`alive`, every follower when None) counts too, so that a follower chasing a busy leader
        can reach the high watermark and join (Kafka's `shouldWaitForReplicaToJoinIsr`)."""
        if self.under_min_isr(min_insync_replicas):
            return 0
        maximal = self.maximal_isr
        hw = leader_log_end_offset
        for fid, state in self._followers.items():
            if state.log_end_offset >= hw:
                continue
            if fid in maximal or (
                now_ms is not None
                and lag_max_ms is not None
                and (alive is None or fid in alive)
                and state.is_caught_up(leader_log_end_offset, now_ms, lag_max_ms)
            ):
                hw = state.log_end_offset
        return max(hw, 0)

    def check_enough_replicas(
        self, required_offset: int, high_watermark: int, min_insync_replicas: int
    ) -> int | None:
        """An `acks=-1` produce's outcome once its last offset + 1 is `required_offset` (Kafka's
        `checkEnoughReplicasReachOffset` while leading): None until the high watermark reaches
        it, then NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the maximal ISR has shrunk under
        the effective `min.insync.replicas` meanwhile (the records stay written)."""
        if high_watermark < required_offset:
            return None
        if self.effective_min_isr(min_insync_replicas) <= len(self.maximal_isr):
            return error_codes.NONE
        return error_codes.NOT_ENOUGH_REPLICAS_AFTER_APPEND

    def out_of_sync(self, now_ms: int, lag_max_ms: int, leader_log_end_offset: int) -> list[int]:
        """ISR followers that are neither at the leader's end nor caught up within `lag_max_ms`,
        sorted (Kafka's `getOutOfSyncReplicas`): whether stuck or slow, their last caught-up
        time is too old. Empty while an ISR change is in flight."""
        if self._pending is not None:
            return []
        out = []
        for fid in sorted(self._isr - {self._leader_id}):
            state = self._followers.get(fid)
            # An ISR member that is no longer assigned has no state: Kafka drops it.
            if state is None or not state.is_caught_up(leader_log_end_offset, now_ms, lag_max_ms):
                out.append(fid)
        return out

    def can_join(
        self,
        follower_id: int,
        high_watermark: int,
        leader_epoch_start_offset: int,
        *,
        alive: Container[int] | None = None,
    ) -> bool:
        """Whether to propose adding this follower to the ISR (Kafka's `needsExpandIsr`): no
        change in flight, assigned, alive, not in the committed ISR, and its log reaches both
        the high watermark and the start of this leader epoch (else it could miss committed
        records that only this leader's log holds)."""
        state = self._followers.get(follower_id)
        return (
            self._pending is None
            and state is not None
            and follower_id not in self._isr
            and (alive is None or follower_id in alive)
            and state.log_end_offset >= high_watermark
            and state.log_end_offset >= leader_epoch_start_offset
        )

    def propose_expand(self, follower_id: int) -> PendingIsrChange:
        """Enter the pending state with `follower_id` added; write the returned `isr`, then
        `commit` or `abort`. Raises IsrChangeInFlight, NotAssignedReplica, or ValueError for a
        follower already in the ISR."""
        self._check_no_pending()
        self.follower(follower_id)
        if follower_id in self._isr:
            raise ValueError(f"broker {follower_id} is already in the ISR {sorted(self._isr)}")
        return self._propose(self._isr | {follower_id})

    def propose_shrink(self, follower_ids: Iterable[int]) -> PendingIsrChange:
        """Enter the pending state with `follower_ids` removed (the maximal ISR keeps them
        until the commit). Raises IsrChangeInFlight, or ValueError unless they are a non-empty
        set of ISR members other than the leader."""
        self._check_no_pending()
        removed = frozenset(follower_ids)
        if not removed or not removed <= self._isr - {self._leader_id}:
            raise ValueError(f"cannot remove {sorted(removed)} from the ISR {sorted(self._isr)}")
        return self._propose(self._isr - removed)

    def commit(self, isr: Iterable[int], *, proposal: PendingIsrChange | None = None) -> bool:
        """The write succeeded and `isr` is the ISR now committed (as the controller answered
        it). False, and nothing changes, when no change is pending or `proposal` is not the
        pending one (the answer is stale: a new assignment came meanwhile)."""
        if not self._is_pending(proposal):
            return False
        self._isr = frozenset(isr)
        self._pending = None
        return True

    def abort(self, *, proposal: PendingIsrChange | None = None) -> bool:
        """The write was refused: back to the last committed ISR. False, and nothing changes,
        as for `commit`."""
        if not self._is_pending(proposal):
            return False
        self._pending = None
        return True

    def assignment_changed(
        self,
        replicas: Sequence[int],
        isr: Iterable[int],
        now_ms: int,
        *,
        leader_epoch_start_offset: int | None = None,
    ) -> None:
        """A new LeaderAndIsr with this broker still leader (Kafka's `updateAssignmentAndIsr`):
        followers that stay keep their state, new ones start knowing nothing, removed ones are
        forgotten; `isr` is committed and a pending change dropped. Pass
        `leader_epoch_start_offset` (the leader's log end now) when the leader epoch changed:
        every follower is then reset as at a re-election."""
        if self._leader_id not in replicas:
            raise ValueError(f"leader {self._leader_id} is not among the replicas {list(replicas)}")
        self._replicas = tuple(replicas)
        self._followers = {
            fid: self._followers.get(fid, FollowerState(fid))
            for fid in self._replicas
            if fid != self._leader_id
        }
        self._isr = frozenset(isr)
        self._pending = None
        if leader_epoch_start_offset is not None:
            for fid, state in self._followers.items():
                self._followers[fid] = state.reset(
                    now_ms, leader_epoch_start_offset, new_leader=False, in_sync=fid in self._isr
                )

    def _check_no_pending(self) -> None:
        if self._pending is not None:
            raise IsrChangeInFlight(sorted(self._pending.isr))

    def _propose(self, isr: frozenset[int]) -> PendingIsrChange:
        self._pending = PendingIsrChange(isr, self._isr)
        return self._pending

    def _is_pending(self, proposal: PendingIsrChange | None) -> bool:
        return self._pending is not None and (proposal is None or proposal is self._pending)
