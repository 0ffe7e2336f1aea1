"""AlterConfigs (key 33), versions 0-2: replaces a resource's whole override set
(docs/kafka-behaviour.md §4.1; 2.8 `KafkaApis.handleAlterConfigsRequest`,
`ZkAdminManager.alterConfigs`; 3.2+ `ConfigAdminManager.preprocess`). Answered by any broker;
the controller is not involved.

Request level (before 3.2): a BROKER_LOGGER resource fails the whole request ("AlterConfigs
is deprecated and does not support the resource type BROKER_LOGGER"), as does any type other
than TOPIC/BROKER ("Unexpected resource type X"); a resource named twice is answered once,
with the configs of its last occurrence (Kafka builds a Map). From 3.2 both are per-resource
INVALID_REQUEST: "Unknown resource type N" and "Each resource must appear at most once.".

Per resource, in Kafka's order (`zkbroker.handlers.support.config_alter`): duplicate keys (3.2+) and
null values -> INVALID_REQUEST; TOPIC: empty name (3.3+), unknown topic ->
UNKNOWN_TOPIC_OR_PARTITION "The topic 'x' does not exist.", invalid configs -> INVALID_CONFIG
for unknown names, INVALID_REQUEST (2.8-3.2) / INVALID_CONFIG (3.3+) for bad values with
Kafka's "Invalid config value for resource ..." message; BROKER: `""` is the cluster default,
another id or a non-integer -> INVALID_REQUEST, read-only and per-broker-only keys refused.
Then, unless validate_only, the entity node gets exactly the sent entries (a key not resent is
gone) and a change notification, in one ZooKeeper multi.

With an authorizer: ALTER_CONFIGS on the cluster (brokers) or the topic, else
CLUSTER_/TOPIC_AUTHORIZATION_FAILED, after the other results. Not emulated: alter-config policies.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
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

API_KEY = 33
MIN_VERSION = 0
MAX_VERSION = 2


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
