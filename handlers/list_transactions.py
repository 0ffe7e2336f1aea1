"""ListTransactions (KIP-664; the duration filter KIP-994): the transactional ids this broker
coordinates.

Kafka 3.9's ``KafkaApis.handleListTransactionsRequest`` and
``TransactionStateManager.listTransactionStates`` (docs/kafka-behaviour.md §17):
COORDINATOR_NOT_AVAILABLE while the coordinator is inactive, COORDINATOR_LOAD_IN_PROGRESS while
any of its partitions loads; otherwise every id of the partitions it leads, but Dead ones,
filtered by producer id and by state (names Kafka does not know are echoed in
``unknown_state_filters`` and match nothing) and, v1, by ``duration_filter``: only
transactions running longer than that many milliseconds.

With an authorizer, ids the caller may not DESCRIBE are left out of the answer.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
    TransactionState,
)
from zkbroker.broker.rules.transactions.state import TxnState
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.LIST_TRANSACTIONS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "from 3.0: state and producer id filters, unknown states echoed; v1 (3.8) duration "
    "filter"
)

_BY_LABEL = {state.label: state for state in TxnState}


async def handle(ctx: RequestContext, request: ListTransactionsRequest) -> ListTransactionsResponse:
    states = {_BY_LABEL[name] for name in request.state_filters if name in _BY_LABEL}
    unknown = [name for name in request.state_filters if name not in _BY_LABEL]
    duration = request.duration_filter if ctx.version >= 1 else -1
    error, found = ctx.broker.transaction_coordinator.list_states(
        states, set(request.producer_id_filters), duration
    )
    if error != error_codes.NONE:
        return ListTransactionsResponse(error_code=error)
    if unknown and not states:
        found = []  # every filter named an unknown state: nothing can match
    if auth.has_authorizer(ctx):
        may = auth.checker(ctx)
        found = [m for m in found if may(auth.DESCRIBE, auth.TRANSACTIONAL_ID, m.transactional_id)]
    return ListTransactionsResponse(
        error_code=error_codes.NONE,
        unknown_state_filters=unknown,
        transaction_states=[
            TransactionState(
                transactional_id=m.transactional_id,
                producer_id=m.producer_id,
                transaction_state=m.state.label,
            )
            for m in found
        ],
    )


def error_response(
    request: ListTransactionsRequest, version: int, code: int, message: str | None
) -> ListTransactionsResponse:
    return ListTransactionsResponse(error_code=code)
