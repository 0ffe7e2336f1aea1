"""SaslHandshake, as the API layer answers it (KafkaApis).

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
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.sasl_handshake import (
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.SASL_HANDSHAKE
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "on SASL listeners before authentication: the enabled mechanisms, "
    "UNSUPPORTED_SASL_MECHANISM; v0 = raw tokens; elsewhere ILLEGAL_SASL_STATE (see "
    "*Security*)"
)


async def handle(ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=error_codes.ILLEGAL_SASL_STATE, mechanisms=[])


def error_response(
    request: SaslHandshakeRequest, version: int, code: int, message: str | None
) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=code, mechanisms=[])
