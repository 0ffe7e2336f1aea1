"""The records a group coordinator writes to `__consumer_offsets`, encoded and decoded.

Keys and values (`OffsetCommitKey`/`Value`, `GroupMetadataKey`/`Value`, every version, v4 the
flexible one) follow Kafka 3.9's JSON schemas (docs/kafka-behaviour.md §16, "Where a group
lives"); the version written follows `GroupMetadataManager.offsetCommitValue` and
`groupMetadataValue` for the release's inter-broker protocol (3.9: OffsetCommitValue v3, or v1
with an explicit expiry; GroupMetadataValue v3). Written by hand because
`scripts/generate_messages.py` only handles request/response pairs.

Not here: the KIP-848 coordinator's records (key versions 3+, skipped when read), record
batches (`zkbroker.broker.protocol.records`) and any group logic.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from zkbroker.zk_layout.release import Release, release_at_least

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class RecordFormatError(ValueError):
    """A key or value of ``__consumer_offsets`` that cannot be read."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = -1
    expire_timestamp: int = -1  # only v1 carries it


@dataclass(frozen=True, slots=True)
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberValue, ...] = field(default_factory=tuple)


# ---- writing ---------------------------------------------------------------------------------


class _Writer:
    """The version prefix, then fields; ``flexible`` (value v4) uses compact lengths and
    writes an empty tagged-field section where the reader expects one."""

    def __init__(self, version: int, flexible: bool = False) -> None:
        self.parts: list[bytes] = [_I16.pack(version)]
        self.flexible = flexible

    def i32(self, v: int) -> None:
        self.parts.append(_I32.pack(v))

    def i64(self, v: int) -> None:
        self.parts.append(_I64.pack(v))

    def uvarint(self, v: int) -> None:
        out = bytearray()
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        self.parts.append(bytes(out))

    def string(self, v: str | None) -> None:
        raw = None if v is None else v.encode("utf-8")
        if self.flexible:
            self.uvarint(0 if raw is None else len(raw) + 1)
        else:
            self.parts.append(_I16.pack(-1 if raw is None else len(raw)))
        if raw is not None:
            self.parts.append(raw)

    def blob(self, v: bytes) -> None:
        if self.flexible:
            self.uvarint(len(v) + 1)
        else:
            self.i32(len(v))
        self.parts.append(v)

    def count(self, n: int) -> None:
        if self.flexible:
            self.uvarint(n + 1)
        else:
            self.i32(n)

    def tags(self) -> None:
        if self.flexible:
            self.uvarint(0)

    def done(self) -> bytes:
        return b"".join(self.parts)


def encode_offset_key(key: OffsetKey, version: int = OFFSET_COMMIT_KEY_VERSION) -> bytes:
    """Key v1 by default (what Kafka writes); v0 has the same fields."""
    if version not in (0, 1):
        raise ValueError(f"OffsetCommitKey v{version} does not exist")
    w = _Writer(version)
    w.string(key.group)
    w.string(key.topic)
    w.i32(key.partition)
    return w.done()


def encode_group_key(key: GroupKey) -> bytes:
    w = _Writer(GROUP_METADATA_KEY_VERSION)
    w.string(key.group)
    return w.done()


def offset_value_version(release: Release, has_expiry: bool) -> int:
    """Kafka's choice: v1 below IBP 2.1 or with an explicit expiry, else v3 (v2 existed only
    for 2.1-IV0, which no release line ends at)."""
    return 1 if has_expiry or not release_at_least(release, (2, 1)) else 3


def group_value_version(release: Release) -> int:
    """v0 before 0.10.1 (no rebalance timeout), v1 before 2.1, v2 before 2.3, else v3."""
    for version, since in ((0, (0, 10, 1)), (1, (2, 1)), (2, (2, 3))):
        if not release_at_least(release, since):
            return version
    return 3


def encode_offset_value(value: OffsetValue, version: int) -> bytes:
    """Any version 0-4 (the coordinator writes 1 or 3; 4 is what KIP-848's coordinator
    writes, kept so records of either can be produced for tests and tools)."""
    if not 0 <= version <= 4:
        raise ValueError(f"OffsetCommitValue v{version} does not exist")
    w = _Writer(version, flexible=version >= 4)
    w.i64(value.offset)
    if version >= 3:
        w.i32(value.leader_epoch)
    w.string(value.metadata)
    w.i64(value.commit_timestamp)
    if version == 1:
        w.i64(value.expire_timestamp)
    w.tags()
    return w.done()


