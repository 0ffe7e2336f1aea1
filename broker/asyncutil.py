"""Cooperative slicing of long loops on the one event loop every broker of a process shares,
plus small helpers every layer may use.

Kafka runs requests on handler threads, so a heavy one delays nobody; here a loop that runs for
seconds without awaiting stalls every client of every broker. So work that grows with a request
runs in slices of `SLICE_S`: `Pacer` for hand-written loops (`if pacer.due(): await
pacer.pause()`), `collect` for an iterable, `gather_bounded` for many awaitables (at most
`limit` at once, so one loop iteration never runs thousands of first steps), and `gc_paused`
keeps the cyclic collector off while a large request's objects live. Also: `now_ms()` (Kafka's
`time.milliseconds()`), `StartStop`/`AsyncStartStop` (`with`/`async with` over start and stop),
and `EagerRunner` (coroutines whose first step runs at once, inside a task, as Python 3.12's
eager tasks do: a request answered without waiting is answered in the callback that read it).
Waiting and stopping that never lose a cancellation: `wait_for` (what `asyncio.wait_for` is from
Python 3.12; every bounded wait of zkbroker uses it) and `cancel_and_wait` (cancel tasks and
wait for them within a bound; what did not end is logged, the caller's own cancellation raised).

Not here: threads or processes (the work stays on the loop, in order), limits on total work
(validation refuses what cannot succeed first), anything that knows Kafka. Imports nothing of
zkbroker but its logging.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import gc
import threading
import time
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Generic, Self, TypeVar

from zkbroker.broker.log import get_logger

T = TypeVar("T")

#: Longest stretch of work between two yields to the loop (seconds).
SLICE_S: Final = 0.005
#: Items between two looks at the clock.
CHECK_EVERY: Final = 64
#: Awaitables running at once in `gather_bounded`.
GATHER_LIMIT: Final = 256
#: How long `cancel_and_wait` waits for cancelled tasks to end (seconds): a task that honours
#: its cancellation ends within a loop turn or two; one still running after this is stuck.
CANCEL_WAIT_S: Final = 5.0

_log = get_logger(__name__)


def now_ms() -> int:
    """The wall clock in whole milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


