"""Authorization for handlers: Kafka's ``AuthHelper`` over the broker's ``AclAuthorizer``.

With no authorizer every check passes and authorized-operations fields carry every operation
the resource type supports (``zkbroker.broker.rules.acl_operations``). The principal is the
connection's (``User:ANONYMOUS`` on PLAINTEXT), the host its client's address. Audit lines,
which checks skip them and ``resource_ref_count`` follow docs/kafka-behaviour.md §21. A line is
written only when both the broker's emulated ``kafka.authorizer.logger`` level and the Python
logger of that name let it through (`audit_of`), decided once per check or per
`checker`/`filter_authorized` call, so hidden levels cost nothing per decision.

Not here: which API checks which operation (each handler, as KafkaApis does), the matching
itself (``zkbroker.broker.rules.acl_matching``).
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.framing import api_name
from zkbroker.broker.rules import acl_matching as m
from zkbroker.broker.rules import acl_operations
from zkbroker.broker.rules.request_description import (
    RequestFacts,
    java_host_address,
    not_authorized_message,
)
from zkbroker.broker.security.authorizer import AUDIT_LOG, AUDIT_LOGGER, AclAuthorizer, Audit
from zkbroker.handlers.context import RequestContext

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


def client_host(ctx: RequestContext) -> str:
    """The client's address, as ``clientAddress.getHostAddress`` prints it (``peer`` is
    ``host:port``; IPv6 in Java's full form, which is what an ACL's host is compared with)."""
    peer = ctx.connection.peer
    host = peer.rpartition(":")[0] if ":" in peer else peer
    return java_host_address(host.strip("[]"))


def has_authorizer(ctx: RequestContext) -> bool:
    return getattr(ctx.broker, "authorizer", None) is not None


# log4j's levels as Python's numbers (TRACE below DEBUG).
_LOG4J_LEVELS = {"TRACE": 5, "DEBUG": 10, "INFO": 20, "WARN": 30, "ERROR": 40, "FATAL": 50}
_audit_logger = logging.getLogger(AUDIT_LOG)


@functools.cache
def request_name(api_key: int) -> str:
    """Kafka's ApiKeys constant for the audit line: `CreateTopics` -> `CREATE_TOPICS`."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", api_name(api_key)).upper()


def audit_of(ctx: RequestContext, log_if_allowed: bool, log_if_denied: bool) -> Audit | None:
    """Which results of this check get an audit line; None when neither does."""
    if not (log_if_allowed or log_if_denied):
        return None
    emulated = _LOG4J_LEVELS.get(ctx.broker.broker_loggers.effective(AUDIT_LOGGER), 20)
    allowed = log_if_allowed and emulated <= 10 and _audit_logger.isEnabledFor(logging.DEBUG)
    denied = log_if_denied and emulated <= 20 and _audit_logger.isEnabledFor(logging.INFO)
    if not (allowed or denied):
        return None
    return Audit(request_name(ctx.header.api_key), allowed, denied)


def authorize(
    ctx: RequestContext,
    operation: int,
    resource_type: int,
    name: str,
    *,
    log_if_allowed: bool = True,
    log_if_denied: bool = True,
) -> bool:
    """AuthHelper.authorize: True when no authorizer is configured."""
    authorizer = getattr(ctx.broker, "authorizer", None)
    if authorizer is None:
        return True
    principal, host = ctx.connection.principal, client_host(ctx)
    audit = audit_of(ctx, log_if_allowed, log_if_denied)
    if audit is None:
        return bool(authorizer.authorize(principal, host, operation, resource_type, name))
    return bool(authorizer.decide(principal, host, operation, resource_type, name, audit))


def checker(
    ctx: RequestContext, *, log_if_allowed: bool = True, log_if_denied: bool = True
) -> Callable[[int, int, str], bool]:
    """`authorize` with the connection's principal, host and audit settled once, for loops over
    many resources (Metadata of every topic)."""
    authorizer = getattr(ctx.broker, "authorizer", None)
    if authorizer is None:
        return lambda operation, resource_type, name: True
    principal, host = ctx.connection.principal, client_host(ctx)
    audit = audit_of(ctx, log_if_allowed, log_if_denied)
    if audit is None:
        return functools.partial(authorizer.authorize, principal, host)

    def check(operation: int, resource_type: int, name: str) -> bool:
        return bool(authorizer.decide(principal, host, operation, resource_type, name, audit))

    return check


