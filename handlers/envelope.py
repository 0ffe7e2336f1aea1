"""Envelope (key 58, KIP-590): a request forwarded to the controller inside another. A
ZooKeeper-mode broker advertises v0 from 3.4 (EnvelopeRequest.json lists zkBroker for the
ZooKeeper migration, KIP-866).

As a ZooKeeper-mode broker answers it (KafkaApis.handleEnvelope; docs/kafka-behaviour.md §20):
forwarding is enabled only with a KRaft controller to forward to (ZooKeeper migration), which
zkbroker never has, so the connection is closed unanswered ("it sent an `Envelope` request
even though forwarding has not been enabled"), before any listener or authorization check.

Not emulated: the migration mode where a broker accepts forwarded requests.
"""

from __future__ import annotations

from zkbroker.broker.protocol.messages.envelope import EnvelopeRequest, EnvelopeResponse
from zkbroker.handlers.context import NoResponse, RequestContext

API_KEY = 58
MIN_VERSION = 0
MAX_VERSION = 0


async def handle(ctx: RequestContext, request: EnvelopeRequest) -> NoResponse:
    return NoResponse(
        close_reason=(
            f"Closing connection {ctx.connection.connection_id} because it sent an `Envelope`"
            " request even though forwarding has not been enabled"
        )
    )


def error_response(
    request: EnvelopeRequest, version: int, code: int, message: str | None
) -> EnvelopeResponse:
    return EnvelopeResponse(error_code=code)
