"""AddPartitionsToTxn: partitions join a producer's transaction.

Kafka 3.9's ``KafkaApis.handleAddPartitionsToTxnRequest`` (docs/kafka-behaviour.md §17): v0-v3
carry one client transaction; v4+ (KIP-890 part 1) a batch from brokers, ``verify_only`` ones
only checked. An unknown partition fails its whole transaction (OPERATION_NOT_ATTEMPTED for the
rest); otherwise the coordinator's error goes to every partition (``fenced_error`` for old
versions and releases). Authorization first: CLUSTER_ACTION for v4+, else WRITE on the
transactional id, then WRITE per topic (internal topics always refused).

Not here: the coordinator's decisions.
"""

from __future__ import annotations

from zkbroker.broker.image.metadata_image import INTERNAL_TOPICS
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTopicResult,
    AddPartitionsToTxnTransaction,
)
from zkbroker.broker.rules.transactions.decisions import fenced_error
from zkbroker.broker.rules.transactions.state import TopicPartition
from zkbroker.broker.transactions.coordinator import unknown_partitions
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "partitions join the transaction; unknown partitions fail it "
    "(UNKNOWN_TOPIC_OR_PARTITION / OPERATION_NOT_ATTEMPTED); v4+ batched, `verify_only` "
    "(KIP-890, 3.6+)"
)


def _partitions(topics: list[AddPartitionsToTxnTopic]) -> list[TopicPartition]:
    seen: dict[TopicPartition, None] = {}
    for topic in topics:
        for partition in topic.partitions:
            seen[(topic.name, partition)] = None
    return list(seen)


def _topic_results(errors: dict[TopicPartition, int]) -> list[AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[AddPartitionsToTxnPartitionResult]] = {}
    for (topic, partition), code in errors.items():
        by_topic.setdefault(topic, []).append(
            AddPartitionsToTxnPartitionResult(partition_index=partition, partition_error_code=code)
        )
    return [
        AddPartitionsToTxnTopicResult(name=name, results_by_partition=results)
        for name, results in by_topic.items()
    ]


async def _transaction(
    ctx: RequestContext, txn: AddPartitionsToTxnTransaction
) -> dict[TopicPartition, int]:
    partitions = _partitions(txn.topics)
    if ctx.version < 4:
        refused = _client_refusals(ctx, txn.transactional_id, partitions)
        if refused is not None:
            return refused
    unknown = unknown_partitions(ctx.image, partitions)
    if unknown is not None:
        return unknown
    coordinator = ctx.broker.transaction_coordinator
    if txn.verify_only:
        return coordinator.verify(
            txn.transactional_id, txn.producer_id, txn.producer_epoch, partitions
        )
    error = await coordinator.add_partitions(
        txn.transactional_id, txn.producer_id, txn.producer_epoch, partitions
    )
    return dict.fromkeys(partitions, fenced_error(error, ctx.release, API_KEY, ctx.version))


def _client_refusals(
    ctx: RequestContext, transactional_id: str, partitions: list[TopicPartition]
) -> dict[TopicPartition, int] | None:
    """v0-3's checks: WRITE on the transactional id, then on each (non-internal) topic."""
    if not auth.authorize(ctx, auth.WRITE, auth.TRANSACTIONAL_ID, transactional_id):
        return dict.fromkeys(partitions, error_codes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    # One name per partition: Kafka's resourceRefCount counts partitions here.
    topics = [t for t, _ in partitions if t not in INTERNAL_TOPICS]
    writable = auth.filter_authorized(ctx, auth.WRITE, auth.TOPIC, topics)
    if all(t in writable for t, _ in partitions):
        return None
    known = [tp for tp in partitions if tp[0] in writable]
    others = unknown_partitions(ctx.image, known) or {}
    return {
        tp: error_codes.TOPIC_AUTHORIZATION_FAILED
        if tp[0] not in writable
        else others.get(tp, error_codes.OPERATION_NOT_ATTEMPTED)
        for tp in partitions
    }


async def handle(
    ctx: RequestContext, request: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse:
    if ctx.version < 4:
        txn = AddPartitionsToTxnTransaction(
            transactional_id=request.v3_and_below_transactional_id,
            producer_id=request.v3_and_below_producer_id,
            producer_epoch=request.v3_and_below_producer_epoch,
            topics=request.v3_and_below_topics,
        )
        return AddPartitionsToTxnResponse(
            results_by_topic_v3_and_below=_topic_results(await _transaction(ctx, txn))
        )
    # v4+ come from brokers (authorizeClusterOperation).
    if not auth.authorize_cluster(ctx, auth.CLUSTER_ACTION):
        return error_response(request, ctx.version, error_codes.CLUSTER_AUTHORIZATION_FAILED, None)
    # One after the other: a transaction's answer waits for the ISR only when it appended.
    results = []
    for txn in request.transactions:
        topic_results = _topic_results(await _transaction(ctx, txn))
        results.append(
            AddPartitionsToTxnResult(
                transactional_id=txn.transactional_id, topic_results=topic_results
            )
        )
    return AddPartitionsToTxnResponse(results_by_transaction=results)


def error_response(
    request: AddPartitionsToTxnRequest, version: int, code: int, message: str | None
) -> AddPartitionsToTxnResponse:
    """Kafka's getErrorResponse: v4+ a top-level code; below, the code on every partition."""
    if version >= 4:
        return AddPartitionsToTxnResponse(error_code=code)
    partitions = _partitions(request.v3_and_below_topics)
    return AddPartitionsToTxnResponse(
        results_by_topic_v3_and_below=_topic_results(dict.fromkeys(partitions, code))
    )
