"""ZooKeeper multis: ``ZkTransaction`` builds one, ``commit`` sends it once (all or nothing),
and a failed multi names the op that failed (ZooKeeper answers RolledBack for the ops before it,
RuntimeInconsistency after). A fenced transaction starts with ``check /controller_epoch
<version>`` (Kafka's ``wrapRequestWithControllerEpochCheck``), whose failure is
``ControllerMovedError``. ``multi_requests`` turns the ops into kazoo's request tuples.

Deliberately not here: sending (the store's ``_multi``: size check, ACLs, kazoo), retries, and
which writes Kafka groups into one multi (``kafka_zk``, ``admin_zk``, the controller).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from kazoo import exceptions as kazoo_exc
from kazoo.protocol.serialization import CheckVersion, Create, Delete, SetData
from kazoo.security import ACL

from zkbroker.zk_layout.errors import ControllerMovedError, ZkOperationError
from zkbroker.zk_layout.nodes.controller import ControllerEpochNode
from zkbroker.zk_layout.store.kazoo_errors import classify

_CONTROLLER_EPOCH_PATH: Final = ControllerEpochNode.path()


@dataclass(frozen=True)
class TxOp:
    """One operation of a multi, as the caller described it."""

    kind: Literal["create", "set", "delete", "check"]
    path: str
    data: bytes | None = None
    version: int = -1
    ephemeral: bool = False
    sequence: bool = False

    def describe(self) -> str:
        if self.kind == "create":
            flags = [
                f for f, on in (("ephemeral", self.ephemeral), ("sequential", self.sequence)) if on
            ]
            return f"create {self.path}" + (f" ({', '.join(flags)})" if flags else "")
        if self.kind == "check":
            return f"check {self.path} version {self.version}"
        return f"{self.kind} {self.path}" + (
            f" version {self.version}" if self.version >= 0 else ""
        )


class MultiSender(Protocol):
    """What a transaction is committed through (``ZkClient``)."""

    async def _multi(self, ops: list[TxOp]) -> list[Any]: ...


class ZkTransaction:
    """A ZooKeeper multi being built. Methods chain; ``await commit()`` sends it once.

    On success ``commit`` returns one result per op the caller added: the created path for a
    create, the new ``ZnodeStat`` for a set, ``True`` for delete/check. If any op fails nothing is
    applied and the mapped exception (``NodeExistsError``, ``NoNodeError``, ``BadVersionError``,
    ``NotEmptyError`` or ``ZkOperationError``) names the failing op; ``op_index`` is its index
    among the caller's ops.

    A fenced transaction (``ZkStore.fenced``) silently starts with
    ``check /controller_epoch <version>``; if that check fails the commit raises
    ``ControllerMovedError`` instead (a missing ``/controller_epoch`` counts as moved too).
    """

    def __init__(self, store: MultiSender, *, fence_version: int | None = None) -> None:
        self._store = store
        self._fence_version = fence_version
        self._ops: list[TxOp] = []
        self._committed = False

    @property
    def ops(self) -> tuple[TxOp, ...]:
        return tuple(self._ops)

    def __len__(self) -> int:
        return len(self._ops)

    def _add(self, op: TxOp) -> ZkTransaction:
        if self._committed:
            raise RuntimeError("transaction already committed")
        self._ops.append(op)
        return self

    def create(
        self,
        path: str,
        data: bytes | None = b"",
        *,
        ephemeral: bool = False,
        sequence: bool = False,
    ) -> ZkTransaction:
        """``data=None`` creates the node with null data (Kafka's containers and markers)."""
        return self._add(TxOp("create", path, data, ephemeral=ephemeral, sequence=sequence))

    def set(self, path: str, data: bytes, version: int = -1) -> ZkTransaction:
        return self._add(TxOp("set", path, data, version))

    def delete(self, path: str, version: int = -1) -> ZkTransaction:
        return self._add(TxOp("delete", path, version=version))

    def check(self, path: str, version: int) -> ZkTransaction:
        return self._add(TxOp("check", path, version=version))

    async def commit(self) -> list[Any]:
        if self._committed:
            raise RuntimeError("transaction already committed")
        self._committed = True
        ops = list(self._ops)
        offset = 0
        if self._fence_version is not None:
            ops.insert(0, TxOp("check", _CONTROLLER_EPOCH_PATH, version=self._fence_version))
            offset = 1
        results = await self._store._multi(ops)
        failed = _failed_index(results)
        if failed is None:
            return list(results[offset:])
        cause = results[failed]
        if offset and failed == 0:
            raise ControllerMovedError(
                self._fence_version if self._fence_version is not None else -1,
                f"check of {_CONTROLLER_EPOCH_PATH} failed with {type(cause).__name__}",
            )
        op = ops[failed]
        index = failed - offset
        cls, reason = classify(cause) or (ZkOperationError, repr(cause))
        raise cls(
            f"multi op #{index} ({op.describe()}) failed: {reason}; "
            "the whole transaction was rolled back",
            op="multi",
            path=op.path,
            cause=cause,
            op_index=index,
            results=tuple(results),
        )


def _failed_index(results: list[Any]) -> int | None:
    """Index of the op that failed a multi, or None if it succeeded.

    ZooKeeper answers a failed multi with an error per op: RolledBackError (code 0) for ops
    before the culprit, RuntimeInconsistency for ops after it, the real error for the culprit.
    """
    first_error = None
    for i, r in enumerate(results):
        if isinstance(r, Exception):
            if first_error is None:
                first_error = i
            if not isinstance(r, kazoo_exc.RolledBackError | kazoo_exc.RuntimeInconsistency):
                return i
    return first_error


def multi_requests(
    ops: list[TxOp], full_path: Callable[[str], str], acls_for: Callable[[str], list[ACL]]
) -> list[Any]:
    """kazoo's request tuples of ``ops`` (built directly instead of through kazoo's
    ``Transaction.create``, which refuses null data)."""
    requests: list[Any] = []
    for op in ops:
        full = full_path(op.path)
        if op.kind == "create":
            flags = (1 if op.ephemeral else 0) | (2 if op.sequence else 0)
            requests.append(Create(full, op.data, acls_for(op.path), flags))
        elif op.kind == "set":
            requests.append(SetData(full, op.data, op.version))
        elif op.kind == "delete":
            requests.append(Delete(full, op.version))
        elif op.kind == "check":
            requests.append(CheckVersion(full, op.version))
        else:  # pragma: no cover - TxOp is built by ZkTransaction only
            raise ValueError(f"unknown op {op.kind}")
    return requests
