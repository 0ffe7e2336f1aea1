"""CreatePartitions (KIP-195): new partitions added to a topic's znode.

Follows Kafka 2.8 (docs/kafka-behaviour.md §3.2), authorization and the controller mutation
quota (§22, `zkbroker.broker.security.quotas.mutation_quota_for`) included; the controller
then creates the new partition states (§10.2).

zkbroker's own bound: after Kafka's checks, a topic znode too large for one ZooKeeper request
(`jute.maxbuffer`) is refused with INVALID_PARTITIONS before any placement is computed
(`zkbroker.handlers.support.zk_limits`), validate_only included; placement then runs in slices
(`zkbroker.broker.asyncutil`) so other clients are served meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
)
from zkbroker.broker.rules.api_error import ApiError
from zkbroker.broker.rules.replica_assignment import (
    AssignmentError,
    BrokerPlacement,
    create_partitions_start,
    plan_replicas,
    replica_map_min_bytes,
)
from zkbroker.broker.security.quotas import ControllerMutationQuota, mutation_quota_for
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_limits import (
    check_topic_write,
    partition_entry_bytes,
    replica_map_bytes,
    too_large_message,
)
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout import (
    DeleteTopicsNode,
    TopicAssignment,
    TopicNode,
    ZkStore,
    invalid_path_reason,
)
from zkbroker.zk_layout.store import RequestTooLargeError

API_KEY = ApiKey.CREATE_PARTITIONS
ZK_TROUBLE_FAMILY = Family.TOPIC_ADMIN
README_NOTE = "increase only; manual assignments validated; continues Kafka's round robin"


def _result(name: str, error: ApiError) -> CreatePartitionsTopicResult:
    return CreatePartitionsTopicResult(
        name=name, error_code=error.code, error_message=error.wire_message
    )


def _brokers(image: MetadataImage) -> list[BrokerPlacement]:
    brokers = [BrokerPlacement(b, info.rack) for b, info in sorted(image.brokers.items())]
    racks = [b.rack is not None for b in brokers]
    if any(racks) and not all(racks):
        raise ApiError(error_codes.UNKNOWN_SERVER_ERROR)
    return brokers


async def _new_assignment(
    store: ZkStore,
    topic: CreatePartitionsTopic,
    existing: TopicAssignment,
    brokers: list[BrokerPlacement],
) -> dict[int, list[int]]:
    """The partitions `topic` adds to `existing` and their replicas, after Kafka's checks in its
    order (AdminZkClient.createPartitions) and zkbroker's size bound; raises ApiError."""
    old, increment = _increment(topic, existing)
    broker_ids = [b.broker_id for b in brokers]
    proposed = _proposed(topic, old, increment, broker_ids)
    partition0 = existing.partitions.get(0)
    if partition0 is None:
        raise ApiError(error_codes.UNKNOWN_SERVER_ERROR)
    existing_bytes = replica_map_bytes(existing.partitions.items())
    if proposed is not None:
        _validate_manual(proposed, len(partition0), set(broker_ids))
        added_bytes = replica_map_bytes(proposed.items())
        check_topic_write(store, topic.name, topic.count, existing_bytes + added_bytes)
        return proposed
    try:
        planned = plan_replicas(
            brokers,
            increment,
            len(partition0),
            fixed_start_index=create_partitions_start(broker_ids, partition0[0]),
            start_partition_id=old,
        )
    except AssignmentError as e:
        raise ApiError(e.error_code, e.message) from e
    # A lower bound of the size is checked before the placement, the exact size after it.
    minimum = replica_map_min_bytes(increment, len(partition0), broker_ids, first_id=old)
    check_topic_write(store, topic.name, topic.count, existing_bytes + minimum)
    added, added_bytes = await _placed(planned)
    check_topic_write(store, topic.name, topic.count, existing_bytes + added_bytes)
    return added


