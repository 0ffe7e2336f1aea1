"""Fetch: records read from the partition's log, with long polling and fetch sessions.

Follows Kafka 3.9's `KafkaApis.handleFetchRequest` and `ReplicaManager.fetchMessages`
(docs/kafka-behaviour.md §15: "Who answers", "Fetch", "Fetch sessions"; §17 for read_committed
and aborted transactions): the session (`zkbroker.broker.rules.fetch_sessions`), authorization,
per-partition checks, whole batches within the size limits, waiting for appends up to
`max_wait_ms`, down-conversion for v0-v3 clients.

Not here: client quotas (`zkbroker.broker.security.quotas`, applied by the request pipeline),
a replica selector (`preferred_read_replica` stays -1, Kafka's default). A follower's fetch
(a replica id) is served by the leader's replica manager (`zkbroker.broker.replication`, §24):
to the log end, its fetch state updated; a consumer reads up to the high watermark.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.image.metadata_image import MetadataImage, TopicImage
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.fetch import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionData,
)
from zkbroker.broker.protocol.records import MAGIC_V2, CompressionType, iter_batches
from zkbroker.broker.replication.fetch_source import FetchPartition as FollowerFetch
from zkbroker.broker.rules.fetch_sessions import (
    FetchContext,
    FetchPartitionKey,
    FetchPartitionRequest,
    FetchPartitionResult,
)
from zkbroker.broker.storage import OffsetOutOfRange, PartitionLog
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.down_conversion import down_convert
from zkbroker.handlers.support.partitions import Located, leader_hint, locate, open_log
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.FETCH
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "whole batches within `max_bytes` (KIP-74), long polling woken by appends, incremental "
    "fetch sessions (KIP-227), topic ids (v13+), follower reads for v11+ consumers "
    "(KIP-392), diverging epochs (v12+), down-conversion to magic 0/1 for v0\N{EN DASH}v3, "
    "`read_committed` (up to the last stable offset, aborted transactions listed)"
)

READ_COMMITTED = 1
ZERO_UUID = uuid.UUID(int=0)
FOLLOWER_READS_VERSION = 11  # KIP-392
TOPIC_IDS_VERSION = 13  # KIP-516
LEADER_HINT_VERSION = 16  # KIP-951
DIVERGING_EPOCH_VERSION = 12  # KIP-595
ZSTD_VERSION = 10  # KIP-110
# Record batch header: base offset (int64), length (int32), magic at 16, v2 last offset delta
# (int32) at 23.
_LENGTH_AT, _MAGIC_AT, _LAST_DELTA_AT, _LOG_OVERHEAD = 8, 16, 23, 12


def _below(records: bytes, end_offset: int) -> bytes:
    """The whole batches of `records` that end before `end_offset` (a read_committed fetch
    stops at the last stable offset, which always falls on a batch boundary)."""
    position = 0
    while position + _LAST_DELTA_AT + 4 <= len(records):
        base = int.from_bytes(records[position : position + 8], "big", signed=True)
        last = base
        if records[position + _MAGIC_AT] == MAGIC_V2:
            delta = records[position + _LAST_DELTA_AT : position + _LAST_DELTA_AT + 4]
            last = base + int.from_bytes(delta, "big", signed=True)
        if last >= end_offset:
            break
        length = int.from_bytes(records[position + _LENGTH_AT : position + 12], "big")
        position += _LOG_OVERHEAD + length
    return records if position >= len(records) else records[:position]


def _has_zstd(records: bytes) -> bool:
    return any(
        b.magic == MAGIC_V2 and b.compression == CompressionType.ZSTD for b in iter_batches(records)
    )


@dataclass
class _Read:
    data: PartitionData
    size: int


def _error(index: int, code: int) -> PartitionData:
    return PartitionData(
        partition_index=index,
        error_code=code,
        high_watermark=-1,
        last_stable_offset=-1,
        log_start_offset=-1,
        aborted_transactions=None,
        records=b"",
    )


def _topic_by_id(image: MetadataImage, topic_id: uuid.UUID) -> TopicImage | None:
    """The topic of an id as Kafka's metadata cache knows it: not one being deleted, whose id
    the cache forgot with its partitions (UpdateMetadata with leader -2)."""
    found = image.topic_by_id(topic_id)
    if found is None or found.name in image.topics_being_deleted:
        return None
    return found


class _TopicNames(Mapping[uuid.UUID, str]):
    """Topic names by id as this broker's metadata knows them, looked up one at a time."""

    def __init__(self, image: MetadataImage) -> None:
        self._image = image

    def __getitem__(self, topic_id: uuid.UUID) -> str:
        found = _topic_by_id(self._image, topic_id)
        if found is None:
            raise KeyError(topic_id)
        return found.name

    def __contains__(self, topic_id: object) -> bool:
        return isinstance(topic_id, uuid.UUID) and _topic_by_id(self._image, topic_id) is not None

    def __iter__(self) -> Iterator[uuid.UUID]:
        deleting = self._image.topics_being_deleted
        return (
            t.topic_id
            for t in self._image.topics.values()
            if t.topic_id is not None and t.name not in deleting
        )

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _replica_id(request: FetchRequest, version: int) -> int:
    return request.replica_state.replica_id if version >= 15 else request.replica_id


