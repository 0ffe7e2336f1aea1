"""`acks=-1` produce waits (zkbroker.broker.replication.purgatory) as Kafka 3.9's
`DelayedProduce` completes them: on a poke of the partition whose state changed, at the
deadline, when leadership goes, short of min.insync.replicas after the append; and a cancelled
caller leaves nothing behind."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.replication.purgatory import PartitionWait, Purgatory
from zkbroker.broker.replication.replica_state import LeaderReplicas

TP = tuple[str, int]
A: TP = ("t", 0)
B: TP = ("t", 1)
C: TP = ("u", 0)
#: Deadline of waits that must end by a poke: liveness only, never reached.
LONG_S = 30.0


class FakePartition:
    """A partition as the replica manager's check sees it: its high watermark, and whether
    this broker still leads it. Counts how often its check runs."""

    def __init__(self) -> None:
        self.high_watermark = 0
        self.leading = True
        self.checks = 0

    def check(self, required_offset: int) -> int | None:
        self.checks += 1
        if not self.leading:
            return error_codes.NOT_LEADER_OR_FOLLOWER
        return error_codes.NONE if self.high_watermark >= required_offset else None


async def _parked(waits: Purgatory[TP], coro: Any) -> asyncio.Task[Any]:
    task = asyncio.ensure_future(coro)
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done()
    return task


async def test_completes_when_the_poked_partition_reaches_the_offset() -> None:
    waits: Purgatory[TP] = Purgatory()
    part = FakePartition()
    task = await _parked(waits, waits.wait(A, 10, LONG_S, part.check))
    assert waits.watched() == {A} and waits.waiting() == 1
    part.high_watermark = 9
    waits.poke(A)
    await asyncio.sleep(0)
    assert not task.done()
    part.high_watermark = 10
    waits.poke(A)
    assert await task == error_codes.NONE
    assert waits.watched() == frozenset() and waits.waiting() == 0


async def test_already_satisfied_answers_without_waiting() -> None:
    waits: Purgatory[TP] = Purgatory()
    part = FakePartition()
    part.high_watermark = 5
    assert await waits.wait(A, 5, 0.0, part.check) == error_codes.NONE
    assert part.checks == 1 and waits.waiting() == 0


async def test_times_out_and_leaves_nothing() -> None:
    waits: Purgatory[TP] = Purgatory()
    part = FakePartition()
    assert await waits.wait(A, 1, 0.05, part.check) == error_codes.REQUEST_TIMED_OUT
    assert waits.watched() == frozenset()
    waits.poke(A)
    assert part.checks == 1  # the check ran once, at the start: no polling


async def test_not_leader_any_more() -> None:
    waits: Purgatory[TP] = Purgatory()
    part = FakePartition()
    task = await _parked(waits, waits.wait(A, 3, LONG_S, part.check))
    part.leading = False
    waits.poke(A)
    assert await task == error_codes.NOT_LEADER_OR_FOLLOWER


async def test_reached_with_too_few_in_sync_replicas() -> None:
    """The check a replica manager builds from the leader's bookkeeping: the ISR shrank under
    min.insync.replicas after the append, then the high watermark reached the offset."""
    waits: Purgatory[TP] = Purgatory()
    replicas = LeaderReplicas(0, (0, 1, 2), (0, 1, 2), 0)
    log_end = 10
    hw = 0

    def check(required: int) -> int | None:
        return replicas.check_enough_replicas(required, hw, min_insync_replicas=2)

    task = await _parked(waits, waits.wait(A, log_end, LONG_S, check))
    replicas.propose_shrink([1, 2])
    assert replicas.commit([0])
    hw = max(hw, replicas.high_watermark(log_end))  # the ISR is the leader alone now
    waits.poke(A)
    assert await task == error_codes.NOT_ENOUGH_REPLICAS_AFTER_APPEND


async def test_a_cancelled_waiter_leaves_nothing_behind() -> None:
    waits: Purgatory[TP] = Purgatory()
    parts = {tp: FakePartition() for tp in (A, B)}
    task = await _parked(
        waits, waits.wait_all({tp: PartitionWait(4, p.check) for tp, p in parts.items()}, LONG_S)
    )
    task.cancel()
    # A poke in the same turn, before the task has run its cancellation, must not fail.
    parts[A].high_watermark = 4
    waits.poke(A)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert waits.watched() == frozenset() and waits.waiting() == 0
    checks = {tp: p.checks for tp, p in parts.items()}
    waits.poke(A)
    waits.poke(B)
    assert {tp: p.checks for tp, p in parts.items()} == checks


async def test_many_partitions_one_deadline_one_future(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: Purgatory[TP] = Purgatory()
    parts = {tp: FakePartition() for tp in (A, B, C)}
    loop = asyncio.get_running_loop()
    timers: Counter[str] = Counter()
    call_later: Callable[..., asyncio.TimerHandle] = loop.call_later

    def counting(delay: float, cb: Callable[..., object], *args: object) -> asyncio.TimerHandle:
        timers["call_later"] += 1
        return call_later(delay, cb, *args)

    monkeypatch.setattr(loop, "call_later", counting)
    tasks_before = len(asyncio.all_tasks())
    task = await _parked(
        waits, waits.wait_all({tp: PartitionWait(7, p.check) for tp, p in parts.items()}, 0.2)
    )
    assert len(asyncio.all_tasks()) == tasks_before + 1  # the caller's, and no other
    assert timers["call_later"] == 1
    assert waits.watched() == {A, B, C} and waits.waiting() == 1
    parts[B].high_watermark = 7
    waits.poke(B)
    # A poke runs the poked partition's check only.
    assert {tp: p.checks for tp, p in parts.items()} == {A: 1, B: 2, C: 1}
    assert waits.watched() == {A, C}
    codes = await task
    assert list(codes) == [A, B, C]
    assert codes == {
        A: error_codes.REQUEST_TIMED_OUT,
        B: error_codes.NONE,
        C: error_codes.REQUEST_TIMED_OUT,
    }
    assert waits.watched() == frozenset()


async def test_requests_on_one_partition_complete_by_their_own_offsets() -> None:
    waits: Purgatory[TP] = Purgatory()
    part = FakePartition()
    low = await _parked(waits, waits.wait(A, 3, LONG_S, part.check))
    high = await _parked(waits, waits.wait(A, 6, LONG_S, part.check))
    assert waits.waiting() == 2
    part.high_watermark = 4
    waits.poke(A)
    assert await low == error_codes.NONE
    assert not high.done() and waits.waiting() == 1
    part.high_watermark = 6
    waits.poke(A)
    assert await high == error_codes.NONE


async def test_a_check_that_raises_ends_its_wait() -> None:
    waits: Purgatory[TP] = Purgatory()
    part = FakePartition()
    calls = 0

    def check(required: int) -> int | None:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise RuntimeError("partition gone")
        return None

    failing = await _parked(waits, waits.wait_all({A: PartitionWait(1, check)}, LONG_S))
    other = await _parked(waits, waits.wait(A, 1, LONG_S, part.check))
    part.high_watermark = 1
    waits.poke(A)  # the poker is not hurt, and the other request completes
    with pytest.raises(RuntimeError, match="partition gone"):
        await failing
    assert await other == error_codes.NONE
    assert waits.watched() == frozenset()
