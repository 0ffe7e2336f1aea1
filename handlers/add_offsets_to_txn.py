"""AddOffsetsToTxn: a consumer group's offsets join a transaction.

Kafka 3.9's ``KafkaApis.handleAddOffsetsToTxnRequest`` (docs/kafka-behaviour.md §16, §17):
the group's partition of ``__consumer_offsets`` (``abs(hashCode(group)) %
offsets.topic.num.partitions``) is added to the transaction through the same coordinator path
as AddPartitionsToTxn, so EndTxn writes the marker there too and the group coordinator
materializes (or drops) the offsets TxnOffsetCommit left pending. PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH below v2 and before 2.7 (``fenced_error``).

With an authorizer: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
then READ on the group (GROUP_AUTHORIZATION_FAILED), before the coordinator.

Deliberately not here: the pending offsets themselves (``zkbroker.handlers.txn_offset_commit``).
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)
from zkbroker.broker.rules.transactions.decisions import fenced_error, partition_for
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import coordinator as group_coordinator
from zkbroker.handlers.support.internal_topics import OFFSETS_TOPIC
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = "the group's `__consumer_offsets` partition joins the transaction"


def offsets_partition(ctx: RequestContext, group_id: str) -> int:
    """GroupCoordinator.partitionFor: by the topic's partitions, or the configured count while
    the topic does not exist yet (Kafka reads offsets.topic.num.partitions either way)."""
    placed = group_coordinator(ctx).partition_for(group_id)
    if placed is not None:
        return placed
    configured = ctx.broker.broker_config.configured("offsets.topic.num.partitions")
    return partition_for(group_id, int(configured or 50))


async def handle(ctx: RequestContext, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    if not auth.authorize(ctx, auth.WRITE, auth.TRANSACTIONAL_ID, request.transactional_id):
        return AddOffsetsToTxnResponse(error_code=error_codes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not auth.authorize(ctx, auth.READ, auth.GROUP, request.group_id):
        return AddOffsetsToTxnResponse(error_code=error_codes.GROUP_AUTHORIZATION_FAILED)
    error = await ctx.broker.transaction_coordinator.add_partitions(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        [(OFFSETS_TOPIC, offsets_partition(ctx, request.group_id))],
    )
    code = fenced_error(error, ctx.release, API_KEY, ctx.version)
    return AddOffsetsToTxnResponse(error_code=code)


def error_response(
    request: AddOffsetsToTxnRequest, version: int, code: int, message: str | None
) -> AddOffsetsToTxnResponse:
    return AddOffsetsToTxnResponse(error_code=code)
