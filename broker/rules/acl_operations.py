"""Authorized-operations bit fields, as a broker without an authorizer reports them.

Kafka answers `*_authorized_operations` (Metadata v8+, DescribeCluster) with every
operation the resource type supports when no authorizer is configured, and with
Integer.MIN_VALUE when the client did not ask. zkbroker has no authorizer.

Deliberately not here: ACLs themselves.
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
