"""Topic nodes: `/brokers/topics`, `/brokers/topics/<t>` (replica assignment, JSON v1-v3),
`.../partitions`, `.../partitions/<p>` (null data) and `.../partitions/<p>/state` (leader and
ISR, JSON v1); docs/kafka-behaviour.md §1.3, §1.4.

`TopicNode.written_version` follows the release (v1 before 2.4, v2 2.4-2.7, v3 from 2.8).
Encoding reassignment state for a release before 2.4 fails loudly; a topic id is dropped before
2.8, as a downgraded controller rewriting the node does. Decoding follows `TopicZNode.decode`,
except that unparseable bytes raise `ZnodeFormatError` instead of reading as no partitions
(callers wanting Kafka's behaviour catch it).

Not here: replica assignment, leader election or ISR rules (controller code).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.errors import ZnodeFormatError
from zkbroker.zk_layout.nodes.base import EmptyNode, ZNode
from zkbroker.zk_layout.nodes.brokers import BrokersNode
from zkbroker.zk_layout.release import Release, release_at_least
from zkbroker.zk_layout.uuid_text import uuid_from_text, uuid_to_text

LEADER_NONE: Final = -1
LEADER_RECOVERED: Final = 0
LEADER_RECOVERING: Final = 1


@dataclass(frozen=True)
class TopicAssignment:
    """Content of ``/brokers/topics/<t>``: partition -> replicas, in-flight reassignment state
    (``adding``/``removing``: partition -> replicas, only non-empty entries) and the topic id."""

    partitions: dict[int, tuple[int, ...]]
    adding: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing: dict[int, tuple[int, ...]] = field(default_factory=dict)
    topic_id: uuid.UUID | None = None

    def is_reassigning(self, partition: int) -> bool:
        return bool(self.adding.get(partition) or self.removing.get(partition))


@dataclass(frozen=True)
class PartitionState:
    """Content of ``.../partitions/<p>/state``. The znode's data version (the "zkVersion" used
    for conditional updates) is in the ZnodeStat, not here."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int = LEADER_RECOVERED


class TopicsNode(EmptyNode, parent=BrokersNode, name="topics"):
    """Parent of all topics; the controller watches its children."""


class TopicNode(ZNode[TopicAssignment], parent=TopicsNode, name="{topic}"):
    """``/brokers/topics/<t>``: ``path(topic)``."""

    FORMAT_VERSIONS = (1, 2, 3)

    @classmethod
    def written_version(cls, release: Release) -> int:
        if release_at_least(release, (2, 8)):
            return 3
        if release_at_least(release, (2, 4)):
            return 2
        return 1

    @classmethod
    def encode(cls, value: TopicAssignment, release: Release) -> bytes:
        version = cls.written_version(release)
        doc: dict[str, Any] = {
            "version": version,
            "partitions": _replica_map(value.partitions),
        }
        if version >= 2:
            doc["adding_replicas"] = _replica_map(value.adding, non_empty_only=True)
            doc["removing_replicas"] = _replica_map(value.removing, non_empty_only=True)
        elif any(value.adding.values()) or any(value.removing.values()):
            raise ValueError(
                "adding/removing replicas cannot be stored before Kafka 2.4 (topic znode v1)"
            )
        if version >= 3 and value.topic_id is not None:
            doc["topic_id"] = uuid_to_text(value.topic_id)
        return cj.dumps(doc)

    @classmethod
    def decode(cls, data: bytes) -> TopicAssignment:
        where = cls.PATTERN
        doc = cj.parse_object(data, where)
        partitions = _read_replica_map(doc, "partitions", where)
        adding = {p: r for p, r in _read_replica_map(doc, "adding_replicas", where).items() if r}
        removing = {
            p: r for p, r in _read_replica_map(doc, "removing_replicas", where).items() if r
        }
        topic_id_text = cj.get_opt_str(doc, "topic_id", where)
        topic_id = None
        if topic_id_text is not None:
            try:
                topic_id = uuid_from_text(topic_id_text)
            except ValueError as exc:
                raise ZnodeFormatError(where, f"bad topic_id: {exc}") from None
        return TopicAssignment(partitions, adding, removing, topic_id)


