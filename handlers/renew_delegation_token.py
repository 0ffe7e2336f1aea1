"""RenewDelegationToken (KIP-48), as a ZooKeeper-mode broker answers it
(KafkaApis.handleRenewTokenRequest, DelegationTokenManagerZk.renewToken;
`zkbroker.broker.security.delegation_tokens`; docs/kafka-behaviour.md §18):
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED over PLAINTEXT, 1-way SSL without a certificate or from a
token-authenticated principal; DELEGATION_TOKEN_AUTH_DISABLED without a secret key;
DELEGATION_TOKEN_NOT_FOUND for an unknown HMAC; DELEGATION_TOKEN_OWNER_MISMATCH unless the
principal is the owner or a renewer; DELEGATION_TOKEN_EXPIRED; else the new expiry, min(max
timestamp, now + period) (a negative period: delegation.token.expiry.time.ms). Errors answer expiry
-1.

Not emulated: throttling.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.renew_delegation_token import (
    RenewDelegationTokenRequest,
    RenewDelegationTokenResponse,
)
from zkbroker.broker.security.delegation_tokens import ERROR_TIMESTAMP
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.token_requests import (
    connection_principal,
    requests_allowed,
    token_manager,
)
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.RENEW_DELEGATION_TOKEN
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "by HMAC, by an owner or renewer; DELEGATION_TOKEN_NOT_FOUND, "
    "DELEGATION_TOKEN_OWNER_MISMATCH, DELEGATION_TOKEN_EXPIRED"
)


async def handle(
    ctx: RequestContext, request: RenewDelegationTokenRequest
) -> RenewDelegationTokenResponse:
    if not requests_allowed(ctx):
        return error_response(
            request, ctx.version, error_codes.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, None
        )
    code, expiry = await token_manager(ctx).renew(
        connection_principal(ctx), request.hmac, request.renew_period_ms
    )
    return RenewDelegationTokenResponse(error_code=code, expiry_timestamp_ms=expiry)


def error_response(
    request: RenewDelegationTokenRequest, version: int, code: int, message: str | None
) -> RenewDelegationTokenResponse:
    return RenewDelegationTokenResponse(error_code=code, expiry_timestamp_ms=ERROR_TIMESTAMP)
