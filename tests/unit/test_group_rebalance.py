"""Rebalances of the classic group state machine, driven by hand with a fake clock.

Each expectation is worked out from Kafka 3.9's rules (``GroupCoordinator.scala``,
docs/kafka-behaviour.md §16), not read off the implementation: which state a request moves the
group to, who leads, which generation, which error a stale or unknown member gets. Times are
plain milliseconds; ``tick`` plays Kafka's purgatory expirations.

Not here: the records (``test_group_records``), the wire and the asyncio shell (the
integration tests).
"""

from __future__ import annotations

from collections.abc import Sequence

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.rules.groups.classic_group import (
    ClassicGroup,
    CommittedOffset,
    GroupState,
    JoinResult,
    SyncResult,
)
from zkbroker.broker.rules.groups.config import CoordinatorRecord, GroupConfig
from zkbroker.broker.rules.groups.offsets_topic_codec import (
    GroupKey,
    decode_group_value,
    decode_key,
)
from zkbroker.broker.rules.groups.state_machine import GroupStateMachine

SESSION = 10_000
REBALANCE = 30_000


class Harness:
    """A state machine for group "g" whose writes always succeed and are kept."""

    def __init__(self, **config: int) -> None:
        config.setdefault("initial_rebalance_delay_ms", 0)
        self.writes: list[tuple[str, list[CoordinatorRecord]]] = []
        self.m = GroupStateMachine(GroupConfig(**config), (3, 9), self._write)

    def _write(self, group: str, records: Sequence[CoordinatorRecord]) -> int:
        self.writes.append((group, list(records)))
        return ec.NONE

    @property
    def group(self) -> ClassicGroup:
        return self.m.groups["g"]

    def join(
        self,
        member: str,
        now: int,
        *,
        instance: str | None = None,
        known: bool = False,
        skip: bool = True,
        protocol_type: str = "consumer",
        protocols: list[tuple[str, bytes]] | None = None,
        client: str = "c",
    ) -> list[JoinResult]:
        """Send a JoinGroup; the returned list receives the answer when it comes."""
        out: list[JoinResult] = []
        self.m.join(
            "g",
            member,
            instance,
            require_known_member_id=known,
            support_skip_assignment=skip,
            client_id=client,
            client_host="/10.0.0.1",
            rebalance_timeout_ms=REBALANCE,
            session_timeout_ms=SESSION,
            protocol_type=protocol_type,
            protocols=[("range", b"sub")] if protocols is None else protocols,
            reason=None,
            now=now,
            callback=out.append,
        )
        return out

    def sync(
        self,
        member: str,
        generation: int,
        now: int,
        assignments: dict[str, bytes] | None = None,
        *,
        instance: str | None = None,
        protocol_name: str | None = None,
    ) -> list[SyncResult]:
        out: list[SyncResult] = []
        self.m.sync(
            "g",
            generation,
            member,
            None,
            protocol_name,
            instance,
            assignments or {},
            now,
            out.append,
        )
        return out

    def stable_one(self, now: int = 0, **join: object) -> str:
        """A Stable group of generation 1 with one member (the leader); its member id."""
        answer = self.join("", now, **join)  # type: ignore[arg-type]
        self.m.tick("g", now)  # the initial delay (0 here) ends the join phase
        (result,) = answer
        assert (result.error, result.generation_id) == (ec.NONE, 1)
        synced = self.sync(result.member_id, 1, now, {result.member_id: b"A1"})
        assert synced[0].error == ec.NONE
        assert self.group.state is GroupState.STABLE
        return result.member_id

    def stable_two(self, now: int = 0) -> tuple[str, str]:
        """A Stable group of generation 2 with two members, the first leading."""
        first = self.stable_one(now, protocols=[("range", b"s1")])
        second = self.join("", now, protocols=[("range", b"s2")])
        again = self.join(first, now, protocols=[("range", b"s1")])
        (j1,), (j2,) = again, second
        assert j1.generation_id == j2.generation_id == 2
        self.sync(j2.member_id, 2, now)
        self.sync(first, 2, now, {first: b"A1", j2.member_id: b"A2"})
        assert self.group.state is GroupState.STABLE
        return first, j2.member_id


