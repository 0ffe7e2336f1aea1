"""The keys and values of ``__consumer_offsets``
(``zkbroker.broker.rules.groups.offsets_topic_codec``) against Kafka's
schemas, and groups loaded back from them (docs/kafka-behaviour.md §16).

Every version of ``OffsetCommitKey``, ``GroupMetadataKey``, ``OffsetCommitValue`` and
``GroupMetadataValue`` is encoded and compared with bytes laid out independently by a small
walker over the schema files in ../shared/kafka-message-specs (Kafka 3.9's
``group-coordinator/src/main/resources/common/message``), then decoded: fields a version lacks
come back as the schema's default. Then a group built by the state machine (two members, static
and dynamic, committed offsets with metadata and leader epochs, a deleted offset) is replayed
from the records it wrote into a fresh state machine, as a new coordinator loads it.

Not here: record batches and the log (``zkbroker.broker.protocol.records``,
``zkbroker.broker.storage``).
"""

from __future__ import annotations

import dataclasses
import json
import re
import struct
from collections.abc import Sequence
from typing import Any

import pytest

from tests.shared_data import kafka_message_specs
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.consumer_protocol import encode_subscription
from zkbroker.broker.rules.groups import offsets_topic_codec as rec
from zkbroker.broker.rules.groups.classic_group import CommittedOffset, GroupState, JoinResult
from zkbroker.broker.rules.groups.config import CoordinatorRecord, GroupConfig
from zkbroker.broker.rules.groups.state_machine import GroupStateMachine

# The tests comparing with the schema files say so (tests/shared_data.py).
SPECS = kafka_message_specs()
needs_shared = pytest.mark.needs_shared


# ---- an independent writer driven by the schema files ---------------------------------------


def _spec(name: str) -> dict[str, Any]:
    text = "\n".join(
        line
        for line in (SPECS / f"{name}.json").read_text().splitlines()
        if not line.lstrip().startswith("//")
    )
    return dict(json.loads(text))


def _in(versions: str, v: int) -> bool:
    if versions == "none":
        return False
    if versions.endswith("+"):
        return v >= int(versions[:-1])
    low, _, high = versions.partition("-")
    return int(low) <= v <= int(high or low)


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", r"_\1", name).lower()


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _walk(
    fields: list[dict[str, Any]], structs: dict[str, Any], obj: object, v: int, flex: bool
) -> bytes:
    out = b""
    for f in fields:
        if not _in(f["versions"], v):
            continue
        value = getattr(obj, _snake(f["name"]))
        kind = f["type"]
        if kind == "int32":
            out += struct.pack(">i", value)
        elif kind == "int64":
            out += struct.pack(">q", value)
        elif kind == "string":
            if value is None:
                assert _in(f.get("nullableVersions", "none"), v), f["name"]
                out += _uvarint(0) if flex else struct.pack(">h", -1)
            else:
                raw = value.encode()
                out += (_uvarint(len(raw) + 1) if flex else struct.pack(">h", len(raw))) + raw
        elif kind == "bytes":
            out += (_uvarint(len(value) + 1) if flex else struct.pack(">i", len(value))) + value
        elif kind.startswith("[]"):
            inner = structs[kind[2:]]["fields"]
            out += _uvarint(len(value) + 1) if flex else struct.pack(">i", len(value))
            for item in value:
                out += _walk(inner, structs, item, v, flex)
        else:
            raise AssertionError(f"type {kind} not expected in these schemas")
    if flex:
        out += _uvarint(0)  # no tagged fields
    return out


def _expected(name: str, obj: object, v: int) -> bytes:
    spec = _spec(name)
    structs = {s["name"]: s for s in spec.get("commonStructs", [])}
    flex = _in(spec["flexibleVersions"], v)
    return struct.pack(">h", v) + _walk(spec["fields"], structs, obj, v, flex)


def _defaulted(name: str, obj: Any, v: int) -> Any:
    """``obj`` as a reader of version ``v`` sees it: absent fields take the schema default."""
    spec = _spec(name)
    structs = {s["name"]: s for s in spec.get("commonStructs", [])}

    def fix(fields: list[dict[str, Any]], item: Any) -> Any:
        changes: dict[str, Any] = {}
        for f in fields:
            attr = _snake(f["name"])
            if not _in(f["versions"], v):
                default = f["default"]
                changes[attr] = None if default == "null" else int(default)
            elif f["type"].startswith("[]"):
                inner = structs[f["type"][2:]]["fields"]
                changes[attr] = tuple(fix(inner, x) for x in getattr(item, attr))
        return dataclasses.replace(item, **changes)

    return fix(spec["fields"], obj)


def _versions(name: str) -> range:
    low, _, high = _spec(name)["validVersions"].partition("-")
    return range(int(low), int(high or low) + 1)


