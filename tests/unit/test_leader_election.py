"""Kafka's leader-election, ISR and reassignment rules (zkbroker.broker.rules.leader_election,
pure)."""

from __future__ import annotations

import pytest

from zkbroker.broker.rules import leader_election as rules
from zkbroker.broker.rules.leader_election import ReplicaAssignment
from zkbroker.zk_layout import PartitionState


def st(leader: int, isr: tuple[int, ...], leader_epoch: int = 4, cepoch: int = 1) -> PartitionState:
    return PartitionState(
        leader=leader, leader_epoch=leader_epoch, isr=isr, controller_epoch=cepoch
    )


# ---- offline election ---------------------------------------------------------------------


def test_offline_picks_first_assigned_live_isr_replica_and_filters_isr() -> None:
    new = rules.offline_leader(
        st(1, (1, 3, 2)), (1, 2, 3), live={2, 3}, allow_unclean=False, epoch=7
    )
    assert new == st(2, (3, 2), leader_epoch=5, cepoch=7)


def test_offline_without_live_isr_replica_needs_unclean() -> None:
    dead_isr = st(1, (1,))
    assert rules.offline_leader(dead_isr, (1, 2), {2}, allow_unclean=False, epoch=2) is None
    assert rules.offline_leader(dead_isr, (1, 2), {2}, allow_unclean=True, epoch=2) == st(
        2, (2,), leader_epoch=5, cepoch=2
    )
    assert rules.offline_leader(dead_isr, (1, 2), set(), allow_unclean=True, epoch=2) is None


def test_preferred_needs_the_first_replica_alive_and_in_isr() -> None:
    assert rules.preferred_leader(st(2, (2, 1)), (1, 2), {1, 2}, 3) == st(
        1, (2, 1), leader_epoch=5, cepoch=3
    )
    assert rules.preferred_leader(st(2, (2,)), (1, 2), {1, 2}, 3) is None  # not in ISR
    assert rules.preferred_leader(st(2, (2, 1)), (1, 2), {2}, 3) is None  # not alive


def test_reassignment_leader_is_first_target_replica_alive_in_isr() -> None:
    assert rules.reassignment_leader(st(1, (1, 2, 3, 4)), (4, 3), {1, 2, 3, 4}, 1).leader == 4
    assert rules.reassignment_leader(st(1, (1, 2, 3)), (4, 3), {1, 2, 3, 4}, 1).leader == 3
    assert rules.reassignment_leader(st(1, (1, 2)), (4, 3), {1, 2, 3, 4}, 1) is None


# ---- ISR changes --------------------------------------------------------------------------


def test_remove_from_isr_keeps_last_member_and_clears_a_removed_leader() -> None:
    assert rules.remove_from_isr(st(1, (1, 2)), 2, 3) == st(1, (1,), leader_epoch=5, cepoch=3)
    assert rules.remove_from_isr(st(1, (1, 2)), 1, 3) == st(-1, (2,), leader_epoch=5, cepoch=3)
    assert rules.remove_from_isr(st(1, (1,)), 1, 3) == st(-1, (1,), leader_epoch=5, cepoch=3)
    assert rules.remove_from_isr(st(1, (1,)), 9, 3) is None


def test_remove_all_bumps_once_per_replica_found() -> None:
    assert rules.remove_all_from_isr(st(1, (1, 2, 3)), [2, 3, 9], 3) == st(
        1, (1,), leader_epoch=6, cepoch=3
    )
    assert rules.remove_all_from_isr(st(1, (1,)), [7], 3) is None


def test_expand_isr_appends_live_followers_without_epoch_change() -> None:
    assert rules.expand_isr(st(1, (1,)), (3, 1, 2), {1, 2, 3}, 9) == st(1, (1, 3, 2), cepoch=9)
    assert rules.expand_isr(st(1, (1,)), (3, 1, 2), {1, 3}, 9) == st(1, (1, 3), cepoch=9)
    assert rules.expand_isr(st(-1, (1,)), (2,), {2}, 9) is None  # nobody to catch up from
    assert rules.expand_isr(st(1, (1, 2)), (1, 2), {1, 2}, 9) is None


def test_shrink_isr_by_live_leader_keeps_epoch() -> None:
    assert rules.shrink_isr(st(1, (1, 2, 3)), {1, 3}, 5) == st(1, (1, 3), cepoch=5)
    assert rules.shrink_isr(st(2, (1, 2)), {1}, 5) is None


# ---- reassignTo ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "target", "expected"),
    [
        # docs/kafka-behaviour.md §10.4's example: ORS {1,2,3} -> TRS {4,5,6}.
        (
            ReplicaAssignment((1, 2, 3)),
            (4, 5, 6),
            ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)),
        ),
        (ReplicaAssignment((1, 2)), (2, 3), ReplicaAssignment((2, 3, 1), (3,), (1,))),
        # Same set, other order: no adding/removing, RS in target order.
        (ReplicaAssignment((1, 2)), (2, 1), ReplicaAssignment((2, 1))),
        # Replacing an in-flight reassignment starts again from the origin replicas.
        (
            ReplicaAssignment((4, 1, 2), (4,), (1,)),
            (5, 2),
            ReplicaAssignment((5, 2, 1), (5,), (1,)),
        ),
    ],
)
def test_reassign_to(
    current: ReplicaAssignment, target: tuple[int, ...], expected: ReplicaAssignment
) -> None:
    assert current.reassign_to(target) == expected


def test_origin_and_target_of_an_in_flight_assignment() -> None:
    a = ReplicaAssignment((4, 5, 1, 2), (4, 5), (1, 2))
    assert (a.origin, a.target, a.is_reassigning) == ((1, 2), (4, 5), True)
    cancelled = a.reassign_to(a.origin)
    assert cancelled == ReplicaAssignment((1, 2)) and not cancelled.is_reassigning
