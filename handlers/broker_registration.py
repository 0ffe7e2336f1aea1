"""BrokerRegistration (KIP-631), as a ZooKeeper lease.

Served on every listener: CLUSTER_ACTION on the cluster first (else CLUSTER_AUTHORIZATION_FAILED,
`zkbroker.handlers.support.controller_requests`); then the active controller registers the broker
(`zkbroker.broker.controller.broker_leases`), any other broker answers NOT_CONTROLLER (as does a
controller that moves while the request waits). Order of checks, as Kafka 3.9's
ClusterControlManager: cluster id (INCONSISTENT_CLUSTER_ID), then the listeners
(INVALID_REGISTRATION from 3.7, INVALID_REQUEST before: none, or one without a name, host or port),
then an id already held by a live broker of another incarnation (DUPLICATE_BROKER_REGISTRATION).
Success answers the broker epoch, the czxid of `/brokers/ids/<id>`.

Not emulated: ZooKeeper migration (is_migrating_zk_broker is ignored), log directories and
previous_broker_epoch.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.broker_registration import (
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.controller_requests import on_controller
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.BROKER_REGISTRATION
ZK_TROUBLE_FAMILY = Family.CONTROLLER
README_NOTE = (
    "KIP-631, on every listener, from 2.8: a lease written as `/brokers/ids/<id>` (see "
    "*Joining as a broker over the protocol*)"
)


async def handle(
    ctx: RequestContext, request: BrokerRegistrationRequest
) -> BrokerRegistrationResponse:
    return await on_controller(
        ctx,
        request,
        error_response,
        "BrokerRegistration",
        lambda c: c.leases.register(request),
        lambda registered: BrokerRegistrationResponse(
            error_code=registered[0], broker_epoch=registered[1]
        ),
        check=lambda: (
            error_codes.INCONSISTENT_CLUSTER_ID
            if request.cluster_id != ctx.image.cluster_id
            else error_codes.NONE
        ),
    )


def error_response(
    request: BrokerRegistrationRequest, version: int, code: int, message: str | None
) -> BrokerRegistrationResponse:
    return BrokerRegistrationResponse(error_code=code)
