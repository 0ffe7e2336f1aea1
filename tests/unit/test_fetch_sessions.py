"""Incremental fetch sessions, KIP-227 (zkbroker.broker.rules.fetch_sessions, pure).

Every expected value is worked out by hand from the rules in the module docstring.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence

import pytest

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.fetch_sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    FetchContext,
    FetchPartitionKey,
    FetchPartitionRequest,
    FetchPartitionResult,
    FetchSessionCache,
    next_epoch,
)

INT32_MAX = 2**31 - 1

A0 = FetchPartitionKey(None, "a", 0)
A1 = FetchPartitionKey(None, "a", 1)
B0 = FetchPartitionKey(None, "b", 0)
C0 = FetchPartitionKey(None, "c", 0)


def req(offset: int = 0, max_bytes: int = 1024) -> FetchPartitionRequest:
    return FetchPartitionRequest(
        fetch_offset=offset, log_start_offset=-1, max_bytes=max_bytes, current_leader_epoch=-1,
        last_fetched_epoch=-1,
    )  # fmt: skip


def res(
    hw: int = 10,
    lso: int | None = None,
    log_start: int = 0,
    *,
    error: int = error_codes.NONE,
    replica: int = -1,
    records: bool = False,
    diverging: bool = False,
) -> FetchPartitionResult:
    return FetchPartitionResult(
        error=error,
        high_watermark=hw,
        last_stable_offset=hw if lso is None else lso,
        log_start_offset=log_start,
        preferred_read_replica=replica,
        has_records=records,
        diverging_epoch=diverging,
    )


class ScriptedRandom(random.Random):
    """Hands out the given session ids in turn and records the ranges asked for."""

    def __init__(self, ids: Sequence[int]) -> None:
        super().__init__(0)
        self.ids = list(ids)
        self.ranges: list[tuple[int, int]] = []

    def randint(self, a: int, b: int) -> int:
        self.ranges.append((a, b))
        return self.ids.pop(0)


def ctx(
    cache: FetchSessionCache,
    session_id: int,
    epoch: int,
    fetch: Sequence[tuple[FetchPartitionKey, FetchPartitionRequest]] = (),
    forgotten: Sequence[FetchPartitionKey] = (),
    *,
    version: int = 12,
    follower: bool = False,
    topic_ids: bool = False,
    now: int = 0,
) -> FetchContext:
    return cache.new_context(
        version=version,
        session_id=session_id,
        epoch=epoch,
        fetch_partitions=fetch,
        forgotten=forgotten,
        is_from_follower=follower,
        uses_topic_ids=topic_ids,
        now_ms=now,
    )


def open_session(
    cache: FetchSessionCache,
    keys: Sequence[FetchPartitionKey],
    *,
    now: int = 0,
    follower: bool = False,
    topic_ids: bool = False,
    version: int = 12,
) -> int:
    """A full fetch of `keys` (all at high watermark 10); returns the session id."""
    full = ctx(
        cache, 0, INITIAL_EPOCH, [(k, req()) for k in keys],
        now=now, follower=follower, topic_ids=topic_ids, version=version,
    )  # fmt: skip
    session_id, _ = full.response_partitions({k: res() for k in keys})
    return session_id


def incremental(
    cache: FetchSessionCache,
    session_id: int,
    epoch: int,
    results: dict[FetchPartitionKey, FetchPartitionResult],
    fetch: Sequence[tuple[FetchPartitionKey, FetchPartitionRequest]] = (),
    forgotten: Sequence[FetchPartitionKey] = (),
    now: int = 0,
) -> tuple[int, list[FetchPartitionKey]]:
    context = ctx(cache, session_id, epoch, fetch, forgotten, now=now)
    assert context.kind == "incremental"
    assert context.error == error_codes.NONE
    return context.response_partitions(results)


# ---- epochs -------------------------------------------------------------------------------


def test_next_epoch_counts_up_wraps_to_one_and_keeps_final() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(INT32_MAX) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


# ---- full fetches and session creation -----------------------------------------------------


def test_full_fetch_creates_a_session_with_epoch_one() -> None:
    rng = ScriptedRandom([123456])
    cache = FetchSessionCache(rng=rng)
    full = ctx(cache, 0, INITIAL_EPOCH, [(A0, req(5)), (A1, req(7))], now=1000)
    assert full.kind == "full"
    assert full.error == error_codes.NONE
    assert full.partitions_to_read() == [(A0, req(5)), (A1, req(7))]
    assert len(cache) == 0  # the session is made when the response is

    assert full.response_partitions({A0: res(), A1: res()}) == (123456, [A0, A1])
    assert rng.ranges == [(1, INT32_MAX - 1)]  # positive int32, never 0
    info = cache.session(123456)
    assert info is not None
    assert (info.epoch, info.privileged, info.uses_topic_ids) == (1, False, False)
    assert (info.creation_ms, info.last_used_ms) == (1000, 1000)
    assert info.partitions == (A0, A1)
    assert len(cache) == 1
    assert cache.total_partitions == 2


def test_session_ids_are_unique_in_the_cache() -> None:
    rng = ScriptedRandom([7, 7, 7, 8])
    cache = FetchSessionCache(rng=rng)
    assert open_session(cache, [A0]) == 7
    assert open_session(cache, [A0]) == 8  # 7 twice more: taken, drawn again
    assert 7 in cache and 8 in cache and len(cache) == 2


def test_default_random_ids_are_positive_int32() -> None:
    cache = FetchSessionCache()
    ids = {open_session(cache, [A0]) for _ in range(50)}
    assert len(ids) == 50
    assert all(1 <= i <= INT32_MAX for i in ids)


def test_full_fetch_with_a_session_id_closes_it_and_opens_another() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([11, 12]))
    assert open_session(cache, [A0]) == 11
    again = ctx(cache, 11, INITIAL_EPOCH, [(B0, req())])
    assert 11 not in cache
    assert again.response_partitions({B0: res()}) == (12, [B0])
    assert 12 in cache


def test_full_session_only_caches_requested_partitions_that_were_answered() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([5]))
    full = ctx(cache, 0, INITIAL_EPOCH, [(A0, req()), (A1, req())])
    # B0 was never requested: it must not grow the session; A1 got no result.
    assert full.response_partitions({A0: res(), B0: res()}) == (5, [A0])
    info = cache.session(5)
    assert info is not None and info.partitions == (A0,)


def test_repeated_partition_keeps_its_first_place_and_last_parameters() -> None:
    cache = FetchSessionCache()
    full = ctx(cache, 0, INITIAL_EPOCH, [(A0, req(1)), (A1, req(2)), (A0, req(3))])
    assert full.partitions_to_read() == [(A0, req(3)), (A1, req(2))]


def test_response_partitions_may_be_asked_once() -> None:
    cache = FetchSessionCache()
    full = ctx(cache, 0, INITIAL_EPOCH, [(A0, req())])
    full.response_partitions({A0: res()})
    with pytest.raises(RuntimeError):
        full.response_partitions({A0: res()})
    assert len(cache) == 1


# ---- sessionless fetches ------------------------------------------------------------------


def test_final_epoch_is_sessionless_and_closes_the_named_session() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([21]))
    assert open_session(cache, [A0, A1]) == 21
    final = ctx(cache, 21, FINAL_EPOCH, [(B0, req(4))])
    assert final.kind == "sessionless"
    assert 21 not in cache
    assert final.partitions_to_read() == [(B0, req(4))]
    assert final.response_partitions({B0: res()}) == (0, [B0])
    assert len(cache) == 0


def test_final_epoch_without_session_creates_nothing() -> None:
    cache = FetchSessionCache()
    final = ctx(cache, 0, FINAL_EPOCH, [(A0, req())])
    assert final.response_partitions({A0: res()}) == (0, [A0])
    assert len(cache) == 0


@pytest.mark.parametrize("version", [0, 4, 6])
def test_versions_before_7_are_always_sessionless(version: int) -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([31]))
    assert open_session(cache, [A0]) == 31
    # Whatever the (absent) session fields decode to: no session opened, closed or checked.
    for session_id, epoch in ((0, INITIAL_EPOCH), (31, 1), (99, 5)):
        old = ctx(cache, session_id, epoch, [(A0, req()), (B0, req())], version=version)
        assert (old.kind, old.error) == ("sessionless", error_codes.NONE)
        assert old.response_partitions({A0: res(), B0: res()}) == (0, [A0, B0])
    assert len(cache) == 1 and 31 in cache
    info = cache.session(31)
    assert info is not None and info.epoch == 1


def test_version_7_is_the_first_with_sessions() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([41]))
    assert open_session(cache, [A0], version=7) == 41


# ---- incremental fetches ------------------------------------------------------------------


def test_incremental_adds_updates_and_forgets_in_session_order() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([50]))
    assert open_session(cache, [A0, A1, B0], now=100) == 50
    inc = ctx(cache, 50, 1, [(A1, req(9)), (C0, req(3))], [B0], now=250)
    assert (inc.kind, inc.error) == ("incremental", error_codes.NONE)
    # A0 keeps its cached parameters, A1 is updated in place, C0 appended, B0 gone.
    assert inc.partitions_to_read() == [(A0, req(0)), (A1, req(9)), (C0, req(3))]
    info = cache.session(50)
    assert info is not None
    assert info.partitions == (A0, A1, C0)
    assert (info.epoch, info.creation_ms, info.last_used_ms) == (2, 100, 250)
    assert cache.total_partitions == 3


def test_partition_both_fetched_and_forgotten_is_forgotten() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([51]))
    open_session(cache, [A0, A1])
    inc = ctx(cache, 51, 1, [(C0, req())], [C0])
    assert inc.partitions_to_read() == [(A0, req()), (A1, req())]


def test_forgetting_unknown_partitions_is_harmless() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([52]))
    open_session(cache, [A0])
    inc = ctx(cache, 52, 1, forgotten=[B0, C0])
    assert inc.partitions_to_read() == [(A0, req())]


def test_unchanged_partitions_are_left_out_and_changed_ones_answered() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([60]))
    open_session(cache, [A0, A1, B0])  # all cached at hw 10, lso 10, log start 0
    same = {A0: res(), A1: res(), B0: res()}

    # Nothing changed: an empty incremental response, the session still open.
    assert incremental(cache, 60, 1, same) == (60, [])
    # Only A1's high watermark moved.
    assert incremental(cache, 60, 2, {**same, A1: res(11)}) == (60, [A1])
    # The same again: A1's new high watermark was remembered.
    assert incremental(cache, 60, 3, {**same, A1: res(11)}) == (60, [])
    # Last stable offset alone, then log start offset alone.
    assert incremental(cache, 60, 4, {**same, A1: res(11), B0: res(10, lso=8)}) == (60, [B0])
    assert incremental(cache, 60, 5, {A0: res(log_start=3), A1: res(11), B0: res(10, 8)}) == (
        60,
        [A0],
    )
    now = {A0: res(log_start=3), A1: res(11), B0: res(10, 8)}
    assert incremental(cache, 60, 6, now) == (60, [])
    info = cache.session(60)
    assert info is not None and info.epoch == 7


def test_records_replica_divergence_and_errors_are_always_answered() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([61]))
    open_session(cache, [A0, A1, B0, C0])
    same = {A0: res(), A1: res(), B0: res(), C0: res()}
    changed = {
        **same,
        A0: res(records=True),
        A1: res(replica=2),
        B0: res(diverging=True),
        C0: res(error=error_codes.NOT_LEADER_OR_FOLLOWER),
    }
    # A0 had records, so it moves to the end of the session's order.
    assert incremental(cache, 61, 1, changed) == (61, [A0, A1, B0, C0])
    info = cache.session(61)
    assert info is not None and info.partitions == (A1, B0, C0, A0)
    # Nothing changed but a preferred replica: still answered, as Kafka does. C0's error
    # left its cached high watermark at -1, so C0 is answered again once the error is gone.
    assert incremental(cache, 61, 2, {**same, A1: res(replica=2)}) == (61, [A1, C0])
    assert incremental(cache, 61, 3, same) == (61, [])


def test_partitions_with_records_rotate_to_the_end_in_answer_order() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([62]))
    open_session(cache, [A0, A1, B0, C0])
    results = {A0: res(records=True), A1: res(), B0: res(records=True), C0: res()}
    assert incremental(cache, 62, 1, results) == (62, [A0, B0])
    nxt = ctx(cache, 62, 2)
    assert [k for k, _ in nxt.partitions_to_read()] == [A1, C0, A0, B0]


def test_added_partition_is_answered_the_first_time() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([63]))
    open_session(cache, [A0])
    # C0 has no cached response yet (high watermark -1): answered even with hw 10.
    assert incremental(cache, 63, 1, {A0: res(), C0: res()}, fetch=[(C0, req())]) == (63, [C0])


def test_error_in_a_full_response_is_resent_when_it_clears() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([64]))
    full = ctx(cache, 0, INITIAL_EPOCH, [(A0, req()), (A1, req())])
    err = res(error=error_codes.UNKNOWN_TOPIC_OR_PARTITION)  # its hw 10 is not cached
    assert full.response_partitions({A0: err, A1: res()}) == (64, [A0, A1])
    assert incremental(cache, 64, 1, {A0: res(), A1: res()}) == (64, [A0])


def test_forgetting_every_partition_closes_the_session() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([65]))
    open_session(cache, [A0, A1])
    inc = ctx(cache, 65, 1, forgotten=[A0, A1])
    assert inc.kind == "sessionless"
    assert 65 not in cache
    assert inc.partitions_to_read() == []
    assert inc.response_partitions({}) == (0, [])


# ---- session errors -----------------------------------------------------------------------


def test_unknown_session_id_is_fetch_session_id_not_found() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([70]))
    open_session(cache, [A0])
    for session_id in (71, 0):
        bad = ctx(cache, session_id, 1, [(B0, req())])
        assert (bad.kind, bad.error) == ("error", error_codes.FETCH_SESSION_ID_NOT_FOUND)
        assert bad.partitions_to_read() == []
        assert bad.response_partitions({B0: res()}) == (0, [])
    info = cache.session(70)
    assert info is not None and info.partitions == (A0,)


@pytest.mark.parametrize("epoch", [2, 5, -2, INT32_MAX])
def test_wrong_epoch_is_invalid_fetch_session_epoch_and_changes_nothing(epoch: int) -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([72]))
    open_session(cache, [A0], now=10)
    bad = ctx(cache, 72, epoch, [(B0, req())], [A0], now=20)
    assert (bad.kind, bad.error) == ("error", error_codes.INVALID_FETCH_SESSION_EPOCH)
    assert bad.response_partitions({A0: res()}) == (0, [])
    info = cache.session(72)
    assert info is not None
    assert (info.epoch, info.partitions, info.last_used_ms) == (1, (A0,), 10)


def test_replayed_epoch_is_refused() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([73]))
    open_session(cache, [A0])
    assert incremental(cache, 73, 1, {A0: res()}) == (73, [])
    assert ctx(cache, 73, 1).error == error_codes.INVALID_FETCH_SESSION_EPOCH


def test_session_moving_on_during_the_wait_fails_the_older_response() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([74]))
    open_session(cache, [A0])
    first = ctx(cache, 74, 1)  # session now expects 2
    second = ctx(cache, 74, 2)  # accepted: expects 3
    assert second.response_partitions({A0: res(11)}) == (74, [A0])
    assert first.response_partitions({A0: res(12)}) == (74, [])
    assert first.error == error_codes.INVALID_FETCH_SESSION_EPOCH
    # The failed response recorded nothing: hw 11 is what the session last reported.
    assert incremental(cache, 74, 3, {A0: res(11)}) == (74, [])


@pytest.mark.parametrize(("opened_with_ids", "asked_with_ids"), [(True, False), (False, True)])
def test_mixing_topic_id_usage_is_fetch_session_topic_id_error(
    opened_with_ids: bool, asked_with_ids: bool
) -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([80]))
    tid = uuid.UUID(int=0xA)
    key = FetchPartitionKey(tid if opened_with_ids else None, "a", 0)
    open_session(cache, [key], topic_ids=opened_with_ids, version=13 if opened_with_ids else 12)
    info = cache.session(80)
    assert info is not None and info.uses_topic_ids is opened_with_ids
    bad = ctx(cache, 80, 1, topic_ids=asked_with_ids, version=13 if asked_with_ids else 12)
    assert (bad.kind, bad.error) == ("error", error_codes.FETCH_SESSION_TOPIC_ID_ERROR)
    assert bad.response_partitions({key: res()}) == (0, [])
    info = cache.session(80)
    assert info is not None and info.epoch == 1  # not consumed


def test_epoch_is_checked_before_topic_id_usage() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([81]))
    open_session(cache, [A0])
    assert ctx(cache, 81, 9, topic_ids=True).error == error_codes.INVALID_FETCH_SESSION_EPOCH


def test_topic_id_sessions_key_partitions_by_id() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([82]))
    tid, other = uuid.UUID(int=1), uuid.UUID(int=2)
    unknown = FetchPartitionKey(tid, "", 0)  # the id's name not known yet
    sid = open_session(cache, [unknown, FetchPartitionKey(other, "o", 0)], topic_ids=True)
    # The same id with its name resolved is the same partition: updated, not added.
    named = FetchPartitionKey(tid, "t", 0)
    inc = cache.new_context(
        version=13, session_id=sid, epoch=1, fetch_partitions=[(named, req(5))],
        forgotten=[FetchPartitionKey(other, "", 0)], is_from_follower=False,
        uses_topic_ids=True, now_ms=0,
    )  # fmt: skip
    assert inc.partitions_to_read() == [(named, req(5))]
    # Results keyed by id answer the partition whatever name the caller put in the key.
    assert inc.response_partitions({unknown: res(11)}) == (sid, [named])


def test_topic_names_resolve_cached_unknown_ids() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([83]))
    tid = uuid.UUID(int=3)
    sid = open_session(cache, [FetchPartitionKey(tid, "", 0)], topic_ids=True)
    inc = cache.new_context(
        version=13, session_id=sid, epoch=1, fetch_partitions=[], forgotten=[],
        is_from_follower=False, uses_topic_ids=True, now_ms=0, topic_names={tid: "t"},
    )  # fmt: skip
    assert inc.partitions_to_read() == [(FetchPartitionKey(tid, "t", 0), req())]


# ---- the epoch wrap -----------------------------------------------------------------------


def test_session_epoch_wraps_from_int32_max_to_one() -> None:
    cache = FetchSessionCache(rng=ScriptedRandom([90]))
    open_session(cache, [A0])
    # Reaching Int32 max by requests would take 2^31 of them: set the session there.
    cache._sessions[90].epoch = INT32_MAX
    assert incremental(cache, 90, INT32_MAX, {A0: res()}) == (90, [])
    info = cache.session(90)
    assert info is not None and info.epoch == 1
    assert incremental(cache, 90, 1, {A0: res(12)}) == (90, [A0])
    info = cache.session(90)
    assert info is not None and info.epoch == 2


# ---- eviction -----------------------------------------------------------------------------


def test_full_cache_evicts_a_session_unused_for_longer_than_eviction_ms() -> None:
    cache = FetchSessionCache(max_slots=2, eviction_ms=1000, rng=ScriptedRandom([1, 2, 3, 4]))
    assert open_session(cache, [A0], now=0) == 1
    assert open_session(cache, [A0], now=100) == 2
    # t=500: session 1 unused for 500 ms, both created under 1000 ms ago: nothing to evict.
    assert open_session(cache, [A0, A1, B0], now=500) == 0
    # t=1000: unused for exactly 1000 ms is not yet "more than" eviction_ms.
    assert open_session(cache, [A0], now=1000) == 0
    assert cache.evictions == 0
    # t=1001: session 1 (last used at 0) is stale and goes.
    assert open_session(cache, [A0], now=1001) == 3
    assert sorted(s for s in (1, 2, 3) if s in cache) == [2, 3]
    assert cache.evictions == 1


def test_use_keeps_a_session_from_going_stale() -> None:
    cache = FetchSessionCache(max_slots=2, eviction_ms=1000, rng=ScriptedRandom([1, 2, 3]))
    open_session(cache, [A0], now=0)
    open_session(cache, [A0], now=100)
    incremental(cache, 1, 1, {A0: res()}, now=900)  # session 1 last used at 900
    # t=1101: session 2 (last used at 100) is the stale one.
    assert open_session(cache, [A0], now=1101) == 3
    assert 1 in cache and 2 not in cache


def test_bigger_session_evicts_the_smallest_old_session() -> None:
    # Both sessions were created at 0 and touched at 1500 (older than eviction_ms by then),
    # so both are evictable by anyone; none is stale at 2000.
    cache = FetchSessionCache(max_slots=2, eviction_ms=1000, rng=ScriptedRandom([1, 2, 3]))
    open_session(cache, [A0], now=0)
    open_session(cache, [A0, A1, B0], now=0)
    incremental(cache, 1, 1, {A0: res()}, now=1500)
    incremental(cache, 2, 1, {A0: res(), A1: res(), B0: res()}, now=1500)
    # One partition is not worth more than session 1's one partition: (False, 1, 0) < (False, 1, 1).
    assert open_session(cache, [C0], now=2000) == 0
    # Two partitions are: session 1 (one partition) is evicted.
    assert open_session(cache, [A0, C0], now=2000) == 3
    assert 1 not in cache and 2 in cache and 3 in cache
    assert cache.evictions == 1


def test_session_young_at_its_last_touch_is_not_evictable_by_size() -> None:
    # Kafka decides evictability when a session is touched: session 1, last touched at 500
    # (500 ms old then), is not evictable at 1400 although it is 1400 ms old by now.
    cache = FetchSessionCache(max_slots=1, eviction_ms=1000, rng=ScriptedRandom([1, 2]))
    open_session(cache, [A0], now=0)
    incremental(cache, 1, 1, {A0: res()}, now=500)
    assert open_session(cache, [A0, A1, B0, C0], now=1400) == 0
    incremental(cache, 1, 2, {A0: res()}, now=1450)  # touched again, now old: evictable
    assert open_session(cache, [A0, A1, B0, C0], now=1500) == 2


def test_follower_evicts_young_consumer_session_but_not_the_reverse() -> None:
    cache = FetchSessionCache(max_slots=2, eviction_ms=1000, rng=ScriptedRandom([1, 2, 3, 4]))
    assert open_session(cache, [A0], now=0, follower=True) == 1
    assert open_session(cache, [A0, A1], now=0) == 2
    # A consumer cannot evict anything young, even with more partitions.
    assert open_session(cache, [A0, A1, B0, C0], now=10) == 0
    # A follower evicts the young consumer session 2 (never the young follower session 1),
    # even with fewer partitions: privileged outranks size.
    assert open_session(cache, [A0], now=10, follower=True) == 3
    assert 1 in cache and 2 not in cache and 3 in cache
    # Now only young follower sessions: another follower cannot evict them.
    assert open_session(cache, [A0, A1, B0], now=20, follower=True) == 0


def test_cache_never_holds_more_than_max_slots() -> None:
    cache = FetchSessionCache(max_slots=3, eviction_ms=1000)
    ids = [open_session(cache, [A0], now=t) for t in range(10)]
    assert [i != 0 for i in ids] == [True] * 3 + [False] * 7
    assert len(cache) == 3


def test_zero_slots_never_creates_a_session() -> None:
    cache = FetchSessionCache(max_slots=0)
    assert open_session(cache, [A0]) == 0
    assert len(cache) == 0


# ---- bounds on one session ----------------------------------------------------------------


def test_full_fetch_over_the_partition_bound_gets_no_session() -> None:
    cache = FetchSessionCache(max_session_partitions=2, rng=ScriptedRandom([1]))
    full = ctx(cache, 0, INITIAL_EPOCH, [(A0, req()), (A1, req()), (B0, req())])
    assert full.response_partitions({A0: res(), A1: res(), B0: res()}) == (0, [A0, A1, B0])
    assert len(cache) == 0


def test_incremental_growing_past_the_bound_closes_the_session() -> None:
    cache = FetchSessionCache(max_session_partitions=2, rng=ScriptedRandom([1]))
    open_session(cache, [A0, A1])
    grow = ctx(cache, 1, 1, [(B0, req(6))])
    assert grow.kind == "sessionless"
    assert 1 not in cache
    assert grow.partitions_to_read() == [(B0, req(6))]
    assert grow.response_partitions({B0: res()}) == (0, [B0])
