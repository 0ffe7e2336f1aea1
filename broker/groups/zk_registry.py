"""Consumer groups of the ZooKeeper (0.8) consumer registry, as the group APIs see them.

The znodes are in docs/kafka-behaviour.md §1.11. `ConsumerGroup` is one group read from
`/consumers/<g>`: `Stable` while it has registered members, else `Empty`; its generation is the
cversion of `/consumers/<g>/ids`. `coordinator_id` hashes the group id over the live brokers
until `__consumer_offsets` exists (§16, "zkbroker's deviations"). `subscribed_topics` expands
`white_list`/`black_list` regexes as the old `TopicFilter` did. `group_ids`, `member_counts`,
`load_groups` read with pipelined `ZkStore` calls; `write_offsets` is
`setOrCreateConsumerOffset` for many partitions; `delete_group` removes the group.

Not here: rebalancing or writing owners (old consumers did that), offset metadata (the registry
stores the bare offset), the wire answers (`zkbroker.handlers.find_coordinator` and the other
group handlers).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from zkbroker.broker.image.metadata_image import INTERNAL_TOPICS
from zkbroker.broker.rules.jvm_collections import java_abs_hash
from zkbroker.zk_layout.errors import NodeExistsError, NoNodeError, ZnodeFormatError
from zkbroker.zk_layout.nodes.base import EmptyNode, TopicPartition
from zkbroker.zk_layout.nodes.cluster import ConsumersNode
from zkbroker.zk_layout.nodes.consumers import (
    STATIC,
    WHITE_LIST,
    ConsumerGroupNode,
    ConsumerIdNode,
    ConsumerIdsNode,
    ConsumerOffsetNode,
    ConsumerOffsetsNode,
    ConsumerOffsetsTopicNode,
    ConsumerOwnerNode,
    ConsumerOwnersNode,
    ConsumerOwnersTopicNode,
    ConsumerRegistration,
    owner_consumer,
)
from zkbroker.zk_layout.store import ZkStore

PROTOCOL_TYPE = "consumer"
# The old consumer's partition.assignment.strategy default; its registration does not record it.
ASSIGNMENT_STRATEGY = "range"
STABLE = "Stable"
EMPTY = "Empty"
DEAD = "Dead"


def coordinator_id(group_id: str, live_broker_ids: Iterable[int]) -> int | None:
    """The broker coordinating ``group_id``: ``abs(hashCode) % n`` over the sorted live ids."""
    ids = sorted(live_broker_ids)
    if not ids:
        return None
    return ids[java_abs_hash(group_id) % len(ids)]


def _java_topic_regex(raw: str) -> re.Pattern[str] | None:
    text = raw.strip().replace(",", "|").replace(" ", "")
    text = re.sub(r"""^["']+""", "", text)
    text = re.sub(r"""["']+$""", "", text)
    try:
        return re.compile(text)
    except re.error:
        return None


def subscribed_topics(registration: ConsumerRegistration, topics: Iterable[str]) -> list[str]:
    """The topics a registration subscribes to, sorted (``topics``: the existing ones, for
    pattern subscriptions; a static subscription names its topics whether they exist or not)."""
    if registration.pattern == STATIC:
        return sorted(registration.subscription)
    (raw,) = registration.subscription
    regex = _java_topic_regex(raw)
    if regex is None:
        return []
    want = registration.pattern == WHITE_LIST
    return sorted(
        t for t in topics if t not in INTERNAL_TOPICS and (regex.fullmatch(t) is not None) == want
    )


def group_state(member_count: int) -> str:
    """``Stable`` while a group has registered members, ``Empty`` otherwise."""
    return STABLE if member_count else EMPTY


@dataclass(frozen=True)
class ConsumerGroup:
    group_id: str
    # consumer id -> registration (None when the node could not be decoded)
    members: Mapping[str, ConsumerRegistration | None] = field(default_factory=dict)
    # partition -> owning thread id ("<consumer>-<thread>")
    owners: Mapping[TopicPartition, str] = field(default_factory=dict)
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    generation: int = 0

    @property
    def state(self) -> str:
        return group_state(len(self.members))

    def assignment(self, member: str) -> dict[str, list[int]]:
        """Partitions owned by ``member``'s threads, topic -> sorted partitions."""
        out: dict[str, list[int]] = {}
        for tp, thread in sorted(self.owners.items()):
            if owner_consumer(thread) == member:
                out.setdefault(tp.topic, []).append(tp.partition)
        return out


