"""Metadata (key 3), versions 0-12: brokers, controller, cluster id and topic partitions.

Answered from the process's metadata image (kafka-zk-semantics §8;
2.8.0 KafkaApis.handleTopicMetadataRequest and MetadataCache.getPartitionMetadata):
- Which topics: v0 empty list = all topics; v1+ null = all, [] = none. Names are
  de-duplicated. v12 (emulated release 3.1+) looks topics up by id when ids are given, and
  unknown ids get UNKNOWN_TOPIC_ID with a null name. Below v12 a null name or a non-zero id
  fails the whole request with INVALID_REQUEST on 3.x releases; 2.8 ignores ids.
- Brokers: alive brokers with an endpoint for the listener the request arrived on.
- Partitions: leader not alive -> LEADER_NOT_AVAILABLE with leader -1 (replicas and ISR
  still listed); leader alive without this listener -> LEADER_NOT_AVAILABLE below v6,
  LISTENER_NOT_FOUND from v6. v0 only: replicas and ISR filtered to alive brokers, and
  REPLICA_NOT_AVAILABLE when that removed any. offline_replicas (v5+) = replicas whose
  broker is not alive.
- A missing topic: UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION for an illegal
  name. Topics marked for deletion are not listed (Kafka's cache drops them once the
  controller starts deleting).
- *_authorized_operations: everything the resource type supports when asked (there is no
  authorizer), Integer.MIN_VALUE otherwise.

Not here yet: automatic topic creation (allow_auto_topic_creation), added with CreateTopics.
"""

from __future__ import annotations

import uuid

from broker.metadata import MetadataImage, PartitionImage, TopicImage
from broker.protocol import error_codes
from broker.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from handlers import acl_operations, topic_names
from handlers.context import RequestContext

API_KEY = 3
MIN_VERSION = 0
MAX_VERSION = 12

ZERO_UUID = uuid.UUID(int=0)


class _InvalidRequest(Exception):
    pass


def reachable_brokers(image: MetadataImage, listener: str) -> dict[int, tuple[str, int]]:
    """Alive brokers that have an endpoint for `listener`: id -> (host, port)."""
    reachable = {}
    for broker_id, info in image.brokers.items():
        for endpoint in info.endpoints:
            if endpoint.listener == listener:
                # A listener registered without a host (all interfaces) has a null host.
                reachable[broker_id] = (endpoint.host or "", endpoint.port)
                break
    return reachable


def response_brokers(image: MetadataImage, listener: str) -> list[MetadataResponseBroker]:
    return [
        MetadataResponseBroker(
            node_id=broker_id, host=host, port=port, rack=image.brokers[broker_id].rack
        )
        for broker_id, (host, port) in sorted(reachable_brokers(image, listener).items())
    ]


class _TopicRenderer:
    """Builds response topics for one request; live brokers are looked up once per request."""

    def __init__(self, image: MetadataImage, listener: str, version: int, with_ops: bool) -> None:
        self.alive = image.brokers.keys()
        self.reachable = reachable_brokers(image, listener).keys()
        self.version = version
        self.with_ops = with_ops

    def partition(self, p: PartitionImage) -> MetadataResponsePartition:
        replicas, isr = list(p.replicas), list(p.isr)
        if self.version == 0:
            replicas = [r for r in replicas if r in self.reachable]
            isr = [r for r in isr if r in self.reachable]
        if p.leader in self.reachable:
            filtered = len(replicas) < len(p.replicas) or len(isr) < len(p.isr)
            error = error_codes.REPLICA_NOT_AVAILABLE if filtered else error_codes.NONE
            leader = p.leader
        else:
            if p.leader not in self.alive or self.version < 6:
                error = error_codes.LEADER_NOT_AVAILABLE
            else:
                error = error_codes.LISTENER_NOT_FOUND
            leader = -1
        return MetadataResponsePartition(
            error_code=error,
            partition_index=p.partition,
            leader_id=leader,
            leader_epoch=p.leader_epoch,
            replica_nodes=replicas,
            isr_nodes=isr,
            offline_replicas=[r for r in p.replicas if r not in self.alive],
        )

    def topic(self, topic: TopicImage) -> MetadataResponseTopic:
        return MetadataResponseTopic(
            error_code=error_codes.NONE,
            name=topic.name,
            topic_id=topic.topic_id or ZERO_UUID,
            is_internal=topic.is_internal,
            partitions=[self.partition(p) for _, p in sorted(topic.partitions.items())],
            topic_authorized_operations=acl_operations.topic_operations(self.with_ops),
        )