OFFSET_VALUE = rec.OffsetValue(
    offset=1234567890123,
    metadata="meta-é",
    commit_timestamp=1_700_000_000_000,
    leader_epoch=7,
    expire_timestamp=1_700_000_600_000,
)
GROUP_VALUE = rec.GroupValue(
    protocol_type="consumer",
    generation=5,
    protocol="range",
    leader="c-1",
    current_state_timestamp=1_700_000_000_001,
    members=(
        rec.MemberValue("c-1", "instance-1", "c", "/10.0.0.1", 30000, 10000, b"sub1", b"as1"),
        rec.MemberValue("d-2", None, "d", "/10.0.0.2", 45000, 6000, b"", b"as2" * 100),
    ),
)


@needs_shared
def test_schema_versions_are_the_ones_handled() -> None:
    assert list(_versions("OffsetCommitKey")) == [0, 1]
    assert list(_versions("GroupMetadataKey")) == [2]
    assert list(_versions("OffsetCommitValue")) == [0, 1, 2, 3, 4]
    assert list(_versions("GroupMetadataValue")) == [0, 1, 2, 3, 4]


@needs_shared
@pytest.mark.parametrize("version", [0, 1])
def test_offset_commit_key(version: int) -> None:
    key = rec.OffsetKey("group-ü", "topic.a", 17)
    encoded = rec.encode_offset_key(key, version)
    assert encoded == _expected("OffsetCommitKey", key, version)
    assert rec.decode_key(encoded) == key


@needs_shared
def test_group_metadata_key_and_unknown_keys() -> None:
    key = rec.GroupKey("group-ü")
    encoded = rec.encode_group_key(key)
    assert encoded == _expected("GroupMetadataKey", key, 2)
    assert rec.decode_key(encoded) == key
    # KIP-848's record types (key version 3 and up) are skipped, not misread.
    assert rec.decode_key(struct.pack(">h", 3) + encoded[2:]) is None
    with pytest.raises(rec.RecordFormatError):
        rec.decode_key(encoded[:-1])


@needs_shared
@pytest.mark.parametrize("version", range(5))
def test_offset_commit_value(version: int) -> None:
    encoded = rec.encode_offset_value(OFFSET_VALUE, version)
    assert encoded == _expected("OffsetCommitValue", OFFSET_VALUE, version)
    assert rec.decode_offset_value(encoded) == _defaulted(
        "OffsetCommitValue", OFFSET_VALUE, version
    )


@needs_shared
@pytest.mark.parametrize("version", range(5))
def test_group_metadata_value(version: int) -> None:
    encoded = rec.encode_group_value(GROUP_VALUE, version)
    assert encoded == _expected("GroupMetadataValue", GROUP_VALUE, version)
    assert rec.decode_group_value(encoded) == _defaulted("GroupMetadataValue", GROUP_VALUE, version)
    empty = dataclasses.replace(GROUP_VALUE, protocol=None, leader=None, members=())
    assert rec.decode_group_value(rec.encode_group_value(empty, version)) == _defaulted(
        "GroupMetadataValue", empty, version
    )


def test_unknown_value_versions_are_refused() -> None:
    with pytest.raises(rec.RecordFormatError):
        rec.decode_offset_value(struct.pack(">h", 5) + b"\0" * 30)
    with pytest.raises(rec.RecordFormatError):
        rec.decode_group_value(struct.pack(">h", -1))
    with pytest.raises(ValueError):
        rec.encode_offset_value(OFFSET_VALUE, 5)


def test_written_versions_follow_the_release() -> None:
    # Kafka's offsetCommitValue / groupMetadataValue choices by inter-broker protocol.
    assert rec.offset_value_version((3, 9), has_expiry=False) == 3
    assert rec.offset_value_version((3, 9), has_expiry=True) == 1
    assert rec.offset_value_version((2, 0), has_expiry=False) == 1
    assert [rec.group_value_version(r) for r in [(0, 10, 0), (2, 0), (2, 2), (2, 3), (3, 9)]] == [
        0,
        1,
        2,
        3,
        3,
    ]


# ---- loading a group back from what it wrote -------------------------------------------------


def _machine(log: list[CoordinatorRecord]) -> GroupStateMachine:
    def write(group: str, records: Sequence[CoordinatorRecord]) -> int:
        log.extend(records)
        return ec.NONE

    return GroupStateMachine(GroupConfig(initial_rebalance_delay_ms=0), (3, 9), write)


