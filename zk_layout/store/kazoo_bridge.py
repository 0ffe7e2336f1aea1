"""The thread bridge between one kazoo client and one asyncio event loop. kazoo's synchronous
calls block, so every request goes through its ``*_async`` API: the ``IAsyncResult`` gets a
``rawlink`` callback on kazoo's completion thread that hands the outcome to the loop
(``call_on_loop``, replies drained in slices of a few milliseconds). Nothing waits for a reply
before sending the next request, so requests pipeline on the one session, answered in order.
Batches (``submit``) are queued with ONE wake-up of kazoo's connection thread, written by a small
waker thread: one wake-up per request is a GIL hand-off each, and ten thousand of them stalled
every broker of the process for seconds. ``many`` reads thousands of nodes in windows.

Deliberately not here: which requests are sent (``client``), error classes (``kazoo_errors``),
connecting and closing the kazoo session, retries.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from kazoo import exceptions as kazoo_exc
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

from zkbroker.zk_layout.store.kazoo_errors import translate

log = logging.getLogger(__name__)

T = TypeVar("T")

# Reads in flight per window of get_many/get_children_many.
READ_WINDOW: Final = 5000
# Longest stretch of replies handled in one loop iteration (seconds).
DRAIN_SLICE_S: Final = 0.005


@dataclass
class _Window:
    """A window of batched reads sent to kazoo: (index, kazoo async result) pairs, and a
    future set on the loop once the last of them is settled."""

    pending: list[tuple[int, Any]]
    last_settled: asyncio.Future[None]


class KazooBridge:
    """Runs kazoo requests for one event loop; ``stop`` ends its waker thread."""

    def __init__(self, client: KazooClient, loop: asyncio.AbstractEventLoop) -> None:
        self.client = client
        self.loop = loop
        self._stopped = False
        self._pending_lock = threading.Lock()
        self._pending: collections.deque[tuple[Callable[..., None], tuple[Any, ...]]] = (
            collections.deque()
        )
        self._drain_scheduled = False
        self._owed_wakeups = 0
        self._wake_lock = threading.Lock()
        self._wake_needed = threading.Event()
        self._waker = threading.Thread(target=self._wake_loop, name="zk-waker", daemon=True)
        self._waker.start()

    def stop(self) -> None:
        """Write the wake-ups owed (what is queued goes out before kazoo's close request) and
        end the waker thread."""
        self._stopped = True
        self.write_wakeups()
        self._wake_needed.set()

    # --- kazoo's threads -> the loop ---------------------------------------------------------

    def call_on_loop(self, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        """Run ``fn(*args)`` on the loop, in call order. Calls arriving while a drain is already
        scheduled join it, so a burst of replies costs one loop wake-up, not one each."""
        with self._pending_lock:
            self._pending.append((fn, args))
            if self._drain_scheduled:
                return
            self._drain_scheduled = True
        # A closed loop raises RuntimeError: nobody is listening any more.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._pending_lock:
            batch = self._pending
            self._pending = collections.deque()
            self._drain_scheduled = False
        # At most a slice of work per loop iteration: thousands of replies (and the watch
        # callbacks they run) must not hold the loop; the rest runs on the next iteration,
        # still before anything that arrived later.
        deadline = time.perf_counter() + DRAIN_SLICE_S
        count = 0
        while batch:
            fn, args = batch.popleft()
            try:
                fn(*args)
            except Exception:  # pragma: no cover - the functions queued here do not raise
                log.exception("callback on the event loop raised")
            count += 1
            if count % 64 == 0 and batch and time.perf_counter() >= deadline:
                with self._pending_lock:
                    batch.extend(self._pending)
                    self._pending = batch
                    if self._drain_scheduled:
                        return
                    self._drain_scheduled = True
                with contextlib.suppress(RuntimeError):
                    self.loop.call_soon(self._drain)
                return

    def future(self, async_result: Any, op: str, path: str | None) -> asyncio.Future[Any]:
        """A loop future of a kazoo async result: its value, or its exception translated."""
        fut: asyncio.Future[Any] = self.loop.create_future()

        def resolve(ok: bool, value: Any) -> None:
            if fut.done():
                return  # cancelled by the awaiting side
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(translate(value, op, path))

        def on_done(result: Any) -> None:
            if result.successful():
                self.call_on_loop(resolve, (True, result.value))
            else:
                self.call_on_loop(resolve, (False, result.exception))

        async_result.rawlink(on_done)
        return fut

    def settled(self, async_result: Any) -> asyncio.Future[None]:
        """A loop future done once kazoo has settled `async_result` (success or failure)."""
        settled: asyncio.Future[None] = self.loop.create_future()

        def settle() -> None:
            if not settled.done():
                settled.set_result(None)

        async_result.rawlink(lambda _: self.call_on_loop(settle, ()))
        return settled

    # --- the loop -> kazoo's connection thread -----------------------------------------------

    def submit(self, batch: list[tuple[Any, Any]]) -> None:
        """Hand kazoo a batch of requests with ONE wake-up of its connection thread.

        kazoo's own ``_call`` writes a wake-up byte per request, and each write hands the GIL
        to the connection thread and back: at controller-failover scale that hand-off, not
        ZooKeeper, is the cost. The connection thread sends one queued request per byte it
        reads, so queueing the batch and writing as many bytes at once is equivalent. This
        uses kazoo internals (``_queue``, ``_connection._write_sock``; stable through the
        2.x series pinned in pyproject); when they are missing or the session is not
        connected, each request goes through ``_call`` as usual. The bytes are written by
        the waker thread (`_wake_loop`), off the loop."""
        client = self.client
        write_sock = getattr(getattr(client, "_connection", None), "_write_sock", None)
        queue = getattr(client, "_queue", None)
        if write_sock is None or queue is None or client.state != KazooState.CONNECTED:
            for request, async_result in batch:
                client._call(request, async_result)
            return
        queue.extend(batch)
        # The requests are queued already, in order with everything else kazoo sends; the
        # wake-up bytes are written by the waker thread, so the loop never waits for the GIL
        # hand-off a socket write costs while kazoo's threads are busy.
        with self._wake_lock:
            self._owed_wakeups += len(batch)
        self._wake_needed.set()

    def _wake_loop(self) -> None:
        """The waker thread: writes the wake-up bytes `submit` owes kazoo's thread."""
        while True:
            self._wake_needed.wait()
            self._wake_needed.clear()
            self.write_wakeups()
            if self._stopped:
                return

    def write_wakeups(self) -> None:
        """Write the wake-up bytes owed so far (every queued request needs its byte, or kazoo
        never sends it nor anything queued after it, its close request included)."""
        with self._wake_lock:
            owed, self._owed_wakeups = self._owed_wakeups, 0
        connection = getattr(self.client, "_connection", None)
        write_sock = getattr(connection, "_write_sock", None)
        if owed and write_sock is not None:
            # Closed under us: kazoo fails whatever is still queued when it stops.
            with contextlib.suppress(OSError):
                write_sock.sendall(b"\0" * owed)

    # --- batched reads -----------------------------------------------------------------------

    async def many(
        self,
        paths: Sequence[str],
        request: Callable[[int], Any],
        convert: Callable[[Any], T],
        op: str,
    ) -> list[T | None]:
        """``request(i)`` for every index of ``paths``, pipelined in windows; ``convert`` of
        each reply in order, None where the node is absent; any other failure raised."""
        results: list[T | None] = [None] * len(paths)
        # Windows keep kazoo's queue (and the memory of its pending results) bounded and let
        # the loop breathe; two in flight keep ZooKeeper's pipeline full across a boundary.
        in_flight: collections.deque[_Window] = collections.deque()
        for start in range(0, len(paths), READ_WINDOW):
            window = range(start, min(start + READ_WINDOW, len(paths)))
            in_flight.append(self._send_window(window, request))
            if len(in_flight) >= 2:
                await self._collect_window(in_flight.popleft(), paths, convert, op, results)
        while in_flight:
            await self._collect_window(in_flight.popleft(), paths, convert, op, results)
        return results

    def _send_window(self, window: range, request: Callable[[int], Any]) -> _Window:
        pending = [(index, self.client.handler.async_result()) for index in window]
        batch = [(request(i), r) for i, r in pending]
        # ZooKeeper answers a session's requests in order, and kazoo settles them in order
        # (connection loss fails them in order too): once the last one is settled, all are.
        # One completion callback per window instead of one per read.
        last_settled = self.settled(pending[-1][1])
        self.submit(batch)
        return _Window(pending, last_settled)

    async def _collect_window(
        self,
        window: _Window,
        paths: Sequence[str],
        convert: Callable[[Any], T],
        op: str,
        results: list[T | None],
    ) -> None:
        await window.last_settled
        failure: tuple[int, BaseException] | None = None
        for index, async_result in window.pending:
            if not async_result.ready():  # not expected; never trade correctness for it
                await self.settled(async_result)
            if async_result.successful():
                results[index] = convert(async_result.value)
            elif not isinstance(async_result.exception, kazoo_exc.NoNodeError):
                failure = failure or (index, async_result.exception)
        if failure is not None:
            raise translate(failure[1], op, paths[failure[0]])
