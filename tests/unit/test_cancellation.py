"""Waiting and stopping never lose a cancellation (issue 41, item 8).

Python 3.11's `asyncio.wait_for` runs what it waits for in a task of its own; a cancellation
arriving in the loop turn in which that task completes is dropped, and `wait_for` returns
(CPython gh-86296, fixed in 3.12). The group coordinator's timer loop waited that way, woken by
every group operation, so a broker stop could cancel it into nothing and wait for it forever.
These tests build that loop turn deterministically (asyncio runs ready callbacks in FIFO order):
the awaited event is set, the inner task is let complete, and the cancel comes before the
waiter is woken. `asyncutil.wait_for` and `asyncutil.cancel_and_wait` must end, and raise the
caller's cancellation, whatever the timing.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import re
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from zkbroker.broker import asyncutil
from zkbroker.broker.asyncutil import cancel_and_wait, now_ms, wait_for
from zkbroker.broker.groups.coordinator import GroupCoordinator
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.rules.groups.config import GroupConfig
from zkbroker.broker.storage import LogManager

Waiter = Callable[[Awaitable[Any], float | None], Awaitable[Any]]

#: Deadline of every wait in these tests: liveness only, never a measurement.
LIVENESS_S = 5.0
#: Loop turns between setting the event and cancelling: 1 is the turn the inner task of
#: Python 3.11's wait_for completes in; the others are the neighbouring orders.
TURNS = (0, 1, 2, 3)


async def _turns(n: int) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def _cancel_when_woken(waiter: Waiter, turns: int) -> bool:
    """Run a loop that waits on an event through `waiter` (as the group coordinator's timer
    loop does, with a timeout), set the event, cancel the loop `turns` loop turns later.
    True when the loop ended with the cancellation, False when it went on waiting."""
    event = asyncio.Event()

    async def loop() -> None:
        while True:
            event.clear()
            with contextlib.suppress(TimeoutError):
                await waiter(event.wait(), 60.0)

    task = asyncio.create_task(loop())
    await _turns(3)  # the loop waits (and 3.11's wait_for's inner task waits on the event)
    event.set()
    await _turns(turns)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=0.5)
    if not done:
        task.cancel()  # a second cancellation arrives while it waits: it ends now
        await asyncio.wait({task}, timeout=LIVENESS_S)
        return False
    assert task.cancelled()
    return True


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12's wait_for keeps the cancellation")
async def test_the_timing_loses_a_cancellation_to_asyncio_wait_for_on_311() -> None:
    # The harness builds the very turn of the bug: the old pattern loses the cancellation.
    ended = [await _cancel_when_woken(asyncio.wait_for, n) for n in TURNS]
    assert False in ended


@pytest.mark.parametrize("turns", TURNS)
async def test_wait_for_never_loses_a_cancellation(turns: int) -> None:
    assert await _cancel_when_woken(wait_for, turns)


async def test_wait_for_returns_times_out_and_waits_without_limit() -> None:
    assert await wait_for(asyncio.sleep(0, "value"), 1.0) == "value"
    with pytest.raises(TimeoutError):
        await wait_for(asyncio.Event().wait(), 0.01)
    event = asyncio.Event()
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await wait_for(event.wait(), None) is True

    async def at_once() -> int:
        return 7

    # As from Python 3.12: a timeout of 0 still lets what needs no waiting finish.
    assert await wait_for(at_once(), 0) == 7


async def test_a_cancellation_in_the_turn_the_timeout_fires_is_a_cancellation() -> None:
    never = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(wait_for(never, 0))  # its timeout fires at the next turn
    await asyncio.sleep(0)  # the task waits; the timeout's callback is queued after us
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=LIVENESS_S)
    assert done and task.cancelled()  # CancelledError, not TimeoutError
    assert never.cancelled()


ROOT = Path(__file__).resolve().parents[2]


def _production_modules() -> list[Path]:
    return [
        path
        for package in ("broker", "handlers", "zk_layout")
        for path in sorted((ROOT / package).rglob("*.py"))
    ]


def test_production_code_has_no_asyncio_wait_for() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _production_modules()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\basyncio\.wait_for\(|from asyncio import .*\bwait_for\b", line)
    ]
    assert found == [], "use zkbroker.broker.asyncutil.wait_for (see its docstring)"


#: `suppress(CancelledError)` around an await that is right, by module: why.
SUPPRESS_AROUND_AWAIT_ALLOWED = {
    # A connection task's own cleanup, after its cancellation ended the connection: waiting
    # (1 s at most) for the transport to be lost; a second cancel must not cut that short.
    "broker/server/listener.py": "the connection task's bounded wait for its transport",
}


def _suppresses_cancellation(item: ast.withitem) -> bool:
    """`suppress(..., CancelledError or BaseException, ...)`, however the names are reached."""
    call = item.context_expr
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name != "suppress":
        return False
    for arg in call.args:
        caught = arg.attr if isinstance(arg, ast.Attribute) else getattr(arg, "id", None)
        if caught in ("CancelledError", "BaseException"):
            return True
    return False


def _awaits(body: list[ast.stmt]) -> bool:
    """Whether the statements await (nested functions and classes aside)."""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Await | ast.AsyncWith | ast.AsyncFor):
            return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return False


def _suppress_around_await(source: str) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.With | ast.AsyncWith)
        and any(_suppresses_cancellation(item) for item in node.items)
        and _awaits(node.body)
    ]


def test_the_guard_finds_suppress_cancelled_error_around_an_await() -> None:
    source = """
