"""Admin request nodes: `/admin`, `/admin/reassign_partitions`, `/admin/preferred_replica_election`,
`/admin/delete_topics` and its markers `/admin/delete_topics/<topic>`.

Formats and Kafka's reading rules are in docs/kafka-behaviour.md §1.7. `/admin/reassign_partitions`
is read as Kafka's strict Jackson bean: an unknown, missing or mistyped field (the tool's own
`log_dirs` is the classic) makes `decode` raise `ZnodeFormatError`; `version` may be absent; the
last entry for a partition wins. `/admin/preferred_replica_election` bytes that are not JSON read
as the empty set, valid JSON without `partitions` raises. A delete marker has null data.

Not here: which partitions are valid, removing completed ones, deleting the node (controller
code).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.errors import ZnodeFormatError
from zkbroker.zk_layout.nodes.base import (
    EmptyNode,
    PartitionSetDocument,
    TopicPartition,
    ZNode,
)
from zkbroker.zk_layout.release import Release

Reassignment = dict[TopicPartition, tuple[int, ...]]

_REASSIGN_TOP_KEYS = frozenset({"version", "partitions"})
_REASSIGN_ENTRY_KEYS = frozenset({"topic", "partition", "replicas"})


class AdminNode(EmptyNode, name="admin"):
    """``/admin``: parent of the admin requests."""


class ReassignPartitionsNode(ZNode[Reassignment], parent=AdminNode, name="reassign_partitions"):
    FORMAT_VERSIONS = (1,)

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 1

    @classmethod
    def encode(cls, value: Mapping[TopicPartition, tuple[int, ...]], release: Release) -> bytes:
        return cj.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
                    for tp, replicas in value.items()
                ],
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> Reassignment:
        where = cls.PATTERN
        doc = cj.parse_object(data, where)
        _no_unknown_fields(doc, _REASSIGN_TOP_KEYS, where, "the document")
        if doc.get("version") is not None:
            cj.get_int(doc, "version", where)
        out: Reassignment = {}
        for raw in cj.get_list(doc, "partitions", where):
            entry = cj.as_object(raw, where, "an element of 'partitions'")
            _no_unknown_fields(entry, _REASSIGN_ENTRY_KEYS, where, "a partition entry")
            tp = TopicPartition(
                cj.get_str(entry, "topic", where), cj.get_int(entry, "partition", where)
            )
            out[tp] = cj.get_int_list(entry, "replicas", where)
        return out


def _no_unknown_fields(
    obj: Mapping[str, Any], known: frozenset[str], where: str, what: str
) -> None:
    unknown = sorted(set(obj) - known)
    if unknown:
        raise ZnodeFormatError(
            where, f"unrecognized field(s) {', '.join(map(repr, unknown))} in {what}"
        )


class PreferredReplicaElectionNode(
    PartitionSetDocument,
    ZNode[frozenset[TopicPartition]],
    parent=AdminNode,
    name="preferred_replica_election",
):
    """``/admin/preferred_replica_election``: the partitions to elect preferred leaders of."""


class DeleteTopicsNode(EmptyNode, parent=AdminNode, name="delete_topics"):
    """``/admin/delete_topics``: the controller watches its children (one per topic)."""


class DeleteTopicMarkerNode(EmptyNode, parent=DeleteTopicsNode, name="{topic}"):
    """``/admin/delete_topics/<topic>``: null data; exists while the deletion is pending."""
