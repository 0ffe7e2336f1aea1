"""AllocateProducerIds (KIP-730): the controller hands a broker a block of producer ids.

As a ZooKeeper-mode broker answers it (KafkaApis.handleAllocateProducerIdsRequest, 3.0-3.9):
CLUSTER_ACTION on the cluster first (else CLUSTER_AUTHORIZATION_FAILED); a broker that is not the
active controller answers NOT_CONTROLLER (also when the controller moves while the request waits);
the controller checks the broker id and epoch (BROKER_ID_NOT_REGISTERED, STALE_BROKER_EPOCH) and
claims the next block of `/latest_producer_id_block`
(`zkbroker.broker.controller.producer_id_blocks`), answering its start and length (1,000). The
block is really taken: no InitProducerId of any broker hands out its ids.
"""

from __future__ import annotations

from zkbroker.broker.controller.producer_id_blocks import allocate_producer_ids
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.allocate_producer_ids import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.controller_requests import on_controller
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.ALLOCATE_PRODUCER_IDS
ZK_TROUBLE_FAMILY = Family.CONTROLLER
README_NOTE = (
    "KIP-730, from 3.0: the controller claims the next block of `/latest_producer_id_block` "
    "for the broker (never handed out by InitProducerId); BROKER_ID_NOT_REGISTERED, "
    "STALE_BROKER_EPOCH, NOT_CONTROLLER"
)


async def handle(
    ctx: RequestContext, request: AllocateProducerIdsRequest
) -> AllocateProducerIdsResponse:
    broker_id, epoch = request.broker_id, request.broker_epoch
    return await on_controller(
        ctx,
        request,
        error_response,
        "AllocateProducerIds",
        lambda c: allocate_producer_ids(c, broker_id, epoch),
        lambda block: AllocateProducerIdsResponse(
            error_code=block.error_code,
            producer_id_start=block.producer_id_start,
            producer_id_len=block.producer_id_len,
        ),
    )


def error_response(
    request: AllocateProducerIdsRequest, version: int, code: int, message: str | None
) -> AllocateProducerIdsResponse:
    return AllocateProducerIdsResponse(error_code=code)
