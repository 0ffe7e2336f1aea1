"""AlterPartitionReassignments (KIP-455; docs/kafka-behaviour.md §7): start, replace or cancel
partition reassignments.

Kafka 2.8 (KafkaApis.handleAlterPartitionReassignmentsRequest,
KafkaController.processApiPartitionReassignment):
- ALTER on the cluster first, else a top-level CLUSTER_AUTHORIZATION_FAILED with Kafka's
  message (`zkbroker.handlers.support.controller_requests`);
- not the active controller: top-level NOT_CONTROLLER, no per-partition answers;
- per partition, on the controller: a target list is validated (empty, duplicates, negative
  ids, added replicas on brokers not alive -> INVALID_REPLICA_ASSIGNMENT with Kafka's
  messages); a null list cancels (NO_REASSIGNMENT_IN_PROGRESS when there is nothing to
  cancel); an unknown partition or a topic being deleted -> UNKNOWN_TOPIC_OR_PARTITION;
  otherwise NONE as soon as the reassignment has started (`timeout_ms` is ignored, as in
  ZooKeeper mode). Partitions named here leave `/admin/reassign_partitions` first.

Messages follow Java's ApiError (successes carry null). A partition named twice: the last entry
wins, answered once, as Kafka's map of requests gives.
"""

from __future__ import annotations

from zkbroker.broker.controller import reassignment as controller_reassignment
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)
from zkbroker.broker.rules.api_error import ApiError
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.controller_requests import on_controller
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.ALTER_PARTITION_REASSIGNMENTS
ZK_TROUBLE_FAMILY = Family.CONTROLLER
README_NOTE = (
    "start, replace or cancel (null replicas); Kafka's validation and messages; NONE once "
    "started"
)

TP = tuple[str, int]


async def handle(
    ctx: RequestContext, request: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    requested: dict[TP, tuple[int, ...] | None] = {}
    for topic in request.topics:
        for partition in topic.partitions:
            replicas = partition.replicas
            requested[(topic.name, partition.partition_index)] = (
                tuple(replicas) if replicas is not None else None
            )
    return await on_controller(
        ctx,
        request,
        error_response,
        "ApiPartitionReassignment",
        lambda c: controller_reassignment.alter_reassignments(c, requested),
        _response,
        operation=auth.ALTER,
    )


def _response(results: dict[TP, ApiError]) -> AlterPartitionReassignmentsResponse:
    by_topic: dict[str, list[ReassignablePartitionResponse]] = {}
    for (topic, partition), error in results.items():
        by_topic.setdefault(topic, []).append(
            ReassignablePartitionResponse(
                partition_index=partition, error_code=error.code, error_message=error.message
            )
        )
    return AlterPartitionReassignmentsResponse(
        error_message=None,
        responses=[ReassignableTopicResponse(name=t, partitions=p) for t, p in by_topic.items()],
    )


def error_response(
    request: AlterPartitionReassignmentsRequest, version: int, code: int, message: str | None
) -> AlterPartitionReassignmentsResponse:
    return AlterPartitionReassignmentsResponse(error_code=code, error_message=message)
