"""DescribeDelegationToken (KIP-48; v3's token requester KIP-373), as a ZooKeeper-mode broker
answers it (KafkaApis.handleDescribeTokensRequest, DelegationTokenManager.filterToken;
`zkbroker.broker.security.delegation_tokens`; docs/kafka-behaviour.md §18):

- DELEGATION_TOKEN_REQUEST_NOT_ALLOWED over PLAINTEXT, 1-way SSL without a certificate or from
  a token-authenticated principal; then DELEGATION_TOKEN_AUTH_DISABLED without a secret key;
- an empty owner list: no tokens; null: every token; else the tokens owned, requested or
  renewable by one of the owners;
- of those, the requester sees the tokens it owns, requested or may renew, and others only
  with DESCRIBE on the token or DESCRIBE_TOKENS on its owner (allowed without an authorizer);
- each token with its HMAC, timestamps, owner, renewers (and v3 requester), in this broker's
  cache order.

Not emulated: throttling.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.describe_delegation_token import (
    DescribedDelegationToken,
    DescribedDelegationTokenRenewer,
    DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse,
)
from zkbroker.broker.rules.acl_matching import DELEGATION_TOKEN, DESCRIBE, DESCRIBE_TOKENS, USER
from zkbroker.broker.security.delegation_tokens import DelegationToken, visible
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.token_requests import (
    authorized,
    connection_principal,
    requests_allowed,
    token_manager,
)
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout.nodes.delegation_token import Principal

API_KEY = ApiKey.DESCRIBE_DELEGATION_TOKEN
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "the tokens of the owners asked, filtered by what the requester owns, may renew or is "
    "allowed to describe"
)


def _described(token: DelegationToken, version: int) -> DescribedDelegationToken:
    info = token.info
    described = DescribedDelegationToken(
        principal_type=info.owner.type,
        principal_name=info.owner.name,
        issue_timestamp=info.issue_timestamp,
        expiry_timestamp=info.expiry_timestamp,
        max_timestamp=info.max_timestamp,
        token_id=info.token_id,
        hmac=token.hmac,
        renewers=[
            DescribedDelegationTokenRenewer(principal_type=r.type, principal_name=r.name)
            for r in info.renewers
        ],
    )
    if version > 2:
        described.token_requester_principal_type = info.token_requester.type
        described.token_requester_principal_name = info.token_requester.name
    return described


async def handle(
    ctx: RequestContext, request: DescribeDelegationTokenRequest
) -> DescribeDelegationTokenResponse:
    if not requests_allowed(ctx):
        code = error_codes.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        return error_response(request, ctx.version, code, None)
    manager = token_manager(ctx)
    if not manager.enabled:
        code = error_codes.DELEGATION_TOKEN_AUTH_DISABLED
        return error_response(request, ctx.version, code, None)
    if request.owners is not None and not request.owners:
        return DescribeDelegationTokenResponse(error_code=error_codes.NONE, tokens=[])
    requester = connection_principal(ctx)
    owners = (
        None
        if request.owners is None
        else [Principal(o.principal_type, o.principal_name) for o in request.owners]
    )
    tokens = manager.tokens(
        lambda info: visible(
            requester,
            owners,
            info,
            lambda token_id: authorized(ctx, DESCRIBE, DELEGATION_TOKEN, token_id),
            lambda owner: authorized(ctx, DESCRIBE_TOKENS, USER, str(owner)),
        )
    )
    return DescribeDelegationTokenResponse(
        error_code=error_codes.NONE, tokens=[_described(t, ctx.version) for t in tokens]
    )


def error_response(
    request: DescribeDelegationTokenRequest, version: int, code: int, message: str | None
) -> DescribeDelegationTokenResponse:
    return DescribeDelegationTokenResponse(error_code=code, tokens=[])
