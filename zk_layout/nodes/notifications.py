"""Notifications consumed by the controller: ``/isr_change_notification/isr_change_<seq>`` and
``/log_dir_event_notification/log_dir_event_<seq>`` (both persistent-sequential, JSON v1), and
their parents.

* ISR change: ``{"version":1,"partitions":[{"topic":"t","partition":0}]}`` — written by partition
  leaders only when IBP < 2.7 (no AlterIsr). Bytes that are not JSON read as the empty set, as in
  Kafka (``Json.parseBytes`` -> None -> empty); malformed JSON raises.
* Log dir event: ``{"version":1,"broker":1,"event":1}`` (event 1 = log dir failure). Kafka reads
  only ``broker``; bytes that are not JSON decode to None (Kafka skips them).

Deliberately not here: batching of ISR notifications, their processing and deletion.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.nodes.base import (
    EmptyNode,
    NodeKind,
    PartitionSetDocument,
    SequenceMixin,
    TopicPartition,
    ZNode,
)
from zkbroker.zk_layout.release import Release

LOG_DIR_FAILURE_EVENT: Final = 1


@dataclass(frozen=True)
class LogDirEvent:
    broker_id: int
    event: int = LOG_DIR_FAILURE_EVENT


class IsrChangeNotificationsNode(EmptyNode, name="isr_change_notification"):
    """``/isr_change_notification``: the controller watches its children."""


class IsrChangeNotificationNode(
    SequenceMixin,
    PartitionSetDocument,
    ZNode[frozenset[TopicPartition]],
    parent=IsrChangeNotificationsNode,
):
    """``/isr_change_notification/isr_change_<seq>``: ``path(sequence)``."""

    KIND = NodeKind.PERSISTENT_SEQUENTIAL
    PREFIX = "isr_change_"


class LogDirEventNotificationsNode(EmptyNode, name="log_dir_event_notification"):
    """``/log_dir_event_notification``: the controller watches its children."""


class LogDirEventNotificationNode(
    SequenceMixin, ZNode[LogDirEvent | None], parent=LogDirEventNotificationsNode
):
    """``/log_dir_event_notification/log_dir_event_<seq>``: ``path(sequence)``."""

    FORMAT_VERSIONS = (1,)
    KIND = NodeKind.PERSISTENT_SEQUENTIAL
    PREFIX = "log_dir_event_"

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 1

    @classmethod
    def encode(cls, value: LogDirEvent | None, release: Release) -> bytes:
        if value is None:
            raise ValueError("nothing to encode: None is only a decode result")
        return cj.dumps({"version": 1, "broker": value.broker_id, "event": value.event})

    @classmethod
    def decode(cls, data: bytes) -> LogDirEvent | None:
        where = cls.PATTERN
        parsed = cj.try_parse(data)
        if parsed is cj.UNPARSEABLE:
            return None
        doc = cj.as_object(parsed, where, "the document")
        return LogDirEvent(
            cj.get_int(doc, "broker", where),
            cj.get_opt_int(doc, "event", where, LOG_DIR_FAILURE_EVENT),
        )
