"""Which partitions a data-plane request may touch on this broker, with Kafka's error codes.

Follows `ReplicaManager.getPartitionOrError` and `Partition.localLogWithEpochOrThrow`
(docs/kafka-behaviour.md §15): a partition this broker's metadata does not know is
UNKNOWN_TOPIC_OR_PARTITION, and so is every partition of a topic being deleted (the
controller's UpdateMetadata with leader -2 took it out of every broker's metadata cache, and
StopReplica with delete out of its replicas); one it knows but does not host, or hosts without
leading it when the request needs the leader, is NOT_LEADER_OR_FOLLOWER. A request that names
the leader epoch it expects (KIP-320) gets FENCED_LEADER_EPOCH when its epoch is older than the
partition's, UNKNOWN_LEADER_EPOCH when newer.

"Hosting" a partition means being in its replica set: the broker's replica manager
(`zkbroker.broker.replication`) keeps a log of it, as leader or follower.

Also here: the KIP-951 leader hints (Produce v10+, Fetch v16+) sent with
NOT_LEADER_OR_FOLLOWER, and opening a partition's log with its topic's current segment
settings.

Deliberately not here: what each API does with the partition, and authorization.
"""

from __future__ import annotations

from dataclasses import dataclass

from zkbroker.broker.image.metadata_image import MetadataImage, PartitionImage, TopicImage
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.storage import PartitionLog
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.log_config import TopicLogConfig, effective_log_config

NO_EPOCH = -1


@dataclass(frozen=True, slots=True)
class Located:
    topic: TopicImage
    partition: PartitionImage


def locate(
    image: MetadataImage,
    broker_id: int,
    topic: str,
    partition: int,
    *,
    leader_only: bool = True,
    current_leader_epoch: int = NO_EPOCH,
) -> Located | int:
    """The partition, or the error code Kafka answers for it on this broker."""
    found = image.topics.get(topic)
    state = None if found is None else found.partitions.get(partition)
    if found is None or state is None or topic in image.topics_being_deleted:
        return error_codes.UNKNOWN_TOPIC_OR_PARTITION
    if broker_id not in state.replicas:
        return error_codes.NOT_LEADER_OR_FOLLOWER
    if current_leader_epoch != NO_EPOCH:
        if current_leader_epoch < state.leader_epoch:
            return error_codes.FENCED_LEADER_EPOCH
        if current_leader_epoch > state.leader_epoch:
            return error_codes.UNKNOWN_LEADER_EPOCH
    if leader_only and state.leader != broker_id:
        return error_codes.NOT_LEADER_OR_FOLLOWER
    return Located(found, state)


def leader_hint(image: MetadataImage, topic: str, partition: int) -> tuple[int, int]:
    """(leader id, leader epoch) as this broker's metadata knows them, (-1, -1) if unknown."""
    found = image.topics.get(topic)
    state = None if found is None else found.partitions.get(partition)
    if state is None:
        return (-1, -1)
    return (state.leader, state.leader_epoch)


async def log_config(ctx: RequestContext, topic: str) -> TopicLogConfig:
    overrides = await ctx.image.topic_configs.overrides(topic)
    return effective_log_config(topic, overrides, ctx.broker.broker_config, ctx.release)


async def open_log(ctx: RequestContext, located: Located) -> tuple[PartitionLog, TopicLogConfig]:
    """The partition's log (created empty on first use) and its topic's log config."""
    config = await log_config(ctx, located.topic.name)
    log = ctx.broker.logs.get_or_create(
        located.topic.name, located.partition.partition, located.topic.topic_id
    )
    log.segment_bytes = config.segment_bytes
    log.segment_ms = config.segment_ms
    return log, config
