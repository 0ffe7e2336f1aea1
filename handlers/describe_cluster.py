"""DescribeCluster: cluster id, controller and live brokers.

Behaviour (docs/kafka-behaviour.md §5; 2.8.0 KafkaApis.handleDescribeCluster, 3.7+
AuthHelper.computeDescribeClusterResponse):
- brokers: alive brokers with an endpoint for the listener the request arrived on, with
  their rack (null when unset); controller_id from the metadata image, -1 when unknown.
- cluster_authorized_operations: when asked, the principal's cluster operations (every one
  without an authorizer; 0 without DESCRIBE on the cluster, checked and audited first),
  Integer.MIN_VALUE otherwise.
- v1 endpoint_type (KIP-919): 1 (brokers) is answered; 2 (controllers) asked of a broker
  gets MISMATCHED_ENDPOINT_TYPE, any other value UNSUPPORTED_ENDPOINT_TYPE, with Kafka's
  messages. From emulated release 3.7 a controller id that is not among the listed brokers
  is answered as -1, as Kafka does to avoid pointing clients at an unknown node.

Not emulated: throttling.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.describe_cluster import (
    DescribeClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from zkbroker.broker.rules import acl_operations
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.metadata import response_brokers
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.DESCRIBE_CLUSTER
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = "endpoint types (KIP-919)"

BROKER_ENDPOINTS = 1
CONTROLLER_ENDPOINTS = 2
_ENDPOINT_NAMES = {BROKER_ENDPOINTS: "BROKER", CONTROLLER_ENDPOINTS: "CONTROLLER"}


async def handle(ctx: RequestContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
    version = ctx.version
    if version >= 1 and request.endpoint_type != BROKER_ENDPOINTS:
        if request.endpoint_type in _ENDPOINT_NAMES:
            return DescribeClusterResponse(
                error_code=error_codes.MISMATCHED_ENDPOINT_TYPE,
                error_message=(
                    "The request was sent to an endpoint of type BROKER, but we wanted an "
                    f"endpoint of type {_ENDPOINT_NAMES[request.endpoint_type]}"
                ),
            )
        return DescribeClusterResponse(
            error_code=error_codes.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"Unsupported endpoint type {request.endpoint_type}",
        )
    image = ctx.image
    brokers = [
        DescribeClusterBroker(broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
        for b in response_brokers(image, ctx.connection.listener_name)
    ]
    controller_id = image.controller_id
    if ctx.release >= (3, 7) and controller_id not in {b.broker_id for b in brokers}:
        controller_id = -1
    return DescribeClusterResponse(
        throttle_time_ms=0,
        error_code=error_codes.NONE,
        error_message=None,
        endpoint_type=BROKER_ENDPOINTS,
        cluster_id=image.cluster_id or "",
        controller_id=controller_id,
        brokers=brokers,
        cluster_authorized_operations=(
            # AuthHelper.computeDescribeClusterResponse: DESCRIBE on the cluster first, else 0.
            (
                auth.authorized_operations(ctx, auth.CLUSTER, auth.CLUSTER_NAME)
                if auth.authorize_cluster(ctx, auth.DESCRIBE)
                else 0
            )
            if request.include_cluster_authorized_operations
            else acl_operations.NOT_REQUESTED
        ),
    )


def error_response(
    request: DescribeClusterRequest, version: int, code: int, message: str | None
) -> DescribeClusterResponse:
    return DescribeClusterResponse(error_code=code, error_message=message)