# The collector is one per process, and so is the count of the blocks that paused it: the
# loops of several clusters in one process (each in its own thread) share both, so the count
# and the switch change together under one lock.
_gc_pauses = 0
_gc_lock = threading.Lock()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Keep the cyclic collector off for the block (refcounting still frees everything
    acyclic, which is what decoded requests and answers are). Only where the collector was
    on to begin with is it turned back on, by the last block to end, in whichever thread."""
    global _gc_pauses
    with _gc_lock:
        if _gc_pauses == 0 and not gc.isenabled():
            counted = False  # someone else turned it off; leave it to them
        else:
            counted = True
            _gc_pauses += 1
            gc.disable()
    try:
        yield
    finally:
        if counted:
            with _gc_lock:
                _gc_pauses -= 1
                if _gc_pauses == 0:
                    gc.enable()


class Pacer:
    """Tells a loop when its slice is used up; `pause()` yields to the loop and starts the
    next slice."""

    __slots__ = ("_count", "_deadline", "_slice_s", "pauses")

    def __init__(self, slice_s: float = SLICE_S) -> None:
        self._slice_s = slice_s
        self._deadline = time.perf_counter() + slice_s
        self._count = 0
        #: How many times the loop yielded (tests and logs).
        self.pauses = 0

    def due(self) -> bool:
        """True when the current slice is used up (checked every `CHECK_EVERY` calls)."""
        self._count += 1
        if self._count < CHECK_EVERY:
            return False
        self._count = 0
        return time.perf_counter() >= self._deadline

    async def pause(self) -> None:
        """Let the loop run everything else that is ready, then start a new slice."""
        await asyncio.sleep(0)
        self.pauses += 1
        self._count = 0
        self._deadline = time.perf_counter() + self._slice_s


async def collect(items: Iterable[T], pacer: Pacer | None = None) -> list[T]:
    """`list(items)`, yielding to the loop between slices of the iteration."""
    pacer = pacer or Pacer()
    result: list[T] = []
    append = result.append
    for item in items:
        append(item)
        if pacer.due():
            await pacer.pause()
    return result


async def gather_bounded(
    aws: Iterable[Awaitable[T]],
    limit: int = GATHER_LIMIT,
    *,
    return_exceptions: bool = False,
    stagger: bool = False,
) -> list[Any]:
    """Results in order, as `asyncio.gather(*aws, return_exceptions=...)` gives them, with at
    most `limit` awaitables running at once. Without `return_exceptions` the first exception
    cancels what is still running and is raised; awaitables not started are closed.

    `stagger`: each awaitable is started in a loop iteration of its own, for awaitables
    whose first step is milliseconds of work (encoding 500 partition states into one
    ZooKeeper multi): unstaggered, `limit` of those first steps run back to back."""
    items = list(aws)
    results: list[Any] = [None] * len(items)
    running: dict[asyncio.Future[Any], int] = {}
    next_index = 0
    failure: BaseException | None = None
    try:
        while next_index < len(items) or running:
            while next_index < len(items) and len(running) < limit:
                running[asyncio.ensure_future(items[next_index])] = next_index
                next_index += 1
                if stagger:
                    await asyncio.sleep(0)  # its first step runs now, then the next start
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                index = running.pop(future)
                if future.cancelled():
                    error: BaseException | None = asyncio.CancelledError()
                else:
                    error = future.exception()
                if error is None:
                    results[index] = future.result()
                elif return_exceptions:
                    results[index] = error
                elif failure is None:
                    failure = error
            if failure is not None:
                raise failure
    except BaseException:
        for future in running:
            future.cancel()
        for aw in items[next_index:]:
            close = getattr(aw, "close", None)
            if close is not None:
                close()
        raise
    return results


async def wait_for(aw: Awaitable[T], timeout: float | None) -> T:
    """`await aw`, raising TimeoutError once `timeout` seconds passed (None: no limit): what
    `asyncio.wait_for` is from Python 3.12 on, for 3.11 too.

    Python 3.11's `asyncio.wait_for` runs `aw` in a task of its own; when the caller is
    cancelled in the loop turn in which that task completes, it returns the result and the
    cancellation is lost (CPython gh-86296; 3.12 rebuilt `wait_for` on `asyncio.timeout`). A
    loop around it, woken often, can then never end. Here `aw` runs in the caller's own task
    under `asyncio.timeout`, which tells its own cancellation from any other by the task's
    cancel count (`Task.uncancel`): a cancellation always reaches the caller, even one that
    arrives together with the timeout or with `aw`'s completion."""
    async with asyncio.timeout(timeout):
        return await aw


async def cancel_and_wait(
    tasks: Iterable[asyncio.Future[Any]],
    *,
    within: float | None = None,
    what: str = "tasks",
    log: Any = None,
) -> list[asyncio.Future[Any]]:
    """Cancel the tasks, then wait for them to end, `within` seconds at most; how each ended
    (cancelled, failed, returned) is its own affair and is dropped. Returns the tasks still
    running at the deadline, after logging them as `tasks.did_not_end` (`what` says whose
    tasks, with each one's name and coroutine): they stay cancelled and the caller goes on
    without them, so a task that swallowed its cancellation cannot hold a stop forever.

    The caller's own cancellation is never swallowed: if the caller is cancelled while it
    waits here, CancelledError is raised at once (`asyncio.wait` raises nothing of the tasks'
    own outcomes, so a CancelledError out of it is the caller's), the tasks left cancelled.
    `within` defaults to `CANCEL_WAIT_S`; `log` is a bound logger for the event (default:
    this module's)."""
    if within is None:
        within = CANCEL_WAIT_S
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    pending = {task for task in tasks if not task.done()}
    try:
        if pending:
            _done, pending = await asyncio.wait(pending, timeout=within)
    finally:
        for task in tasks:
            if task.done():
                _drop_outcome(task)
            else:
                task.add_done_callback(_drop_outcome)
    if not pending:
        return []
    stuck = [task for task in tasks if task in pending]
    (log or _log).error(
        "tasks.did_not_end",
        what=what,
        seconds=within,
        tasks=[_describe(task) for task in stuck],
    )
    return stuck


