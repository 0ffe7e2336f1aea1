"""ZooKeeper trouble inside a handler, answered with the retriable error of the API's family.

A lost connection (`ZkConnectionError`: outcome unknown) or an expired session
(`SessionExpiredError`) is answered with an error clients retry, as Kafka's ZooKeeper-mode
broker does, not UNKNOWN_SERVER_ERROR: `error_for(api_key, exc)` picks it per family (topic
admin and controller APIs: REQUEST_TIMED_OUT, NOT_CONTROLLER for an expired session; groups:
COORDINATOR_NOT_AVAILABLE; Metadata: LEADER_NOT_AVAILABLE; others: REQUEST_TIMED_OUT).
`FAMILIES` names every key's family, written by hand and never defaulted. The registry
(`zkbroker.handlers.registry`) applies it around every handler.

Not here: retrying inside the broker (the client retries; the store never retries a write whose
outcome is unknown), `ControllerMovedError` (each controller API answers NOT_CONTROLLER itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.zk_layout import SessionExpiredError, ZkConnectionError


class Family(Enum):
    """An API family; the value is the name used in logs."""

    TOPIC_ADMIN = "topic_admin"
    CONTROLLER = "controller"
    CONFIGS = "configs"
    GROUPS = "groups"
    METADATA = "metadata"
    OTHER = "other"


_T, _C, _CF, _G, _M, _O = (
    Family.TOPIC_ADMIN,
    Family.CONTROLLER,
    Family.CONFIGS,
    Family.GROUPS,
    Family.METADATA,
    Family.OTHER,
)

# Every API key's family, written out for each (a test fails when a key of the generated
# ApiKey table is missing; the registry refuses to start without it).
FAMILIES: Mapping[ApiKey, Family] = MappingProxyType(
    {
        ApiKey.PRODUCE: _O,
        ApiKey.FETCH: _O,
        ApiKey.LIST_OFFSETS: _O,
        ApiKey.METADATA: _M,
        ApiKey.LEADER_AND_ISR: _O,
        ApiKey.STOP_REPLICA: _O,
        ApiKey.UPDATE_METADATA: _O,
        ApiKey.CONTROLLED_SHUTDOWN: _C,
        ApiKey.OFFSET_COMMIT: _G,
        ApiKey.OFFSET_FETCH: _G,
        ApiKey.FIND_COORDINATOR: _G,
        ApiKey.JOIN_GROUP: _O,
        ApiKey.HEARTBEAT: _O,
        ApiKey.LEAVE_GROUP: _O,
        ApiKey.SYNC_GROUP: _O,
        ApiKey.DESCRIBE_GROUPS: _G,
        ApiKey.LIST_GROUPS: _G,
        ApiKey.SASL_HANDSHAKE: _O,
        ApiKey.API_VERSIONS: _O,
        ApiKey.CREATE_TOPICS: _T,
        ApiKey.DELETE_TOPICS: _T,
        ApiKey.DELETE_RECORDS: _O,
        ApiKey.INIT_PRODUCER_ID: _O,
        ApiKey.OFFSET_FOR_LEADER_EPOCH: _O,
        ApiKey.ADD_PARTITIONS_TO_TXN: _O,
        ApiKey.ADD_OFFSETS_TO_TXN: _O,
        ApiKey.END_TXN: _O,
        ApiKey.WRITE_TXN_MARKERS: _O,
        ApiKey.TXN_OFFSET_COMMIT: _O,
        ApiKey.DESCRIBE_ACLS: _O,
        ApiKey.CREATE_ACLS: _O,
        ApiKey.DELETE_ACLS: _O,
        ApiKey.DESCRIBE_CONFIGS: _CF,
        ApiKey.ALTER_CONFIGS: _CF,
        ApiKey.ALTER_REPLICA_LOG_DIRS: _O,
        ApiKey.DESCRIBE_LOG_DIRS: _O,
        ApiKey.SASL_AUTHENTICATE: _O,
        ApiKey.CREATE_PARTITIONS: _T,
        ApiKey.CREATE_DELEGATION_TOKEN: _O,
        ApiKey.RENEW_DELEGATION_TOKEN: _O,
        ApiKey.EXPIRE_DELEGATION_TOKEN: _O,
        ApiKey.DESCRIBE_DELEGATION_TOKEN: _O,
        ApiKey.DELETE_GROUPS: _G,
        ApiKey.ELECT_LEADERS: _C,
        ApiKey.INCREMENTAL_ALTER_CONFIGS: _CF,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS: _C,
        ApiKey.LIST_PARTITION_REASSIGNMENTS: _C,
        ApiKey.OFFSET_DELETE: _O,
        ApiKey.DESCRIBE_CLIENT_QUOTAS: _O,
        ApiKey.ALTER_CLIENT_QUOTAS: _O,
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _O,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _C,
        ApiKey.ALTER_PARTITION: _C,
        ApiKey.UPDATE_FEATURES: _C,
        ApiKey.ENVELOPE: _O,
        ApiKey.DESCRIBE_CLUSTER: _O,
        ApiKey.DESCRIBE_PRODUCERS: _O,
        ApiKey.BROKER_REGISTRATION: _C,
        ApiKey.BROKER_HEARTBEAT: _C,
        ApiKey.DESCRIBE_TRANSACTIONS: _O,
        ApiKey.LIST_TRANSACTIONS: _O,
        ApiKey.ALLOCATE_PRODUCER_IDS: _C,
        ApiKey.CONSUMER_GROUP_HEARTBEAT: _O,
        ApiKey.CONSUMER_GROUP_DESCRIBE: _O,
    }
)


def family_of(api_key: int) -> Family:
    """The family of `api_key`; an error for a key without one (never a silent default)."""
    return FAMILIES[ApiKey(api_key)]


def family(api_key: int) -> str:
    """The API family name used in logs: topic_admin, controller, configs, groups, metadata,
    other."""
    return family_of(api_key).value


def error_for(api_key: int, exc: ZkConnectionError) -> int:
    """The error code answered for `exc` raised while handling a request of `api_key`."""
    kind = family_of(api_key)
    if kind in (Family.TOPIC_ADMIN, Family.CONTROLLER):
        # An expired session made the controller resign (`ControllerElector.session_lost`):
        # clients look the controller up again. A lost connection leaves the write's outcome
        # unknown: REQUEST_TIMED_OUT claims neither success nor failure.
        if isinstance(exc, SessionExpiredError):
            return error_codes.NOT_CONTROLLER
        return error_codes.REQUEST_TIMED_OUT
    if kind is Family.GROUPS:
        # As GroupMetadataManager answers when the group's storage is not reachable in time.
        return error_codes.COORDINATOR_NOT_AVAILABLE
    if kind is Family.METADATA:
        # What Kafka answers for a topic whose auto-creation did not complete.
        return error_codes.LEADER_NOT_AVAILABLE
    return error_codes.REQUEST_TIMED_OUT