async def _read_partition(
    ctx: RequestContext,
    key: FetchPartitionKey,
    wanted: FetchPartitionRequest,
    *,
    from_follower: bool,
    read_committed: bool,
    max_bytes: int,
    min_one: bool,
    readable: Callable[[str], bool] | None,
    replica: int = -1,
) -> _Read:
    """One partition's answer, in ReplicaManager's check order: authorization, the topic id,
    leadership, a diverging epoch, the records."""
    version = ctx.version
    index = key.partition
    if readable is not None and (from_follower or key.topic) and not readable(key.topic):
        return _Read(_error(index, error_codes.TOPIC_AUTHORIZATION_FAILED), 0)
    if not key.topic:
        return _Read(_error(index, error_codes.UNKNOWN_TOPIC_ID), 0)
    located = locate(
        ctx.image,
        ctx.broker.broker_id,
        key.topic,
        index,
        leader_only=from_follower or version < FOLLOWER_READS_VERSION,
        current_leader_epoch=wanted.current_leader_epoch if version >= 9 else -1,
    )
    if not isinstance(located, Located):
        return _Read(_not_served(ctx, key, located), 0)
    if from_follower:
        return _follower_read(ctx, key, located, wanted, replica, max_bytes)
    log, _config = await open_log(ctx, located)
    answer = PartitionData(
        partition_index=index,
        high_watermark=log.high_watermark,
        last_stable_offset=log.last_stable_offset,
        log_start_offset=log.log_start_offset,
        aborted_transactions=[] if read_committed else None,
        records=b"",
    )
    if version >= DIVERGING_EPOCH_VERSION and wanted.last_fetched_epoch >= 0:
        diverging = _diverging_epoch(log, wanted)
        if diverging is not None:
            answer.diverging_epoch = diverging
            return _Read(answer, 0)
    try:
        records = _records(log, version, wanted, min(wanted.max_bytes, max_bytes), min_one)
    except OffsetOutOfRange:
        return _Read(_error(index, error_codes.OFFSET_OUT_OF_RANGE), 0)
    if read_committed and records:
        records = _committed(log, records, wanted.fetch_offset, answer)
    if records and version < ZSTD_VERSION and _has_zstd(records):
        # Kafka refuses the partition rather than send zstd to a client that cannot read it.
        return _Read(_error(index, error_codes.UNSUPPORTED_COMPRESSION_TYPE), 0)
    if records and version <= 3:
        records = down_convert(records, magic=0 if version <= 1 else 1, start=wanted.fetch_offset)
    answer.records = records
    return _Read(answer, len(records))