def test_second_member_rebalances_and_leader_assigns_both() -> None:
    h = Harness()
    # The first member, through KIP-394's two steps (JoinGroup v4+).
    required = h.join("", 0, known=True, protocols=[("range", b"s1")])
    assert required[0].error == ec.MEMBER_ID_REQUIRED
    m1 = required[0].member_id
    assert m1.startswith("c-") and h.group.state is GroupState.EMPTY
    first = h.join(m1, 1, known=True, protocols=[("range", b"s1")])
    assert h.group.state is GroupState.PREPARING_REBALANCE and not first
    h.m.tick("g", 1)
    assert first[0].generation_id == 1 and first[0].leader_id == m1
    assert h.sync(m1, 1, 2, {m1: b"A1"})[0].assignment == b"A1"
    assert h.group.state is GroupState.STABLE

    # A second member: its id first, which changes nothing for the Stable group.
    required = h.join("", 3, known=True, client="d", protocols=[("range", b"s2")])
    assert required[0].error == ec.MEMBER_ID_REQUIRED
    m2 = required[0].member_id
    assert m2.startswith("d-") and h.group.state is GroupState.STABLE
    second = h.join(m2, 4, known=True, protocols=[("range", b"s2")])
    # Adding it moves the group to PreparingRebalance; the answer waits for m1 to rejoin.
    assert h.group.state is GroupState.PREPARING_REBALANCE and not second
    assert h.m.heartbeat("g", m1, None, 1, 5) == ec.REBALANCE_IN_PROGRESS
    assert h.sync(m1, 1, 5)[0].error == ec.REBALANCE_IN_PROGRESS
    # An offset commit of the old generation is still taken while preparing.
    commit = h.m.commit_offsets("g", m1, None, 1, {("t", 0): CommittedOffset(4, -1, "", 5)}, 5)
    assert commit == {("t", 0): ec.NONE}

    rejoined = h.join(m1, 6, known=True, protocols=[("range", b"s1")])
    # Everyone is back: generation 2, m1 still leads and alone sees both subscriptions.
    assert h.group.state is GroupState.COMPLETING_REBALANCE
    (r1,), (r2,) = rejoined, second
    assert (r1.error, r1.generation_id, r1.leader_id, r1.protocol_name) == (ec.NONE, 2, m1, "range")
    assert (r2.error, r2.generation_id, r2.leader_id, r2.member_id) == (ec.NONE, 2, m1, m2)
    assert r1.members == [(m1, None, b"s1"), (m2, None, b"s2")]
    assert r2.members == []
    # A commit between JoinGroup and SyncGroup is refused (the assignment is not out yet).
    commit = h.m.commit_offsets("g", m2, None, 2, {("t", 0): CommittedOffset(5, -1, "", 7)}, 7)
    assert commit == {("t", 0): ec.REBALANCE_IN_PROGRESS}
    assert h.m.heartbeat("g", m2, None, 2, 7) == ec.NONE

    # The follower's SyncGroup waits for the leader's; the leader's answers both.
    follower = h.sync(m2, 2, 8)
    assert not follower
    leader = h.sync(m1, 2, 9, {m1: b"A1", m2: b"A2"})
    assert (leader[0].error, leader[0].assignment) == (ec.NONE, b"A1")
    assert (follower[0].error, follower[0].assignment) == (ec.NONE, b"A2")
    assert h.group.state is GroupState.STABLE
    # The assignment was stored as the group's metadata record.
    group_id, records = h.writes[-1]
    key, value = records[-1]
    assert group_id == "g" and decode_key(key) == GroupKey("g") and value is not None
    stored = decode_group_value(value)
    assert (stored.generation, stored.leader, stored.protocol) == (2, m1, "range")
    assert [(mv.member_id, mv.subscription, mv.assignment) for mv in stored.members] == [
        (m1, b"s1", b"A1"),
        (m2, b"s2", b"A2"),
    ]
    # A late SyncGroup in Stable gets the member's assignment at once.
    assert h.sync(m2, 2, 10)[0].assignment == b"A2"


