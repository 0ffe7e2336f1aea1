"""Partition reassignment on the controller (KIP-455; docs/kafka-behaviour.md §7 and §10.4).

`reassign` runs Kafka's `onPartitionReassignment` for a batch of partitions on the controller
task: U1/U2 (one topic-znode write per topic for the batch), phase A (epoch bump, new replicas
"catching up" after the controller's catch-up event, which stands for their AlterIsr), phase B
(leader move, ISR removals as one state write, the topic znode and `/admin/reassign_partitions`
cleaned up, waiting deletions resumed). Its callers: AlterPartitionReassignments (validated here
with Kafka's messages), `/admin/reassign_partitions` from any tool (not validated; unknown
partitions dropped from the node), and failover (partitions whose topic znode shows AR/RR;
before 2.4, the admin node).

Not here: replica placement (the caller names the target), log-dir moves (`log_dirs` makes a
node invalid, as in Kafka), throttles.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from zkbroker.broker.controller import partitions as partitions_
from zkbroker.broker.controller import topics as controller_topics
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules import leader_election as rules
from zkbroker.broker.rules.api_error import ApiError
from zkbroker.broker.rules.jvm_collections import scala_buffer_text, scala_int_set_text
from zkbroker.broker.rules.leader_election import ReplicaAssignment
from zkbroker.zk_layout import (
    NoNodeError,
    PartitionState,
    ReassignPartitionsNode,
    TopicAssignment,
    TopicNode,
    ZnodeFormatError,
)
from zkbroker.zk_layout.release import release_at_least

if TYPE_CHECKING:
    from zkbroker.broker.controller.controller import Controller

log = get_logger(__name__)

TP = tuple[str, int]
_Predicate = Callable[[TP, tuple[int, ...]], bool]
_OK = ApiError(error_codes.NONE)  # ApiError.NONE: null message
_UNKNOWN = ApiError(error_codes.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")


def current_assignment(controller: Controller, tp: TP) -> ReplicaAssignment:
    """The partition's RS/AR/RR as the controller knows them (empty for unknown partitions)."""
    record = controller.state.topics.get(tp[0])
    if record is None or tp[1] not in record.assignment.partitions:
        return ReplicaAssignment(())
    a = record.assignment
    return ReplicaAssignment(
        a.partitions[tp[1]], a.adding.get(tp[1], ()), a.removing.get(tp[1], ())
    )


def build(
    controller: Controller, tp: TP, target: tuple[int, ...] | None
) -> ReplicaAssignment | None:
    """maybeBuildReassignment: None for a cancellation of a partition not being reassigned."""
    current = current_assignment(controller, tp)
    if target is not None:
        return current.reassign_to(target)
    if current.is_reassigning:
        return current.reassign_to(current.origin)
    return None


def validate_target(controller: Controller, tp: TP, target: tuple[int, ...]) -> ApiError | None:
    """validateReplicas, in Kafka's order and with its messages."""
    if not target:
        return ApiError(
            error_codes.INVALID_REPLICA_ASSIGNMENT,
            "Empty replica list specified in partition reassignment.",
        )
    if len(set(target)) != len(target):
        return ApiError(
            error_codes.INVALID_REPLICA_ASSIGNMENT,
            "Duplicate replica ids in partition reassignment replica list: "
            + scala_buffer_text(target),
        )
    if any(r < 0 for r in target):
        return ApiError(
            error_codes.INVALID_REPLICA_ASSIGNMENT,
            f"Invalid broker id in replica list: {scala_buffer_text(target)}",
        )
    adding = current_assignment(controller, tp).reassign_to(target).adding
    live = controller.state.live_brokers
    if not set(adding) <= live:
        return ApiError(
            error_codes.INVALID_REPLICA_ASSIGNMENT,
            "Replica assignment has brokers that are not alive. Replica list: "
            f"{scala_buffer_text(adding)}, live broker list: {scala_int_set_text(sorted(live))}",
        )
    return None


async def alter_reassignments(
    controller: Controller, requested: Mapping[TP, tuple[int, ...] | None]
) -> dict[TP, ApiError]:
    """processApiPartitionReassignment: validate, build, drop the partitions from the admin
    znode (the API takes precedence), then start them. NONE means started."""
    results: dict[TP, ApiError] = {}
    batch: dict[TP, ReplicaAssignment] = {}
    for tp, target in requested.items():
        error = validate_target(controller, tp, target) if target is not None else None
        if error is not None:
            results[tp] = error
            continue
        built = build(controller, tp, target)
        if built is None:
            results[tp] = ApiError.with_default_message(error_codes.NO_REASSIGNMENT_IN_PROGRESS)
        else:
            batch[tp] = built
    await remove_from_admin_node(controller, lambda tp, _: tp in batch)
    results.update(await trigger(controller, batch))
    return results


