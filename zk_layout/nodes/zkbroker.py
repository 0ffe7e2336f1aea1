"""zkbroker's own znodes under ``/zkbroker``, outside Kafka's layout (Kafka never reads them).

* ``/zkbroker/brokers/<id>`` (persistent): the *desired* state of broker ``<id>``, so one
  process (``zkbroker broker stop|start``) can ask another to stop or start it; whether it is up
  is what ``/brokers/ids/<id>`` says. Its ephemeral ``owner`` child exists while a process runs
  that id, telling "stopped by its process" from "nobody runs it".
* ``/zkbroker/leases/<id>``: the controller's half of a KIP-631 lease
  (``zkbroker.broker.controller.broker_leases``).
* ``/zkbroker/faults/fault-<seq>``: fault-injection entries (``zkbroker.broker.hooks.faults``).

The classes follow the contract of every znode class (``zkbroker.zk_layout.nodes.base``;
decoding is strict, anything unknown is ``ZnodeFormatError``) but are not in
``PERSISTENT_ZK_PATHS`` (Kafka's list): whoever writes creates the parents on demand.

Not here: watching and applying the control nodes (``zkbroker.broker.engine.broker_control``),
the command line (``zkbroker.broker.cli.main``), any I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.errors import ZnodeFormatError
from zkbroker.zk_layout.nodes.base import EmptyNode, NodeKind, SequenceMixin, ZNode, check_version
from zkbroker.zk_layout.release import Release

T = TypeVar("T")
E = TypeVar("E", bound=enum.StrEnum)

_FORMAT_VERSION: Final = 1

#: What to pass as ``release`` to these classes' ``encode``: Kafka knows nothing of these
#: nodes, so their format does not depend on the emulated release.
ANY_RELEASE: Final[Release] = (3, 9)


class _VersionedJsonNode(ZNode[T], abstract=True):
    """A JSON object with ``"version":1``, whatever the release: the shape of zkbroker's own
    nodes that carry data."""

    FORMAT_VERSIONS = (_FORMAT_VERSION,)

    @classmethod
    def written_version(cls, release: Release) -> int:
        return _FORMAT_VERSION

    @classmethod
    def _document(cls, data: bytes) -> dict[str, Any]:
        """The parsed object, its version checked; errors name ``cls.PATTERN``."""
        doc = cj.parse_object(data, cls.PATTERN)
        check_version(cls.PATTERN, cj.get_int(doc, "version", cls.PATTERN), cls.FORMAT_VERSIONS)
        return doc


def _enum_field(doc: dict[str, Any], key: str, where: str, kind: type[E]) -> E:
    """The string field `key` as a member of `kind` (``ZnodeFormatError`` for any other)."""
    raw = cj.get_str(doc, key, where)
    try:
        return kind(raw)
    except ValueError:
        known = ", ".join(repr(k.value) for k in kind)
        raise ZnodeFormatError(where, f"unknown {key} {raw!r} (known: {known})") from None


class BrokerState(enum.StrEnum):
    """The desired state of a broker, as written in its control node."""

    RUNNING = "running"
    STOPPED = "stopped"


class ZkbrokerNode(EmptyNode, name="zkbroker"):
    """``/zkbroker``: root of everything zkbroker keeps for itself."""


class ZkbrokerBrokersNode(EmptyNode, parent=ZkbrokerNode, name="brokers"):
    """``/zkbroker/brokers``: one child per broker id that has a desired state."""


class BrokerControlNode(_VersionedJsonNode[BrokerState], parent=ZkbrokerBrokersNode, name="{id}"):
    """``/zkbroker/brokers/<id>``: ``{"version":1,"state":"running"|"stopped"}``;
    ``path(broker_id)``.

    The format does not depend on the emulated Kafka release (Kafka knows nothing of it);
    ``release`` is accepted only to keep the contract every znode class follows.
    """

    @classmethod
    def encode(cls, value: BrokerState, release: Release) -> bytes:
        return cj.dumps({"version": _FORMAT_VERSION, "state": BrokerState(value).value})

    @classmethod
    def decode(cls, data: bytes) -> BrokerState:
        return _enum_field(cls._document(data), "state", cls.PATTERN, BrokerState)


class BrokerOwnerNode(EmptyNode, parent=BrokerControlNode, name="owner"):
    """``/zkbroker/brokers/<id>/owner``: ephemeral, null data; its session is the zkbroker
    process that runs broker ``<id>``. ``path(broker_id)``."""

    KIND = NodeKind.EPHEMERAL


class BrokerLeasesNode(EmptyNode, parent=ZkbrokerNode, name="leases"):
    """``/zkbroker/leases``: one child per broker that joined over the protocol (KIP-631)."""


@dataclass(frozen=True)
class BrokerLease:
    """What the controller needs to resume a KIP-631 lease after a failover: the registering
    process's incarnation id. The broker epoch is not stored: the lease node is created in the
    same multi as its ``/brokers/ids/<id>`` node, so both have the same czxid, and a
    ``/brokers/ids/<id>`` with another czxid is not this lease's."""

    incarnation_id: str


