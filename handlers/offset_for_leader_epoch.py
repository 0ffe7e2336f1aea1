"""OffsetForLeaderEpoch: where a leader epoch ended in a partition's log (KIP-101, KIP-320;
docs/kafka-behaviour.md §15).

Kafka 3.9's flow (`KafkaApis.handleOffsetForLeaderEpochRequest`,
`ReplicaManager.lastOffsetForLeaderEpoch`, `Partition.lastOffsetForLeaderEpoch`,
`LeaderEpochFileCache.endOffsetFor`):

* unknown partition -> UNKNOWN_TOPIC_OR_PARTITION; only the leader answers unless the
  requester is the debugging replica (-2, v3+) -> NOT_LEADER_OR_FOLLOWER; a stale or future
  `current_leader_epoch` (v2+) -> FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH;
* else the largest epoch at or below the one asked for and the offset where it ended (the
  start of the next epoch, or the log end for the latest), -1/-1 when the log knows no such
  epoch. A leader records its epoch when it takes over, so the current epoch is known even
  before a record was written in it.

Authorization (with an authorizer): CLUSTER_ACTION on the cluster (brokers) allows every
topic; otherwise (KIP-320 consumers) each topic needs DESCRIBE, else its partitions are
TOPIC_AUTHORIZATION_FAILED, answered after the authorized topics as Kafka does.
"""

from __future__ import annotations

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopicResult,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.partitions import Located, locate, open_log
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = "from the log's leader epoch cache; fencing by `current_leader_epoch`"

DEBUGGING_REPLICA = -2


def _failed(index: int, code: int) -> EpochEndOffset:
    return EpochEndOffset(error_code=code, partition=index, leader_epoch=-1, end_offset=-1)


async def _end_offset(
    ctx: RequestContext, topic: str, wanted: OffsetForLeaderPartition, leader_only: bool
) -> EpochEndOffset:
    version = ctx.version
    located = locate(
        ctx.image,
        ctx.broker.broker_id,
        topic,
        wanted.partition,
        leader_only=leader_only,
        current_leader_epoch=wanted.current_leader_epoch if version >= 2 else -1,
    )
    if not isinstance(located, Located):
        return _failed(wanted.partition, located)
    log, _config = await open_log(ctx, located)
    epoch, end_offset = log.end_offset_for_epoch(wanted.leader_epoch)
    return EpochEndOffset(
        error_code=error_codes.NONE,
        partition=wanted.partition,
        leader_epoch=epoch,
        end_offset=end_offset,
    )


async def handle(
    ctx: RequestContext, request: OffsetForLeaderEpochRequest
) -> OffsetForLeaderEpochResponse:
    leader_only = ctx.version < 3 or request.replica_id != DEBUGGING_REPLICA
    pacer = Pacer()
    topics: list[OffsetForLeaderTopicResult] = []
    unauthorized: list[OffsetForLeaderTopicResult] = []
    describable: set[str] | None = None
    if auth.has_authorizer(ctx) and not auth.authorize_cluster(
        ctx, auth.CLUSTER_ACTION, log_if_denied=False
    ):
        describable = auth.filter_authorized(
            ctx, auth.DESCRIBE, auth.TOPIC, [t.topic for t in request.topics]
        )
    for topic in request.topics:
        if describable is not None and topic.topic not in describable:
            denied = error_codes.TOPIC_AUTHORIZATION_FAILED
            unauthorized.append(
                OffsetForLeaderTopicResult(
                    topic=topic.topic,
                    partitions=[_failed(p.partition, denied) for p in topic.partitions],
                )
            )
            continue
        results: list[EpochEndOffset] = []
        for wanted in topic.partitions:
            if pacer.due():
                await pacer.pause()
            results.append(await _end_offset(ctx, topic.topic, wanted, leader_only))
        topics.append(OffsetForLeaderTopicResult(topic=topic.topic, partitions=results))
    return OffsetForLeaderEpochResponse(topics=topics + unauthorized)


def error_response(
    request: OffsetForLeaderEpochRequest, version: int, code: int, message: str | None
) -> OffsetForLeaderEpochResponse:
    return OffsetForLeaderEpochResponse(
        topics=[
            OffsetForLeaderTopicResult(
                topic=t.topic, partitions=[_failed(p.partition, code) for p in t.partitions]
            )
            for t in request.topics
        ]
    )
