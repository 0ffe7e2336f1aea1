"""Automatic replica placement (broker/rules/replica_assignment.py), checked against Kafka's
worked examples (AdminUtils comments, docs/kafka-behaviour.md §2.3/§3.2), its error order and
words, and properties over many seeded random cases."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import pytest

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.replica_assignment import (
    MIXED_RACKS_REASON,
    AssignmentError,
    BrokerPlacement,
    assign_replicas,
    create_partitions_start,
    rack_alternated_list,
    replica_index,
)

# Kafka's rack example: broker id -> rack.
RACKS_EXAMPLE = {0: "r1", 1: "r3", 2: "r3", 3: "r2", 4: "r2", 5: "r1"}


def _plain(*ids: int) -> list[BrokerPlacement]:
    return [BrokerPlacement(i) for i in ids]


def _racked(racks: dict[int, str]) -> list[BrokerPlacement]:
    return [BrokerPlacement(i, rack) for i, rack in sorted(racks.items())]


class _ScriptedRandom(random.Random):
    """Answers randrange with the given values, in order, and records each bound."""

    def __init__(self, *values: int) -> None:
        super().__init__(0)
        self.values = list(values)
        self.bounds: list[int] = []

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        assert stop is None and step == 1
        self.bounds.append(start)
        return self.values.pop(0)


# --- helpers --------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_replica_index_never_hits_first_and_reaches_every_other(n: int) -> None:
    for first in range(n):
        for shift in range(3 * n):
            reached = [replica_index(first, shift, j, n) for j in range(n - 1)]
            assert first not in reached
            assert sorted(reached) == sorted(set(range(n)) - {first})


def test_replica_index_formula() -> None:
    assert replica_index(0, 0, 0, 5) == 1
    assert replica_index(4, 0, 0, 5) == 0
    assert replica_index(0, 1, 0, 5) == 2
    assert replica_index(3, 2, 1, 4) == 0  # (3 + 1 + 3 % 3) % 4


def test_rack_alternated_list_doc_example() -> None:
    assert rack_alternated_list(_racked(RACKS_EXAMPLE)) == [0, 3, 1, 5, 4, 2]


def test_rack_alternated_list_skips_exhausted_racks() -> None:
    without_5 = {k: v for k, v in RACKS_EXAMPLE.items() if k != 5}
    assert rack_alternated_list(_racked(without_5)) == [0, 3, 1, 4, 2]


def test_rack_alternated_list_three_even_racks_any_input_order() -> None:
    racks = {i: f"rack{i // 3 + 1}" for i in range(9)}
    brokers = _racked(racks)
    random.Random(7).shuffle(brokers)
    assert rack_alternated_list(brokers) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


def test_rack_alternated_list_sorts_rack_names_and_ids() -> None:
    brokers = [BrokerPlacement(9, "b"), BrokerPlacement(2, "b"), BrokerPlacement(5, "a")]
    assert rack_alternated_list(brokers) == [5, 2, 9]


def test_rack_alternated_list_needs_racks() -> None:
    with pytest.raises(ValueError):
        rack_alternated_list(_plain(1, 2))


@pytest.mark.parametrize(
    ("ids", "head", "expected"),
    [
        ([0, 1, 2, 3], 0, 0),
        ([0, 1, 2, 3], 2, 2),
        ([1, 3, 5], 3, 1),
        ([1, 3, 5], 4, 2),  # the old leader's broker is gone: next id above it
        ([1, 3, 5], 6, 0),  # nothing at or above it: 0
        ([1, 3, 5], 0, 0),
        ([], 1, 0),
    ],
)
def test_create_partitions_start(ids: list[int], head: int, expected: int) -> None:
    assert create_partitions_start(ids, head) == expected


# --- Kafka's worked examples ----------------------------------------------------------------


def test_rack_unaware_kafka_table() -> None:
    # AdminUtils' comment table (5 brokers, 10 partitions, rf 3, start 0, shift 0):
    # row r, column b lists the partition whose replica r sits on broker b.
    table = [
        ["p0", "p1", "p2", "p3", "p4"],
        ["p5", "p6", "p7", "p8", "p9"],
        ["p4", "p0", "p1", "p2", "p3"],
        ["p8", "p9", "p5", "p6", "p7"],
        ["p3", "p4", "p0", "p1", "p2"],
        ["p7", "p8", "p9", "p5", "p6"],
    ]
    expected: dict[int, list[int]] = {p: [] for p in range(10)}
    for row in table:  # rows come in replica order, two rows per replica
        for broker, cell in enumerate(row):
            expected[int(cell[1:])].append(broker)
    got = assign_replicas(_plain(0, 1, 2, 3, 4), 10, 3, fixed_start_index=0)
    assert got == expected
    assert got[0] == [0, 1, 2]
    assert got[4] == [4, 0, 1]
    assert got[5] == [0, 2, 3]
    assert got[9] == [4, 1, 2]


def test_rack_aware_kafka_example() -> None:
    got = assign_replicas(_racked(RACKS_EXAMPLE), 7, 3, fixed_start_index=0, start_partition_id=0)
    assert got == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }


def test_rack_unaware_hand_computed_nonzero_start() -> None:
    # N=4, start = shift = 1; the shift becomes 2 at partition 4.
    got = assign_replicas(_plain(10, 20, 30, 40), 5, 3, fixed_start_index=1)
    assert got == {
        0: [20, 40, 10],
        1: [30, 10, 20],
        2: [40, 20, 30],
        3: [10, 30, 40],
        4: [20, 10, 30],
    }


def test_rack_unaware_uses_given_order() -> None:
    got = assign_replicas(_plain(3, 1, 2), 3, 1, fixed_start_index=0)
    assert got == {0: [3], 1: [1], 2: [2]}


def test_single_broker() -> None:
    assert assign_replicas(_plain(7), 3, 1, rng=random.Random(1)) == {0: [7], 1: [7], 2: [7]}
    assert assign_replicas([BrokerPlacement(7, "r")], 2, 1) == {0: [7], 1: [7]}


def test_rack_aware_fewer_racks_than_replicas_fills_unused_brokers() -> None:
    racks = {0: "a", 1: "a", 2: "b", 3: "b"}
    got = assign_replicas(_racked(racks), 4, 3, fixed_start_index=0)
    for replicas in got.values():
        assert len(set(replicas)) == 3
        assert {racks[b] for b in replicas[:2]} == {"a", "b"}


# --- random start and shift -----------------------------------------------------------------


def test_random_start_then_shift_are_two_independent_draws() -> None:
    ids = [0, 1, 2, 3, 4]
    rng = _ScriptedRandom(3, 1)  # start 3, shift 1
    got = assign_replicas(_plain(*ids), 6, 3, rng=rng)
    assert rng.bounds == [5, 5]
    expected = {}
    for p in range(6):
        shift = 1 + p // 5
        first = (p + 3) % 5
        expected[p] = [first] + [replica_index(first, shift, j, 5) for j in range(2)]
    assert got == expected
    assert got[0] == [3, 0, 1]


def test_rack_aware_draws_over_alternated_list() -> None:
    rng = _ScriptedRandom(0, 0)
    got = assign_replicas(_racked(RACKS_EXAMPLE), 7, 3, rng=rng)
    assert rng.bounds == [6, 6]
    assert got == assign_replicas(_racked(RACKS_EXAMPLE), 7, 3, fixed_start_index=0)


def test_fixed_start_index_does_not_touch_rng() -> None:
    rng = _ScriptedRandom()
    assign_replicas(_plain(0, 1, 2), 4, 2, fixed_start_index=2, rng=rng)
    assign_replicas(_racked(RACKS_EXAMPLE), 4, 2, fixed_start_index=2, rng=rng)
    assert rng.bounds == []


def test_seeded_rng_is_deterministic() -> None:
    brokers = _plain(*range(7))
    racked = _racked(RACKS_EXAMPLE)
    for seed in range(20):
        assert assign_replicas(brokers, 30, 3, rng=random.Random(seed)) == assign_replicas(
            brokers, 30, 3, rng=random.Random(seed)
        )
        assert assign_replicas(racked, 30, 3, rng=random.Random(seed)) == assign_replicas(
            racked, 30, 3, rng=random.Random(seed)
        )
    outcomes = {
        tuple(map(tuple, assign_replicas(brokers, 7, 3, rng=random.Random(s)).values()))
        for s in range(20)
    }
    assert len(outcomes) > 1


def test_default_rng_gives_valid_assignment() -> None:
    got = assign_replicas(_plain(*range(4)), 8, 2)
    assert sorted(got) == list(range(8))
    assert all(len(set(r)) == 2 for r in got.values())
    assert Counter(r[0] for r in got.values()) == {b: 2 for b in range(4)}


def test_fixed_start_above_broker_count_wraps() -> None:
    # Kafka takes a fixed index as it is: the leader index wraps, the shift keeps 4.
    got = assign_replicas(_plain(0, 1, 2), 1, 2, fixed_start_index=4)
    assert got == {0: [1, 2]}
    assert assign_replicas(_plain(0, 1, 2), 1, 2, fixed_start_index=1) == {0: [1, 0]}


# --- errors ---------------------------------------------------------------------------------


def _error(brokers: Sequence[BrokerPlacement], n: int, rf: int) -> AssignmentError:
    with pytest.raises(AssignmentError) as info:
        assign_replicas(brokers, n, rf)
    return info.value


@pytest.mark.parametrize("n", [0, -1])
def test_partitions_not_positive(n: int) -> None:
    err = _error(_plain(0), n, 1)
    assert err.error_code == error_codes.INVALID_PARTITIONS == 37
    assert err.message == "Number of partitions must be larger than 0."
    assert str(err) == err.message


@pytest.mark.parametrize("rf", [0, -1])
def test_replication_factor_not_positive(rf: int) -> None:
    err = _error(_plain(0), 1, rf)
    assert err.error_code == error_codes.INVALID_REPLICATION_FACTOR == 38
    assert err.message == "Replication factor must be larger than 0."


def test_replication_factor_above_brokers() -> None:
    err = _error(_plain(0), 1, 3)
    assert err.error_code == 38
    assert err.message == "Replication factor: 3 larger than available brokers: 1."
    err = _error([], 2, 1)
    assert err.message == "Replication factor: 1 larger than available brokers: 0."


def test_mixed_racks() -> None:
    err = _error([BrokerPlacement(0, "r1"), BrokerPlacement(1)], 1, 1)
    assert err.error_code == error_codes.UNKNOWN_SERVER_ERROR == -1
    assert err.message is None
    assert str(err) == MIXED_RACKS_REASON
    assert "rack" in str(err)


def test_error_order() -> None:
    mixed = [BrokerPlacement(0, "r1"), BrokerPlacement(1)]
    assert _error(mixed, 0, 0).error_code == 37  # partitions first
    assert _error([], 1, 0).message == "Replication factor must be larger than 0."
    assert _error(mixed, 1, 3).error_code == 38  # broker count before racks
    assert _error(mixed, 1, 2).error_code == -1


# --- CreatePartitions continuation ----------------------------------------------------------


def test_continuation_within_first_round_matches_full_range() -> None:
    brokers = _plain(0, 1, 2, 3, 4)
    for start in range(5):
        full = assign_replicas(brokers, 12, 3, fixed_start_index=start)
        for existing in range(1, 6):  # existing <= N: no shift step is skipped
            head = assign_replicas(brokers, existing, 3, fixed_start_index=start)
            tail = assign_replicas(
                brokers, 12 - existing, 3, fixed_start_index=start, start_partition_id=existing
            )
            assert sorted(tail) == list(range(existing, 12))
            assert head | tail == full


def test_continuation_rack_aware_within_first_round_matches_full_range() -> None:
    brokers = _racked(RACKS_EXAMPLE)
    full = assign_replicas(brokers, 7, 3, fixed_start_index=0)
    tail = assign_replicas(brokers, 3, 3, fixed_start_index=0, start_partition_id=4)
    assert tail == {p: full[p] for p in (4, 5, 6)}


def test_continuation_past_first_round_skips_earlier_shift_steps() -> None:
    # Kafka's behaviour: the shift starts again at the fixed index, so only steps at partition
    # ids in the added range happen. Leaders still follow the full round-robin.
    brokers = _plain(0, 1, 2)
    full = assign_replicas(brokers, 5, 2, fixed_start_index=0)
    assert full == {0: [0, 1], 1: [1, 2], 2: [2, 0], 3: [0, 2], 4: [1, 0]}
    tail = assign_replicas(brokers, 1, 2, fixed_start_index=0, start_partition_id=4)
    assert tail == {4: [1, 2]}


def test_create_partitions_flow() -> None:
    # Topic made with partition 0 led by broker 2 on brokers 0..3; CreatePartitions adds two.
    ids = [0, 1, 2, 3]
    start = create_partitions_start(ids, 2)
    assert start == 2
    added = assign_replicas(_plain(*ids), 2, 2, fixed_start_index=start, start_partition_id=3)
    assert added == {3: [1, 0], 4: [2, 3]}


# --- properties -----------------------------------------------------------------------------


def _random_case(
    rnd: random.Random,
) -> tuple[list[BrokerPlacement], int, int, int, int, int | None]:
    n_brokers = rnd.randint(1, 12)
    ids = sorted(rnd.sample(range(100), n_brokers))
    racked = rnd.random() < 0.5
    n_racks = rnd.randint(1, 5)
    brokers = [BrokerPlacement(i, f"rack{rnd.randrange(n_racks)}" if racked else None) for i in ids]
    rf = rnd.randint(1, n_brokers)
    n = rnd.randint(1, 40)
    fixed = rnd.randrange(n_brokers) if rnd.random() < 0.5 else -1
    start_id = rnd.choice([-1, 0, rnd.randrange(50)])
    seed = rnd.randrange(1 << 30) if fixed < 0 else None
    return brokers, rf, n, fixed, start_id, seed


def test_properties_over_random_cases() -> None:
    rnd = random.Random(20240601)
    for case in range(1500):
        brokers, rf, n, fixed, start_id, seed = _random_case(rnd)
        rng = random.Random(seed) if seed is not None else None
        got = assign_replicas(
            brokers, n, rf, fixed_start_index=fixed, start_partition_id=start_id, rng=rng
        )
        where = f"case {case}: {brokers} n={n} rf={rf} fixed={fixed} start_id={start_id}"
        first_id = max(0, start_id)
        assert list(got) == list(range(first_id, first_id + n)), where
        ids = {b.broker_id for b in brokers}
        n_brokers = len(ids)
        for replicas in got.values():
            assert len(replicas) == rf, where
            assert len(set(replicas)) == rf, where
            assert set(replicas) <= ids, where
        leaders = Counter(r[0] for r in got.values())
        counts = [leaders.get(b, 0) for b in ids]
        assert max(counts) - min(counts) <= 1, where
        if n % n_brokers == 0:
            assert max(counts) == min(counts) == n // n_brokers, where
        rack_of = {b.broker_id: b.rack for b in brokers}
        racks = set(rack_of.values())
        if None not in racks:
            for replicas in got.values():
                assert len({rack_of[b] for b in replicas}) == min(rf, len(racks)), where
        elif n % n_brokers == 0 and first_id % n_brokers == 0:
            # Each full round puts every broker in exactly rf lists.
            per_broker = Counter(b for r in got.values() for b in r)
            assert set(per_broker.values()) == {rf * n // n_brokers}, where


def test_leaders_round_robin_over_alternated_list() -> None:
    rnd = random.Random(99)
    for _ in range(200):
        racks = {i: f"r{rnd.randrange(4)}" for i in rnd.sample(range(50), rnd.randint(1, 10))}
        brokers = _racked(racks)
        order = rack_alternated_list(brokers)
        start = rnd.randrange(len(order))
        got = assign_replicas(brokers, 25, 1, fixed_start_index=start)
        assert [r[0] for r in got.values()] == [order[(p + start) % len(order)] for p in range(25)]


def test_continuation_leaders_always_match() -> None:
    rnd = random.Random(5)
    for _ in range(300):
        brokers, rf, n, _, _, _ = _random_case(rnd)
        fixed = rnd.randrange(len(brokers))
        existing = rnd.randint(1, 30)
        full = assign_replicas(brokers, existing + n, rf, fixed_start_index=fixed)
        tail = assign_replicas(brokers, n, rf, fixed_start_index=fixed, start_partition_id=existing)
        assert {p: r[0] for p, r in tail.items()} == {
            p: full[p][0] for p in range(existing, existing + n)
        }
        if existing <= len(brokers):
            assert tail == {p: full[p] for p in range(existing, existing + n)}
