"""Requests of one broker waiting for their partitions to reach an offset: `acks=-1` produce
requests for the high watermark (Kafka 3.9's `DelayedProduce`), DeleteRecords for the low
watermark (`DelayedDeleteRecords`); each kind in a purgatory of its own, as Kafka keeps them
(`DelayedOperationPurgatory.tryCompleteElseWatch` and `checkAndComplete`); docs/kafka-behaviour.md
§24.

Each partition's outcome comes from a check the replica manager supplies, given the offset the
partition must reach (for produce, Kafka's `Partition.checkEnoughReplicasReachOffset`): None for
"not yet", else the partition's error code (NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
NOT_LEADER_OR_FOLLOWER, ...). A request's checks run once when it starts and afterwards only for
the partition the replica manager pokes (its high watermark, a follower's log start, its ISR or
leadership changed): nothing polls. A request waits on all its partitions under one deadline
with one future and no task of its own; at the deadline the partitions still waiting answer
REQUEST_TIMED_OUT. A caller cancelled while waiting leaves nothing behind.

Not here: the append or deletion, the checks, which partitions need waiting for, the response.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from zkbroker.broker.protocol import error_codes

K = TypeVar("K", bound=Hashable)

#: A partition's check: given the offset to reach, None while waiting, else its error code.
Check = Callable[[int], int | None]


@dataclass(frozen=True, slots=True)
class PartitionWait:
    """One partition of a waiting request: the offset it must reach (after a produce's last
    appended record, a deletion's new log start), and the check that says whether it has."""

    required_offset: int
    check: Check


class _Request(Generic[K]):
    """One waiting request: the partitions still waiting, the codes already known, and the
    future its caller awaits."""

    __slots__ = ("codes", "future", "pending")

    def __init__(
        self, pending: dict[K, PartitionWait], codes: dict[K, int], future: asyncio.Future[None]
    ) -> None:
        self.pending = pending
        self.codes = codes
        self.future = future


class Purgatory(Generic[K]):
    """One kind of waiting request of one broker, keyed by partition (any hashable key)."""

    def __init__(self) -> None:
        # Partition -> the requests waiting on it, as an insertion-ordered set.
        self._watchers: dict[K, dict[_Request[K], None]] = {}

    async def wait(self, tp: K, required_offset: int, timeout_s: float, check: Check) -> int:
        """One partition's error code once `check(required_offset)` gives one, or
        REQUEST_TIMED_OUT after `timeout_s`."""
        codes = await self.wait_all({tp: PartitionWait(required_offset, check)}, timeout_s)
        return codes[tp]

    async def wait_all(self, waits: Mapping[K, PartitionWait], timeout_s: float) -> dict[K, int]:
        """Every partition's error code, in `waits`' order, once each has one, under one
        deadline `timeout_s` from now (the request's timeout). A check that raises
        while poked ends the wait with its exception."""
        codes: dict[K, int] = {}
        pending: dict[K, PartitionWait] = {}
        for tp, wait in waits.items():
            code = wait.check(wait.required_offset)
            if code is None:
                pending[tp] = wait
            else:
                codes[tp] = code
        if pending:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            await self._park(_Request(pending, codes, future), timeout_s)
        return {tp: codes[tp] for tp in waits}

    def poke(self, tp: K) -> None:
        """The partition's state changed: run its check in every request waiting on it, and
        complete those that have all their codes (Kafka's `checkAndComplete`)."""
        watchers = self._watchers.get(tp)
        if watchers is None:
            return
        for request in list(watchers):
            wait = request.pending.get(tp)
            # A request whose caller was cancelled, or that ended meanwhile, is being unwatched.
            if wait is None or request.future.done():
                continue
            try:
                code = wait.check(wait.required_offset)
            except Exception as exc:
                self._unwatch(request)
                request.future.set_exception(exc)
                continue
            if code is None:
                continue
            request.codes[tp] = code
            del request.pending[tp]
            del watchers[request]
            if not request.pending:
                request.future.set_result(None)
        if not watchers:
            self._watchers.pop(tp, None)

    def watched(self) -> frozenset[K]:
        """The partitions some request waits on."""
        return frozenset(self._watchers)

    def waiting(self) -> int:
        """How many requests wait (Kafka's purgatory size)."""
        requests: set[_Request[K]] = set()
        for watchers in self._watchers.values():
            requests.update(watchers)
        return len(requests)

    async def _park(self, request: _Request[K], timeout_s: float) -> None:
        for tp in request.pending:
            self._watchers.setdefault(tp, {})[request] = None
        loop = asyncio.get_running_loop()
        timer = loop.call_later(max(timeout_s, 0.0), self._expire, request)
        try:
            await request.future
        finally:
            timer.cancel()
            self._unwatch(request)

    def _expire(self, request: _Request[K]) -> None:
        if request.future.done():
            return
        for tp in request.pending:
            request.codes[tp] = error_codes.REQUEST_TIMED_OUT
        self._unwatch(request)
        request.future.set_result(None)

    def _unwatch(self, request: _Request[K]) -> None:
        for tp in request.pending:
            watchers = self._watchers.get(tp)
            if watchers is not None:
                watchers.pop(request, None)
                if not watchers:
                    del self._watchers[tp]
        request.pending.clear()
