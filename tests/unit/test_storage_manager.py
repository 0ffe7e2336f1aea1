"""LogManager: logs by partition, deletion, retention passes, and long-poll wake-ups."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.test_storage_log import put, v2
from zkbroker.broker.storage import LogManager


@pytest.fixture(params=["memory", "disk"])
def manager(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogManager]:
    mgr = LogManager(None if request.param == "memory" else tmp_path, segment_bytes=1)
    yield mgr
    mgr.close()


def test_get_and_get_or_create(manager: LogManager) -> None:
    assert manager.get("t", 0) is None
    log = manager.get_or_create("t", 0, None)
    assert manager.get("t", 0) is log
    assert manager.get_or_create("t", 0, uuid.UUID(int=3)) is log  # id learnt, not replaced
    assert log.topic_id == uuid.UUID(int=3)
    assert log.segment_bytes == 1
    other = manager.get_or_create("t", 1, None)
    assert manager.logs() == [log, other]


def test_topic_id_change_replaces_the_log(manager: LogManager) -> None:
    log = manager.get_or_create("t", 0, uuid.UUID(int=1))
    put(log, [1])
    fresh = manager.get_or_create("t", 0, uuid.UUID(int=2))
    assert fresh is not log and fresh.log_end_offset == 0


def test_delete_topic(manager: LogManager) -> None:
    for p in range(2):
        put(manager.get_or_create("a", p, None), [1])
    b = manager.get_or_create("b", 0, None)
    manager.delete_topic("a")
    manager.delete_topic("a")
    assert manager.logs() == [b]
    assert manager.get_or_create("a", 0, None).log_end_offset == 0


def test_apply_retention_over_all_logs(manager: LogManager) -> None:
    one = len(v2(0, [1]))
    for topic in ("keep", "trim"):
        log = manager.get_or_create(topic, 0, None)
        for _ in range(3):
            put(log, [1])
        log.update_high_watermark(log.log_end_offset)
    configs = {"keep": (-1, -1), "trim": (-1, one)}
    assert manager.apply_retention(0, lambda t: configs[t]) == 2 * one
    assert manager.get("keep", 0).segment_count == 3  # type: ignore[union-attr]
    assert manager.get("trim", 0).log_start_offset == 2  # type: ignore[union-attr]


async def test_wait_for_append_wakes_on_append(manager: LogManager) -> None:
    log = manager.get_or_create("t", 0, None)
    waiters = [asyncio.create_task(manager.wait_for_append(5.0)) for _ in range(50)]
    await asyncio.sleep(0.01)
    assert not any(w.done() for w in waiters)
    generation = manager.generation
    started = time.monotonic()
    put(log, [1])
    await asyncio.wait_for(asyncio.gather(*waiters), 1.0)
    assert time.monotonic() - started < 1.0
    assert manager.generation == generation + 1


async def test_an_append_before_the_waiter_runs_is_not_missed(manager: LogManager) -> None:
    """The append a long-poll waits for counts from the call, not from when its task first
    runs (a loop turn later): an append in between ends the wait at once. And one that came
    while the caller read (`since`, the generation it read at) ends it before it starts."""
    log = manager.get_or_create("t", 0, None)
    waiter = asyncio.ensure_future(manager.wait_for_append(5.0))
    put(log, [1])  # before the waiter's task ran once
    await asyncio.wait_for(waiter, 1.0)
    read_at = manager.generation
    put(log, [1])
    started = time.monotonic()
    await manager.wait_for_append(5.0, read_at)
    assert time.monotonic() - started < 0.5
    # Nothing moved since: it waits.
    quiet = asyncio.ensure_future(manager.wait_for_append(5.0, manager.generation))
    await asyncio.sleep(0.05)
    assert not quiet.done()
    quiet.cancel()


async def test_wait_for_append_times_out(manager: LogManager) -> None:
    manager.get_or_create("t", 0, None)
    started = time.monotonic()
    await manager.wait_for_append(0.15)
    elapsed = time.monotonic() - started
    assert 0.14 <= elapsed < 1.0
    await manager.wait_for_append(0)  # returns at once


async def test_wait_for_append_sees_another_process(tmp_path: Path) -> None:
    writer = LogManager(tmp_path)
    reader = LogManager(tmp_path)
    w_log = writer.get_or_create("t", 0, None)
    r_log = reader.get_or_create("t", 0, None)
    waiter = asyncio.create_task(reader.wait_for_append(5.0))
    await asyncio.sleep(0.02)
    started = time.monotonic()
    put(w_log, [1])
    await asyncio.wait_for(waiter, 1.0)
    assert time.monotonic() - started < 0.5  # within a poll interval or two
    assert r_log.log_end_offset == 1
    writer.close()
    reader.close()
