"""The shared core of AlterConfigs and IncrementalAlterConfigs (docs/kafka-behaviour.md §4.1,
§4.2): Kafka's `ZkAdminManager.alterConfigs`/`incrementalAlterConfigs` and, from 3.2, the
`ConfigAdminManager.preprocess` step in front of them.

`check_entries` (duplicate keys, null values), `alter_topic` and `alter_broker` (checks,
validation, then the entity node and its notification in one multi,
`zkbroker.zk_layout.store.admin_zk`), `apply_incremental` (the four operations, with Java's
`String.split` and Scala's list `diff`). A Kafka ConfigException is `InvalidConfig(
config_exception=True)` here, answered with §4.1's "Invalid config value for resource ..."
wording and code per release.

Not here: the request-level flow and responses (the two handler modules), alter policies,
authorization.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.broker_config import from_persistent
from zkbroker.broker.rules.broker_config_catalog import broker_config_key
from zkbroker.broker.rules.broker_config_validation import validate_broker_configs
from zkbroker.broker.rules.config_catalog import topic_config_keys, validate_topic_configs
from zkbroker.broker.rules.config_def import ConfigKey, ConfigType, InvalidConfig
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.config_resources import (
    ResourceError,
    ResourceType,
    parse_broker_id,
    resource_text,
)
from zkbroker.zk_layout import DEFAULT_ENTITY, ConfigEntityNode, TopicNode, invalid_path_reason
from zkbroker.zk_layout import ConfigType as EntityType
from zkbroker.zk_layout.store.admin_zk import change_entity_config

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DUPLICATE_RESOURCE = "Each resource must appear at most once."
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


@dataclass(frozen=True)
class Op:
    name: str
    op: int
    value: str | None


def preprocessed(release: tuple[int, ...]) -> bool:
    """3.2+ brokers check resources in ConfigAdminManager.preprocess first."""
    return release >= (3, 2)


class _Resource(Protocol):
    @property
    def resource_type(self) -> int: ...

    @property
    def resource_name(self) -> str: ...


Res = TypeVar("Res", bound=_Resource)
Answer = TypeVar("Answer")


def resource_response(
    make: Callable[..., Answer], resource: _Resource, code: int, message: str | None
) -> Answer:
    """One resource's answer, built by the response class `make`."""
    return make(
        error_code=code,
        error_message=message,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
    )


async def alter_authorized(
    ctx: RequestContext,
    resources: Sequence[Res],
    alter: Callable[[Res], Awaitable[None]],
    answer: Callable[[Res, int, str | None], Answer],
) -> list[Answer]:
    """AlterConfigs' and IncrementalAlterConfigs' answers: `answer_each` of the resources
    allowed ALTER_CONFIGS, then the denied ones."""
    # KafkaApis: ALTER_CONFIGS on the cluster (brokers, loggers) or the topic; the denied
    # resources are answered after the others, with no message.
    allowed, denied = [], []
    for r in resources:
        code = auth.config_resource_denied(
            ctx, r.resource_type, r.resource_name, auth.ALTER_CONFIGS
        )
        if code is None:
            allowed.append(r)
        else:
            denied.append(answer(r, code, None))
    responses = await answer_each(allowed, ctx.release, alter, answer)
    return responses + denied


async def answer_each(
    resources: Sequence[Res],
    release: tuple[int, ...],
    alter: Callable[[Res], Awaitable[None]],
    answer: Callable[[Res, int, str | None], Answer],
) -> list[Answer]:
    """Run `alter` on each resource and answer each on its own. A resource named twice is
    answered once with its last content before 3.2 (Kafka builds a Map), and INVALID_REQUEST
    for every occurrence from 3.2 (ConfigAdminManager.preprocess)."""
    keys = [(r.resource_type, r.resource_name) for r in resources]
    duplicated: set[tuple[int, str]] = set()
    if preprocessed(release):
        duplicated = {k for k in keys if keys.count(k) > 1}
        todo = list(resources)
    else:
        last: dict[tuple[int, str], Res] = {}
        for key, r in zip(keys, resources, strict=True):
            last[key] = r  # keeps the first position, takes the last content
        todo = list(last.values())
    answers = []
    for resource in todo:
        if (resource.resource_type, resource.resource_name) in duplicated:
            answers.append(answer(resource, error_codes.INVALID_REQUEST, DUPLICATE_RESOURCE))
            continue
        try:
            await alter(resource)
            answers.append(answer(resource, error_codes.NONE, None))
        except ResourceError as e:
            answers.append(answer(resource, e.code, e.message))
    return answers


