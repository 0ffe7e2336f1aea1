"""OffsetDelete: delete a group's committed offsets (KIP-496, docs/kafka-behaviour.md §16).

Kafka 3.9's ``KafkaApis.handleOffsetDeleteRequest`` and ``GroupCoordinator.handleDeleteOffsets``:
READ on the group first (else GROUP_AUTHORIZATION_FAILED); a null id is INVALID_GROUP_ID;
COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR; a partition of a topic
the caller may not READ is TOPIC_AUTHORIZATION_FAILED, one of a topic this broker's metadata does
not know is UNKNOWN_TOPIC_OR_PARTITION; an unknown group GROUP_ID_NOT_FOUND. An Empty group loses
the named offsets; a live ``consumer`` group only those of topics it does not subscribe to (the
others answer GROUP_SUBSCRIBED_TO_TOPIC); any other live group is NON_EMPTY_GROUP. Tombstones are
written to ``__consumer_offsets``; an Empty group with no offset left is removed.

Groups of the ZooKeeper registry are not served here (Kafka never offered OffsetDelete for them):
they answer GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from zkbroker.broker.asyncutil import now_ms
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import (
    coordinator,
    group_status,
    offsets_topic_ready,
)
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.OFFSET_DELETE
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = "KIP-496: GROUP_SUBSCRIBED_TO_TOPIC for topics the group still consumes"


async def handle(ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    group_id = request.group_id
    if not auth.authorize(ctx, auth.READ, auth.GROUP, group_id):  # KafkaApis: READ on the group
        return OffsetDeleteResponse(error_code=error_codes.GROUP_AUTHORIZATION_FAILED)
    code = group_status(ctx, group_id)
    if code == error_codes.NONE and not offsets_topic_ready(ctx):
        code = error_codes.GROUP_ID_NOT_FOUND
    if code != error_codes.NONE:
        return OffsetDeleteResponse(error_code=code)
    image = ctx.image
    codes: dict[tuple[str, int], int] = {}
    wanted: list[tuple[str, int]] = []
    for topic in request.topics:
        known = image.topics.get(topic.name)
        topic_allowed = auth.authorize(ctx, auth.READ, auth.TOPIC, topic.name)  # KafkaApis
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if not topic_allowed:
                codes[tp] = error_codes.TOPIC_AUTHORIZATION_FAILED
            elif known is None or p.partition_index not in known.partitions:
                codes[tp] = error_codes.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted.append(tp)
    gc = coordinator(ctx)
    group_error, deleted = gc.machine.delete_offsets(group_id, wanted, now_ms())
    gc.touch(group_id)
    if group_error != error_codes.NONE:
        return OffsetDeleteResponse(error_code=group_error)
    codes.update(deleted)
    return OffsetDeleteResponse(
        error_code=error_codes.NONE,
        topics=[
            OffsetDeleteResponseTopic(
                name=topic.name,
                partitions=[
                    OffsetDeleteResponsePartition(
                        partition_index=p.partition_index,
                        error_code=codes.get((topic.name, p.partition_index), error_codes.NONE),
                    )
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ],
    )


def error_response(
    request: OffsetDeleteRequest, version: int, code: int, message: str | None
) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(error_code=code)
