"""CreateAcls, as a ZooKeeper-mode broker answers it (AclApis.handleCreateAcls,
AclAuthorizer.createAcls; docs: broker/security/authorizer.py):

- every result CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster;
- every result SECURITY_DISABLED "No Authorizer is configured." without an authorizer;
- a pattern type ANY/MATCH, or resource type/operation/permission ANY, cannot make a binding
  (IllegalArgumentException in the handler): the whole response is UNKNOWN_SERVER_ERROR;
- per creation, in order: INVALID_REQUEST "The only valid name for the CLUSTER resource is
  kafka-cluster", "Invalid empty resource name"; then the authorizer ("Failed to create ACL"
  for a name with ``/`` or an unknown code; a principal without ``:`` fails its resource's
  write: UNKNOWN_SERVER_ERROR).
- An UNKNOWN (0) element fails Kafka's request parsing: the connection closes.

Not emulated: the throttle.
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.create_acls import (
    AclCreationResult,
    CreateAclsRequest,
    CreateAclsResponse,
)
from zkbroker.broker.rules import acl_matching as m
from zkbroker.handlers.context import NoResponse, RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.CREATE_ACLS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "writes `/kafka-acl[-extended/prefixed]/<Type>/<name>` (versioned) and a change "
    "notification as AclAuthorizer; INVALID_REQUEST for the CLUSTER name, an empty name, "
    '"Failed to create ACL"; SECURITY_DISABLED, CLUSTER_AUTHORIZATION_FAILED (ALTER)'
)

CLUSTER_NAME_ONLY = "The only valid name for the CLUSTER resource is kafka-cluster"
EMPTY_NAME = "Invalid empty resource name"


async def handle(
    ctx: RequestContext, request: CreateAclsRequest
) -> CreateAclsResponse | NoResponse:
    creations = request.creations
    for c in creations:
        if auth.has_unknown(
            c.resource_type, c.resource_pattern_type, c.operation, c.permission_type
        ):
            return NoResponse(close_reason="CreatableAcls contain unrecognized enum values")
    authorizer = auth.acl_authorizer(ctx, auth.ALTER)
    if isinstance(authorizer, auth.Refused):
        return error_response(request, ctx.version, authorizer.code, authorizer.message)
    for c in creations:
        # ResourcePattern / AccessControlEntry constructors refuse these (not ApiExceptions).
        if (
            c.resource_type == m.RT_ANY
            or c.resource_pattern_type in (m.PT_ANY, m.PT_MATCH)
            or c.operation == m.OP_ANY
            or c.permission_type == m.PERM_ANY
        ):
            return error_response(request, ctx.version, error_codes.UNKNOWN_SERVER_ERROR, None)
    results: list[AclCreationResult | None] = []
    valid: list[m.Binding] = []
    for c in creations:
        if c.resource_type == m.CLUSTER and c.resource_name != m.CLUSTER_NAME:
            results.append(AclCreationResult(error_codes.INVALID_REQUEST, CLUSTER_NAME_ONLY))
        elif not c.resource_name:
            results.append(AclCreationResult(error_codes.INVALID_REQUEST, EMPTY_NAME))
        else:
            results.append(None)
            valid.append(
                m.Binding(
                    m.Pattern(c.resource_type, c.resource_name, c.resource_pattern_type),
                    m.Entry(c.principal, c.host, c.operation, c.permission_type),
                )
            )
    # AclEntry's parseKafkaPrincipal throws inside the resource's update: that resource's
    # whole group of creations fails, the other resources are written.
    failed = {b.pattern for b in valid if ":" not in b.entry.principal}
    to_create = [b for b in valid if b.pattern not in failed]
    outcomes = iter(await authorizer.create(to_create))
    out: list[AclCreationResult] = []
    valid_iter = iter(valid)
    for r in results:
        if r is None:
            binding = next(valid_iter)
            if binding.pattern in failed:
                r = AclCreationResult(error_codes.UNKNOWN_SERVER_ERROR, None)
            else:
                o = next(outcomes)
                r = AclCreationResult(o.error_code, o.error_message)
        out.append(r)
    return CreateAclsResponse(throttle_time_ms=0, results=out)


def error_response(
    request: CreateAclsRequest, version: int, code: int, message: str | None
) -> CreateAclsResponse:
    return CreateAclsResponse(
        throttle_time_ms=0,
        results=[AclCreationResult(code, message) for _ in request.creations],
    )
