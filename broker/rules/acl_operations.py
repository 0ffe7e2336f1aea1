"""Authorized-operations bit fields when no authorizer is configured.

Without an authorizer Kafka reports every operation a resource type supports, and
Integer.MIN_VALUE when the client did not ask (§21). With `Cluster(security=...)` ACLs the
handlers ask `zkbroker.broker.security.authorizer` instead; this module is the fallback.
"""

from __future__ import annotations

from zkbroker.broker.rules.acl_matching import CLUSTER, SUPPORTED_OPERATIONS, TOPIC

NOT_REQUESTED = -(2**31)


def supported_operations(resource_type: int) -> int:
    """The operations a resource type supports as a bit field (Utils.to32BitField)."""
    value = 0
    for op in SUPPORTED_OPERATIONS.get(resource_type, ()):
        value |= 1 << op
    return value


TOPIC_OPERATIONS = supported_operations(TOPIC)
CLUSTER_OPERATIONS = supported_operations(CLUSTER)


def topic_operations(requested: bool) -> int:
    return TOPIC_OPERATIONS if requested else NOT_REQUESTED


def cluster_operations(requested: bool) -> int:
    return CLUSTER_OPERATIONS if requested else NOT_REQUESTED
