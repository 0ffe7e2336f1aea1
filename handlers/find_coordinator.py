"""FindCoordinator: the broker leading a group's or transactional id's internal-topic partition,
creating that topic on the first lookup.

Follows docs/kafka-behaviour.md §16 ("Where a group lives", "FindCoordinator") and §17 for
transactional ids, authorization included. The internal topics are created by
`zkbroker.handlers.support.internal_topics`; groups of the ZooKeeper `/consumers` registry
are placed by `zkbroker.handlers.support.group_coordination`.
"""

from __future__ import annotations

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from zkbroker.broker.rules.api_error import ApiError
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.create_topics import TopicCreator
from zkbroker.handlers.metadata import reachable_brokers
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import coordinator as group_coordinator
from zkbroker.handlers.support.internal_topics import (
    OFFSETS_TOPIC,
    TRANSACTION_TOPIC,
    internal_topic_spec,
)
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout.release import release_at_least
from zkbroker.zk_layout.store.admin_zk import TopicExists, create_topic

API_KEY = ApiKey.FIND_COORDINATOR
ZK_TROUBLE_FAMILY = Family.GROUPS
README_NOTE = (
    "GROUP: the leader of the group's `__consumer_offsets` partition; the first lookup "
    "creates that topic and answers COORDINATOR_NOT_AVAILABLE, as Kafka (see *Consumer "
    "groups*); TRANSACTION: the same with `__transaction_state` (see *Produce and "
    "consume*); batched keys (v4+)"
)

GROUP = 0
TRANSACTION = 1
SHARE = 2

_MESSAGES = {
    error_codes.NONE: "NONE",
    error_codes.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    error_codes.INVALID_REQUEST: error_codes.DEFAULT_MESSAGES[error_codes.INVALID_REQUEST],
    error_codes.GROUP_AUTHORIZATION_FAILED: auth.GROUP_DENIED,
    error_codes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: auth.TRANSACTIONAL_ID_DENIED,
}
_NO_NODE = (-1, "", -1)

_log = get_logger(__name__)


class _UnknownKeyType(Exception):
    pass


async def ensure_offsets_topic(ctx: RequestContext) -> None:
    """Create ``__consumer_offsets`` as Kafka's internal-topic creation does (once per broker
    at a time); failures are logged and leave the coordinator unavailable."""
    await ensure_internal_topic(ctx, OFFSETS_TOPIC)


async def ensure_internal_topic(ctx: RequestContext, name: str) -> None:
    """Create ``__consumer_offsets`` or ``__transaction_state`` (once per broker at a time)."""
    in_flight = ctx.broker.auto_create_in_flight
    if name in in_flight or name in ctx.image.topics:
        return
    in_flight.add(name)
    what, config = (
        ("offsets topic", "offsets.topic.replication.factor")
        if name == OFFSETS_TOPIC
        else ("transactions state topic", "transaction.state.log.replication.factor")
    )
    try:
        topic = internal_topic_spec(ctx, name)
        assert topic is not None
        replication = topic.replication_factor
        alive = len(ctx.image.brokers)
        if not release_at_least(ctx.release, (0, 11)):
            topic.replication_factor = replication = min(replication, max(alive, 1))
        elif not release_at_least(ctx.release, (2, 8)) and alive < replication:
            # 0.11-2.7 check before creating (KafkaApis.createInternalTopic).
            _log.error(
                "coordinator.internal_topic_not_created",
                topic=name,
                error=error_codes.name_of(error_codes.COORDINATOR_NOT_AVAILABLE),
                reason=f"Number of alive brokers '{alive}' does not meet the required "
                f"replication factor '{replication}' for the {what} (configured via "
                f"'{config}'). This error can be ignored if the "
                "cluster is starting up and not all brokers are up yet.",
            )
            return
        creator = await TopicCreator.for_request(ctx)
        planned = await creator.plan(topic)
        await create_topic(ctx.broker.store, name, planned.assignment, planned.configs, ctx.release)
        _log.info(
            "coordinator.internal_topic_created",
            topic=name,
            partitions=topic.num_partitions,
            replication=replication,
        )
    except TopicExists:
        pass
    except ApiError as e:
        # Another broker created it first (not yet in this image): done, as Kafka's
        # TopicExistsException is.
        if e.code != error_codes.TOPIC_ALREADY_EXISTS:
            # 2.8+: ZkAdminManager.createTopics fails the creation (INVALID_REPLICATION_FACTOR
            # when too few brokers are alive) and logs it at INFO; the lookup answers 15.
            _log.info(
                "coordinator.internal_topic_not_created",
                topic=name,
                error=error_codes.name_of(e.code),
                reason=str(e),
            )
    finally:
        in_flight.discard(name)


