"""IncrementalAlterConfigs (KIP-339): SET, DELETE, APPEND and SUBTRACT applied to a resource's
current overrides.

Follows docs/kafka-behaviour.md §4.2 (2.8 `ZkAdminManager.incrementalAlterConfigs`, 3.2+
`ConfigAdminManager.preprocess`), authorization included. Answered by any broker. TOPIC and
BROKER results are validated and written as AlterConfigs writes them
(`zkbroker.handlers.support.config_alter`); BROKER_LOGGER changes this broker's levels in memory
(`zkbroker.broker.rules.broker_loggers`).

Not emulated: alter-config policies.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.incremental_alter_configs import (
    AlterConfigsResource,
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from zkbroker.broker.rules.broker_loggers import LoggerOpError
from zkbroker.broker.rules.config_def import InvalidConfig
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.config_alter import (
    Op,
    alter_authorized,
    alter_broker,
    alter_topic,
    apply_incremental,
    broker_key_lookup,
    check_broker_resource_supported,
    check_entries,
    check_topic_name,
    config_failure,
    current_broker_overrides,
    preprocessed,
    read_overrides,
    resource_response,
    target_broker,
    topic_key_lookup,
)
from zkbroker.handlers.support.config_resources import (
    ResourceError,
    ResourceType,
    handled_types,
    parse_broker_id,
    type_name,
)
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout import ConfigEntityNode

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS
ZK_TROUBLE_FAMILY = Family.CONFIGS
README_NOTE = "SET, DELETE, APPEND, SUBTRACT; BROKER_LOGGER levels (in memory, per broker)"


def _response(
    resource: AlterConfigsResource, code: int, message: str | None
) -> AlterConfigsResourceResponse:
    return resource_response(AlterConfigsResourceResponse, resource, code, message)


async def handle(
    ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    release = ctx.release
    if not preprocessed(release):
        for r in request.resources:
            if r.resource_type not in handled_types(release):
                rt = type_name(r.resource_type, release)
                return error_response(
                    request, ctx.version, error_codes.INVALID_REQUEST,
                    f"Unexpected resource type {rt}",
                )  # fmt: skip
    responses = await alter_authorized(
        ctx, request.resources, lambda r: _alter(ctx, r, request.validate_only), _response
    )
    return IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=responses)


async def _alter(ctx: RequestContext, resource: AlterConfigsResource, validate_only: bool) -> None:
    release = ctx.release
    ops = [Op(c.name, c.config_operation, c.value) for c in resource.configs]
    check_entries(ops, release, incremental=True)
    rt, name = resource.resource_type, resource.resource_name
    if rt == ResourceType.TOPIC:
        check_topic_name(name, release)
        current = await read_overrides(ctx, ConfigEntityNode.topic(name))
        props = apply_incremental(ops, current, topic_key_lookup(release))
        await alter_topic(ctx, name, props, validate_only)
    elif rt == ResourceType.BROKER:
        check_broker_resource_supported(release)
        broker_id = target_broker(ctx, name)
        if preprocessed(release):
            for o in ops:
                if o.op not in (0, 1, 2, 3):
                    raise ResourceError.invalid_request(f"Unknown operations type {o.op}")
        current = await current_broker_overrides(ctx, broker_id)
        props = apply_incremental(ops, current, broker_key_lookup(release))
        await alter_broker(ctx, name, broker_id, props, validate_only)
    elif rt == ResourceType.BROKER_LOGGER and rt in handled_types(release):
        _alter_loggers(ctx, name, ops, validate_only)
    else:
        raise ResourceError.invalid_request(f"Unknown resource type {rt}")


def _check_logger_resource_name(ctx: RequestContext, name: str) -> None:
    release = ctx.release
    own = ctx.broker.broker_id
    if not preprocessed(release):
        target_broker(ctx, name)  # 2.4-3.1: "" is accepted, as for BROKER
        return
    requested = parse_broker_id(name, node_wording=True)
    if requested != own:
        if release >= (3, 7):
            # RuntimeLoggerManager prints its own id twice (sic).
            message = f"Unexpected node id. Expected {own}, but received {own}"
        else:
            message = f"Unexpected broker id, expected {own}, but received {name}"
        raise ResourceError.invalid_request(message)


def _alter_loggers(ctx: RequestContext, name: str, ops: list[Op], validate_only: bool) -> None:
    _check_logger_resource_name(ctx, name)
    loggers = ctx.broker.broker_loggers
    for o in ops:
        try:
            loggers.check_op(o.op, o.name, o.value)
        except LoggerOpError as e:
            if e.config_exception:
                invalid = InvalidConfig(e.message, config_exception=True)
                raise config_failure(invalid, ResourceType.BROKER_LOGGER, name, ctx.release) from e
            raise ResourceError(e.code, e.message or None) from e
    if not validate_only:
        for o in ops:
            loggers.apply(o.op, o.name, o.value)


def error_response(
    request: IncrementalAlterConfigsRequest, version: int, code: int, message: str | None
) -> IncrementalAlterConfigsResponse:
    return IncrementalAlterConfigsResponse(
        responses=[_response(r, code, message) for r in request.resources]
    )