def storable(group_id: str) -> bool:
    """Whether ``/consumers/<group_id>`` is a valid ZooKeeper path (Kafka allows any group id,
    the empty one included; such groups can never exist in the registry)."""
    return group_id not in ("", ".", "..") and "/" not in group_id and "\0" not in group_id


async def group_ids(store: ZkStore) -> list[str]:
    """Every group under ``/consumers``, sorted."""
    return sorted(await store.get_children(ConsumersNode.path()) or [])


async def member_counts(store: ZkStore, groups: Sequence[str]) -> dict[str, int]:
    """group -> number of registered members, for the groups that still exist."""
    children, exists = await asyncio.gather(
        store.get_children_many([ConsumerIdsNode.path(g) for g in groups]),
        store.get_many([ConsumerGroupNode.path(g) for g in groups]),
    )
    return {
        g: len(kids or [])
        for g, kids, there in zip(groups, children, exists, strict=True)
        if there is not None
    }


#: (group, "owners" | "offsets", topic): a topic directory under a group's owners or offsets.
_TopicDir = tuple[str, str, str]
#: (group, "ids" | "owners" | "offsets", consumer id or topic, partition or ""): one leaf znode.
_Leaf = tuple[str, str, str, str]
#: A node's data and stat as `ZkStore.get_many` reads it, None when absent.
_Read = tuple[bytes, Any] | None
#: container node class -> its children (None when absent), for one group.
_Children = dict[type[EmptyNode], list[str] | None]


async def load_groups(
    store: ZkStore,
    groups: Sequence[str],
    *,
    with_owners: bool = False,
    with_offsets: bool = False,
) -> dict[str, ConsumerGroup | None]:
    """Load each group (None for a group without ``/consumers/<g>``): its members and
    generation, plus its partition owners and committed offsets when asked for (left empty
    otherwise). Three pipelined rounds: the groups and their containers' children, the
    partitions of each owners/offsets topic, every leaf's data."""
    result: dict[str, ConsumerGroup | None] = dict.fromkeys(groups)
    groups = [g for g in dict.fromkeys(groups) if storable(g)]
    if not groups:
        return result
    containers: list[type[EmptyNode]] = [ConsumerIdsNode]
    if with_offsets:
        containers.append(ConsumerOffsetsNode)
    if with_owners:
        containers.append(ConsumerOwnersNode)
    present, ids_stats, per_group = await _read_groups(store, groups, containers)
    topic_dirs = _topic_dirs(present, per_group)
    partition_lists = await store.get_children_many(
        [
            (ConsumerOffsetsTopicNode if kind == "offsets" else ConsumerOwnersTopicNode).path(g, t)
            for g, kind, t in topic_dirs
        ]
    )
    leaves = [
        (g, "ids", consumer, "")
        for g in present
        for consumer in per_group[g][ConsumerIdsNode] or []
    ]
    for (g, kind, topic), parts in zip(topic_dirs, partition_lists, strict=True):
        leaves.extend((g, kind, topic, p) for p in parts or [] if p.lstrip("-").isdigit())
    data = await store.get_many([_leaf_path(*leaf) for leaf in leaves])
    members, owners, offsets = _decode_leaves(present, leaves, data)
    for g in present:
        stat = ids_stats[g]
        result[g] = ConsumerGroup(
            group_id=g,
            members=dict(sorted(members[g].items())),
            owners=owners[g],
            offsets=offsets[g],
            generation=stat[1].cversion if stat is not None else 0,
        )
    return result