async def trigger(
    controller: Controller, batch: Mapping[TP, ReplicaAssignment]
) -> dict[TP, ApiError]:
    """maybeTriggerPartitionReassignment: unknown partitions and topics being deleted are
    refused; the rest start."""
    state = controller.state
    results: dict[TP, ApiError] = {}
    startable: dict[TP, ReplicaAssignment] = {}
    for tp, assignment in batch.items():
        if tp[0] in state.topics_to_delete or not partitions_.replicas_of(controller, tp):
            results[tp] = _UNKNOWN
        else:
            startable[tp] = assignment
            results[tp] = _OK
    await reassign(controller, startable)
    return results


async def on_admin_node(controller: Controller) -> None:
    """`/admin/reassign_partitions` was created: start what it lists, without the API's
    validation; partitions that cannot start are removed from it. An undecodable node is
    ignored and left in place."""
    listed = await _read_admin_node(controller)
    if listed is None:
        return
    batch: dict[TP, ReplicaAssignment] = {}
    failed: set[TP] = set()
    for tp, target in listed.items():
        built = build(controller, tp, target)
        if built is None:
            failed.add(tp)
        else:
            batch[tp] = built
    results = await trigger(controller, batch)
    failed.update(tp for tp, r in results.items() if r.code != error_codes.NONE)
    if failed:
        log.warning(
            "controller.zk_reassignment_failed", partitions=sorted(f"{t}-{p}" for t, p in failed)
        )
        await remove_from_admin_node(controller, lambda tp, _: tp in failed)
    log.info("controller.zk_reassignment_started", partitions=len(batch))


async def resume(controller: Controller, skip: Iterable[TP] = ()) -> None:
    """Failover: every partition whose topic znode shows AR/RR goes on (A1 again when not
    complete)."""
    skipped = set(skip)
    batch = {
        (topic, p): current_assignment(controller, (topic, p))
        for topic, record in controller.state.topics.items()
        for p in record.assignment.partitions
        if record.assignment.is_reassigning(p) and (topic, p) not in skipped
    }
    if batch:
        log.info("controller.reassignments_resumed", partitions=len(batch))
        await reassign(controller, batch)


async def resume_on_brokers(controller: Controller, brokers: set[int]) -> None:
    """onBrokerStartup: reassignments with a replica on a returning broker go on."""
    assignments = {tp: current_assignment(controller, tp) for tp in controller.state.reassigning}
    batch = {tp: a for tp, a in assignments.items() if set(a.replicas) & brokers}
    if batch:
        await reassign(controller, batch)


async def read_admin_node_partitions(controller: Controller) -> set[TP]:
    listed = await _read_admin_node(controller)
    return set(listed or ())


async def _read_admin_node(controller: Controller) -> dict[TP, tuple[int, ...]] | None:
    node = await controller.store.get(ReassignPartitionsNode.path())
    if node is None:
        return None
    try:
        decoded = ReassignPartitionsNode.decode(node[0])
    except ZnodeFormatError as e:
        log.warning("controller.zk_reassignment_undecodable", reason=str(e))
        return None
    return {(tp.topic, tp.partition): replicas for tp, replicas in decoded.items()}


# ---- the algorithm -----------------------------------------------------------------------


async def reassign(controller: Controller, batch: Mapping[TP, ReplicaAssignment]) -> None:
    """onPartitionReassignment for every partition of `batch` (target assignments)."""
    if not batch:
        return
    state = controller.state
    epoch = controller.context.epoch
    changed: dict[str, dict[int, ReplicaAssignment]] = defaultdict(dict)
    unneeded: dict[TP, list[int]] = {}
    for tp, new in batch.items():
        current = current_assignment(controller, tp)
        if current != new:
            changed[tp[0]][tp[1]] = new
            gone = [r for r in current.replicas if r not in new.replicas]
            if gone:
                unneeded[tp] = gone
        state.reassigning.add(tp)
    await write_assignments(controller, changed)
    if unneeded:
        await partitions_.write_states(
            controller,
            {tp: partitions_.isr_removal(gone, epoch) for tp, gone in unneeded.items()},
        )
    complete = [tp for tp in batch if is_complete(controller, tp)]
    done = set(complete)
    incomplete = [tp for tp in batch if tp not in done]
    if incomplete:
        # A new leader epoch is the new replicas' LeaderAndIsr: they start fetching, and their
        # leader adds them to the ISR once caught up (AlterPartition, or its own write before
        # 2.7), which completes the reassignment (`on_isr_changed`).
        await partitions_.write_states(
            controller, {tp: lambda s: rules.bump_leader_epoch(s, epoch) for tp in incomplete}
        )
    await complete_reassignments(controller, complete)


def is_complete(controller: Controller, tp: TP) -> bool:
    """isReassignmentComplete: nothing to add or remove, or every target replica in the ISR."""
    if tp not in controller.state.reassigning:
        return False
    assignment = current_assignment(controller, tp)
    if not assignment.is_reassigning:
        return True
    current = controller.state.partition_states.get(tp)
    return current is not None and set(assignment.target) <= set(current[0].isr)