def _increment(topic: CreatePartitionsTopic, existing: TopicAssignment) -> tuple[int, int]:
    """The topic's partition count and how many partitions the request adds."""
    if any(existing.is_reassigning(p) for p in existing.partitions):
        raise ApiError(
            error_codes.REASSIGNMENT_IN_PROGRESS,
            f"A partition reassignment is in progress for the topic '{topic.name}'.",
        )
    old = len(existing.partitions)
    increment = topic.count - old
    if increment < 0:
        raise ApiError(
            error_codes.INVALID_PARTITIONS,
            f"Topic currently has {old} partitions, which is higher than the requested "
            f"{topic.count}.",
        )
    if increment == 0:
        raise ApiError(error_codes.INVALID_PARTITIONS, f"Topic already has {old} partitions.")
    return old, increment


def _proposed(
    topic: CreatePartitionsTopic, old: int, increment: int, broker_ids: list[int]
) -> dict[int, list[int]] | None:
    """The request's manual assignment of the new partitions, None when it has none."""
    if topic.assignments is None:
        return None
    lists = [list(a.broker_ids) for a in topic.assignments]
    unknown = sorted({b for replicas in lists for b in replicas} - set(broker_ids))
    if unknown:
        raise ApiError(
            error_codes.INVALID_REPLICA_ASSIGNMENT,
            f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.",
        )
    if len(lists) != increment:
        raise ApiError(
            error_codes.INVALID_REPLICA_ASSIGNMENT,
            f"Increasing the number of partitions by {increment} but {len(lists)} "
            "assignments provided.",
        )
    return {old + i: replicas for i, replicas in enumerate(lists)}


async def _placed(planned: Iterator[tuple[int, list[int]]]) -> tuple[dict[int, list[int]], int]:
    """The automatic placement, built in slices so other clients are served meanwhile, and the
    size of its entries in the topic znode."""
    pacer = Pacer()
    added: dict[int, list[int]] = {}
    added_bytes = 0
    for partition, replicas in planned:
        added[partition] = replicas
        added_bytes += partition_entry_bytes(partition, replicas)
        if pacer.due():
            await pacer.pause()
    return added, added_bytes


def _validate_manual(proposed: dict[int, list[int]], replication: int, available: set[int]) -> None:
    for partition, replicas in sorted(proposed.items()):
        if not replicas:
            raise ApiError(
                error_codes.INVALID_REPLICA_ASSIGNMENT,
                f"Cannot have replication factor of 0 for partition id {partition}.",
            )
        if len(replicas) != len(set(replicas)):
            raise ApiError(
                error_codes.INVALID_REPLICA_ASSIGNMENT,
                "Duplicate brokers not allowed in replica assignment: "
                f"{', '.join(map(str, replicas))} for partition id {partition}.",
            )
        if not set(replicas) <= available:
            raise ApiError(
                error_codes.BROKER_NOT_AVAILABLE,
                f"Some brokers specified for partition id {partition} are not available. "
                f"Specified brokers: {', '.join(map(str, replicas))}, "
                f"available brokers: {', '.join(map(str, sorted(available)))}.",
            )
    bad = sorted((p, len(r)) for p, r in proposed.items() if len(r) != replication)
    if bad:
        raise ApiError(
            error_codes.INVALID_REPLICA_ASSIGNMENT,
            "Inconsistent replication factor between partitions, partition 0 has "
            f"{replication} while partitions [{', '.join(str(p) for p, _ in bad)}] have "
            f"replication factors [{', '.join(str(n) for _, n in bad)}], respectively.",
        )


async def _read_assignment(store: ZkStore, name: str) -> tuple[TopicAssignment, int] | None:
    path = TopicNode.path(name)
    if invalid_path_reason(path) is not None:
        # Kafka's ZooKeeper client refuses the path before sending (IllegalArgumentException),
        # caught per topic: UNKNOWN_SERVER_ERROR with a null message, the other topics go on.
        raise ApiError(error_codes.UNKNOWN_SERVER_ERROR, None)
    node = await store.get(path)
    if node is None:
        return None
    return TopicNode.decode_at(node[0], name), node[1].version


