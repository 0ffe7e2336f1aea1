"""Incremental fetch sessions (KIP-227) as pure code: the broker's session cache and the
context each Fetch request gets from it (Kafka's behaviour: §15, "Fetch sessions").

`FetchSessionCache.new_context` follows Kafka 3.9's `FetchManager.newContext`; the handler
reads `FetchContext.partitions_to_read()` and passes what it read to
`FetchContext.response_partitions`. Not here: reading logs, response sizes, metrics, locks
(one asyncio loop), any I/O; the clock is passed in as `now_ms`.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from zkbroker.broker.protocol import error_codes

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MIN_SESSION_VERSION = 7
"""Fetch v7 added session ids and epochs (KIP-227); older requests are always sessionless."""
NO_PREFERRED_READ_REPLICA = -1
INVALID_HIGH_WATERMARK = -1

_INT32_MAX = 2**31 - 1

ContextKind = Literal["error", "sessionless", "full", "incremental"]


def next_epoch(epoch: int) -> int:
    """The session epoch after `epoch`: FINAL stays FINAL, Int32 max wraps to 1 (never 0)."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch >= _INT32_MAX:
        return 1
    return epoch + 1


@dataclass(frozen=True, slots=True)
class FetchPartitionKey:
    """One partition of a fetch. With topic ids (v13+) the id identifies it and `topic` is the
    name the caller resolved ("" while unknown); without, the name identifies it."""

    topic_id: uuid.UUID | None
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class FetchPartitionRequest:
    """What the fetcher asked for one partition."""

    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1


@dataclass(frozen=True, slots=True)
class FetchPartitionResult:
    """What the broker read for one partition: enough to decide whether an incremental
    response must carry it."""

    error: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    preferred_read_replica: int = NO_PREFERRED_READ_REPLICA
    has_records: bool = False
    diverging_epoch: bool = False
    """True when the response tells a follower its log diverged (always answered)."""


_Identity = tuple[uuid.UUID | str, int]


def _identity(key: FetchPartitionKey) -> _Identity:
    """Kafka's CachedPartition equality: by topic id when there is one, else by name."""
    if key.topic_id is not None and key.topic_id.int != 0:
        return (key.topic_id, key.partition)
    return (key.topic, key.partition)


def _dedupe(
    partitions: Sequence[tuple[FetchPartitionKey, FetchPartitionRequest]],
) -> dict[_Identity, tuple[FetchPartitionKey, FetchPartitionRequest]]:
    """A request's partitions as a map in first-seen order, a repeated one keeping its last
    parameters (Kafka builds a LinkedHashMap from the request)."""
    out: dict[_Identity, tuple[FetchPartitionKey, FetchPartitionRequest]] = {}
    for key, request in partitions:
        ident = _identity(key)
        first = out.get(ident)
        out[ident] = (first[0] if first is not None else key, request)
    return out


@dataclass(slots=True)
class _CachedPartition:
    key: FetchPartitionKey
    request: FetchPartitionRequest
    high_watermark: int = INVALID_HIGH_WATERMARK
    last_stable_offset: int = -1
    log_start_offset: int = -1


@dataclass(slots=True)
class _Session:
    id: int
    privileged: bool
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    partitions: dict[_Identity, _CachedPartition]
    # Set by FetchSessionCache._touch, as Kafka decides them: size and evictability as of
    # the last touch.
    cached_size: int = 0
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False

    def evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.id)


@dataclass(frozen=True, slots=True)
class FetchSessionInfo:
    """A read-only view of one cached session (for tests, logs and diagnostics)."""

    session_id: int
    epoch: int
    """The epoch the next incremental request must carry."""
    privileged: bool
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    partitions: tuple[FetchPartitionKey, ...]


