"""OffsetCommit: committed offsets, in the coordinator or the registry.

Kafka 2.8/3.9's `KafkaApis.handleOffsetCommitRequest` and `GroupCoordinator.handleCommitOffsets`
(docs/kafka-behaviour.md §16, "OffsetCommit", "zkbroker's deviations"): READ on the group and
on each topic, then the per-partition checks. v0 writes `/consumers/<g>/offsets/<t>/<p>` with
no group checks. v1+: a group the group coordinator holds, or one the registry does not hold
once `__consumer_offsets` exists, goes to the coordinator (`GroupStateMachine.commit_offsets`);
any other is a registry group (§1.11), checked against its registered members and generation
(the cversion of `/consumers/<g>/ids`; generation < 0 creates it), its offset stored bare.

Not here: KIP-848 member epochs (v9 is checked as a classic generation); registry groups
ignore `group_instance_id` and store no metadata, leader epoch or expiry.
"""

from __future__ import annotations

from zkbroker.broker.asyncutil import now_ms
from zkbroker.broker.groups.zk_registry import ConsumerGroup, load_groups, storable, write_offsets
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
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
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout.errors import ZkOperationError
from zkbroker.zk_layout.nodes.base import TopicPartition

API_KEY = ApiKey.OFFSET_COMMIT
ZK_TROUBLE_FAMILY = Family.GROUPS
README_NOTE = (
    "coordinator groups: records in `__consumer_offsets`, members and generations checked "
    "as Kafka checks them; `/consumers` groups: those znodes"
)

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
                    codes.update(await _commit_classic(ctx, request, to_commit))
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


async def _commit_classic(
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
    mark = gc.mark(request.group_id)
    result = gc.machine.commit_offsets(
        request.group_id,
        request.member_id,
        request.group_instance_id if version >= 7 else None,
        request.generation_id_or_member_epoch,
        offsets,
        now,
    )
    gc.touch(request.group_id)
    result = await gc.commit_replicated(mark, result)
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
