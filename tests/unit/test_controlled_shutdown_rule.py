"""ControlledShutdownPartitionLeaderElectionStrategy (zkbroker.broker.rules.controlled_shutdown)."""

from __future__ import annotations

from zkbroker.broker.rules.controlled_shutdown import controlled_shutdown_leader
from zkbroker.zk_layout import PartitionState


def make(leader: int, isr: tuple[int, ...]) -> PartitionState:
    return PartitionState(leader=leader, leader_epoch=4, isr=isr, controller_epoch=1)


def test_first_live_isr_replica_not_shutting_down_leads() -> None:
    new = controlled_shutdown_leader(make(1, (1, 2, 3)), (1, 3, 2), {1, 2, 3}, {1}, 7)
    assert new is not None
    assert (new.leader, new.isr, new.leader_epoch, new.controller_epoch) == (3, (2, 3), 5, 7)


def test_replicas_out_of_the_isr_or_dead_or_shutting_down_are_skipped() -> None:
    state = make(1, (1, 2, 3))
    # 4 is not in the ISR, 2 is not live: 3 leads.
    new = controlled_shutdown_leader(state, (1, 4, 2, 3), {1, 3}, {1}, 2)
    assert new is not None and new.leader == 3
    # Every other ISR member shutting down or dead: no election.
    assert controlled_shutdown_leader(state, (1, 2, 3), {1, 2, 3}, {1, 2, 3}, 2) is None
    assert controlled_shutdown_leader(make(1, (1,)), (1, 2), {1, 2}, {1}, 2) is None
