"""SaslAuthenticate (key 36), versions 0-2, as the API layer answers it (KafkaApis).

A SaslAuthenticate that reaches a handler came outside a SASL exchange (a PLAINTEXT or SSL
listener, or a connection already authenticated): Kafka's `handleSaslAuthenticateRequest`
answers ILLEGAL_SASL_STATE with "SaslAuthenticate request received after successful
authentication". The exchange itself is `zkbroker.broker.server.authenticator`.

Not emulated: throttling.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from zkbroker.handlers.context import RequestContext

API_KEY = 36
MIN_VERSION = 0
MAX_VERSION = 2

AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


async def handle(ctx: RequestContext, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    return error_response(
        request, ctx.version, error_codes.ILLEGAL_SASL_STATE, AFTER_AUTHENTICATION
    )


def error_response(
    request: SaslAuthenticateRequest, version: int, code: int, message: str | None
) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=code, error_message=message, auth_bytes=b"")
