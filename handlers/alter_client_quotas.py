"""AlterClientQuotas (KIP-546): quota entity configs altered in ZooKeeper.

Follows docs/kafka-behaviour.md §22 ("AlterClientQuotas"; nodes §1.8), authorization included;
entities are parsed by `zkbroker.broker.rules.quota_entities.entity_target`, and each node is
written with its `/config/changes` notification (`change_entity_config`), so every broker's
config watcher applies it and `kafka-configs --zookeeper` sees it.

Not emulated: 3.x's removal of a quota node left empty.
"""

from __future__ import annotations

import asyncio
import socket

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
)
from zkbroker.broker.protocol.messages.alter_client_quotas import (
    AlterClientQuotasResponseEntityData as EntityData,
)
from zkbroker.broker.protocol.messages.alter_client_quotas import (
    AlterClientQuotasResponseEntryData as EntryData,
)
from zkbroker.broker.rules.quota_entities import (
    EntityTarget,
    QuotaEntity,
    QuotaError,
    QuotaOp,
    apply_ops,
    invalid_ip,
    is_ip_literal,
)
from zkbroker.broker.rules.quota_entities import entity_target as target_of
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout import DEFAULT_ENTITY, ConfigEntityNode, ZnodeFormatError, desanitize
from zkbroker.zk_layout.store.admin_zk import change_entity_config

API_KEY = ApiKey.ALTER_CLIENT_QUOTAS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "writes the entity's `/config/...` znode and a change notification (validate_only too); "
    "applied live as throttling by every broker; CLUSTER_AUTHORIZATION_FAILED without "
    "ALTER_CONFIGS"
)


async def _resolvable(host: str) -> bool:
    """InetAddress.getByName: an address literal, or a name the resolver knows."""
    if is_ip_literal(host):
        return True
    try:
        await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    return True


async def _alter(
    ctx: RequestContext, target: EntityTarget, ops: list[QuotaOp], validate_only: bool
) -> None:
    ip = target.ip
    if ip is not None and ip != DEFAULT_ENTITY and not await _resolvable(desanitize(ip)):
        raise invalid_ip(ip)
    store = ctx.broker.store
    path = ConfigEntityNode.path(target.config_type, target.path_name)
    got = await store.get(path)
    try:
        props = ConfigEntityNode.decode(got[0] or b"") if got is not None else {}
    except ZnodeFormatError:
        props = {}
    updated = apply_ops(props, ops, target.keys)
    if validate_only:
        return
    if "/" in target.path_name:
        # /config/users/<u>/clients: Kafka's createRecursive makes the parents as needed.
        await store.ensure_path(path.rsplit("/", 1)[0])
    await change_entity_config(store, target.config_type, target.path_name, updated, ctx.release)


async def handle(
    ctx: RequestContext, request: AlterClientQuotasRequest
) -> AlterClientQuotasResponse:
    if not auth.authorize_cluster(ctx, auth.ALTER_CONFIGS):
        return error_response(request, ctx.version, error_codes.CLUSTER_AUTHORIZATION_FAILED, None)
    results: dict[QuotaEntity, tuple[int, str | None]] = {}
    for entry in request.entries:
        entity = QuotaEntity.from_pairs((e.entity_type, e.entity_name) for e in entry.entity)
        ops = [QuotaOp(op.key, op.value, op.remove) for op in entry.ops]
        try:
            await _alter(ctx, target_of(entity, ctx.release), ops, request.validate_only)
            outcome: tuple[int, str | None] = (error_codes.NONE, None)
        except QuotaError as e:
            outcome = (e.code, e.message)
        results[entity] = outcome
    return AlterClientQuotasResponse(
        throttle_time_ms=0,
        entries=[_entry(entity, code, message) for entity, (code, message) in results.items()],
    )


def _entry(entity: QuotaEntity, code: int, message: str | None) -> EntryData:
    return EntryData(
        error_code=code,
        error_message=message,
        entity=[EntityData(entity_type=t, entity_name=n) for t, n in entity.entries],
    )


def error_response(
    request: AlterClientQuotasRequest, version: int, code: int, message: str | None
) -> AlterClientQuotasResponse:
    """Kafka's getErrorResponse: the error for every entity of the request."""
    entities = dict.fromkeys(
        QuotaEntity.from_pairs((e.entity_type, e.entity_name) for e in entry.entity)
        for entry in request.entries
    )
    return AlterClientQuotasResponse(
        throttle_time_ms=0, entries=[_entry(e, code, message) for e in entities]
    )
