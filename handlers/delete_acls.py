"""DeleteAcls, as a ZooKeeper-mode broker answers it (AclApis.handleDeleteAcls,
AclAuthorizer.deleteAcls; docs: broker/security/authorizer.py):

- every filter result CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster;
- every filter result SECURITY_DISABLED "No Authorizer is configured." without an authorizer;
- otherwise each filter (ANY, MATCH, LITERAL, PREFIXED) removes the matching bindings from
  ZooKeeper (versioned writes, change notifications); a binding two filters match is reported
  under the first. A filter that names one resource exactly also reaches ACLs not yet in this
  broker's cache.
- An UNKNOWN (0) element fails Kafka's request parsing: the connection closes.

Not emulated: the throttle.
"""

from __future__ import annotations

from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.delete_acls import (
    DeleteAclsFilterResult,
    DeleteAclsMatchingAcl,
    DeleteAclsRequest,
    DeleteAclsResponse,
)
from zkbroker.handlers.context import NoResponse, RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.DELETE_ACLS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "removes the bindings each filter matches, per filter, with notifications; "
    "SECURITY_DISABLED, CLUSTER_AUTHORIZATION_FAILED (ALTER)"
)


async def handle(
    ctx: RequestContext, request: DeleteAclsRequest
) -> DeleteAclsResponse | NoResponse:
    for f in request.filters:
        if auth.has_unknown(
            f.resource_type_filter, f.pattern_type_filter, f.operation, f.permission_type
        ):
            return NoResponse(close_reason="Filters contain UNKNOWN elements")
    authorizer = auth.acl_authorizer(ctx, auth.ALTER)
    if isinstance(authorizer, auth.Refused):
        return error_response(request, ctx.version, authorizer.code, authorizer.message)
    filters = [
        auth.binding_filter(
            ctx.version,
            f.resource_type_filter,
            f.resource_name_filter,
            f.pattern_type_filter,
            f.principal_filter,
            f.host_filter,
            f.operation,
            f.permission_type,
        )
        for f in request.filters
    ]
    results = []
    for deleted in await authorizer.delete(filters):
        results.append(
            DeleteAclsFilterResult(
                error_code=0,
                error_message=None,
                matching_acls=[
                    DeleteAclsMatchingAcl(
                        error_code=o.error_code,
                        error_message=o.error_message,
                        resource_type=b.pattern.resource_type,
                        resource_name=b.pattern.name,
                        pattern_type=b.pattern.pattern_type,
                        principal=b.entry.principal,
                        host=b.entry.host,
                        operation=b.entry.operation,
                        permission_type=b.entry.permission,
                    )
                    for b, o in deleted
                ],
            )
        )
    return DeleteAclsResponse(throttle_time_ms=0, filter_results=results)


def error_response(
    request: DeleteAclsRequest, version: int, code: int, message: str | None
) -> DeleteAclsResponse:
    return DeleteAclsResponse(
        throttle_time_ms=0,
        filter_results=[
            DeleteAclsFilterResult(error_code=code, error_message=message) for _ in request.filters
        ],
    )
