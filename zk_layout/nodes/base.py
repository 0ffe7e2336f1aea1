"""The shape every znode class follows, plus small values and helpers shared between them.

A znode class is a namespace of class/static methods (never instantiated), one per path of
Kafka's layout, after the idea of Kafka's ``ZkData.scala``:

* ``path(...)``: the path built from its parts (topic, partition, broker id, ...);
* ``encode(value, release) -> bytes``: the bytes the given Kafka release writes;
* ``decode(data) -> value``: reads every format version listed in ``FORMAT_VERSIONS`` and raises
  ``ZnodeFormatError`` for anything else (a few classes read garbage as "empty" because Kafka
  does; their docstrings say so);
* ``written_version(release) -> int``: the format version that release writes;
* ``KIND``: persistent, ephemeral or persistent-sequential.

Format version 0 means "no version field": plain text, null data, or the pre-v1 notification.

Sequential nodes (notifications) also carry ``PREFIX`` (the child-name prefix before ZooKeeper's
10-digit counter), ``create_path()`` (what to pass to a sequential create) and
``sequence_number(child_name)``.

Deliberately not here: any I/O. ``zkbroker.zk_layout.store`` does the ZooKeeper side.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.errors import ZnodeFormatError
from zkbroker.zk_layout.release import Release

T = TypeVar("T")


class NodeKind(enum.Enum):
    PERSISTENT = "persistent"
    EPHEMERAL = "ephemeral"
    PERSISTENT_SEQUENTIAL = "persistent_sequential"


@dataclass(frozen=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class ZNode(Generic[T]):
    """Base of all znode classes; ``T`` is the decoded value type."""

    FORMAT_VERSIONS: ClassVar[tuple[int, ...]] = ()
    KIND: ClassVar[NodeKind] = NodeKind.PERSISTENT
    # Path pattern used in error messages when decode() is not given the concrete path.
    PATTERN: ClassVar[str] = ""

    def __init__(self) -> None:  # pragma: no cover - namespaces only
        raise TypeError(f"{type(self).__name__} is a namespace of class methods")

    @staticmethod
    def path(*args: Any, **kwargs: Any) -> str:
        raise NotImplementedError

    @classmethod
    def written_version(cls, release: Release) -> int:
        raise NotImplementedError

    @classmethod
    def encode(cls, value: T, release: Release) -> bytes:
        raise NotImplementedError

    @classmethod
    def decode(cls, data: bytes) -> T:
        raise NotImplementedError

    @classmethod
    def decode_at(cls, data: bytes, *path_args: Any) -> T:
        """Decode the data read from ``path(*path_args)``; errors name that concrete path.

        Classes whose value includes a path part (the broker id of ``/brokers/ids/<id>``)
        override this to fill it in.
        """
        try:
            return cls.decode(data)
        except ZnodeFormatError as exc:
            raise ZnodeFormatError(cls.path(*path_args), exc.reason) from None


class EmptyNode(ZNode[None]):
    """A persistent node whose data is null and whose existence (or children) is what matters:
    container paths such as ``/brokers/ids`` and markers such as ``/admin/delete_topics/<t>``.

    ``encode`` returns ``b""``; the store writes such nodes with null data as Kafka does when it
    creates them itself. ``decode`` ignores whatever data is there: Kafka never reads it.
    """

    FORMAT_VERSIONS = (0,)

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 0

    @classmethod
    def encode(cls, value: None, release: Release) -> bytes:
        return b""

    @classmethod
    def decode(cls, data: bytes) -> None:
        return None


class SequenceMixin:
    """Naming rules of a PERSISTENT_SEQUENTIAL child: ``<parent>/<prefix><10-digit counter>``."""

    PARENT: ClassVar[str]
    PREFIX: ClassVar[str]

    @classmethod
    def create_path(cls) -> str:
        """The path to pass to a sequential create; ZooKeeper appends the counter."""
        return f"{cls.PARENT}/{cls.PREFIX}"

    @classmethod
    def sequence_path(cls, sequence: int) -> str:
        """Path of the child with the given counter (zero-padded to 10 digits like ZooKeeper)."""
        return f"{cls.PARENT}/{cls.PREFIX}{sequence:010d}"

    @classmethod
    def is_child_name(cls, name: str) -> bool:
        suffix = name[len(cls.PREFIX) :]
        return name.startswith(cls.PREFIX) and suffix.lstrip("-").isdigit()

    @classmethod
    def sequence_number(cls, name: str) -> int:
        """Counter of a child name (or full path): ``config_change_0000000042`` -> 42.

        ZooKeeper's counter is a signed int that can wrap to negative, hence the sign.
        """
        child = name.rsplit("/", 1)[-1]
        if not cls.is_child_name(child):
            raise ValueError(f"{name!r} is not a {cls.PREFIX}<counter> child of {cls.PARENT}")
        return int(child[len(cls.PREFIX) :])


def check_version(where: str, version: int, readable: tuple[int, ...]) -> int:
    if version not in readable:
        raise ZnodeFormatError(
            where, f"unsupported version {version} (readable: {', '.join(map(str, readable))})"
        )
    return version


def topic_partition_list(value: Any, where: str, what: str) -> list[TopicPartition]:
    """``[{"topic":"t","partition":0}, ...]`` as Kafka's notification/election nodes write it."""
    if not isinstance(value, list):
        raise ZnodeFormatError(where, f"{what} must be an array, got {cj.type_name(value)}")
    out: list[TopicPartition] = []
    for item in value:
        entry = cj.as_object(item, where, f"an element of {what}")
        out.append(
            TopicPartition(cj.get_str(entry, "topic", where), cj.get_int(entry, "partition", where))
        )
    return out


def topic_partition_json(partitions: Any) -> list[dict[str, Any]]:
    """Sorted ``[{"topic":..,"partition":..}]`` so repeated encodes are byte-identical."""
    return [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(partitions)]