def _missing(name: str | None, topic_id: uuid.UUID, code: int) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=code, name=name, topic_id=topic_id, is_internal=False, partitions=[]
    )


def _requested_names(ctx: RequestContext, request: MetadataRequest) -> list[str] | None:
    """The names asked for, None for all topics; raises _InvalidRequest like Kafka 3.x."""
    version = ctx.version
    if request.topics is None or (version == 0 and not request.topics):
        return None
    release = ctx.release
    if version < 12 and release >= (3, 0):
        for t in request.topics:
            if t.name is None:
                raise _InvalidRequest(f"Topic name can not be null for version {version}")
            if t.topic_id != ZERO_UUID:
                raise _InvalidRequest(
                    f"Topic IDs are not supported in requests for version {version}"
                )
    names = [t.name for t in request.topics if t.name is not None]
    return list(dict.fromkeys(names))


async def handle(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    image = ctx.image
    version = ctx.version
    listener = ctx.connection.listener_name
    try:
        requested = _requested_names(ctx, request)
    except _InvalidRequest as e:
        return error_response(request, version, error_codes.INVALID_REQUEST, str(e))

    topics: list[MetadataResponseTopic] = []
    render = _TopicRenderer(image, listener, version, request.include_topic_authorized_operations)
    by_id = (
        version >= 12
        and ctx.release >= (3, 1)
        and request.topics is not None
        and any(t.topic_id != ZERO_UUID for t in request.topics)
    )
    if requested is None:
        for topic in image.visible_topics():
            topics.append(render.topic(topic))
    elif by_id:
        assert request.topics is not None
        seen: set[uuid.UUID] = set()
        for t in request.topics:
            if t.topic_id == ZERO_UUID or t.topic_id in seen:
                continue
            seen.add(t.topic_id)
            found = image.topic_by_id(t.topic_id)
            if found is None or not found.visible or found.name in image.topics_being_deleted:
                topics.append(_missing(None, t.topic_id, error_codes.UNKNOWN_TOPIC_ID))
            else:
                topics.append(render.topic(found))
    else:
        for name in requested:
            found = image.topics.get(name)
            if found is not None and found.visible and name not in image.topics_being_deleted:
                topics.append(render.topic(found))
            elif topic_names.validation_error(name, ctx.release) is not None:
                topics.append(_missing(name, ZERO_UUID, error_codes.INVALID_TOPIC_EXCEPTION))
            else:
                topics.append(_missing(name, ZERO_UUID, error_codes.UNKNOWN_TOPIC_OR_PARTITION))

    return MetadataResponse(
        throttle_time_ms=0,
        brokers=response_brokers(image, listener),
        cluster_id=image.cluster_id,
        controller_id=image.controller_id,
        topics=topics,
        cluster_authorized_operations=acl_operations.cluster_operations(
            request.include_cluster_authorized_operations
        ),
    )


def error_response(
    request: MetadataRequest, version: int, code: int, message: str | None
) -> MetadataResponse:
    """Kafka's MetadataRequest.getErrorResponse: the error on every requested topic."""
    topics = [
        _missing(t.name if t.name is not None else "", t.topic_id, code)
        for t in (request.topics or [])
    ]
    return MetadataResponse(throttle_time_ms=0, topics=topics)
