"""CreateTopics: new topics written to ZooKeeper (Kafka's behaviour: §2.1 order of checks,
§2.2 names, §2.3 assignment, §21 ACLs).

Checks each topic, writes `/config/topics/<t>` and `/brokers/topics/<t>` in one multi, then
waits until this process's image shows a leader for every created partition. Charges the
controller mutation quota (2.7+). zkbroker's own check, after Kafka's: a topic whose writes
cannot fit one ZooKeeper request (`jute.maxbuffer`) is INVALID_PARTITIONS. Not emulated:
create-topic policies (POLICY_VIOLATION).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from zkbroker.broker.asyncutil import Pacer, gather_bounded
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from zkbroker.broker.rules import topic_names
from zkbroker.broker.rules.api_error import ApiError
from zkbroker.broker.rules.config_catalog import (
    BrokerLogDefaults,
    describe_topic_config,
    validate_topic_configs,
)
from zkbroker.broker.rules.config_def import InvalidConfig
from zkbroker.broker.rules.replica_assignment import (
    AssignmentError,
    BrokerPlacement,
    plan_replicas,
    replica_map_min_bytes,
)
from zkbroker.broker.security.quotas import ControllerMutationQuota, mutation_quota_for
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_limits import (
    check_topic_write,
    replica_map_bytes,
    too_large_message,
)
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout import (
    ConfigEntityNode,
    ConfigEntityTypeNode,
    DeleteTopicsNode,
    TopicAssignment,
    TopicsNode,
)
from zkbroker.zk_layout.release import Release
from zkbroker.zk_layout.store import RequestTooLargeError
from zkbroker.zk_layout.store.admin_zk import TopicExists, create_topic

API_KEY = ApiKey.CREATE_TOPICS
ZK_TROUBLE_FAMILY = Family.TOPIC_ADMIN
README_NOTE = (
    "Kafka's check order and messages; replica assignment (rack-aware too); `-1` defaults "
    "(KIP-464); validate_only; waits for leaders within `timeout_ms`; v5+ configs with "
    "sources; v7 topic ids"
)

ZERO_UUID = uuid.UUID(int=0)
# Topic.CLUSTER_METADATA_TOPIC_NAME: KafkaApis 3.9 refuses to create it.
METADATA_TOPIC = "__cluster_metadata"


@dataclass
class _Planned:
    """A topic that passed validation: what will be (or would be) written."""

    topic: CreatableTopic
    assignment: dict[int, list[int]]
    configs: dict[str, str]


def _exists_message(name: str) -> str:
    return f"Topic '{name}' already exists."


def _scala_assignment(assignment: dict[int, list[int]]) -> str:
    # Kafka prints the Scala map in its message: HashMap(0 -> ArrayBuffer(1, 1)).
    inner = ", ".join(
        f"{p} -> ArrayBuffer({', '.join(map(str, r))})" for p, r in sorted(assignment.items())
    )
    return f"HashMap({inner})"


class TopicCreator:
    """Validates and creates the topics of one request, in order, as Kafka does."""

    def __init__(self, ctx: RequestContext, existing: set[str], marked: set[str]) -> None:
        self.ctx = ctx
        self.release = ctx.release
        self.settings = ctx.broker.settings
        self.image: MetadataImage = ctx.image
        # Topics in ZooKeeper, plus those this request creates (Kafka creates sequentially).
        self.existing = existing
        self.marked_for_deletion = marked

    @classmethod
    async def for_request(cls, ctx: RequestContext) -> TopicCreator:
        """A creator seeded with the topics in ZooKeeper and those marked for deletion."""
        store = ctx.broker.store
        existing, marked = await asyncio.gather(
            store.get_children(TopicsNode.path()), store.get_children(DeleteTopicsNode.path())
        )
        return cls(ctx, set(existing or ()), set(marked or ()))

    async def plan(self, topic: CreatableTopic, pacer: Pacer | None = None) -> _Planned:
        """Validate `topic` in Kafka's order and place its replicas; raises ApiError."""
        pacer = pacer or Pacer()
        name = topic.name
        if name in self.image.topics:
            raise ApiError(error_codes.TOPIC_ALREADY_EXISTS, _exists_message(name))
        null_configs = [c.name for c in topic.configs if c.value is None]
        if null_configs:
            if self.release >= (3, 3):
                raise ApiError(
                    error_codes.INVALID_CONFIG,
                    f"Null value not supported for topic configs: {','.join(null_configs)}",
                )
            raise ApiError(
                error_codes.INVALID_REQUEST,
                f"Null value not supported for topic configs : {','.join(null_configs)}",
            )
        if topic.assignments and (topic.num_partitions != -1 or topic.replication_factor != -1):
            raise ApiError(
                error_codes.INVALID_REQUEST,
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time.",
            )
        # Kafka's assignment step: its checks now, the placement itself once all checks passed.
        # The answers are Kafka's (the placement cannot fail once its checks passed), but an
        # illegal name with 2**31-1 partitions is refused at once instead of after minutes.
        placement = self._placement(topic)
        configs = {c.name: c.value for c in topic.configs if c.value is not None}
        self._validate_name(name)
        if isinstance(placement, dict):
            await _validate_replica_lists(placement, pacer)
        self._validate_configs(configs)
        config_data = ConfigEntityNode.encode(configs, self.release)
        if isinstance(placement, dict):
            map_bytes = replica_map_bytes(placement.items())
            self._check_size(name, len(placement), map_bytes, config_data)
            return _Planned(topic, placement, configs)
        self._check_size(name, placement.partitions, placement.min_bytes(), config_data)
        assignment, exact = await placement.place(pacer)
        self._check_size(name, placement.partitions, exact, config_data)
        return _Planned(topic, assignment, configs)

    def _placement(self, topic: CreatableTopic) -> dict[int, list[int]] | _AutoPlacement:
        if topic.assignments:
            manual: dict[int, list[int]] = {}
            for a in topic.assignments:
                manual[a.partition_index] = list(a.broker_ids)
            return manual
        partitions, replication = topic.num_partitions, topic.replication_factor
        # KIP-464 (2.4+): -1 means the broker default, whatever the request version.
        if self.release >= (2, 4):
            if partitions == -1:
                partitions = self.settings.num_partitions
            if replication == -1:
                replication = self.settings.default_replication_factor
        brokers = [BrokerPlacement(b, info.rack) for b, info in sorted(self.image.brokers.items())]
        try:
            planned = plan_replicas(brokers, partitions, replication)
        except AssignmentError as e:
            raise ApiError(e.error_code, e.message) from e
        return _AutoPlacement(planned, partitions, replication, [b.broker_id for b in brokers])

    def _check_size(self, name: str, partitions: int, map_bytes: int, config_data: bytes) -> None:
        """Refuse a topic whose creation cannot fit one ZooKeeper request, validate_only too.

        Kafka has no such check (its write fails: UNKNOWN_SERVER_ERROR). INVALID_PARTITIONS is
        Kafka's error for a partition count the cluster cannot take, and the count is what the
        client must change; a lower bound of the size is checked before any placement."""
        check_topic_write(self.ctx.broker.store, name, partitions, map_bytes, config_data)

    def _validate_name(self, name: str) -> None:
        problem = topic_names.validation_error(name, self.release)
        if problem is not None:
            raise ApiError(error_codes.INVALID_TOPIC_EXCEPTION, problem)
        if self.release >= (3, 1) and name in self.marked_for_deletion:
            raise ApiError(
                error_codes.TOPIC_ALREADY_EXISTS, f"Topic '{name}' is marked for deletion."
            )
        if name in self.existing:
            raise ApiError(error_codes.TOPIC_ALREADY_EXISTS, _exists_message(name))
        if topic_names.has_collision_chars(name):
            colliding = sorted(t for t in self.existing if topic_names.collides(name, t))
            if colliding:
                raise ApiError(
                    error_codes.INVALID_TOPIC_EXCEPTION,
                    f"Topic '{name}' collides with existing topics: {', '.join(colliding)}",
                )

    def _validate_configs(self, configs: dict[str, str]) -> None:
        try:
            validate_topic_configs(configs, self.release)
        except InvalidConfig as e:
            # Before 2.1 a bad value came back as UNKNOWN_SERVER_ERROR (not converted).
            mapped = e.for_create_topics(self.release)
            raise ApiError(mapped.error_code, mapped.message) from e


