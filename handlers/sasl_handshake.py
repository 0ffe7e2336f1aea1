"""SaslHandshake (key 17), versions 0-1, as the API layer answers it (KafkaApis).

A SaslHandshake that reaches a handler came on a connection that is not in a SASL exchange:
a PLAINTEXT or SSL listener, or a SASL connection already authenticated that may not
re-authenticate now (no session lifetime, or less than a second since the last
re-authentication). Kafka's `handleSaslHandshakeRequest` answers ILLEGAL_SASL_STATE with no
mechanisms there. The handshake of a SASL listener is served before any handler runs, by
`zkbroker.broker.server.authenticator` (Kafka's SaslServerAuthenticator).

Not emulated: throttling.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.sasl_handshake import (
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from zkbroker.handlers.context import RequestContext

API_KEY = 17
MIN_VERSION = 0
MAX_VERSION = 1


async def handle(ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=error_codes.ILLEGAL_SASL_STATE, mechanisms=[])


def error_response(
    request: SaslHandshakeRequest, version: int, code: int, message: str | None
) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=code, mechanisms=[])
