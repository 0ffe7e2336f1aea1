"""ControlledShutdown: a broker asks the controller to move its leaderships away before it stops
(v2's broker epoch: KIP-380). v0's request header has no client id
(zkbroker.broker.protocol.headers).

As a ZooKeeper-mode broker answers it (KafkaApis.handleControlledShutdownRequest, then
KafkaController.doControlledShutdown): CLUSTER_ACTION on the cluster first (else
CLUSTER_AUTHORIZATION_FAILED, `zkbroker.handlers.support.controller_requests`); a broker that is
not the active controller answers NOT_CONTROLLER (its own controller object is inactive:
ControllerMovedException), as does a controller that moves while the request waits; the controller
checks the broker epoch (STALE_BROKER_EPOCH) and liveness (BROKER_NOT_AVAILABLE), moves the
broker's leaderships to other ISR members and takes it out of the ISRs it follows
(`zkbroker.broker.controller.controlled_shutdown`), and answers the partitions it still leads. An
error carries no partitions (ControlledShutdownRequest.getErrorResponse).

Not emulated: the broker staying "shutting down" for later elections (see the controller module).
"""

from __future__ import annotations

from zkbroker.broker.controller.controlled_shutdown import controlled_shutdown
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.controlled_shutdown import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    RemainingPartition,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.controller_requests import on_controller
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.CONTROLLED_SHUTDOWN
ZK_TROUBLE_FAMILY = Family.CONTROLLER
README_NOTE = (
    "the controller moves the broker's leaderships to other in-sync replicas, takes it out "
    "of the ISRs it follows and answers the partitions it still leads; STALE_BROKER_EPOCH "
    "(v2+), BROKER_NOT_AVAILABLE, NOT_CONTROLLER; v0's header without client id; v1 only "
    "before 1.0"
)


async def handle(
    ctx: RequestContext, request: ControlledShutdownRequest
) -> ControlledShutdownResponse:
    broker_id, epoch = request.broker_id, request.broker_epoch
    return await on_controller(
        ctx,
        request,
        error_response,
        "ControlledShutdown",
        lambda c: controlled_shutdown(c, broker_id, epoch),
        lambda outcome: ControlledShutdownResponse(
            error_code=outcome.error_code,
            remaining_partitions=[
                RemainingPartition(topic_name=t, partition_index=p) for t, p in outcome.remaining
            ],
        ),
    )


def error_response(
    request: ControlledShutdownRequest, version: int, code: int, message: str | None
) -> ControlledShutdownResponse:
    return ControlledShutdownResponse(error_code=code)
