"""SyncGroup: the leader hands out the assignment, every member gets its own
(docs/kafka-behaviour.md §16).

Kafka 3.9's ``GroupCoordinator.handleSyncGroup``: INVALID_GROUP_ID for a null/empty id; while
the coordinator loads the group, REBALANCE_IN_PROGRESS (the state of the rebalance is lost, so
the member rejoins; old clients do not expect COORDINATOR_LOAD_IN_PROGRESS here); else
COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR; then UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID (v3+),
ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL for a protocol type/name (v5+, KIP-559) other
than the group's, REBALANCE_IN_PROGRESS while preparing a rebalance. In CompletingRebalance the
answer waits for the leader's SyncGroup; the leader's assignment (members it left out get an
empty one) is stored in ``__consumer_offsets`` and the group becomes Stable. v5 answers the
protocol type and name.

Without READ on the group (KafkaApis) the answer is GROUP_AUTHORIZATION_FAILED, whatever the
coordinator would have answered.
"""

from __future__ import annotations

import asyncio

from zkbroker.broker.asyncutil import now_ms
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from zkbroker.broker.rules.groups.classic_group import SyncResult
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import coordinator, membership_status
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.SYNC_GROUP
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = "the leader's assignments handed to every member; protocol type/name checks (v5)"


async def handle(ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
    version = ctx.version
    code = membership_status(ctx, request.group_id)
    if code == error_codes.COORDINATOR_LOAD_IN_PROGRESS:
        code = error_codes.REBALANCE_IN_PROGRESS
    if not auth.authorize(ctx, auth.READ, auth.GROUP, request.group_id):  # KafkaApis
        code = error_codes.GROUP_AUTHORIZATION_FAILED
    if code != error_codes.NONE:
        return _answer(SyncResult(code))
    gc = coordinator(ctx)
    future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()

    def done(result: SyncResult) -> None:
        if not future.done():
            future.set_result(result)

    gc.machine.sync(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.protocol_type if version >= 5 else None,
        request.protocol_name if version >= 5 else None,
        request.group_instance_id if version >= 3 else None,
        {a.member_id: a.assignment for a in request.assignments},
        now_ms(),
        done,
    )
    gc.touch(request.group_id)
    return _answer(await future)


def _answer(result: SyncResult) -> SyncGroupResponse:
    return SyncGroupResponse(
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )


def error_response(
    request: SyncGroupRequest, version: int, code: int, message: str | None
) -> SyncGroupResponse:
    return _answer(SyncResult(code))
