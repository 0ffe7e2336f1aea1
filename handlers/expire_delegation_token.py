"""ExpireDelegationToken (KIP-48), as a ZooKeeper-mode broker answers it
(KafkaApis.handleExpireTokenRequest, DelegationTokenManagerZk.expireToken;
`zkbroker.broker.security.delegation_tokens`; docs/kafka-behaviour.md §18): the same refusals as
RenewDelegationToken (REQUEST_NOT_ALLOWED, AUTH_DISABLED, NOT_FOUND, OWNER_MISMATCH); a negative
period removes the token at once (its znode, with a change notification) and answers the current
time; otherwise an expired token is DELEGATION_TOKEN_EXPIRED and a live one gets expiry min(max
timestamp, now + period). Errors answer expiry -1.

Not emulated: throttling.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.expire_delegation_token import (
    ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse,
)
from zkbroker.broker.security.delegation_tokens import ERROR_TIMESTAMP
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.token_requests import (
    connection_principal,
    requests_allowed,
    token_manager,
)
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.EXPIRE_DELEGATION_TOKEN
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = "a negative period expires at once (the token is removed)"


async def handle(
    ctx: RequestContext, request: ExpireDelegationTokenRequest
) -> ExpireDelegationTokenResponse:
    if not requests_allowed(ctx):
        return error_response(
            request, ctx.version, error_codes.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, None
        )
    code, expiry = await token_manager(ctx).expire(
        connection_principal(ctx), request.hmac, request.expiry_time_period_ms
    )
    return ExpireDelegationTokenResponse(error_code=code, expiry_timestamp_ms=expiry)


def error_response(
    request: ExpireDelegationTokenRequest, version: int, code: int, message: str | None
) -> ExpireDelegationTokenResponse:
    return ExpireDelegationTokenResponse(error_code=code, expiry_timestamp_ms=ERROR_TIMESTAMP)