def check_entries(ops: Sequence[Op], release: tuple[int, ...], *, incremental: bool) -> None:
    """Duplicate keys and null values, as each generation words them."""
    names = [o.name for o in ops]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates and (incremental or preprocessed(release)):
        if preprocessed(release):
            raise ResourceError.invalid_request("Error due to duplicate config keys")
        raise ResourceError.invalid_request(
            f"Error due to duplicate config keys : {','.join(duplicates)}"
        )
    nulls = [o for o in ops if o.value is None and (not incremental or o.op != DELETE)]
    if nulls:
        if preprocessed(release):
            listed = ", ".join(o.name for o in nulls)
        elif incremental:
            listed = ",".join(f"{OP_NAMES.get(o.op, 'null')}:{o.name}" for o in nulls)
        else:
            listed = ",".join(o.name for o in nulls)
        raise ResourceError.invalid_request(f"Null value not supported for : {listed}")


def config_failure(
    e: InvalidConfig, type_id: int, name: str, release: tuple[int, ...]
) -> ResourceError:
    """ZkAdminManager's catch clauses for a resource: a ConfigException gets the resource
    prefix and INVALID_REQUEST (before 3.3) or INVALID_CONFIG; other errors keep theirs."""
    if not e.config_exception:
        return ResourceError(e.error_code, e.message)
    code = error_codes.INVALID_CONFIG if release >= (3, 3) else error_codes.INVALID_REQUEST
    text = resource_text(type_id, name, release)
    return ResourceError(code, f"Invalid config value for resource {text}: {e.message}")


# ---- topics ------------------------------------------------------------------------------


async def read_overrides(ctx: RequestContext, path: str) -> dict[str, str]:
    """The entries of a `/config/<type>/<name>` node ({} when there is none). A name that
    makes no znode path (".", "..", "a/.") is refused as Kafka's ZooKeeper client refuses it
    (IllegalArgumentException, UNKNOWN_SERVER_ERROR for this resource, null message)."""
    if invalid_path_reason(path) is not None:
        raise ResourceError(error_codes.UNKNOWN_SERVER_ERROR)
    got = await ctx.broker.store.get(path)
    return ConfigEntityNode.decode(got[0] or b"") if got is not None else {}


def check_topic_name(name: str, release: tuple[int, ...]) -> None:
    if not name and release >= (3, 3):
        raise ResourceError.invalid_request("Default topic resources are not allowed.")


async def alter_topic(
    ctx: RequestContext, name: str, configs: dict[str, str], validate_only: bool
) -> None:
    release = ctx.release
    check_topic_name(name, release)
    if name not in ctx.image.topics:
        raise ResourceError(
            error_codes.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
        )
    if await ctx.broker.store.exists(TopicNode.path(name)) is None:
        raise ResourceError(
            error_codes.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist."
        )
    try:
        validate_topic_configs(configs, release)
    except InvalidConfig as e:
        raise config_failure(e, ResourceType.TOPIC, name, release) from e
    if not validate_only:
        await change_entity_config(ctx.broker.store, EntityType.TOPICS, name, configs, release)


# ---- brokers -----------------------------------------------------------------------------


def target_broker(ctx: RequestContext, name: str) -> int | None:
    """ZkAdminManager.getBrokerId: None for the cluster default (`""`), else this broker's id."""
    if not name:
        return None
    release = ctx.release
    broker_id = parse_broker_id(name, node_wording=preprocessed(release))
    if broker_id != ctx.broker.broker_id:
        raise ResourceError.invalid_request(
            f"Unexpected broker id, expected {ctx.broker.broker_id}, but received {name}"
        )
    return broker_id


