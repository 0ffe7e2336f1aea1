"""What the group handlers share: is this broker a group's coordinator, and the per-group
status check every group API starts with (Kafka's ``GroupCoordinator.validateGroupStatus``).

The coordinator of a group is ``broker.groups.zk_registry.coordinator_id`` over the live brokers
of this broker's metadata image, so every broker answers the same (FindCoordinator points
clients there; the other group APIs answer NOT_COORDINATOR elsewhere).

Deliberately not here: the ZooKeeper reads (``broker.groups.zk_registry``) and any API's answer.
"""

from __future__ import annotations

from broker.groups.zk_registry import coordinator_id
from broker.protocol import error_codes
from handlers.context import RequestContext


def is_coordinator(ctx: RequestContext, group_id: str) -> bool:
    return coordinator_id(group_id, ctx.image.brokers) == ctx.broker.broker_id


def group_status(ctx: RequestContext, group_id: str | None) -> int:
    """INVALID_GROUP_ID for a null id (an empty id is allowed, as Kafka allows it for the
    offset, describe and delete APIs), NOT_COORDINATOR on a broker that is not the group's
    coordinator, else NONE."""
    if group_id is None:
        return error_codes.INVALID_GROUP_ID
    if not is_coordinator(ctx, group_id):
        return error_codes.NOT_COORDINATOR
    return error_codes.NONE
