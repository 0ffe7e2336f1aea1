"""BrokerHeartbeat (KIP-631): extends a lease (`zkbroker.broker.controller.broker_leases`).

Served on every listener: CLUSTER_ACTION on the cluster first (else CLUSTER_AUTHORIZATION_FAILED,
`zkbroker.handlers.support.controller_requests`); then the active controller answers and any other
broker answers NOT_CONTROLLER. A broker with no lease, or a heartbeat with another broker epoch,
gets STALE_BROKER_EPOCH (Kafka's checkBrokerEpoch answers both that way). Otherwise the lease runs
for another broker.session.timeout.ms; WantFence maps to IsFenced, WantShutDown to ShouldShutDown
(and removes the registration, as the end of a controlled shutdown does). IsCaughtUp is always
true: there is no metadata log to catch up with.

Not emulated: metadata offsets, offline log directories.
"""

from __future__ import annotations

from zkbroker.broker.controller.broker_leases import HeartbeatReply
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.broker_heartbeat import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.controller_requests import on_controller
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.BROKER_HEARTBEAT
ZK_TROUBLE_FAMILY = Family.CONTROLLER
README_NOTE = "extends the lease; WantFence/WantShutDown → IsFenced/ShouldShutDown"


async def handle(ctx: RequestContext, request: BrokerHeartbeatRequest) -> BrokerHeartbeatResponse:
    return await on_controller(
        ctx,
        request,
        error_response,
        "BrokerHeartbeat",
        lambda c: c.leases.heartbeat(
            request.broker_id,
            request.broker_epoch,
            request.want_fence,
            request.want_shut_down,
        ),
        _answer,
    )


def _answer(reply: HeartbeatReply) -> BrokerHeartbeatResponse:
    if reply.error_code != error_codes.NONE:
        return BrokerHeartbeatResponse(error_code=reply.error_code)
    return BrokerHeartbeatResponse(
        error_code=error_codes.NONE,
        is_caught_up=True,
        is_fenced=reply.is_fenced,
        should_shut_down=reply.should_shut_down,
    )


def error_response(
    request: BrokerHeartbeatRequest, version: int, code: int, message: str | None
) -> BrokerHeartbeatResponse:
    return BrokerHeartbeatResponse(error_code=code)
