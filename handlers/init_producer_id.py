"""InitProducerId: producer ids for idempotent and transactional producers (KIP-98, KIP-360,
KIP-588; docs/kafka-behaviour.md §15 and §17).

Kafka 3.9's ``KafkaApis.handleInitProducerIdRequest``: a producer id without an epoch, or the
reverse (v3+), is INVALID_REQUEST; without a `transactional_id` a new id from the broker's
ZooKeeper-claimed block, epoch 0; with one, the transaction coordinator
(`zkbroker.broker.transactions.coordinator`) decides. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
below v4 and before 2.7 (`fenced_error`). Authorization first: WRITE on the transactional id,
else IDEMPOTENT_WRITE on the cluster or WRITE on some topic.

Not here: the coordinator's decisions.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from zkbroker.broker.rules.transactions.decisions import fenced_error
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.INIT_PRODUCER_ID
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "idempotent producers: ids from blocks claimed in `/latest_producer_id_block`; a "
    "`transactional_id`: the transaction coordinator (epoch bumps and fencing, KIP-360 "
    "producer id/epoch, INVALID_TRANSACTION_TIMEOUT, NOT_COORDINATOR, "
    "CONCURRENT_TRANSACTIONS)"
)
_NONE = -1


async def handle(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    denied = _denied(ctx, request.transactional_id) if auth.has_authorizer(ctx) else None
    if denied is not None:
        return error_response(request, ctx.version, denied, None)
    named = (request.producer_id != _NONE, request.producer_epoch != _NONE)
    if named[0] != named[1]:
        return error_response(request, ctx.version, error_codes.INVALID_REQUEST, None)
    if request.transactional_id is None:
        producer_id = await ctx.broker.next_producer_id()
        return InitProducerIdResponse(
            error_code=error_codes.NONE, producer_id=producer_id, producer_epoch=0
        )
    expected = (request.producer_id, request.producer_epoch) if named[0] else None
    answer = await ctx.broker.transaction_coordinator.init_producer_id(
        request.transactional_id, request.transaction_timeout_ms, expected
    )
    if answer.error != error_codes.NONE:
        code = fenced_error(answer.error, ctx.release, API_KEY, ctx.version)
        return error_response(request, ctx.version, code, None)
    return InitProducerIdResponse(
        error_code=error_codes.NONE,
        producer_id=answer.producer_id,
        producer_epoch=answer.producer_epoch,
    )


def _denied(ctx: RequestContext, transactional_id: str | None) -> int | None:
    if transactional_id is not None:
        if not auth.authorize(ctx, auth.WRITE, auth.TRANSACTIONAL_ID, transactional_id):
            return error_codes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return None
    # KafkaApis: the IDEMPOTENT_WRITE denial is not audited (logIfDenied = false).
    if auth.authorize_cluster(
        ctx, auth.IDEMPOTENT_WRITE, log_if_denied=False
    ) or auth.authorize_by_resource_type(ctx, auth.WRITE, auth.TOPIC):
        return None
    return error_codes.CLUSTER_AUTHORIZATION_FAILED


def error_response(
    request: InitProducerIdRequest, version: int, code: int, message: str | None
) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
