"""ControlledShutdown as a controller event: move leadership off a broker, shrink its ISRs.

Kafka's `KafkaController.doControlledShutdown` (docs/kafka-behaviour.md §10.3,
"ControlledShutdown"): the broker-epoch and liveness checks, new leaders by
`zkbroker.broker.rules.controlled_shutdown` for the partitions it leads, its removal from the ISR
of the others (fenced conditional sets, `zkbroker.broker.controller.partitions.write_states`),
and the partitions it still leads.

Not here: Kafka's `shuttingDownBrokerIds` (only this request's election avoids the broker: a
zkbroker broker does not go away after asking, so a later preferred election may move leaders
back), and StopReplica to the broker (zkbroker brokers read ZooKeeper).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.controller import partitions
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.controlled_shutdown import controlled_shutdown_leader
from zkbroker.zk_layout import LEADER_NONE, BrokerIdNode

if TYPE_CHECKING:
    from zkbroker.broker.controller.controller import Controller

_log = get_logger(__name__)

UNKNOWN_BROKER_EPOCH = -1


@dataclass(frozen=True)
class ShutdownOutcome:
    error_code: int
    remaining: list[tuple[str, int]] = field(default_factory=list)


async def controlled_shutdown(
    controller: Controller, broker_id: int, broker_epoch: int
) -> ShutdownOutcome:
    state = controller.state
    if broker_epoch != UNKNOWN_BROKER_EPOCH:
        node = await controller.store.get(BrokerIdNode.path(broker_id))
        if broker_id not in state.live_brokers or node is None:
            return ShutdownOutcome(error_codes.UNKNOWN_SERVER_ERROR)
        current = int(node[1].czxid)
        if broker_epoch < current:
            _log.info(
                "controller.controlled_shutdown_stale_epoch",
                broker=broker_id,
                broker_epoch=broker_epoch,
                current=current,
            )
            return ShutdownOutcome(error_codes.STALE_BROKER_EPOCH)
    if broker_id not in state.live_brokers:
        return ShutdownOutcome(error_codes.BROKER_NOT_AVAILABLE)
    _log.info("controller.controlled_shutdown", broker=broker_id)
    epoch = controller.context.epoch
    live = state.live_brokers
    led: dict[partitions.TP, partitions.StateRule] = {}
    followed: dict[partitions.TP, partitions.StateRule] = {}
    pacer = Pacer()  # every partition of the cluster is looked at, twice
    for tp, (current_state, _) in list(state.partition_states.items()):
        if pacer.due():
            await pacer.pause()
        replicas = partitions.replicas_of(controller, tp)
        if (
            broker_id not in replicas
            or len(replicas) <= 1
            or current_state.leader == LEADER_NONE
            or tp[0] in state.topics_to_delete
        ):
            continue
        if current_state.leader == broker_id:
            led[tp] = _leader_rule(replicas, live, broker_id, epoch)
        else:
            followed[tp] = partitions.isr_removal([broker_id], epoch)
    await partitions.write_states(controller, led)
    await partitions.write_states(controller, followed)
    remaining: list[partitions.TP] = []
    for tp, (after, _) in list(state.partition_states.items()):
        if pacer.due():
            await pacer.pause()
        if after.leader == broker_id:
            remaining.append(tp)
    remaining.sort()
    _log.info(
        "controller.controlled_shutdown_done",
        broker=broker_id,
        moved=len(led),
        remaining=len(remaining),
    )
    return ShutdownOutcome(error_codes.NONE, remaining)


def _leader_rule(
    replicas: tuple[int, ...], live: set[int], broker_id: int, epoch: int
) -> partitions.StateRule:
    return lambda s: controlled_shutdown_leader(s, replicas, live, {broker_id}, epoch)
