"""ZooKeeper trouble inside a handler, answered with the retriable error each API family gives
(issue 17, finding 6).

A ZooKeeper request that fails because the connection dropped (`ZkConnectionError`: the
outcome on the server is unknown) or the session expired (`SessionExpiredError`) used to
reach the listener as an unexpected exception: a `request.failed` traceback and
UNKNOWN_SERVER_ERROR, which clients treat as fatal. Kafka's ZooKeeper-mode broker answers
such requests with errors clients retry; `error_for(api_key, exc)` picks, per API family:

- topic admin (CreateTopics, DeleteTopics, CreatePartitions) and the controller's APIs
  (ElectLeaders, Alter/ListPartitionReassignments, BrokerRegistration, BrokerHeartbeat,
  ControlledShutdown, AlterPartition, UpdateFeatures, AllocateProducerIds,
  AlterUserScramCredentials): a
  lost connection is REQUEST_TIMED_OUT (what Kafka answers when the work did not complete in
  time; it claims neither success nor failure, and the write may have happened); an
  expired session is NOT_CONTROLLER (the controller resigns on expiry, `ControllerElector.
  session_lost`; clients look the controller up again and retry there);
- configs (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs): REQUEST_TIMED_OUT;
- groups (FindCoordinator, ListGroups, DescribeGroups, OffsetFetch, OffsetCommit,
  DeleteGroups): COORDINATOR_NOT_AVAILABLE, as Kafka's GroupMetadataManager answers when the
  group's storage cannot be written or read in time (it maps REQUEST_TIMED_OUT and
  NOT_ENOUGH_REPLICAS of the offsets topic so); clients look the coordinator up again;
- Metadata: LEADER_NOT_AVAILABLE on the topics asked for (what Kafka answers for a topic
  whose auto-creation did not complete); other APIs: REQUEST_TIMED_OUT.

`FAMILIES` writes out the family of every key of the generated `ApiKey` table (a test fails
when one is missing, and the registry refuses a handler whose key has none).

The registry applies it to every handler (`zkbroker.handlers.registry`), so the whole request gets
the error on every item through the module's `error_response`, with a null message as
Kafka's errors of these kinds have, and one warning line (`request.zookeeper_trouble`).

Deliberately not here: retrying inside the broker (the client retries; the store never
retries a write whose outcome is unknown) and `ControllerMovedError` (each controller API
answers NOT_CONTROLLER for it itself).
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
        if isinstance(exc, SessionExpiredError):
            return error_codes.NOT_CONTROLLER
        return error_codes.REQUEST_TIMED_OUT
    if kind is Family.GROUPS:
        return error_codes.COORDINATOR_NOT_AVAILABLE
    if kind is Family.METADATA:
        return error_codes.LEADER_NOT_AVAILABLE
    return error_codes.REQUEST_TIMED_OUT
