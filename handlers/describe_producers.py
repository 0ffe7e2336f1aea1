"""DescribeProducers: a partition leader's active producers (KIP-664).

Kafka 3.9's ``KafkaApis.handleDescribeProducersRequest`` with ``ReplicaManager.
activeProducerState`` and ``UnifiedLog.activeProducers`` (docs/kafka-behaviour.md §17): per
requested partition, UNKNOWN_TOPIC_OR_PARTITION when the metadata lacks it,
NOT_LEADER_OR_FOLLOWER when this broker does not lead it, else each producer the partition's
producer state holds: id, epoch, last sequence, last timestamp, the coordinator epoch of its
last end marker (-1 before any) and the first offset of its open transaction (-1 when none).

With an authorizer, a topic the caller may not READ answers TOPIC_AUTHORIZATION_FAILED with
Kafka's message on each partition, before the metadata check.
"""

from __future__ import annotations

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    PartitionResponse,
    ProducerState,
    TopicResponse,
)
from zkbroker.broker.storage import PartitionLog
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.partitions import Located, locate, open_log
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.DESCRIBE_PRODUCERS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "from 2.8 (KIP-664): a leader's producers (epoch, last sequence, coordinator epoch, "
    "open transaction's first offset)"
)


def _producers(log: PartitionLog) -> list[ProducerState]:
    txns = log.transactions
    return [
        ProducerState(
            producer_id=pid,
            producer_epoch=entry.epoch,
            last_sequence=entry.last_seq,
            last_timestamp=entry.last_timestamp,
            coordinator_epoch=txns.coordinator_epochs.get(pid, -1),
            current_txn_start_offset=txns.ongoing.get(pid, -1),
        )
        for pid, entry in log.producers.entries.items()
    ]


async def handle(
    ctx: RequestContext, request: DescribeProducersRequest
) -> DescribeProducersResponse:
    pacer = Pacer()
    topics: list[TopicResponse] = []
    for topic in request.topics:
        partitions: list[PartitionResponse] = []
        if not auth.authorize(ctx, auth.READ, auth.TOPIC, topic.name):
            denied = error_codes.TOPIC_AUTHORIZATION_FAILED
            topics.append(
                error_response(
                    DescribeProducersRequest(topics=[topic]),
                    ctx.version,
                    denied,
                    error_codes.DEFAULT_MESSAGES[denied],
                ).topics[0]
            )
            continue
        for index in topic.partition_indexes:
            if pacer.due():
                await pacer.pause()
            located = locate(ctx.image, ctx.broker.broker_id, topic.name, index)
            if not isinstance(located, Located):
                partitions.append(PartitionResponse(partition_index=index, error_code=located))
                continue
            log, _config = await open_log(ctx, located)
            log.refresh_if_changed()  # other processes' appends
            partitions.append(
                PartitionResponse(
                    partition_index=index,
                    error_code=error_codes.NONE,
                    active_producers=_producers(log),
                )
            )
        topics.append(TopicResponse(name=topic.name, partitions=partitions))
    return DescribeProducersResponse(topics=topics)


def error_response(
    request: DescribeProducersRequest, version: int, code: int, message: str | None
) -> DescribeProducersResponse:
    return DescribeProducersResponse(
        topics=[
            TopicResponse(
                name=t.name,
                partitions=[
                    PartitionResponse(partition_index=i, error_code=code, error_message=message)
                    for i in t.partition_indexes
                ],
            )
            for t in request.topics
        ]
    )
