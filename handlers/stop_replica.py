"""StopReplica: the controller telling a broker to stop replicas (and maybe delete them).

Answered as a ZooKeeper-mode broker answers it from any sender, checks in Kafka's order
(docs/kafka-behaviour.md §20; versions per release in `zkbroker.broker.protocol.releases`).
With no replica fetcher, stopping without deletion changes nothing. A zkbroker partition log is
every replica's copy at once (docs/design.md, "The data plane"), so deletion removes it only
when Kafka would delete every copy: the topic is gone from, or being deleted in, ZooKeeper;
otherwise the log stays and the answer is still NONE.
"""

from __future__ import annotations

from dataclasses import dataclass

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.stop_replica import (
    StopReplicaPartitionError,
    StopReplicaRequest,
    StopReplicaResponse,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import control_requests as control
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.STOP_REPLICA
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "the same epoch checks (v1+ broker epoch), FENCED_LEADER_EPOCH (v3+); with delete, the "
    "log is deleted only where every copy would go (topic gone or being deleted in "
    "ZooKeeper)"
)


@dataclass(frozen=True)
class _Stop:
    topic: str
    partition: int
    leader_epoch: int
    delete: bool


def _stops(request: StopReplicaRequest, version: int) -> list[_Stop]:
    if version == 0:
        return [
            _Stop(p.topic_name, p.partition_index, control.NO_EPOCH, request.delete_partitions)
            for p in request.ungrouped_partitions
        ]
    if version < 3:
        return [
            _Stop(t.name, p, control.NO_EPOCH, request.delete_partitions)
            for t in request.topics
            for p in t.partition_indexes
        ]
    return [
        _Stop(t.topic_name, p.partition_index, p.leader_epoch, p.delete_partition)
        for t in request.topic_states
        for p in t.partition_states
    ]


def error_response(
    request: StopReplicaRequest, version: int, code: int, message: str | None
) -> StopReplicaResponse:
    """StopReplicaRequest.getErrorResponse: the error at the top and on every partition."""
    return StopReplicaResponse(
        error_code=code,
        partition_errors=[
            StopReplicaPartitionError(
                topic_name=s.topic, partition_index=s.partition, error_code=code
            )
            for s in _stops(request, version)
        ],
    )


async def handle(ctx: RequestContext, request: StopReplicaRequest) -> StopReplicaResponse:
    version = ctx.version
    refused = await control.refusal(
        ctx, "StopReplica", request.controller_epoch, request.broker_epoch
    )
    if refused in (error_codes.STALE_BROKER_EPOCH, error_codes.STALE_CONTROLLER_EPOCH):
        return StopReplicaResponse(error_code=refused)  # no partitions, as Kafka's
    if refused is not None:
        return error_response(request, version, refused, None)
    answers = []
    doomed: set[str] = set()
    for s in _stops(request, version):
        code = _decide(ctx, s)
        if code == error_codes.NONE and s.delete and _every_copy_goes(ctx, s.topic):
            doomed.add(s.topic)
        answers.append(
            StopReplicaPartitionError(
                topic_name=s.topic, partition_index=s.partition, error_code=code
            )
        )
    for topic in sorted(doomed):
        ctx.broker.logs.delete_topic(topic)
    return StopReplicaResponse(error_code=error_codes.NONE, partition_errors=answers)


def _decide(ctx: RequestContext, s: _Stop) -> int:
    if ctx.broker.logs.get(s.topic, s.partition) is None:
        return error_codes.NONE  # HostedPartition.None
    topic = ctx.broker.image.topics.get(s.topic)
    held = topic.partitions.get(s.partition) if topic is not None else None
    current = held.leader_epoch if held is not None else -1
    if s.leader_epoch in (control.NO_EPOCH, control.EPOCH_DURING_DELETE):
        return error_codes.NONE
    if s.leader_epoch >= current:
        return error_codes.NONE
    return error_codes.FENCED_LEADER_EPOCH


def _every_copy_goes(ctx: RequestContext, topic: str) -> bool:
    image = ctx.broker.image
    return topic not in image.topics or topic in image.topics_being_deleted
