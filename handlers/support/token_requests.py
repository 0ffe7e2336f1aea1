"""What the four delegation-token handlers share (KafkaApis.handle*TokenRequest): the
connection's principal, the broker's token manager, and the authorization calls they make.

Authorization is Kafka's AuthHelper.authorize through the broker's authorizer
(`zkbroker.handlers.support.authorization`): everything is allowed when none is configured. The
token APIs check CREATE_TOKENS on `User:<owner>` (Create for another owner), DESCRIBE on
`DelegationToken:<id>` and DESCRIBE_TOKENS on `User:<owner>` (Describe's filter); Renew and Expire
check nothing beyond the owner/renewer rule (docs/kafka-behaviour.md §18).

Deliberately not here: the token rules (`zkbroker.broker.security.delegation_tokens`).
"""

from __future__ import annotations

from zkbroker.broker.security.delegation_tokens import DelegationTokenManager, allow_token_requests
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.authorization import authorize
from zkbroker.zk_layout.nodes.delegation_token import Principal


def connection_principal(ctx: RequestContext) -> Principal:
    """The principal of the connection the request came in on."""
    return Principal.parse(ctx.connection.principal)


def token_manager(ctx: RequestContext) -> DelegationTokenManager:
    tokens = ctx.broker.delegation_tokens
    if tokens is None:  # pragma: no cover - a request reaches only a started broker
        raise RuntimeError(f"broker {ctx.broker.broker_id} has no token manager")
    return tokens


def authorized(ctx: RequestContext, operation: int, resource_type: int, name: str) -> bool:
    """AuthHelper.authorize(context, operation, resource type, name): no authorizer, allowed."""
    return authorize(ctx, operation, resource_type, name)


def requests_allowed(ctx: RequestContext) -> bool:
    """Whether this connection may use the token APIs at all (Kafka's
    `allowTokenRequests`: SASL or 2-way TLS, not a token login)."""
    protocol = ctx.broker.settings.security_of(ctx.connection.listener_name).protocol
    return allow_token_requests(
        protocol, ctx.connection.principal, ctx.connection.token_authenticated
    )
