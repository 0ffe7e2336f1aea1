"""Heartbeat: a member says it is alive (docs/kafka-behaviour.md §16).

READ on the group first (KafkaApis; else GROUP_AUTHORIZATION_FAILED), then Kafka 3.9's
``GroupCoordinator.handleHeartbeat``: INVALID_GROUP_ID for a null/empty id; while the coordinator
loads the group the answer is NONE ("respond blindly": the member will learn of the rebalance on
its next heartbeat); COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR; then UNKNOWN_MEMBER_ID,
FENCED_INSTANCE_ID (v3+), ILLEGAL_GENERATION; a member of a group preparing a rebalance gets
REBALANCE_IN_PROGRESS (its session is renewed all the same), an Empty group UNKNOWN_MEMBER_ID. Each
accepted heartbeat restarts the member's session timeout.
"""

from __future__ import annotations

from zkbroker.broker.asyncutil import now_ms
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import coordinator, membership_status
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.HEARTBEAT
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID as "
    "Kafka answers them"
)


async def handle(ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    if not auth.authorize(ctx, auth.READ, auth.GROUP, request.group_id):  # KafkaApis
        return HeartbeatResponse(error_code=error_codes.GROUP_AUTHORIZATION_FAILED)
    code = membership_status(ctx, request.group_id)
    if code == error_codes.COORDINATOR_LOAD_IN_PROGRESS:
        return HeartbeatResponse(error_code=error_codes.NONE)
    if code != error_codes.NONE:
        return HeartbeatResponse(error_code=code)
    gc = coordinator(ctx)
    code = gc.machine.heartbeat(
        request.group_id,
        request.member_id,
        request.group_instance_id if ctx.version >= 3 else None,
        request.generation_id,
        now_ms(),
    )
    gc.touch(request.group_id)
    return HeartbeatResponse(error_code=code)


def error_response(
    request: HeartbeatRequest, version: int, code: int, message: str | None
) -> HeartbeatResponse:
    return HeartbeatResponse(error_code=code)
