"""The shape every znode class follows (after Kafka's ``ZkData.scala``), plus small shared
values and helpers.

A znode class is a never-instantiated namespace, one per path: ``path(...)`` from its parts,
``encode(value, release)`` (the bytes that release writes), ``decode(data)`` (every version in
``FORMAT_VERSIONS``, else ``ZnodeFormatError``; the few that read garbage as "empty", as Kafka
does, say so), ``written_version(release)`` and ``KIND``. Format version 0 means "no version
field". A path is written once, as the class's segment below its ``parent`` (class keywords,
see ``ZNode``); ``{field}`` parts are filled in order by ``path()``'s arguments, and
``PATTERN`` and ``path()`` derive from the chain (``AclNode`` writes its own). Concrete classes
register themselves (``node_classes()``, behind ``ALL_NODE_CLASSES``). Sequential nodes add
``PREFIX``, ``create_path()`` and ``sequence_number(child_name)``.

Not here: any I/O (``zkbroker.zk_layout.store``).
"""

from __future__ import annotations

import enum
import string
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Generic, TypeVar

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


#: The segment of a persistent-sequential child after its ``PREFIX``: ZooKeeper's counter, a
#: signed int zero-padded to 10 digits.
SEQUENCE_FIELD: Final = "{seq:010d}"

# Every concrete znode class, in the order they were defined (filled by ZNode.__init_subclass__
# as the modules are imported, never afterwards).
_REGISTRY: list[type[ZNode[Any]]] = []


def node_classes() -> tuple[type[ZNode[Any]], ...]:
    """Every concrete znode class defined so far, in definition order."""
    return tuple(_REGISTRY)


