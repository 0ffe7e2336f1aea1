"""SaslAuthenticate, as the API layer answers it (KafkaApis).

A SaslAuthenticate that reaches a handler came outside a SASL exchange (a PLAINTEXT or SSL
listener, or a connection already authenticated): Kafka's `handleSaslAuthenticateRequest`
answers ILLEGAL_SASL_STATE with "SaslAuthenticate request received after successful
authentication". The exchange itself is `zkbroker.broker.server.authenticator`.

Not emulated: throttling.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.SASL_AUTHENTICATE
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "PLAIN, SCRAM-SHA-256/512, GSSAPI, OAUTHBEARER (error challenge, then "
    "SASL_AUTHENTICATION_FAILED); SASL_AUTHENTICATION_FAILED with Kafka's messages; session "
    "lifetime (v1+, KIP-368) and re-authentication"
)

AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


async def handle(ctx: RequestContext, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    return error_response(
        request, ctx.version, error_codes.ILLEGAL_SASL_STATE, AFTER_AUTHENTICATION
    )


def error_response(
    request: SaslAuthenticateRequest, version: int, code: int, message: str | None
) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=code, error_message=message, auth_bytes=b"")