class FetchContext:
    """What one Fetch request may read and answer; made by `FetchSessionCache.new_context`.

    `error` is the response's top-level error (0 when fine). It is set when the context is
    made, and an incremental context may set it to INVALID_FETCH_SESSION_EPOCH in
    `response_partitions`, so read it after that call when building the response.
    """

    kind: ContextKind

    def __init__(self, error: int = error_codes.NONE) -> None:
        self.error = error
        self._answered = False

    def partitions_to_read(self) -> list[tuple[FetchPartitionKey, FetchPartitionRequest]]:
        """The partitions to read, with their fetch parameters, in order."""
        return []

    def response_partitions(
        self,
        results: Mapping[FetchPartitionKey, FetchPartitionResult],
        *,
        now_ms: int | None = None,
    ) -> tuple[int, list[FetchPartitionKey]]:
        """The session id for the response and the partitions (from `partitions_to_read`) to
        put in it; a full context creates its session here (at `now_ms`, by default the time
        the context was made). Call it once per context."""
        if self._answered:
            raise RuntimeError("response_partitions called twice on one fetch context")
        self._answered = True
        return self._respond(results, now_ms)

    def _respond(
        self, results: Mapping[FetchPartitionKey, FetchPartitionResult], now_ms: int | None
    ) -> tuple[int, list[FetchPartitionKey]]:
        return (INVALID_SESSION_ID, [])


def _results_by_identity(
    results: Mapping[FetchPartitionKey, FetchPartitionResult],
) -> dict[_Identity, FetchPartitionResult]:
    return {_identity(key): result for key, result in results.items()}


class _SessionErrorContext(FetchContext):
    kind: ContextKind = "error"


class _SessionlessContext(FetchContext):
    kind: ContextKind = "sessionless"

    def __init__(
        self, partitions: dict[_Identity, tuple[FetchPartitionKey, FetchPartitionRequest]]
    ) -> None:
        super().__init__()
        self._partitions = partitions

    def partitions_to_read(self) -> list[tuple[FetchPartitionKey, FetchPartitionRequest]]:
        return list(self._partitions.values())

    def _respond(
        self, results: Mapping[FetchPartitionKey, FetchPartitionResult], now_ms: int | None
    ) -> tuple[int, list[FetchPartitionKey]]:
        found = _results_by_identity(results)
        return (
            INVALID_SESSION_ID,
            [key for ident, (key, _) in self._partitions.items() if ident in found],
        )


class _FullContext(_SessionlessContext):
    kind: ContextKind = "full"

    def __init__(
        self,
        cache: FetchSessionCache,
        partitions: dict[_Identity, tuple[FetchPartitionKey, FetchPartitionRequest]],
        *,
        privileged: bool,
        uses_topic_ids: bool,
        now_ms: int,
    ) -> None:
        super().__init__(partitions)
        self._cache = cache
        self._privileged = privileged
        self._uses_topic_ids = uses_topic_ids
        self._now_ms = now_ms

    def _respond(
        self, results: Mapping[FetchPartitionKey, FetchPartitionResult], now_ms: int | None
    ) -> tuple[int, list[FetchPartitionKey]]:
        found = _results_by_identity(results)
        cached: dict[_Identity, _CachedPartition] = {}
        for ident, (key, request) in self._partitions.items():
            result = found.get(ident)
            if result is None:
                continue
            cached[ident] = _CachedPartition(
                key,
                request,
                high_watermark=(INVALID_HIGH_WATERMARK if result.error else result.high_watermark),
                last_stable_offset=result.last_stable_offset,
                log_start_offset=result.log_start_offset,
            )
        session_id = self._cache._maybe_create_session(
            self._now_ms if now_ms is None else now_ms,
            privileged=self._privileged,
            uses_topic_ids=self._uses_topic_ids,
            partitions=cached,
        )
        return (session_id, [cp.key for cp in cached.values()])


