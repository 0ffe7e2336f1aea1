"""DeleteRecords: move a partition's log start offset forward (KIP-107; docs/kafka-behaviour.md
§15).

Kafka 3.9's flow (`KafkaApis.handleDeleteRecordsRequest`, `ReplicaManager.deleteRecords`,
`Partition.deleteRecordsOnLeader`, `UnifiedLog.maybeIncrementLogStartOffset`):

* DELETE on the topic first, else TOPIC_AUTHORIZATION_FAILED (before the topic's existence);
* unknown partition -> UNKNOWN_TOPIC_OR_PARTITION; not the leader -> NOT_LEADER_OR_FOLLOWER;
* a topic whose `cleanup.policy` lacks `delete` -> POLICY_VIOLATION;
* offset -1 means the high watermark; a negative offset, or one above the high watermark ->
  OFFSET_OUT_OF_RANGE;
* else the log start offset becomes the offset (never moves back), whole segments below it
  are dropped, and `low_watermark` answers the new log start offset (-1 on error).

* then the answer waits, under the request's timeout, until the low watermark (the smallest log
  start offset of the leader and its live followers, which follow the leader's in their fetches)
  reached every deleted partition's new log start (DelayedDeleteRecords); a partition still
  short at the deadline answers REQUEST_TIMED_OUT with the low watermark it had.
"""

from __future__ import annotations

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.delete_records import (
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.partitions import Located, locate, open_log
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.DELETE_RECORDS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "moves the log start offset; `-1` = high watermark; POLICY_VIOLATION on compact-only "
    "topics"
)

HIGH_WATERMARK = -1


def _failed(index: int, code: int) -> DeleteRecordsPartitionResult:
    return DeleteRecordsPartitionResult(partition_index=index, low_watermark=-1, error_code=code)


async def _delete(
    ctx: RequestContext, topic: str, index: int, offset: int
) -> tuple[DeleteRecordsPartitionResult, int | None]:
    """The local deletion (`Partition.deleteRecordsOnLeader`): the partition's result, and the
    offset the low watermark must reach before it is answered (None: answered as it is)."""
    located = locate(ctx.image, ctx.broker.broker_id, topic, index)
    if not isinstance(located, Located):
        return _failed(index, located), None
    log, config = await open_log(ctx, located)
    if "delete" not in config.cleanup_policy:
        return _failed(index, error_codes.POLICY_VIOLATION), None
    target = log.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0 or target > log.high_watermark:
        return _failed(index, error_codes.OFFSET_OUT_OF_RANGE), None
    with log.append_lock():
        if target > log.log_start_offset:
            log.delete_records_before(target)
    low = ctx.broker.replica_manager.low_watermark((topic, index))
    if low is None:  # the leadership moved meanwhile
        return _failed(index, error_codes.NOT_LEADER_OR_FOLLOWER), None
    result = DeleteRecordsPartitionResult(
        partition_index=index, low_watermark=low, error_code=error_codes.NONE
    )
    return result, target


async def handle(ctx: RequestContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
    pacer = Pacer()
    topics: list[DeleteRecordsTopicResult] = []
    required: dict[tuple[str, int], int] = {}
    results: dict[tuple[str, int], DeleteRecordsPartitionResult] = {}
    for topic in request.topics:
        answers: list[DeleteRecordsPartitionResult] = []
        for p in topic.partitions:
            if pacer.due():
                await pacer.pause()
            if not auth.authorize(ctx, auth.DELETE, auth.TOPIC, topic.name):
                # KafkaApis: DELETE on the topic, checked before the topic's existence.
                answers.append(_failed(p.partition_index, error_codes.TOPIC_AUTHORIZATION_FAILED))
                continue
            result, target = await _delete(ctx, topic.name, p.partition_index, p.offset)
            answers.append(result)
            if target is not None:
                required[(topic.name, p.partition_index)] = target
                results[(topic.name, p.partition_index)] = result
        topics.append(DeleteRecordsTopicResult(name=topic.name, partitions=answers))
    if required:
        waited = await ctx.broker.replica_manager.wait_for_deletions(required, request.timeout_ms)
        for tp, (code, low) in waited.items():
            results[tp].error_code = code
            if low is not None:
                results[tp].low_watermark = low
    return DeleteRecordsResponse(topics=topics)


def error_response(
    request: DeleteRecordsRequest, version: int, code: int, message: str | None
) -> DeleteRecordsResponse:
    return DeleteRecordsResponse(
        topics=[
            DeleteRecordsTopicResult(
                name=t.name, partitions=[_failed(p.partition_index, code) for p in t.partitions]
            )
            for t in request.topics
        ]
    )