def _drop_outcome(task: asyncio.Future[Any]) -> None:
    """Retrieve a finished task's exception, so asyncio does not report it as never retrieved."""
    if not task.cancelled():
        task.exception()


def _describe(task: asyncio.Future[Any]) -> str:
    if isinstance(task, asyncio.Task):
        return f"{task.get_name()}: {task.get_coro()!r}"
    return repr(task)


class StartStop(abc.ABC):
    """`with obj:` for an object a user starts and stops (a cluster, its engine thread, the
    embedded ZooKeeper): enter starts it, exit stops it, whatever ended the block."""

    @abc.abstractmethod
    def start(self) -> Self: ...

    @abc.abstractmethod
    def stop(self) -> None: ...

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class AsyncStartStop(abc.ABC):
    """`async with obj:` over `astart` and `astop`, as `StartStop` is over start and stop."""

    @abc.abstractmethod
    async def astart(self) -> Self: ...

    @abc.abstractmethod
    async def astop(self) -> None: ...

    async def __aenter__(self) -> Self:
        return await self.astart()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.astop()


@dataclass(frozen=True, slots=True)
class Finished(Generic[T]):
    """What `EagerRunner.run` returns for a coroutine that finished in its first step."""

    value: T


class EagerRunner(Generic[T]):
    """Runs coroutines one at a time, each one's first step at once in the caller's callback
    (a protocol's `data_received`), as Python 3.12's eager tasks do, so one that needs no
    waiting costs no task and no extra turn of the loop.

    The runner owns one long-lived task. It is the current task during every first step, so
    `asyncio.current_task()`, `asyncio.timeout` and cancellation see a real task; and when a
    coroutine first waits, that same task goes on with it (asyncio's own `_enter_task` and
    `_leave_task` mark it current, as the eager-task implementation does). `run` returns
    `Finished(value)` when the coroutine returned in its first step (its exception is raised
    there), else None: `on_done` then gets the task's outcome (value or exception) later.
    `close()` cancels what is running. Call `run` only between two coroutines, never from
    inside a task.
    """

    def __init__(self, on_done: Callable[[T | None, BaseException | None], None]) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._on_done = on_done
        self._handoff: asyncio.Future[_FirstStep] = loop.create_future()
        self._task = loop.create_task(self._go_on())

    def run(self, coro: Coroutine[Any, Any, T]) -> Finished[T] | None:
        loop, task = self._loop, self._task
        try:
            asyncio.tasks._enter_task(loop, task)  # RuntimeError from inside another task
        except RuntimeError:
            coro.close()
            raise
        try:
            yielded = coro.send(None)
        except StopIteration as done:
            return Finished(done.value)
        finally:
            asyncio.tasks._leave_task(loop, task)
        self._handoff.set_result(_FirstStep(coro, yielded))
        return None

    def close(self) -> None:
        if self._handoff.done():  # handed over, not yet taken up: close it here
            self._handoff.result().coro.close()
        self._task.cancel()

    async def _go_on(self) -> None:
        while True:
            step = await self._handoff
            self._handoff = self._loop.create_future()
            try:
                value = await _drive(step)
            except asyncio.CancelledError:
                raise
            except BaseException as e:  # the caller's to report
                self._loop.call_soon(self._on_done, None, e)
            else:
                # Soon, not now: `on_done` may `run` the next coroutine, which must not start
                # inside this task.
                self._loop.call_soon(self._on_done, value, None)


class _FirstStep:
    """A coroutine whose first step `EagerRunner.run` ran, and what that step yielded."""

    __slots__ = ("coro", "yielded")

    def __init__(self, coro: Coroutine[Any, Any, Any], yielded: Any) -> None:
        self.coro = coro
        self.yielded = yielded


@types.coroutine
def _drive(step: _FirstStep) -> Generator[Any, Any, Any]:
    """Hand what the coroutine yields to the task, and the task's answers back to it (what
    `await` does, from the second step on)."""
    coro, yielded = step.coro, step.yielded
    try:
        while True:
            try:
                sent = yield yielded
            except BaseException as exc:  # a failed future, or the task being cancelled
                try:
                    yielded = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    yielded = coro.send(sent)
                except StopIteration as done:
                    return done.value
    finally:
        coro.close()  # a no-op once it has finished
