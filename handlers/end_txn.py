"""EndTxn: commit or abort a producer's transaction.

Kafka 3.9's ``KafkaApis.handleEndTxnRequest`` and ``TransactionCoordinator.endTransaction``
(TV1, what ZooKeeper mode runs; docs/kafka-behaviour.md §17): the coordinator appends
PrepareCommit/PrepareAbort to ``__transaction_state`` and answers; the markers and the
CompleteCommit/CompleteAbort record follow (``zkbroker.broker.transactions.coordinator``). A retried
EndTxn of a completed transaction answers NONE; one still writing its markers answers
CONCURRENT_TRANSACTIONS; the other outcome's state or Empty answers INVALID_TXN_STATE.
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2 and before 2.7 (``fenced_error``).

With an authorizer, WRITE on the transactional id comes first, else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

Deliberately not here: TV2's epoch bump on every EndTxn (KIP-890 part 2, v5; KRaft only).
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from zkbroker.broker.rules.transactions.decisions import fenced_error
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.END_TXN
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "PrepareCommit/PrepareAbort written, then markers and CompleteCommit/CompleteAbort; "
    "retries answer NONE, the other outcome INVALID_TXN_STATE"
)


async def handle(ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
    if not auth.authorize(ctx, auth.WRITE, auth.TRANSACTIONAL_ID, request.transactional_id):
        return EndTxnResponse(error_code=error_codes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    error = await ctx.broker.transaction_coordinator.end_txn(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        request.committed,
    )
    return EndTxnResponse(error_code=fenced_error(error, ctx.release, API_KEY, ctx.version))


def error_response(
    request: EndTxnRequest, version: int, code: int, message: str | None
) -> EndTxnResponse:
    return EndTxnResponse(error_code=code)
