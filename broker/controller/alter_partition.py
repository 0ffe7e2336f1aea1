"""AlterPartition (AlterIsr before 3.2) as a controller event: a leader's ISR change applied.

Kafka's `KafkaController.processAlterIsr` / `tryProcessAlterPartition` (docs/kafka-behaviour.md
§10.3): the broker-epoch and topic checks, each partition decided by
`zkbroker.broker.rules.alter_partition`, each write its own transaction fenced by
`/controller_epoch` and conditional on the request's partition epoch, then the reassignment of
a partition whose targets are all in the ISR completed (`maybeCompleteReassignment`).

Not here: the leader side (zkbroker's leaders never send AlterPartition: followers join the ISR
through the controller's catch-up, `zkbroker.broker.controller.partitions`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zkbroker.broker.controller import reassignment
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules import alter_partition as rules
from zkbroker.zk_layout import (
    BadVersionError,
    BrokerIdNode,
    NoNodeError,
    PartitionState,
    PartitionStateNode,
)

if TYPE_CHECKING:
    from zkbroker.broker.controller.controller import Controller
    from zkbroker.broker.protocol.messages.alter_partition import AlterPartitionRequest

_log = get_logger(__name__)

TP = tuple[str, int]


@dataclass(frozen=True)
class PartitionResult:
    partition: int
    error_code: int
    state: PartitionState | None = None
    partition_epoch: int = 0


@dataclass(frozen=True)
class TopicResult:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionResult] = field(default_factory=list)


@dataclass(frozen=True)
class AlterOutcome:
    error_code: int
    topics: list[TopicResult] = field(default_factory=list)


async def alter_partition(
    controller: Controller, request: AlterPartitionRequest, version: int
) -> AlterOutcome:
    state = controller.state
    broker_id = request.broker_id
    node = await controller.store.get(BrokerIdNode.path(broker_id))
    if broker_id not in state.live_brokers or node is None:
        _log.info("controller.alter_partition_unknown_broker", broker=broker_id)
        return AlterOutcome(error_codes.STALE_BROKER_EPOCH)
    if int(node[1].czxid) != request.broker_epoch:
        _log.info(
            "controller.alter_partition_stale_epoch", broker=broker_id, epoch=request.broker_epoch
        )
        return AlterOutcome(error_codes.STALE_BROKER_EPOCH)
    read = _proposals(controller, request, version)
    if read is None:
        return AlterOutcome(error_codes.UNKNOWN_SERVER_ERROR)
    unknown_ids, proposals = read
    results, to_write = _decide(controller, version, proposals)
    written = await controller.gather(
        *(_write(controller, tp, s, v) for tp, (s, v) in to_write.items())
    )
    results.update(zip(to_write, written, strict=True))
    _log.info(
        "controller.alter_partition",
        broker=broker_id,
        partitions=len(proposals),
        written=sum(1 for r in written if r.error_code == error_codes.NONE),
    )
    done = [
        tp
        for tp, r in results.items()
        if r.error_code == error_codes.NONE and reassignment.is_complete(controller, tp)
    ]
    if done:
        await reassignment.complete_reassignments(controller, done)
    return AlterOutcome(error_codes.NONE, unknown_ids + _by_topic(controller, proposals, results))


def _proposals(
    controller: Controller,
    request: AlterPartitionRequest,
    version: int,
) -> tuple[list[TopicResult], dict[TP, rules.Proposal]] | None:
    """The results of the topics whose id the controller does not know, and the other
    partitions as proposals (a partition named twice: its last entry, in that place). None: a
    leader recovery state Kafka does not know (the whole request fails)."""
    use_ids = version > 1
    names_by_id = {
        record.assignment.topic_id: name
        for name, record in controller.state.topics.items()
        if record.assignment.topic_id is not None
    }
    unknown_ids: list[TopicResult] = []
    proposals: dict[TP, rules.Proposal] = {}
    for topic in request.topics:
        name = names_by_id.get(topic.topic_id) if use_ids else topic.topic_name
        if name is None:
            unknown_ids.append(
                TopicResult(
                    "",
                    topic.topic_id,
                    [
                        PartitionResult(p.partition_index, error_codes.UNKNOWN_TOPIC_ID)
                        for p in topic.partitions
                    ],
                )
            )
            continue
        for p in topic.partitions:
            if p.leader_recovery_state not in (rules.RECOVERED, rules.RECOVERING):
                return None
            isr = [b.broker_id for b in p.new_isr_with_epochs] if version >= 3 else p.new_isr
            proposals.pop((name, p.partition_index), None)  # a repeat moves to the end
            proposals[(name, p.partition_index)] = rules.Proposal(
                request.broker_id,
                p.leader_epoch,
                tuple(isr),
                p.leader_recovery_state,
                p.partition_epoch,
            )
    return unknown_ids, proposals


def _decide(
    controller: Controller, version: int, proposals: dict[TP, rules.Proposal]
) -> tuple[dict[TP, PartitionResult], dict[TP, tuple[PartitionState, int]]]:
    """Each proposal decided (`zkbroker.broker.rules.alter_partition`): the results known
    without a write, and the new states to write with the partition epoch they expect."""
    state = controller.state
    results: dict[TP, PartitionResult] = {}
    to_write: dict[TP, tuple[PartitionState, int]] = {}
    for tp, proposal in proposals.items():
        current = state.partition_states.get(tp)
        if current is None or tp[0] not in state.topics:
            results[tp] = PartitionResult(tp[1], error_codes.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        decision = rules.decide(
            controller.release, version, proposal, current[0], current[1], state.live_brokers
        )
        if decision == rules.SAME:
            results[tp] = PartitionResult(tp[1], error_codes.NONE, current[0], current[1])
        elif decision == rules.WRITE:
            new = PartitionState(
                leader=proposal.leader,
                leader_epoch=proposal.leader_epoch,
                isr=proposal.isr,
                controller_epoch=controller.context.epoch,
                leader_recovery_state=proposal.leader_recovery_state,
            )
            to_write[tp] = (new, proposal.partition_epoch)
        else:
            assert isinstance(decision, int)
            results[tp] = PartitionResult(tp[1], decision)
    return results, to_write


async def _write(
    controller: Controller, tp: TP, new: PartitionState, version: int
) -> PartitionResult:
    tx = controller.store.fenced(controller.context.epoch_zk_version)
    tx.set(
        PartitionStateNode.path(*tp), PartitionStateNode.encode(new, controller.release), version
    )
    try:
        (stat,) = await tx.commit()
    except BadVersionError:
        return PartitionResult(tp[1], error_codes.INVALID_UPDATE_VERSION)
    except NoNodeError:
        return PartitionResult(tp[1], error_codes.UNKNOWN_SERVER_ERROR)
    controller.state.partition_states[tp] = (new, stat.version)
    if controller.image is not None:
        controller.image.put_partition_state(tp[0], tp[1], new, stat.version)
    return PartitionResult(tp[1], error_codes.NONE, new, stat.version)


def _by_topic(
    controller: Controller, proposals: dict[TP, rules.Proposal], results: dict[TP, PartitionResult]
) -> list[TopicResult]:
    grouped: dict[str, list[PartitionResult]] = {}
    for tp in proposals:
        grouped.setdefault(tp[0], []).append(results[tp])
    out = []
    for name, partition_results in grouped.items():
        record = controller.state.topics.get(name)
        topic_id = record.assignment.topic_id if record is not None else None
        out.append(TopicResult(name, topic_id or uuid.UUID(int=0), partition_results))
    return out
