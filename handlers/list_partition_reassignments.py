"""ListPartitionReassignments (KIP-455; docs/kafka-behaviour.md §7): the partitions being
reassigned.

Kafka 2.8 (KafkaController.processListPartitionReassignments): DESCRIBE on the cluster first, else
a top-level CLUSTER_AUTHORIZATION_FAILED with Kafka's message
(`zkbroker.handlers.support.controller_requests`); not the active controller -> top-level
NOT_CONTROLLER; otherwise the requested partitions (or, for a null list, every partition being
reassigned) that have adding or removing replicas, with `replicas` the full replica set (which
includes the adding ones). Unknown or settled partitions are left out silently; there is no
per-partition error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zkbroker.broker.controller import reassignment as controller_reassignment
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
)
from zkbroker.broker.rules.leader_election import ReplicaAssignment
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.controller_requests import on_controller
from zkbroker.handlers.support.zk_trouble import Family

if TYPE_CHECKING:
    from zkbroker.broker.controller.controller import Controller

API_KEY = ApiKey.LIST_PARTITION_REASSIGNMENTS
ZK_TROUBLE_FAMILY = Family.CONTROLLER
README_NOTE = "the partitions with adding/removing replicas, exactly as the topic znodes hold them"


async def handle(
    ctx: RequestContext, request: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    wanted = (
        None
        if request.topics is None
        else [(t.name, p) for t in request.topics for p in t.partition_indexes]
    )
    return await on_controller(
        ctx,
        request,
        error_response,
        "ListPartitionReassignments",
        lambda c: _ongoing(c, wanted),
        _response,
        operation=auth.DESCRIBE,
    )


def _response(
    ongoing: dict[tuple[str, int], ReplicaAssignment],
) -> ListPartitionReassignmentsResponse:
    by_topic: dict[str, list[OngoingPartitionReassignment]] = {}
    for (topic, partition), assignment in ongoing.items():
        by_topic.setdefault(topic, []).append(
            OngoingPartitionReassignment(
                partition_index=partition,
                replicas=list(assignment.replicas),
                adding_replicas=list(assignment.adding),
                removing_replicas=list(assignment.removing),
            )
        )
    return ListPartitionReassignmentsResponse(
        error_message=None,
        topics=[OngoingTopicReassignment(name=t, partitions=p) for t, p in by_topic.items()],
    )


async def _ongoing(
    controller: Controller, wanted: list[tuple[str, int]] | None
) -> dict[tuple[str, int], ReplicaAssignment]:
    return controller_reassignment.ongoing(controller, wanted)


def error_response(
    request: ListPartitionReassignmentsRequest, version: int, code: int, message: str | None
) -> ListPartitionReassignmentsResponse:
    return ListPartitionReassignmentsResponse(error_code=code, error_message=message)
