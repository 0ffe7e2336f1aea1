"""DescribeClientQuotas (KIP-546), as a ZooKeeper-mode broker answers it
(KafkaApis.handleDescribeClientQuotasRequest, ZkAdminManager.describeClientQuotas):

- the filter is checked first (`zkbroker.broker.rules.quota_entities.check_filter`): a repeated
  entity type, an empty one or an ip component with a user/client-id one are INVALID_REQUEST,
  another entity type UNSUPPORTED_VERSION "Custom entity type '<t>' not supported"; the whole
  response then carries the error and null entries, as Kafka's getErrorResponse;
- the answer is read from ZooKeeper on every request, as Kafka's admin manager does:
  `/config/users/*`, `/config/clients/*`, `/config/users/*/clients/*` and `/config/ips/*`, with
  sanitized names decoded (`<default>` is a null name); only entities holding a quota key are
  listed, with values as doubles. Any broker answers (no controller needed).

With an authorizer, DESCRIBE_CONFIGS on the cluster is checked before anything else; without it
the whole response is CLUSTER_AUTHORIZATION_FAILED (null message, null entries), as
KafkaApis.handleDescribeClientQuotasRequest answers.

Not emulated: the order of entries (Kafka's comes from a Scala hash map of entities: here
users, clients, then user/client pairs, each in ZooKeeper's child order).
"""

from __future__ import annotations

import asyncio

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.describe_client_quotas import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    EntityData,
    EntryData,
    ValueData,
)
from zkbroker.broker.rules.quota_entities import (
    FilterComponent,
    QuotaError,
    StoredEntity,
    check_filter,
    describe,
    ip_entity_supported,
    stored_name,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout import (
    ConfigEntityNode,
    ConfigEntityTypeNode,
    ConfigType,
    ZkStore,
    ZnodeFormatError,
)

API_KEY = ApiKey.DESCRIBE_CLIENT_QUOTAS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "from 2.6: the user, client-id, user/client-id and (2.8+) ip entities of `/config/...` "
    "a filter matches (exact, default, any; strict); Kafka's validation messages; "
    "CLUSTER_AUTHORIZATION_FAILED without DESCRIBE_CONFIGS (see *Client quotas*)"
)


async def _props(store: ZkStore, paths: list[str]) -> list[dict[str, str]]:
    got = await store.get_many(paths) if paths else []
    out: list[dict[str, str]] = []
    for item in got:
        try:
            out.append(ConfigEntityNode.decode(item[0] or b"") if item is not None else {})
        except ZnodeFormatError:
            out.append({})
    return out


async def _children(store: ZkStore, path: str, wanted: bool) -> list[str]:
    return (await store.get_children(path) or []) if wanted else []


async def read_quota_entities(store: ZkStore, with_ips: bool) -> list[StoredEntity]:
    """Every user, client, user/client and (when asked) ip entity node with its properties."""
    users_root = ConfigEntityTypeNode.path(ConfigType.USERS)
    clients_root = ConfigEntityTypeNode.path(ConfigType.CLIENTS)
    ips_root = ConfigEntityTypeNode.path(ConfigType.IPS)
    users, clients, ips = await asyncio.gather(
        _children(store, users_root, True),
        _children(store, clients_root, True),
        _children(store, ips_root, with_ips),
    )
    nested = await store.get_children_many([f"{users_root}/{u}/clients" for u in users])
    pairs = [(u, c) for u, cs in zip(users, nested, strict=True) for c in cs or []]
    user_props, client_props, pair_props, ip_props = await asyncio.gather(
        _props(store, [f"{users_root}/{u}" for u in users]),
        _props(store, [f"{clients_root}/{c}" for c in clients]),
        _props(store, [f"{users_root}/{u}/clients/{c}" for u, c in pairs]),
        _props(store, [f"{ips_root}/{i}" for i in ips]),
    )
    stored = [
        StoredEntity(stored_name(u), None, None, p) for u, p in zip(users, user_props, strict=True)
    ]
    stored += [
        StoredEntity(None, stored_name(c), None, p)
        for c, p in zip(clients, client_props, strict=True)
    ]
    stored += [
        StoredEntity(stored_name(u), stored_name(c), None, p)
        for (u, c), p in zip(pairs, pair_props, strict=True)
    ]
    stored += [
        StoredEntity(None, None, stored_name(i), p) for i, p in zip(ips, ip_props, strict=True)
    ]
    return stored


async def handle(
    ctx: RequestContext, request: DescribeClientQuotasRequest
) -> DescribeClientQuotasResponse:
    if not auth.authorize_cluster(ctx, auth.DESCRIBE_CONFIGS):
        return error_response(request, ctx.version, error_codes.CLUSTER_AUTHORIZATION_FAILED, None)
    components = [FilterComponent(c.entity_type, c.match_type, c.match) for c in request.components]
    try:
        check_filter(components, ctx.release)
        stored = await read_quota_entities(ctx.broker.store, ip_entity_supported(ctx.release))
        selected = describe(components, request.strict, stored, ctx.release)
    except QuotaError as e:
        return error_response(request, ctx.version, e.code, e.message)
    entries = [
        EntryData(
            entity=[EntityData(entity_type=t, entity_name=n) for t, n in pairs],
            values=[ValueData(key=k, value=v) for k, v in values],
        )
        for pairs, values in selected
    ]
    return DescribeClientQuotasResponse(
        throttle_time_ms=0, error_code=error_codes.NONE, error_message=None, entries=entries
    )


def error_response(
    request: DescribeClientQuotasRequest, version: int, code: int, message: str | None
) -> DescribeClientQuotasResponse:
    """Kafka's getErrorResponse: the error, its message (null when generic), null entries."""
    return DescribeClientQuotasResponse(
        throttle_time_ms=0, error_code=code, error_message=message, entries=None
    )