class ZNode(Generic[T]):
    """Base of all znode classes; ``T`` is the decoded value type.

    Class keywords of a subclass: ``parent`` (the node its path is below; None: the root),
    ``name`` (its own segment, ``{field}`` for a part given to ``path()``), ``abstract`` (an
    intermediate shape, neither a path nor registered).
    """

    FORMAT_VERSIONS: ClassVar[tuple[int, ...]] = ()
    KIND: ClassVar[NodeKind] = NodeKind.PERSISTENT
    # Path pattern used in error messages when decode() is not given the concrete path.
    PATTERN: ClassVar[str] = ""
    PARENT_NODE: ClassVar[type[ZNode[Any]] | None] = None
    NAME: ClassVar[str] = ""
    ABSTRACT: ClassVar[bool] = True
    # str.format template of the whole path ("/brokers/topics/{0}/partitions/{1}/state") and
    # the names of its fields, in the order path() takes them.
    _TEMPLATE: ClassVar[str | None] = None
    _FIELDS: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:  # pragma: no cover - namespaces only
        raise TypeError(f"{type(self).__name__} is a namespace of class methods")

    def __init_subclass__(
        cls,
        *,
        parent: type[ZNode[Any]] | None = None,
        name: str | None = None,
        abstract: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls.ABSTRACT = abstract
        if abstract:
            if parent is not None or name is not None:
                raise TypeError(f"abstract {cls.__name__} has no path: no parent or name")
            return
        if name is None and issubclass(cls, SequenceMixin):
            name = f"{cls.PREFIX}{SEQUENCE_FIELD}"
        if name is not None:
            _place(cls, parent, name)
        elif parent is not None or not {"PATTERN", "path"} <= cls.__dict__.keys():
            raise TypeError(f"{cls.__name__} needs a name (its segment), or a PATTERN and a path")
        _REGISTRY.append(cls)

    @classmethod
    def path(cls, *args: Any, **kwargs: Any) -> str:
        """The concrete path: one positional argument per field of ``PATTERN``, in order."""
        if cls._TEMPLATE is None:
            raise NotImplementedError(f"{cls.__name__} has no path")
        if kwargs or len(args) != len(cls._FIELDS):
            raise TypeError(
                f"{cls.__name__}.path() takes {len(cls._FIELDS)} positional argument(s)"
                f" ({', '.join(cls._FIELDS)}), got {len(args)}"
                + (f" and keyword(s) {', '.join(kwargs)}" if kwargs else "")
            )
        return cls._TEMPLATE.format(*args)

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


def _place(node: type[ZNode[Any]], parent: type[ZNode[Any]] | None, name: str) -> None:
    """Derive ``node``'s PATTERN, path template and fields from its parent's and its segment."""
    if not name or "/" in name:
        raise TypeError(f"{node.__name__}: a segment is one non-empty path element, not {name!r}")
    pattern, template, fields = "", "", tuple[str, ...]()
    if parent is not None:
        if parent._TEMPLATE is None:
            raise TypeError(f"{node.__name__}: parent {parent.__name__} has no composable path")
        pattern, template, fields = parent.PATTERN, parent._TEMPLATE, parent._FIELDS
    own_pattern: list[str] = []
    own_template: list[str] = []
    own_fields: list[str] = []
    for literal, field, spec, conversion in string.Formatter().parse(name):
        own_pattern.append(literal)
        own_template.append(literal.replace("{", "{{").replace("}", "}}"))
        if field is None:
            continue
        if not field.isidentifier() or conversion:
            raise TypeError(f"{node.__name__}: bad field {field!r} in segment {name!r}")
        own_pattern.append(f"<{field}>")
        index = len(fields) + len(own_fields)
        own_template.append(f"{{{index}:{spec}}}" if spec else f"{{{index}}}")
        own_fields.append(field)
    node.PARENT_NODE = parent
    node.NAME = name
    node.PATTERN = f"{pattern}/{''.join(own_pattern)}"
    node._TEMPLATE = f"{template}/{''.join(own_template)}"
    node._FIELDS = (*fields, *own_fields)
    if issubclass(node, SequenceMixin):
        if parent is None or parent._FIELDS:
            raise TypeError(f"{node.__name__}: a sequential node's parent is one fixed path")
        node.PARENT = parent.path()


class EmptyNode(ZNode[None], abstract=True):
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
    """Naming rules of a PERSISTENT_SEQUENTIAL child: ``<parent>/<prefix><10-digit counter>``.

    ``PARENT`` is derived from the class's ``parent`` node (see ``ZNode``)."""

    PARENT: ClassVar[str]
    PREFIX: ClassVar[str]

    @classmethod
    def create_path(cls) -> str:
        """The path to pass to a sequential create; ZooKeeper appends the counter."""
        return f"{cls.PARENT}/{cls.PREFIX}"

    @classmethod
    def sequence_path(cls, sequence: int) -> str:
        """Path of the child with the given counter (zero-padded to 10 digits like ZooKeeper)."""
        return f"{cls.create_path()}{SEQUENCE_FIELD.format(seq=sequence)}"

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


def _topic_partition_list(value: Any, where: str, what: str) -> list[TopicPartition]:
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


def _topic_partition_json(partitions: Any) -> list[dict[str, Any]]:
    """Sorted ``[{"topic":..,"partition":..}]`` so repeated encodes are byte-identical."""
    return [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(partitions)]


class PartitionSetDocument:
    """The value of a node holding a set of partitions, as Kafka writes both such nodes
    (``/admin/preferred_replica_election``, ``/isr_change_notification/isr_change_<seq>``):
    ``{"version":1,"partitions":[{"topic":..,"partition":..},...]}``. Unparseable JSON reads
    as no partitions."""

    PATTERN: ClassVar[str]
    FORMAT_VERSIONS: ClassVar[tuple[int, ...]] = (1,)

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 1

    @classmethod
    def encode(cls, value: frozenset[TopicPartition], release: Release) -> bytes:
        return cj.dumps({"version": 1, "partitions": _topic_partition_json(value)})

    @classmethod
    def decode(cls, data: bytes) -> frozenset[TopicPartition]:
        where = cls.PATTERN
        parsed = cj.try_parse(data)
        if parsed is cj.UNPARSEABLE:
            return frozenset()
        doc = cj.as_object(parsed, where, "the document")
        return frozenset(
            _topic_partition_list(cj.require(doc, "partitions", where), where, "'partitions'")
        )
