"""One partition as this broker hosts it: its own log, its role, and as leader its followers.

Kafka's ``kafka.cluster.Partition`` (docs/kafka-behaviour.md §24): becoming leader or follower
at a new leader epoch, serving a follower's fetch (its fetch state updated, the ISR expanded
when it caught up, the high watermark raised to the minimum log end offset over the ISR),
and whether a produce waiting for acks=all is complete (``checkEnoughReplicasReachOffset``).
The leader's bookkeeping of its followers is `zkbroker.broker.replication.replica_state`.

Not here: writing an ISR change (`zkbroker.broker.replication.isr_writer`), fetching as a
follower (`zkbroker.broker.replication.fetcher`), timers (the replica manager's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.replication.fetch_source import FetchedPartition, FetchPartition
from zkbroker.broker.replication.replica_state import LeaderReplicas
from zkbroker.broker.storage import OffsetOutOfRange, PartitionLog
from zkbroker.zk_layout.release import Release


@dataclass(frozen=True, slots=True)
class Leadership:
    """A partition's state as the controller last wrote it (the state znode and its version)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    #: The state znode's version: AlterPartition's partition epoch, the leader's
    #: conditional write before 2.7.
    partition_epoch: int
    controller_epoch: int
    #: Replicas a reassignment removes: they never rejoin the ISR (Kafka's leader is told
    #: the target replicas as the move completes; here the topic znode says so later).
    removing: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class LeaderRules:
    """What the emulated release's leader does, and the lag it allows."""

    #: 3.6 (KAFKA-15021): a follower caught up but not yet in the ISR holds the HW.
    waits_for_joining_followers: bool = True
    #: 3.7 (KAFKA-15583): no HW advance while the ISR is under min.insync.replicas.
    holds_under_min_isr: bool = True
    lag_time_max_ms: int = 30_000

    @classmethod
    def of(cls, release: Release, lag_time_max_ms: int) -> LeaderRules:
        return cls(release >= (3, 6), release >= (3, 7), lag_time_max_ms)