class _IncrementalContext(FetchContext):
    kind: ContextKind = "incremental"

    def __init__(self, session: _Session, request_epoch: int) -> None:
        super().__init__()
        self._session = session
        self._request_epoch = request_epoch
        # A snapshot: the session may change while the handler waits for data.
        self._snapshot = [(ident, cp.key, cp.request) for ident, cp in session.partitions.items()]

    @property
    def session_id(self) -> int:
        return self._session.id

    def partitions_to_read(self) -> list[tuple[FetchPartitionKey, FetchPartitionRequest]]:
        return [(key, request) for _, key, request in self._snapshot]

    def _respond(
        self, results: Mapping[FetchPartitionKey, FetchPartitionResult], now_ms: int | None
    ) -> tuple[int, list[FetchPartitionKey]]:
        session = self._session
        if session.epoch != next_epoch(self._request_epoch):
            # Another request on this session was accepted since this one: a duplicate.
            self.error = error_codes.INVALID_FETCH_SESSION_EPOCH
            return (session.id, [])
        found = _results_by_identity(results)
        included: list[FetchPartitionKey] = []
        with_records: list[_Identity] = []
        for ident, key, _ in self._snapshot:
            result = found.get(ident)
            cached = session.partitions.get(ident)
            if result is None or cached is None:
                continue
            if _must_answer(cached, result):
                included.append(key)  # exactly as partitions_to_read gave it
                if result.has_records:
                    with_records.append(ident)
        for ident in with_records:
            session.partitions[ident] = session.partitions.pop(ident)
        return (session.id, included)


def _must_answer(cached: _CachedPartition, result: FetchPartitionResult) -> bool:
    """Whether an incremental response must carry this partition; records what it reports."""
    answer = (
        result.has_records
        or result.error != error_codes.NONE
        or result.preferred_read_replica != NO_PREFERRED_READ_REPLICA
        or result.diverging_epoch
    )
    if cached.high_watermark != result.high_watermark:
        cached.high_watermark = result.high_watermark
        answer = True
    if cached.last_stable_offset != result.last_stable_offset:
        cached.last_stable_offset = result.last_stable_offset
        answer = True
    if cached.log_start_offset != result.log_start_offset:
        cached.log_start_offset = result.log_start_offset
        answer = True
    if result.error != error_codes.NONE:
        # Forget the high watermark, so the partition is answered again once the error clears.
        cached.high_watermark = INVALID_HIGH_WATERMARK
    return answer


