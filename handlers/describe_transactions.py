"""DescribeTransactions (KIP-664): the state of transactional ids.

Kafka 3.9's ``KafkaApis.handleDescribeTransactionsRequest`` and
``TransactionCoordinator.handleDescribeTransactions`` (docs/kafka-behaviour.md §17): each id is
answered by this broker's coordinator: COORDINATOR_NOT_AVAILABLE while it is inactive,
NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS when another broker coordinates it or its
partition is loading, TRANSACTIONAL_ID_NOT_FOUND for an id it does not know, else the state's
name ("Ongoing", "PrepareCommit", ...), timeout, start time, producer id and epoch and the
transaction's partitions by topic. Ids are answered in request order.

With an authorizer, an id without DESCRIBE is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and the
topics listed are only those the caller may DESCRIBE.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    TopicData,
    TransactionState,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "from 3.0 (KIP-664): state, timeout, start time, producer id/epoch, partitions; "
    "TRANSACTIONAL_ID_NOT_FOUND, NOT_COORDINATOR"
)


def _describe(ctx: RequestContext, transactional_id: str) -> TransactionState:
    if not auth.authorize(ctx, auth.DESCRIBE, auth.TRANSACTIONAL_ID, transactional_id):
        return TransactionState(
            error_code=error_codes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            transactional_id=transactional_id,
        )
    coordinator = ctx.broker.transaction_coordinator
    error, meta = coordinator.describe(transactional_id)
    if meta is None:
        return TransactionState(error_code=error, transactional_id=transactional_id)
    topics: dict[str, list[int]] = {}
    may_describe = auth.checker(ctx)
    for topic, partition in sorted(meta.partitions):
        if not may_describe(auth.DESCRIBE, auth.TOPIC, topic):
            continue
        topics.setdefault(topic, []).append(partition)
    return TransactionState(
        error_code=error_codes.NONE,
        transactional_id=transactional_id,
        transaction_state=meta.state.label,
        transaction_timeout_ms=meta.timeout_ms,
        transaction_start_time_ms=meta.start_timestamp,
        producer_id=meta.producer_id,
        producer_epoch=meta.producer_epoch,
        topics=[TopicData(topic=t, partitions=p) for t, p in topics.items()],
    )


async def handle(
    ctx: RequestContext, request: DescribeTransactionsRequest
) -> DescribeTransactionsResponse:
    return DescribeTransactionsResponse(
        transaction_states=[_describe(ctx, tid) for tid in request.transactional_ids]
    )


def error_response(
    request: DescribeTransactionsRequest, version: int, code: int, message: str | None
) -> DescribeTransactionsResponse:
    return DescribeTransactionsResponse(
        transaction_states=[
            TransactionState(error_code=code, transactional_id=tid)
            for tid in request.transactional_ids
        ]
    )
