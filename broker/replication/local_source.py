"""A leader in this process, fetched from without a socket.

The follower's fetcher calls the leader broker's replica manager directly: the same reads and
fetch-state updates the Fetch handler makes for a follower on the wire, the answer's records
the leader's own immutable batch bytes (no copy), and the same long poll (an append to the
leader's logs, the fetcher's partitions changing, or ``replica.fetch.wait.max.ms``). A
stopped leader is unavailable, as its closed listener would be. docs/kafka-behaviour.md §24.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.replication.fetch_source import (
    TP,
    EpochEnd,
    FetchedPartition,
    FetchPartition,
    SourceUnavailable,
)
from zkbroker.broker.storage import LogManager


class LeaderView(Protocol):
    """What a follower in this process reads from its leader's replica manager."""

    @property
    def running(self) -> bool: ...

    @property
    def logs(self) -> LogManager: ...

    def read_for_follower(
        self, follower: int, parts: list[FetchPartition], max_bytes: int, diverging: bool
    ) -> tuple[dict[TP, FetchedPartition], int]: ...

    def epoch_end(self, tp: TP, current_leader_epoch: int, epoch: int) -> EpochEnd: ...

    def log_offsets(self, tp: TP, current_leader_epoch: int) -> tuple[int, int, int]: ...


class LocalSource:
    def __init__(
        self, follower_id: int, leader_id: int, leader: LeaderView, diverging: bool
    ) -> None:
        self._follower = follower_id
        self._leader_id = leader_id
        self._leader = leader
        # Whether the emulated release's Fetch answers diverging epochs (v12, 2.7 on).
        self._diverging = diverging

    @property
    def leader_id(self) -> int:
        return self._leader_id

    def _check(self) -> LeaderView:
        if not self._leader.running:
            raise SourceUnavailable(f"broker {self._leader_id} is not running")
        return self._leader

    async def fetch(
        self,
        parts: list[FetchPartition],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        wake: asyncio.Event | None = None,
    ) -> dict[TP, FetchedPartition]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000
        while True:
            leader = self._check()
            generation = leader.logs.generation
            answers, size = leader.read_for_follower(
                self._follower, parts, max_bytes, self._diverging
            )
            remaining = deadline - loop.time()
            done = size >= min_bytes or remaining <= 0 or (wake is not None and wake.is_set())
            if done or any(
                a.error_code != error_codes.NONE or a.diverging is not None
                for a in answers.values()
            ):
                return answers
            await _wait_for_news(leader.logs, generation, wake, remaining)

    async def epoch_ends(self, wanted: list[tuple[TP, int, int]]) -> dict[TP, EpochEnd]:
        leader = self._check()
        return {tp: leader.epoch_end(tp, current, epoch) for tp, current, epoch in wanted}

    async def log_offsets(self, tp: TP, current_leader_epoch: int) -> tuple[int, int, int]:
        return self._check().log_offsets(tp, current_leader_epoch)

    async def close(self) -> None:
        """Nothing to close: no connection."""


async def _wait_for_news(
    logs: LogManager, generation: int, wake: asyncio.Event | None, timeout: float
) -> None:
    """Until an append (or high watermark move) in the leader's logs, the fetcher's partitions
    changing (`wake`: a leadership change reaches the fetcher that way, as Kafka's DelayedFetch
    completes when its partitions change leader), or `timeout`."""
    own: list[asyncio.Future[Any]] = [
        asyncio.ensure_future(logs.wait_for_append(timeout, generation))
    ]
    if wake is not None:
        own.append(asyncio.ensure_future(wake.wait()))
    try:
        await asyncio.wait(own, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for future in own:
            future.cancel()