def _join(m: GroupStateMachine, member: str, now: int, **kw: Any) -> list[JoinResult]:
    out: list[JoinResult] = []
    m.join(
        "g",
        member,
        kw.get("instance"),
        require_known_member_id=False,
        support_skip_assignment=False,
        client_id=kw.get("client", "c"),
        client_host="/10.0.0.1",
        rebalance_timeout_ms=kw.get("rebalance", 30000),
        session_timeout_ms=kw.get("session", 10000),
        protocol_type="consumer",
        protocols=[("range", kw["subscription"])],
        reason=None,
        now=now,
        callback=out.append,
    )
    return out


SA = encode_subscription(["t"])
SB = encode_subscription(["t", "w"])


def test_group_round_trips_through_its_records() -> None:
    log: list[CoordinatorRecord] = []
    m = _machine(log)
    first = _join(m, "", 0, instance="i-a", subscription=SA, session=12000)
    m.tick("g", 0)
    (a,) = first
    m.sync("g", 1, a.member_id, None, None, "i-a", {a.member_id: b"AA"}, 0, lambda r: None)
    b = _join(m, "", 1, client="d", subscription=SB, rebalance=40000)
    _join(m, a.member_id, 1, instance="i-a", subscription=SA, session=12000)
    m1, m2 = a.member_id, b[0].member_id
    m.sync("g", 2, m2, None, None, None, {}, 2, lambda r: None)
    m.sync("g", 2, m1, None, None, "i-a", {m1: b"A1", m2: b"A2"}, 2, lambda r: None)
    committed = {
        ("t", 0): CommittedOffset(10, 3, "first", 5),
        ("t", 1): CommittedOffset(20, -1, "", 5),
        ("u", 0): CommittedOffset(30, 9, "x" * 100, 5, expire_timestamp=99_999),
    }
    assert set(m.commit_offsets("g", m2, None, 2, committed, 5).values()) == {ec.NONE}
    assert m.commit_offsets("g", m1, "i-a", 2, {("t", 0): CommittedOffset(11, 4, "2nd", 6)}, 6)
    # A Stable consumer group's offsets expire only for topics nobody subscribes to: ("u", 0),
    # by its explicit expire time.
    assert m.groups["g"].subscribed_topics == {"t", "w"}
    assert m.expire_offsets(100_000) == 1
    original = m.groups["g"]
    assert set(original.offsets) == {("t", 0), ("t", 1)}

    # A new coordinator reads the log in order.
    loaded = _machine([])
    for key, value in log:
        loaded.replay(key, value, 200_000)
    loaded.loaded(["g"], 200_000)
    group = loaded.groups["g"]
    assert group.state is GroupState.STABLE
    assert (group.generation_id, group.protocol_type, group.protocol_name) == (
        2,
        "consumer",
        "range",
    )
    assert group.leader_id == m1 and group.static_members == {"i-a": m1}
    assert group.subscribed_topics == {"t", "w"}
    assert list(group.members) == [m1, m2]
    got = {
        mid: (
            mem.group_instance_id,
            mem.client_id,
            mem.client_host,
            mem.rebalance_timeout_ms,
            mem.session_timeout_ms,
            mem.metadata("range"),
            mem.assignment,
            mem.heartbeat_deadline,
        )
        for mid, mem in group.members.items()
    }
    assert got == {
        m1: ("i-a", "c", "/10.0.0.1", 30000, 12000, SA, b"A1", 212_000),
        m2: (None, "d", "/10.0.0.1", 40000, 10000, SB, b"A2", 210_000),
    }
    assert group.offsets == {
        ("t", 0): CommittedOffset(11, 4, "2nd", 6),
        ("t", 1): CommittedOffset(20, -1, "", 5),
    }
    # The loaded group carries on: a member heartbeats, the old generation is refused.
    assert loaded.heartbeat("g", m2, None, 2, 200_001) == ec.NONE
    assert loaded.heartbeat("g", m2, None, 1, 200_001) == ec.ILLEGAL_GENERATION
    assert loaded.fetch_offsets("g", [("t", 0), ("v", 0)]) == {
        ("t", 0): CommittedOffset(11, 4, "2nd", 6),
        ("v", 0): None,
    }


def test_deleted_group_stays_deleted_after_replay() -> None:
    log: list[CoordinatorRecord] = []
    m = _machine(log)
    offsets = {("t", 0): CommittedOffset(1, -1, "m", 1)}
    assert m.commit_offsets("simple", "", None, -1, offsets, 1) == {("t", 0): ec.NONE}
    assert m.delete_groups(["simple"], 2) == {"simple": ec.NONE}
    loaded = _machine([])
    for key, value in log:
        loaded.replay(key, value, 3)
    assert "simple" not in loaded.groups
    # An unreadable record is skipped, not fatal.
    loaded.replay(rec.encode_group_key(rec.GroupKey("bad")), b"\x00\x03\x00", 3)
    assert "bad" not in loaded.groups
