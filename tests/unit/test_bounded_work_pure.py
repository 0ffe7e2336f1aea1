"""Pure pieces of issue 17's bounded work: the slicing helper (`zkbroker.broker.asyncutil`), the
lazy placement and its size bound (`zkbroker.broker.rules.replica_assignment`), the request-size
estimate (`zkbroker.zk_layout.store.request_size.request_bytes`), the topic-znode size check
(`zkbroker.handlers.support.zk_limits`) and the per-family ZooKeeper-trouble errors
(`zkbroker.handlers.support.zk_trouble`)."""

from __future__ import annotations

import asyncio
import json
import random
import time

import pytest

from zkbroker.broker.asyncutil import Pacer, collect, gather_bounded
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.replica_assignment import (
    AssignmentError,
    BrokerPlacement,
    assign_replicas,
    digits_sum,
    plan_replicas,
    replica_map_min_bytes,
)
from zkbroker.handlers.registry import HANDLERS
from zkbroker.handlers.support import zk_trouble
from zkbroker.handlers.support.zk_limits import partition_entry_bytes, replica_map_bytes
from zkbroker.zk_layout import SessionExpiredError, ZkConnectionError
from zkbroker.zk_layout.store.request_size import request_bytes

INT32_MAX = 2**31 - 1


# ---- zkbroker.broker.asyncutil
# ----------------------------------------------------------------------


async def test_pacer_yields_to_other_tasks_during_a_long_loop() -> None:
    ticks = 0
    stop = False

    async def other() -> None:
        nonlocal ticks
        while not stop:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(other())
    pacer = Pacer(slice_s=0.001)
    deadline = time.perf_counter() + 0.05
    while time.perf_counter() < deadline:
        if pacer.due():
            await pacer.pause()
    stop = True
    await task
    assert pacer.pauses >= 5
    assert ticks >= 5


async def test_collect_keeps_order_and_items() -> None:
    assert await collect(iter(range(10_000)), Pacer(slice_s=0.0)) == list(range(10_000))
    assert await collect([]) == []


def test_pacer_is_not_due_before_its_slice_ends() -> None:
    pacer = Pacer(slice_s=60.0)
    assert not any(pacer.due() for _ in range(10_000))


# ---- zkbroker.broker.rules.replica_assignment
# ---------------------------------------------------------


@pytest.mark.parametrize("racks", [None, ["a", "b", "a", "c", "b"]])
@pytest.mark.parametrize(("partitions", "rf"), [(1, 1), (7, 3), (50, 2), (101, 5)])
def test_plan_replicas_yields_what_assign_replicas_returns(
    racks: list[str] | None, partitions: int, rf: int
) -> None:
    brokers = [BrokerPlacement(b, racks[b] if racks else None) for b in range(5)]
    expected = assign_replicas(brokers, partitions, rf, rng=random.Random(7))
    planned = plan_replicas(brokers, partitions, rf, rng=random.Random(7))
    assert dict(planned) == expected


def test_plan_replicas_checks_at_call_time_and_is_lazy() -> None:
    brokers = [BrokerPlacement(b) for b in range(3)]
    with pytest.raises(AssignmentError) as raised:
        plan_replicas(brokers, INT32_MAX, 4)
    assert raised.value.error_code == error_codes.INVALID_REPLICATION_FACTOR
    with pytest.raises(AssignmentError):
        plan_replicas(brokers, 0, 1)
    # 2**31-1 partitions: nothing is computed until iterated.
    planned = plan_replicas(brokers, INT32_MAX, 3)
    first = next(iter(planned))
    assert first[0] == 0 and len(first[1]) == 3


@pytest.mark.parametrize(("low", "high"), [(0, 0), (0, 1), (0, 10), (0, 11), (5, 123), (99, 1001)])
def test_digits_sum(low: int, high: int) -> None:
    assert digits_sum(low, high) == sum(len(str(i)) for i in range(low, high))


def test_digits_sum_is_arithmetic_for_int32_max() -> None:
    assert digits_sum(0, INT32_MAX) > 18 * 10**9


@pytest.mark.parametrize("ids", [[0, 1, 2], [7, 12, 100], [1001, 5]])
@pytest.mark.parametrize(("partitions", "rf", "first"), [(1, 1, 0), (250, 2, 0), (40, 2, 13)])
def test_replica_map_min_bytes_is_a_lower_bound_of_the_json(
    ids: list[int], partitions: int, rf: int, first: int
) -> None:
    brokers = [BrokerPlacement(b) for b in sorted(ids)]
    assignment = assign_replicas(
        brokers, partitions, rf, start_partition_id=first, rng=random.Random(1)
    )
    text = json.dumps({str(p): r for p, r in assignment.items()}, separators=(",", ":"))
    bound = replica_map_min_bytes(partitions, rf, [b.broker_id for b in brokers], first)
    assert bound <= len(text)
    # Exact when every id has the same number of digits.
    if len({len(str(i)) for i in ids}) == 1:
        assert bound == len(text)
    assert replica_map_bytes(assignment.items()) == len(text)


