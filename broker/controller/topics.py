"""The controller's topic and partition lifecycle (Kafka's KafkaController topic events).

On the controller task, every write fenced: new topics and partitions get their first state
(docs/kafka-behaviour.md §10.2), topics without an id get one (§1.3, `processTopicIds`),
partitions added to a topic queued for deletion are undone (§10.2), and topics are deleted
(§10.6). Writes go in one multi per topic, or per `PARTITIONS_PER_MULTI` partitions (a request
must fit ZooKeeper's jute.maxbuffer; a chunk meeting existing nodes is redone from what is
there), built in slices (`zkbroker.broker.asyncutil.Pacer`) and published to this process's
image as each commits. A partition with no live replica stays without state and is retried
when a broker registers.

Not here: elections and ISR changes (`zkbroker.broker.controller.partitions`), reassignment
(`zkbroker.broker.controller.reassignment`), the controller's election
(`zkbroker.broker.controller.controller`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.log import get_logger
from zkbroker.zk_layout import (
    ConfigEntityNode,
    DeleteTopicMarkerNode,
    NodeExistsError,
    NoNodeError,
    PartitionState,
    PartitionStateNode,
    TopicAssignment,
    TopicNode,
    TopicPartitionNode,
    TopicPartitionsNode,
    TopicsNode,
    ZnodeFormatError,
    random_uuid,
)
from zkbroker.zk_layout.store import ZkTransaction

if TYPE_CHECKING:
    from zkbroker.broker.controller.controller import Controller

log = get_logger(__name__)

# Partitions per fenced multi when creating or deleting a topic's partition znodes: a topic's
# partitions must not all go into one request, which ZooKeeper's jute.maxbuffer (1 MiB by
# default) caps at a few thousand partitions. A chunk left undone is redone from what is there.
PARTITIONS_PER_MULTI = 1000


@dataclass
class TopicRecord:
    assignment: TopicAssignment
    zk_version: int


@dataclass
class ControllerState:
    """Everything the controller knows; mutated only by the controller task."""

    live_brokers: set[int] = field(default_factory=set)
    topics: dict[str, TopicRecord] = field(default_factory=dict)
    # (topic, partition) -> (state, zk data version of the state znode)
    partition_states: dict[tuple[str, int], tuple[PartitionState, int]] = field(
        default_factory=dict
    )
    topics_to_delete: set[str] = field(default_factory=set)
    # Topics a CreateTopics handler of this broker is writing and will hand over itself.
    expected_topics: set[str] = field(default_factory=set)
    # Kafka's partitionsBeingReassigned; their RS/AR/RR are in `topics` (adding/removing).
    reassigning: set[tuple[str, int]] = field(default_factory=set)

    def partitions_without_state(self, topic: str) -> list[int]:
        record = self.topics.get(topic)
        if record is None:
            return []
        return [
            p
            for p in sorted(record.assignment.partitions)
            if (topic, p) not in self.partition_states
        ]


def initial_leader_and_isr(
    replicas: tuple[int, ...], live: set[int]
) -> tuple[int, tuple[int, ...]] | None:
    """Leader and ISR of a new partition (Kafka's initializeLeaderAndIsrForPartitions)."""
    live_replicas = tuple(r for r in replicas if r in live)
    if not live_replicas:
        return None
    return live_replicas[0], live_replicas


async def on_topics_changed(controller: Controller, children: list[str]) -> None:
    state = controller.state
    names = set(children) - state.expected_topics
    for gone in set(state.topics) - set(children):
        _forget_topic(state, gone)
        controller.unwatch_topic(gone)
    new = sorted(names - set(state.topics))
    if new:
        await load_topics(controller, new)


async def on_topics_created(
    controller: Controller, created: dict[str, TopicAssignment], expected: list[str]
) -> None:
    """Topics a CreateTopics handler of this broker just wrote, znode data version 0."""
    state = controller.state
    state.expected_topics.difference_update(expected)
    released = [name for name in expected if name not in created]
    if released:
        # Writes that failed (someone else created the topic): the watch path decides.
        children = await controller.store.get_children(TopicsNode.path()) or []
        await on_topics_changed(controller, children)
    new = [name for name in sorted(created) if name not in state.topics]
    for name in new:
        state.topics[name] = TopicRecord(created[name], 0)
    # Brand-new znodes have no partitions/ child yet (None); a writer that raced us is
    # handled by the NodeExists retry.
    await initialize_new_partitions(controller, new, dict.fromkeys(new))
    for name in new:
        controller.watch_topic(name)


async def load_topics(controller: Controller, names: list[str]) -> None:
    """Read assignments and existing partition states of `names`, then bring them online.
    The reads also arm each topic's data watch (PartitionModifications)."""
    store = controller.store
    reads, watches = await store.get_many_and_watch(
        [TopicNode.path(n) for n in names], [controller.topic_watch(n) for n in names]
    )
    controller.topic_watches_armed(names, watches)
    loaded = []
    for name, node in zip(names, reads, strict=True):
        if node is None:
            continue
        try:
            assignment = TopicNode.decode_at(node[0], name)
        except ZnodeFormatError as e:
            log.warning("controller.topic_undecodable", topic=name, reason=str(e))
            continue
        controller.state.topics[name] = TopicRecord(assignment, node[1].version)
        loaded.append(name)
    children = await _load_partition_states(controller, loaded)
    await assign_missing_topic_ids(controller, loaded)
    await initialize_new_partitions(controller, loaded, children)


async def on_topic_modified(
    controller: Controller, name: str, data: bytes, zk_version: int
) -> None:
    """Data change of /brokers/topics/<name>, as the watch delivered it (data, version):
    new partitions come online, or are undone if the topic is being deleted."""
    state = controller.state
    record = state.topics.get(name)
    if record is None or zk_version <= record.zk_version:
        return  # unknown topic, or a delivery older than what this event queue already saw
    try:
        assignment = TopicNode.decode_at(data, name)
    except ZnodeFormatError as e:
        log.warning("controller.topic_undecodable", topic=name, reason=str(e))
        return
    known = record.assignment
    if name in state.topics_to_delete and set(assignment.partitions) - set(known.partitions):
        # Kafka restores the znode instead of adding partitions to a topic being deleted.
        restored = replace(
            assignment,
            partitions={p: r for p, r in assignment.partitions.items() if p in known.partitions},
        )
        stat = await controller.fenced_set(
            TopicNode.path(name), TopicNode.encode(restored, controller.release), zk_version
        )
        state.topics[name] = TopicRecord(restored, stat.version)
        controller.publish(name, state.topics[name], {})
        return
    state.topics[name] = TopicRecord(assignment, zk_version)
    await assign_missing_topic_ids(controller, [name])
    await initialize_new_partitions(controller, [name])


async def assign_missing_topic_ids(controller: Controller, names: list[str]) -> None:
    if controller.release < (2, 8):
        return
    state = controller.state
    for name in names:
        record = state.topics.get(name)
        if record is None or record.assignment.topic_id is not None:
            continue
        with_id = replace(record.assignment, topic_id=random_uuid())
        stat = await controller.fenced_set(
            TopicNode.path(name), TopicNode.encode(with_id, controller.release), record.zk_version
        )
        state.topics[name] = TopicRecord(with_id, stat.version)
        controller.publish(name, state.topics[name], {})


async def initialize_new_partitions(
    controller: Controller,
    names: list[str],
    children: dict[str, list[str] | None] | None = None,
) -> None:
    """Write leader state for every partition of `names` that has none (one multi per topic).

    `children` may hold each topic's `partitions/` listing when the caller just read it."""
    known: dict[str, list[str] | None] = children or {}
    writes = [_initialize_topic(controller, name, known.get(name, ())) for name in names]
    await controller.gather(*writes)


async def _initialize_topic(
    controller: Controller, name: str, children: list[str] | tuple[()] | None
) -> None:
    try:
        await _write_initial_states(controller, name, children)
    except NodeExistsError:
        # Another writer (a tool, a test, a Kafka controller sharing the ensemble) created
        # some of these nodes meanwhile: take what is there, create only what is missing.
        listing = await _load_partition_states(controller, [name])
        await _write_initial_states(controller, name, listing[name])


async def _write_initial_states(
    controller: Controller, name: str, children: list[str] | tuple[()] | None = ()
) -> None:
    """`children`: the `partitions/` listing, None if absent, () if not read yet."""
    state = controller.state
    record = state.topics.get(name)
    if record is None or name in state.topics_to_delete:
        return
    missing = state.partitions_without_state(name)
    if not missing:
        return
    existing = (
        await controller.store.get_children(TopicPartitionsNode.path(name))
        if children == ()
        else children
    )
    existing_set = set(existing or ())
    store = controller.store
    if existing is None:
        # Its own multi when the states come in several, so each chunk stands alone.
        tx = store.fenced(controller.context.epoch_zk_version)
        tx.create(TopicPartitionsNode.path(name), None)
        if len(missing) > PARTITIONS_PER_MULTI:
            await tx.commit()
            tx = store.fenced(controller.context.epoch_zk_version)
    else:
        tx = store.fenced(controller.context.epoch_zk_version)
    chunk: dict[int, PartitionState] = {}
    pacer = Pacer()
    for partition in missing:
        if pacer.due():
            # The chunk being built is sent only when full, fenced by the epoch it was
            # built under; nothing of it is applied before its commit succeeds.
            await pacer.pause()
        chosen = initial_leader_and_isr(record.assignment.partitions[partition], state.live_brokers)
        if chosen is None:
            log.error(
                "controller.no_live_replica",
                topic=name,
                partition=partition,
                replicas=list(record.assignment.partitions[partition]),
            )
            continue
        leader, isr = chosen
        new_state = PartitionState(
            leader=leader, leader_epoch=0, isr=isr, controller_epoch=controller.context.epoch
        )
        if str(partition) not in existing_set:
            tx.create(TopicPartitionNode.path(name, partition), None)
        tx.create(
            PartitionStateNode.path(name, partition),
            PartitionStateNode.encode(new_state, controller.release),
        )
        chunk[partition] = new_state
        if len(chunk) >= PARTITIONS_PER_MULTI:
            await _commit_initial_states(controller, name, record, tx, chunk)
            tx, chunk = store.fenced(controller.context.epoch_zk_version), {}
    if chunk:
        await _commit_initial_states(controller, name, record, tx, chunk)


async def _commit_initial_states(
    controller: Controller,
    name: str,
    record: TopicRecord,
    tx: ZkTransaction,
    chunk: dict[int, PartitionState],
) -> None:
    await tx.commit()
    for partition, new_state in chunk.items():
        # A freshly created znode has data version 0.
        controller.state.partition_states[(name, partition)] = (new_state, 0)
    controller.publish(name, record, {p: (s, 0) for p, s in chunk.items()})


async def _load_partition_states(
    controller: Controller, names: list[str]
) -> dict[str, list[str] | None]:
    """Read the existing partition states of `names`; returns each `partitions/` listing.

    Listing first means a new topic costs one read, not one per partition."""
    state = controller.state
    listings = await controller.store.get_children_many(
        [TopicPartitionsNode.path(n) for n in names]
    )
    children = dict(zip(names, listings, strict=True))
    keys = [
        (name, p)
        for name in names
        for p in sorted(state.topics[name].assignment.partitions)
        if str(p) in (children[name] or ())
    ]
    reads = await controller.store.get_many([PartitionStateNode.path(t, p) for t, p in keys])
    for (name, partition), node in zip(keys, reads, strict=True):
        if node is None:
            continue
        try:
            decoded = PartitionStateNode.decode_at(node[0], name, partition)
        except ZnodeFormatError as e:
            log.warning(
                "controller.state_undecodable", topic=name, partition=partition, reason=str(e)
            )
            continue
        state.partition_states[(name, partition)] = (decoded, node[1].version)
    return children


def _forget_topic(state: ControllerState, name: str) -> None:
    state.topics.pop(name, None)
    state.topics_to_delete.discard(name)
    for key in [k for k in state.partition_states if k[0] == name]:
        del state.partition_states[key]
    state.reassigning.difference_update([k for k in state.reassigning if k[0] == name])


# ---- deletion ----------------------------------------------------------------------------


async def on_deletions_changed(controller: Controller, children: list[str]) -> None:
    state = controller.state
    state.topics_to_delete = set(children) & set(state.topics)
    store = controller.store
    unknown = [name for name in children if name not in state.topics]
    disabled = not controller.settings.delete_topic_enable
    for name in children if disabled else unknown:
        tx = store.fenced(controller.context.epoch_zk_version)
        tx.delete(DeleteTopicMarkerNode.path(name))
        with contextlib.suppress(NoNodeError):
            await tx.commit()
    if disabled:
        state.topics_to_delete.clear()
        return
    await try_topic_deletions(controller)


async def try_topic_deletions(controller: Controller) -> None:
    state = controller.state
    for name in sorted(state.topics_to_delete):
        record = state.topics.get(name)
        if record is None:
            continue
        assignment = record.assignment
        reassigning = any(assignment.is_reassigning(p) for p in assignment.partitions) or any(
            t == name for t, _ in state.reassigning
        )
        dead_replica = any(
            r not in state.live_brokers for rs in assignment.partitions.values() for r in rs
        )
        if reassigning or dead_replica:
            log.info(
                "controller.deletion_waiting",
                topic=name,
                reason="reassignment in progress" if reassigning else "replica on a dead broker",
            )
            continue
        await _delete_topic(controller, name)


async def _delete_topic(controller: Controller, name: str) -> None:
    store = controller.store
    partitions_path = TopicPartitionsNode.path(name)
    partitions, config, marker = await controller.gather(
        store.get_children(partitions_path),
        store.exists(ConfigEntityNode.topic(name)),
        store.exists(DeleteTopicMarkerNode.path(name)),
    )
    partition_paths = [f"{partitions_path}/{child}" for child in partitions or ()]
    leaves = await controller.gather(*(store.get_children(p) for p in partition_paths))
    tx = store.fenced(controller.context.epoch_zk_version)
    in_tx = 0
    for partition_path, children in zip(partition_paths, leaves, strict=True):
        for leaf in children or ():
            tx.delete(f"{partition_path}/{leaf}")
        tx.delete(partition_path)
        in_tx += 1
        if in_tx >= PARTITIONS_PER_MULTI:
            # Partition states first, in chunks (Kafka deletes them one by one too).
            await tx.commit()
            tx, in_tx = store.fenced(controller.context.epoch_zk_version), 0
    if partitions is not None:
        tx.delete(partitions_path)
    tx.delete(TopicNode.path(name))
    if config is not None:
        tx.delete(ConfigEntityNode.topic(name))
    # A marker already gone (another writer removed it) must not roll the deletion back:
    # Kafka deletes the markers apart and ignores a missing one.
    if marker is not None:
        tx.delete(DeleteTopicMarkerNode.path(name))
    await tx.commit()
    _forget_topic(controller.state, name)
    controller.unwatch_topic(name)
    controller.publish_deletion(name)
    log.info("controller.topic_deleted", topic=name)
