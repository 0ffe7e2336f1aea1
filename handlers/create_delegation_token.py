"""CreateDelegationToken (KIP-48; v3's owner principal KIP-373), as a ZooKeeper-mode broker answers
it (KafkaApis.handleCreateTokenRequest, DelegationTokenManagerZk.createToken;
`zkbroker.broker.security.delegation_tokens`; docs/kafka-behaviour.md §18):

- DELEGATION_TOKEN_REQUEST_NOT_ALLOWED over PLAINTEXT, from a token-authenticated principal,
  or from an anonymous one over 1-way SSL;
- a v3 owner other than the requester needs CREATE_TOKENS on that User (an authorizer decides;
  without one, as in Kafka, it is allowed): else DELEGATION_TOKEN_AUTHORIZATION_FAILED;
- a renewer whose type is not `User`: INVALID_PRINCIPAL_TYPE;
- without `delegation.token.secret.key` (or `.master.key`): DELEGATION_TOKEN_AUTH_DISABLED;
- else a new token: its id, HMAC, issue/expiry/max timestamps, owner (and v3 requester).
Error answers carry the owner (and requester) with timestamps -1, an empty id and HMAC.

Any broker answers (Kafka's ZooKeeper mode creates on the receiving broker). Not emulated:
throttling.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.create_delegation_token import (
    CreateDelegationTokenRequest,
    CreateDelegationTokenResponse,
)
from zkbroker.broker.rules.acl_matching import CREATE_TOKENS, USER
from zkbroker.broker.security.delegation_tokens import (
    ERROR_TIMESTAMP,
    DelegationToken,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.token_requests import (
    authorized,
    connection_principal,
    requests_allowed,
    token_manager,
)
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout.nodes.delegation_token import Principal

API_KEY = ApiKey.CREATE_DELEGATION_TOKEN
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "from 1.1 (see *Delegation tokens*): owner and renewers, max lifetime, HMAC; "
    "`/delegation_token/tokens/<id>` + notification; DELEGATION_TOKEN_AUTH_DISABLED, "
    "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, DELEGATION_TOKEN_AUTHORIZATION_FAILED"
)

USER_TYPE = "User"


def _response(
    version: int,
    code: int,
    owner: Principal | None,
    requester: Principal | None,
    token: DelegationToken | None = None,
) -> CreateDelegationTokenResponse:
    response = CreateDelegationTokenResponse(
        error_code=code,
        principal_type=owner.type if owner else "",
        principal_name=owner.name if owner else "",
        issue_timestamp_ms=ERROR_TIMESTAMP,
        expiry_timestamp_ms=ERROR_TIMESTAMP,
        max_timestamp_ms=ERROR_TIMESTAMP,
        token_id="",
        hmac=b"",
        throttle_time_ms=0,
    )
    if version > 2 and requester is not None:
        response.token_requester_principal_type = requester.type
        response.token_requester_principal_name = requester.name
    if token is not None:
        response.issue_timestamp_ms = token.info.issue_timestamp
        response.expiry_timestamp_ms = token.info.expiry_timestamp
        response.max_timestamp_ms = token.info.max_timestamp
        response.token_id = token.info.token_id
        response.hmac = token.hmac
    return response


async def handle(
    ctx: RequestContext, request: CreateDelegationTokenRequest
) -> CreateDelegationTokenResponse:
    requester = connection_principal(ctx)
    name = request.owner_principal_name
    if not name:
        owner = requester
    elif request.owner_principal_type is None:
        # Kafka's KafkaPrincipal constructor refuses a null type (NullPointerException).
        return _response(ctx.version, error_codes.UNKNOWN_SERVER_ERROR, None, requester)
    else:
        owner = Principal(request.owner_principal_type, name)
    renewers = [Principal(r.principal_type, r.principal_name) for r in request.renewers]
    if not requests_allowed(ctx):
        code = error_codes.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        return _response(ctx.version, code, owner, requester)
    if owner != requester and not authorized(ctx, CREATE_TOKENS, USER, str(owner)):
        code = error_codes.DELEGATION_TOKEN_AUTHORIZATION_FAILED
        return _response(ctx.version, code, owner, requester)
    if any(r.type != USER_TYPE for r in renewers):
        return _response(ctx.version, error_codes.INVALID_PRINCIPAL_TYPE, owner, requester)
    result = await token_manager(ctx).create(owner, requester, renewers, request.max_lifetime_ms)
    return _response(ctx.version, result.error_code, owner, requester, result.token)


def error_response(
    request: CreateDelegationTokenRequest, version: int, code: int, message: str | None
) -> CreateDelegationTokenResponse:
    return _response(version, code, None, None)