class BrokerLeaseNode(_VersionedJsonNode[BrokerLease], parent=BrokerLeasesNode, name="{id}"):
    """``/zkbroker/leases/<id>`` (persistent): ``{"version":1,"incarnation_id":"<uuid>"}``;
    ``path(broker_id)``.

    Created and deleted by the controller together with ``/brokers/ids/<id>`` (one fenced
    multi). The deadline is not stored: a new controller gives every resumed lease a full
    session timeout, as a new KRaft controller does.
    """

    @classmethod
    def encode(cls, value: BrokerLease, release: Release) -> bytes:
        return cj.dumps({"version": _FORMAT_VERSION, "incarnation_id": value.incarnation_id})

    @classmethod
    def decode(cls, data: bytes) -> BrokerLease:
        doc = cls._document(data)
        return BrokerLease(incarnation_id=cj.get_str(doc, "incarnation_id", cls.PATTERN))


# ---- fault injection (zkbroker.broker.hooks.faults) ----------------------------------------------


class FaultKind(enum.StrEnum):
    """What a fault entry does: the first four to a matching request, the last three to
    replication between brokers (no request is touched; the replica fetchers ask)."""

    ERROR = "error"  # answer the API's error response with error_code (after delay_ms)
    LATENCY = "latency"  # answer normally, delay_ms later
    DROP = "drop"  # close the connection without an answer
    BLACKHOLE = "blackhole"  # answer nothing until the entry is deleted
    PAUSE_REPLICATION = "pause-replication"  # follower `broker` fetches nothing (scoped)
    SLOW_REPLICATION = "slow-replication"  # each fetch round of `broker` delay_ms late (scoped)
    CUT_INTER_BROKER = "cut-inter-broker"  # `broker` neither fetches, is fetched from, nor
    # writes its ISR changes; its ZooKeeper session stays

    @property
    def on_replication(self) -> bool:
        """Whether the kind acts on replication rather than on requests."""
        return self in _REPLICATION_KINDS


_REPLICATION_KINDS: Final = frozenset(
    {FaultKind.PAUSE_REPLICATION, FaultKind.SLOW_REPLICATION, FaultKind.CUT_INTER_BROKER}
)


