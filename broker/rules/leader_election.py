"""Kafka's leader-election and ISR rules as pure functions (ZooKeeper-mode controller, 2.8).

Each function takes what the controller knows (assignment, current leader and ISR, live
brokers) and returns the new state or None when the rule finds no leader; none of them does
I/O, so the controller's event code stays about ordering and writes, and these rules are
unit-tested alone. References (docs/kafka-behaviour.md §6, §10):
`PartitionLeaderElectionAlgorithms`, `PartitionStateMachine.leaderFor*`,
`ZkReplicaStateMachine.doRemoveReplicasFromIsr` and `ReplicaAssignment.reassignTo`.

Every new leader keeps the invariant the controller promises: a leader is always in its ISR
(or the partition has no leader, -1).

Deliberately not here: reading or writing ZooKeeper, and which partitions an event touches.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from zkbroker.zk_layout import LEADER_NONE, PartitionState


def _new_leader(
    state: PartitionState, leader: int, isr: Sequence[int], epoch: int
) -> PartitionState:
    """Kafka's LeaderAndIsr.newLeaderAndIsr: a new leader or ISR always bumps the leader epoch."""
    return replace(
        state,
        leader=leader,
        isr=tuple(isr),
        leader_epoch=state.leader_epoch + 1,
        controller_epoch=epoch,
    )


def offline_leader(
    state: PartitionState,
    replicas: Sequence[int],
    live: Collection[int],
    allow_unclean: bool,
    epoch: int,
) -> PartitionState | None:
    """OfflinePartitionLeaderElectionStrategy: the first assigned replica that is alive and in
    the ISR; failing that, with unclean election allowed, the first live replica. The ISR
    becomes the live ISR members, or just the leader after an unclean election."""
    leader = next((r for r in replicas if r in live and r in state.isr), None)
    if leader is None and allow_unclean:
        leader = next((r for r in replicas if r in live), None)
    if leader is None:
        return None
    isr = [r for r in state.isr if r in live] if leader in state.isr else [leader]
    return _new_leader(state, leader, isr, epoch)


def has_live_isr_replica(
    state: PartitionState, replicas: Sequence[int], live: Collection[int]
) -> bool:
    return any(r in live and r in state.isr for r in replicas)


def preferred_leader(
    state: PartitionState, replicas: Sequence[int], live: Collection[int], epoch: int
) -> PartitionState | None:
    """PreferredReplicaPartitionLeaderElectionStrategy: the first assigned replica, if it is
    alive and in the ISR; the ISR is kept."""
    if not replicas:
        return None
    preferred = replicas[0]
    if preferred not in live or preferred not in state.isr:
        return None
    return _new_leader(state, preferred, state.isr, epoch)


def reassignment_leader(
    state: PartitionState, target: Sequence[int], live: Collection[int], epoch: int
) -> PartitionState | None:
    """ReassignPartitionLeaderElectionStrategy: the first target replica that is alive and in
    the ISR; the ISR is kept."""
    leader = next((r for r in target if r in live and r in state.isr), None)
    if leader is None:
        return None
    return _new_leader(state, leader, state.isr, epoch)


def bump_leader_epoch(state: PartitionState, epoch: int) -> PartitionState:
    """Same leader and ISR, leader epoch + 1 (KafkaController.updateLeaderEpoch)."""
    return replace(state, leader_epoch=state.leader_epoch + 1, controller_epoch=epoch)


def remove_from_isr(state: PartitionState, replica: int, epoch: int) -> PartitionState | None:
    """OfflineReplica: take `replica` out of the ISR (None if it is not in it). The last ISR
    member stays (an ISR is never emptied); a leader removed leaves the partition without
    one (-1). Leader epoch + 1."""
    if replica not in state.isr:
        return None
    isr = state.isr if len(state.isr) == 1 else tuple(r for r in state.isr if r != replica)
    leader = LEADER_NONE if state.leader == replica else state.leader
    return _new_leader(state, leader, isr, epoch)


def remove_all_from_isr(
    state: PartitionState, replicas: Sequence[int], epoch: int
) -> PartitionState | None:
    """`remove_from_isr` for each of `replicas` in turn (one state change, and one leader epoch,
    per replica found in the ISR, as Kafka's per-replica transitions give); None if none is."""
    changed: PartitionState | None = None
    current = state
    for replica in replicas:
        after = remove_from_isr(current, replica, epoch)
        if after is not None:
            current = changed = after
    return changed


def expand_isr(
    state: PartitionState, joining: Sequence[int], live: Collection[int], epoch: int
) -> PartitionState | None:
    """Followers that caught up join the ISR (the leader's AlterIsr, or its own ZooKeeper write
    before 2.7): appended in order, same leader and leader epoch. Only while the partition has
    a live leader: followers catch up from the leader. None if nothing changes."""
    if state.leader == LEADER_NONE or state.leader not in live:
        return None
    new = [r for r in joining if r in live and r not in state.isr]
    if not new:
        return None
    return replace(state, isr=state.isr + tuple(dict.fromkeys(new)), controller_epoch=epoch)


def shrink_isr(state: PartitionState, live: Collection[int], epoch: int) -> PartitionState | None:
    """A live leader drops followers that stopped fetching (its own ISR shrink, AlterIsr):
    same leader and leader epoch. None if the leader is not live or nothing changes."""
    if state.leader not in live:
        return None
    isr = tuple(r for r in state.isr if r in live)
    if isr == state.isr:
        return None
    return replace(state, isr=isr, controller_epoch=epoch)


@dataclass(frozen=True)
class ReplicaAssignment:
    """A partition's full replica set (RS) and, while reassigning, the replicas being added
    (AR) and removed (RR). The origin replicas are RS - AR; the target, RS - RR."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def origin(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """ReplicaAssignment.reassignTo: RS = distinct(target ++ origin), AR = RS - origin,
        RR = RS - target."""
        origin = self.origin
        full = tuple(dict.fromkeys((*target, *origin)))
        return ReplicaAssignment(
            full,
            tuple(r for r in full if r not in origin),
            tuple(r for r in full if r not in target),
        )