async def _read_groups(
    store: ZkStore, groups: list[str], containers: list[type[EmptyNode]]
) -> tuple[list[str], dict[str, _Read], dict[str, _Children]]:
    """Round 1: each group node (existence) and its ids node (stat: the generation), and the
    containers' children. Returns the groups present, each group's ids node, and each group's
    children per container."""
    width = len(containers)
    nodes, kids = await asyncio.gather(
        store.get_many(
            [p for g in groups for p in (ConsumerGroupNode.path(g), ConsumerIdsNode.path(g))]
        ),
        store.get_children_many([c.path(g) for g in groups for c in containers]),
    )
    present = [g for i, g in enumerate(groups) if nodes[2 * i] is not None]
    ids_stats = {g: nodes[2 * i + 1] for i, g in enumerate(groups)}
    per_group = {
        g: dict(zip(containers, kids[i * width : (i + 1) * width], strict=True))
        for i, g in enumerate(groups)
    }
    return present, ids_stats, per_group


def _topic_dirs(present: list[str], per_group: Mapping[str, _Children]) -> list[_TopicDir]:
    """The topic directories whose partitions round 2 lists: offsets, then owners, per group."""
    topic_dirs: list[_TopicDir] = []
    for g in present:
        for topic in per_group[g].get(ConsumerOffsetsNode) or []:
            topic_dirs.append((g, "offsets", topic))
        for topic in per_group[g].get(ConsumerOwnersNode) or []:
            topic_dirs.append((g, "owners", topic))
    return topic_dirs


def _decode_leaves(
    present: list[str], leaves: list[_Leaf], data: Sequence[_Read]
) -> tuple[
    dict[str, dict[str, ConsumerRegistration | None]],
    dict[str, dict[TopicPartition, str]],
    dict[str, dict[TopicPartition, int]],
]:
    """Round 3's data, per group: members, partition owners, committed offsets. A leaf gone
    between the reads, or whose owner or offset cannot be read, is left out."""
    members: dict[str, dict[str, ConsumerRegistration | None]] = {g: {} for g in present}
    owners: dict[str, dict[TopicPartition, str]] = {g: {} for g in present}
    offsets: dict[str, dict[TopicPartition, int]] = {g: {} for g in present}
    for (g, kind, name, p), got in zip(leaves, data, strict=True):
        if got is None:  # gone between the reads
            continue
        raw = got[0]
        try:
            if kind == "ids":
                members[g][name] = _registration(raw)
            elif kind == "owners":
                owners[g][TopicPartition(name, int(p))] = ConsumerOwnerNode.decode(raw)
            else:
                offset = ConsumerOffsetNode.decode(raw)
                if offset is not None:
                    offsets[g][TopicPartition(name, int(p))] = offset
        except ZnodeFormatError:
            continue
    return members, owners, offsets


def _registration(raw: bytes) -> ConsumerRegistration | None:
    try:
        return ConsumerIdNode.decode(raw)
    except ZnodeFormatError:
        return None


def _leaf_path(group: str, kind: str, name: str, partition: str) -> str:
    if kind == "ids":
        return ConsumerIdNode.path(group, name)
    if kind == "owners":
        return ConsumerOwnerNode.path(group, name, int(partition))
    return ConsumerOffsetNode.path(group, name, int(partition))


async def _write_offset(store: ZkStore, path: str, data: bytes) -> None:
    try:
        await store.set(path, data)
        return
    except NoNodeError:
        pass
    try:
        await store.create(path, data, makepath=True)
    except NodeExistsError:  # created meanwhile: the set wins as it would have
        await store.set(path, data)


async def write_offsets(
    store: ZkStore, group: str, offsets: Mapping[TopicPartition, int]
) -> dict[TopicPartition, BaseException | None]:
    """Write each offset (decimal text); partition -> None or the exception that failed it."""
    items = list(offsets.items())
    outcomes = await asyncio.gather(
        *(
            _write_offset(
                store,
                ConsumerOffsetNode.path(group, tp.topic, tp.partition),
                ConsumerOffsetNode.encode(offset, (3, 9)),
            )
            for tp, offset in items
        ),
        return_exceptions=True,
    )
    return {tp: out for (tp, _), out in zip(items, outcomes, strict=True)}


async def delete_group(store: ZkStore, group: str) -> None:
    """Remove ``/consumers/<group>`` and everything under it (absent is fine)."""
    with contextlib.suppress(NoNodeError):
        await store.delete(ConsumerGroupNode.path(group), recursive=True)