@dataclass(frozen=True)
class FaultEntry:
    """One fault entry, ``/zkbroker/faults/fault-<seq>``.

    ``api`` is an API key (or, as written by hand, an API name); None matches every API.
    ``broker``/``topic``/``partition`` narrow it (None: any). ``skip`` is how many matching
    requests still pass untouched before it applies (the third Produce: ``skip=2``);
    ``count`` is how many matching requests it then applies to; None: until it is deleted.
    """

    kind: FaultKind
    api: int | str | None = None
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None
    error_code: int | None = None
    delay_ms: int = 0
    count: int | None = None
    skip: int = 0

    def replication_problem(self) -> str | None:
        """Why this entry of a replication kind cannot be one (None: it can, or it is of a
        request kind). Such an entry names a broker and lasts until it is deleted; only
        slow-replication has a delay, and cut-inter-broker takes the whole broker."""
        kind = self.kind
        if not kind.on_replication:
            return None
        if self.broker is None:
            return f"a {kind.value} fault needs a broker"
        if self.api is not None or self.error_code is not None:
            return f"a {kind.value} fault names no API and no error code"
        if self.count is not None or self.skip:
            return f"a {kind.value} fault lasts until it is cleared: it takes no count or skip"
        if self.delay_ms and kind is not FaultKind.SLOW_REPLICATION:
            return f"a {kind.value} fault takes no delay"
        if kind is FaultKind.CUT_INTER_BROKER and (
            self.topic is not None or self.partition is not None
        ):
            return "a cut-inter-broker fault cuts the whole broker: it takes no topic or partition"
        return None


class FaultsNode(EmptyNode, parent=ZkbrokerNode, name="faults"):
    """``/zkbroker/faults``: one persistent sequential child per fault entry."""


class FaultNode(SequenceMixin, _VersionedJsonNode[FaultEntry], parent=FaultsNode):
    """``/zkbroker/faults/fault-<seq>`` (persistent sequential): ``{"version":1,"kind":...,
    "api":19|"CreateTopics"|null,"broker":..,"topic":..,"partition":..,"error_code":..,
    "delay_ms":0,"count":N|null,"skip":N}`` (``skip`` absent: 0). The sequence number is
    the fault id; lower ids are consumed first. ``decode`` is strict (unknown kind, an error
    without ``error_code``, a negative count, skip or delay, a replication kind's entry that
    `FaultEntry.replication_problem` refuses raise ``ZnodeFormatError``)."""

    KIND = NodeKind.PERSISTENT_SEQUENTIAL
    PREFIX = "fault-"

    @classmethod
    def encode(cls, value: FaultEntry, release: Release) -> bytes:
        return cj.dumps(
            {
                "version": _FORMAT_VERSION,
                "kind": FaultKind(value.kind).value,
                "api": value.api,
                "broker": value.broker,
                "topic": value.topic,
                "partition": value.partition,
                "error_code": value.error_code,
                "delay_ms": value.delay_ms,
                "count": value.count,
                "skip": value.skip,
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> FaultEntry:
        where = cls.PATTERN
        doc = cls._document(data)
        kind = _enum_field(doc, "kind", where, FaultKind)
        api = doc.get("api")
        if api is not None and not isinstance(api, str):
            api = cj.check_int(api, where, "api")

        def opt_int(key: str) -> int | None:
            value = doc.get(key)
            return None if value is None else cj.check_int(value, where, key)

        error_code = opt_int("error_code")
        delay_ms = cj.get_opt_int(doc, "delay_ms", where, 0)
        count = opt_int("count")
        skip = cj.get_opt_int(doc, "skip", where, 0)
        if skip < 0:
            raise ZnodeFormatError(where, f"skip must be >= 0, got {skip}")
        if kind is FaultKind.ERROR and error_code is None:
            raise ZnodeFormatError(where, "an error fault needs an error_code")
        if delay_ms < 0:
            raise ZnodeFormatError(where, f"delay_ms must be >= 0, got {delay_ms}")
        if count is not None and count < 0:
            raise ZnodeFormatError(where, f"count must be >= 0 or null, got {count}")
        entry = FaultEntry(
            kind=kind,
            api=api,
            broker=opt_int("broker"),
            topic=cj.get_opt_str(doc, "topic", where),
            partition=opt_int("partition"),
            error_code=error_code,
            delay_ms=delay_ms,
            count=count,
            skip=skip,
        )
        problem = entry.replication_problem()
        if problem is not None:
            raise ZnodeFormatError(where, problem)
        return entry