def test_partition_entry_bytes() -> None:
    assert partition_entry_bytes(12, [1, 200]) == len('"12":[1,200],')


# ---- zkbroker.zk_layout.store.request_size.request_bytes
# ----------------------------------------------------


def test_request_bytes_counts_paths_data_and_overheads() -> None:
    small = request_bytes([("/a", b"")])
    assert request_bytes([("/a", b"x" * 1000)]) == small + 1000
    assert request_bytes([("/a", None), ("/b", None)]) > 2 * len("/a")


# ---- zkbroker.handlers.support.zk_trouble
# -------------------------------------------------------------


def _loss() -> ZkConnectionError:
    return ZkConnectionError("get /x: connection to ZooKeeper lost", op="get", path="/x")


def _expiry() -> SessionExpiredError:
    return SessionExpiredError("get /x: the ZooKeeper session expired", op="get", path="/x")


@pytest.mark.parametrize(
    ("api_key", "loss", "expiry"),
    [
        (19, error_codes.REQUEST_TIMED_OUT, error_codes.NOT_CONTROLLER),  # CreateTopics
        (20, error_codes.REQUEST_TIMED_OUT, error_codes.NOT_CONTROLLER),  # DeleteTopics
        (37, error_codes.REQUEST_TIMED_OUT, error_codes.NOT_CONTROLLER),  # CreatePartitions
        (45, error_codes.REQUEST_TIMED_OUT, error_codes.NOT_CONTROLLER),  # AlterReassignments
        (43, error_codes.REQUEST_TIMED_OUT, error_codes.NOT_CONTROLLER),  # ElectLeaders
        (7, error_codes.REQUEST_TIMED_OUT, error_codes.NOT_CONTROLLER),  # ControlledShutdown
        (51, error_codes.REQUEST_TIMED_OUT, error_codes.NOT_CONTROLLER),  # AlterUserScramCreds
        (56, error_codes.REQUEST_TIMED_OUT, error_codes.NOT_CONTROLLER),  # AlterPartition
        (57, error_codes.REQUEST_TIMED_OUT, error_codes.NOT_CONTROLLER),  # UpdateFeatures
        (67, error_codes.REQUEST_TIMED_OUT, error_codes.NOT_CONTROLLER),  # AllocateProducerIds
        (32, error_codes.REQUEST_TIMED_OUT, error_codes.REQUEST_TIMED_OUT),  # DescribeConfigs
        (44, error_codes.REQUEST_TIMED_OUT, error_codes.REQUEST_TIMED_OUT),  # IncrementalAlter
        (9, error_codes.COORDINATOR_NOT_AVAILABLE, error_codes.COORDINATOR_NOT_AVAILABLE),
        (8, error_codes.COORDINATOR_NOT_AVAILABLE, error_codes.COORDINATOR_NOT_AVAILABLE),
        (3, error_codes.LEADER_NOT_AVAILABLE, error_codes.LEADER_NOT_AVAILABLE),  # Metadata
        (60, error_codes.REQUEST_TIMED_OUT, error_codes.REQUEST_TIMED_OUT),  # DescribeCluster
    ],
)
def test_zookeeper_trouble_errors_per_api_family(api_key: int, loss: int, expiry: int) -> None:
    family = HANDLERS[api_key].zk_trouble_family
    assert zk_trouble.error_for(family, _loss()) == loss
    assert zk_trouble.error_for(family, _expiry()) == expiry


# ---- zkbroker.broker.asyncutil.gather_bounded
# --------------------------------------------------------


async def test_gather_bounded_keeps_order_and_bounds_concurrency() -> None:
    running = 0
    most = 0

    async def job(i: int) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.001 * (i % 3))
        running -= 1
        return i * 2

    assert await gather_bounded((job(i) for i in range(100)), limit=7) == [
        i * 2 for i in range(100)
    ]
    assert most == 7


async def test_gather_bounded_returns_or_raises_exceptions() -> None:
    async def job(i: int) -> int:
        await asyncio.sleep(0)
        if i == 3:
            raise ValueError(i)
        return i

    results = await gather_bounded((job(i) for i in range(5)), limit=2, return_exceptions=True)
    assert results[:3] == [0, 1, 2] and isinstance(results[3], ValueError) and results[4] == 4
    with pytest.raises(ValueError):
        await gather_bounded((job(i) for i in range(50)), limit=2)
