"""UpdateMetadata (key 6): the controller refreshing a broker's metadata cache. v0-v2 from
0.10.0 (v2: rack), v3 from 0.10.2 (listener names, KIP-103), v4 from 1.0 (offline replicas,
KIP-112), v5 from 2.2 (broker epoch, grouped by topic, KIP-380), v6 from 2.4 (flexible),
v7 from 2.8 (topic ids, KIP-516), v8 from 3.4 (KRaft controller flag, KIP-866).

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
from zkbroker.broker.protocol.messages.update_metadata import (
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import control_requests as control

API_KEY = 6
MIN_VERSION = 0
MAX_VERSION = 8


def error_response(
    request: UpdateMetadataRequest, version: int, code: int, message: str | None
) -> UpdateMetadataResponse:
    return UpdateMetadataResponse(error_code=code)


async def handle(ctx: RequestContext, request: UpdateMetadataRequest) -> UpdateMetadataResponse:
    refused = await control.refusal(
        ctx, "UpdateMetadata", request.controller_epoch, request.broker_epoch
    )
    return UpdateMetadataResponse(error_code=error_codes.NONE if refused is None else refused)