@dataclass
class HostedPartition:
    topic: str
    partition: int
    broker_id: int
    log: PartitionLog
    state: Leadership | None = None
    #: Set while this broker leads the partition.
    leading: LeaderReplicas | None = None
    #: The log end offset when this leadership began (an ISR join needs it reached).
    leader_epoch_start_offset: int = 0
    #: The topic's min.insync.replicas as the produce path last read it.
    min_insync_replicas: int = 1
    rules: LeaderRules = field(default_factory=lambda: LeaderRules())

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def leader_epoch(self) -> int:
        return -1 if self.state is None else self.state.leader_epoch

    @property
    def isr(self) -> tuple[int, ...]:
        """The ISR as this broker knows it: the leader's committed one, else the controller's."""
        if self.leading is not None:
            return tuple(self.leading.isr)
        return () if self.state is None else self.state.isr

    # ---- transitions ---------------------------------------------------------------------

    def make_leader(self, state: Leadership, now_ms: int) -> None:
        """``Partition.makeLeader``: the followers' states start unknown, the ISR members'
        counted as caught up now, so none is shrunk before it could fetch."""
        self.state = state
        self.leading = LeaderReplicas(self.broker_id, state.replicas, state.isr, now_ms)
        self.leader_epoch_start_offset = self.log.log_end_offset
        self.maybe_increment_high_watermark()

    def make_follower(self, state: Leadership) -> None:
        self.state = state
        self.leading = None

    def update_state(self, state: Leadership, now_ms: int) -> None:
        """The same leadership at a newer partition epoch: the ISR or replicas changed (the
        controller's write, or this leader's own ISR change coming back through ZooKeeper)."""
        self.state = state
        if self.leading is not None:
            self.leading.assignment_changed(state.replicas, state.isr, now_ms)
            self.maybe_increment_high_watermark()

    # ---- as leader -----------------------------------------------------------------------

    def check_epoch(self, current_leader_epoch: int) -> int:
        """A fetcher's current leader epoch against this one (KIP-320)."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return error_codes.NONE
        if current_leader_epoch < self.leader_epoch:
            return error_codes.FENCED_LEADER_EPOCH
        return error_codes.UNKNOWN_LEADER_EPOCH

    def read_for_follower(
        self, follower: int, part: FetchPartition, max_bytes: int, now_ms: int, diverging: bool
    ) -> FetchedPartition:
        """``Partition.fetchRecords`` for a follower: the records from its fetch offset to the
        log end, the high watermark as it was before this fetch, and the follower's fetch state
        updated unless its log diverges (`diverging`: Fetch v12+ checks). The caller raises
        the high watermark after it (and completes what that satisfies)."""
        leading = self.leading
        if leading is None:
            return FetchedPartition(error_codes.NOT_LEADER_OR_FOLLOWER)
        code = self.check_epoch(part.current_leader_epoch)
        if code != error_codes.NONE:
            return FetchedPartition(code)
        if follower not in leading.replicas:
            # Kafka's NotAssignedReplicaException is answered as NOT_LEADER_OR_FOLLOWER.
            return FetchedPartition(error_codes.NOT_LEADER_OR_FOLLOWER)
        log = self.log
        answer = FetchedPartition(
            error_codes.NONE,
            high_watermark=log.high_watermark,
            log_start_offset=log.log_start_offset,
        )
        if diverging and part.last_fetched_epoch >= 0:
            epoch, end = log.end_offset_for_epoch(part.last_fetched_epoch)
            if epoch < part.last_fetched_epoch or end < part.fetch_offset:
                answer.diverging = (epoch, end)
                return answer
        try:
            answer.records = log.read(part.fetch_offset, max_bytes)
        except OffsetOutOfRange:
            return FetchedPartition(error_codes.OFFSET_OUT_OF_RANGE)
        leading.update_follower(
            follower, part.fetch_offset, part.log_start_offset, log.log_end_offset, now_ms
        )
        return answer

    def maybe_increment_high_watermark(self, now_ms: int | None = None) -> bool:
        """``maybeIncrementLeaderHW``: the minimum log end offset over the maximal ISR (from
        3.6 also over a follower caught up to join it; from 3.7 held while the ISR is under
        min.insync.replicas)."""
        leading = self.leading
        if leading is None:
            return False
        log = self.log
        rules = self.rules
        candidate = leading.high_watermark(
            log.log_end_offset,
            now_ms=now_ms if rules.waits_for_joining_followers else None,
            lag_max_ms=rules.lag_time_max_ms if rules.waits_for_joining_followers else None,
            min_insync_replicas=self.min_insync_replicas if rules.holds_under_min_isr else 1,
        )
        if candidate <= log.high_watermark:
            return False
        return log.update_high_watermark(candidate)

    def expansion_candidate(self, follower: int) -> bool:
        leading = self.leading
        return (
            leading is not None
            and self.state is not None
            and follower not in self.state.removing
            and not leading.pending
            and leading.can_join(follower, self.log.high_watermark, self.leader_epoch_start_offset)
        )

    def out_of_sync(self, now_ms: int, lag_max_ms: int) -> list[int]:
        leading = self.leading
        if leading is None or leading.pending:
            return []
        return leading.out_of_sync(now_ms, lag_max_ms, self.log.log_end_offset)

    def enough_replicas_reached(self, required_offset: int) -> int | None:
        """``checkEnoughReplicasReachOffset``: None while the high watermark is below
        `required_offset`; then NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR it
        was reached with is smaller than min.insync.replicas."""
        leading = self.leading
        if leading is None:
            return error_codes.NOT_LEADER_OR_FOLLOWER
        return leading.check_enough_replicas(
            required_offset, self.log.high_watermark, self.min_insync_replicas
        )
