"""OffsetCommit (key 8), versions 0-9: offsets written to ``/consumers/<g>/offsets/<t>/<p>``.

Per partition, as Kafka 2.8/3.9 (``KafkaApis.handleOffsetCommitRequest``,
``GroupCoordinator.handleCommitOffsets``/``doCommitOffsets``):
- a partition missing from this broker's metadata: UNKNOWN_TOPIC_OR_PARTITION;
- committed metadata longer than 4096 characters (``offset.metadata.max.bytes``):
  OFFSET_METADATA_TOO_LARGE;
- v0 writes ZooKeeper directly, with no group checks (Kafka's own v0 path);
- v1+: a group id ZooKeeper cannot hold (e.g. ""): INVALID_GROUP_ID; not the coordinator:
  NOT_COORDINATOR; then
  * no such group: a commit with generation < 0 (a "simple"/admin commit) creates it; any
    other generation: ILLEGAL_GENERATION;
  * an Empty group (no registered members) with generation < 0: committed;
  * otherwise the committer must be a registered member (UNKNOWN_MEMBER_ID) committing with
    the group's generation (ILLEGAL_GENERATION): the cversion of ``/consumers/<g>/ids``.
Offsets are written as Kafka's ``setOrCreateConsumerOffset`` writes them (decimal text, parents
created); the metadata string, leader epoch, timestamps and retention are not stored.

Not emulated: authorization, static membership (group_instance_id is ignored), KIP-848
member epochs (v9 commits are checked as classic generations).
"""

from __future__ import annotations

from broker.groups.zk_registry import ConsumerGroup, load_groups, storable, write_offsets
from broker.protocol import error_codes
from broker.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from handlers.context import RequestContext
from handlers.support.group_coordination import group_status
from zk_layout.errors import ZkOperationError
from zk_layout.nodes.base import TopicPartition

API_KEY = 8
MIN_VERSION = 0
MAX_VERSION = 9

OFFSET_METADATA_MAX_BYTES = 4096


def _group_error(group: ConsumerGroup | None, request: OffsetCommitRequest) -> int:
    generation = request.generation_id_or_member_epoch
    if group is None:
        return error_codes.NONE if generation < 0 else error_codes.ILLEGAL_GENERATION
    if generation < 0 and not group.members:
        return error_codes.NONE
    if request.member_id not in group.members:
        return error_codes.UNKNOWN_MEMBER_ID
    if generation != group.generation:
        return error_codes.ILLEGAL_GENERATION
    return error_codes.NONE


async def handle(ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
    version = ctx.version
    image = ctx.image
    codes: dict[TopicPartition, int] = {}
    to_commit: dict[TopicPartition, int] = {}
    for topic in request.topics:
        known = image.topics.get(topic.name)
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if known is None or tp.partition not in known.partitions:
                codes[tp] = error_codes.UNKNOWN_TOPIC_OR_PARTITION
            elif len(p.committed_metadata or "") > OFFSET_METADATA_MAX_BYTES:
                codes[tp] = error_codes.OFFSET_METADATA_TOO_LARGE
            else:
                to_commit[tp] = p.committed_offset

    group_id = request.group_id
    if to_commit:
        code = error_codes.NONE
        if not storable(group_id):
            code = error_codes.INVALID_GROUP_ID
        elif version >= 1:
            code = group_status(ctx, group_id)
            if code == error_codes.NONE:
                group = (await load_groups(ctx.broker.store, [group_id]))[group_id]
                code = _group_error(group, request)
        if code != error_codes.NONE:
            codes.update(dict.fromkeys(to_commit, code))
            to_commit = {}

    if to_commit:
        outcomes = await write_offsets(ctx.broker.store, group_id, to_commit)
        for tp, failure in outcomes.items():
            if failure is None:
                codes[tp] = error_codes.NONE
            elif isinstance(failure, ZkOperationError):
                codes[tp] = error_codes.UNKNOWN_SERVER_ERROR
            else:
                raise failure
    return _response(request, codes)


def _response(
    request: OffsetCommitRequest, codes: dict[TopicPartition, int]
) -> OffsetCommitResponse:
    topics = []
    for topic in request.topics:
        topics.append(
            OffsetCommitResponseTopic(
                name=topic.name,
                partitions=[
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=codes[TopicPartition(topic.name, p.partition_index)],
                    )
                    for p in topic.partitions
                ],
            )
        )
    return OffsetCommitResponse(topics=topics)


def error_response(
    request: OffsetCommitRequest, version: int, code: int, message: str | None
) -> OffsetCommitResponse:
    codes = {
        TopicPartition(t.name, p.partition_index): code
        for t in request.topics
        for p in t.partitions
    }
    return _response(request, codes)