def _not_served(ctx: RequestContext, key: FetchPartitionKey, code: int) -> PartitionData:
    """A partition this broker does not serve to this fetcher: the error, with the current
    leader as a hint where the fetcher asked the wrong broker or epoch (KIP-951)."""
    answer = _error(key.partition, code)
    if code in (error_codes.NOT_LEADER_OR_FOLLOWER, error_codes.FENCED_LEADER_EPOCH):
        leader, epoch = leader_hint(ctx.image, key.topic, key.partition)
        answer.current_leader = LeaderIdAndEpoch(leader_id=leader, leader_epoch=epoch)
    return answer


def _follower_read(
    ctx: RequestContext,
    key: FetchPartitionKey,
    located: Located,
    wanted: FetchPartitionRequest,
    replica: int,
    max_bytes: int,
) -> _Read:
    """A follower's fetch: read to the log end, its fetch state updated by the leader's replica
    manager (the ISR and high watermark follow), as an in-process follower reads."""
    topic = located.topic
    part = FollowerFetch(
        topic=topic.name,
        partition=key.partition,
        topic_id=topic.topic_id,
        fetch_offset=wanted.fetch_offset,
        log_start_offset=wanted.log_start_offset,
        current_leader_epoch=wanted.current_leader_epoch if ctx.version >= 9 else -1,
        last_fetched_epoch=wanted.last_fetched_epoch if ctx.version >= 12 else -1,
        max_bytes=wanted.max_bytes,
    )
    answers, size = ctx.broker.replica_manager.read_for_follower(
        replica, [part], max_bytes, ctx.version >= DIVERGING_EPOCH_VERSION
    )
    got = answers[(topic.name, key.partition)]
    if got.error_code != error_codes.NONE:
        return _Read(_not_served(ctx, key, got.error_code), 0)
    answer = PartitionData(
        partition_index=key.partition,
        high_watermark=got.high_watermark,
        last_stable_offset=got.high_watermark,
        log_start_offset=got.log_start_offset,
        records=got.records,
    )
    if got.diverging is not None:
        answer.diverging_epoch = EpochEndOffset(epoch=got.diverging[0], end_offset=got.diverging[1])
    return _Read(answer, size)


def _diverging_epoch(log: PartitionLog, wanted: FetchPartitionRequest) -> EpochEndOffset | None:
    """Where the fetcher's log diverges from this one (KIP-595): its last fetched epoch ends
    earlier here, or is unknown; None when it does not."""
    epoch, end_offset = log.end_offset_for_epoch(wanted.last_fetched_epoch)
    if epoch < wanted.last_fetched_epoch or end_offset < wanted.fetch_offset:
        return EpochEndOffset(epoch=epoch, end_offset=end_offset)
    return None


def _records(
    log: PartitionLog, version: int, wanted: FetchPartitionRequest, limit: int, min_one: bool
) -> bytes:
    """Whole batches from the fetch offset within `limit` bytes; raises OffsetOutOfRange."""
    # A consumer reads up to the high watermark: what every in-sync replica has.
    high_watermark = log.high_watermark
    if version <= 2:
        # Hard limit (before KIP-74): an oversized first batch is cut at the limit.
        read = log.read(wanted.fetch_offset, limit, min_one_batch=True, max_offset=high_watermark)
        return read[:limit]
    return log.read(wanted.fetch_offset, limit, min_one_batch=min_one, max_offset=high_watermark)


def _committed(
    log: PartitionLog, records: bytes, fetch_offset: int, answer: PartitionData
) -> bytes:
    """read_committed: the batches below the last stable offset, and the aborted transactions
    among them listed in `answer`."""
    if answer.last_stable_offset < answer.high_watermark:
        records = _below(records, answer.last_stable_offset)
    if records:
        upper_bound = _last_offset(records) + 1
        answer.aborted_transactions = [
            AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset)
            for t in log.aborted_transactions(fetch_offset, upper_bound)
        ]
    return records


def _last_offset(records: bytes) -> int:
    last = -1
    for batch in iter_batches(records):
        last = batch.last_offset
    return last


