"""Envelope (KIP-590): a request forwarded to the controller inside another. A ZooKeeper-mode
broker advertises it because EnvelopeRequest.json lists zkBroker for the ZooKeeper migration
(KIP-866).

As a ZooKeeper-mode broker answers it (KafkaApis.handleEnvelope; docs/kafka-behaviour.md §20):
forwarding is enabled only with a KRaft controller to forward to (ZooKeeper migration), which
zkbroker never has, so the connection is closed unanswered ("it sent an `Envelope` request
even though forwarding has not been enabled"), before any listener or authorization check.

Not emulated: the migration mode where a broker accepts forwarded requests.
"""

from __future__ import annotations

from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.envelope import EnvelopeRequest, EnvelopeResponse
from zkbroker.handlers.context import NoResponse, RequestContext
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.ENVELOPE
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "from 3.4: forwarding is never enabled on a ZooKeeper broker without a KRaft "
    "controller, so the connection is closed unanswered, as Kafka does"
)


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
