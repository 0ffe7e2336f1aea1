"""Group coordinator rules that arrived with a release, on both sides of each boundary.

Each expectation comes from Kafka's ``GroupCoordinator.scala`` / ``GroupMetadataManager.scala``
at the tags around the change (docs/kafka-behaviour.md §16, "Rules by release"); a release line
stands for its last patch release (2.8 is 2.8.2, so it has 2.8.1's KAFKA-12890).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tests.unit.test_group_rebalance import Harness
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.rules.groups.classic_group import CommittedOffset, GroupState
from zkbroker.broker.rules.groups.config import CoordinatorRecord, GroupConfig
from zkbroker.broker.rules.groups.state_machine import GroupStateMachine
from zkbroker.zk_layout.release import Release

RETENTION = 60_000


class At(Harness):
    """The rebalance test harness at another release."""

    def __init__(self, release: Release, **config: int) -> None:
        super().__init__(**config)
        config.setdefault("initial_rebalance_delay_ms", 0)
        self.m = GroupStateMachine(GroupConfig(**config), release, self._write)

    def _write(self, group: str, records: Sequence[CoordinatorRecord]) -> int:
        self.writes.append((group, list(records)))
        return ec.NONE


def _completing(h: At) -> tuple[str, str]:
    """Two members joined (generation 1, CompletingRebalance); (leader, follower)."""
    a = h.join("", 0, client="a")
    b = h.join("", 0, client="b")
    h.m.tick("g", 0)
    assert h.group.state is GroupState.COMPLETING_REBALANCE
    leader = a[0].leader_id
    follower = b[0].member_id if b[0].member_id != leader else a[0].member_id
    return leader, follower


@pytest.mark.parametrize(
    ("release", "deadline"), [((2, 4), False), ((2, 7), False), ((2, 8), True)]
)
def test_pending_sync_deadline_from_2_8_1(release: Release, deadline: bool) -> None:
    h = At(release)
    leader, follower = _completing(h)
    # KAFKA-12890: every member owes a SyncGroup within the rebalance timeout (30 s here).
    assert (h.group.sync_deadline == 30_000) is deadline
    assert h.group.pending_sync == ({leader, follower} if deadline else set())
    synced = h.sync(leader, 1, 5_000, {leader: b"L", follower: b"F"})
    assert synced[0].error == ec.NONE and h.group.state is GroupState.STABLE
    if deadline:
        # The follower has not synced yet: when the deadline passes it is removed.
        for member in h.group.members.values():
            member.heartbeat_deadline = None  # sessions kept alive meanwhile
        h.m.tick("g", 30_000)
        assert follower not in h.group.members
        assert h.group.state is GroupState.PREPARING_REBALANCE
    else:
        assert h.group.sync_deadline is None


@pytest.mark.parametrize(
    ("release", "during_sync", "stale_generation"),
    [
        ((2, 2), ec.REBALANCE_IN_PROGRESS, ec.REBALANCE_IN_PROGRESS),
        ((2, 3), ec.REBALANCE_IN_PROGRESS, ec.ILLEGAL_GENERATION),
        ((2, 6), ec.REBALANCE_IN_PROGRESS, ec.ILLEGAL_GENERATION),
        ((2, 7), ec.NONE, ec.ILLEGAL_GENERATION),
        ((3, 9), ec.NONE, ec.ILLEGAL_GENERATION),
    ],
)
def test_heartbeat_while_the_assignment_is_awaited(
    release: Release, during_sync: int, stale_generation: int
) -> None:
    h = At(release)
    leader, _ = _completing(h)
    before = h.group.members[leader].heartbeat_deadline
    assert h.m.heartbeat("g", leader, None, 1, 500) == during_sync
    # KAFKA-10134 (2.7): a heartbeat in CompletingRebalance keeps the session.
    refreshed = h.group.members[leader].heartbeat_deadline != before
    assert refreshed is (during_sync == ec.NONE)
    # Before 2.3 the state answered before the generation was looked at.
    assert h.m.heartbeat("g", leader, None, 7, 500) == stale_generation
    assert h.m.heartbeat("g", "nobody", None, 1, 500) == ec.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize(
    ("release", "error"),
    [((2, 2), ec.UNKNOWN_MEMBER_ID), ((2, 3), ec.COORDINATOR_NOT_AVAILABLE)],
)
def test_dead_group_answer(release: Release, error: int) -> None:
    h = At(release)
    member = h.stable_one()
    h.group.state = GroupState.DEAD  # being unloaded or deleted meanwhile
    assert h.m.heartbeat("g", member, None, 1, 1) == error
    assert h.sync(member, 1, 1)[0].error == error
    assert h.join(member, 1)[0].error == error
    commit = h.m.commit_offsets("g", member, None, 1, {("t", 0): CommittedOffset(1, -1, "", 1)}, 1)
    assert commit == {("t", 0): error}


@pytest.mark.parametrize(("release", "scheduled"), [((2, 0), False), ((2, 1), True)])
def test_new_member_join_timeout_from_2_1_1(release: Release, scheduled: bool) -> None:
    h = At(release, initial_rebalance_delay_ms=1000)
    h.join("", 0)
    (member,) = h.group.members.values()
    # KAFKA-7610: NewMemberJoinTimeoutMs (5 min) from the join; before, no session until
    # the join phase completes.
    assert (member.heartbeat_deadline == 300_000) is scheduled
    assert (member.heartbeat_deadline is None) is not scheduled


@pytest.mark.parametrize(
    ("release", "commit_error"),
    [((2, 2), ec.REBALANCE_IN_PROGRESS), ((2, 3), ec.UNKNOWN_MEMBER_ID)],
)
def test_commit_of_an_unknown_member_while_the_assignment_is_awaited(
    release: Release, commit_error: int
) -> None:
    h = At(release)
    _completing(h)
    offsets = {("t", 0): CommittedOffset(1, -1, "", 1)}
    assert h.m.commit_offsets("g", "nobody", None, 1, offsets, 1) == {("t", 0): commit_error}


@pytest.mark.parametrize(("release", "third_joins"), [((2, 5), False), ((2, 6), True)])
def test_group_max_size_counts_rejoined_members_from_2_6_1(
    release: Release, third_joins: bool
) -> None:
    h = At(release, max_size=2)
    first, _ = h.stable_two()
    # One member rejoins (a rebalance starts), the other has not yet.
    h.join(first, 10, protocols=[("range", b"s1")])
    assert h.group.state is GroupState.PREPARING_REBALANCE
    third = h.join("", 11, client="z")
    # 2.2-2.6.0: the group holds 2 members, so a new one is refused. KAFKA-9885 counts only
    # the members that rejoined (1 < 2), so it gets in.
    refused = bool(third) and third[0].error == ec.GROUP_MAX_SIZE_REACHED
    assert refused is not third_joins


@pytest.mark.parametrize(("release", "expires"), [((2, 0), True), ((2, 1), False)])
def test_offsets_of_a_live_group_expire_before_kip_211(release: Release, expires: bool) -> None:
    h = At(release, offsets_retention_ms=RETENTION)
    member = h.stable_one()
    offsets = {("t", 0): CommittedOffset(5, -1, "", 100)}
    assert h.m.commit_offsets("g", member, None, 1, offsets, 100) == {("t", 0): ec.NONE}
    # The consumer is alive (a Stable group subscribed to nothing known) long past retention.
    h.group.members[member].heartbeat_deadline = None
    h.group.subscribed_topics = {"t"}
    h.m.expire_offsets(100 + RETENTION + 1)
    assert (("t", 0) not in h.group.offsets) is expires
