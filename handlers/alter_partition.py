"""AlterPartition (AlterIsr before 3.2; KIP-497, leader recovery state KIP-704, topic ids and
INELIGIBLE_REPLICA KIP-841, ISR members with broker epochs KIP-903): a partition leader asks the
controller to change its ISR.

As a ZooKeeper-mode broker answers it (KafkaApis.handleAlterPartitionRequest /
handleAlterIsrRequest): CLUSTER_ACTION on the cluster first (else CLUSTER_AUTHORIZATION_FAILED,
`zkbroker.handlers.support.controller_requests`); a broker that is not the active controller
answers NOT_CONTROLLER with no topics (also when the controller moves while the request waits); the
controller checks the broker epoch and applies each partition's leader/ISR as its release's
KafkaController does (`zkbroker.broker.controller.alter_partition`,
`zkbroker.broker.rules.alter_partition`): the state znode really changes, Metadata shows the new
ISR, and a reassignment waiting for that ISR completes. Partitions come back grouped by topic in
the request's order (Kafka's come out of a hash map); topics unknown by id first.

Not emulated: the broker epochs of v3's ISR members are read but, as in Kafka's ZooKeeper
controller, not checked.
"""

from __future__ import annotations

from zkbroker.broker.controller.alter_partition import AlterOutcome, alter_partition
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.controller_requests import on_controller
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.ALTER_PARTITION
ZK_TROUBLE_FAMILY = Family.CONTROLLER
README_NOTE = (
    "AlterIsr from 2.7, AlterPartition from 3.2: the controller applies a leader's ISR to "
    "the state znode with its release's checks (FENCED_LEADER_EPOCH, "
    "INVALID_UPDATE_VERSION, NOT_CONTROLLER for newer epochs, "
    "INELIGIBLE_REPLICA/OPERATION_NOT_ATTEMPTED for dead ISR members from 3.3, leader "
    "recovery state from 3.2, UNKNOWN_TOPIC_ID by id from v2), STALE_BROKER_EPOCH; a "
    "reassignment waiting for that ISR completes"
)


async def handle(ctx: RequestContext, request: AlterPartitionRequest) -> AlterPartitionResponse:
    version = ctx.version
    return await on_controller(
        ctx,
        request,
        error_response,
        "AlterPartition",
        lambda c: alter_partition(c, request, version),
        _answer,
    )


def _answer(outcome: AlterOutcome) -> AlterPartitionResponse:
    topics = []
    for topic in outcome.topics:
        partitions = []
        for r in topic.partitions:
            answer = AlterPartitionResponsePartitionData(
                partition_index=r.partition, error_code=r.error_code
            )
            if r.state is not None:
                answer.leader_id = r.state.leader
                answer.leader_epoch = r.state.leader_epoch
                answer.isr = list(r.state.isr)
                answer.leader_recovery_state = r.state.leader_recovery_state
                answer.partition_epoch = r.partition_epoch
            partitions.append(answer)
        topics.append(
            AlterPartitionResponseTopicData(
                topic_name=topic.name, topic_id=topic.topic_id, partitions=partitions
            )
        )
    return AlterPartitionResponse(error_code=outcome.error_code, topics=topics)


def error_response(
    request: AlterPartitionRequest, version: int, code: int, message: str | None
) -> AlterPartitionResponse:
    return AlterPartitionResponse(error_code=code)
