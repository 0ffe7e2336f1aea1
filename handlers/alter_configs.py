"""AlterConfigs: replaces a resource's whole override set.

Follows docs/kafka-behaviour.md §4.1 (2.8 `ZkAdminManager.alterConfigs`, 3.2+
`ConfigAdminManager.preprocess`), authorization included. Answered by any broker; the controller
is not involved. The per-resource work is shared with IncrementalAlterConfigs
(`zkbroker.handlers.support.config_alter`).

Not emulated: alter-config policies (`alter.config.policy.class.name`).
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.alter_configs import (
    AlterConfigsRequest,
    AlterConfigsResource,
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.config_alter import (
    SET,
    Op,
    alter_authorized,
    alter_broker,
    alter_topic,
    check_broker_resource_supported,
    check_entries,
    preprocessed,
    resource_response,
    target_broker,
)
from zkbroker.handlers.support.config_resources import (
    ResourceError,
    ResourceType,
    WholeRequestError,
    type_name,
)
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.ALTER_CONFIGS
ZK_TROUBLE_FAMILY = Family.CONFIGS
README_NOTE = "replaces a resource's whole override set; validate_only; Kafka's errors per release"


def _request_level_check(request: AlterConfigsRequest, release: tuple[int, ...]) -> None:
    for resource in request.resources:
        rt = resource.resource_type
        if rt == ResourceType.BROKER_LOGGER and release >= (2, 4):
            raise WholeRequestError(
                error_codes.INVALID_REQUEST,
                "AlterConfigs is deprecated and does not support the resource type BROKER_LOGGER",
            )
        if rt not in (ResourceType.TOPIC, ResourceType.BROKER):
            raise WholeRequestError(
                error_codes.INVALID_REQUEST, f"Unexpected resource type {type_name(rt, release)}"
            )


def _response(
    resource: AlterConfigsResource, code: int, message: str | None
) -> AlterConfigsResourceResponse:
    return resource_response(AlterConfigsResourceResponse, resource, code, message)


async def handle(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    release = ctx.release
    if not preprocessed(release):
        try:
            _request_level_check(request, release)
        except WholeRequestError as e:
            return error_response(request, ctx.version, e.code, e.message)
    responses = await alter_authorized(
        ctx, request.resources, lambda r: _alter(ctx, r, request.validate_only), _response
    )
    return AlterConfigsResponse(throttle_time_ms=0, responses=responses)


async def _alter(ctx: RequestContext, resource: AlterConfigsResource, validate_only: bool) -> None:
    release = ctx.release
    ops = [Op(c.name, SET, c.value) for c in resource.configs]
    check_entries(ops, release, incremental=False)
    rt, name = resource.resource_type, resource.resource_name
    if rt not in (ResourceType.TOPIC, ResourceType.BROKER):
        raise ResourceError.invalid_request(f"Unknown resource type {rt}")
    configs = {c.name: c.value for c in resource.configs if c.value is not None}
    if rt == ResourceType.TOPIC:
        await alter_topic(ctx, name, configs, validate_only)
        return
    check_broker_resource_supported(release)
    broker_id = target_broker(ctx, name)
    await alter_broker(ctx, name, broker_id, configs, validate_only)


def error_response(
    request: AlterConfigsRequest, version: int, code: int, message: str | None
) -> AlterConfigsResponse:
    return AlterConfigsResponse(responses=[_response(r, code, message) for r in request.resources])
