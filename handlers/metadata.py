"""Metadata: brokers, controller, cluster id and topic partitions, answered from the process's
metadata image (Kafka's behaviour: §8; ACLs §21).

Also auto-creates missing topics when `--auto-create-topics` allows it. The loops over the
request's names and the image's topics run in slices (`zkbroker.broker.asyncutil.Pacer`), so an
image change between slices may show in later topics only; unknown names and partition lists
stay unrendered until encoding (`RenderedList`) to bound memory.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.image.metadata_image import MetadataImage, PartitionImage, TopicImage
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.create_topics import CreatableTopic
from zkbroker.broker.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from zkbroker.broker.rules import acl_operations, topic_names
from zkbroker.broker.rules.api_error import ApiError
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.create_topics import TopicCreator
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.internal_topics import INTERNAL_TOPICS, internal_topic_spec
from zkbroker.handlers.support.rendered_list import RenderedList
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout.store.admin_zk import TopicExists, create_topic

API_KEY = ApiKey.METADATA
ZK_TROUBLE_FAMILY = Family.METADATA
README_NOTE = (
    "brokers per listener, controller, cluster id, leaders, ISR, offline replicas, leader "
    "epochs, topic ids (v10+), lookup by topic id (v12)"
)

ZERO_UUID = uuid.UUID(int=0)

class _InvalidRequest(Exception):
    pass


def _topic_answers(release: tuple[int, ...]) -> RenderedList[MetadataResponseTopic]:
    """The answer's topics: response topics as they are, and a name not found (the
    request's own string, so it costs one list slot) as UNKNOWN_TOPIC_OR_PARTITION, or
    INVALID_TOPIC_EXCEPTION for an illegal name."""

    def render(entry: MetadataResponseTopic | str) -> MetadataResponseTopic:
        if not isinstance(entry, str):
            return entry
        if topic_names.validation_error(entry, release) is not None:
            return _missing(entry, ZERO_UUID, error_codes.INVALID_TOPIC_EXCEPTION)
        return _missing(entry, ZERO_UUID, error_codes.UNKNOWN_TOPIC_OR_PARTITION)

    return RenderedList(render)


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

    def __init__(
        self,
        image: MetadataImage,
        listener: str,
        version: int,
        with_ops: bool,
        ops_of: Callable[[str], int] | None = None,
    ) -> None:
        # Copies: partitions are rendered while the answer is encoded, possibly in a worker
        # thread while the loop changes the image.
        self.alive = frozenset(image.brokers)
        self.reachable = frozenset(reachable_brokers(image, listener))
        self.version = version
        self.with_ops = with_ops
        # With an authorizer: the topic's authorized operations for this principal.
        self.ops_of = ops_of

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

    async def topic(self, topic: TopicImage, pacer: Pacer) -> MetadataResponseTopic:
        # One topic may hold tens of thousands of partitions: they are listed in slices, and
        # rendered one by one as the answer is encoded (the image's partitions are immutable).
        partitions: RenderedList[MetadataResponsePartition] = RenderedList(self.partition)
        images = topic.partitions
        for index in sorted(images):
            p = images.get(index)
            if p is not None:
                partitions.add_source(p)
            if pacer.due():
                await pacer.pause()
        return MetadataResponseTopic(
            error_code=error_codes.NONE,
            name=topic.name,
            topic_id=topic.topic_id or ZERO_UUID,
            is_internal=topic.is_internal,
            partitions=partitions,
            topic_authorized_operations=(
                self.ops_of(topic.name)
                if self.with_ops and self.ops_of is not None
                else acl_operations.topic_operations(self.with_ops)
            ),
        )


def _missing(name: str | None, topic_id: uuid.UUID, code: int) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=code, name=name, topic_id=topic_id, is_internal=False, partitions=[]
    )


async def _requested_names(
    ctx: RequestContext, request: MetadataRequest, pacer: Pacer
) -> dict[str, None] | None:
    """The names asked for (de-duplicated, in request order: the keys), None for all
    topics; raises _InvalidRequest like Kafka 3.x."""
    version = ctx.version
    if request.topics is None or (version == 0 and not request.topics):
        return None
    release = ctx.release
    check = version < 12 and release >= (3, 0)
    names: dict[str, None] = {}
    for t in request.topics:
        if check:
            if t.name is None:
                raise _InvalidRequest(f"Topic name can not be null for version {version}")
            if t.topic_id != ZERO_UUID:
                raise _InvalidRequest(
                    f"Topic IDs are not supported in requests for version {version}"
                )
        if t.name is not None:
            names[t.name] = None
        if pacer.due():
            await pacer.pause()
    return names


async def handle(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    image = ctx.image
    # A request may name a million topics: every loop below yields to the loop in slices.
    pacer = Pacer()
    try:
        requested = await _requested_names(ctx, request, pacer)
    except _InvalidRequest as e:
        return error_response(request, ctx.version, error_codes.INVALID_REQUEST, str(e))
    answer = _Topics(ctx, image, request.include_topic_authorized_operations, pacer)
    if requested is None:
        await answer.all_topics()
    elif _asks_by_id(ctx, request):
        assert request.topics is not None
        await answer.by_id(request.topics)
    else:
        auto_create = ctx.broker.settings.auto_create_topics and (
            ctx.version < 4 or request.allow_auto_topic_creation
        )
        await answer.by_name(requested, auto_create)
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=response_brokers(image, ctx.connection.listener_name),
        cluster_id=image.cluster_id,
        controller_id=image.controller_id,
        topics=answer.finished(),
        cluster_authorized_operations=_cluster_operations(
            ctx, answer.secured, request.include_cluster_authorized_operations
        ),
    )


def _asks_by_id(ctx: RequestContext, request: MetadataRequest) -> bool:
    """Topics asked by id (v12, from 3.1): the request names at least one non-zero id."""
    return (
        ctx.version >= 12
        and ctx.release >= (3, 1)
        and request.topics is not None
        and any(t.topic_id != ZERO_UUID for t in request.topics)
    )


def _cluster_operations(ctx: RequestContext, secured: bool, include: bool) -> int:
    if secured and include:
        # KafkaApis: DESCRIBE on the cluster first, else 0.
        if auth.authorize_cluster(ctx, auth.DESCRIBE):
            return auth.authorized_operations(ctx, auth.CLUSTER, auth.CLUSTER_NAME)
        return 0
    return acl_operations.cluster_operations(include)


class _Topics:
    """The topics of one answer, in Kafka's order. KafkaApis leaves topics without DESCRIBE out
    of "all topics", and answers them TOPIC_AUTHORIZATION_FAILED (with the id when asked by id)
    after the others when they are named."""

    def __init__(
        self, ctx: RequestContext, image: MetadataImage, with_ops: bool, pacer: Pacer
    ) -> None:
        self.ctx, self.image, self.pacer = ctx, image, pacer
        self.secured = auth.has_authorizer(ctx)
        self.answered = _topic_answers(ctx.release)
        self.denied: list[MetadataResponseTopic] = []
        self.render = _TopicRenderer(
            image,
            ctx.connection.listener_name,
            ctx.version,
            with_ops,
            (lambda name: auth.authorized_operations(ctx, auth.TOPIC, name))
            if self.secured
            else None,
        )

    async def all_topics(self) -> None:
        # KafkaApis: denials are not audited for "all topics" (logIfDenied = !isAllTopics).
        allowed_to = auth.checker(self.ctx, log_if_denied=False)
        for topic in list(self.image.visible_topics()):
            if self.secured and not allowed_to(auth.DESCRIBE, auth.TOPIC, topic.name):
                continue
            self.answered.append(await self.render.topic(topic, self.pacer))
            if self.pacer.due():
                await self.pacer.pause()

    async def by_id(self, asked: list[MetadataRequestTopic]) -> None:
        seen: set[uuid.UUID] = set()
        known = []
        for t in asked:
            if t.topic_id == ZERO_UUID or t.topic_id in seen:
                continue
            seen.add(t.topic_id)
            if self.pacer.due():
                await self.pacer.pause()
            by_id_topic = self.image.topic_by_id(t.topic_id)
            found = self.image.listed_topic(by_id_topic.name) if by_id_topic else None
            if found is None:  # KafkaApis answers unknown ids before every other topic
                self.answered.append(_missing(None, t.topic_id, error_codes.UNKNOWN_TOPIC_ID))
            elif not auth.authorize(self.ctx, auth.DESCRIBE, auth.TOPIC, found.name):
                # "Topic IDs are not considered sensitive information" (KafkaApis 3.1+).
                refused = _missing(None, t.topic_id, error_codes.TOPIC_AUTHORIZATION_FAILED)
                self.denied.append(refused)
            else:
                known.append(found)
        for found in known:
            self.answered.append(await self.render.topic(found, self.pacer))

    async def by_name(self, requested: dict[str, None], auto_create: bool) -> None:
        created: dict[str, MetadataResponseTopic] = {}
        if self.secured:
            requested = self._describable(requested)
        if auto_create:
            missing = await self._unlisted(requested)
            if (
                missing
                and self.secured
                and not auth.authorize_cluster(self.ctx, auth.CREATE, log_if_denied=False)
            ):
                requested, missing = self._creatable(requested, missing)
            created = await _auto_create(self.ctx, missing, self.pacer)
        for name in requested:
            if self.pacer.due():
                await self.pacer.pause()
            found = self.image.listed_topic(name)
            if name in created:
                self.answered.append(created[name])
            elif found is not None:
                self.answered.append(await self.render.topic(found, self.pacer))
            else:  # UNKNOWN_TOPIC_OR_PARTITION or INVALID_TOPIC_EXCEPTION, when encoded
                self.answered.add_source(name)

    def _describable(self, requested: dict[str, None]) -> dict[str, None]:
        """The names the principal may DESCRIBE; the others are denied."""
        allowed = auth.filter_authorized(self.ctx, auth.DESCRIBE, auth.TOPIC, requested)
        self.denied.extend(
            _missing(n, ZERO_UUID, error_codes.TOPIC_AUTHORIZATION_FAILED)
            for n in requested
            if n not in allowed
        )
        return {n: None for n in requested if n in allowed}

    async def _unlisted(self, requested: dict[str, None]) -> list[str]:
        """The names the image does not list: the topics auto-creation would create."""
        missing = []
        for name in requested:
            if self.image.listed_topic(name) is None:
                missing.append(name)
            if self.pacer.due():
                await self.pacer.pause()
        return missing

    def _creatable(
        self, requested: dict[str, None], missing: list[str]
    ) -> tuple[dict[str, None], list[str]]:
        """Without CREATE on the cluster: the requested and missing names left once those the
        principal may not CREATE are denied."""
        may_create = auth.filter_authorized(self.ctx, auth.CREATE, auth.TOPIC, missing)
        no_create = [n for n in missing if n not in may_create]
        # Kafka lists these after the authorized topics, before the undescribable.
        self.denied[:0] = [
            _missing(n, ZERO_UUID, error_codes.TOPIC_AUTHORIZATION_FAILED) for n in no_create
        ]
        requested = {n: None for n in requested if n not in no_create}
        return requested, [n for n in missing if n in may_create]

    def finished(self) -> RenderedList[MetadataResponseTopic]:
        """The answered topics, then the denied ones."""
        for refused in self.denied:
            # KafkaApis computes authorized operations for the topics it answers only; a refused
            # one keeps the schema default (2.6+) or TopicMetadata's 0 (2.3-2.5).
            if self.secured and self.ctx.release < (2, 6):
                refused.topic_authorized_operations = 0
            self.answered.append(refused)
        return self.answered


async def _auto_create(
    ctx: RequestContext, names: list[str], pacer: Pacer
) -> dict[str, MetadataResponseTopic]:
    """Create missing topics as Kafka's auto-creation does; the answer for each name."""
    answers: dict[str, MetadataResponseTopic] = {}
    in_flight = ctx.broker.auto_create_in_flight
    mine: list[str] = []
    for name in names:
        if pacer.due():
            await pacer.pause()
        if topic_names.validation_error(name, ctx.release) is not None:
            continue  # answered INVALID_TOPIC_EXCEPTION by the caller
        if name in in_flight:
            answers[name] = _missing(name, ZERO_UUID, error_codes.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        in_flight.add(name)
        mine.append(name)
    if not mine:
        return answers
    try:
        store = ctx.broker.store
        creator = await TopicCreator.for_request(ctx)
        settings = ctx.broker.settings
        for name in mine:
            topic = internal_topic_spec(ctx, name) or CreatableTopic(
                name=name,
                num_partitions=settings.num_partitions,
                replication_factor=settings.default_replication_factor,
                configs=[],
            )
            try:
                planned = await creator.plan(topic, pacer)
                await create_topic(store, name, planned.assignment, planned.configs, ctx.release)
                creator.existing.add(name)
                code = error_codes.LEADER_NOT_AVAILABLE
            except TopicExists:
                code = error_codes.LEADER_NOT_AVAILABLE
            except ApiError as e:
                exists = e.code == error_codes.TOPIC_ALREADY_EXISTS
                code = error_codes.LEADER_NOT_AVAILABLE if exists else e.code
            answers[name] = MetadataResponseTopic(
                error_code=code,
                name=name,
                is_internal=name in INTERNAL_TOPICS,
                partitions=[],
            )
    finally:
        in_flight.difference_update(mine)
    return answers


def error_response(
    request: MetadataRequest, version: int, code: int, message: str | None
) -> MetadataResponse:
    """Kafka's MetadataRequest.getErrorResponse: the error on every requested topic."""
    topics = [
        _missing(t.name if t.name is not None else "", t.topic_id, code)
        for t in (request.topics or [])
    ]
    return MetadataResponse(throttle_time_ms=0, topics=topics)
