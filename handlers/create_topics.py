"""CreateTopics (key 19), versions 0-7.

Kafka 2.8's order (kafka-zk-semantics §2.1; KafkaApis.handleCreateTopicsRequest,
ZkAdminManager.createTopics, AdminZkClient.validateTopicCreate):
1. not the active controller: NOT_CONTROLLER for every topic, nothing else (every version);
2. a name given twice: INVALID_REQUEST "Found multiple entries for this topic." on every
   entry with that name, none of them created;
3. then per topic, in request order and independently: already known -> TOPIC_ALREADY_EXISTS;
   null config values -> INVALID_REQUEST (2.8-3.2) / INVALID_CONFIG (3.3+); a count or
   replication factor together with assignments -> INVALID_REQUEST; -1/-1 resolved to the
   broker defaults (releases 2.4+, any request version); replica assignment (Kafka's
   AdminUtils; manual assignments are not checked for unknown brokers); the name's
   legality; marked for deletion (3.1+) / exists in ZooKeeper -> TOPIC_ALREADY_EXISTS;
   '.'/'_' collision with an existing topic (earlier topics of the same request count);
   replica-list rules -> INVALID_REPLICA_ASSIGNMENT; topic configs -> INVALID_CONFIG;
4. v5+: num_partitions, replication_factor and every topic config with its source;
5. validate_only: NONE, nothing written; otherwise `/config/topics/<t>` and
   `/brokers/topics/<t>` in one transaction (the controller creates partition states);
6. timeout_ms <= 0: created topics answer REQUEST_TIMED_OUT at once; otherwise the answer
   waits until this process's metadata image shows a leader for every partition of every
   created topic, and topics still without one at the timeout get REQUEST_TIMED_OUT.
   Any error clears configs and sets num_partitions/replication_factor to -1 (v5+).
Messages follow Kafka's words and ApiError's null-message rule.

Not emulated: authorization, create-topic policies (POLICY_VIOLATION) and controller
mutation quotas (THROTTLING_QUOTA_EXCEEDED).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from dataclasses import dataclass

from broker.image.metadata_image import MetadataImage
from broker.protocol import error_codes
from broker.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from broker.rules import topic_names
from broker.rules.api_error import ApiError
from broker.rules.config_catalog import (
    BrokerLogDefaults,
    InvalidConfig,
    describe_topic_config,
    validate_topic_configs,
)
from broker.rules.replica_assignment import AssignmentError, BrokerPlacement, assign_replicas
from handlers.context import RequestContext
from zk_layout import ConfigEntityTypeNode, DeleteTopicsNode, TopicAssignment, TopicsNode
from zk_layout.store.admin_zk import TopicExists, create_topic

API_KEY = 19
MIN_VERSION = 0
MAX_VERSION = 7

ZERO_UUID = uuid.UUID(int=0)


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

    def plan(self, topic: CreatableTopic) -> _Planned:
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
        assignment = self._assignment(topic)
        configs = {c.name: c.value for c in topic.configs if c.value is not None}
        self._validate_create(name, assignment, configs)
        return _Planned(topic, assignment, configs)

    def _assignment(self, topic: CreatableTopic) -> dict[int, list[int]]:
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
            return assign_replicas(brokers, partitions, replication)
        except AssignmentError as e:
            raise ApiError(e.error_code, e.message) from e

    def _validate_create(
        self, name: str, assignment: dict[int, list[int]], configs: dict[str, str]
    ) -> None:
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
        if len({len(r) for r in assignment.values()}) != 1:
            raise ApiError(
                error_codes.INVALID_REPLICA_ASSIGNMENT,
                "All partitions should have the same number of replicas",
            )
        if any(len(r) != len(set(r)) for r in assignment.values()):
            raise ApiError(
                error_codes.INVALID_REPLICA_ASSIGNMENT,
                "Duplicate replica assignment found: " + _scala_assignment(assignment),
            )
        size = len(assignment)
        if sum(p for p in assignment if p >= 0) != size * (size - 1) // 2:
            raise ApiError(
                error_codes.INVALID_REPLICA_ASSIGNMENT,
                "partitions should be a consecutive 0-based integer sequence",
            )
        try:
            validate_topic_configs(configs, self.release)
        except InvalidConfig as e:
            # Before 2.1 a bad value came back as UNKNOWN_SERVER_ERROR (not converted).
            mapped = e.for_create_topics(self.release)
            raise ApiError(mapped.error_code, mapped.message) from e


def _result(name: str, error: ApiError) -> CreatableTopicResult:
    return CreatableTopicResult(
        name=name,
        error_code=error.code,
        error_message=error.wire_message,
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


async def handle(ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    if not ctx.broker.is_controller:
        return CreateTopicsResponse(
            topics=[_result(t.name, ApiError(error_codes.NOT_CONTROLLER)) for t in request.topics]
        )
    store = ctx.broker.store
    counts = Counter(t.name for t in request.topics)
    creator, configs = await asyncio.gather(
        TopicCreator.for_request(ctx), store.get_children(ConfigEntityTypeNode.path("topics"))
    )
    existing_configs = set(configs or ())
    release = ctx.release

    # Validation runs topic by topic in request order, as Kafka's does (a topic validated
    # earlier counts as existing for later collision checks); the writes then go out
    # together, pipelined, and each topic's result is its own.
    results: list[CreatableTopicResult] = []
    to_write: list[tuple[int, _Planned]] = []
    for topic in request.topics:
        if counts[topic.name] > 1:
            error = ApiError(error_codes.INVALID_REQUEST, "Found multiple entries for this topic.")
            results.append(_result(topic.name, error))
            continue
        try:
            planned = creator.plan(topic)
        except ApiError as error:
            results.append(_result(topic.name, error))
            continue
        result = CreatableTopicResult(
            name=topic.name, error_code=error_codes.NONE, error_message=None
        )
        if ctx.version >= 5:
            _fill_metadata(result, planned, release, ctx.broker.broker_config)
        results.append(result)
        if not request.validate_only:
            creator.existing.add(topic.name)
            to_write.append((len(results) - 1, planned))

    controller = ctx.broker.controller
    expected = [planned.topic.name for _, planned in to_write]
    if controller is not None:
        controller.expect_topics(expected)
    outcomes = await asyncio.gather(
        *(
            create_topic(
                store,
                planned.topic.name,
                planned.assignment,
                planned.configs,
                release,
                config_exists=planned.topic.name in existing_configs,
            )
            for _, planned in to_write
        ),
        return_exceptions=True,
    )
    created: dict[str, TopicAssignment] = {}
    for (index, _), outcome in zip(to_write, outcomes, strict=True):
        result = results[index]
        if isinstance(outcome, TopicExists):
            exists = ApiError(error_codes.TOPIC_ALREADY_EXISTS, _exists_message(result.name))
            results[index] = _result(result.name, exists)
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            result.topic_id = outcome.topic_id or ZERO_UUID
            created[result.name] = outcome

    if controller is not None and expected:
        controller.topics_created(created, expected)
    if created:
        names = list(created)
        done = request.timeout_ms > 0 and await ctx.image.wait_for(
            lambda image: _all_led(image, names), request.timeout_ms / 1000
        )
        if not done:
            for result in results:
                if result.name in created and not _all_led(ctx.image, [result.name]):
                    _timed_out(result)
    return CreateTopicsResponse(throttle_time_ms=0, topics=results)


def _timed_out(result: CreatableTopicResult) -> None:
    result.error_code = error_codes.REQUEST_TIMED_OUT
    result.error_message = None
    result.configs = []
    result.num_partitions = -1
    result.replication_factor = -1


def error_response(
    request: CreateTopicsRequest, version: int, code: int, message: str | None
) -> CreateTopicsResponse:
    return CreateTopicsResponse(
        topics=[_result(t.name, ApiError(code, message)) for t in request.topics]
    )
