"""The coordinator runtime both coordinators share (issue 33): which partitions of an internal
topic a broker owns, loading (inline for a small log, paced by a task for a larger one),
unloading when leadership moves, appending, and what it tells the shard."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from zkbroker.broker import coordinator_runtime as rt
from zkbroker.broker.asyncutil import cancel_and_wait
from zkbroker.broker.coordinator_runtime import CoordinatorRuntime, OwnedPartition, PartitionState
from zkbroker.broker.image.metadata_image import MetadataImage, PartitionImage, TopicImage
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.records import RecordBatchV2
from zkbroker.broker.storage import LogManager

TOPIC = "__test_state"
ME = 1


async def _until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Let the loop run until `condition()` holds; TimeoutError after `timeout` seconds."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


class Shard(CoordinatorRuntime[list[bytes], list[bytes]]):
    """Records every call; its data is the keys replayed, its accumulator the values."""

    def __init__(self, image: MetadataImage, logs: LogManager) -> None:
        super().__init__(
            topic=TOPIC,
            event_prefix="test",
            broker_id=ME,
            image=image,
            logs=logs,
            partition_of=lambda key, count: int(key) % count,
            log=get_logger(__name__),
        )
        self.calls: list[tuple[Any, ...]] = []
        self.periodic_runs = 0

    def new_data(self) -> list[bytes]:
        return []

    def begin_load(self) -> list[bytes]:
        return []

    def replay(self, batch: RecordBatchV2, offset: int, acc: list[bytes], now: int) -> None:
        acc.extend(r.key for r in batch.records() if r.offset >= offset and r.key is not None)

    def replayed(self, owned: OwnedPartition[list[bytes]], acc: list[bytes]) -> None:
        assert owned.state is PartitionState.LOADING
        owned.data = list(acc)
        self.calls.append(("replayed", owned.partition, owned.epoch))

    def loaded(self, owned: OwnedPartition[list[bytes]], acc: list[bytes], start: float) -> None:
        assert owned.state is PartitionState.LOADED
        self.calls.append(("loaded", owned.partition, len(acc)))

    def unloaded(self, partition: int, owned: OwnedPartition[list[bytes]] | None) -> None:
        self.calls.append(("unloaded", partition, None if owned is None else len(owned.data)))

    def periodic(self) -> None:
        self.periodic_runs += 1


def _image(leaders: dict[int, tuple[int, int]]) -> MetadataImage:
    image = MetadataImage()
    _lead(image, leaders)
    return image


def _lead(image: MetadataImage, leaders: dict[int, tuple[int, int]]) -> None:
    image.topics[TOPIC] = TopicImage(
        name=TOPIC,
        topic_id=uuid.UUID(int=7),
        assignment={p: (ME, 2) for p in leaders},
        partitions={
            p: PartitionImage(p, (ME, 2), (ME, 2), leader, epoch)
            for p, (leader, epoch) in leaders.items()
        },
    )


def test_where_a_key_lives() -> None:
    runtime = Shard(MetadataImage(), LogManager(None))
    assert runtime.partition_count() is None
    assert runtime.partition_for("5") is None
    assert runtime.leader_of(0) == (-1, -1)
    _lead(runtime._image, {0: (ME, 3), 1: (2, 4)})
    assert runtime.partition_count() == 2
    assert runtime.partition_for("5") == 1
    assert runtime.leader_of(1) == (2, 4)


async def test_status_follows_leadership_and_loads_a_small_log_inline() -> None:
    image = _image({0: (ME, 3), 1: (2, 4)})
    runtime = shard = Shard(image, LogManager(None))
    assert runtime.status("0") == ec.COORDINATOR_NOT_AVAILABLE  # not started
    runtime.active = True
    runtime.append(0, 3, [(b"a", b"1"), (b"b", None)])
    runtime.append(0, 3, [(b"c", b"2")], {"producer_id": 9, "producer_epoch": 0})
    assert runtime.status("1") == ec.NOT_COORDINATOR
    assert runtime.status("0") == ec.NONE
    owned = runtime.partitions[0]
    assert (owned.epoch, owned.state, owned.data) == (3, PartitionState.LOADED, [b"a", b"b", b"c"])
    assert shard.calls == [("replayed", 0, 3), ("loaded", 0, 3)]
    assert runtime.ensure(0) is owned  # same epoch: no reload
    # A new leader epoch reloads; leadership moving away unloads.
    _lead(image, {0: (ME, 5), 1: (2, 4)})
    assert runtime.ensure(0) is not owned
    assert shard.calls[2:] == [("unloaded", 0, 3), ("replayed", 0, 5), ("loaded", 0, 3)]
    _lead(image, {0: (2, 6), 1: (2, 4)})
    assert runtime.status("0") == ec.NOT_COORDINATOR
    assert shard.calls[-1] == ("unloaded", 0, 3)
    assert runtime.partitions == {}
    assert runtime.owned() == []


async def test_a_large_log_loads_in_a_task_meanwhile_load_in_progress(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rt, "LOAD_AT_ONCE_BYTES", 0)
    monkeypatch.setattr(rt, "READ_BYTES", 1)  # one batch a slice
    runtime = shard = Shard(_image({0: (ME, 1)}), LogManager(None))
    runtime.active = True
    for i in range(5):
        runtime.append(0, 1, [(str(i).encode(), b"v")])
    assert runtime.status("0") == ec.COORDINATOR_LOAD_IN_PROGRESS
    assert runtime.partitions[0].state is PartitionState.LOADING
    assert shard.calls == []
    await _until(lambda: runtime.partitions[0].state is PartitionState.LOADED)
    assert runtime.status("0") == ec.NONE
    assert runtime.partitions[0].data == [b"0", b"1", b"2", b"3", b"4"]
    assert shard.calls == [("replayed", 0, 1), ("loaded", 0, 5)]
    assert runtime.take_tasks() == []  # the finished load left no task behind


async def test_unloading_cancels_a_running_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rt, "LOAD_AT_ONCE_BYTES", 0)
    runtime = shard = Shard(_image({0: (ME, 1)}), LogManager(None))
    runtime.active = True
    runtime.append(0, 1, [(b"k", b"v")])
    assert runtime.status("0") == ec.COORDINATOR_LOAD_IN_PROGRESS
    (task,) = runtime._loads.values()
    runtime.unload(0)
    await asyncio.wait([task], timeout=10)
    assert task.cancelled()
    assert shard.calls == [("unloaded", 0, 0)]


def test_a_failed_load_is_logged_and_the_partition_owned_with_what_was_replayed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class FailingOnSecond(Shard):
        def replay(self, batch: RecordBatchV2, offset: int, acc: list[bytes], now: int) -> None:
            if batch.base_offset >= 1:
                raise ValueError("unreadable")
            super().replay(batch, offset, acc, now)

    runtime = FailingOnSecond(_image({0: (ME, 1)}), LogManager(None))
    runtime.append(0, 1, [(b"k1", b"v")])
    runtime.append(0, 1, [(b"k2", b"v")])
    owned = runtime.ensure(0)
    assert owned is not None and owned.state is PartitionState.LOADED
    assert owned.data == [b"k1"]
    assert runtime.partitions[0] is owned
    errors = [r.msg["event"] for r in caplog.records if r.levelname == "ERROR"]  # type: ignore[index]
    assert errors == ["test.load_failed"]


async def test_the_follow_loop_loads_unloads_and_runs_the_shards_periodic_work() -> None:
    image = _image({0: (ME, 1), 1: (ME, 1)})
    runtime = shard = Shard(image, LogManager(None))
    runtime.start_following()
    assert runtime.active
    # One pass loads what the broker leads, then runs the shard's periodic work.
    await _until(lambda: shard.periodic_runs >= 1)
    assert sorted(runtime.partitions) == [0, 1]
    _lead(image, {0: (ME, 1)})  # the topic shrank
    await _until(lambda: ("unloaded", 1, 0) in shard.calls)
    assert sorted(runtime.partitions) == [0]
    tasks = runtime.take_tasks()
    assert not runtime.active and len(tasks) == 1
    await cancel_and_wait(tasks)
    assert tasks[0].cancelled()
    runtime.clear()
    assert runtime.partitions == {}
