"""ZooKeeper trouble inside a handler, answered with the retriable error of the API's family.

A lost connection (`ZkConnectionError`: outcome unknown) or an expired session
(`SessionExpiredError`) is answered with an error clients retry, as Kafka's ZooKeeper-mode
broker does, not UNKNOWN_SERVER_ERROR: `error_for(family, exc)` picks it per family (topic
admin and controller APIs: REQUEST_TIMED_OUT, NOT_CONTROLLER for an expired session; groups:
COORDINATOR_NOT_AVAILABLE; Metadata: LEADER_NOT_AVAILABLE; others: REQUEST_TIMED_OUT). Each
API module declares its own `Family` (`ZK_TROUBLE_FAMILY`, zkbroker's choice, never defaulted);
the registry (`zkbroker.handlers.registry`) refuses a module without one and applies it around
the module's handler.

Not here: which API is in which family (each API module), retrying inside the broker (the
client retries; the store never retries a write whose outcome is unknown),
`ControllerMovedError` (each controller API answers NOT_CONTROLLER itself).
"""

from __future__ import annotations

from enum import Enum

from zkbroker.broker.protocol import error_codes
from zkbroker.zk_layout import SessionExpiredError, ZkConnectionError


class Family(Enum):
    """An API family; the value is the name used in logs."""

    TOPIC_ADMIN = "topic_admin"
    CONTROLLER = "controller"
    CONFIGS = "configs"
    GROUPS = "groups"
    METADATA = "metadata"
    OTHER = "other"


def error_for(family: Family, exc: ZkConnectionError) -> int:
    """The error code answered for `exc` raised while handling a request of `family`."""
    if family in (Family.TOPIC_ADMIN, Family.CONTROLLER):
        # An expired session made the controller resign (`ControllerElector.session_lost`):
        # clients look the controller up again. A lost connection leaves the write's outcome
        # unknown: REQUEST_TIMED_OUT claims neither success nor failure.
        if isinstance(exc, SessionExpiredError):
            return error_codes.NOT_CONTROLLER
        return error_codes.REQUEST_TIMED_OUT
    if family is Family.GROUPS:
        # As GroupMetadataManager answers when the group's storage is not reachable in time.
        return error_codes.COORDINATOR_NOT_AVAILABLE
    if family is Family.METADATA:
        # What Kafka answers for a topic whose auto-creation did not complete.
        return error_codes.LEADER_NOT_AVAILABLE
    return error_codes.REQUEST_TIMED_OUT
