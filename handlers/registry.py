"""The one table of API handlers, and the per-release view of it that ApiVersions advertises.

`HANDLERS` maps each implemented API key to its handler module's entry: the version range
the handler implements, the coroutine that answers a request, and the function that builds
Kafka's whole-request error response (used when a handler fails unexpectedly).

`api_table(release)` narrows it to what a ZooKeeper-mode broker of that Kafka release
advertises: the intersection of the handler's range and the release's range
(`zkbroker.broker.protocol.releases`). Only keys with a handler are ever advertised, and a key the
release did not have is absent. The server uses the same table to accept or refuse a
request's (key, version), so advertising and accepting can never disagree.

Every handler is wrapped so that ZooKeeper trouble (a lost connection, an expired session)
is answered with the retriable error of its API family (`zkbroker.handlers.support.zk_trouble`)
through its `error_response`, with one warning line, instead of UNKNOWN_SERVER_ERROR; a write the
store refused as larger than ZooKeeper's jute.maxbuffer (nothing written) is INVALID_REQUEST
with the store's message naming the limit.

Deliberately not here: decoding, the unsupported-version answers (the server owns those),
and the handlers themselves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import API_SPECS, error_codes
from zkbroker.broker.protocol.releases import Release, advertised_range
from zkbroker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    allocate_producer_ids,
    alter_client_quotas,
    alter_configs,
    alter_partition,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    alter_user_scram_credentials,
    api_versions,
    broker_heartbeat,
    broker_registration,
    consumer_group_describe,
    consumer_group_heartbeat,
    controlled_shutdown,
    create_acls,
    create_delegation_token,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_delegation_token,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    envelope,
    expire_delegation_token,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leader_and_isr,
    leave_group,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    renew_delegation_token,
    sasl_authenticate,
    sasl_handshake,
    stop_replica,
    sync_group,
    txn_offset_commit,
    update_features,
    update_metadata,
    write_txn_markers,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import zk_trouble
from zkbroker.zk_layout import ZkConnectionError
from zkbroker.zk_layout.store import RequestTooLargeError

_log = get_logger(__name__)

Handle = Callable[[RequestContext, Any], Awaitable[Any]]
ErrorResponse = Callable[[Any, int, int, "str | None"], Any]


@dataclass(frozen=True)
class HandlerEntry:
    api_key: int
    min_version: int
    max_version: int
    handle: Handle
    # (request, version, error_code, error_message) -> response with the error everywhere.
    error_response: ErrorResponse

    @property
    def name(self) -> str:
        return API_SPECS[self.api_key].name


def _guarded(module: Any) -> Handle:
    """`module.handle`, with ZooKeeper trouble answered as the API family's retriable error
    (`zkbroker.handlers.support.zk_trouble`) instead of reaching the listener as a failure."""
    handle, error_response, api_key = module.handle, module.error_response, module.API_KEY

    async def guarded(ctx: RequestContext, request: Any) -> Any:
        try:
            return await handle(ctx, request)
        except RequestTooLargeError as e:
            # A write over ZooKeeper's jute.maxbuffer, refused before it was sent: nothing was
            # written (CreateTopics/CreatePartitions answer INVALID_PARTITIONS themselves).
            _log.warning("request.too_large_for_zookeeper", api_key=api_key, reason=str(e))
            return error_response(request, ctx.version, error_codes.INVALID_REQUEST, str(e))
        except ZkConnectionError as e:
            code = zk_trouble.error_for(api_key, e)
            _log.warning(
                "request.zookeeper_trouble",
                api_key=api_key,
                family=zk_trouble.family(api_key),
                broker_id=ctx.broker.broker_id,
                correlation_id=ctx.header.correlation_id,
                answered=error_codes.name_of(code),
                reason=str(e),
            )
            return error_response(request, ctx.version, code, None)

    return guarded


def _entry(module: Any) -> HandlerEntry:
    return HandlerEntry(
        api_key=module.API_KEY,
        min_version=module.MIN_VERSION,
        max_version=module.MAX_VERSION,
        handle=_guarded(module),
        error_response=module.error_response,
    )


HANDLERS: Mapping[int, HandlerEntry] = {
    e.api_key: e
    for e in (
        _entry(m)
        for m in (
            api_versions,
            metadata,
            produce,
            fetch,
            list_offsets,
            offset_for_leader_epoch,
            delete_records,
            describe_log_dirs,
            alter_replica_log_dirs,
            init_producer_id,
            describe_cluster,
            create_topics,
            delete_topics,
            create_partitions,
            describe_configs,
            alter_configs,
            incremental_alter_configs,
            elect_leaders,
            alter_partition_reassignments,
            list_partition_reassignments,
            find_coordinator,
            list_groups,
            describe_groups,
            offset_fetch,
            offset_commit,
            delete_groups,
            join_group,
            sync_group,
            heartbeat,
            leave_group,
            offset_delete,
            broker_registration,
            broker_heartbeat,
            sasl_handshake,
            sasl_authenticate,
            describe_user_scram_credentials,
            alter_user_scram_credentials,
            describe_client_quotas,
            alter_client_quotas,
            create_delegation_token,
            renew_delegation_token,
            expire_delegation_token,
            describe_delegation_token,
            update_features,
            allocate_producer_ids,
            controlled_shutdown,
            alter_partition,
            leader_and_isr,
            stop_replica,
            update_metadata,
            envelope,
            add_partitions_to_txn,
            add_offsets_to_txn,
            end_txn,
            txn_offset_commit,
            write_txn_markers,
            describe_producers,
            describe_transactions,
            list_transactions,
            create_acls,
            describe_acls,
            delete_acls,
            consumer_group_heartbeat,
            consumer_group_describe,
        )
    )
}


@dataclass(frozen=True)
class ApiTable:
    """What one emulated release accepts and advertises: api key -> (entry, min, max)."""

    release: Release
    ranges: Mapping[int, tuple[int, int]]

    def entry(self, api_key: int) -> HandlerEntry | None:
        return HANDLERS.get(api_key) if api_key in self.ranges else None

    def supports(self, api_key: int, version: int) -> bool:
        bounds = self.ranges.get(api_key)
        return bounds is not None and bounds[0] <= version <= bounds[1]


@cache
def api_table(release: Release) -> ApiTable:
    ranges: dict[int, tuple[int, int]] = {}
    for key, entry in sorted(HANDLERS.items()):
        released = advertised_range(release, key)
        if released is None:
            continue
        low, high = max(released[0], entry.min_version), min(released[1], entry.max_version)
        if low <= high:
            ranges[key] = (low, high)
    return ApiTable(release=release, ranges=ranges)
