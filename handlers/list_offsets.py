"""ListOffsets: a partition's offsets by position or by time.

Follows Kafka 3.9's `KafkaApis.handleListOffsetRequest` and `UnifiedLog.fetchOffsetByTimestamp`
(docs/kafka-behaviour.md §15: "Who answers", "ListOffsets"), authorization included; v0's
offset list is Kafka's `legacyFetchOffsetsBefore`.

A client's request (replica id < 0) to a leader whose high watermark has not yet reached the
log end it had when its leadership began gets OFFSET_NOT_AVAILABLE for the latest offset, and for
a timestamp found at or past the last fetchable offset (KIP-207, from 2.2).
"""

from __future__ import annotations

import time
from collections import Counter

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from zkbroker.broker.storage import PartitionLog
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.partitions import Located, locate, open_log
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.LIST_OFFSETS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "earliest, latest, by timestamp, max timestamp (KIP-734), earliest local / latest "
    "tiered; v0's offset lists"
)

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
DEBUGGING_REPLICA = -2
READ_COMMITTED = 1
NO_TIMESTAMP = -1


OFFSET_NOT_AVAILABLE_SINCE = (2, 2)


def _failed(index: int, code: int, version: int) -> ListOffsetsPartitionResponse:
    answer = ListOffsetsPartitionResponse(
        partition_index=index, error_code=code, timestamp=-1, offset=-1, leader_epoch=-1
    )
    if version == 0:
        answer.old_style_offsets = []
    return answer


def _legacy_offsets(log: PartitionLog, timestamp: int, limit: int) -> list[int]:
    """Kafka's `legacyFetchOffsetsBefore`: (offset, time) points newest first."""
    points = [(base, modified) for base, modified in log.segment_points()]
    if log.size_bytes and (not points or points[-1][0] != log.log_end_offset):
        points.append((log.log_end_offset, int(time.time() * 1000)))
    if timestamp == LATEST:
        start = len(points) - 1
    elif timestamp == EARLIEST:
        start = 0
    else:
        start = -1
        for i, (_, modified) in enumerate(points):
            if modified <= timestamp:
                start = i
    return [points[start - j][0] for j in range(min(limit, start + 1))]


def _hw_lagging(ctx: RequestContext, topic: str, partition: int) -> bool:
    """A new leader's high watermark still below its log end at the start of its epoch
    (Partition.fetchOffsetForTimestamp's maybeOffsetsError)."""
    if ctx.release < OFFSET_NOT_AVAILABLE_SINCE:
        return False
    hosted = ctx.broker.replica_manager.hosting((topic, partition))
    if hosted is None or hosted.leading is None:
        return False
    return hosted.leader_epoch_start_offset > hosted.log.high_watermark


def _answer(
    ctx: RequestContext,
    located: Located,
    log: PartitionLog,
    wanted: ListOffsetsPartition,
    committed: bool,
    from_replica: bool = False,
    hw_lagging: bool = False,
) -> ListOffsetsPartitionResponse:
    version = ctx.version
    index = wanted.partition_index
    timestamp = wanted.timestamp
    if version == 0:
        answer = _failed(index, error_codes.NONE, 0)
        answer.old_style_offsets = _legacy_offsets(log, timestamp, wanted.max_num_offsets)
        return answer
    # Partition.fetchOffsetForTimestamp's lastFetchableOffset (docs/kafka-behaviour.md §17).
    # A follower (a replica id) reads to the log end; a consumer to the high watermark.
    if from_replica:
        last_fetchable = log.log_end_offset
    else:
        last_fetchable = log.last_stable_offset if committed else log.high_watermark
    offset, found_ts, epoch = -1, NO_TIMESTAMP, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        offset = log.log_start_offset
        epoch = log.epoch_for_offset(offset)
    elif timestamp == LATEST:
        if hw_lagging:
            return _failed(index, error_codes.OFFSET_NOT_AVAILABLE, version)
        offset = last_fetchable
        epoch = located.partition.leader_epoch
    elif timestamp == LATEST_TIERED:
        offset, epoch = -1, -1
    elif timestamp == MAX_TIMESTAMP:
        hit = log.max_timestamp_offset()
        if hit is not None:
            offset, found_ts, epoch = hit.offset, hit.timestamp, hit.leader_epoch
    else:
        hit = log.offset_for_timestamp(timestamp)
        if hit is not None and hit.offset < last_fetchable:
            offset, found_ts, epoch = hit.offset, hit.timestamp, hit.leader_epoch
        elif hw_lagging:
            return _failed(index, error_codes.OFFSET_NOT_AVAILABLE, version)
    return ListOffsetsPartitionResponse(
        partition_index=index,
        error_code=error_codes.NONE,
        timestamp=found_ts,
        offset=offset,
        leader_epoch=epoch if version >= 4 else -1,
    )


async def handle(ctx: RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
    version = ctx.version
    counts = Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    committed = version >= 2 and request.isolation_level == READ_COMMITTED
    leader_only = request.replica_id != DEBUGGING_REPLICA
    pacer = Pacer()
    topics: list[ListOffsetsTopicResponse] = []
    unauthorized: list[ListOffsetsTopicResponse] = []
    describable = (
        auth.filter_authorized(ctx, auth.DESCRIBE, auth.TOPIC, [t.name for t in request.topics])
        if auth.has_authorizer(ctx)
        else None
    )
    for topic in request.topics:
        if describable is not None and topic.name not in describable:
            unauthorized.append(
                ListOffsetsTopicResponse(
                    name=topic.name,
                    partitions=[
                        _failed(p.partition_index, error_codes.TOPIC_AUTHORIZATION_FAILED, version)
                        for p in topic.partitions
                    ],
                )
            )
            continue
        answers: list[ListOffsetsPartitionResponse] = []
        for wanted in topic.partitions:
            if pacer.due():
                await pacer.pause()
            index = wanted.partition_index
            if version >= 1 and counts[(topic.name, index)] > 1:
                answers.append(_failed(index, error_codes.INVALID_REQUEST, version))
                continue
            located = locate(
                ctx.image,
                ctx.broker.broker_id,
                topic.name,
                index,
                leader_only=leader_only,
                current_leader_epoch=wanted.current_leader_epoch if version >= 4 else -1,
            )
            if not isinstance(located, Located):
                answers.append(_failed(index, located, version))
                continue
            log, _config = await open_log(ctx, located)
            from_replica = request.replica_id >= 0
            lagging = not from_replica and _hw_lagging(ctx, topic.name, index)
            answers.append(_answer(ctx, located, log, wanted, committed, from_replica, lagging))
        topics.append(ListOffsetsTopicResponse(name=topic.name, partitions=answers))
    return ListOffsetsResponse(topics=topics + unauthorized)


def error_response(
    request: ListOffsetsRequest, version: int, code: int, message: str | None
) -> ListOffsetsResponse:
    return ListOffsetsResponse(
        topics=[
            ListOffsetsTopicResponse(
                name=t.name,
                partitions=[_failed(p.partition_index, code, version) for p in t.partitions],
            )
            for t in request.topics
        ]
    )
