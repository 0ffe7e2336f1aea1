"""DescribeUserScramCredentials (KIP-554), as a ZooKeeper-mode broker answers it
(KafkaApis.handleDescribeUserScramCredentialsRequest, ZkAdminManager.describeUserScramCredentials;
docs/kafka-behaviour.md §10.7 for /config):

- null or empty users: every `/config/users/<user>` holding a SCRAM credential, sorted by user
  name (users with only quotas are left out);
- named users: an empty name is RESOURCE_NOT_FOUND "Username must not be empty"; a name asked
  twice is one DUPLICATE_RESOURCE result "Cannot describe SCRAM credentials for the same user
  twice in a single request: <user>"; a user without a credential is RESOURCE_NOT_FOUND
  "Attempt to describe a user credential that does not exist: <user>"; results follow the
  request's order, one per distinct name;
- each result lists (mechanism type, iterations) of SCRAM-SHA-256 then SCRAM-SHA-512; never the
  salt or keys. A credential that does not parse is that user's UNKNOWN_SERVER_ERROR.

Any broker answers (no controller needed). With an authorizer, DESCRIBE on the cluster or
CLUSTER_AUTHORIZATION_FAILED (zkbroker.handlers.support.authorization). Not emulated: throttling.
"""

from __future__ import annotations

import asyncio

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.describe_user_scram_credentials import (
    CredentialInfo,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
)
from zkbroker.broker.security.scram import MECHANISM_TYPES, ScramCredential
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout import (
    ConfigEntityNode,
    ConfigEntityTypeNode,
    ConfigType,
    ZnodeFormatError,
    desanitize,
    sanitize,
)

API_KEY = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "from `/config/users/<user>`: mechanisms and iterations; RESOURCE_NOT_FOUND, "
    "DUPLICATE_RESOURCE as ZkAdminManager answers"
)

EMPTY_USER = "Username must not be empty"
NO_CREDENTIAL = "Attempt to describe a user credential that does not exist"


async def _user_configs(ctx: RequestContext, sanitized: str) -> dict[str, str]:
    got = await ctx.broker.store.get(ConfigEntityNode.path(ConfigType.USERS, sanitized))
    if got is None:
        return {}
    try:
        return ConfigEntityNode.decode(got[0] or b"")
    except ZnodeFormatError:
        return {}


def _result(
    user: str, props: dict[str, str], explicit: bool
) -> DescribeUserScramCredentialsResult | None:
    if not any(m in props for m in MECHANISM_TYPES):
        if not explicit:
            return None
        return DescribeUserScramCredentialsResult(
            user=user,
            error_code=error_codes.RESOURCE_NOT_FOUND,
            error_message=f"{NO_CREDENTIAL}: {user}",
        )
    infos = []
    try:
        for mechanism, kind in MECHANISM_TYPES.items():
            text = props.get(mechanism)
            if text is not None:
                iterations = ScramCredential.from_text(text).iterations
                infos.append(CredentialInfo(mechanism=kind, iterations=iterations))
    except ValueError:
        return DescribeUserScramCredentialsResult(
            user=user,
            error_code=error_codes.UNKNOWN_SERVER_ERROR,
            error_message=error_codes.DEFAULT_MESSAGES[error_codes.UNKNOWN_SERVER_ERROR],
        )
    return DescribeUserScramCredentialsResult(
        user=user, error_code=error_codes.NONE, error_message=None, credential_infos=infos
    )


async def handle(
    ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    if not auth.authorize_cluster(ctx, auth.DESCRIBE):  # KafkaApis: authorize(DESCRIBE, CLUSTER)
        return error_response(request, ctx.version, error_codes.CLUSTER_AUTHORIZATION_FAILED, None)
    names = [u.name for u in request.users] if request.users else []
    results: dict[str, DescribeUserScramCredentialsResult] = {}
    if not names:
        store = ctx.broker.store
        children = await store.get_children(ConfigEntityTypeNode.path(ConfigType.USERS)) or []
        configs = await asyncio.gather(*(_user_configs(ctx, c) for c in children))
        for child, props in zip(children, configs, strict=True):
            user = desanitize(child)
            result = _result(user, props, explicit=False)
            if result is not None:
                results[user] = result
        ordered = [results[u] for u in sorted(results)]
        return DescribeUserScramCredentialsResponse(
            throttle_time_ms=0, error_code=error_codes.NONE, error_message=None, results=ordered
        )
    for user in {n for n in names if not n}:
        results[user] = DescribeUserScramCredentialsResult(
            user=user, error_code=error_codes.RESOURCE_NOT_FOUND, error_message=EMPTY_USER
        )
    duplicated = {n for n in names if n and names.count(n) > 1}
    for user in duplicated:
        results[user] = DescribeUserScramCredentialsResult(
            user=user,
            error_code=error_codes.DUPLICATE_RESOURCE,
            error_message=(
                "Cannot describe SCRAM credentials for the same user twice in a single "
                f"request: {user}"
            ),
        )
    wanted = [n for n in dict.fromkeys(names) if n and n not in duplicated]
    configs = await asyncio.gather(*(_user_configs(ctx, sanitize(n)) for n in wanted))
    for user, props in zip(wanted, configs, strict=True):
        result = _result(user, props, explicit=True)
        assert result is not None
        results[user] = result
    return DescribeUserScramCredentialsResponse(
        throttle_time_ms=0,
        error_code=error_codes.NONE,
        error_message=None,
        results=[results[n] for n in dict.fromkeys(names)],
    )


def error_response(
    request: DescribeUserScramCredentialsRequest, version: int, code: int, message: str | None
) -> DescribeUserScramCredentialsResponse:
    return DescribeUserScramCredentialsResponse(
        throttle_time_ms=0,
        error_code=code,
        error_message=message if message is not None else error_codes.DEFAULT_MESSAGES.get(code),
        results=[],
    )
