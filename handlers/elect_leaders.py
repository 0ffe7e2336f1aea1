"""ElectLeaders: preferred or unclean leader election (KIP-460).

Follows Kafka 2.8's `KafkaApis.handleElectReplicaLeader`, `ReplicaManager.electLeaders` and
`KafkaController.processReplicaLeaderElection` (docs/kafka-behaviour.md §6): ALTER on the
cluster, NOT_CONTROLLER on a broker that is not the controller, the per-partition checks, and an
answer once this broker's metadata shows the new leader (else REQUEST_TIMED_OUT). Messages
follow Java's `ApiError`: a code's default message, null for successes and NOT_CONTROLLER.

Not here: the election rules (`zkbroker.broker.rules.leader_election`) and the state writes
(`zkbroker.broker.controller.partitions`).
"""

from __future__ import annotations

from collections.abc import Mapping

from zkbroker.broker.controller import partitions as controller_partitions
from zkbroker.broker.controller.partitions import ElectionOutcome
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout import ControllerMovedError

API_KEY = ApiKey.ELECT_LEADERS
ZK_TROUBLE_FAMILY = Family.CONTROLLER
README_NOTE = (
    "PREFERRED and UNCLEAN (v1+); null = every partition; Kafka's per-partition results and "
    "messages"
)

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
