"""DescribeConfigs: the configs of topics, brokers and broker loggers.

Answered by any broker, as Kafka 2.8's `ConfigHelper.describeConfigs` (docs/kafka-behaviour.md
§4.3): the resource-type check for the whole request, then each resource on its own. Topic
overrides are read from `/config/topics/<t>`, so a value written by any tool shows at once;
values, sources and synonyms come from `zkbroker.broker.rules.config_catalog` and
`zkbroker.broker.rules.broker_config`, loggers from `zkbroker.broker.rules.broker_loggers`.
`include_documentation` (v3+) sends zkbroker's own one-line text (Kafka's is not copied).
With an authorizer, DESCRIBE_CONFIGS on the cluster or topic; denied resources come last.

Not here: CLIENT_METRICS resources (KRaft only: answered as an unexpected type).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)
from zkbroker.broker.rules.config_catalog import describe_topic_config
from zkbroker.broker.rules.config_def import ConfigEntry, ConfigSource, ConfigType, InvalidConfig
from zkbroker.broker.rules.config_documentation import (
    broker_config_documentation,
    topic_config_documentation,
)
from zkbroker.broker.rules.topic_names import validation_error
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.config_alter import read_overrides
from zkbroker.handlers.support.config_resources import (
    ResourceError,
    ResourceType,
    entries_filtered,
    handled_types,
    parse_broker_id,
    type_name,
)
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout import ConfigEntityNode, ZnodeFormatError, invalid_path_reason

API_KEY = ApiKey.DESCRIBE_CONFIGS
ZK_TROUBLE_FAMILY = Family.CONFIGS
README_NOTE = (
    'TOPIC, BROKER (own id or `""` = cluster default), BROKER_LOGGER; values, sources, '
    "synonyms, read-only, sensitive, types; v3+ documentation (zkbroker's own one-line "
    "texts)"
)

#: Resources per window: the overrides of its topics are read from ZooKeeper in one
#: pipelined batch before any of them is described. Reading while describing costs a
#: cross-thread loop wake-up per read and GIL hand-overs with kazoo's thread (up to the 5 ms
#: switch interval each), so its time grows with the machine's load; separated, kazoo works
#: while the loop waits for the batch.
WINDOW = 1024


async def handle(ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    release = ctx.release
    allowed = handled_types(release)
    for resource in request.resources:
        if resource.resource_type not in allowed:
            rt = type_name(resource.resource_type, release)
            return error_response(
                request,
                ctx.version,
                error_codes.INVALID_REQUEST,
                f"Unexpected resource type {rt} for resource {resource.resource_name}",
            )
    # KafkaApis answers the authorized resources first, then the denied ones.
    resources, denied = _authorized(ctx, request.resources)
    results: list[DescribeConfigsResult] = []
    pacer = Pacer()  # 10,000 resources: the other clients are served between slices
    for start in range(0, len(resources), WINDOW):
        window = resources[start : start + WINDOW]
        read = await _read_topic_overrides(ctx, window, pacer)
        for resource in window:
            results.append(await _describe_one(ctx, request, resource, read))
            if pacer.due():
                await pacer.pause()
    return DescribeConfigsResponse(throttle_time_ms=0, results=results + denied)


def _authorized(
    ctx: RequestContext, resources: list[DescribeConfigsResource]
) -> tuple[list[DescribeConfigsResource], list[DescribeConfigsResult]]:
    """The resources the principal may DESCRIBE_CONFIGS, and the results of the others (the
    error with its default message); every resource without an authorizer."""
    if not auth.has_authorizer(ctx):
        return resources, []
    allowed: list[DescribeConfigsResource] = []
    denied: list[DescribeConfigsResult] = []
    for resource in resources:
        name, rtype = resource.resource_name, resource.resource_type
        code = auth.config_resource_denied(ctx, rtype, name, auth.DESCRIBE_CONFIGS)
        if code is None:
            allowed.append(resource)
            continue
        denied.append(
            DescribeConfigsResult(
                error_code=code,
                error_message=error_codes.DEFAULT_MESSAGES.get(code),
                resource_type=rtype,
                resource_name=name,
                configs=[],
            )
        )
    return allowed, denied


async def _describe_one(
    ctx: RequestContext,
    request: DescribeConfigsRequest,
    resource: DescribeConfigsResource,
    read: dict[str, tuple[bytes, Any] | None],
) -> DescribeConfigsResult:
    result = DescribeConfigsResult(
        error_code=error_codes.NONE,
        error_message=None,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
        configs=[],
    )
    try:
        entries = await _describe(ctx, resource, request.include_documentation, read)
        result.configs = _wire_entries(entries, request, ctx.version)
    except ResourceError as e:
        result.error_code, result.error_message = e.code, e.message
    return result


async def _read_topic_overrides(
    ctx: RequestContext, window: list[DescribeConfigsResource], pacer: Pacer
) -> dict[str, tuple[bytes, Any] | None]:
    """The `/config/topics/<t>` node of each topic of the window that will be described
    (a legal name this broker knows), read in one pipelined batch (`ZkStore.get_many`);
    None where there is none."""
    names: dict[str, None] = {}
    release = ctx.release
    for resource in window:
        name = resource.resource_name
        if (
            resource.resource_type == ResourceType.TOPIC
            and name in ctx.image.topics
            and validation_error(name, release) is None
            and invalid_path_reason(ConfigEntityNode.topic(name)) is None
        ):
            names[name] = None
        if pacer.due():
            await pacer.pause()
    if not names:
        return {}
    nodes = await ctx.broker.store.get_many([ConfigEntityNode.topic(n) for n in names])
    return dict(zip(names, nodes, strict=True))


async def _describe(
    ctx: RequestContext,
    resource: DescribeConfigsResource,
    documentation: bool,
    read: dict[str, tuple[bytes, Any] | None],
) -> list[ConfigEntry]:
    name = resource.resource_name
    keys = resource.configuration_keys
    if resource.resource_type == ResourceType.TOPIC:
        return await _describe_topic(ctx, name, keys, documentation, read)
    broker = ctx.broker
    if resource.resource_type == ResourceType.BROKER:
        if not name:
            entries = broker.broker_config.describe(per_broker=False)
        elif parse_broker_id(name) == broker.broker_id:
            entries = broker.broker_config.describe(per_broker=True)
        else:
            raise ResourceError.invalid_request(
                f"Unexpected broker id, expected {broker.broker_id} or empty string, "
                f"but received {name}"
            )
        wanted = set(entries_filtered([e.name for e in entries], keys))
        return [
            _documented(e, broker_config_documentation(e.name) if documentation else None)
            for e in entries
            if e.name in wanted
        ]
    # BROKER_LOGGER
    if not name:
        raise ResourceError.invalid_request("Broker id must not be empty")
    if parse_broker_id(name) != broker.broker_id:
        raise ResourceError.invalid_request(
            f"Unexpected broker id, expected {broker.broker_id} but received {name}"
        )
    levels = broker.broker_loggers.describe()
    return [
        ConfigEntry(
            name=logger,
            value=levels[logger],
            source=ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
            is_sensitive=False,
            read_only=False,
            config_type=ConfigType.UNKNOWN,  # Kafka leaves it unset
            synonyms=(),
        )
        for logger in entries_filtered(levels, keys)
    ]


async def _describe_topic(
    ctx: RequestContext,
    name: str,
    keys: list[str] | None,
    documentation: bool,
    read: dict[str, tuple[bytes, Any] | None],
) -> list[ConfigEntry]:
    problem = validation_error(name, ctx.release)
    if problem is not None:
        raise ResourceError(error_codes.INVALID_TOPIC_EXCEPTION, problem)
    if name not in ctx.image.topics:
        raise ResourceError(error_codes.UNKNOWN_TOPIC_OR_PARTITION, None)
    try:
        if name in read:
            node = read[name]
            overrides = ConfigEntityNode.decode(node[0] or b"") if node is not None else {}
        else:  # it appeared in the image after the window's reads
            overrides = await read_overrides(ctx, ConfigEntityNode.topic(name))
        entries = describe_topic_config(name, overrides, ctx.release, ctx.broker.broker_config)
    except (InvalidConfig, ZnodeFormatError) as e:
        # Kafka fails building the topic's LogConfig: UNKNOWN_SERVER_ERROR, message null.
        raise ResourceError(error_codes.UNKNOWN_SERVER_ERROR, None) from e
    wanted = set(entries_filtered([e.name for e in entries], keys))
    return [
        _documented(e, topic_config_documentation(e.name) if documentation else None)
        for e in entries
        if e.name in wanted
    ]


def _documented(entry: ConfigEntry, documentation: str | None) -> ConfigEntry:
    return entry if documentation is None else replace(entry, documentation=documentation)


def _wire_entries(
    entries: list[ConfigEntry], request: DescribeConfigsRequest, version: int
) -> list[DescribeConfigsResourceResult]:
    synonyms_wanted = version >= 1 and request.include_synonyms
    return [
        DescribeConfigsResourceResult(
            name=e.name,
            value=e.value,
            read_only=e.read_only,
            is_default=e.source is ConfigSource.DEFAULT_CONFIG,
            config_source=int(e.source),
            is_sensitive=e.is_sensitive,
            synonyms=[
                DescribeConfigsSynonym(name=s.name, value=s.value, source=int(s.source))
                for s in e.synonyms
            ]
            if synonyms_wanted
            else [],
            config_type=int(e.config_type),
            documentation=e.documentation,
        )
        for e in entries
    ]


def error_response(
    request: DescribeConfigsRequest, version: int, code: int, message: str | None
) -> DescribeConfigsResponse:
    return DescribeConfigsResponse(
        results=[
            DescribeConfigsResult(
                error_code=code,
                error_message=message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
                configs=[],
            )
            for r in request.resources
        ]
    )
