"""DeleteTopics: marks topics for deletion and waits for the controller to delete them.

Follows Kafka 2.8 (docs/kafka-behaviour.md §3.1), authorization and the controller mutation
quota (§22, `zkbroker.broker.security.quotas.mutation_quota_for`) included; the controller's
side is §10.6 (`zkbroker.broker.controller.topics`). Waiting ends when the topic is gone from
this process's metadata image.
"""

from __future__ import annotations

import contextlib
import uuid

from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.delete_topics import (
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicState,
)
from zkbroker.broker.security.quotas import ControllerMutationQuota, mutation_quota_for
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout import DeleteTopicMarkerNode, NodeExistsError, TopicNode

API_KEY = ApiKey.DELETE_TOPICS
ZK_TROUBLE_FAMILY = Family.TOPIC_ADMIN
README_NOTE = (
    "marks `/admin/delete_topics/<t>`, the controller deletes; waits within `timeout_ms`; "
    "v6 by topic id"
)

ZERO_UUID = uuid.UUID(int=0)


def _entries(request: DeleteTopicsRequest, version: int) -> list[DeleteTopicState]:
    if version >= 6:
        return list(request.topics)
    return [DeleteTopicState(name=name) for name in request.topic_names]


def _result(entry: DeleteTopicState, code: int) -> DeletableTopicResult:
    return DeletableTopicResult(
        name=entry.name, topic_id=entry.topic_id, error_code=code, error_message=None
    )


async def handle(ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    version = ctx.version
    entries = _entries(request, version)
    refused = _refused(ctx, request, entries)
    if refused is not None:
        return refused
    image = ctx.image
    results, to_delete = _checked(ctx, image, entries)
    # KafkaApis: quotas.controllerMutation.newQuotaFor(request, strictSinceVersion = 5).
    quota = mutation_quota_for(
        ctx.broker, API_KEY, version, ctx.connection.principal, ctx.header.client_id
    )
    marked = await _mark(ctx, image, to_delete, quota)
    if marked:
        done = request.timeout_ms > 0 and await image.wait_for(
            lambda i: not any(n in i.topics for n in marked), request.timeout_ms / 1000
        )
        if not done:
            for name in marked:
                if name in image.topics:
                    to_delete[name].error_code = error_codes.REQUEST_TIMED_OUT
    return DeleteTopicsResponse(throttle_time_ms=quota.throttle_time_ms, responses=results)


def _refused(
    ctx: RequestContext, request: DeleteTopicsRequest, entries: list[DeleteTopicState]
) -> DeleteTopicsResponse | None:
    """The answer to a request refused as a whole: not the controller, deletion disabled, a
    topic named by both name and id; None for the others."""
    version = ctx.version
    if not ctx.broker.is_controller:
        return DeleteTopicsResponse(
            responses=[_result(e, error_codes.NOT_CONTROLLER) for e in entries]
        )
    if not ctx.broker.settings.delete_topic_enable:
        code = error_codes.INVALID_REQUEST if version < 3 else error_codes.TOPIC_DELETION_DISABLED
        return DeleteTopicsResponse(responses=[_result(e, code) for e in entries])
    if any(e.name is not None and e.topic_id != ZERO_UUID for e in entries):
        return error_response(request, version, error_codes.INVALID_REQUEST, None)
    return None


def _checked(
    ctx: RequestContext, image: MetadataImage, entries: list[DeleteTopicState]
) -> tuple[list[DeletableTopicResult], dict[str, DeletableTopicResult]]:
    """Each entry's result after the id, authorization and existence checks, and the result
    of each topic to delete (its first entry's)."""
    results: list[DeletableTopicResult] = []
    to_delete: dict[str, DeletableTopicResult] = {}
    for entry in entries:
        name = entry.name
        if entry.topic_id != ZERO_UUID:
            found = image.topic_by_id(entry.topic_id)
            name = found.name if found is not None else None
        result = DeletableTopicResult(
            name=name, topic_id=entry.topic_id, error_code=error_codes.NONE, error_message=None
        )
        results.append(result)
        if name is None:
            result.error_code = error_codes.UNKNOWN_TOPIC_ID
        elif entry.topic_id != ZERO_UUID and not auth.authorize(
            ctx, auth.DESCRIBE, auth.TOPIC, name
        ):
            # KafkaApis: without DESCRIBE the name a topic id resolved to is not disclosed.
            result.name = None
            result.error_code = error_codes.TOPIC_AUTHORIZATION_FAILED
        elif not auth.authorize(ctx, auth.DELETE, auth.TOPIC, name):
            result.error_code = error_codes.TOPIC_AUTHORIZATION_FAILED
        elif name not in image.topics:
            result.error_code = error_codes.UNKNOWN_TOPIC_OR_PARTITION
        else:
            to_delete.setdefault(name, result)
    return results, to_delete


async def _mark(
    ctx: RequestContext,
    image: MetadataImage,
    to_delete: dict[str, DeletableTopicResult],
    quota: ControllerMutationQuota,
) -> list[str]:
    """Write `/admin/delete_topics/<t>` for each topic the quota allows and ZooKeeper still
    holds; the topics marked."""
    store = ctx.broker.store
    marked: list[str] = []
    for name, result in to_delete.items():
        # ZkAdminManager.deleteTopics: each topic is charged the partitions the metadata knows,
        # before AdminZkClient.deleteTopic looks at ZooKeeper.
        known = image.topics.get(name)
        if not quota.record(len(known.partitions) if known is not None else 0):
            result.error_code = error_codes.THROTTLING_QUOTA_EXCEEDED
            continue
        if await store.exists(TopicNode.path(name)) is None:
            result.error_code = error_codes.UNKNOWN_TOPIC_OR_PARTITION
            continue
        # Already marked counts as success: Kafka waits for the deletion all the same.
        with contextlib.suppress(NodeExistsError):
            await store.create(DeleteTopicMarkerNode.path(name), None, makepath=True)
        marked.append(name)
    return marked


def error_response(
    request: DeleteTopicsRequest, version: int, code: int, message: str | None
) -> DeleteTopicsResponse:
    return DeleteTopicsResponse(responses=[_result(e, code) for e in _entries(request, version)])