# Deliberate differences from Kafka: a change of the last stable offset alone also puts a
# partition in an incremental answer (3.9 compares only the high watermark and log start; more is
# safe); a partition answered with an error caches high watermark -1, so it is re-sent once the
# error clears; a session holds at most `max_session_partitions` partitions (a full fetch with
# more gets no session, an incremental one growing past it is closed and answered sessionless),
# so one client cannot grow the cache without bound.
class FetchSessionCache:
    """One broker's fetch sessions (Kafka's FetchSessionCache and FetchManager).

    `max_slots` is Kafka's `max.incremental.fetch.session.cache.slots`, `eviction_ms` its
    minimum eviction time (120 s). `max_session_partitions` bounds one session (not in
    Kafka). `rng` draws session ids (inject a seeded one in tests).
    """

    def __init__(
        self,
        max_slots: int = 1000,
        eviction_ms: int = 120_000,
        *,
        max_session_partitions: int = 10_000,
        rng: random.Random | None = None,
    ) -> None:
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        self.max_session_partitions = max_session_partitions
        self.evictions = 0
        """How many sessions were evicted to make room (Kafka's eviction meter)."""
        self._rng = rng if rng is not None else random.Random()
        self._sessions: dict[int, _Session] = {}

    # ---- inspection --------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    @property
    def total_partitions(self) -> int:
        """Partitions cached over all sessions, as of each session's last touch."""
        return sum(s.cached_size for s in self._sessions.values())

    def session(self, session_id: int) -> FetchSessionInfo | None:
        s = self._sessions.get(session_id)
        if s is None:
            return None
        return FetchSessionInfo(
            session_id=s.id,
            epoch=s.epoch,
            privileged=s.privileged,
            uses_topic_ids=s.uses_topic_ids,
            creation_ms=s.creation_ms,
            last_used_ms=s.last_used_ms,
            partitions=tuple(cp.key for cp in s.partitions.values()),
        )

    def remove(self, session_id: int) -> bool:
        """Close a session; False when there was none."""
        return self._sessions.pop(session_id, None) is not None

    # ---- requests ----------------------------------------------------------------------

    def new_context(
        self,
        *,
        version: int,
        session_id: int,
        epoch: int,
        fetch_partitions: Sequence[tuple[FetchPartitionKey, FetchPartitionRequest]],
        forgotten: Sequence[FetchPartitionKey],
        is_from_follower: bool,
        uses_topic_ids: bool,
        now_ms: int,
        topic_names: Mapping[uuid.UUID, str] | None = None,
    ) -> FetchContext:
        """The context for one Fetch request (Kafka's FetchManager.newContext).

        `topic_names` (optional) names topic ids that were unknown when a session cached them.
        """
        partitions = _dedupe(fetch_partitions)
        if version < MIN_SESSION_VERSION:
            return _SessionlessContext(partitions)
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)
            if epoch == FINAL_EPOCH:
                return _SessionlessContext(partitions)
            return _FullContext(
                self,
                partitions,
                privileged=is_from_follower,
                uses_topic_ids=uses_topic_ids,
                now_ms=now_ms,
            )
        session = self._sessions.get(session_id)
        if session is None:
            return _SessionErrorContext(error_codes.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return _SessionErrorContext(error_codes.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_topic_ids:
            return _SessionErrorContext(error_codes.FETCH_SESSION_TOPIC_ID_ERROR)
        _update(session, partitions, forgotten, topic_names)
        if not session.partitions or len(session.partitions) > self.max_session_partitions:
            self.remove(session.id)
            return _SessionlessContext(partitions)
        self._touch(session, now_ms)
        session.epoch = next_epoch(session.epoch)
        return _IncrementalContext(session, epoch)

    # ---- the cache's own rules ---------------------------------------------------------

    def _new_session_id(self) -> int:
        while True:
            candidate = self._rng.randint(1, _INT32_MAX - 1)
            if candidate not in self._sessions:
                return candidate

    def _maybe_create_session(
        self,
        now_ms: int,
        *,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: dict[_Identity, _CachedPartition],
    ) -> int:
        """A new session's id, or INVALID_SESSION_ID when there is no room for it."""
        size = len(partitions)
        if size > self.max_session_partitions:
            return INVALID_SESSION_ID
        if len(self._sessions) >= self.max_slots and not self._try_evict(privileged, size, now_ms):
            return INVALID_SESSION_ID
        session = _Session(
            id=self._new_session_id(),
            privileged=privileged,
            uses_topic_ids=uses_topic_ids,
            creation_ms=now_ms,
            last_used_ms=now_ms,
            epoch=next_epoch(INITIAL_EPOCH),
            partitions=partitions,
        )
        self._sessions[session.id] = session
        self._touch(session, now_ms)
        return session.id

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Make room for a new session of `size` partitions, or say there is none."""
        if not self._sessions:
            return False
        stalest = min(self._sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stalest.last_used_ms > self.eviction_ms:
            return self._evict(stalest)
        candidates = [
            s
            for s in self._sessions.values()
            if (s.evictable_by_privileged if privileged else s.evictable_by_all)
        ]
        if not candidates:
            return False
        cheapest = min(candidates, key=_Session.evictable_key)
        if (privileged, size, 0) < cheapest.evictable_key():
            return False
        return self._evict(cheapest)

    def _evict(self, session: _Session) -> bool:
        del self._sessions[session.id]
        self.evictions += 1
        return True

    def _touch(self, session: _Session, now_ms: int) -> None:
        session.last_used_ms = now_ms
        session.cached_size = len(session.partitions)
        old = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = old or not session.privileged
        session.evictable_by_all = old


def _update(
    session: _Session,
    partitions: dict[_Identity, tuple[FetchPartitionKey, FetchPartitionRequest]],
    forgotten: Sequence[FetchPartitionKey],
    topic_names: Mapping[uuid.UUID, str] | None,
) -> None:
    """Apply an incremental request: add or update its partitions, then drop the forgotten."""
    cached_partitions = session.partitions
    for ident, (key, request) in partitions.items():
        cached = cached_partitions.get(ident)
        if cached is None:
            cached_partitions[ident] = _CachedPartition(key, request)
            continue
        cached.request = request
        if not cached.key.topic and key.topic:
            cached.key = key
    for key in forgotten:
        cached_partitions.pop(_identity(key), None)
    if topic_names is not None:
        for cached in cached_partitions.values():
            topic_id = cached.key.topic_id
            if not cached.key.topic and topic_id is not None and topic_id in topic_names:
                cached.key = FetchPartitionKey(
                    topic_id, topic_names[topic_id], cached.key.partition
                )
