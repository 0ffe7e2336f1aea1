"""ConsumerGroupHeartbeat (KIP-848): the next-generation consumer group protocol's one request. Its
JSON lists zkBroker, so a ZooKeeper-mode broker advertises it.

As a ZooKeeper-mode broker answers it (KafkaApis.handleConsumerGroupHeartbeat,
docs/kafka-behaviour.md §16): the new group coordinator, which this protocol needs, runs only in
KRaft mode, so `isConsumerGroupProtocolEnabled()` is false and every request is answered with
UNSUPPORTED_VERSION and nothing else (no message, no member), before any authorization. Clients
that try the consumer protocol (`group.protocol=consumer`) learn from it to use the classic one.
Kafka's own ZooKeeper-cluster test expects exactly this response.

Deliberately not here: the consumer group protocol itself (KRaft only in every release this
project emulates).
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.CONSUMER_GROUP_HEARTBEAT
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "from 3.7 (KIP-848): the new group coordinator is KRaft only, so a ZooKeeper broker "
    "answers UNSUPPORTED_VERSION and nothing else, as Kafka does; clients fall back to the "
    "classic protocol"
)


async def handle(
    ctx: RequestContext, request: ConsumerGroupHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse:
    return error_response(request, ctx.version, error_codes.UNSUPPORTED_VERSION, None)


def error_response(
    request: ConsumerGroupHeartbeatRequest, version: int, code: int, message: str | None
) -> ConsumerGroupHeartbeatResponse:
    # Kafka's getErrorResponse sets the code only.
    return ConsumerGroupHeartbeatResponse(error_code=code)