class _AutoPlacement:
    """An automatic assignment whose checks passed, not placed yet."""

    def __init__(
        self,
        planned: Iterator[tuple[int, list[int]]],
        partitions: int,
        replication: int,
        broker_ids: list[int],
    ) -> None:
        self._planned = planned
        self.partitions = partitions
        self.replication = replication
        self._broker_ids = broker_ids

    def min_bytes(self) -> int:
        return replica_map_min_bytes(self.partitions, self.replication, self._broker_ids)

    async def place(self, pacer: Pacer) -> tuple[dict[int, list[int]], int]:
        """The placement, built in slices, and the exact size of its JSON partition map."""
        id_bytes = {b: len(str(b)) for b in self._broker_ids}
        assignment: dict[int, list[int]] = {}
        size = 1
        for partition, replicas in self._planned:
            assignment[partition] = replicas
            size += len(str(partition)) + 5 + len(replicas) + sum(id_bytes[r] for r in replicas)
            if pacer.due():
                await pacer.pause()
        return assignment, size


async def _validate_replica_lists(assignment: dict[int, list[int]], pacer: Pacer) -> None:
    """AdminZkClient.validateTopicCreate's replica-list checks of a manual assignment."""
    lengths: set[int] = set()
    duplicated = False
    key_sum = 0
    for partition, replicas in assignment.items():
        lengths.add(len(replicas))
        if not duplicated and len(replicas) != len(set(replicas)):
            duplicated = True
        if partition >= 0:
            key_sum += partition
        if pacer.due():
            await pacer.pause()
    if len(lengths) != 1:
        raise ApiError(
            error_codes.INVALID_REPLICA_ASSIGNMENT,
            "All partitions should have the same number of replicas",
        )
    if duplicated:
        raise ApiError(
            error_codes.INVALID_REPLICA_ASSIGNMENT,
            "Duplicate replica assignment found: " + _scala_assignment(assignment),
        )
    size = len(assignment)
    if key_sum != size * (size - 1) // 2:
        raise ApiError(
            error_codes.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        )


