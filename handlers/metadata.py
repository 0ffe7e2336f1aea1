"""Metadata (key 3), versions 0-12: brokers, controller, cluster id and topic partitions,
answered from the process's metadata image (Kafka's behaviour: §8; ACLs §21).

Also auto-creates missing topics when `--auto-create-topics` allows it. The loops over the
request's names and the image's topics run in slices (`zkbroker.broker.asyncutil.Pacer`), so an
image change between slices may show in later topics only; unknown names and partition lists
stay unrendered until encoding (`RenderedList`) to bound memory.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any, SupportsIndex, TypeVar, cast, overload

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.image.metadata_image import MetadataImage, PartitionImage, TopicImage
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.create_topics import CreatableTopic
from zkbroker.broker.protocol.messages.metadata import (
    MetadataRequest,
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
from zkbroker.zk_layout.store.admin_zk import TopicExists, create_topic

API_KEY = 3
MIN_VERSION = 0
MAX_VERSION = 12

ZERO_UUID = uuid.UUID(int=0)

T = TypeVar("T")


class _InvalidRequest(Exception):
    pass


class RenderedList(list[T]):
    """A list of an answer's items held as their raw sources and rendered each time the list
    is read: the answer to a million unknown names, or a topic of 46,000 partitions, then
    holds no response object per item. Each item is built while the answer is encoded and
    freed at once, so the answer neither doubles the memory of the request it answers (issue
    17: peak RSS within 2x) nor feeds the cyclic collector hundreds of thousands of objects
    that live through the request (in a process whose collector Python tunes, `Cluster`
    inside a test run, their full passes held every client for 150-300 ms each).

    Everything that reads answers (the encoder, capture, metrics, fault hooks) iterates,
    indexes or takes the length, which all go through `render`, as do `in`, `copy()`, `+`,
    copy/deepcopy/pickle (which give a plain list). The methods that would change or search
    the raw storage (`sort()`, `index()`, `count()`, `extend()`, ...) are not used on
    answers. The sources must not change once added (the encoder may read them in a worker
    thread): the image's partitions are immutable, replaced on every change."""

    __slots__ = ("_render",)

    def __init__(self, render: Callable[[Any], T]) -> None:
        super().__init__()
        self._render = render

    def add_source(self, source: object) -> None:
        """Add an item as its source; `render(source)` is the item every read sees."""
        list.append(self, cast(T, source))

    def __iter__(self) -> Iterator[T]:
        return map(self._render, list.__iter__(self))

    def __reversed__(self) -> Iterator[T]:
        return map(self._render, list.__reversed__(self))

    @overload
    def __getitem__(self, index: SupportsIndex) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: SupportsIndex | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._render(e) for e in list.__getitem__(self, index)]
        return self._render(list.__getitem__(self, index))

    def __contains__(self, item: object) -> bool:
        return any(item == e for e in self)

    def copy(self) -> list[T]:
        return list(self)

    def __add__(self, other: list[T]) -> list[T]:  # type: ignore[override]
        return [*self, *other]

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        # copy, deepcopy and pickle get a plain list of the rendered items.
        return (list, (list(self),))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, list):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # lists are unhashable

    def __repr__(self) -> str:
        return repr(list(self))


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
    version = ctx.version
    listener = ctx.connection.listener_name
    # A request may name a million topics: every loop below yields to the loop in slices.
    pacer = Pacer()
    try:
        requested = await _requested_names(ctx, request, pacer)
    except _InvalidRequest as e:
        return error_response(request, version, error_codes.INVALID_REQUEST, str(e))

    topics = _topic_answers(ctx.release)
    secured = auth.has_authorizer(ctx)
    render = _TopicRenderer(
        image,
        listener,
        version,
        request.include_topic_authorized_operations,
        (lambda name: auth.authorized_operations(ctx, auth.TOPIC, name)) if secured else None,
    )
    # KafkaApis: topics without DESCRIBE are left out of "all topics", and answered
    # TOPIC_AUTHORIZATION_FAILED (with the id when asked by id) after the others when named.
    denied: list[MetadataResponseTopic] = []
    by_id = (
        version >= 12
        and ctx.release >= (3, 1)
        and request.topics is not None
        and any(t.topic_id != ZERO_UUID for t in request.topics)
    )
    # KafkaApis: denials are not audited for "all topics" (logIfDenied = !isAllTopics).
    allowed_to = auth.checker(ctx, log_if_denied=requested is not None)
    if requested is None:
        for topic in list(image.visible_topics()):
            if secured and not allowed_to(auth.DESCRIBE, auth.TOPIC, topic.name):
                continue
            topics.append(await render.topic(topic, pacer))
            if pacer.due():
                await pacer.pause()
    elif by_id:
        assert request.topics is not None
        seen: set[uuid.UUID] = set()
        known = []
        for t in request.topics:
            if t.topic_id == ZERO_UUID or t.topic_id in seen:
                continue
            seen.add(t.topic_id)
            if pacer.due():
                await pacer.pause()
            by_id_topic = image.topic_by_id(t.topic_id)
            found = image.listed_topic(by_id_topic.name) if by_id_topic else None
            if found is None:  # KafkaApis answers unknown ids before every other topic
                topics.append(_missing(None, t.topic_id, error_codes.UNKNOWN_TOPIC_ID))
            elif not auth.authorize(ctx, auth.DESCRIBE, auth.TOPIC, found.name):
                # "Topic IDs are not considered sensitive information" (KafkaApis 3.1+).
                denied.append(_missing(None, t.topic_id, error_codes.TOPIC_AUTHORIZATION_FAILED))
            else:
                known.append(found)
        for found in known:
            topics.append(await render.topic(found, pacer))
    else:
        auto_create = ctx.broker.settings.auto_create_topics and (
            version < 4 or request.allow_auto_topic_creation
        )
        created: dict[str, MetadataResponseTopic] = {}
        if secured:
            allowed = auth.filter_authorized(ctx, auth.DESCRIBE, auth.TOPIC, requested)
            denied.extend(
                _missing(n, ZERO_UUID, error_codes.TOPIC_AUTHORIZATION_FAILED)
                for n in requested
                if n not in allowed
            )
            requested = {n: None for n in requested if n in allowed}
        if auto_create:
            missing = []
            for name in requested:
                if image.listed_topic(name) is None:
                    missing.append(name)
                if pacer.due():
                    await pacer.pause()
            if (
                missing
                and secured
                and not auth.authorize_cluster(ctx, auth.CREATE, log_if_denied=False)
            ):
                may_create = auth.filter_authorized(ctx, auth.CREATE, auth.TOPIC, missing)
                no_create = [n for n in missing if n not in may_create]
                # Kafka lists these after the authorized topics, before the undescribable.
                denied[:0] = [
                    _missing(n, ZERO_UUID, error_codes.TOPIC_AUTHORIZATION_FAILED)
                    for n in no_create
                ]
                requested = {n: None for n in requested if n not in no_create}
                missing = [n for n in missing if n in may_create]
            created = await _auto_create(ctx, missing, pacer)
        for name in requested:
            if pacer.due():
                await pacer.pause()
            found = image.listed_topic(name)
            if name in created:
                topics.append(created[name])
            elif found is not None:
                topics.append(await render.topic(found, pacer))
            else:  # UNKNOWN_TOPIC_OR_PARTITION or INVALID_TOPIC_EXCEPTION, when encoded
                topics.add_source(name)
    for answer in denied:
        # KafkaApis computes authorized operations for the topics it answers only; a refused
        # one keeps the schema default (2.6+) or TopicMetadata's 0 (2.3-2.5).
        if secured and ctx.release < (2, 6):
            answer.topic_authorized_operations = 0
        topics.append(answer)

    return MetadataResponse(
        throttle_time_ms=0,
        brokers=response_brokers(image, listener),
        cluster_id=image.cluster_id,
        controller_id=image.controller_id,
        topics=topics,
        cluster_authorized_operations=(
            # KafkaApis: DESCRIBE on the cluster first, else 0.
            (
                auth.authorized_operations(ctx, auth.CLUSTER, auth.CLUSTER_NAME)
                if auth.authorize_cluster(ctx, auth.DESCRIBE)
                else 0
            )
            if secured and request.include_cluster_authorized_operations
            else acl_operations.cluster_operations(request.include_cluster_authorized_operations)
        ),
    )


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
