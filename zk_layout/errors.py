"""Every exception raised by ``zk_layout``, in one place.

Two families:

* ``ZnodeFormatError``: the bytes of a znode do not match any format version its class reads.
  Decoders raise only this (never ``KeyError``/``json.JSONDecodeError``/``ValueError`` leaking from
  the parsing), so a caller can catch one type and decide what Kafka would do (usually: log and
  ignore the node, or treat it as absent).
* ``ZkOperationError`` and subclasses: a ZooKeeper request made through ``zkbroker.zk_layout.store``
  failed. The subclasses that mirror kazoo's (``NoNodeError``, ``NodeExistsError``,
  ``BadVersionError``, ``NotEmptyError``) also inherit from the kazoo class of the same name, so
  code that catches kazoo's exceptions keeps working; they add the operation, the path and, for a
  multi, which op failed.

Plus the Kafka-level conditions the store detects: ``ControllerMovedError`` (a fenced multi's
epoch check failed) and ``BrokerIdInUseError`` (another session owns ``/brokers/ids/<id>``).

This module does not decide *what to do* about an error (retry, resign, ignore); callers do.
"""

from __future__ import annotations

from typing import Any

from kazoo import exceptions as kazoo_exc


class ZkLayoutError(Exception):
    """Base class of everything this package raises on purpose."""


class ZnodeFormatError(ZkLayoutError, ValueError):
    """A znode's data could not be decoded.

    ``where`` names the node (a path, or a path pattern such as ``/brokers/ids/<id>`` when the
    decoder does not know the concrete path); ``reason`` says what was wrong.
    """

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"invalid data in znode {where}: {reason}")
        self.where = where
        self.reason = reason


class ZkOperationError(ZkLayoutError):
    """A ZooKeeper request failed.

    ``op`` is the operation name (``"get"``, ``"create"``, ``"multi"`` ...), ``path`` the path it
    addressed (None for a whole multi), ``cause`` the kazoo exception it came from. For a failed
    multi, ``op_index`` is the 0-based index of the op that failed and ``results`` the raw
    per-op results kazoo returned (exception instances).
    """

    def __init__(
        self,
        message: str,
        *,
        op: str,
        path: str | None = None,
        cause: BaseException | None = None,
        op_index: int | None = None,
        results: tuple[Any, ...] | None = None,
    ) -> None:
        super().__init__(message)
        self.op = op
        self.path = path
        self.cause = cause
        self.op_index = op_index
        self.results = results


# The kazoo base classes carry a class-level ``code``; inheriting them keeps isinstance checks
# written against kazoo working for callers that mix raw kazoo use with the store.
class NoNodeError(ZkOperationError, kazoo_exc.NoNodeError):
    """The node (or, for a create, its parent) does not exist."""


class NodeExistsError(ZkOperationError, kazoo_exc.NodeExistsError):
    """The node to create already exists."""


class BadVersionError(ZkOperationError, kazoo_exc.BadVersionError):
    """A conditional set/delete/check found a different data version."""


class NotEmptyError(ZkOperationError, kazoo_exc.NotEmptyError):
    """A delete found children under the node."""


class InvalidPathError(ZkLayoutError, ValueError):
    """ZooKeeper's client would refuse the path before sending anything (``PathUtils``'s
    rules: ``zkbroker.zk_layout.paths``); nothing was read or written. ``path`` is the path."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class ZkConnectionError(ZkOperationError):
    """The request did not complete because the connection or the session is gone
    (connection loss, session expiry, client closed). Its outcome on the server is unknown."""


class SessionExpiredError(ZkConnectionError):
    """The ZooKeeper session expired: every ephemeral node of this session is gone."""


class ControllerMovedError(ZkLayoutError):
    """A fenced multi failed its ``check /controller_epoch`` op: another controller was elected
    since this one read the epoch (Kafka's ControllerMovedException). The caller must resign."""

    def __init__(self, expected_epoch_zk_version: int, detail: str = "") -> None:
        msg = (
            "controller moved: /controller_epoch no longer has the expected zk version "
            f"{expected_epoch_zk_version}"
        )
        super().__init__(f"{msg} ({detail})" if detail else msg)
        self.expected_epoch_zk_version = expected_epoch_zk_version


class BrokerIdInUseError(ZkLayoutError):
    """``/brokers/ids/<id>`` exists and belongs to another ZooKeeper session."""

    def __init__(self, broker_id: int, path: str, owner_session: int | None = None) -> None:
        owner = f" (owner session 0x{owner_session:x})" if owner_session else ""
        super().__init__(
            f"broker id {broker_id} is already registered in ZooKeeper at {path}"
            f"{owner} (by another process?)"
        )
        self.broker_id = broker_id
        self.path = path
        self.owner_session = owner_session
