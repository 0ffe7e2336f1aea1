"""UpdateMetadata: the controller refreshing a broker's metadata cache (versions per release in
`zkbroker.broker.protocol.releases`).

As a ZooKeeper-mode broker answers it from any sender (KafkaApis.handleUpdateMetadataRequest,
ReplicaManager.maybeUpdateMetadataCache; docs/kafka-behaviour.md §20):
1. CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED;
2. a broker epoch (v5+) below this broker's registration: STALE_BROKER_EPOCH
   (a newer one before 2.6: UNKNOWN_SERVER_ERROR, KAFKA-9839);
3. a controller epoch below `/controller_epoch`: STALE_CONTROLLER_EPOCH (Kafka's
   ControllerMovedException);
4. otherwise NONE.

Not applied: zkbroker's metadata cache is its image, which the ZooKeeper watchers and the
controller keep (the controller's own UpdateMetadata, design.md). A request's content that
ZooKeeper does not hold is not taken in, so Metadata keeps answering what the controller
wrote; a real broker would answer the request's content until the next UpdateMetadata.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.update_metadata import (
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import control_requests as control
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.UPDATE_METADATA
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "the same epoch checks (v5+ broker epoch); NONE otherwise, the metadata image stays "
    "ZooKeeper's"
)


def error_response(
    request: UpdateMetadataRequest, version: int, code: int, message: str | None
) -> UpdateMetadataResponse:
    return UpdateMetadataResponse(error_code=code)


async def handle(ctx: RequestContext, request: UpdateMetadataRequest) -> UpdateMetadataResponse:
    refused = await control.refusal(
        ctx, "UpdateMetadata", request.controller_epoch, request.broker_epoch
    )
    return UpdateMetadataResponse(error_code=error_codes.NONE if refused is None else refused)