async def current_broker_overrides(ctx: RequestContext, broker_id: int | None) -> dict[str, str]:
    """What IncrementalAlterConfigs starts from: the entity node after fromPersistentProps."""
    stored = await read_overrides(ctx, ConfigEntityNode.broker(broker_id))
    return from_persistent(stored, ctx.release, per_broker=broker_id is not None)


async def alter_broker(
    ctx: RequestContext,
    name: str,
    broker_id: int | None,
    configs: dict[str, str],
    validate_only: bool,
) -> None:
    release = ctx.release
    per_broker = broker_id is not None
    try:
        validate_broker_configs(
            configs,
            release,
            per_broker=per_broker,
            current=ctx.broker.broker_config.effective_overrides(),
        )
    except InvalidConfig as e:
        if preprocessed(release):
            code = error_codes.INVALID_REQUEST if e.config_exception else e.error_code
            raise ResourceError(code, e.message) from e
        raise config_failure(e, ResourceType.BROKER, name, release) from e
    for key_name in configs:
        key = broker_config_key(key_name, release)
        if key is not None and key.type is ConfigType.PASSWORD:
            problem = (
                "Password encoder secret not configured"
                if per_broker
                else "Password config can be defined only at broker level"
            )
            raise config_failure(
                InvalidConfig(problem, config_exception=True), ResourceType.BROKER, name, release
            )
    if not validate_only:
        entity = DEFAULT_ENTITY if broker_id is None else str(broker_id)
        await change_entity_config(ctx.broker.store, EntityType.BROKERS, entity, configs, release)


def check_broker_resource_supported(release: tuple[int, ...]) -> None:
    if release < (1, 1):  # dynamic broker configs came with KIP-226 (1.1)
        raise ResourceError.invalid_request(
            "AlterConfigs is only supported for topics, but resource type is BROKER"
        )


# ---- IncrementalAlterConfigs ops ---------------------------------------------------------


def java_split(text: str) -> list[str]:
    """Java's `text.split(",")`: trailing empty strings dropped, but "" -> [""]."""
    if "," not in text:
        return [text]
    parts = text.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _list_diff(left: list[str], right: list[str]) -> list[str]:
    """Scala's `Seq.diff`: removes one occurrence per element of `right`."""
    remaining = list(right)
    kept = []
    for item in left:
        if item in remaining:
            remaining.remove(item)
        else:
            kept.append(item)
    return kept


def apply_incremental(
    ops: Sequence[Op], current: dict[str, str], lookup: Callable[[str], ConfigKey | None]
) -> dict[str, str]:
    """prepareIncrementalConfigs: the resulting full override set."""
    props = dict(current)
    for o in ops:
        if o.op == SET:
            assert o.value is not None
            props[o.name] = o.value
        elif o.op == DELETE:
            props.pop(o.name, None)
        elif o.op in (APPEND, SUBTRACT):
            key = lookup(o.name)
            if key is None:
                # Kafka's Scala map lookup throws NoSuchElementException: -1, message null.
                raise ResourceError(error_codes.UNKNOWN_SERVER_ERROR, None)
            word = "append" if o.op == APPEND else "subtract"
            if key.type is not ConfigType.LIST:
                raise ResourceError.invalid_request(
                    f"Config value {word} is not allowed for config key: {o.name}"
                )
            assert o.value is not None
            old = props.get(o.name)
            old_list = java_split(old if old is not None else key.default or "")
            new = java_split(o.value)
            result = old_list + new if o.op == APPEND else _list_diff(old_list, new)
            props[o.name] = ",".join(result)
        else:
            # OpType.forId gives null, and Kafka's match on it throws: -1, message null.
            raise ResourceError(error_codes.UNKNOWN_SERVER_ERROR, None)
    return props


def topic_key_lookup(release: tuple[int, ...]) -> Callable[[str], ConfigKey | None]:
    keys = topic_config_keys(release, include_internal=True)
    return keys.get


def broker_key_lookup(release: tuple[int, ...]) -> Callable[[str], ConfigKey | None]:
    def lookup(name: str) -> ConfigKey | None:
        # KafkaConfig.configKeys holds base names only: a listener-prefixed name is unknown.
        key = broker_config_key(name, release)
        return key if key is not None and key.name == name else None

    return lookup
