"""Authorization for handlers: Kafka's ``AuthHelper`` over the broker's ``AclAuthorizer``.

With no authorizer configured every check passes and authorized-operations fields carry every
operation the resource type supports (``broker.rules.acl_operations``), as Kafka answers. The
principal is the connection's (``User:ANONYMOUS`` on PLAINTEXT), the host its client's address.

Deliberately not here: which API checks which operation (each handler, as KafkaApis does) and
the matching itself (``broker.rules.acl_matching``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from broker.protocol import error_codes
from broker.rules import acl_matching as m
from broker.rules import acl_operations
from handlers.context import RequestContext

# Re-exported for handlers: operation and resource-type codes.
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = m.TOPIC, m.GROUP, m.CLUSTER, m.TRANSACTIONAL_ID
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = (
    m.READ,
    m.WRITE,
    m.CREATE,
    m.DELETE,
    m.ALTER,
    m.DESCRIBE,
)
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS = (
    m.CLUSTER_ACTION,
    m.DESCRIBE_CONFIGS,
    m.ALTER_CONFIGS,
)
IDEMPOTENT_WRITE = m.IDEMPOTENT_WRITE
CLUSTER_NAME = m.CLUSTER_NAME

# Errors.*.exception's default messages, sent when a whole request is refused.
TRANSACTIONAL_ID_DENIED = "Transactional Id authorization failed."
GROUP_DENIED = "Group authorization failed."
CLUSTER_DENIED = "Cluster authorization failed."


def client_host(ctx: RequestContext) -> str:
    """The client's address, as ``clientAddress.getHostAddress`` (``peer`` is ``host:port``)."""
    peer = ctx.connection.peer
    host = peer.rpartition(":")[0] if ":" in peer else peer
    return host.strip("[]")


def has_authorizer(ctx: RequestContext) -> bool:
    return getattr(ctx.broker, "authorizer", None) is not None


def authorize(ctx: RequestContext, operation: int, resource_type: int, name: str) -> bool:
    """AuthHelper.authorize: True when no authorizer is configured."""
    authorizer = getattr(ctx.broker, "authorizer", None)
    if authorizer is None:
        return True
    return bool(
        authorizer.authorize(
            ctx.connection.principal, client_host(ctx), operation, resource_type, name
        )
    )


def checker(ctx: RequestContext) -> Callable[[int, int, str], bool]:
    """`authorize` with the connection's principal and host bound once, for loops over many
    resources (Metadata of every topic)."""
    authorizer = getattr(ctx.broker, "authorizer", None)
    if authorizer is None:
        return lambda operation, resource_type, name: True
    return functools.partial(authorizer.authorize, ctx.connection.principal, client_host(ctx))


def authorize_cluster(ctx: RequestContext, operation: int) -> bool:
    return authorize(ctx, operation, m.CLUSTER, m.CLUSTER_NAME)


def authorize_by_resource_type(ctx: RequestContext, operation: int, resource_type: int) -> bool:
    """AuthHelper.authorizeByResourceType: `operation` on at least one resource of the type
    (InitProducerId without a transactional id: WRITE on any topic). True with no authorizer."""
    authorizer = getattr(ctx.broker, "authorizer", None)
    if authorizer is None:
        return True
    return m.authorize_by_resource_type(
        authorizer.index,
        authorizer.config,
        ctx.connection.principal,
        client_host(ctx),
        operation,
        resource_type,
    )


def filter_authorized(
    ctx: RequestContext, operation: int, resource_type: int, names: Iterable[str]
) -> set[str]:
    """AuthHelper.filterByAuthorized: the names the principal may do `operation` on."""
    return {n for n in names if authorize(ctx, operation, resource_type, n)}


def authorized_operations(ctx: RequestContext, resource_type: int, name: str) -> int:
    """AuthHelper.authorizedOperations as a bit field (Utils.to32BitField)."""
    authorizer = getattr(ctx.broker, "authorizer", None)
    if authorizer is None:
        if resource_type == m.TOPIC:
            return acl_operations.TOPIC_OPERATIONS
        if resource_type == m.CLUSTER:
            return acl_operations.CLUSTER_OPERATIONS
        bits = 0
        for op in m.SUPPORTED_OPERATIONS.get(resource_type, ()):
            bits |= 1 << op
        return bits
    return int(
        authorizer.authorized_operations(
            ctx.connection.principal, client_host(ctx), resource_type, name
        )
    )


# ---- the ACL APIs' shared rules (AclApis, *AclsRequest.normalizeAndValidate) -----------------

NO_AUTHORIZER = "No Authorizer is configured."


def has_unknown(*codes: int) -> bool:
    """Create/DeleteAclsRequest.validate: an UNKNOWN (code 0) element fails parsing (the
    connection is closed)."""
    return any(c == 0 for c in codes)


# How many codes Kafka's ResourceType, PatternType, AclOperation and AclPermissionType define
# (0 = UNKNOWN); `fromCode` maps any other code to UNKNOWN.
_ENUM_SIZES = (8, 5, 15, 4)


def filter_is_unknown(
    resource_type: int, pattern_type: int, operation: int, permission_type: int
) -> bool:
    """DescribeAclsRequest.validate: `filter().isUnknown()`, after each code went through
    `fromCode`, so an undefined code is UNKNOWN too and the connection is closed."""
    codes = (resource_type, pattern_type, operation, permission_type)
    return any(c <= 0 or c >= size for c, size in zip(codes, _ENUM_SIZES, strict=True))


def cluster_denied_message(ctx: RequestContext, operation: int) -> str:
    """ClusterAuthorizationException's text: Kafka prints the whole RequestChannel.Request;
    zkbroker names the API, connection and principal instead."""
    return (
        f"Request(apiKey={ctx.header.api_key}, connectionId={ctx.connection.connection_id}, "
        f"principal={ctx.connection.principal}) needs "
        f"{m.OPERATION_NAMES.get(operation, str(operation)).upper()} permission."
    )


def binding_filter(
    version: int,
    resource_type: int,
    name: str | None,
    pattern_type: int,
    principal: str | None,
    host: str | None,
    operation: int,
    permission: int,
) -> m.BindingFilter:
    """The request's filter; v0 knows only LITERAL, and ANY there means LITERAL."""
    if version == 0 and pattern_type == m.PT_ANY:
        pattern_type = m.PT_LITERAL
    return m.BindingFilter(
        resource_type, name, pattern_type, principal, host, operation, permission
    )


# ConfigResource.Type codes of the config APIs.
_CONFIG_TOPIC, _CONFIG_BROKER, _CONFIG_BROKER_LOGGER = 2, 4, 8


def config_resource_denied(ctx: RequestContext, config_type: int, name: str, op: int) -> int | None:
    """KafkaApis' check of a config resource: brokers and broker loggers need `op`
    (DESCRIBE_CONFIGS / ALTER_CONFIGS) on the cluster, a topic on the topic. The error code
    when denied, else None."""
    if config_type in (_CONFIG_BROKER, _CONFIG_BROKER_LOGGER):
        if not authorize_cluster(ctx, op):
            return error_codes.CLUSTER_AUTHORIZATION_FAILED
    elif config_type == _CONFIG_TOPIC and not authorize(ctx, op, m.TOPIC, name):
        return error_codes.TOPIC_AUTHORIZATION_FAILED
    return None
