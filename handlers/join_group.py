"""JoinGroup: a member joins a classic group.

Kafka 3.9's `KafkaApis.handleJoinGroupRequest` and `GroupCoordinator.handleJoinGroup`
(docs/kafka-behaviour.md §16, "JoinGroup", "Static membership"): READ on the group, the group id
and coordinator checks, the session-timeout bounds, then the coordinator's decision
(`zkbroker.broker.rules.groups.state_machine`); the answer waits for the rebalance to complete.

Not here: creating `__consumer_offsets` (the client's FindCoordinator did,
`zkbroker.handlers.find_coordinator`; without it the answer is COORDINATOR_NOT_AVAILABLE), and
the IBP < 2.3 refusal of group instance ids (no release that refuses them advertises v5+).
"""

from __future__ import annotations

import asyncio

from zkbroker.broker.asyncutil import now_ms
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from zkbroker.broker.rules.groups.classic_group import JoinResult
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import coordinator, membership_status
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.JOIN_GROUP
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "the classic group protocol (see *Consumer groups*): rebalances, member ids (KIP-394), "
    "static members (KIP-345), protocol votes, `group.initial.rebalance.delay.ms`, session "
    "and rebalance timeouts"
)

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
