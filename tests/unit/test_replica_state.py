"""The leader's view of its replicas (zkbroker.broker.replication.replica_state) against Kafka
3.9's `Replica.updateFetchStateOrThrow` / `resetReplicaState` and `Partition`'s high watermark,
ISR shrink and expansion rules, with examples and properties over generated fetch histories."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.replication.replica_state import (
    UNKNOWN_OFFSET,
    FollowerState,
    IsrChangeInFlight,
    LeaderReplicas,
    NotAssignedReplica,
    PendingIsrChange,
)

LAG_MS = 30_000
T0 = 1_000_000


def leader(isr: tuple[int, ...] = (0, 1, 2)) -> LeaderReplicas:
    """Broker 0 leading replicas 0, 1, 2 since T0."""
    return LeaderReplicas(0, (0, 1, 2), isr, T0)


# ---- FollowerState ---------------------------------------------------------------------------


def test_caught_up_at_this_fetch_when_it_reads_to_the_leaders_end() -> None:
    state = FollowerState(1).update(10, 0, 10, T0)
    assert state.last_caught_up_ms == T0
    assert (state.log_end_offset, state.log_start_offset) == (10, 0)
    assert (state.last_fetch_leader_log_end_offset, state.last_fetch_ms) == (10, T0)


def test_caught_up_at_the_previous_fetch_when_it_reads_to_the_end_the_leader_had_then() -> None:
    first = FollowerState(1).update(5, 0, 10, T0)  # behind: the leader is at 10
    assert first.last_caught_up_ms == 0
    # The leader moved on to 12, but the follower now has everything it had at T0.
    second = first.update(10, 0, 12, T0 + 100)
    assert second.last_caught_up_ms == T0
    # Still short of the end the leader had at the previous fetch: no progress.
    third = second.update(11, 0, 20, T0 + 200)
    assert third.last_caught_up_ms == T0
    assert third.last_fetch_leader_log_end_offset == 20


def test_caught_up_time_never_goes_back() -> None:
    state = FollowerState(1).update(10, 0, 10, T0 + 500)
    # A fetch stamped earlier (a clock step) cannot move it back.
    assert state.update(10, 0, 10, T0).last_caught_up_ms == T0 + 500


def test_a_new_leader_forgets_offsets_and_counts_the_isr_as_caught_up_now() -> None:
    replicas = LeaderReplicas(0, (0, 1, 2), (0, 1), T0)
    in_isr, out = replicas.follower(1), replicas.follower(2)
    assert in_isr == FollowerState(1, last_caught_up_ms=T0, last_fetch_leader_log_end_offset=-1)
    assert out == FollowerState(2, last_caught_up_ms=0, last_fetch_leader_log_end_offset=-1)
    assert in_isr.log_end_offset == out.log_end_offset == UNKNOWN_OFFSET
    # Nobody is out of sync before they could fetch, however far behind the leader is.
    assert replicas.out_of_sync(T0 + LAG_MS, LAG_MS, 1000) == []
    assert replicas.out_of_sync(T0 + LAG_MS + 1, LAG_MS, 1000) == [1]


def test_a_reelected_leader_keeps_offsets_and_restarts_the_clocks() -> None:
    replicas = leader(isr=(0, 1))
    replicas.update_follower(1, 7, 2, 9, T0 + 10)
    replicas.update_follower(2, 4, 1, 9, T0 + 10)
    replicas.assignment_changed((0, 1, 2), (0, 1), T0 + 50, leader_epoch_start_offset=9)
    one, two = replicas.follower(1), replicas.follower(2)
    assert (one.log_end_offset, one.log_start_offset) == (7, 2)
    assert (one.last_caught_up_ms, one.last_fetch_ms, one.last_fetch_leader_log_end_offset) == (
        T0 + 50,
        T0 + 50,
        9,
    )
    assert (two.log_end_offset, two.last_caught_up_ms, two.last_fetch_ms) == (4, 0, 0)


# ---- assignment and fetches ------------------------------------------------------------------


def test_assignment_change_keeps_staying_states_adds_new_and_drops_removed() -> None:
    replicas = leader()
    kept = replicas.update_follower(1, 5, 0, 5, T0 + 1)
    replicas.update_follower(2, 5, 0, 5, T0 + 1)
    replicas.propose_shrink([2])
    replicas.assignment_changed((0, 1, 3), (0, 1), T0 + 2)
    assert replicas.replicas == (0, 1, 3)
    assert set(replicas.followers) == {1, 3}
    assert replicas.follower(1) == kept
    assert replicas.follower(3) == FollowerState(3)
    assert replicas.isr == frozenset({0, 1}) and replicas.pending is None
    with pytest.raises(NotAssignedReplica):
        replicas.update_follower(2, 5, 0, 5, T0 + 3)


def test_only_assigned_followers_are_recorded() -> None:
    replicas = leader()
    with pytest.raises(NotAssignedReplica):
        replicas.update_follower(9, 0, 0, 0, T0)
    with pytest.raises(NotAssignedReplica):
        replicas.update_follower(0, 0, 0, 0, T0)  # the leader is no follower of itself
    with pytest.raises(ValueError, match="leader 0"):
        LeaderReplicas(0, (1, 2), (1, 2), T0)


# ---- high watermark --------------------------------------------------------------------------


def test_high_watermark_holds_until_every_isr_member_fetched() -> None:
    replicas = leader()
    assert replicas.high_watermark(10) == 0
    replicas.update_follower(1, 10, 0, 10, T0)
    assert replicas.high_watermark(10) == 0  # 2 has not fetched from this leader yet
    replicas.update_follower(2, 6, 0, 10, T0)
    assert replicas.high_watermark(10) == 6
    replicas.update_follower(2, 10, 0, 12, T0)
    assert replicas.high_watermark(12) == 10


def test_high_watermark_counts_a_pending_expansion_but_not_a_pending_shrink() -> None:
    replicas = leader(isr=(0, 1))
    replicas.update_follower(1, 10, 0, 10, T0)
    replicas.update_follower(2, 8, 0, 10, T0)
    assert replicas.high_watermark(10) == 10
    replicas.propose_expand(2)
    assert replicas.maximal_isr == frozenset({0, 1, 2}) and replicas.isr == frozenset({0, 1})
    assert replicas.high_watermark(10) == 8
    replicas.abort()
    replicas.propose_shrink([1])
    replicas.update_follower(1, 9, 0, 10, T0)
    assert replicas.maximal_isr == frozenset({0, 1})
    assert replicas.high_watermark(10) == 9  # 1 still counts until the shrink is written
    assert replicas.commit([0])
    assert replicas.high_watermark(10) == 10


def test_high_watermark_waits_for_a_caught_up_live_follower_about_to_join() -> None:
    replicas = leader(isr=(0,))
    replicas.update_follower(1, 10, 0, 10, T0)  # caught up at T0, then the leader appends
    replicas.update_follower(2, 3, 0, 10, T0)  # never caught up
    assert replicas.high_watermark(12) == 12
    assert replicas.high_watermark(12, now_ms=T0 + 5, lag_max_ms=LAG_MS) == 10
    assert replicas.high_watermark(12, now_ms=T0 + 5, lag_max_ms=LAG_MS, alive={0, 2}) == 12
    assert replicas.high_watermark(12, now_ms=T0 + LAG_MS + 1, lag_max_ms=LAG_MS) == 12


def test_high_watermark_holds_under_min_insync_replicas() -> None:
    replicas = leader(isr=(0, 1))
    replicas.update_follower(1, 10, 0, 10, T0)
    assert replicas.high_watermark(10, min_insync_replicas=2) == 10
    assert replicas.high_watermark(10, min_insync_replicas=3) == 0
    assert not replicas.under_min_isr(2) and replicas.under_min_isr(3)
    # min.insync.replicas above the replication factor is capped by it.
    assert LeaderReplicas(0, (0,), (0,), T0).high_watermark(4, min_insync_replicas=3) == 4


def test_enough_replicas_reach_offset() -> None:
    replicas = leader(isr=(0, 1))
    assert replicas.check_enough_replicas(11, 10, 2) is None
    assert replicas.check_enough_replicas(10, 10, 2) == error_codes.NONE
    assert replicas.check_enough_replicas(10, 12, 3) == error_codes.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    replicas.propose_expand(2)  # the maximal ISR counts
    assert replicas.check_enough_replicas(10, 12, 3) == error_codes.NONE
    assert LeaderReplicas(0, (0, 1), (0, 1), T0).check_enough_replicas(1, 1, 3) == error_codes.NONE


# ---- ISR changes -----------------------------------------------------------------------------


def test_can_join_needs_the_high_watermark_and_the_epoch_start() -> None:
    replicas = leader(isr=(0, 1))
    replicas.update_follower(2, 8, 0, 10, T0)
    assert replicas.can_join(2, 8, 5)
    assert not replicas.can_join(2, 9, 5)  # below the high watermark
    assert not replicas.can_join(2, 8, 9)  # not yet in this leader epoch
    assert not replicas.can_join(2, 8, 5, alive={0, 1})
    assert not replicas.can_join(1, 0, 0)  # already in the ISR
    assert not replicas.can_join(7, 0, 0)  # not assigned
    assert not LeaderReplicas(0, (0, 1, 2), (0,), T0).can_join(2, 0, 0)  # LEO unknown
    replicas.propose_shrink([1])
    assert not replicas.can_join(2, 8, 5)  # a change is in flight


def test_proposals_are_validated() -> None:
    replicas = leader(isr=(0, 1))
    with pytest.raises(ValueError, match="already in the ISR"):
        replicas.propose_expand(1)
    with pytest.raises(NotAssignedReplica):
        replicas.propose_expand(5)
    for bad in ([], [0], [2], [1, 2]):
        with pytest.raises(ValueError, match="cannot remove"):
            replicas.propose_shrink(bad)
    assert replicas.pending is None


def test_a_stale_answer_changes_nothing() -> None:
    replicas = leader(isr=(0, 1))
    old = replicas.propose_expand(2)
    replicas.assignment_changed((0, 1, 2), (0,), T0 + 1)  # the controller moved on meanwhile
    new = replicas.propose_expand(1)
    assert not replicas.commit([0, 1, 2], proposal=old)
    assert not replicas.abort(proposal=old)
    assert replicas.pending is new
    assert replicas.commit([0, 1], proposal=new) and replicas.isr == frozenset({0, 1})
    assert not replicas.commit([0]) and not replicas.abort()  # nothing pending


def test_the_committed_isr_is_what_the_controller_answered() -> None:
    replicas = leader(isr=(0, 1))
    change = replicas.propose_expand(2)
    assert change.isr == frozenset({0, 1, 2}) and change.is_expand
    assert replicas.commit([0, 2])  # the controller's ISR, whatever was proposed
    assert replicas.isr == replicas.maximal_isr == frozenset({0, 2})


# ---- properties ------------------------------------------------------------------------------

FOLLOWERS = (1, 2, 3, 4)
# (follower, fetch offset, leader log end offset at the fetch, time step)
fetches = st.lists(
    st.tuples(
        st.sampled_from(FOLLOWERS),
        st.integers(0, 50),
        st.integers(0, 50),
        st.integers(-5, 60_000),
    ),
    max_size=25,
)


def _fetch_all(replicas: LeaderReplicas, history: list[tuple[int, int, int, int]]) -> int:
    now = T0
    for follower, offset, leader_end, step in history:
        now += step
        replicas.update_follower(follower, offset, 0, leader_end, now)
    return now


@settings(max_examples=200, deadline=None)
@given(
    st.sets(st.sampled_from(FOLLOWERS)),
    fetches,
    st.integers(0, 60),
    st.none() | st.sampled_from(FOLLOWERS),
)
def test_high_watermark_never_passes_a_maximal_isr_member_or_the_leader(
    isr_followers: set[int],
    history: list[tuple[int, int, int, int]],
    leader_end: int,
    expanding: int | None,
) -> None:
    replicas = LeaderReplicas(0, (0, *FOLLOWERS), {0, *isr_followers}, T0)
    _fetch_all(replicas, history)
    if expanding is not None and expanding not in replicas.isr:
        replicas.propose_expand(expanding)
    hw = replicas.high_watermark(leader_end)
    ends = [replicas.follower(f).log_end_offset for f in replicas.maximal_isr - {0}]
    assert 0 <= hw <= leader_end
    assert all(hw <= end for end in ends if end != UNKNOWN_OFFSET)
    if UNKNOWN_OFFSET in ends:
        assert hw == 0  # held: a member that has not fetched may have nothing
    else:
        assert hw == min([leader_end, *ends])


@settings(max_examples=200, deadline=None)
@given(fetches, st.booleans())
def test_last_caught_up_time_is_monotone(
    history: list[tuple[int, int, int, int]], in_isr: bool
) -> None:
    state = FollowerState(1).reset(T0, 0, new_leader=True, in_sync=in_isr)
    now = T0
    for _, offset, leader_end, step in history:
        now += step
        before, previous_fetch = state.last_caught_up_ms, state.last_fetch_ms
        state = state.update(offset, 0, leader_end, now)
        assert state.last_caught_up_ms >= before
        # Only a fetch's own time or the previous fetch's can become the caught-up time.
        assert state.last_caught_up_ms in {before, now, previous_fetch}
        if offset >= leader_end:
            assert state.last_caught_up_ms >= now


@settings(max_examples=200, deadline=None)
@given(
    st.sets(st.sampled_from(FOLLOWERS)),
    fetches,
    st.integers(0, 50),
    st.integers(0, 100_000),
    st.integers(0, 40_000),
)
def test_out_of_sync_is_kafkas_rule(
    isr_followers: set[int],
    history: list[tuple[int, int, int, int]],
    leader_end: int,
    later: int,
    lag_max: int,
) -> None:
    replicas = LeaderReplicas(0, (0, *FOLLOWERS), {0, *isr_followers}, T0)
    now = _fetch_all(replicas, history) + later
    expected = sorted(
        f
        for f in isr_followers
        if replicas.follower(f).log_end_offset != leader_end
        and now - replicas.follower(f).last_caught_up_ms > lag_max
    )
    assert replicas.out_of_sync(now, lag_max, leader_end) == expected


isr_ops = st.lists(
    st.one_of(
        st.tuples(st.just("expand"), st.sampled_from(FOLLOWERS)),
        st.tuples(st.just("shrink"), st.sets(st.sampled_from(FOLLOWERS), min_size=1)),
        st.tuples(st.just("commit"), st.sets(st.sampled_from(FOLLOWERS))),
        st.tuples(st.just("abort"), st.none()),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(st.sets(st.sampled_from(FOLLOWERS)), isr_ops)
def test_one_isr_change_at_a_time_and_abort_restores(
    isr_followers: set[int], ops: list[tuple[str, object]]
) -> None:
    replicas = LeaderReplicas(0, (0, *FOLLOWERS), {0, *isr_followers}, T0)
    for op, arg in ops:
        committed, pending = replicas.isr, replicas.pending
        if op in ("expand", "shrink") and pending is not None:
            with pytest.raises(IsrChangeInFlight):
                _propose(replicas, op, arg)
            assert replicas.pending is pending and replicas.isr == committed
        elif op == "expand" and isinstance(arg, int) and arg not in committed:
            change = _propose(replicas, op, arg)
            assert replicas.pending is change and change.isr == committed | {arg}
            assert replicas.maximal_isr == committed | {arg} and replicas.isr == committed
        elif op == "shrink" and isinstance(arg, set) and arg <= committed:
            change = _propose(replicas, op, arg)
            assert replicas.pending is change and change.isr == committed - arg
            assert replicas.maximal_isr == committed == replicas.isr
        elif op == "abort":
            assert replicas.abort() == (pending is not None)
            assert replicas.pending is None
            assert replicas.isr == replicas.maximal_isr == committed
        elif op == "commit" and isinstance(arg, set):
            new = frozenset({0, *arg})
            assert replicas.commit(new) == (pending is not None)
            assert replicas.pending is None
            assert replicas.isr == (new if pending is not None else committed)


def _propose(replicas: LeaderReplicas, op: str, arg: object) -> PendingIsrChange:
    if op == "expand":
        assert isinstance(arg, int)
        return replicas.propose_expand(arg)
    assert isinstance(arg, set)
    return replicas.propose_shrink(arg)
