"""The classic group state machine driven by hand with a fake clock (kafka-behaviour.md §16)."""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.rules.groups.classic_group import GroupState, JoinResult, SyncResult
from zkbroker.broker.rules.groups.config import GroupConfig
from zkbroker.broker.rules.groups.offsets_topic_codec import (
    OffsetKey,
    decode_key,
    decode_offset_value,
)
from zkbroker.broker.rules.groups.state_machine import GroupStateMachine


def _machine(delay: int = 0) -> tuple[GroupStateMachine, list]:
    writes: list = []

    def write(group: str, records: object) -> int:
        writes.append((group, list(records)))  # type: ignore[call-overload]
        return ec.NONE

    return GroupStateMachine(GroupConfig(initial_rebalance_delay_ms=delay), (3, 9), write), writes


def _join(
    m: GroupStateMachine,
    member: str,
    now: int,
    out: list,
    *,
    instance: str | None = None,
    known: bool = True,
    session: int = 10000,
) -> None:
    m.join(
        "g",
        member,
        instance,
        require_known_member_id=known,
        support_skip_assignment=True,
        client_id="c",
        client_host="/h",
        rebalance_timeout_ms=30000,
        session_timeout_ms=session,
        protocol_type="consumer",
        protocols=[("range", b"r")],
        reason=None,
        now=now,
        callback=out.append,
    )


def test_member_id_required_then_join_sync_stable() -> None:
    m, writes = _machine()
    first: list[JoinResult] = []
    _join(m, "", 0, first)
    assert first[0].error == ec.MEMBER_ID_REQUIRED and first[0].member_id.startswith("c-")
    joined: list[JoinResult] = []
    _join(m, first[0].member_id, 1, joined)
    m.tick("g", 1)  # the initial delay (0) passes
    (result,) = joined
    assert (result.error, result.generation_id, result.protocol_name) == (ec.NONE, 1, "range")
    assert result.leader_id == result.member_id and len(result.members) == 1
    synced: list[SyncResult] = []
    m.sync("g", 1, result.member_id, None, None, None, {result.member_id: b"A"}, 2, synced.append)
    assert synced[0].error == ec.NONE and synced[0].assignment == b"A"
    assert m.groups["g"].state is GroupState.STABLE
    assert writes and writes[-1][0] == "g"
    assert m.heartbeat("g", result.member_id, None, 1, 3) == ec.NONE
    assert m.heartbeat("g", result.member_id, None, 7, 3) == ec.ILLEGAL_GENERATION
    assert m.heartbeat("g", "nobody", None, 1, 3) == ec.UNKNOWN_MEMBER_ID


def test_session_expiry_removes_member_and_group_empties() -> None:
    m, _ = _machine()
    joined: list[JoinResult] = []
    _join(m, "", 0, joined, known=False)
    m.tick("g", 0)
    member = joined[0].member_id
    m.sync("g", 1, member, None, None, None, {}, 0, lambda r: None)
    m.tick("g", 10001)  # no heartbeat within the 10 s session
    group = m.groups["g"]
    assert not group.members
    m.tick("g", 10001 + 30000)
    assert group.state is GroupState.EMPTY and group.generation_id == 2


def test_invalid_session_timeout_and_static_fencing() -> None:
    m, _ = _machine()
    bad: list[JoinResult] = []
    _join(m, "", 0, bad, session=1)
    assert bad[0].error == ec.INVALID_SESSION_TIMEOUT
    out: list[JoinResult] = []
    _join(m, "", 0, out, instance="i1")
    m.tick("g", 0)
    member = out[0].member_id
    m.sync("g", 1, member, None, None, None, {member: b"x"}, 0, lambda r: None)
    # The same instance rejoins with a fresh id: the old id is fenced, no rebalance.
    again: list[JoinResult] = []
    _join(m, "", 5, again, instance="i1")
    assert again[0].error == ec.NONE and again[0].generation_id == 1
    assert m.heartbeat("g", member, "i1", 1, 6) == ec.FENCED_INSTANCE_ID


def test_commit_fetch_and_offset_delete() -> None:
    m, writes = _machine()
    from zkbroker.broker.rules.groups.classic_group import CommittedOffset

    codes = m.commit_offsets("g", "", None, -1, {("t", 0): CommittedOffset(5, -1, "", 100)}, 100)
    assert codes == {("t", 0): ec.NONE}
    key, value = writes[-1][1][0]
    assert decode_key(key) == OffsetKey("g", "t", 0)
    assert value is not None and decode_offset_value(value).offset == 5
    assert m.commit_offsets("x", "m", None, 3, {("t", 0): CommittedOffset(1, -1, "", 0)}, 0) == {
        ("t", 0): ec.ILLEGAL_GENERATION
    }
    assert m.delete_offsets("g", [("t", 0)], 200) == (ec.NONE, {("t", 0): ec.NONE})
    assert "g" not in m.groups
    assert m.delete_groups(["g"], 300) == {"g": ec.GROUP_ID_NOT_FOUND}


def test_membership_and_offsets_share_groups_config_and_txn_writer() -> None:
    """The state machine is both sides (``membership``, ``offsets``): a group one side made is
    the one the other decides on, and a config set on it or a transactional writer given to it
    is what both use."""
    from zkbroker.broker.rules.groups.classic_group import CommittedOffset

    txn_writes: list = []

    def write_txn(group: str, _records: object, pid: int, _epoch: int) -> int:
        txn_writes.append((group, pid))
        return ec.NONE

    m = GroupStateMachine(GroupConfig(), (3, 9), lambda _group, _records: ec.NONE, write_txn)
    assert m.write_txn is write_txn
    reloaded = GroupConfig(max_size=7, offsets_retention_ms=1)
    m.config = reloaded
    assert m.config is reloaded
    out: list = []
    _join(m, "", 0, out, known=False)
    assert m.group("g") is m.groups["g"]
    offset = {("t", 0): CommittedOffset(5, -1, "", 0)}
    # The offsets side decides on the group the join made (rebalancing: not a member's commit).
    assert m.commit_offsets("g", "", None, -1, offset, 0) == {("t", 0): ec.UNKNOWN_MEMBER_ID}
    # It expires by the reloaded retention, and appends a transaction's offsets with the writer.
    assert m.commit_offsets("e", "", None, -1, offset, 0) == {("t", 0): ec.NONE}
    assert m.expire_offsets(10) == 1
    assert m.commit_txn_offsets("e", 7, 0, "", None, -1, offset, 10) == {("t", 0): ec.NONE}
    assert txn_writes == [("e", 7)]