def _result(name: str, error: ApiError, configs_hidden: bool = False) -> CreatableTopicResult:
    return CreatableTopicResult(
        name=name,
        error_code=error.code,
        error_message=error.wire_message,
        topic_config_error_code=(
            error_codes.TOPIC_AUTHORIZATION_FAILED if configs_hidden else error_codes.NONE
        ),
        num_partitions=-1,
        replication_factor=-1,
        configs=[],
    )


def _fill_metadata(
    result: CreatableTopicResult,
    planned: _Planned,
    release: tuple[int, ...],
    broker_config: BrokerLogDefaults,
) -> None:
    result.num_partitions = len(planned.assignment)
    result.replication_factor = len(planned.assignment.get(0, ()))
    result.configs = [
        CreatableTopicConfigs(
            name=entry.name,
            value=entry.value,
            read_only=entry.read_only,
            config_source=int(entry.source),
            is_sensitive=entry.is_sensitive,
        )
        for entry in describe_topic_config(
            planned.topic.name, planned.configs, release, broker_config
        )
    ]


def _all_led(image: MetadataImage, names: list[str]) -> bool:
    for name in names:
        topic = image.topics.get(name)
        if topic is None or not topic.all_partitions_led:
            return False
    return True


@dataclass(frozen=True)
class _Access:
    """What the principal may do with each topic named, as KafkaApis decides it before any
    validation: CREATE on the cluster, else CREATE on each topic; DESCRIBE_CONFIGS on each topic
    decides whether a v5+ answer shows its configs (neither denial is audited)."""

    may_create: set[str] | None  # None: every topic
    may_describe: set[str] | None  # None: every topic
    # 3.4-3.8 leave __cluster_metadata out of the topics anyone may create (or see the configs
    # of), with or without an authorizer: "Authorization failed."; 3.9 names the reason.
    metadata_refused: bool

    @classmethod
    def check(cls, ctx: RequestContext, names: list[str]) -> _Access:
        release = ctx.release
        may_create: set[str] | None = None
        may_describe: set[str] | None = None
        if auth.has_authorizer(ctx):
            if release >= (3, 4):
                names = [n for n in names if n != METADATA_TOPIC]
            if not auth.authorize_cluster(ctx, auth.CREATE, log_if_denied=False):
                may_create = auth.filter_authorized(ctx, auth.CREATE, auth.TOPIC, names)
            may_describe = auth.filter_authorized(
                ctx, auth.DESCRIBE_CONFIGS, auth.TOPIC, names, log_if_denied=False
            )
        return cls(may_create, may_describe, (3, 4) <= release < (3, 9))

    def refused(self, name: str) -> bool:
        """Creating `name` is not the principal's: TOPIC_AUTHORIZATION_FAILED."""
        if self.metadata_refused and name == METADATA_TOPIC:
            return True
        return self.may_create is not None and name not in self.may_create

    def hidden(self, name: str) -> bool:
        """Kafka's topic_config_error_code: the configs are not the principal's to see."""
        if self.metadata_refused and name == METADATA_TOPIC:
            return True
        return self.may_describe is not None and name not in self.may_describe


