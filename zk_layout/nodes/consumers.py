"""The pre-0.9 ("0.8", ZooKeeper-based) consumer registry under `/consumers`.

The node classes of docs/kafka-behaviour.md §1.11: the group and its `ids`, `owners`, `offsets`
containers, the ephemeral registration `/consumers/<g>/ids/<consumer>` (`pattern` and
`subscription` required, as `TopicCount.constructTopicCount`), the ephemeral owner
`/consumers/<g>/owners/<t>/<p>` and the committed offset `/consumers/<g>/offsets/<t>/<p>`
(decimal text; null data reads as no offset, as `getConsumerOffset`).

Not here: any I/O (`zkbroker.broker.groups.zk_registry` reads a whole group), rebalancing, and
the group states derived from these nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.errors import ZnodeFormatError
from zkbroker.zk_layout.nodes.base import EmptyNode, NodeKind, ZNode
from zkbroker.zk_layout.nodes.cluster import ConsumersNode
from zkbroker.zk_layout.release import Release

STATIC: Final = "static"
WHITE_LIST: Final = "white_list"
BLACK_LIST: Final = "black_list"
PATTERNS: Final = (STATIC, WHITE_LIST, BLACK_LIST)


@dataclass(frozen=True)
class ConsumerRegistration:
    """Content of ``/consumers/<g>/ids/<consumer>``: subscription (topic or regex -> number of
    streams), its pattern, and the registration time in epoch ms (-1 when absent/unreadable)."""

    subscription: Mapping[str, int]
    pattern: str = STATIC
    timestamp_ms: int = -1


class ConsumerGroupNode(EmptyNode, parent=ConsumersNode, name="{group}"):
    """``/consumers/<g>``: ``path(group)``; the group's containers are below it."""


class ConsumerIdsNode(EmptyNode, parent=ConsumerGroupNode, name="ids"):
    """``/consumers/<g>/ids``: one ephemeral child per member."""


class ConsumerIdNode(ZNode[ConsumerRegistration], parent=ConsumerIdsNode, name="{consumer}"):
    """``path(group, consumer)``."""

    FORMAT_VERSIONS = (1,)
    KIND = NodeKind.EPHEMERAL

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 1

    @classmethod
    def encode(cls, value: ConsumerRegistration, release: Release) -> bytes:
        return cj.dumps(
            {
                "version": 1,
                "subscription": dict(value.subscription),
                "pattern": value.pattern,
                "timestamp": str(value.timestamp_ms),
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> ConsumerRegistration:
        where = cls.PATTERN
        doc = cj.parse_object(data, where)
        pattern = cj.get_str(doc, "pattern", where)
        if pattern not in PATTERNS:
            raise ZnodeFormatError(where, f"unknown subscription pattern {pattern!r}")
        raw = cj.get_object(doc, "subscription", where)
        subscription = {
            topic: cj.check_int(count, where, f"the stream count of {topic!r}")
            for topic, count in raw.items()
        }
        if pattern != STATIC and len(subscription) != 1:
            raise ZnodeFormatError(where, f"a {pattern} subscription must have exactly one regex")
        return ConsumerRegistration(
            subscription=subscription,
            pattern=pattern,
            timestamp_ms=cj.lenient_timestamp(doc.get("timestamp")),
        )


class ConsumerOwnersNode(EmptyNode, parent=ConsumerGroupNode, name="owners"):
    """``/consumers/<g>/owners``: one child per owned topic."""


class ConsumerOwnersTopicNode(EmptyNode, parent=ConsumerOwnersNode, name="{topic}"):
    """``/consumers/<g>/owners/<t>``: ``path(group, topic)``."""


class ConsumerOwnerNode(ZNode[str], parent=ConsumerOwnersTopicNode, name="{partition}"):
    """The owning thread id, ``<consumer>-<thread>``; ``owner_consumer`` strips the thread.
    ``path(group, topic, partition)``."""

    FORMAT_VERSIONS = (0,)
    KIND = NodeKind.EPHEMERAL

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 0

    @classmethod
    def encode(cls, value: str, release: Release) -> bytes:
        return value.encode()

    @classmethod
    def decode(cls, data: bytes) -> str:
        try:
            return data.decode()
        except UnicodeDecodeError:
            raise ZnodeFormatError(cls.PATTERN, "owner is not UTF-8 text") from None


def owner_consumer(thread_id: str) -> str:
    """``"c1-0"`` -> ``"c1"``: the consumer id of an owner thread id (unchanged without a
    ``-<number>`` suffix)."""
    base, sep, suffix = thread_id.rpartition("-")
    return base if sep and suffix.isdecimal() else thread_id


class ConsumerOffsetsNode(EmptyNode, parent=ConsumerGroupNode, name="offsets"):
    """``/consumers/<g>/offsets``: one child per committed topic."""


class ConsumerOffsetsTopicNode(EmptyNode, parent=ConsumerOffsetsNode, name="{topic}"):
    """``/consumers/<g>/offsets/<t>``: ``path(group, topic)``."""


class ConsumerOffsetNode(ZNode[int | None], parent=ConsumerOffsetsTopicNode, name="{partition}"):
    """``path(group, topic, partition)``."""

    FORMAT_VERSIONS = (0,)

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 0

    @classmethod
    def encode(cls, value: int | None, release: Release) -> bytes:
        if value is None:
            raise ValueError("an offset node is written with an offset")
        return str(value).encode()

    @classmethod
    def decode(cls, data: bytes) -> int | None:
        if not data:
            return None
        try:
            text = data.decode("ascii")
        except UnicodeDecodeError:
            raise ZnodeFormatError(cls.PATTERN, "offset is not decimal text") from None
        return cj.parse_decimal_int(text, cls.PATTERN, "the offset", bits=64)
