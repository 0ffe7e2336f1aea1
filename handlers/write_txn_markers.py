"""WriteTxnMarkers: a transaction coordinator's COMMIT/ABORT markers.

Kafka 3.9's ``KafkaApis.handleWriteTxnMarkersRequest`` (docs/kafka-behaviour.md §17): for each
marker, in request order, each named partition gets its own error code from
``zkbroker.broker.transactions.markers.apply_marker``: UNKNOWN_TOPIC_OR_PARTITION for a partition
this broker does not host, NOT_LEADER_OR_FOLLOWER where it is not the leader, INVALID_PRODUCER_EPOCH
or TRANSACTION_COORDINATOR_FENCED from the log's checks, NONE once the marker is appended (and,
for ``__consumer_offsets``, the group coordinator's pending transactional offsets completed).
The answer lists the markers by producer id and their partitions by topic, as Kafka's does.

With an authorizer the sender needs CLUSTER_ACTION on the cluster (``authorizeClusterOperation``),
else every partition is CLUSTER_AUTHORIZATION_FAILED (``getErrorResponse``); 3.9 first accepts
ALTER on the cluster instead (its denial not audited).

Deliberately not here: the message-format check (every log here is magic 2).
"""

from __future__ import annotations

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.write_txn_markers import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from zkbroker.broker.transactions.markers import apply_marker
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.WRITE_TXN_MARKERS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "a coordinator's COMMIT/ABORT markers appended by the leader; per partition "
    "UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH, "
    "TRANSACTION_COORDINATOR_FENCED; completes pending transactional offsets"
)


async def handle(ctx: RequestContext, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    altering = ctx.release >= (3, 9) and auth.authorize_cluster(
        ctx, auth.ALTER, log_if_denied=False
    )
    if not altering and not auth.authorize_cluster(ctx, auth.CLUSTER_ACTION):
        return error_response(request, ctx.version, error_codes.CLUSTER_AUTHORIZATION_FAILED, None)
    pacer = Pacer()
    results: list[WritableTxnMarkerResult] = []
    for marker in request.markers:
        topics: list[WritableTxnMarkerTopicResult] = []
        for topic in marker.topics:
            partitions: list[WritableTxnMarkerPartitionResult] = []
            for index in topic.partition_indexes:
                if pacer.due():
                    await pacer.pause()
                code = await apply_marker(
                    ctx.broker,
                    topic.name,
                    index,
                    producer_id=marker.producer_id,
                    producer_epoch=marker.producer_epoch,
                    coordinator_epoch=marker.coordinator_epoch,
                    commit=marker.transaction_result,
                )
                partitions.append(
                    WritableTxnMarkerPartitionResult(partition_index=index, error_code=code)
                )
            topics.append(WritableTxnMarkerTopicResult(name=topic.name, partitions=partitions))
        results.append(WritableTxnMarkerResult(producer_id=marker.producer_id, topics=topics))
    return WriteTxnMarkersResponse(markers=results)


def error_response(
    request: WriteTxnMarkersRequest, version: int, code: int, message: str | None
) -> WriteTxnMarkersResponse:
    return WriteTxnMarkersResponse(
        markers=[
            WritableTxnMarkerResult(
                producer_id=marker.producer_id,
                topics=[
                    WritableTxnMarkerTopicResult(
                        name=topic.name,
                        partitions=[
                            WritableTxnMarkerPartitionResult(partition_index=i, error_code=code)
                            for i in topic.partition_indexes
                        ],
                    )
                    for topic in marker.topics
                ],
            )
            for marker in request.markers
        ]
    )
