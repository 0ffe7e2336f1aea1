"""DescribeAcls, as a ZooKeeper-mode broker answers it (AclApis.handleDescribeAcls over
AclAuthorizer.acls; docs: broker/security/authorizer.py):

- CLUSTER_AUTHORIZATION_FAILED without DESCRIBE on the cluster;
- SECURITY_DISABLED "No Authorizer is configured." without an authorizer;
- otherwise every cached binding the filter matches (ResourcePatternFilter: ANY, MATCH,
  LITERAL, PREFIXED; null name/principal/host match anything), grouped by resource pattern.
- A filter with an UNKNOWN element (code 0, or a code the enum does not define, which Kafka's
  `fromCode` makes UNKNOWN) fails Kafka's request parsing: the connection closes.

Versions: v1 pattern types (KIP-290), v2 flexible, v3 the USER resource type (KIP-373).
Not emulated: the throttle.
"""

from __future__ import annotations

from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.describe_acls import (
    AclDescription,
    DescribeAclsRequest,
    DescribeAclsResource,
    DescribeAclsResponse,
)
from zkbroker.handlers.context import NoResponse, RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.DESCRIBE_ACLS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "with `authorizer.class.name` set (see *ACLs and the authorizer*): the cached bindings "
    "a filter matches (ANY, MATCH, LITERAL, PREFIXED); SECURITY_DISABLED without an "
    "authorizer, CLUSTER_AUTHORIZATION_FAILED without DESCRIBE on the cluster"
)


async def handle(
    ctx: RequestContext, request: DescribeAclsRequest
) -> DescribeAclsResponse | NoResponse:
    r = request
    if auth.filter_is_unknown(
        r.resource_type_filter, r.pattern_type_filter, r.operation, r.permission_type
    ):
        return NoResponse(close_reason="DescribeAclsRequest contains UNKNOWN elements")
    authorizer = auth.acl_authorizer(ctx, auth.DESCRIBE)
    if isinstance(authorizer, auth.Refused):
        return error_response(r, ctx.version, authorizer.code, authorizer.message)
    flt = auth.binding_filter(
        ctx.version,
        r.resource_type_filter,
        r.resource_name_filter,
        r.pattern_type_filter,
        r.principal_filter,
        r.host_filter,
        r.operation,
        r.permission_type,
    )
    resources: list[DescribeAclsResource] = []
    for binding in authorizer.describe(flt):
        p, e = binding.pattern, binding.entry
        last = resources[-1] if resources else None
        if last is None or (last.resource_type, last.resource_name, last.pattern_type) != (
            p.resource_type,
            p.name,
            p.pattern_type,
        ):
            last = DescribeAclsResource(
                resource_type=p.resource_type, resource_name=p.name, pattern_type=p.pattern_type
            )
            resources.append(last)
        last.acls.append(
            AclDescription(
                principal=e.principal,
                host=e.host,
                operation=e.operation,
                permission_type=e.permission,
            )
        )
    return DescribeAclsResponse(
        throttle_time_ms=0, error_code=0, error_message=None, resources=resources
    )


def error_response(
    request: DescribeAclsRequest, version: int, code: int, message: str | None
) -> DescribeAclsResponse:
    return DescribeAclsResponse(
        throttle_time_ms=0, error_code=code, error_message=message, resources=[]
    )
