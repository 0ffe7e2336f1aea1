"""Every stop that cancels tasks and waits for them is bounded and keeps the caller's own
cancellation (issue 41, item 8; `tests/unit/test_cancellation.py` has the helpers' tests).

A task that swallows its cancellation is planted where each stop looks for its tasks (no
ZooKeeper: nothing here starts the component). Its stop must return after `CANCEL_WAIT_S`
(shortened here), logging `tasks.did_not_end`, and a stop cancelled while it waits must raise
CancelledError at once. Before `asyncutil.cancel_and_wait` these stops waited unbounded (a
`gather`, or an await inside `suppress(CancelledError)`), and a cancelled stop went on waiting.
The controller's own task is stuck the real way: by a controller event that swallows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from zkbroker.broker import asyncutil
from zkbroker.broker.controller.controller import Controller, ControllerContext, ControllerElector
from zkbroker.broker.engine import engine
from zkbroker.broker.hooks.capture import RequestCapture
from zkbroker.broker.hooks.faults import FaultInjector
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.image.metadata_watcher import MetadataWatcher
from zkbroker.broker.log import get_logger
from zkbroker.broker.security.delegation_tokens import DelegationTokenManager, TokenConfig
from zkbroker.broker.security.oauthbearer import JwksOptions
from zkbroker.broker.security.oauthbearer_jwks import JwksKeys
from zkbroker.broker.server.hooks import HookChain
from zkbroker.broker.server.listener import BrokerServer
from zkbroker.broker.settings import Settings
from zkbroker.handlers.registry import ApiTable
from zkbroker.zk_layout import ZkStore
from zkbroker.zk_layout.release import Release

#: Deadline of every wait in these tests: liveness only, never a measurement.
LIVENESS_S = 5.0
#: `CANCEL_WAIT_S` while these tests run.
BOUND_S = 0.2

#: Nothing here may reach ZooKeeper: any use of this store fails the test.
NO_STORE = cast(ZkStore, None)


@pytest.fixture(autouse=True)
def short_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(asyncutil, "CANCEL_WAIT_S", BOUND_S)


class Refusing:
    """A coroutine function that swallows every cancellation until released."""

    def __init__(self) -> None:
        self.released = asyncio.Event()
        self.running = asyncio.Event()
        self.cancels = 0

    async def __call__(self, *_: Any) -> None:
        self.running.set()
        while not self.released.is_set():
            try:
                await self.released.wait()
            except asyncio.CancelledError:
                self.cancels += 1

    def task(self) -> asyncio.Task[None]:
        return asyncio.create_task(self(), name="refuser")


def _did_not_end(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [
        cast(dict[str, Any], r.msg) for r in caplog.records if "tasks.did_not_end" in r.getMessage()
    ]


async def _ends(task: asyncio.Task[Any]) -> bool:
    done, _ = await asyncio.wait({task}, timeout=LIVENESS_S)
    return bool(done)


# ---- the sites: each plants one task where its stop finds its tasks, returns the stop ------

Stop = Callable[[], Coroutine[Any, Any, Any]]


def _listener() -> BrokerServer:
    broker: Any = SimpleNamespace(broker_id=0)
    return BrokerServer(
        broker,
        cast(ApiTable, None),
        "127.0.0.1",
        0,
        max_request_bytes=1 << 20,
        listener_name="PLAINTEXT",
    )


def _listener_background(task: asyncio.Task[None]) -> Stop:
    server = _listener()
    server._background.append(task)
    return server.stop


def _listener_connection(task: asyncio.Task[None]) -> Stop:
    server = _listener()
    server._connections.add(task)
    return server.stop


def _fault_injector(task: asyncio.Task[None]) -> Stop:
    injector = FaultInjector(HookChain())
    injector._tasks.add(task)
    return injector.stop


def _metadata_watcher(task: asyncio.Task[None]) -> Stop:
    watcher = MetadataWatcher(NO_STORE, MetadataImage())
    watcher._starting.add(task)
    return watcher.stop


def _jwks(task: asyncio.Task[None]) -> Stop:
    keys = JwksKeys(JwksOptions(url="http://127.0.0.1:9/jwks"))
    keys._refresh_task = task
    return keys.stop


def _capture(task: asyncio.Task[None]) -> Stop:
    capture = RequestCapture()
    capture._writer = task
    return capture.aclose


def _delegation_tokens(task: asyncio.Task[None]) -> Stop:
    tokens = DelegationTokenManager(
        NO_STORE,
        TokenConfig(secret_key="secret"),
        cast(Release, Settings().kafka_version),
        is_controller=lambda: False,
        broker_id=0,
    )
    tokens._cleaner = task
    return tokens.stop


def _controller_election(task: asyncio.Task[None]) -> Stop:
    elector = ControllerElector(0, NO_STORE, Settings())
    elector._checks.add(task)
    return elector.stop


def _engine_sessions(task: asyncio.Task[None]) -> Stop:
    sessions = cast(asyncio.Task[list[ZkStore]], task)
    return lambda: engine._close_sessions(sessions, get_logger(__name__))


# name -> (plant, the `what` its stop logs)
SITES: dict[str, tuple[Callable[[asyncio.Task[None]], Stop], str]] = {
    "listener background": (_listener_background, "listener"),
    "listener connection": (_listener_connection, "connections"),
    "fault injector": (_fault_injector, "faults"),
    "metadata watcher": (_metadata_watcher, "metadata_watcher"),
    "oauthbearer jwks": (_jwks, "oauthbearer_jwks"),
    "request capture": (_capture, "capture"),
    "delegation tokens": (_delegation_tokens, "delegation_tokens"),
    "controller election": (_controller_election, "controller_election"),
    "engine sessions": (_engine_sessions, "zookeeper_sessions"),
}


@pytest.mark.parametrize("site", SITES.values(), ids=SITES.keys())
async def test_a_task_that_refuses_to_end_does_not_hold_the_stop(
    site: tuple[Callable[[asyncio.Task[None]], Stop], str], caplog: pytest.LogCaptureFixture
) -> None:
    plant, what = site
    refusing = Refusing()
    task = refusing.task()
    await refusing.running.wait()
    stopping = asyncio.create_task(plant(task)())
    try:
        assert await _ends(stopping), "the stop waits for a task that never ends"
        stopping.result()
        assert refusing.cancels >= 1 and not task.done()
        (fields,) = _did_not_end(caplog)
        assert fields["what"] == what and fields["seconds"] == BOUND_S
        assert [t.split(":")[0] for t in fields["tasks"]] == ["refuser"]
    finally:
        refusing.released.set()
        await _ends(stopping)
        await _ends(task)


@pytest.mark.parametrize("site", SITES.values(), ids=SITES.keys())
async def test_a_stop_cancelled_while_it_waits_raises_the_cancellation(
    site: tuple[Callable[[asyncio.Task[None]], Stop], str],
) -> None:
    plant, _ = site
    refusing = Refusing()
    task = refusing.task()
    await refusing.running.wait()
    stopping = asyncio.create_task(plant(task)())
    try:
        await asyncio.sleep(BOUND_S / 4)  # it waits for the refusing task
        assert not stopping.done()
        stopping.cancel()
        assert await _ends(stopping), "the caller's cancellation was swallowed"
        assert stopping.cancelled()
    finally:
        refusing.released.set()
        await _ends(stopping)
        await _ends(task)


async def test_the_request_capture_writes_and_closes_its_file_when_its_stop_is_cancelled(
    tmp_path: Path,
) -> None:
    capture = RequestCapture(tmp_path / "capture.jsonl")
    capture.open()
    refusing = Refusing()
    capture._writer = refusing.task()
    await refusing.running.wait()
    stopping = asyncio.create_task(capture.aclose())
    try:
        await asyncio.sleep(BOUND_S / 4)
        stopping.cancel()
        assert await _ends(stopping) and stopping.cancelled()
        assert capture._file is None
    finally:
        refusing.released.set()
        await _ends(stopping)


async def test_the_fault_injector_releases_held_requests_when_its_stop_is_cancelled() -> None:
    injector = FaultInjector(HookChain())
    held = SimpleNamespace(released=asyncio.Event())
    injector._cache[1] = cast(Any, held)
    refusing = Refusing()
    injector._tasks.add(refusing.task())
    await refusing.running.wait()
    stopping = asyncio.create_task(injector.stop())
    try:
        await asyncio.sleep(BOUND_S / 4)
        stopping.cancel()
        assert await _ends(stopping) and stopping.cancelled()
        assert held.released.is_set() and not injector._cache
    finally:
        refusing.released.set()
        await _ends(stopping)


# ---- the controller: an event that swallows its cancellation -----------------------------------


async def _controller_in(event: Refusing) -> Controller:
    """A controller whose event loop runs `event` (no failover: nothing reaches the store)."""
    controller = Controller(ControllerContext(0, 1, 0), NO_STORE, Settings())
    controller._task = asyncio.create_task(controller._run(), name="controller-0")
    controller.submit("Refusing", event)
    await event.running.wait()
    return controller


async def test_controller_stop_ends_when_an_event_refuses_its_cancellation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    event = Refusing()
    controller = await _controller_in(event)
    task = controller._task
    assert task is not None
    rebalance = asyncio.create_task(asyncio.sleep(60))
    controller._rebalance = rebalance
    stopping = asyncio.create_task(controller.stop())
    try:
        assert await _ends(stopping), "the controller's stop waits for an event that never ends"
        stopping.result()
        assert controller.moved.is_set() and event.cancels >= 1
        assert rebalance.cancelled() and not task.done()
        (fields,) = _did_not_end(caplog)
        assert fields["what"] == "controller" and fields["seconds"] == BOUND_S
        assert [t.split(":")[0] for t in fields["tasks"]] == ["controller-0"]
    finally:
        event.released.set()
        await _ends(stopping)
    assert await _ends(task)  # released, the event returns and the halted loop ends


async def test_controller_stop_cancelled_while_it_waits_raises_the_cancellation() -> None:
    event = Refusing()
    controller = await _controller_in(event)
    stopping = asyncio.create_task(controller.stop())
    try:
        await asyncio.sleep(BOUND_S / 4)  # it waits for the controller task
        assert not stopping.done()
        stopping.cancel()
        assert await _ends(stopping), "the caller's cancellation was swallowed"
        assert stopping.cancelled()
    finally:
        event.released.set()
        await _ends(stopping)


async def test_controller_stop_of_a_cooperative_controller_logs_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    controller = Controller(ControllerContext(0, 1, 0), NO_STORE, Settings())
    controller._task = asyncio.create_task(controller._run())
    controller._rebalance = asyncio.create_task(asyncio.sleep(60))
    await asyncio.sleep(0)
    task, rebalance = controller._task, controller._rebalance
    async with asyncio.timeout(LIVENESS_S):
        await controller.stop()
    assert task.cancelled() and rebalance.cancelled()
    assert controller._task is None and controller._rebalance is None
    assert not _did_not_end(caplog)


async def test_the_elector_resigns_a_controller_whose_event_refuses_to_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The broker-stop path: the elector's stop resigns, which stops the controller.
    event = Refusing()
    elector = ControllerElector(0, NO_STORE, Settings())
    elector.controller = await _controller_in(event)
    stopping = asyncio.create_task(elector.stop())
    try:
        assert await _ends(stopping), "the elector's stop waits for an event that never ends"
        stopping.result()
        assert elector.controller is None
        assert [f["what"] for f in _did_not_end(caplog)] == ["controller"]
    finally:
        event.released.set()
        await _ends(stopping)