def test_unknown_member_id_on_join() -> None:
    h = Harness()
    # No group and a member id: refused, and no group is created.
    assert h.join("ghost", 0)[0].error == ec.UNKNOWN_MEMBER_ID
    assert "g" not in h.m.groups
    h.stable_one(0)
    answer = h.join("ghost", 1)
    assert (answer[0].error, answer[0].member_id) == (ec.UNKNOWN_MEMBER_ID, "ghost")
    assert h.group.state is GroupState.STABLE and h.group.generation_id == 1
    assert h.m.heartbeat("g", "ghost", None, 1, 1) == ec.UNKNOWN_MEMBER_ID
    assert h.sync("ghost", 1, 1)[0].error == ec.UNKNOWN_MEMBER_ID
    assert h.m.heartbeat("nogroup", "ghost", None, 1, 1) == ec.UNKNOWN_MEMBER_ID


def test_illegal_generation() -> None:
    h = Harness()
    m1 = h.stable_one(0)
    assert h.m.heartbeat("g", m1, None, 0, 1) == ec.ILLEGAL_GENERATION
    assert h.m.heartbeat("g", m1, None, 2, 1) == ec.ILLEGAL_GENERATION
    assert h.sync(m1, 7, 1)[0].error == ec.ILLEGAL_GENERATION
    offsets = {("t", 0): CommittedOffset(1, -1, "", 1)}
    assert h.m.commit_offsets("g", m1, None, 3, offsets, 1) == {("t", 0): ec.ILLEGAL_GENERATION}
    # No such group: only a generation < 0 may create it by committing.
    assert h.m.commit_offsets("other", "m", None, 1, offsets, 1) == {
        ("t", 0): ec.ILLEGAL_GENERATION
    }
    assert "other" not in h.m.groups
    assert h.m.heartbeat("g", m1, None, 1, 2) == ec.NONE


def test_group_max_size_reached() -> None:
    # While preparing a rebalance the cap counts members that already (re)joined.
    h = Harness(max_size=1, initial_rebalance_delay_ms=3000)
    waiting = h.join("", 0)
    assert h.group.state is GroupState.PREPARING_REBALANCE and not waiting
    refused = h.join("", 10)
    assert (refused[0].error, refused[0].member_id) == (ec.GROUP_MAX_SIZE_REACHED, "")
    assert h.group.size == 1
    h.m.tick("g", 3000)
    assert waiting[0].error == ec.NONE and waiting[0].generation_id == 1
    member = waiting[0].member_id
    # In CompletingRebalance and Stable it counts the members: a current one is let in.
    assert h.join("", 3001, known=True)[0].error == ec.GROUP_MAX_SIZE_REACHED
    h.sync(member, 1, 3002, {member: b"x"})
    assert h.join("", 3003)[0].error == ec.GROUP_MAX_SIZE_REACHED
    assert not h.group.pending_members  # refused before any member id was handed out
    # The leader's JoinGroup rebalances; it is the only member, so it completes at once.
    assert h.join(member, 3004)[0].error == ec.NONE
    assert h.group.state is GroupState.COMPLETING_REBALANCE and h.group.generation_id == 2


