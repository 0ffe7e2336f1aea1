"""DeleteGroups: remove groups from the ZooKeeper consumer registry.

Per group, as KafkaApis and Kafka's ``GroupCoordinator.handleDeleteGroups``: DELETE on the group
first (else GROUP_AUTHORIZATION_FAILED); NOT_COORDINATOR on a broker that is not the group's
coordinator; GROUP_ID_NOT_FOUND when ``/consumers/<g>`` does not exist; NON_EMPTY_GROUP while
``/consumers/<g>/ids`` has registered members; otherwise the whole ``/consumers/<g>`` subtree
(offsets, owners) is deleted and the answer is NONE. A group id named twice is answered once, as
Kafka deduplicates the request's ids.

Groups of the group coordinator (docs/kafka-behaviour.md §16) are deleted by it: an Empty group
gets tombstones for its offsets and its metadata in ``__consumer_offsets``; a live one is
NON_EMPTY_GROUP.

Not emulated: a consumer registering while the subtree is being deleted is not fenced: ZooKeeper
offers no lock the old consumers honoured.
"""

from __future__ import annotations

from zkbroker.broker.asyncutil import now_ms
from zkbroker.broker.groups.zk_registry import delete_group, load_groups
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import (
    classic_group_known,
    coordinator,
    group_status,
)
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.DELETE_GROUPS
ZK_TROUBLE_FAMILY = Family.GROUPS
README_NOTE = (
    "coordinator groups (tombstones) and `/consumers/<g>`; NON_EMPTY_GROUP with members, "
    "GROUP_ID_NOT_FOUND"
)


async def handle(ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    names = list(dict.fromkeys(request.groups_names))
    codes: dict[str, int] = {}
    candidates = []
    for group_id in names:
        code = group_status(ctx, group_id)
        if not auth.authorize(ctx, auth.DELETE, auth.GROUP, group_id):  # KafkaApis
            codes[group_id] = error_codes.GROUP_AUTHORIZATION_FAILED
        elif code != error_codes.NONE:
            codes[group_id] = code
        elif classic_group_known(ctx, group_id):
            gc = coordinator(ctx)
            codes.update(gc.machine.delete_groups([group_id], now_ms()))
        else:
            candidates.append(group_id)
    store = ctx.broker.store
    loaded = await load_groups(store, candidates)
    for group_id in candidates:
        group = loaded[group_id]
        if group is None:
            codes[group_id] = error_codes.GROUP_ID_NOT_FOUND
        elif group.members:
            codes[group_id] = error_codes.NON_EMPTY_GROUP
        else:
            await delete_group(store, group_id)
            codes[group_id] = error_codes.NONE
    return DeleteGroupsResponse(
        results=[DeletableGroupResult(group_id=g, error_code=codes[g]) for g in names]
    )


def error_response(
    request: DeleteGroupsRequest, version: int, code: int, message: str | None
) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(
        results=[DeletableGroupResult(group_id=g, error_code=code) for g in request.groups_names]
    )
