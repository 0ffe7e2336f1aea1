"""The change-notification listener (``zkbroker.zk_layout.store.change_notifications``, Kafka's
ZkNodeChangeNotificationListener) over an in-memory folder: order, the starting point, the two
failure rules and the two purge rules."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

import pytest

from zkbroker.zk_layout.errors import NoNodeError
from zkbroker.zk_layout.store import (
    CHANGE_EXPIRATION_MS,
    ChangeNotificationListener,
    Purge,
    change_notifications,
)

FOLDER = "/config/changes"
PREFIX = "config_change_"
NOW_MS = 10 * CHANGE_EXPIRATION_MS
OLD = NOW_MS - CHANGE_EXPIRATION_MS - 1  # a ctime already past the expiration
FRESH = NOW_MS - 1


class FakeFolder:
    """The store calls the listener makes, over one folder of ``(data, ctime)`` children."""

    def __init__(self) -> None:
        self.children: dict[str, tuple[bytes, int]] = {}
        self.watchers: list[Callable[[list[str] | None], object]] = []
        self.failing_reads: set[str] = set()
        self.deleted: list[str] = []
        self.reads: list[str] = []

    def add(self, sequence: int, data: bytes, ctime: int = FRESH, *, notify: bool = True) -> str:
        name = f"{PREFIX}{sequence:010d}"
        self.children[name] = (data, ctime)
        if notify:
            self._notify()
        return name

    def _notify(self) -> None:
        for callback in self.watchers:
            callback(list(self.children))

    async def get_children(self, path: str) -> list[str] | None:
        assert path == FOLDER
        return list(self.children)

    async def get(self, path: str) -> tuple[bytes, Any] | None:
        self.reads.append(path)
        name = path.rsplit("/", 1)[1]
        if name in self.failing_reads:
            raise ConnectionError(f"cannot read {name}")
        got = self.children.get(name)
        return None if got is None else (got[0], SimpleNamespace(ctime=got[1]))

    async def delete(self, path: str) -> None:
        name = path.rsplit("/", 1)[1]
        if self.children.pop(name, None) is None:
            raise NoNodeError(path)
        self.deleted.append(name)
        self._notify()

    async def watch_children(
        self, path: str, callback: Callable[[list[str] | None], object]
    ) -> Any:
        assert path == FOLDER
        self.watchers.append(callback)
        callback(list(self.children))
        return SimpleNamespace(cancel=lambda: self.watchers.remove(callback))


class Events:
    """A structlog-like logger that keeps ``(level, event, fields)``."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def info(self, event: str, **fields: Any) -> None:
        self.lines.append(("info", event, fields))

    def warning(self, event: str, **fields: Any) -> None:
        self.lines.append(("warning", event, fields))

    def error(self, event: str, **fields: Any) -> None:
        self.lines.append(("error", event, fields))

    def exception(self, event: str, **fields: Any) -> None:
        self.lines.append(("exception", event, fields))


class Recorder:
    """A handler naming what the notification holds (``b"-"``: nothing), and a flush."""

    def __init__(self, fail_on: bytes | None = None) -> None:
        self.seen: list[tuple[str, bytes]] = []
        self.flushes: list[list[str]] = []
        self.fail_on = fail_on

    async def handle(self, path: str, data: bytes) -> str | None:
        if data == self.fail_on:
            raise ValueError("bad notification")
        self.seen.append((path, data))
        return None if data == b"-" else data.decode()

    async def flush(self, names: list[str]) -> None:
        self.flushes.append(names)


