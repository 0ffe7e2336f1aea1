"""`EagerRunner` (zkbroker.broker.asyncutil): a coroutine's first step runs in the caller's
callback, inside the runner's task; one that waits goes on in that task."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from zkbroker.broker.asyncutil import EagerRunner, Finished

Outcome = tuple[Any, BaseException | None]


def _in_callback(fn: Callable[[], Any]) -> asyncio.Future[Any]:
    """Run `fn` from a plain loop callback (as a protocol's data_received), not in a task."""
    loop = asyncio.get_running_loop()
    result: asyncio.Future[Any] = loop.create_future()

    def call() -> None:
        try:
            result.set_result(fn())
        except BaseException as e:
            result.set_exception(e)

    loop.call_soon(call)
    return result


async def _runner() -> tuple[EagerRunner[Any], asyncio.Queue[Outcome]]:
    outcomes: asyncio.Queue[Outcome] = asyncio.Queue()
    runner: EagerRunner[Any] = EagerRunner(lambda v, e: outcomes.put_nowait((v, e)))
    return runner, outcomes


async def test_a_coroutine_that_does_not_wait_finishes_in_the_callback_inside_the_task() -> None:
    runner, outcomes = await _runner()
    seen: list[asyncio.Task[Any] | None] = []

    async def quick() -> str:
        seen.append(asyncio.current_task())
        return "done"

    assert await _in_callback(lambda: runner.run(quick())) == Finished("done")
    assert seen[0] is not None and not seen[0].done()  # the runner's task, current meanwhile
    assert asyncio.current_task() is not seen[0]
    assert outcomes.empty()
    runner.close()


async def test_a_coroutine_that_waits_goes_on_in_the_same_task_with_timeouts() -> None:
    runner, outcomes = await _runner()
    tasks: list[asyncio.Task[Any] | None] = []

    async def slow() -> str:
        tasks.append(asyncio.current_task())
        async with asyncio.timeout(5):  # needs a task from the first step on
            await asyncio.sleep(0.01)
            tasks.append(asyncio.current_task())
            await asyncio.sleep(0)
        return "slow"

    assert await _in_callback(lambda: runner.run(slow())) is None
    assert await asyncio.wait_for(outcomes.get(), 5) == ("slow", None)
    assert tasks[0] is tasks[1]
    # The runner takes the next coroutine once the first is done.
    assert await _in_callback(lambda: runner.run(slow())) is None
    assert await asyncio.wait_for(outcomes.get(), 5) == ("slow", None)
    runner.close()


async def test_exceptions_reach_the_caller_or_on_done() -> None:
    runner, outcomes = await _runner()

    async def fails_at_once() -> None:
        raise ValueError("first step")

    async def fails_later() -> None:
        await asyncio.sleep(0)
        raise KeyError("later")

    with pytest.raises(ValueError, match="first step"):
        await _in_callback(lambda: runner.run(fails_at_once()))
    assert await _in_callback(lambda: runner.run(fails_later())) is None
    value, error = await asyncio.wait_for(outcomes.get(), 5)
    assert value is None and isinstance(error, KeyError)
    runner.close()


async def _waits_forever(cleaned: asyncio.Event) -> None:
    try:
        await asyncio.Event().wait()
    finally:
        cleaned.set()


async def test_close_cancels_a_waiting_coroutine() -> None:
    runner, outcomes = await _runner()
    cleaned = asyncio.Event()
    assert await _in_callback(lambda: runner.run(_waits_forever(cleaned))) is None
    await asyncio.sleep(0.01)  # taken up by the task
    runner.close()
    await asyncio.wait_for(cleaned.wait(), 5)
    assert outcomes.empty()


async def test_close_before_the_task_takes_a_coroutine_up_still_closes_it() -> None:
    runner, _ = await _runner()
    cleaned = asyncio.Event()

    def run_and_close() -> None:
        assert runner.run(_waits_forever(cleaned)) is None
        runner.close()  # in the same callback: the task has not run yet

    await _in_callback(run_and_close)
    await asyncio.wait_for(cleaned.wait(), 5)


async def test_run_from_inside_a_task_is_refused_and_closes_the_coroutine() -> None:
    runner, _ = await _runner()

    async def never() -> None:  # pragma: no cover - closed before it starts
        raise AssertionError

    coro = never()
    with pytest.raises(RuntimeError):
        runner.run(coro)  # this test is a task
    assert coro.cr_frame is None  # closed, so no "never awaited" warning
    runner.close()
