"""AlterPartition (AlterIsr before 3.2): whether a ZooKeeper-mode controller applies a leader's
proposed leader/ISR, as pure code.

`decide` answers an error code, SAME (answer the current state) or WRITE for one partition, with
the checks of the emulated release's generation: 2.7-3.1 `processAlterIsr`, 3.2 KIP-704's
recovery state, 3.3-3.9 `tryProcessAlterPartition` (KIP-841) (docs/kafka-behaviour.md §10.3,
"AlterPartition"). The proposed leader is the requesting broker; Kafka does not check it.

Not here: broker epochs, topic lookup and the write (`zkbroker.broker.controller.alter_partition`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

from zkbroker.broker.protocol import error_codes
from zkbroker.zk_layout import PartitionState
from zkbroker.zk_layout.release import Release, release_at_least

RECOVERED: Final = 0
RECOVERING: Final = 1
# The decision when the partition is already in the proposed state.
SAME: Final = "same"
# The decision when the proposed state is to be written.
WRITE: Final = "write"


@dataclass(frozen=True)
class Proposal:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int
    partition_epoch: int


def _recovery_error(proposal: Proposal, current: PartitionState) -> int | None:
    if proposal.leader_recovery_state == RECOVERING and len(proposal.isr) > 1:
        return error_codes.INVALID_REQUEST
    if current.leader_recovery_state == RECOVERED and proposal.leader_recovery_state == RECOVERING:
        return error_codes.INVALID_REQUEST
    return None


def decide(
    release: Release,
    version: int,
    proposal: Proposal,
    current: PartitionState,
    current_partition_epoch: int,
    live: Collection[int],
) -> int | str:
    """An error code, SAME or WRITE for one partition (see the module docstring)."""
    same_state = (
        proposal.leader == current.leader
        and proposal.leader_epoch == current.leader_epoch
        and proposal.isr == current.isr
    )
    if not release_at_least(release, (3, 3)):
        if release_at_least(release, (3, 2)):
            error = _recovery_error(proposal, current)
            if error is not None:
                return error
            same_state = same_state and (
                proposal.leader_recovery_state == current.leader_recovery_state
            )
        if proposal.leader_epoch < current.leader_epoch:
            return error_codes.FENCED_LEADER_EPOCH
        return SAME if same_state else WRITE
    if (
        proposal.partition_epoch > current_partition_epoch
        or proposal.leader_epoch > current.leader_epoch
    ):
        return error_codes.NOT_CONTROLLER
    if proposal.leader_epoch != current.leader_epoch:
        return error_codes.FENCED_LEADER_EPOCH
    if (
        same_state
        and proposal.leader_recovery_state == current.leader_recovery_state
        and proposal.partition_epoch <= current_partition_epoch
    ):
        return SAME
    if proposal.partition_epoch != current_partition_epoch:
        return error_codes.INVALID_UPDATE_VERSION
    error = _recovery_error(proposal, current)
    if error is not None:
        return error
    if any(r not in live for r in proposal.isr):
        return (
            error_codes.INELIGIBLE_REPLICA if version > 1 else error_codes.OPERATION_NOT_ATTEMPTED
        )
    return WRITE