@pytest.fixture(autouse=True)
def _now(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wall clock the listener ages notifications by, stopped at NOW_MS."""
    monkeypatch.setattr(change_notifications, "_wall_clock_ms", lambda: NOW_MS)


def _listener(
    folder: FakeFolder, recorder: Recorder, events: Events, **options: Any
) -> ChangeNotificationListener:
    return ChangeNotificationListener(
        cast(Any, folder),
        FOLDER,
        PREFIX,
        recorder.handle,
        log=events,
        failed_event="test.failed",
        **options,
    )


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_replays_present_notifications_in_sequence_order_then_only_new_ones() -> None:
    folder, recorder, events = FakeFolder(), Recorder(), Events()
    folder.add(10, b"ten", notify=False)
    folder.add(9, b"nine", notify=False)
    folder.children["not_a_notification"] = (b"x", FRESH)
    listener = _listener(folder, recorder, events)
    await listener.start()
    await _settle()
    assert [d for _, d in recorder.seen] == [b"nine", b"ten"]
    assert recorder.seen[0][0] == f"{FOLDER}/{PREFIX}0000000009"
    assert listener.last_executed == 10
    folder.add(11, b"eleven")
    await _settle()
    assert [d for _, d in recorder.seen] == [b"nine", b"ten", b"eleven"]
    assert folder.deleted == [] and events.lines == []
    await listener.stop()
    folder.add(12, b"after stop")
    await _settle()
    assert len(recorder.seen) == 3


async def test_flush_runs_once_per_pass_with_what_the_new_notifications_name() -> None:
    folder, recorder, events = FakeFolder(), Recorder(), Events()
    for sequence, data in enumerate([b"b", b"a", b"-", b"b"]):
        folder.add(sequence, data, notify=False)
    listener = _listener(folder, recorder, events, flush=recorder.flush)
    await listener.start()
    await _settle()
    assert recorder.flushes == [["b", "a"]]  # each once, in order; "-" names nothing
    folder.watchers[0](list(folder.children))  # a delivery with nothing new: no flush
    await _settle()
    assert recorder.flushes == [["b", "a"]]
    folder.add(7, b"-")
    await _settle()
    assert recorder.flushes == [["b", "a"], []]
    await listener.stop()


async def test_a_notification_deleted_meanwhile_is_skipped_and_counted_as_processed() -> None:
    folder, recorder, events = FakeFolder(), Recorder(), Events()
    name = folder.add(1, b"gone", notify=False)
    listener = _listener(folder, recorder, events)
    await listener.start()  # the first delivery named it; the pass has not read it yet
    del folder.children[name]
    await _settle()
    assert recorder.seen == [] and listener.last_executed == 1
    await listener.stop()


async def test_a_failed_read_stops_the_pass_and_the_next_change_retries() -> None:
    folder, recorder, events = FakeFolder(), Recorder(), Events()
    folder.add(1, b"a", notify=False)
    bad = folder.add(2, b"b", notify=False)
    folder.failing_reads.add(bad)
    listener = _listener(folder, recorder, events)
    await listener.start()
    await _settle()
    assert recorder.seen == [] and listener.last_executed == -1
    assert [(level, event) for level, event, _ in events.lines] == [("exception", "test.failed")]
    folder.failing_reads.clear()
    folder.add(3, b"c")
    await _settle()
    assert [d for _, d in recorder.seen] == [b"a", b"b", b"c"]
    await listener.stop()


async def test_skip_failed_logs_the_failed_notification_and_goes_on() -> None:
    folder, recorder, events = FakeFolder(), Recorder(fail_on=b"bad"), Events()
    folder.add(1, b"a", OLD, notify=False)
    unreadable = folder.add(2, b"unreadable", OLD, notify=False)
    folder.failing_reads.add(unreadable)
    bad = folder.add(3, b"bad", OLD, notify=False)
    folder.add(4, b"d", OLD, notify=False)
    listener = _listener(folder, recorder, events, skip_failed=True, purge=Purge.WHEN_PROCESSED)
    await listener.start()
    await _settle()
    assert [d for _, d in recorder.seen] == [b"a", b"d"]
    assert listener.last_executed == 4
    assert [(level, event, f["path"]) for level, event, f in events.lines] == [
        ("error", "test.failed", f"{FOLDER}/{unreadable}"),
        ("error", "test.failed", f"{FOLDER}/{bad}"),
    ]
    assert events.lines[1][2]["error"] == "ValueError('bad notification')"
    # Only the notifications handled are purged.
    assert sorted(folder.children) == [unreadable, bad]
    await listener.stop()


async def test_purge_when_processed_deletes_only_what_is_already_expired() -> None:
    folder, recorder, events = FakeFolder(), Recorder(), Events()
    old = folder.add(1, b"old", OLD, notify=False)
    fresh = folder.add(2, b"fresh", FRESH, notify=False)
    listener = _listener(folder, recorder, events, skip_failed=True, purge=Purge.WHEN_PROCESSED)
    await listener.start()
    await _settle()
    assert folder.deleted == [old] and list(folder.children) == [fresh]
    assert [(level, event) for level, event, _ in events.lines] == []
    await listener.stop()


async def test_purge_after_pass_deletes_every_expired_notification_read_so_far(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder, recorder, events = FakeFolder(), Recorder(), Events()
    clock = [float(NOW_MS)]
    monkeypatch.setattr(change_notifications, "_wall_clock_ms", lambda: clock[0])
    first = folder.add(1, b"a", FRESH, notify=False)
    listener = _listener(
        folder,
        recorder,
        events,
        purge=Purge.AFTER_PASS,
        purged_event="test.purged",
    )
    await listener.start()
    await _settle()
    assert folder.deleted == []
    # Later, the first notification has expired: the next pass deletes it though it is old news.
    clock[0] = FRESH + CHANGE_EXPIRATION_MS + 1
    second = folder.add(2, b"b", int(clock[0]))
    await _settle()
    assert folder.deleted == [first] and list(folder.children) == [second]
    assert events.lines == [("info", "test.purged", {"count": 1})]
    await listener.stop()


@pytest.mark.parametrize(
    ("name", "number"),
    [
        ("config_change_0000000042", 42),
        ("config_change_-000000001", -1),
        ("config_change_", None),
        ("other_0000000001", None),
    ],
)
def test_sequence_number(name: str, number: int | None) -> None:
    listener = _listener(FakeFolder(), Recorder(), Events())
    assert listener.sequence_number(name) == number


class Stubborn:
    """A handler that swallows the cancellation of the worker running it, until released."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def handle(self, path: str, data: bytes) -> str | None:
        self.entered.set()
        while not self.release.is_set():
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                continue
        return None


async def _held_in_its_handler(events: Events, stubborn: Stubborn) -> ChangeNotificationListener:
    """A started listener whose worker is inside the stubborn handler."""
    folder = FakeFolder()
    folder.add(1, b"one", notify=False)
    listener = ChangeNotificationListener(
        cast(Any, folder), FOLDER, PREFIX, stubborn.handle, log=events, failed_event="test.failed"
    )
    await listener.start()
    await asyncio.wait_for(stubborn.entered.wait(), 5)
    return listener


async def test_stop_is_bounded_when_the_worker_swallows_its_cancellation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(change_notifications, "STOP_WAIT_S", 0.2)
    events, stubborn = Events(), Stubborn()
    listener = await _held_in_its_handler(events, stubborn)
    try:
        await asyncio.wait_for(listener.stop(), 5)  # returns after its bound, not never
        assert [(level, event) for level, event, _ in events.lines] == [
            ("warning", "change_notifications.worker_did_not_end")
        ]
    finally:
        stubborn.release.set()


async def test_a_cancelled_stop_raises_its_callers_cancellation() -> None:
    events, stubborn = Events(), Stubborn()
    listener = await _held_in_its_handler(events, stubborn)
    stopping = asyncio.create_task(listener.stop())
    try:
        await _settle()
        stopping.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(stopping, 5)
    finally:
        stubborn.release.set()