async def handle(ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    if not ctx.broker.is_controller:
        return CreateTopicsResponse(
            topics=[_result(t.name, ApiError(error_codes.NOT_CONTROLLER)) for t in request.topics]
        )
    creator, configs = await asyncio.gather(
        TopicCreator.for_request(ctx),
        ctx.broker.store.get_children(ConfigEntityTypeNode.path("topics")),
    )
    # KafkaApis: quotas.controllerMutation.newQuotaFor(request, strictSinceVersion = 6).
    quota = mutation_quota_for(
        ctx.broker, API_KEY, ctx.version, ctx.connection.principal, ctx.header.client_id
    )
    access = _Access.check(ctx, list(Counter(t.name for t in request.topics)))
    results, to_write = await _validate(ctx, request, creator, quota, access)
    created = await _write(ctx, results, to_write, set(configs or ()), access)
    await _wait_for_leaders(ctx, request.timeout_ms, results, created)
    return CreateTopicsResponse(throttle_time_ms=quota.throttle_time_ms, topics=results)


async def _validate(
    ctx: RequestContext,
    request: CreateTopicsRequest,
    creator: TopicCreator,
    quota: ControllerMutationQuota,
    access: _Access,
) -> tuple[list[CreatableTopicResult], list[tuple[int, _Planned]]]:
    """Each topic's result, and the topics to write with the index of their result.

    Validation runs topic by topic in request order, as Kafka's does (a topic validated earlier
    counts as existing for later collision checks); the writes then go out together."""
    counts = Counter(t.name for t in request.topics)
    results: list[CreatableTopicResult] = []
    to_write: list[tuple[int, _Planned]] = []
    pacer = Pacer()
    for topic in request.topics:
        if pacer.due():
            await pacer.pause()
        refused = _refusal(topic.name, counts[topic.name], ctx.release, access)
        if refused is not None:
            results.append(refused)
            continue
        try:
            planned = await creator.plan(topic, pacer)
        except ApiError as error:
            results.append(_result(topic.name, error))
            continue
        # ZkAdminManager.createTopics: the quota is charged after validation, just before the
        # write (never for validate_only), with the topic's partition count.
        if not request.validate_only and not quota.record(len(planned.assignment)):
            results.append(_result(topic.name, ApiError(error_codes.THROTTLING_QUOTA_EXCEEDED)))
            continue
        results.append(_accepted(ctx, planned, access))
        if not request.validate_only:
            creator.existing.add(topic.name)
            to_write.append((len(results) - 1, planned))
    return results, to_write


def _refusal(
    name: str, count: int, release: Release, access: _Access
) -> CreatableTopicResult | None:
    """KafkaApis' answer for a topic it refuses before validating it, None for the others."""
    if name == METADATA_TOPIC and release >= (3, 9):
        message = f"Creation of internal topic {METADATA_TOPIC} is prohibited."
        return _result(name, ApiError(error_codes.INVALID_REQUEST, message))
    # Errors found before the creation keep Kafka's topic_config_error_code.
    if count > 1:
        error = ApiError(error_codes.INVALID_REQUEST, "Found multiple entries for this topic.")
        return _result(name, error, access.hidden(name))
    if access.refused(name):
        error = ApiError(error_codes.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
        return _result(name, error, access.hidden(name))
    return None


def _accepted(ctx: RequestContext, planned: _Planned, access: _Access) -> CreatableTopicResult:
    """The result of a topic that passed validation: its configs for v5+ when visible."""
    name = planned.topic.name
    result = CreatableTopicResult(name=name, error_code=error_codes.NONE, error_message=None)
    if access.hidden(name):
        result.topic_config_error_code = error_codes.TOPIC_AUTHORIZATION_FAILED
    elif ctx.version >= 5:
        _fill_metadata(result, planned, ctx.release, ctx.broker.broker_config)
    return result


async def _write(
    ctx: RequestContext,
    results: list[CreatableTopicResult],
    to_write: list[tuple[int, _Planned]],
    existing_configs: set[str],
    access: _Access,
) -> dict[str, TopicAssignment]:
    """Write every validated topic, pipelined, each result becoming its own write's outcome;
    the topics created, with their assignment."""
    controller = ctx.broker.controller
    expected = [planned.topic.name for _, planned in to_write]
    if controller is not None:
        controller.expect_topics(expected)
    # Bounded: 10,000 topics must not encode and queue 10,000 writes in one loop iteration.
    outcomes = await gather_bounded(
        (
            create_topic(
                ctx.broker.store,
                planned.topic.name,
                planned.assignment,
                planned.configs,
                ctx.release,
                config_exists=planned.topic.name in existing_configs,
            )
            for _, planned in to_write
        ),
        return_exceptions=True,
    )
    created: dict[str, TopicAssignment] = {}
    for (index, planned), outcome in zip(to_write, outcomes, strict=True):
        result = results[index]
        if isinstance(outcome, TopicExists):
            exists = ApiError(error_codes.TOPIC_ALREADY_EXISTS, _exists_message(result.name))
            results[index] = _result(result.name, exists)
        elif isinstance(outcome, RequestTooLargeError):
            # Refused by the store before sending (the estimate above was short): not written.
            partitions = len(planned.assignment)
            message = too_large_message(result.name, partitions, outcome.size, outcome.limit)
            results[index] = _result(result.name, ApiError(error_codes.INVALID_PARTITIONS, message))
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            # ZkAdminManager.populateIds: only for a principal allowed to see the configs.
            if not access.hidden(result.name):
                result.topic_id = outcome.topic_id or ZERO_UUID
            created[result.name] = outcome
    if controller is not None and expected:
        controller.topics_created(created, expected)
    return created


async def _wait_for_leaders(
    ctx: RequestContext,
    timeout_ms: int,
    results: list[CreatableTopicResult],
    created: dict[str, TopicAssignment],
) -> None:
    """Wait up to `timeout_ms` until this broker's image shows a leader for every partition
    created; a topic still without one is answered REQUEST_TIMED_OUT."""
    if not created:
        return
    waiting = set(created)

    def all_led(image: MetadataImage) -> bool:
        # Topics found led are not looked at again: each image change costs what is left.
        waiting.difference_update([n for n in waiting if _all_led(image, [n])])
        return not waiting

    done = timeout_ms > 0 and await ctx.image.wait_for(all_led, timeout_ms / 1000)
    if not done:
        for result in results:
            if result.name in created and not _all_led(ctx.image, [result.name]):
                _timed_out(result)


def _timed_out(result: CreatableTopicResult) -> None:
    result.error_code = error_codes.REQUEST_TIMED_OUT
    result.error_message = None
    result.topic_config_error_code = error_codes.NONE
    result.configs = []
    result.num_partitions = -1
    result.replication_factor = -1


def error_response(
    request: CreateTopicsRequest, version: int, code: int, message: str | None
) -> CreateTopicsResponse:
    return CreateTopicsResponse(
        topics=[_result(t.name, ApiError(code, message)) for t in request.topics]
    )