async def handle(ctx: RequestContext, request: FetchRequest) -> FetchResponse:
    version = ctx.version
    from_follower = _replica_id(request, version) >= 0
    image = ctx.image
    session = _session(ctx, request, image, from_follower)
    if session.error != error_codes.NONE:
        return FetchResponse(error_code=session.error, session_id=0)
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    total_max = request.max_bytes if version >= 3 else (1 << 31) - 1
    readable = _read_access(ctx, from_follower) if auth.has_authorizer(ctx) else None
    while True:
        # Taken before reading, so a metadata change or an append while the partitions are
        # read counts.
        changed = image.next_change()
        generation = ctx.broker.logs.generation
        reads = await _read_all(ctx, session, request, from_follower, total_max, readable)
        size = sum(r.size for r in reads.values())
        errors = any(r.data.error_code != error_codes.NONE for r in reads.values())
        remaining = deadline - time.monotonic()
        if size >= request.min_bytes or errors or remaining <= 0:
            break
        await _wait_for_news(ctx, changed, generation, remaining)
    return _response(ctx, session, reads)


def _session(
    ctx: RequestContext, request: FetchRequest, image: MetadataImage, from_follower: bool
) -> FetchContext:
    """The request's fetch session (KIP-227): the partitions it asks for and forgets, keyed by
    topic id from v13 (by name before)."""
    version = ctx.version
    uses_ids = version >= TOPIC_IDS_VERSION

    def key_of(topic: str, topic_id: uuid.UUID, partition: int) -> FetchPartitionKey:
        if not uses_ids:
            return FetchPartitionKey(None, topic, partition)
        # An id this broker does not know stays in the session without a name: it is
        # answered UNKNOWN_TOPIC_ID until the topic shows up in the metadata.
        found = _topic_by_id(image, topic_id)
        return FetchPartitionKey(topic_id, "" if found is None else found.name, partition)

    wanted: list[tuple[FetchPartitionKey, FetchPartitionRequest]] = []
    for topic in request.topics:
        for p in topic.partitions:
            wanted.append(
                (
                    key_of(topic.topic, topic.topic_id, p.partition),
                    FetchPartitionRequest(
                        fetch_offset=p.fetch_offset,
                        log_start_offset=p.log_start_offset,
                        max_bytes=p.partition_max_bytes,
                        current_leader_epoch=p.current_leader_epoch,
                        last_fetched_epoch=p.last_fetched_epoch,
                    ),
                )
            )
    forgotten = [
        key_of(t.topic, t.topic_id, p) for t in request.forgotten_topics_data for p in t.partitions
    ]
    return ctx.broker.fetch_sessions.new_context(
        version=version,
        session_id=request.session_id,
        epoch=request.session_epoch,
        fetch_partitions=wanted,
        forgotten=forgotten,
        is_from_follower=from_follower,
        uses_topic_ids=uses_ids,
        now_ms=int(time.time() * 1000),
        topic_names=_TopicNames(image) if uses_ids else None,
    )


async def _wait_for_news(
    ctx: RequestContext, changed: asyncio.Future[None], generation: int, remaining: float
) -> None:
    """DelayedFetch: return once an append may have brought enough bytes, or once the metadata
    changed (`changed` is done: a partition may have lost its leader here, or its topic begun
    being deleted; Kafka then completes a waiting fetch at once, `ReplicaManager.stopPartitions`
    and `makeFollowers` calling `completeDelayedFetchOrProduceRequests`), or after `remaining`
    seconds. The caller reads again and decides. `changed` is shared by every waiter
    (`MetadataImage.next_change`): `asyncio.wait` never cancels it."""
    appended = asyncio.ensure_future(ctx.broker.logs.wait_for_append(remaining, generation))
    try:
        await asyncio.wait((appended, changed), return_when=asyncio.FIRST_COMPLETED)
    finally:
        appended.cancel()
    if appended.done() and not appended.cancelled():
        appended.result()  # its failure is the request's, as when it was awaited