async def on_isr_changed(controller: Controller, partitions: Iterable[TP]) -> None:
    """A leader changed the ISR of `partitions`: the reassignments whose targets are all in
    it now complete (``maybeCompleteReassignment``)."""
    await complete_reassignments(
        controller, [tp for tp in partitions if is_complete(controller, tp)]
    )


async def complete_reassignments(controller: Controller, tps: list[TP]) -> None:
    """Phase B for each partition of `tps` (B2-B8)."""
    state = controller.state
    done = {tp: current_assignment(controller, tp) for tp in tps if tp in state.reassigning}
    if not done:
        return
    live = state.live_brokers
    epoch = controller.context.epoch

    def finish(assignment: ReplicaAssignment) -> partitions_.StateRule:
        target = assignment.target
        removing = assignment.removing

        def rule(s: PartitionState) -> PartitionState:
            if s.leader in target and s.leader in live:
                moved: PartitionState = rules.bump_leader_epoch(s, epoch)
            else:
                moved = rules.reassignment_leader(s, target, live, epoch) or s
            return rules.remove_all_from_isr(moved, removing, epoch) or moved

        return rule

    await partitions_.write_states(controller, {tp: finish(a) for tp, a in done.items()})
    final: dict[str, dict[int, ReplicaAssignment]] = defaultdict(dict)
    for (topic, p), assignment in done.items():
        final[topic][p] = ReplicaAssignment(assignment.target)
    await write_assignments(controller, final)
    targets = {tp: a.target for tp, a in done.items()}
    await remove_from_admin_node(controller, lambda tp, replicas: targets.get(tp) == replicas)
    state.reassigning.difference_update(done)
    log.info("controller.reassignments_completed", partitions=len(done))
    await controller_topics.try_topic_deletions(controller)


async def write_assignments(
    controller: Controller, changes: Mapping[str, Mapping[int, ReplicaAssignment]]
) -> None:
    """Rewrite each topic znode once with its partitions' new RS/AR/RR (updateReplicaAssignment
    ForPartition; unconditional, fenced, as Kafka writes it)."""
    state = controller.state
    writes = []
    for topic, parts in changes.items():
        record = state.topics.get(topic)
        if record is None or not parts:
            continue
        old = record.assignment
        partitions = dict(old.partitions)
        adding = dict(old.adding)
        removing = dict(old.removing)
        for p, a in parts.items():
            partitions[p] = a.replicas
            for table, value in ((adding, a.adding), (removing, a.removing)):
                if value:
                    table[p] = value
                else:
                    table.pop(p, None)
        writes.append(
            (topic, replace(old, partitions=partitions, adding=adding, removing=removing))
        )
    await controller.gather(*(_write_topic(controller, t, a) for t, a in writes))


async def _write_topic(controller: Controller, topic: str, assignment: TopicAssignment) -> None:
    release = controller.release
    stored = assignment
    if not release_at_least(release, (2, 4)):
        # Topic znode v1 has no adding/removing lists; the admin node tracks progress.
        stored = replace(assignment, adding={}, removing={})
    stat = await controller.fenced_set(TopicNode.path(topic), TopicNode.encode(stored, release), -1)
    record = controller_topics.TopicRecord(assignment, stat.version)
    controller.state.topics[topic] = record
    controller.publish(topic, record, {})


async def remove_from_admin_node(controller: Controller, should_remove: _Predicate) -> None:
    """maybeRemoveFromZkReassignment: rewrite `/admin/reassign_partitions` without the
    partitions `should_remove` picks, deleting it once empty. An undecodable node reads as
    empty here, so it is deleted, as Kafka's getPartitionReassignment makes it."""
    path = ReassignPartitionsNode.path()
    node = await controller.store.get(path)
    if node is None:
        return
    try:
        listed = ReassignPartitionsNode.decode(node[0])
    except ZnodeFormatError:
        listed = {}
    kept = {tp: r for tp, r in listed.items() if not should_remove((tp.topic, tp.partition), r)}
    if listed and len(kept) == len(listed):
        return
    tx = controller.store.fenced(controller.context.epoch_zk_version)
    if kept:
        tx.set(path, ReassignPartitionsNode.encode(kept, controller.release))
    else:
        tx.delete(path)
    try:
        await tx.commit()
    except NoNodeError:
        return
    if not kept:
        log.info("controller.zk_reassignment_done")


def ongoing(controller: Controller, wanted: Iterable[TP] | None) -> dict[TP, ReplicaAssignment]:
    """ListPartitionReassignments: the requested (or all) partitions with non-empty AR or RR;
    others are silently left out."""
    state = controller.state
    keys = list(wanted) if wanted is not None else sorted(state.reassigning)
    out: dict[TP, ReplicaAssignment] = {}
    for tp in keys:
        current = current_assignment(controller, tp)
        if current.is_reassigning:
            out[tp] = current
    return out