def _denied(ctx: RequestContext, key_type: int, key: str) -> int | None:
    """getCoordinator's checks: the error code when the key may not be looked up."""
    if key_type == GROUP and not auth.authorize(ctx, auth.DESCRIBE, auth.GROUP, key):
        return error_codes.GROUP_AUTHORIZATION_FAILED
    if key_type == TRANSACTION and not auth.authorize(
        ctx, auth.DESCRIBE, auth.TRANSACTIONAL_ID, key
    ):
        return error_codes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return None


def _lookup(
    ctx: RequestContext, reachable: dict[int, tuple[str, int]], key_type: int, key: str
) -> tuple[int, tuple[int, str, int]]:
    if key_type == GROUP:
        gc = group_coordinator(ctx)
        partition = gc.partition_for(key)
        if partition is None:
            # No offsets topic yet: the caller asked for its creation.
            return error_codes.COORDINATOR_NOT_AVAILABLE, _NO_NODE
        leader = gc.leader_of(partition)[0]
        endpoint = reachable.get(leader) if leader in ctx.image.brokers else None
        if endpoint is None:
            return error_codes.COORDINATOR_NOT_AVAILABLE, _NO_NODE
        return error_codes.NONE, (leader, *endpoint)
    if key_type == TRANSACTION:
        tc = ctx.broker.transaction_coordinator
        partition = tc.partition_for(key)
        if partition is None:
            return error_codes.COORDINATOR_NOT_AVAILABLE, _NO_NODE
        leader = tc.leader_of(partition)[0]
        endpoint = reachable.get(leader) if leader in ctx.image.brokers else None
        if endpoint is None:
            return error_codes.COORDINATOR_NOT_AVAILABLE, _NO_NODE
        return error_codes.NONE, (leader, *endpoint)
    if key_type == SHARE:
        if ctx.version < 6:
            return error_codes.INVALID_REQUEST, _NO_NODE
        return error_codes.COORDINATOR_NOT_AVAILABLE, _NO_NODE
    raise _UnknownKeyType(key_type)


async def handle(ctx: RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    version = ctx.version
    key_type = request.key_type if version >= 1 else GROUP
    # Looked up once per request: every key of a v4+ request is answered from the same image.
    reachable = reachable_brokers(ctx.image, ctx.connection.listener_name)
    # Kafka asks for the topic per key looked up (none for an empty v4+ key list, nor for
    # keys the principal may not describe).
    asked = [request.key] if version < 4 else list(request.coordinator_keys)
    denied: dict[str, int] = {}
    if auth.has_authorizer(ctx):
        denied = {k: code for k in asked if (code := _denied(ctx, key_type, k)) is not None}
    keys = any(k not in denied for k in asked)
    if key_type == GROUP and keys and group_coordinator(ctx).partition_count() is None:
        await ensure_offsets_topic(ctx)
    tc = ctx.broker.transaction_coordinator
    if key_type == TRANSACTION and keys and tc.partition_count() is None:
        await ensure_internal_topic(ctx, TRANSACTION_TOPIC)
    try:
        if version < 4:
            if request.key in denied:
                return error_response(request, version, denied[request.key], None)
            code, (node_id, host, port) = _lookup(ctx, reachable, key_type, request.key)
            if code != error_codes.NONE:
                return error_response(request, version, code, None)
            return FindCoordinatorResponse(
                error_code=code,
                error_message=_MESSAGES[code],
                node_id=node_id,
                host=host,
                port=port,
            )
        coordinators = []
        for key in request.coordinator_keys:
            if key in denied:
                code, (node_id, host, port) = denied[key], _NO_NODE
            else:
                code, (node_id, host, port) = _lookup(ctx, reachable, key_type, key)
            coordinators.append(
                Coordinator(key=key, node_id=node_id, host=host, port=port, error_code=code)
            )
        return FindCoordinatorResponse(coordinators=coordinators)
    except _UnknownKeyType:
        return error_response(request, version, error_codes.INVALID_REQUEST, None)


def error_response(
    request: FindCoordinatorRequest, version: int, code: int, message: str | None
) -> FindCoordinatorResponse:
    text = _MESSAGES.get(code, error_codes.DEFAULT_MESSAGES.get(code))
    node_id, host, port = _NO_NODE
    if version < 4:
        return FindCoordinatorResponse(
            error_code=code, error_message=text, node_id=node_id, host=host, port=port
        )
    return FindCoordinatorResponse(
        coordinators=[
            Coordinator(
                key=key, node_id=node_id, host=host, port=port, error_code=code, error_message=text
            )
            for key in request.coordinator_keys
        ]
    )
