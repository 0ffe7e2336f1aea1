"""CreatePartitions (key 37), versions 0-3 (KIP-195): new partitions added to a topic's znode.

Follows Kafka 2.8 (docs/kafka-behaviour.md §3.2), authorization and the controller mutation
quota (§22, `zkbroker.broker.security.quotas.mutation_quota_for`) included; the controller
then creates the new partition states (§10.2).

zkbroker's own bound: after Kafka's checks, a topic znode too large for one ZooKeeper request
(`jute.maxbuffer`) is refused with INVALID_PARTITIONS before any placement is computed
(`zkbroker.handlers.support.zk_limits`), validate_only included; placement then runs in slices
(`zkbroker.broker.asyncutil`) so other clients are served meanwhile.
"""

from __future__ import annotations

from dataclasses import replace

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.protocol import error_codes
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
from zkbroker.broker.security.quotas import mutation_quota_for
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_limits import (
    check_topic_write,
    partition_entry_bytes,
    replica_map_bytes,
    too_large_message,
)
from zkbroker.zk_layout import (
    DeleteTopicsNode,
    TopicAssignment,
    TopicNode,
    ZkStore,
    invalid_path_reason,
)
from zkbroker.zk_layout.store import RequestTooLargeError

API_KEY = 37
MIN_VERSION = 0
MAX_VERSION = 3


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
    name = topic.name
    if any(existing.is_reassigning(p) for p in existing.partitions):
        raise ApiError(
            error_codes.REASSIGNMENT_IN_PROGRESS,
            f"A partition reassignment is in progress for the topic '{name}'.",
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
    broker_ids = [b.broker_id for b in brokers]
    proposed: dict[int, list[int]] | None = None
    if topic.assignments is not None:
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
        proposed = {old + i: replicas for i, replicas in enumerate(lists)}
    partition0 = existing.partitions.get(0)
    if partition0 is None:
        raise ApiError(error_codes.UNKNOWN_SERVER_ERROR)
    existing_bytes = replica_map_bytes(existing.partitions.items())
    if proposed is not None:
        _validate_manual(proposed, len(partition0), set(broker_ids))
        added_bytes = replica_map_bytes(proposed.items())
        check_topic_write(store, name, topic.count, existing_bytes + added_bytes)
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
    minimum = replica_map_min_bytes(increment, len(partition0), broker_ids, first_id=old)
    check_topic_write(store, name, topic.count, existing_bytes + minimum)
    pacer = Pacer()
    added: dict[int, list[int]] = {}
    added_bytes = 0
    for partition, replicas in planned:
        added[partition] = replicas
        added_bytes += partition_entry_bytes(partition, replicas)
        if pacer.due():
            await pacer.pause()
    check_topic_write(store, name, topic.count, existing_bytes + added_bytes)
    return added


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
    store = ctx.broker.store
    release = ctx.release
    queued = set(await store.get_children(DeleteTopicsNode.path()) or ())
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
        if seen[name] > 1:
            results[name] = _result(
                name, ApiError(error_codes.INVALID_REQUEST, "Duplicate topic in request.")
            )
            continue
        if not auth.authorize(ctx, auth.ALTER, auth.TOPIC, name):  # KafkaApis: ALTER on topic
            results[name] = _result(
                name,
                ApiError(
                    error_codes.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed."
                ),
            )
            continue
        if name in queued:
            results[name] = _result(
                name,
                ApiError(error_codes.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion."),
            )
            continue
        try:
            read = await _read_assignment(store, name)
            if read is None or not read[0].partitions:
                raise ApiError(
                    error_codes.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
                )
            existing = read[0]
            added = await _new_assignment(store, topic, existing, brokers)
            if not request.validate_only:
                # ZkAdminManager.createPartitions: charged the increment, before the write.
                if not quota.record(len(added)):
                    raise ApiError(error_codes.THROTTLING_QUOTA_EXCEEDED)
                updated = replace(
                    existing,
                    partitions={**existing.partitions, **{p: tuple(r) for p, r in added.items()}},
                )
                try:
                    await store.set(TopicNode.path(name), TopicNode.encode(updated, release))
                except RequestTooLargeError as e:  # refused before sending: nothing written
                    message = too_large_message(name, topic.count, e.size, e.limit)
                    raise ApiError(error_codes.INVALID_PARTITIONS, message) from e
                grown.append(name)
        except ApiError as error:
            results[name] = _result(name, error)
            continue
        results[name] = _result(name, ApiError(error_codes.NONE))

    if grown:
        wanted = {t.name: t.count for t in request.topics}
        done = request.timeout_ms > 0 and await ctx.image.wait_for(
            lambda image: all(_grown_and_led(image, name, wanted[name]) for name in grown),
            request.timeout_ms / 1000,
        )
        if not done:
            for name in grown:
                if not _grown_and_led(ctx.image, name, wanted[name]):
                    results[name] = _result(name, ApiError(error_codes.REQUEST_TIMED_OUT))
    return CreatePartitionsResponse(
        throttle_time_ms=quota.throttle_time_ms, results=list(results.values())
    )


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
