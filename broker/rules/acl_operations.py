"""Authorized-operations bit fields, as a broker without an authorizer reports them.

Kafka answers `*_authorized_operations` (Metadata v8+, DescribeCluster) with every
operation the resource type supports when no authorizer is configured, and with
Integer.MIN_VALUE when the client did not ask. zkbroker has no authorizer.

Deliberately not here: ACLs themselves.
"""

from __future__ import annotations

# org.apache.kafka.common.acl.AclOperation codes.
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12

NOT_REQUESTED = -(2**31)

_TOPIC_OPERATIONS = (READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS)
_CLUSTER_OPERATIONS = (
    CREATE,
    CLUSTER_ACTION,
    DESCRIBE_CONFIGS,
    ALTER_CONFIGS,
    IDEMPOTENT_WRITE,
    ALTER,
    DESCRIBE,
)


def _bits(operations: tuple[int, ...]) -> int:
    value = 0
    for op in operations:
        value |= 1 << op
    return value


TOPIC_OPERATIONS = _bits(_TOPIC_OPERATIONS)
CLUSTER_OPERATIONS = _bits(_CLUSTER_OPERATIONS)


def topic_operations(requested: bool) -> int:
    return TOPIC_OPERATIONS if requested else NOT_REQUESTED


def cluster_operations(requested: bool) -> int:
    return CLUSTER_OPERATIONS if requested else NOT_REQUESTED