def encode_group_value(value: GroupValue, version: int) -> bytes:
    """Any version 0-4 (see `group_value_version` for the one written)."""
    if not 0 <= version <= 4:
        raise ValueError(f"GroupMetadataValue v{version} does not exist")
    w = _Writer(version, flexible=version >= 4)
    w.string(value.protocol_type)
    w.i32(value.generation)
    w.string(value.protocol)
    w.string(value.leader)
    if version >= 2:
        w.i64(value.current_state_timestamp)
    w.count(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        if version >= 3:
            w.string(m.group_instance_id)
        w.string(m.client_id)
        w.string(m.client_host)
        if version >= 1:
            w.i32(m.rebalance_timeout)
        w.i32(m.session_timeout)
        w.blob(m.subscription)
        w.blob(m.assignment)
        w.tags()
    w.tags()
    return w.done()


# ---- reading ---------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, flexible: bool = False) -> None:
        self.data = data
        self.pos = 0
        self.flexible = flexible

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise RecordFormatError("record shorter than its fields")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def i16(self) -> int:
        return int(_I16.unpack(self._take(2))[0])

    def i32(self) -> int:
        return int(_I32.unpack(self._take(4))[0])

    def i64(self) -> int:
        return int(_I64.unpack(self._take(8))[0])

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self._take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise RecordFormatError("varint too long")

    def string(self) -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.i16()
        if n < 0:
            return None
        try:
            return self._take(n).decode("utf-8")
        except UnicodeDecodeError as e:
            raise RecordFormatError(str(e)) from e

    def text(self) -> str:
        got = self.string()
        if got is None:
            raise RecordFormatError("null where a string is required")
        return got

    def blob(self) -> bytes:
        n = self.uvarint() - 1 if self.flexible else self.i32()
        return self._take(max(n, 0))

    def count(self) -> int:
        return self.uvarint() - 1 if self.flexible else self.i32()

    def tags(self) -> None:
        if self.flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self._take(self.uvarint())


def decode_key(data: bytes) -> OffsetKey | GroupKey | None:
    """The record's key; None for a key version this coordinator does not use (KIP-848's)."""
    r = _Reader(data)
    version = r.i16()
    if version in (0, 1):
        return OffsetKey(r.text(), r.text(), r.i32())
    if version == 2:
        return GroupKey(r.text())
    return None


def decode_offset_value(data: bytes) -> OffsetValue:
    r = _Reader(data)
    version = r.i16()
    if not 0 <= version <= 4:
        raise RecordFormatError(f"unknown OffsetCommitValue version {version}")
    r.flexible = version >= 4
    offset = r.i64()
    epoch = r.i32() if version >= 3 else -1
    metadata = r.text()
    commit = r.i64()
    expire = r.i64() if version == 1 else -1
    r.tags()
    return OffsetValue(offset, metadata, commit, epoch, expire)


def decode_group_value(data: bytes) -> GroupValue:
    r = _Reader(data)
    version = r.i16()
    if not 0 <= version <= 4:
        raise RecordFormatError(f"unknown GroupMetadataValue version {version}")
    r.flexible = version >= 4
    protocol_type = r.text()
    generation = r.i32()
    protocol = r.string()
    leader = r.string()
    timestamp = r.i64() if version >= 2 else -1
    members = []
    for _ in range(r.count()):
        member_id = r.text()
        instance = r.string() if version >= 3 else None
        client_id = r.text()
        client_host = r.text()
        rebalance = r.i32() if version >= 1 else -1
        session = r.i32()
        subscription = r.blob()
        assignment = r.blob()
        r.tags()
        members.append(
            MemberValue(
                member_id,
                instance,
                client_id,
                client_host,
                rebalance,
                session,
                subscription,
                assignment,
            )
        )
    r.tags()
    return GroupValue(protocol_type, generation, protocol, leader, timestamp, tuple(members))