def _replica_map(
    replicas: Mapping[int, tuple[int, ...]], *, non_empty_only: bool = False
) -> dict[str, list[int]]:
    return {
        str(p): list(replicas[p]) for p in sorted(replicas) if not non_empty_only or replicas[p]
    }


_INT_ONLY: Final = frozenset({int})


def _read_replica_map(doc: Mapping[str, Any], key: str, where: str) -> dict[int, tuple[int, ...]]:
    raw = doc.get(key)
    if raw is None:
        return {}
    obj = cj.as_object(raw, where, repr(key))
    fast = _fast_replica_map(obj)
    if fast is not None:
        return fast
    # Something is off: the checked reading names it.
    return {
        cj.parse_decimal_int(p, where, f"partition key {p!r} of {key!r}"): cj.int_list(
            r, where, f"replicas of partition {p} in {key!r}"
        )
        for p, r in obj.items()
    }


def _fast_replica_map(obj: Mapping[str, Any]) -> dict[int, tuple[int, ...]] | None:
    """The replica map of a well-formed document (unsigned decimal keys below 10^9, lists
    of 32-bit integers), or None for anything else, which the checked reading then refuses
    or reads. About seven times faster than checking each partition on its own: the map of
    a topic of 46,335 partitions is read in ~17 ms instead of ~130 ms (plus ~20 ms of
    `json.loads`), on the loop every broker of the process shares. Equal replica lists share
    one tuple (a handful of distinct ones in a topic of thousands of partitions)."""
    out: dict[int, tuple[int, ...]] = {}
    seen: dict[tuple[int, ...], tuple[int, ...]] = {}
    for p, r in obj.items():
        if type(r) is not list or not (len(p) < 10 and p.isdigit() and p.isascii()):
            return None
        replicas = tuple(r)
        # Exactly int (JSON has no other integer type; a bool or float is refused), so the
        # tuple hashes and compares as the integers it holds.
        if not _INT_ONLY.issuperset(map(type, replicas)):
            return None
        shared = seen.get(replicas)
        if shared is None:
            if replicas and not (min(replicas) >= cj.INT32_MIN and max(replicas) <= cj.INT32_MAX):
                return None
            seen[replicas] = shared = replicas
        out[int(p)] = shared
    return out


class TopicPartitionsNode(EmptyNode, parent=TopicNode, name="partitions"):
    """``/brokers/topics/<t>/partitions``: null data, created by the controller."""


class TopicPartitionNode(EmptyNode, parent=TopicPartitionsNode, name="{partition}"):
    """``/brokers/topics/<t>/partitions/<p>``: null data, created by the controller;
    ``path(topic, partition)``."""


class PartitionStateNode(ZNode[PartitionState], parent=TopicPartitionNode, name="state"):
    """``/brokers/topics/<t>/partitions/<p>/state``: ``path(topic, partition)``."""

    FORMAT_VERSIONS = (1,)

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 1

    @classmethod
    def encode(cls, value: PartitionState, release: Release) -> bytes:
        doc: dict[str, Any] = {
            "controller_epoch": value.controller_epoch,
            "leader": value.leader,
            "version": 1,
            "leader_epoch": value.leader_epoch,
            "isr": list(value.isr),
        }
        if value.leader_recovery_state == LEADER_RECOVERING:
            if not release_at_least(release, (3, 2)):
                raise ValueError("leader_recovery_state RECOVERING needs Kafka 3.2 or later")
            doc["leader_recovery_state"] = LEADER_RECOVERING
        elif value.leader_recovery_state != LEADER_RECOVERED:
            raise ValueError(f"unknown leader_recovery_state {value.leader_recovery_state}")
        return cj.dumps(doc)

    @classmethod
    def decode(cls, data: bytes) -> PartitionState:
        where = cls.PATTERN
        doc = cj.parse_object(data, where)
        recovery = cj.get_opt_int(doc, "leader_recovery_state", where, LEADER_RECOVERED)
        if recovery not in (LEADER_RECOVERED, LEADER_RECOVERING):
            raise ZnodeFormatError(where, f"unknown leader_recovery_state {recovery}")
        return PartitionState(
            leader=cj.get_int(doc, "leader", where),
            leader_epoch=cj.get_int(doc, "leader_epoch", where),
            isr=cj.get_int_list(doc, "isr", where),
            controller_epoch=cj.get_int(doc, "controller_epoch", where),
            leader_recovery_state=recovery,
        )
