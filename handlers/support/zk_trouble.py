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

The registry applies it to every handler (`zkbroker.handlers.registry`), so the whole request gets
the error on every item through the module's `error_response`, with a null message as
Kafka's errors of these kinds have, and one warning line (`request.zookeeper_trouble`).

Deliberately not here: retrying inside the broker (the client retries; the store never
retries a write whose outcome is unknown) and `ControllerMovedError` (each controller API
answers NOT_CONTROLLER for it itself).
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.zk_layout import SessionExpiredError, ZkConnectionError

TOPIC_ADMIN = frozenset({19, 20, 37})
CONTROLLER = frozenset({7, 43, 45, 46, 51, 56, 57, 62, 63, 67})
CONFIGS = frozenset({32, 33, 44})
GROUPS = frozenset({8, 9, 10, 15, 16, 42})
METADATA = 3


def family(api_key: int) -> str:
    """The API family name used in logs: topic_admin, controller, configs, groups, other."""
    if api_key in TOPIC_ADMIN:
        return "topic_admin"
    if api_key in CONTROLLER:
        return "controller"
    if api_key in CONFIGS:
        return "configs"
    if api_key in GROUPS:
        return "groups"
    return "metadata" if api_key == METADATA else "other"


def error_for(api_key: int, exc: ZkConnectionError) -> int:
    """The error code answered for `exc` raised while handling a request of `api_key`."""
    if api_key in TOPIC_ADMIN or api_key in CONTROLLER:
        if isinstance(exc, SessionExpiredError):
            return error_codes.NOT_CONTROLLER
        return error_codes.REQUEST_TIMED_OUT
    if api_key in GROUPS:
        return error_codes.COORDINATOR_NOT_AVAILABLE
    if api_key == METADATA:
        return error_codes.LEADER_NOT_AVAILABLE
    return error_codes.REQUEST_TIMED_OUT