def test_inconsistent_group_protocol() -> None:
    h = Harness()
    # An Empty group needs a protocol type and at least one protocol.
    assert h.join("", 0, protocols=[])[0].error == ec.INCONSISTENT_GROUP_PROTOCOL
    assert h.join("", 0, protocol_type="")[0].error == ec.INCONSISTENT_GROUP_PROTOCOL
    m1 = h.stable_one(1, protocols=[("range", b"r"), ("roundrobin", b"rr")])
    assert h.group.protocol_name == "range"
    # Another protocol type, or no protocol every member supports.
    other_type = h.join("", 2, protocol_type="connect")
    assert (other_type[0].error, other_type[0].member_id) == (ec.INCONSISTENT_GROUP_PROTOCOL, "")
    no_common = h.join("", 2, protocols=[("sticky", b"s")])
    assert no_common[0].error == ec.INCONSISTENT_GROUP_PROTOCOL
    # A current member changing its protocol type.
    own = h.join(m1, 2, protocol_type="connect")
    assert (own[0].error, own[0].member_id) == (ec.INCONSISTENT_GROUP_PROTOCOL, m1)
    assert h.group.state is GroupState.STABLE and h.group.size == 1
    # A member sharing one protocol is accepted: both list roundrobin, so it wins next.
    joined = h.join("", 3, protocols=[("roundrobin", b"x")])
    assert h.group.state is GroupState.PREPARING_REBALANCE and not joined
    # SyncGroup v5 naming another protocol than the group's.
    assert h.sync(m1, 1, 3, protocol_name="sticky")[0].error == ec.INCONSISTENT_GROUP_PROTOCOL
    h.join(m1, 4, protocols=[("range", b"r"), ("roundrobin", b"rr")])
    assert h.group.state is GroupState.COMPLETING_REBALANCE
    # m1 prefers range but only roundrobin is common to both: it is chosen.
    assert h.group.protocol_name == "roundrobin" and joined[0].protocol_name == "roundrobin"


def test_static_member_rejoins_with_new_id_and_old_is_fenced() -> None:
    h = Harness()
    old = h.stable_one(0, instance="i1")
    assert h.group.static_members == {"i1": old}
    writes = len(h.writes)
    # Same instance, empty member id, unchanged protocols: a new id and no rebalance.
    again = h.join("", 100, instance="i1", skip=False)
    (result,) = again
    new = result.member_id
    assert result.error == ec.NONE and new != old
    assert h.group.state is GroupState.STABLE and h.group.generation_id == 1
    # Before JoinGroup v9 a returning leader is told the old leader id, so it does not assign.
    assert (result.generation_id, result.leader_id, result.members) == (1, old, [])
    assert h.group.static_members == {"i1": new} and h.group.leader_id == new
    assert set(h.group.members) == {new}
    assert h.group.members[new].assignment == b"A1"
    # The new id was stored (one group metadata record).
    assert len(h.writes) == writes + 1
    stored = decode_group_value(h.writes[-1][1][0][1] or b"")
    assert [(mv.member_id, mv.group_instance_id) for mv in stored.members] == [(new, "i1")]
    # The old id is fenced wherever it shows up with the instance id.
    assert h.m.heartbeat("g", old, "i1", 1, 101) == ec.FENCED_INSTANCE_ID
    assert h.sync(old, 1, 101, instance="i1")[0].error == ec.FENCED_INSTANCE_ID
    offsets = {("t", 0): CommittedOffset(1, -1, "", 101)}
    assert h.m.commit_offsets("g", old, "i1", 1, offsets, 101) == {("t", 0): ec.FENCED_INSTANCE_ID}
    assert h.join(old, 101, instance="i1")[0].error == ec.FENCED_INSTANCE_ID
    assert h.m.leave("g", [(old, "i1", None)], 101) == (ec.NONE, [ec.FENCED_INSTANCE_ID])
    # Without the instance id it is simply not a member any more.
    assert h.m.heartbeat("g", old, None, 1, 101) == ec.UNKNOWN_MEMBER_ID
    # An instance id the group does not hold is UNKNOWN_MEMBER_ID (validateCurrentMember).
    assert h.m.heartbeat("g", new, "i2", 1, 101) == ec.UNKNOWN_MEMBER_ID
    assert h.m.heartbeat("g", new, "i1", 1, 102) == ec.NONE
    # From v9 (KIP-814) the leader learns it leads, but skips the assignment.
    third = h.join("", 200, instance="i1", skip=True)[0]
    assert third.error == ec.NONE and third.skip_assignment
    assert third.leader_id == third.member_id and h.group.generation_id == 1


