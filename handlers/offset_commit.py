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

Groups of the group coordinator (docs/kafka-behaviour.md §16): once ``__consumer_offsets``
exists, a v1+ commit for a group the coordinator holds, or for a group the registry does not
hold, goes to the coordinator (``GroupStateMachine.commit_offsets``: the same generation and
member checks, FENCED_INSTANCE_ID for static members (v7+), REBALANCE_IN_PROGRESS while
completing a rebalance) and is stored as an ``OffsetCommitValue`` record with its metadata,
leader epoch (v6+), commit time (v1's explicit commit timestamp, else now) and, for v2-v4
with a retention time, its expiry (now + retention).

Not emulated: authorization, KIP-848 member epochs (v9 commits are checked as classic
generations); registry groups ignore group_instance_id.
"""

from __future__ import annotations

from zkbroker.broker.asyncutil import now_ms
from zkbroker.broker.groups.zk_registry import ConsumerGroup, load_groups, storable, write_offsets
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from zkbroker.broker.rules.groups.classic_group import CommittedOffset
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import (
    classic_group_known,
    coordinator,
    group_status,
    offsets_topic_ready,
    partition_code_answers,
)
from zkbroker.zk_layout.errors import ZkOperationError
from zkbroker.zk_layout.nodes.base import TopicPartition

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
    if not auth.authorize(ctx, auth.READ, auth.GROUP, request.group_id):  # KafkaApis
        return error_response(request, version, error_codes.GROUP_AUTHORIZATION_FAILED, None)
    for topic in request.topics:
        known = image.topics.get(topic.name)
        topic_allowed = auth.authorize(ctx, auth.READ, auth.TOPIC, topic.name)
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if not topic_allowed:
                codes[tp] = error_codes.TOPIC_AUTHORIZATION_FAILED
            elif known is None or tp.partition not in known.partitions:
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
                classic = classic_group_known(ctx, group_id)
                group = None
                if not classic:
                    group = (await load_groups(ctx.broker.store, [group_id]))[group_id]
                    classic = group is None and offsets_topic_ready(ctx)
                if classic:
                    codes.update(_commit_classic(ctx, request, to_commit))
                    return _response(request, codes)
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


def _commit_classic(
    ctx: RequestContext, request: OffsetCommitRequest, wanted: dict[TopicPartition, int]
) -> dict[TopicPartition, int]:
    version = ctx.version
    now = now_ms()
    retention = request.retention_time_ms if 2 <= version <= 4 else -1
    offsets: dict[tuple[str, int], CommittedOffset] = {}
    for topic in request.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if tp in wanted:
                offsets[(tp.topic, tp.partition)] = CommittedOffset(
                    offset=p.committed_offset,
                    leader_epoch=p.committed_leader_epoch if version >= 6 else -1,
                    metadata=p.committed_metadata or "",
                    # Only v1 carries a commit timestamp; -1 there means "now" too.
                    commit_timestamp=p.commit_timestamp
                    if version == 1 and p.commit_timestamp != -1
                    else now,
                    expire_timestamp=now + retention if retention >= 0 else None,
                )
    gc = coordinator(ctx)
    result = gc.machine.commit_offsets(
        request.group_id,
        request.member_id,
        request.group_instance_id if version >= 7 else None,
        request.generation_id_or_member_epoch,
        offsets,
        now,
    )
    gc.touch(request.group_id)
    return {TopicPartition(t, p): code for (t, p), code in result.items()}


def _response(
    request: OffsetCommitRequest, codes: dict[TopicPartition, int]
) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        topics=partition_code_answers(
            request.topics,
            lambda t, p: codes[TopicPartition(t, p)],
            OffsetCommitResponseTopic,
            OffsetCommitResponsePartition,
        )
    )


def error_response(
    request: OffsetCommitRequest, version: int, code: int, message: str | None
) -> OffsetCommitResponse:
    codes = {
        TopicPartition(t.name, p.partition_index): code
        for t in request.topics
        for p in t.partitions
    }
    return _response(request, codes)
