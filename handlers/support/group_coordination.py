"""What the group handlers share: who coordinates a group, and the status check every group API
starts with (Kafka's ``GroupCoordinator.validateGroupStatus``), across zkbroker's two kinds of
groups (docs/kafka-behaviour.md §5, §16):

* classic groups of the group coordinator (``zkbroker.broker.groups.coordinator``), kept in
  ``__consumer_offsets``: the coordinator is the leader of the group's partition of that topic;
* groups of the ZooKeeper consumer registry (``/consumers``,
  ``zkbroker.broker.groups.zk_registry``).

Until ``__consumer_offsets`` exists (the first FindCoordinator creates it,
``zkbroker.handlers.find_coordinator``) the registry's rule applies to the requests that reach a
broker without a lookup (ListGroups, or a client that remembers a coordinator): the coordinator is a
hash over the live brokers, as zkbroker did before it had a coordinator. Once the topic
exists, every group, registry groups included, is coordinated by its offsets partition's
leader, as in Kafka.

Deliberately not here: the ZooKeeper reads, the coordinator's state, any API's answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from zkbroker.broker.groups.zk_registry import coordinator_id
from zkbroker.broker.protocol import error_codes
from zkbroker.handlers.context import RequestContext

if TYPE_CHECKING:
    from zkbroker.broker.groups.coordinator import GroupCoordinator

T = TypeVar("T")


def coordinator(ctx: RequestContext) -> GroupCoordinator:
    return ctx.broker.group_coordinator


def offsets_topic_ready(ctx: RequestContext) -> bool:
    """Whether groups are placed by ``__consumer_offsets`` (it exists in this broker's image)."""
    return coordinator(ctx).partition_count() is not None


def is_coordinator(ctx: RequestContext, group_id: str) -> bool:
    if offsets_topic_ready(ctx):
        gc = coordinator(ctx)
        partition = gc.partition_for(group_id)
        return partition is not None and gc.leader_of(partition)[0] == ctx.broker.broker_id
    return coordinator_id(group_id, ctx.image.brokers) == ctx.broker.broker_id


def group_status(ctx: RequestContext, group_id: str | None) -> int:
    """INVALID_GROUP_ID for a null id (an empty id is allowed, as Kafka allows it for the
    offset, describe and delete APIs); with ``__consumer_offsets``, the coordinator's status
    (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR); without it,
    NOT_COORDINATOR on a broker the registry's hash does not choose; else NONE."""
    if group_id is None:
        return error_codes.INVALID_GROUP_ID
    if offsets_topic_ready(ctx):
        return coordinator(ctx).status(group_id)
    if coordinator_id(group_id, ctx.image.brokers) != ctx.broker.broker_id:
        return error_codes.NOT_COORDINATOR
    return error_codes.NONE


def membership_status(ctx: RequestContext, group_id: str | None) -> int:
    """The check of JoinGroup, SyncGroup, Heartbeat and LeaveGroup: a null or empty id is
    INVALID_GROUP_ID; without ``__consumer_offsets`` COORDINATOR_NOT_AVAILABLE (the client
    looks the coordinator up again once the topic exists); else the coordinator's status."""
    if not group_id:
        return error_codes.INVALID_GROUP_ID
    if not offsets_topic_ready(ctx):
        return error_codes.COORDINATOR_NOT_AVAILABLE
    return coordinator(ctx).status(group_id)


def classic_group_known(ctx: RequestContext, group_id: str) -> bool:
    """Whether the coordinator holds the group (members or offsets), so it, not the
    registry, answers for it."""
    return offsets_topic_ready(ctx) and coordinator(ctx).machine.group(group_id) is not None


def partition_code_answers(
    topics: Iterable[Any],
    code_of: Callable[[str, int], int],
    topic_answer: Callable[..., T],
    partition_answer: Callable[..., Any],
) -> list[T]:
    """OffsetCommit's and TxnOffsetCommit's answer: each requested partition's code, by topic."""
    return [
        topic_answer(
            name=topic.name,
            partitions=[
                partition_answer(
                    partition_index=p.partition_index,
                    error_code=code_of(topic.name, p.partition_index),
                )
                for p in topic.partitions
            ],
        )
        for topic in topics
    ]