def test_session_expiry_of_one_of_two_members() -> None:
    h = Harness()
    m1, m2 = h.stable_two(0)
    # Both sessions started at 0 (end 10,000); only m1 heartbeats again.
    assert h.m.heartbeat("g", m1, None, 2, 5000) == ec.NONE
    assert h.m.next_deadline(h.group) == SESSION
    h.m.tick("g", SESSION - 1)
    assert h.group.size == 2
    h.m.tick("g", SESSION)
    # m2 is gone and the Stable group rebalances; m1 learns it from its heartbeat.
    assert set(h.group.members) == {m1}
    assert h.group.state is GroupState.PREPARING_REBALANCE
    assert h.m.heartbeat("g", m2, None, 2, SESSION + 1) == ec.UNKNOWN_MEMBER_ID
    assert h.m.heartbeat("g", m1, None, 2, SESSION + 1) == ec.REBALANCE_IN_PROGRESS
    rejoined = h.join(m1, SESSION + 2, protocols=[("range", b"s1")])
    (r1,) = rejoined
    assert (r1.generation_id, r1.leader_id, r1.members) == (3, m1, [(m1, None, b"s1")])
    assert h.group.state is GroupState.COMPLETING_REBALANCE


def test_leader_session_expiry_hands_leadership_over() -> None:
    h = Harness()
    m1, m2 = h.stable_two(0)
    assert h.m.heartbeat("g", m2, None, 2, 5000) == ec.NONE
    h.m.tick("g", SESSION)
    # The leader m1 is gone: the first remaining member leads.
    assert m1 not in h.group.members and h.group.leader_id == m2
    (r2,) = h.join(m2, SESSION + 1, protocols=[("range", b"s2")])
    assert (r2.generation_id, r2.leader_id) == (3, m2)


def test_nobody_rejoins_before_the_rebalance_timeout() -> None:
    h = Harness()
    m1, m2 = h.stable_two(0)
    h.m.leave("g", [(m2, None, "bye")], 1)  # a leave rebalances the group
    assert h.group.state is GroupState.PREPARING_REBALANCE
    # m1 never rejoins and its session ends: with nobody left to wait for, the join phase
    # completes at once into an Empty generation 3, which is stored.
    h.m.tick("g", SESSION)
    assert not h.group.members
    assert h.group.state is GroupState.EMPTY and h.group.generation_id == 3
    stored = decode_group_value(h.writes[-1][1][0][1] or b"")
    assert (stored.generation, stored.protocol, stored.members) == (3, None, ())
    assert h.m.heartbeat("g", m1, None, 2, SESSION) == ec.UNKNOWN_MEMBER_ID


def test_commits_by_non_members() -> None:
    h = Harness()
    m1 = h.stable_one(0)
    offsets = {("t", 0): CommittedOffset(3, -1, "", 1)}
    # A live group takes commits from its members only (generation < 0 included).
    assert h.m.commit_offsets("g", "", None, -1, offsets, 1) == {("t", 0): ec.UNKNOWN_MEMBER_ID}
    assert h.m.commit_offsets("g", "x", None, -1, offsets, 1) == {("t", 0): ec.UNKNOWN_MEMBER_ID}
    assert h.m.commit_offsets("g", m1, "i9", 1, offsets, 1) == {("t", 0): ec.UNKNOWN_MEMBER_ID}
    assert h.m.commit_offsets("g", m1, None, 1, offsets, 1) == {("t", 0): ec.NONE}
    h.m.leave("g", [(m1, None, None)], 2)
    h.m.tick("g", 2 + REBALANCE)
    assert h.group.state is GroupState.EMPTY
    # An Empty group takes a generation < 0 commit whatever member id it names (an admin
    # client, or a consumer that assigns its own partitions).
    assert h.m.commit_offsets("g", "x", None, -1, offsets, 3) == {("t", 0): ec.NONE}
    assert h.m.commit_offsets("g", "x", None, 0, offsets, 3) == {("t", 0): ec.UNKNOWN_MEMBER_ID}
