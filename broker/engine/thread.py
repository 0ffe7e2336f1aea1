"""Run a `Cluster` on its own event loop in a background thread.

Synchronous callers -- blocking Kafka clients in tests, scripts, a REPL -- cannot share an
event loop with the brokers they talk to: a blocking `list_topics()` would stall the very
loop that must answer it. `EngineThread` gives the cluster a private loop in a daemon
thread; `start()` returns once every broker is registered, `call()` runs a coroutine on
that loop and returns its result, and `stop()` shuts everything down.

Deliberately not here: any cluster behaviour (see `zkbroker.broker.engine.engine`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, Self, TypeVar

from zkbroker.broker.asyncutil import StartStop
from zkbroker.broker.engine.engine import ClusterEngine
from zkbroker.broker.hooks.capture import CapturedRequest, RequestCapture
from zkbroker.broker.hooks.faults import SyncFaults
from zkbroker.broker.settings import Settings

T = TypeVar("T")


class EngineThread(StartStop):
    def __init__(self, settings: Settings) -> None:
        self.cluster = ClusterEngine(settings)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name="zkbroker-cluster", daemon=True)
        self._started = False

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def start(self, timeout: float = 60.0) -> Self:
        self._thread.start()
        try:
            self.call(self.cluster.start(), timeout=timeout)
        except BaseException:
            self._shutdown_loop()
            raise
        self._started = True
        return self

    def stop(self, timeout: float = 60.0) -> None:
        if self._thread.is_alive():
            try:
                self.call(self.cluster.stop(), timeout=timeout)
            finally:
                self._shutdown_loop()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = 60.0) -> T:
        """Run `coro` on the cluster's loop and wait for its result."""
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout)

    def run_sync(self, fn: Callable[[], T], timeout: float | None = 60.0) -> T:
        """Run a plain function on the cluster's loop (to read state consistently)."""

        async def wrapper() -> T:
            return fn()

        return self.call(wrapper(), timeout)

    def _shutdown_loop(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()

    def stop_broker(self, broker_id: int, timeout: float = 60.0) -> None:
        """`Cluster.stop_broker` from a synchronous caller; returns once it is stopped."""
        self.call(self.cluster.stop_broker(broker_id), timeout=timeout)

    def start_broker(self, broker_id: int, timeout: float = 60.0) -> None:
        """`Cluster.start_broker` from a synchronous caller; returns once it is registered."""
        self.call(self.cluster.start_broker(broker_id), timeout=timeout)

    def capture(self) -> RequestCapture:
        """`Cluster.capture` from a synchronous caller: capture requests from now on."""
        return self.run_sync(self.cluster.capture)

    def requests(
        self,
        api: str | None = None,
        client_id: str | None = None,
        broker_id: int | None = None,
        version: int | None = None,
    ) -> list[CapturedRequest]:
        """`Cluster.requests` from a synchronous caller (read on the cluster's loop)."""
        return self.run_sync(
            lambda: self.cluster.requests(
                api=api, client_id=client_id, broker_id=broker_id, version=version
            )
        )

    @property
    def faults(self) -> SyncFaults:
        """`Cluster.faults` from a synchronous caller (see `zkbroker.broker.hooks.faults`)."""
        return SyncFaults(self.cluster.faults, self)

    @property
    def bootstrap_servers(self) -> str:
        return self.cluster.bootstrap_servers

    @property
    def zookeeper_connect(self) -> str:
        return self.cluster.zookeeper_connect
