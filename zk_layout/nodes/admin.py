"""Admin request nodes: ``/admin``, ``/admin/reassign_partitions``,
``/admin/preferred_replica_election``, ``/admin/delete_topics`` and its markers
``/admin/delete_topics/<topic>``.

* ``/admin/reassign_partitions``
  ``{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[4,5,6]}]}``. Kafka binds
  it to a strict Jackson bean: an unknown field anywhere (``log_dirs`` from the tool's own JSON is
  the classic) makes the whole node invalid, as does a missing or mistyped field. Such a node is
  ignored with a warning and left in place by the controller; here ``decode`` raises
  ``ZnodeFormatError``. ``version`` may be absent (Jackson defaults it); duplicates: the last
  entry for a partition wins.
* ``/admin/preferred_replica_election``
  ``{"version":1,"partitions":[{"topic":"foo","partition":0}]}``. Bytes that are not JSON read as
  the empty set (Kafka's ``Json.parseBytes`` -> None); valid JSON without ``partitions`` (or
  otherwise malformed) raises, matching Kafka's throw-and-leave-in-place.
* ``/admin/delete_topics/<t>``: null data; the marker's existence is the request.

Deliberately not here: which partitions are valid, removing completed ones, deleting the node
(controller code).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.errors import ZnodeFormatError
from zkbroker.zk_layout.nodes.base import (
    EmptyNode,
    TopicPartition,
    ZNode,
    topic_partition_json,
    topic_partition_list,
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
    ZNode[frozenset[TopicPartition]], parent=AdminNode, name="preferred_replica_election"
):
    FORMAT_VERSIONS = (1,)

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 1

    @classmethod
    def encode(cls, value: frozenset[TopicPartition], release: Release) -> bytes:
        return cj.dumps({"version": 1, "partitions": topic_partition_json(value)})

    @classmethod
    def decode(cls, data: bytes) -> frozenset[TopicPartition]:
        where = cls.PATTERN
        parsed = cj.try_parse(data)
        if parsed is cj.UNPARSEABLE:
            return frozenset()
        doc = cj.as_object(parsed, where, "the document")
        return frozenset(
            topic_partition_list(cj.require(doc, "partitions", where), where, "'partitions'")
        )


class DeleteTopicsNode(EmptyNode, parent=AdminNode, name="delete_topics"):
    """``/admin/delete_topics``: the controller watches its children (one per topic)."""


class DeleteTopicMarkerNode(EmptyNode, parent=DeleteTopicsNode, name="{topic}"):
    """``/admin/delete_topics/<topic>``: null data; exists while the deletion is pending."""
