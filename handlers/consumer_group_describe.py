"""ConsumerGroupDescribe (KIP-848): describing consumer-protocol groups. Its JSON lists zkBroker,
so a ZooKeeper-mode broker advertises it.

As a ZooKeeper-mode broker answers it (KafkaApis.handleConsumerGroupDescribe,
docs/kafka-behaviour.md §16): consumer-protocol groups exist only with the new group
coordinator, which runs only in KRaft mode, so each group named is answered UNSUPPORTED_VERSION
(group id and code, nothing else), before any authorization: the shape of Kafka's
`getErrorResponse`, which Kafka's own ZooKeeper-cluster test expects. Admin clients then
describe the group with DescribeGroups (the classic API).

Deliberately not here: consumer-protocol groups (KRaft only).
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "from 3.8 (KIP-848): UNSUPPORTED_VERSION per group, as a ZooKeeper broker answers; "
    "admin clients fall back to DescribeGroups"
)


async def handle(
    ctx: RequestContext, request: ConsumerGroupDescribeRequest
) -> ConsumerGroupDescribeResponse:
    return error_response(request, ctx.version, error_codes.UNSUPPORTED_VERSION, None)


def error_response(
    request: ConsumerGroupDescribeRequest, version: int, code: int, message: str | None
) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(
        groups=[DescribedGroup(group_id=g, error_code=code) for g in request.group_ids]
    )