async def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    if not ctx.broker.is_controller:
        return error_response(request, ctx.version, error_codes.NOT_CONTROLLER, None)
    try:
        brokers = _brokers(ctx.image)
    except ApiError as e:
        return error_response(request, ctx.version, e.code, e.message)
    queued = set(await ctx.broker.store.get_children(DeleteTopicsNode.path()) or ())
    seen: dict[str, int] = {}
    for topic in request.topics:
        seen[topic.name] = seen.get(topic.name, 0) + 1
    # KafkaApis: quotas.controllerMutation.newQuotaFor(request, strictSinceVersion = 3).
    quota = mutation_quota_for(
        ctx.broker, API_KEY, ctx.version, ctx.connection.principal, ctx.header.client_id
    )
    results: dict[str, CreatePartitionsTopicResult] = {}
    grown: list[str] = []
    for topic in request.topics:
        name = topic.name
        if name in results:
            continue
        try:
            _check_topic(ctx, name, seen[name], queued)
            if await _grow(ctx, topic, brokers, quota, request.validate_only):
                grown.append(name)
        except ApiError as error:
            results[name] = _result(name, error)
            continue
        results[name] = _result(name, ApiError(error_codes.NONE))
    await _wait_for_leaders(ctx, request, grown, results)
    return CreatePartitionsResponse(
        throttle_time_ms=quota.throttle_time_ms, results=list(results.values())
    )


def _check_topic(ctx: RequestContext, name: str, count: int, queued: set[str]) -> None:
    """KafkaApis' checks before the topic is read: named once, ALTER on it, not being deleted."""
    if count > 1:
        raise ApiError(error_codes.INVALID_REQUEST, "Duplicate topic in request.")
    if not auth.authorize(ctx, auth.ALTER, auth.TOPIC, name):  # KafkaApis: ALTER on topic
        raise ApiError(error_codes.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed.")
    if name in queued:
        raise ApiError(error_codes.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion.")


async def _grow(
    ctx: RequestContext,
    topic: CreatePartitionsTopic,
    brokers: list[BrokerPlacement],
    quota: ControllerMutationQuota,
    validate_only: bool,
) -> bool:
    """Add the topic's new partitions to its znode (unless validate_only); whether it was
    written. Raises ApiError."""
    store, name = ctx.broker.store, topic.name
    read = await _read_assignment(store, name)
    if read is None or not read[0].partitions:
        message = f"The topic '{name}' does not exist."
        raise ApiError(error_codes.UNKNOWN_TOPIC_OR_PARTITION, message)
    existing = read[0]
    added = await _new_assignment(store, topic, existing, brokers)
    if validate_only:
        return False
    # ZkAdminManager.createPartitions: charged the increment, before the write.
    if not quota.record(len(added)):
        raise ApiError(error_codes.THROTTLING_QUOTA_EXCEEDED)
    updated = replace(
        existing, partitions={**existing.partitions, **{p: tuple(r) for p, r in added.items()}}
    )
    try:
        await store.set(TopicNode.path(name), TopicNode.encode(updated, ctx.release))
    except RequestTooLargeError as e:  # refused before sending: nothing written
        message = too_large_message(name, topic.count, e.size, e.limit)
        raise ApiError(error_codes.INVALID_PARTITIONS, message) from e
    return True


async def _wait_for_leaders(
    ctx: RequestContext,
    request: CreatePartitionsRequest,
    grown: list[str],
    results: dict[str, CreatePartitionsTopicResult],
) -> None:
    """Wait up to the request's timeout until this broker's image shows every grown topic with
    its new partitions led; one that does not is answered REQUEST_TIMED_OUT."""
    if not grown:
        return
    wanted = {t.name: t.count for t in request.topics}
    done = request.timeout_ms > 0 and await ctx.image.wait_for(
        lambda image: all(_grown_and_led(image, name, wanted[name]) for name in grown),
        request.timeout_ms / 1000,
    )
    if not done:
        for name in grown:
            if not _grown_and_led(ctx.image, name, wanted[name]):
                results[name] = _result(name, ApiError(error_codes.REQUEST_TIMED_OUT))


def _grown_and_led(image: MetadataImage, name: str, count: int) -> bool:
    topic = image.topics.get(name)
    return topic is not None and len(topic.assignment) >= count and topic.all_partitions_led


def error_response(
    request: CreatePartitionsRequest, version: int, code: int, message: str | None
) -> CreatePartitionsResponse:
    results: dict[str, CreatePartitionsTopicResult] = {}
    for topic in request.topics:
        results.setdefault(topic.name, _result(topic.name, ApiError(code, message)))
    return CreatePartitionsResponse(results=list(results.values()))
