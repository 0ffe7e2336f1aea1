"""ListGroups: the groups this broker coordinates.

Kafka 3.9's `GroupCoordinator.handleListGroups` (docs/kafka-behaviour.md §5 and §16): the group
coordinator's groups and the ZooKeeper registry's (`/consumers`, `zkbroker.broker.groups
.zk_registry`) that this broker coordinates (`zkbroker.handlers.support.group_coordination`);
a group known to both is listed once, as the coordinator's. State and type filters as Kafka's.
With an authorizer: every group with DESCRIBE on the cluster, else those the principal may
DESCRIBE.

Not here for registry groups: COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE (the
registry is never loading).
"""

from __future__ import annotations

from zkbroker.broker.groups.zk_registry import PROTOCOL_TYPE, group_ids, group_state, member_counts
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.list_groups import (
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import (
    coordinator,
    is_coordinator,
    offsets_topic_ready,
)
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.LIST_GROUPS
ZK_TROUBLE_FAMILY = Family.GROUPS
README_NOTE = (
    "coordinator groups and the `/consumers` groups this broker coordinates; states and "
    "types filters"
)

CLASSIC = "classic"


async def handle(ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    version = ctx.version
    states = {s.lower() for s in request.states_filter or ()} if version >= 4 else set()
    types = {t.lower() for t in request.types_filter or ()} if version >= 5 else set()
    if types and CLASSIC not in types:
        return ListGroupsResponse(error_code=error_codes.NONE, groups=[])
    groups = []
    classic: set[str] = set()
    if offsets_topic_ready(ctx):
        gc = coordinator(ctx)
        if not gc.owned_loaded():
            return ListGroupsResponse(error_code=error_codes.COORDINATOR_LOAD_IN_PROGRESS)
        for held in list(gc.machine.groups.values()):
            classic.add(held.group_id)
            if states and held.state.value.lower() not in states:
                continue
            groups.append(
                ListedGroup(
                    group_id=held.group_id,
                    protocol_type=held.protocol_type or "",
                    group_state=held.state.value,
                    group_type=CLASSIC,
                )
            )
    store = ctx.broker.store
    mine = [g for g in await group_ids(store) if g not in classic and is_coordinator(ctx, g)]
    counts = await member_counts(store, mine)
    for group, members in counts.items():
        state = group_state(members)
        if states and state.lower() not in states:
            continue
        groups.append(
            ListedGroup(
                group_id=group, protocol_type=PROTOCOL_TYPE, group_state=state, group_type=CLASSIC
            )
        )
    # KafkaApis: neither check's denial is audited (logIfDenied = false).
    if not auth.authorize_cluster(ctx, auth.DESCRIBE, log_if_denied=False):
        # KafkaApis: without DESCRIBE on the cluster, only the groups it may DESCRIBE.
        may = auth.checker(ctx, log_if_denied=False)
        groups = [g for g in groups if may(auth.DESCRIBE, auth.GROUP, g.group_id)]
    return ListGroupsResponse(error_code=error_codes.NONE, groups=groups)


def error_response(
    request: ListGroupsRequest, version: int, code: int, message: str | None
) -> ListGroupsResponse:
    return ListGroupsResponse(error_code=code, groups=[])