def _read_access(ctx: RequestContext, from_follower: bool) -> Callable[[str], bool]:
    """Which topics this request may read: a follower all or none (CLUSTER_ACTION), a
    consumer READ per topic, decided once per topic for the whole (long-polled) request."""
    if from_follower:
        cluster_action = auth.authorize_cluster(ctx, auth.CLUSTER_ACTION)
        return lambda topic: cluster_action
    check = auth.checker(ctx)
    decided: dict[str, bool] = {}

    def readable(topic: str) -> bool:
        found = decided.get(topic)
        if found is None:
            found = decided[topic] = check(auth.READ, auth.TOPIC, topic)
        return found

    return readable


async def _read_all(
    ctx: RequestContext,
    session: FetchContext,
    request: FetchRequest,
    from_follower: bool,
    total_max: int,
    readable: Callable[[str], bool] | None,
) -> dict[FetchPartitionKey, _Read]:
    pacer = Pacer()
    budget = total_max
    reads: dict[FetchPartitionKey, _Read] = {}
    read_committed = request.isolation_level == READ_COMMITTED and ctx.version >= 4
    for key, wanted in session.partitions_to_read():
        if pacer.due():
            await pacer.pause()
        read = await _read_partition(
            ctx,
            key,
            wanted,
            from_follower=from_follower,
            read_committed=read_committed,
            max_bytes=max(budget, 0),
            # KIP-74: the first batch goes whole until some partition has sent records.
            min_one=budget == total_max,
            readable=readable,
            replica=_replica_id(request, ctx.version),
        )
        budget -= read.size
        reads[key] = read
    return reads


def _response(
    ctx: RequestContext,
    session: FetchContext,
    reads: dict[FetchPartitionKey, _Read],
) -> FetchResponse:
    results = {
        key: FetchPartitionResult(
            error=r.data.error_code,
            high_watermark=r.data.high_watermark,
            last_stable_offset=r.data.last_stable_offset,
            log_start_offset=r.data.log_start_offset,
            preferred_read_replica=r.data.preferred_read_replica,
            has_records=r.size > 0,
        )
        for key, r in reads.items()
    }
    session_id, included = session.response_partitions(results)
    topics: list[FetchableTopicResponse] = []
    by_topic: dict[tuple[str, uuid.UUID | None], FetchableTopicResponse] = {}
    hints: set[int] = set()

    def topic_entry(key: FetchPartitionKey) -> FetchableTopicResponse:
        group = (key.topic, key.topic_id)
        entry = by_topic.get(group)
        if entry is None:
            entry = FetchableTopicResponse(topic=key.topic, topic_id=key.topic_id or ZERO_UUID)
            by_topic[group] = entry
            topics.append(entry)
        return entry

    for key in included:
        data = reads[key].data
        if data.current_leader.leader_id >= 0:
            hints.add(data.current_leader.leader_id)
        topic_entry(key).partitions.append(data)
    if session.error != error_codes.NONE:
        # The session moved on while this request waited (another request took its epoch).
        return FetchResponse(error_code=session.error, session_id=0)
    response = FetchResponse(error_code=error_codes.NONE, session_id=session_id, responses=topics)
    if ctx.version >= LEADER_HINT_VERSION:
        response.node_endpoints = [
            NodeEndpoint(node_id=b, host=info.host or "", port=info.port, rack=info.rack)
            for b in sorted(hints)
            if (info := ctx.image.brokers.get(b)) is not None
        ]
    return response


def error_response(
    request: FetchRequest, version: int, code: int, message: str | None
) -> FetchResponse:
    # Kafka's FetchRequest.getErrorResponse: the code on every partition asked for, and at the
    # top level from v7 (where sessions can fail as a whole).
    return FetchResponse(
        error_code=code if version >= 7 else error_codes.NONE,
        session_id=request.session_id if version >= 7 else 0,
        responses=[
            FetchableTopicResponse(
                topic=t.topic,
                topic_id=t.topic_id,
                partitions=[_error(p.partition, code) for p in t.partitions],
            )
            for t in request.topics
        ],
    )
