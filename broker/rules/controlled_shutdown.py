"""Kafka's ControlledShutdownPartitionLeaderElectionStrategy as a pure function.

Election.leaderForControlledShutdown (2.2-3.9, and the same rule before): the new leader is the
first assigned replica that is live (shutting-down brokers count as live here), in the ISR and
not shutting down; the ISR loses every shutting-down broker; leader epoch + 1. No such replica:
no election, the partition keeps its leader and is reported as remaining.

Deliberately not here: which partitions a controlled shutdown acts on and the writes
(zkbroker.broker.controller.controlled_shutdown).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from zkbroker.zk_layout import PartitionState


def controlled_shutdown_leader(
    state: PartitionState,
    replicas: Sequence[int],
    live: Collection[int],
    shutting_down: Collection[int],
    epoch: int,
) -> PartitionState | None:
    leader = next(
        (r for r in replicas if r in live and r in state.isr and r not in shutting_down), None
    )
    if leader is None:
        return None
    return replace(
        state,
        leader=leader,
        isr=tuple(r for r in state.isr if r not in shutting_down),
        leader_epoch=state.leader_epoch + 1,
        controller_epoch=epoch,
    )
