"""What a follower's fetcher asks its leader, and the leader broker it asks.

A `FetchSource` is one leader broker as a follower's fetcher sees it: Fetch with the follower's
replica id, OffsetsForLeaderEpoch, and the leader's log offsets (Kafka's ``LeaderEndPoint``).
Two implementations: `zkbroker.broker.replication.local_source` (the leader runs in this
process: a direct call to its replica manager, sharing its batch bytes) and
`zkbroker.broker.replication.remote_source` (the inter-broker listener, as Kafka's
``RemoteLeaderEndPoint``). Both answer by the same rules: the leader's
`ReplicaManager.read_for_follower` serves the in-process call and the Fetch handler alike.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Protocol

TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class FetchPartition:
    """One partition of a follower's Fetch."""

    topic: str
    partition: int
    topic_id: uuid.UUID | None
    fetch_offset: int
    log_start_offset: int
    current_leader_epoch: int
    #: Fetch's LastFetchedEpoch (KIP-595), -1 when not sent.
    last_fetched_epoch: int
    max_bytes: int


@dataclass(slots=True)
class FetchedPartition:
    """The leader's answer for one partition."""

    error_code: int
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes = b""
    #: (epoch, end offset) where the follower's log diverges from the leader's (KIP-595).
    diverging: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class EpochEnd:
    """OffsetsForLeaderEpoch's answer for one partition."""

    error_code: int
    leader_epoch: int
    end_offset: int


class FetchSource(Protocol):
    """One leader broker, as a follower's fetcher reaches it."""

    @property
    def leader_id(self) -> int: ...

    async def fetch(
        self,
        parts: list[FetchPartition],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        wake: asyncio.Event | None = None,
    ) -> dict[TP, FetchedPartition]:
        """A Fetch with this follower's replica id; raises `SourceUnavailable`. `wake` set
        ends a long poll early where the source can (the fetcher's partitions changed)."""
        ...

    async def epoch_ends(self, wanted: list[tuple[TP, int, int]]) -> dict[TP, EpochEnd]:
        """OffsetsForLeaderEpoch for (tp, current leader epoch, epoch) from this follower."""
        ...

    async def log_offsets(self, tp: TP, current_leader_epoch: int) -> tuple[int, int, int]:
        """(error code, log start offset, log end offset) of the leader's log (ListOffsets
        EARLIEST and LATEST with the follower's replica id)."""
        ...

    async def close(self) -> None: ...


class SourceUnavailable(Exception):
    """The leader cannot be reached now (stopped, no listener, connection refused)."""
