"""AlterPartition's per-partition decision (zkbroker.broker.rules.alter_partition), per generation
of Kafka's ZooKeeper controller: 2.7-3.1, 3.2, 3.3-3.9."""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.rules.alter_partition import (
    RECOVERED,
    RECOVERING,
    SAME,
    WRITE,
    Proposal,
    decide,
)
from zkbroker.zk_layout import PartitionState

CURRENT = PartitionState(leader=1, leader_epoch=5, isr=(1, 2), controller_epoch=1)
LIVE = {1, 2, 3}
V = 7  # the state znode's version: the partition epoch


def proposal(
    leader_epoch: int = 5,
    isr: tuple[int, ...] = (1,),
    partition_epoch: int = V,
    recovery: int = RECOVERED,
    leader: int = 1,
) -> Proposal:
    return Proposal(leader, leader_epoch, isr, recovery, partition_epoch)


def test_2_7_to_3_1() -> None:
    for release in ((2, 7), (3, 1)):
        assert decide(release, 0, proposal(leader_epoch=4), CURRENT, V, LIVE) == (
            ec.FENCED_LEADER_EPOCH
        )
        assert decide(release, 0, proposal(isr=(1, 2), partition_epoch=0), CURRENT, V, LIVE) == SAME
        # Stale partition epochs and newer leader epochs go to the (conditional) write.
        assert decide(release, 0, proposal(partition_epoch=3), CURRENT, V, LIVE) == WRITE
        assert decide(release, 0, proposal(leader_epoch=9), CURRENT, V, LIVE) == WRITE
        # No liveness check before 3.3; the order of the ISR matters.
        assert decide(release, 0, proposal(isr=(1, 9)), CURRENT, V, LIVE) == WRITE
        assert decide(release, 0, proposal(isr=(2, 1)), CURRENT, V, LIVE) == WRITE


def test_3_2_checks_recovery_first() -> None:
    release = (3, 2)
    recovering = proposal(leader_epoch=1, isr=(1, 2), recovery=RECOVERING)
    assert decide(release, 1, recovering, CURRENT, V, LIVE) == ec.INVALID_REQUEST
    single = proposal(leader_epoch=1, recovery=RECOVERING)
    assert decide(release, 1, single, CURRENT, V, LIVE) == ec.INVALID_REQUEST  # RECOVERED -> ING
    assert decide(release, 1, proposal(leader_epoch=4), CURRENT, V, LIVE) == ec.FENCED_LEADER_EPOCH


def test_3_3_to_3_9() -> None:
    for release in ((3, 3), (3, 9)):
        newer = proposal(leader_epoch=6)
        assert decide(release, 2, newer, CURRENT, V, LIVE) == ec.NOT_CONTROLLER
        assert decide(release, 2, proposal(partition_epoch=V + 1), CURRENT, V, LIVE) == (
            ec.NOT_CONTROLLER
        )
        assert decide(release, 2, proposal(leader_epoch=4), CURRENT, V, LIVE) == (
            ec.FENCED_LEADER_EPOCH
        )
        same = proposal(isr=(1, 2), partition_epoch=V - 2)
        assert decide(release, 2, same, CURRENT, V, LIVE) == SAME
        assert decide(release, 2, proposal(partition_epoch=V - 1), CURRENT, V, LIVE) == (
            ec.INVALID_UPDATE_VERSION
        )
        recovering = proposal(isr=(1, 2), recovery=RECOVERING)
        assert decide(release, 2, recovering, CURRENT, V, LIVE) == ec.INVALID_REQUEST
        dead = proposal(isr=(1, 2, 9))
        assert decide(release, 2, dead, CURRENT, V, LIVE) == ec.INELIGIBLE_REPLICA
        assert decide(release, 1, dead, CURRENT, V, LIVE) == ec.OPERATION_NOT_ATTEMPTED
        assert decide(release, 3, proposal(isr=(1, 2, 3)), CURRENT, V, LIVE) == WRITE
