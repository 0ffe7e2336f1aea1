"""InitProducerId (key 22): producer ids for idempotent producers (KIP-98, KIP-360;
docs/kafka-behaviour.md §15).

Kafka 3.9's flow (`KafkaApis.handleInitProducerIdRequest`,
`TransactionCoordinator.handleInitProducerId`):

* no `transactional_id`: a new producer id from the broker's ZooKeeper-claimed block, epoch 0,
  whatever id and epoch the request names (an idempotent producer's epoch bump is a new id);
* an empty `transactional_id` -> INVALID_REQUEST;
* a `transactional_id`: the transaction coordinator answers. zkbroker has none yet (no
  `__transaction_state`, and FindCoordinator answers COORDINATOR_NOT_AVAILABLE for
  transactions), so no broker coordinates any transactional id: NOT_COORDINATOR, what a
  broker that does not own the id's partition answers.
* v3+ requests naming a producer id and epoch (KIP-360) are checked by the coordinator too,
  which only applies to transactional ids.

Deliberately not here: transactions (their own issue), authorization
(IDEMPOTENT_WRITE / TRANSACTIONAL_ID_AUTHORIZATION_FAILED), `transaction.max.timeout.ms`.
"""

from __future__ import annotations

from broker.protocol import error_codes
from broker.protocol.messages.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from handlers.context import RequestContext

API_KEY = 22
MIN_VERSION = 0
MAX_VERSION = 5


async def handle(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    if request.transactional_id is None:
        producer_id = await ctx.broker.next_producer_id()
        return InitProducerIdResponse(
            error_code=error_codes.NONE, producer_id=producer_id, producer_epoch=0
        )
    if request.transactional_id == "":
        return error_response(request, ctx.version, error_codes.INVALID_REQUEST, None)
    return error_response(request, ctx.version, error_codes.NOT_COORDINATOR, None)


def error_response(
    request: InitProducerIdRequest, version: int, code: int, message: str | None
) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