async def stop(self):
    self._task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await self._task
    with suppress(Exception, CancelledError):
        async with self._lock:
            pass
    with contextlib.suppress(BaseException):
        await asyncio.gather(*self._tasks)
    with contextlib.suppress(asyncio.CancelledError):
        self._task.cancel()
    with contextlib.suppress(Exception):
        await self._store.close()
    with contextlib.suppress(asyncio.CancelledError):
        async def later():
            await self._task
"""
    assert _suppress_around_await(source) == [4, 6, 9]


def test_production_code_suppresses_no_cancellation_around_an_await() -> None:
    # A stop that cancels tasks and waits inside `suppress(CancelledError)` swallows its
    # caller's own cancellation (and waits unbounded): use `asyncutil.cancel_and_wait`.
    found = {
        str(path.relative_to(ROOT)): lines
        for path in _production_modules()
        if (lines := _suppress_around_await(path.read_text()))
    }
    unexpected = {p: n for p, n in found.items() if p not in SUPPRESS_AROUND_AWAIT_ALLOWED}
    assert unexpected == {}, "use zkbroker.broker.asyncutil.cancel_and_wait (see its docstring)"
    stale = set(SUPPRESS_AROUND_AWAIT_ALLOWED) - set(found)
    assert not stale, f"no longer needed, remove from SUPPRESS_AROUND_AWAIT_ALLOWED: {stale}"


# ---- the group coordinator's timer loop --------------------------------------------------------


async def test_group_coordinator_stop_ends_when_its_timer_loop_is_woken_in_the_cancel_turn() -> (
    None
):
    coordinator = GroupCoordinator(0, MetadataImage(), LogManager(None), (3, 9), GroupConfig)
    # A group deadline a minute away: the timer loop waits with a timeout, as with any group.
    coordinator._heap.append((now_ms() + 60_000, "g"))
    await coordinator.start()
    await _turns(3)  # the timer loop waits for its wake-up
    assert coordinator._wake is not None
    coordinator._wake.set()  # what `touch` does after every group operation
    await asyncio.sleep(0)  # 3.11's wait_for: its inner task completes in this turn
    # The stop cancels the loop before it is woken. It runs as a task of its own, waited for
    # without cancelling it: a cancellation from here would reach the loop a second time.
    stopping = asyncio.create_task(coordinator.stop())
    done, _ = await asyncio.wait({stopping}, timeout=LIVENESS_S)
    if not done:
        stopping.cancel()
        await asyncio.wait({stopping}, timeout=LIVENESS_S)
        pytest.fail("the group coordinator's stop waits for a timer loop that never ends")
    assert not coordinator.active


# ---- cancel-and-wait ----------------------------------------------------------------------------


class Refuser:
    """A task that swallows every cancellation until released."""

    def __init__(self) -> None:
        self.released = asyncio.Event()
        self.cancels = 0
        self.task = asyncio.create_task(self._run(), name="refuser")

    async def _run(self) -> None:
        while not self.released.is_set():
            try:
                await self.released.wait()
            except asyncio.CancelledError:
                self.cancels += 1

    async def release(self) -> None:
        self.released.set()
        await asyncio.wait({self.task}, timeout=LIVENESS_S)
        assert self.task.done()


StopFn = Callable[[list[asyncio.Task[Any]]], Coroutine[Any, Any, Any]]
STOPPERS: dict[str, StopFn] = {
    "cancel_and_wait": lambda tasks: cancel_and_wait(tasks, within=0.2, what="test"),
    "coordinator stop": lambda tasks: cancel_and_wait(tasks, what="coordinator"),
}


async def test_cancel_and_wait_ends_cooperative_tasks_and_drops_their_outcomes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def fails_on_cancel() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise ValueError("failed while stopping") from None

    async def sleeper() -> None:
        await asyncio.sleep(60)

    done_already = asyncio.create_task(asyncio.sleep(0))
    await asyncio.sleep(0.01)
    tasks = [asyncio.create_task(fails_on_cancel()), asyncio.create_task(sleeper()), done_already]
    await asyncio.sleep(0)
    async with asyncio.timeout(LIVENESS_S):
        assert await cancel_and_wait(tasks, within=LIVENESS_S) == []
    assert all(t.done() for t in tasks)
    assert not [r for r in caplog.records if "did_not_end" in r.getMessage()]


@pytest.mark.parametrize("stop", STOPPERS.values(), ids=STOPPERS.keys())
async def test_a_task_that_refuses_to_end_is_logged_and_left_behind(
    stop: StopFn, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(asyncutil, "CANCEL_WAIT_S", 0.2)
    refuser = Refuser()
    cooperative = asyncio.create_task(asyncio.sleep(60), name="sleeper")
    await asyncio.sleep(0)
    stopping = asyncio.create_task(stop([refuser.task, cooperative]))
    done, _ = await asyncio.wait({stopping}, timeout=LIVENESS_S)
    if not done:
        await refuser.release()
        await asyncio.wait({stopping}, timeout=LIVENESS_S)
        pytest.fail("it waits for the refusing task without a bound")
    assert cooperative.cancelled()
    assert not refuser.task.done() and refuser.cancels >= 1
    (record,) = [r for r in caplog.records if "tasks.did_not_end" in r.getMessage()]
    assert record.levelname == "ERROR"
    fields: Any = record.msg
    assert fields["what"] in ("test", "coordinator")
    assert len(fields["tasks"]) == 1 and fields["tasks"][0].startswith("refuser: <coroutine")
    await refuser.release()


@pytest.mark.parametrize("stop", STOPPERS.values(), ids=STOPPERS.keys())
async def test_the_callers_own_cancellation_is_raised(stop: StopFn) -> None:
    refuser = Refuser()
    await asyncio.sleep(0)
    stopping = asyncio.create_task(stop([refuser.task]))
    await _turns(3)  # it waits for the refuser
    stopping.cancel()
    done, _ = await asyncio.wait({stopping}, timeout=LIVENESS_S)
    await refuser.release()
    await asyncio.wait({stopping}, timeout=LIVENESS_S)
    assert done, "the caller's cancellation was swallowed: it went on waiting"
    assert stopping.cancelled()


@pytest.mark.parametrize("turns", range(6))
async def test_the_callers_cancellation_as_the_tasks_end_is_raised(turns: int) -> None:
    # Every turn from before the helper starts to after it returned: the caller's
    # cancellation is raised unless the helper had returned already.
    async def ends_when_cancelled() -> None:
        await asyncio.Event().wait()

    task = asyncio.create_task(ends_when_cancelled())
    await asyncio.sleep(0)
    stopping = asyncio.create_task(cancel_and_wait([task], within=LIVENESS_S))
    await _turns(turns)
    returned_already = stopping.done()
    stopping.cancel()
    done, _ = await asyncio.wait({stopping}, timeout=LIVENESS_S)
    assert done
    assert stopping.cancelled() != returned_already
    if turns == 0:  # cancelled before it ran: it cancelled nothing
        assert not task.done()
        task.cancel()
    ended, _ = await asyncio.wait({task}, timeout=LIVENESS_S)
    assert ended and task.cancelled()
