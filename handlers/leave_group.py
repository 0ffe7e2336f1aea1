"""LeaveGroup: members leave a classic group (docs/kafka-behaviour.md §16).

Kafka 3.9's ``GroupCoordinator.handleLeaveGroup``: INVALID_GROUP_ID for a null/empty id,
COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR as the top-level
error; an unknown group answers UNKNOWN_MEMBER_ID per member. v3+ (KIP-345) leaves a batch of
members, each by member id or, with an empty member id, by group instance id (an administrator
removing a static member); a static member named with another member id is FENCED_INSTANCE_ID.
A leaving member triggers a rebalance of a Stable/CompletingRebalance group. v0-2 name one
member and answer its error at the top level (``LeaveGroupResponse``'s rule). The v5 reason
(KIP-800) is logged.

Without READ on the group (KafkaApis) the top-level error is GROUP_AUTHORIZATION_FAILED, whatever
the coordinator would have answered.
"""

from __future__ import annotations

from zkbroker.broker.asyncutil import now_ms
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberResponse,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import coordinator, membership_status
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.LEAVE_GROUP
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = "one member (v0\N{EN DASH}v2) or a batch with reasons (v3+, KIP-345/800)"


def _leaving(request: LeaveGroupRequest, version: int) -> list[tuple[str, str | None, str | None]]:
    if version < 3:
        return [(request.member_id, None, None)]
    return [
        (m.member_id, m.group_instance_id, m.reason if version >= 5 else None)
        for m in request.members
    ]


async def handle(ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
    version = ctx.version
    leaving = _leaving(request, version)
    code = membership_status(ctx, request.group_id)
    if not auth.authorize(ctx, auth.READ, auth.GROUP, request.group_id):  # KafkaApis
        code = error_codes.GROUP_AUTHORIZATION_FAILED
    if code != error_codes.NONE:
        return _answer(version, leaving, code, [])
    gc = coordinator(ctx)
    top, errors = gc.machine.leave(request.group_id, leaving, now_ms())
    gc.touch(request.group_id)
    return _answer(version, leaving, top, errors)


def _answer(
    version: int,
    leaving: list[tuple[str, str | None, str | None]],
    top: int,
    errors: list[int],
) -> LeaveGroupResponse:
    if version < 3:
        first = next((e for e in errors if e != error_codes.NONE), error_codes.NONE)
        return LeaveGroupResponse(error_code=top if top != error_codes.NONE else first)
    return LeaveGroupResponse(
        error_code=top,
        members=[
            MemberResponse(member_id=m, group_instance_id=i, error_code=e)
            for (m, i, _), e in zip(leaving, errors, strict=False)
        ],
    )


def error_response(
    request: LeaveGroupRequest, version: int, code: int, message: str | None
) -> LeaveGroupResponse:
    return _answer(version, _leaving(request, version), code, [])
