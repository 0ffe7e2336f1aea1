"""ApiVersions: which API keys and versions this broker serves.

Behaviour (docs/kafka-behaviour.md §9, KIP-35, KIP-511):
- The answer lists every key of the broker's `ApiTable` (the handler table narrowed to the
  emulated release), so it never advertises an API zkbroker cannot answer.
- v3+: the client's software name and version must match Kafka's pattern; otherwise
  INVALID_REQUEST with an empty key list. Valid ones are recorded on the connection by the
  request pipeline (Kafka's network layer), not here.
- v3+ tagged fields: finalized features and their epoch come from the `/feature` znode as
  the metadata image holds it (epoch -1 when feature versioning is off or the node is
  absent); supported features are empty, as every ZooKeeper-mode broker of 2.7-3.9 reports
  them (KafkaServer's BrokerFeatures has none; `metadata.version` is KRaft's). UpdateFeatures
  (zkbroker.handlers.update_features) is what changes `/feature`.
- A version above the broker's maximum is answered by the server itself in the v0 format
  with UNSUPPORTED_VERSION (the body is never parsed), see `zkbroker.broker.server.listener`.

Not emulated: throttling (throttle_time_ms is always 0) and KIP-866's zk_migration_ready
(always false: zkbroker is never migrating to KRaft).
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    FinalizedFeatureKey,
)
from zkbroker.broker.rules.client_software import valid_software
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.API_VERSIONS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "unsupported version → v0 answer with UNSUPPORTED_VERSION (KIP-511); v3+ client "
    "software name/version validated"
)


def api_keys(ctx: RequestContext) -> list[ApiVersion]:
    return [
        ApiVersion(api_key=key, min_version=low, max_version=high)
        for key, (low, high) in sorted(ctx.broker.api_table.ranges.items())
    ]


async def handle(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    # The connection's client software is recorded by the request pipeline (Kafka's network
    # layer), so a reused answer records it too.
    if not valid_software(
        ctx.version, request.client_software_name, request.client_software_version
    ):
        return ApiVersionsResponse(error_code=error_codes.INVALID_REQUEST)
    image = ctx.image
    return ApiVersionsResponse(
        error_code=error_codes.NONE,
        api_keys=api_keys(ctx),
        throttle_time_ms=0,
        finalized_features_epoch=image.finalized_features_epoch,
        finalized_features=[
            FinalizedFeatureKey(name=name, min_version_level=low, max_version_level=high)
            for name, (low, high) in sorted(image.finalized_features.items())
        ],
    )


def error_response(
    request: ApiVersionsRequest, version: int, code: int, message: str | None
) -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=code)
