"""JoinGroup (key 11), versions 0-9: a member joins a classic group (docs/kafka-behaviour.md §16).

Kafka 3.9's ``KafkaApis.handleJoinGroupRequest`` and ``GroupCoordinator.handleJoinGroup``:
a null or empty group id is INVALID_GROUP_ID; then COORDINATOR_NOT_AVAILABLE /
COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR; a session timeout outside
[group.min.session.timeout.ms, group.max.session.timeout.ms] is INVALID_SESSION_TIMEOUT; the
rest is the coordinator's (``zkbroker.broker.rules.groups.state_machine``): MEMBER_ID_REQUIRED
for a new
member from v4 (KIP-394), static members (v5+, KIP-345, FENCED_INSTANCE_ID), GROUP_MAX_SIZE_REACHED,
INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID. The answer waits for the rebalance to complete
(group.initial.rebalance.delay.ms for a group that was empty, else until every member rejoined
or the rebalance timeout). v0 has no rebalance timeout: the session timeout serves. v7+ answers
the protocol type (KIP-559), v9 skip_assignment (KIP-814); the reason (v8+, KIP-800) is logged.

JoinGroup does not create ``__consumer_offsets``: as in Kafka, the client's FindCoordinator
did (``zkbroker.handlers.find_coordinator``); without it the answer is COORDINATOR_NOT_AVAILABLE.

Not emulated: authorization, the IBP < 2.3 refusal of group instance ids (no such release
advertises v5+).
"""

from __future__ import annotations

import asyncio

from zkbroker.broker.asyncutil import now_ms
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from zkbroker.broker.rules.groups.classic_group import JoinResult
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import coordinator, membership_status

API_KEY = 11
MIN_VERSION = 0
MAX_VERSION = 9

_log = get_logger(__name__)


def client_host(ctx: RequestContext) -> str:
    """Kafka's ``clientHost``: the peer address with a leading slash."""
    peer = ctx.connection.peer
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return "/" + host


async def handle(ctx: RequestContext, request: JoinGroupRequest) -> JoinGroupResponse:
    version = ctx.version
    group_id = request.group_id
    code = membership_status(ctx, group_id)
    if not auth.authorize(ctx, auth.READ, auth.GROUP, group_id):  # KafkaApis: READ on the group
        code = error_codes.GROUP_AUTHORIZATION_FAILED
    if code != error_codes.NONE:
        return _answer(version, JoinResult(code, request.member_id))
    gc = coordinator(ctx)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[JoinResult] = loop.create_future()

    def done(result: JoinResult) -> None:
        if not future.done():
            future.set_result(result)

    if request.reason:
        _log.debug("group.join_reason", group=group_id, reason=request.reason)
    session = request.session_timeout_ms
    gc.machine.join(
        group_id,
        request.member_id,
        request.group_instance_id if version >= 5 else None,
        require_known_member_id=version >= 4,
        support_skip_assignment=version >= 9,
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx),
        rebalance_timeout_ms=request.rebalance_timeout_ms if version >= 1 else session,
        session_timeout_ms=session,
        protocol_type=request.protocol_type,
        protocols=[(p.name, p.metadata) for p in request.protocols],
        reason=request.reason,
        now=now_ms(),
        callback=done,
    )
    gc.touch(group_id)
    return _answer(version, await future)


def _answer(version: int, result: JoinResult) -> JoinGroupResponse:
    response = JoinGroupResponse(
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        # Null only from v7 (KIP-559); older versions say "".
        protocol_name=result.protocol_name
        if result.protocol_name is not None or version >= 7
        else "",
        leader=result.leader_id,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[
            JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=md)
            for m, i, md in result.members
        ],
    )
    return response


def error_response(
    request: JoinGroupRequest, version: int, code: int, message: str | None
) -> JoinGroupResponse:
    return _answer(version, JoinResult(code, request.member_id))
