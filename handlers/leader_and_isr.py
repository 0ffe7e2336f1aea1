"""LeaderAndIsr: the controller telling a broker which partitions it leads or follows.

Answered as a ZooKeeper-mode broker answers it from any sender, checks in Kafka's order
(docs/kafka-behaviour.md §20; versions per release in `zkbroker.broker.protocol.releases`).
Applying it opens or creates the partition's log with the request's topic id; leadership stays
what the controller's state znodes say, and the broker's last-seen controller epoch is not
raised (`zkbroker.handlers.support.control_requests`).
"""

from __future__ import annotations

import uuid

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.leader_and_isr import (
    LeaderAndIsrPartitionError,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrTopicError,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import control_requests as control
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.LEADER_AND_ISR
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "as a ZooKeeper-mode broker answers any sender (docs/kafka-behaviour.md §20): "
    "CLUSTER_AUTHORIZATION_FAILED, STALE_BROKER_EPOCH (v2+), STALE_CONTROLLER_EPOCH against "
    "`/controller_epoch`; per partition INCONSISTENT_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, "
    "STALE_CONTROLLER_EPOCH for a leader epoch not newer than the controller's; a newer one "
    "opens the partition's log (leadership stays ZooKeeper's); v7 from 3.4"
)

_ZERO_UUID = uuid.UUID(int=0)


def _states(
    request: LeaderAndIsrRequest, version: int
) -> list[tuple[uuid.UUID | None, LeaderAndIsrPartitionState]]:
    if version < 2:
        return [(None, s) for s in request.ungrouped_partition_states]
    out = []
    for topic in request.topic_states:
        topic_id = topic.topic_id if version >= 5 and topic.topic_id != _ZERO_UUID else None
        for s in topic.partition_states:
            s.topic_name = topic.topic_name
            out.append((topic_id, s))
    return out


def _respond(
    request: LeaderAndIsrRequest,
    version: int,
    code: int,
    results: list[tuple[uuid.UUID | None, LeaderAndIsrPartitionState, int]],
) -> LeaderAndIsrResponse:
    if version < 5:
        return LeaderAndIsrResponse(
            error_code=code,
            partition_errors=[
                LeaderAndIsrPartitionError(
                    topic_name=s.topic_name, partition_index=s.partition_index, error_code=e
                )
                for _, s, e in results
            ],
        )
    topics: dict[str, LeaderAndIsrTopicError] = {}
    ids = {t.topic_name: t.topic_id for t in request.topic_states}
    for _, s, e in results:
        topic = topics.get(s.topic_name)
        if topic is None:
            topic = topics[s.topic_name] = LeaderAndIsrTopicError(
                topic_id=ids.get(s.topic_name, _ZERO_UUID)
            )
        topic.partition_errors.append(
            LeaderAndIsrPartitionError(partition_index=s.partition_index, error_code=e)
        )
    return LeaderAndIsrResponse(error_code=code, topics=list(topics.values()))


def error_response(
    request: LeaderAndIsrRequest, version: int, code: int, message: str | None
) -> LeaderAndIsrResponse:
    """LeaderAndIsrRequest.getErrorResponse: the error at the top and on every partition."""
    return _respond(request, version, code, [(t, s, code) for t, s in _states(request, version)])


async def handle(ctx: RequestContext, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
    version = ctx.version
    refused = await control.refusal(
        ctx, "LeaderAndIsr", request.controller_epoch, request.broker_epoch
    )
    if refused is not None:
        return error_response(request, version, refused, None)
    results = [
        (topic_id, s, _decide(ctx, topic_id, s)) for topic_id, s in _states(request, version)
    ]
    return _respond(request, version, error_codes.NONE, results)


def _decide(ctx: RequestContext, topic_id: uuid.UUID | None, s: LeaderAndIsrPartitionState) -> int:
    """One partition, as ReplicaManager.becomeLeaderOrFollower decides it."""
    logs = ctx.broker.logs
    log = logs.get(s.topic_name, s.partition_index)
    topic = ctx.broker.image.topics.get(s.topic_name)
    held = topic.partitions.get(s.partition_index) if topic is not None else None
    # Partition.getLeaderEpoch: -1 for a partition the broker does not host yet.
    current = held.leader_epoch if held is not None and log is not None else -1
    log_id = log.topic_id if log is not None else None
    if topic_id is not None and log_id is not None and topic_id != log_id:
        return error_codes.INCONSISTENT_TOPIC_ID
    if s.leader_epoch > current:
        if ctx.broker.broker_id not in s.replicas:
            return error_codes.UNKNOWN_TOPIC_OR_PARTITION
        logs.get_or_create(s.topic_name, s.partition_index, topic_id)
        return error_codes.NONE
    if s.leader_epoch == current and topic_id is not None and log is not None and log_id is None:
        log.topic_id = topic_id
        return error_codes.NONE
    return error_codes.STALE_CONTROLLER_EPOCH
