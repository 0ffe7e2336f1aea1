"""ElectLeaders (key 43), versions 0-2 (KIP-460; docs/kafka-behaviour.md §6).

Kafka 2.8's flow (KafkaApis.handleElectReplicaLeader, ReplicaManager.electLeaders,
KafkaController.processReplicaLeaderElection):
1. a null partition list means every partition in this broker's metadata;
2. not the active controller: NOT_CONTROLLER (null message) for every partition, top-level 0;
3. on the controller, per partition: unknown -> UNKNOWN_TOPIC_OR_PARTITION; topic being
   deleted -> INVALID_TOPIC_EXCEPTION; PREFERRED with the preferred replica already leading,
   or UNCLEAN with a live leader -> ELECTION_NOT_NEEDED; an election that finds no leader ->
   PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE with the
   StateChangeFailedException message; success -> NONE once this broker's metadata shows the
   new leader (or REQUEST_TIMED_OUT after timeout_ms);
4. with a null partition list, ELECTION_NOT_NEEDED entries are left out of the answer.
v0 has no election type (PREFERRED) and no top-level error code.

Messages follow Java's ApiError: `new ApiError(Errors.X)` carries the code's default message,
successes and NOT_CONTROLLER carry null.

Not emulated: authorization (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from collections.abc import Mapping

from zkbroker.broker.controller import partitions as controller_partitions
from zkbroker.broker.controller.partitions import ElectionOutcome
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.zk_layout import ControllerMovedError

API_KEY = 43
MIN_VERSION = 0
MAX_VERSION = 2

TP = tuple[str, int]


def _requested(ctx: RequestContext, request: ElectLeadersRequest) -> list[TP]:
    if request.topic_partitions is None:
        return [
            (topic.name, p)
            for topic in ctx.image.visible_topics()
            for p in sorted(topic.partitions)
        ]
    return list(dict.fromkeys((t.topic, p) for t in request.topic_partitions for p in t.partitions))


def _response(results: Mapping[TP, tuple[int, str | None]], code: int = 0) -> ElectLeadersResponse:
    by_topic: dict[str, list[PartitionResult]] = {}
    for (topic, partition), (error, message) in results.items():
        by_topic.setdefault(topic, []).append(
            PartitionResult(partition_id=partition, error_code=error, error_message=message)
        )
    return ElectLeadersResponse(
        error_code=code,
        replica_election_results=[
            ReplicaElectionResult(topic=t, partition_result=r) for t, r in by_topic.items()
        ],
    )


def _answer(outcome: ElectionOutcome) -> tuple[int, str | None]:
    if outcome.error is None:
        return (error_codes.NONE, None)
    return (outcome.error.code, outcome.error.message)


async def handle(ctx: RequestContext, request: ElectLeadersRequest) -> ElectLeadersResponse:
    if not auth.authorize_cluster(ctx, auth.ALTER):  # KafkaApis: authorize(ALTER, CLUSTER)
        return error_response(request, ctx.version, error_codes.CLUSTER_AUTHORIZATION_FAILED, None)
    partitions = _requested(ctx, request)
    election_type = request.election_type if ctx.version >= 1 else controller_partitions.PREFERRED
    controller = ctx.broker.controller
    not_controller = {tp: (error_codes.NOT_CONTROLLER, None) for tp in partitions}
    if controller is None:
        return _response(not_controller)
    try:
        outcomes = await controller.call(
            "ReplicaLeaderElection",
            lambda c: controller_partitions.elect_leaders(c, partitions, election_type),
        )
    except ControllerMovedError:
        return _response(not_controller)
    expected = {tp: o.leader for tp, o in outcomes.items() if o.leader is not None}
    shown = not expected or await ctx.image.wait_for(
        lambda image: all(_leader(image, tp) == leader for tp, leader in expected.items()),
        max(request.timeout_ms, 0) / 1000,
    )
    results: dict[TP, tuple[int, str | None]] = {}
    for tp in partitions:
        outcome = outcomes[tp]
        if (
            request.topic_partitions is None
            and outcome.error is not None
            and (outcome.error.code == error_codes.ELECTION_NOT_NEEDED)
        ):
            continue
        if tp in expected and not shown and _leader(ctx.image, tp) != expected[tp]:
            results[tp] = (error_codes.REQUEST_TIMED_OUT, None)
        else:
            results[tp] = _answer(outcome)
    return _response(results)


def _leader(image: MetadataImage, tp: TP) -> int | None:
    topic = image.topics.get(tp[0])
    if topic is None:
        return None
    partition = topic.partitions.get(tp[1])
    return partition.leader if partition is not None else None


def error_response(
    request: ElectLeadersRequest, version: int, code: int, message: str | None
) -> ElectLeadersResponse:
    partitions = [(t.topic, p) for t in request.topic_partitions or () for p in t.partitions]
    return _response({tp: (code, message) for tp in partitions}, code if version >= 1 else 0)
