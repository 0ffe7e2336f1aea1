"""kazoo's exceptions translated into ``zkbroker.zk_layout.errors`` (``NoNodeError``,
``NodeExistsError``, ``BadVersionError``, ``NotEmptyError``, ``ZkConnectionError``,
``SessionExpiredError``, ``ZkOperationError``), keeping the kazoo exception as the cause.

Deliberately not here: raising, retrying or logging; exceptions that are not kazoo's pass through.
"""

from __future__ import annotations

from kazoo import exceptions as kazoo_exc
from kazoo.handlers.threading import KazooTimeoutError

from zkbroker.zk_layout.errors import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
    ZkConnectionError,
    ZkLayoutError,
    ZkOperationError,
)


def classify(exc: BaseException) -> tuple[type[ZkOperationError], str] | None:
    """zk_layout class and a short reason for a kazoo exception; None for anything else."""
    if not isinstance(exc, kazoo_exc.KazooException | KazooTimeoutError):
        return None
    if isinstance(exc, kazoo_exc.NoNodeError):
        return NoNodeError, "node does not exist"
    if isinstance(exc, kazoo_exc.NodeExistsError):
        return NodeExistsError, "node already exists"
    if isinstance(exc, kazoo_exc.BadVersionError):
        return BadVersionError, "data version does not match"
    if isinstance(exc, kazoo_exc.NotEmptyError):
        return NotEmptyError, "node has children"
    # kazoo's ConnectionClosedError subclasses its SessionExpiredError: test it first.
    if isinstance(exc, kazoo_exc.ConnectionClosedError):
        return ZkConnectionError, "the ZooKeeper client is closed"
    if isinstance(exc, kazoo_exc.SessionExpiredError):
        return SessionExpiredError, "the ZooKeeper session expired"
    if isinstance(
        exc,
        kazoo_exc.ConnectionLoss
        | kazoo_exc.OperationTimeoutError
        | kazoo_exc.ConnectionDropped
        | KazooTimeoutError,
    ):
        return ZkConnectionError, f"connection to ZooKeeper lost ({exc!r})"
    return ZkOperationError, f"{type(exc).__name__} {exc}".rstrip()


def translate(exc: BaseException, op: str, path: str | None) -> BaseException:
    """kazoo exception -> zk_layout exception (others, e.g. TypeError, pass through)."""
    classified = None if isinstance(exc, ZkLayoutError) else classify(exc)
    if classified is None:
        return exc
    cls, reason = classified
    where = f"{op} {path}" if path else op
    return cls(f"{where}: {reason}", op=op, path=path, cause=exc)