def authorize_cluster(
    ctx: RequestContext, operation: int, *, log_if_allowed: bool = True, log_if_denied: bool = True
) -> bool:
    return authorize(
        ctx,
        operation,
        m.CLUSTER,
        m.CLUSTER_NAME,
        log_if_allowed=log_if_allowed,
        log_if_denied=log_if_denied,
    )


def authorize_by_resource_type(ctx: RequestContext, operation: int, resource_type: int) -> bool:
    """AuthHelper.authorizeByResourceType: `operation` on at least one resource of the type
    (InitProducerId without a transactional id: WRITE on any topic). True with no authorizer.
    Audited as Kafka's action on ``<Type>:UNKNOWN:NONE`` with both log flags on."""
    authorizer = getattr(ctx.broker, "authorizer", None)
    if authorizer is None:
        return True
    principal, host = ctx.connection.principal, client_host(ctx)
    allowed = m.authorize_by_resource_type(
        authorizer.index, authorizer.config, principal, host, operation, resource_type
    )
    audit = audit_of(ctx, True, True)
    if audit is not None:
        authorizer.audit_by_resource_type(principal, host, operation, resource_type, allowed, audit)
    return allowed


def filter_authorized(
    ctx: RequestContext,
    operation: int,
    resource_type: int,
    names: Iterable[str],
    *,
    log_if_allowed: bool = True,
    log_if_denied: bool = True,
) -> set[str]:
    """AuthHelper.filterByAuthorized: the names the principal may do `operation` on, each
    decided once; audited with how often `names` holds it (Kafka's resourceRefCount)."""
    authorizer = getattr(ctx.broker, "authorizer", None)
    if authorizer is None:
        return set(names)
    principal, host = ctx.connection.principal, client_host(ctx)
    audit = audit_of(ctx, log_if_allowed, log_if_denied)
    if audit is None:
        decide = functools.partial(authorizer.authorize, principal, host, operation, resource_type)
        return {n for n in set(names) if decide(n)}
    return {
        n
        for n, count in Counter(iter(names)).items()
        if authorizer.decide(principal, host, operation, resource_type, n, audit, count)
    }


def authorized_operations(ctx: RequestContext, resource_type: int, name: str) -> int:
    """AuthHelper.authorizedOperations as a bit field (Utils.to32BitField)."""
    authorizer = getattr(ctx.broker, "authorizer", None)
    if authorizer is None:
        if resource_type == m.TOPIC:
            return acl_operations.TOPIC_OPERATIONS
        if resource_type == m.CLUSTER:
            return acl_operations.CLUSTER_OPERATIONS
        return acl_operations.supported_operations(resource_type)
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


@dataclass(frozen=True)
class Refused:
    """A whole request refused before its work: the error code and message to answer with."""

    code: int
    message: str | None


def acl_authorizer(ctx: RequestContext, operation: int) -> AclAuthorizer | Refused:
    """The ACL APIs' first checks (KafkaApis): `operation` on the cluster, else
    CLUSTER_AUTHORIZATION_FAILED with Kafka's text; then an authorizer must be configured,
    else SECURITY_DISABLED "No Authorizer is configured."."""
    if not authorize_cluster(ctx, operation):
        return Refused(
            error_codes.CLUSTER_AUTHORIZATION_FAILED, cluster_denied_message(ctx, operation)
        )
    authorizer = ctx.broker.authorizer
    return (
        Refused(error_codes.SECURITY_DISABLED, NO_AUTHORIZER) if authorizer is None else authorizer
    )


def cluster_denied_message(ctx: RequestContext, operation: int) -> str:
    """ClusterAuthorizationException's text, "Request $request is not authorized." with the
    request as Kafka's RequestChannel.Request prints it
    (`zkbroker.broker.rules.request_description`); the operation refused is not part of it."""
    del operation  # Kafka's text does not name it; kept so each call site says what it checks
    conn = ctx.connection
    listener = conn.listener_name
    facts = RequestFacts(
        processor=conn.processor,
        connection_id=conn.kafka_connection_id or conn.connection_id,
        principal=conn.principal,
        client_host=client_host(ctx),
        listener_name=listener,
        security_protocol=ctx.broker.settings.security_of(listener).protocol,
        api_key=ctx.header.api_key,
        size=ctx.size,
        received_ms=time.time_ns() // 1_000_000,
        received_ns=time.monotonic_ns(),
    )
    return not_authorized_message(ctx.release, facts)


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
