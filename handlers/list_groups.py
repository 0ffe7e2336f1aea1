"""ListGroups (key 16), versions 0-5: the consumer groups of the ZooKeeper registry.

As in Kafka, a broker lists the groups it coordinates
(``zkbroker.handlers.support.group_coordination``); admin clients ask every broker and merge, so
together the brokers list every group under ``/consumers``. Each is ``{group_id, protocol_type
"consumer", group_state (v4+), group_type "classic" (v5+)}``; the state is ``Stable`` while
``/consumers/<g>/ids`` has members and ``Empty`` otherwise (only offsets or owners left). Filters
follow 3.9's ``GroupCoordinator.handleListGroups``: empty means all; states compare
case-insensitively; a types filter keeps the groups only if it names ``classic`` (any case).

Groups of the group coordinator (docs/kafka-behaviour.md §16) are listed beside them, with
their own state and protocol type ("" for a group that only stores offsets); a group known to
both is listed once, as the coordinator's. While a partition this broker leads is loading the
answer is COORDINATOR_LOAD_IN_PROGRESS, as Kafka's.

Not emulated for registry groups: COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS
(the registry is always
"loaded"). With an authorizer: every group with DESCRIBE on the cluster, else only the groups
the principal may DESCRIBE.
"""

from __future__ import annotations

from zkbroker.broker.groups.zk_registry import PROTOCOL_TYPE, group_ids, group_state, member_counts
from zkbroker.broker.protocol import error_codes
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

API_KEY = 16
MIN_VERSION = 0
MAX_VERSION = 5

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
