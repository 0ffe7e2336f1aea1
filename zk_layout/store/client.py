"""The kazoo bridge: an asyncio-facing ZooKeeper client over one ``kazoo`` client (Kafka's
``ZooKeeperClient``). Kafka's multi-step recipes built on it are
``zkbroker.zk_layout.store.kafka_zk`` (``ZkStore``) and ``zkbroker.zk_layout.store.admin_zk``.

How it talks to kazoo. kazoo's synchronous calls block, so they are never used on the event loop.
Every request goes through kazoo's ``*_async`` API: the returned ``IAsyncResult`` gets a
``rawlink`` callback that runs on kazoo's completion thread and hands the outcome to the loop with
``loop.call_soon_threadsafe``. Nothing waits for a reply before sending the next request, so any
number of operations can be in flight at once (pipelined on the one session, answered in order).
The only thread hops are ``connect`` and ``close`` (kazoo's ``start``/``stop`` block by design),
which run in the default executor, and the waker thread that writes the wake-up bytes of
batched requests to kazoo's connection thread.

Errors are translated into ``zkbroker.zk_layout.errors`` (``NoNodeError``, ``NodeExistsError``,
``BadVersionError``, ``NotEmptyError``, ``ZkConnectionError``/``SessionExpiredError``,
``ZkOperationError``), which still inherit kazoo's classes where kazoo has one.

Null data: Kafka creates container and marker nodes with *null* data; so do ``ensure_path``,
``create(..., data=None)``, ``makepath`` parents and ``ZkStore.create_top_level_paths``.
Reads return ``b""`` for null data.

Watches are level-triggered and persistent (see ``watch_children``): after every ZooKeeper event
the store re-reads the node, re-registers the one-shot ZooKeeper watch in the same request, and
calls the callback on the event loop with the *current* state, skipping reads that show no change.
They survive the node's deletion and re-creation, connection loss (kazoo drops client-side
watches on SUSPENDED; they are re-armed on CONNECTED) and session expiry (re-armed on the new
session). A callback may therefore see several changes collapsed into one call; it must re-read
or diff, never count calls — exactly what Kafka's ZNodeChangeHandlers do.

Fairness: replies are handed to the loop in slices of a few milliseconds (`_drain`), new
watches started in one loop iteration are armed together, a slice of them per iteration
(`_arm_batched`, `_flush_arms`: 46,335 at once held the loop for a second), and the
wake-ups of kazoo's thread for batched requests and multis go out once per iteration
(`_submit`, written by a small waker thread): one wake-up per request is a GIL hand-off
each, and ten thousand of them stalled every broker of the process for seconds.

Request size: a ZooKeeper server closes the connection of a client whose request packet
exceeds its ``jute.maxbuffer`` (0xfffff bytes by default), which surfaces as a connection loss
with the outcome unknown. Writes (``create``, ``set``, multis) whose estimated packet exceeds
the ``max_buffer_bytes`` the client was connected with are refused before sending, with
``RequestTooLargeError``: nothing was written.

ACLs and authentication (Kafka's ``zookeeper.set.acl``; docs/kafka-behaviour.md §19): a client
connected with a ``ZkAuth`` sends ``addauth digest user:password`` on every (re)connection (or logs
in with SASL DIGEST-MD5, which the server checks: a refused password fails ``connect`` with
``ZkAuthError``), and every znode it creates (plain creates, multis, parents, the chroot) gets
``ZkData.defaultAcls`` of its path (``zkbroker.zk_layout.nodes.secure_paths``): creator-only for
everything when ``set_acl``, world-readable except for sensitive paths. ZooKeeper's digest provider
accepts any password (it only names the session ``digest:user:<hash>``), so ``connect`` itself
checks that the session may write ``/brokers`` when it exists and refuses with ``ZkAuthError``
otherwise: a wrong password, or no credentials for a secured cluster, fails at start instead of at
the first write.

Deliberately not here: retries (a ``ZkConnectionError`` is surfaced; whether the write happened is
unknown, as in ZooKeeper), the controller's watch/failover loop, re-registration after session
expiry (the broker package listens with ``add_session_listener`` and calls
``ZkStore.register_broker`` again), Kerberos (GSSAPI) to ZooKeeper, changing the ACLs of
existing znodes (Kafka's zookeeper-security-migration), and anything that knows Kafka's layout
beyond the controller-epoch fence and its default ACLs.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Self, TypeVar

from kazoo import exceptions as kazoo_exc
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import (
    CheckVersion,
    Create,
    Delete,
    Exists,
    GetChildren,
    GetChildren2,
    GetData,
    SetData,
    Transaction,
)
from kazoo.protocol.states import EventType, KazooState
from kazoo.protocol.states import ZnodeStat as _KazooZnodeStat
from kazoo.security import ACL, Id

from zkbroker.zk_layout.errors import (
    BadVersionError,
    ControllerMovedError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
    ZkConnectionError,
    ZkLayoutError,
    ZkOperationError,
)
from zkbroker.zk_layout.nodes.base import ZNode
from zkbroker.zk_layout.nodes.controller import ControllerEpochNode
from zkbroker.zk_layout.nodes.secure_paths import (
    OWNERSHIP_PROBE_PATH,
    default_acls,
    digest_id,
    writable_by,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

#: kazoo's stat namedtuple (czxid, mzxid, ctime, mtime, version, cversion, aversion,
#: ephemeralOwner, dataLength, numChildren, pzxid).
ZnodeStat = _KazooZnodeStat

# A callback returning ``False`` (exactly) cancels its watch, as with kazoo's recipes; any other
# return value, None included, keeps it.
ChildrenCallback = Callable[[list[str] | None], object]
DataCallback = Callable[[bytes | None, Any], object]
ExistsCallback = Callable[[Any], object]

_CONTROLLER_EPOCH_PATH: Final = ControllerEpochNode.path()
# Reads in flight per window of get_many/get_children_many.
_READ_WINDOW: Final = 5000
# Longest stretch of replies handled in one loop iteration (seconds).
_DRAIN_SLICE_S: Final = 0.005

#: ZooKeeper's default ``jute.maxbuffer`` (0xfffff): the server drops the connection of a
#: client that sends a longer request packet, and a client refuses a longer reply.
DEFAULT_MAX_BUFFER_BYTES: Final = 0xFFFFF
# Bytes of a request packet besides its ops' paths and data: length prefix, request header,
# multi header and trailer (generous).
_PACKET_OVERHEAD: Final = 64
# Bytes of one op besides its path and data: op header, string/buffer lengths, version,
# flags and the (open) ACL list (generous).
_OP_OVERHEAD: Final = 64


class RequestTooLargeError(ZkOperationError):
    """A write was not sent because its request packet would exceed the server's
    ``jute.maxbuffer`` (the server would close the connection instead of answering).
    Nothing was written. ``size`` is the estimated packet size, ``limit`` the limit."""

    def __init__(self, message: str, *, op: str, path: str | None, size: int, limit: int) -> None:
        super().__init__(message, op=op, path=path)
        self.size = size
        self.limit = limit


class ZkAuthError(ZkConnectionError):
    """The session cannot act as zkbroker must: its credentials were refused, or it may not
    write the cluster's znodes (a wrong digest password, or none for a secured cluster)."""


@dataclass(frozen=True)
class ZkAuth:
    """Credentials of zkbroker's own ZooKeeper sessions, and Kafka's ``zookeeper.set.acl``
    (whether the znodes it creates get Kafka's secure ACLs). ``scheme`` ``digest``: an
    ``addauth digest`` on each connection (identity ``digest:user:<hash>``); ``sasl``: a SASL
    DIGEST-MD5 login the server checks (identity ``sasl:user``, Kafka's way, through JAAS)."""

    user: str
    password: str = field(repr=False)
    set_acl: bool = True
    scheme: str = "digest"

    def __post_init__(self) -> None:
        if not self.user or ":" in self.user:
            raise ValueError(
                f"a ZooKeeper digest user is a non-empty name without ':', got {self.user!r}"
            )
        if self.scheme not in ("digest", "sasl"):
            raise ValueError(f"ZooKeeper authentication is digest or sasl, got {self.scheme!r}")

    @classmethod
    def parse(cls, text: str, *, set_acl: bool = True, scheme: str = "digest") -> ZkAuth:
        """``user:password`` (the password may hold ':')."""
        user, sep, password = text.partition(":")
        if not sep:
            raise ValueError("ZooKeeper digest credentials are user:password")
        return cls(user, password, set_acl, scheme)

    @property
    def kazoo_options(self) -> dict[str, Any]:
        """KazooClient keyword arguments: ``auth_data`` (sent as ``addauth`` on every
        connection) or ``sasl_options`` (pure-sasl's DIGEST-MD5)."""
        if self.scheme == "sasl":
            return {
                "sasl_options": {
                    "mechanism": "DIGEST-MD5",
                    "username": self.user,
                    "password": self.password,
                }
            }
        return {"auth_data": [("digest", f"{self.user}:{self.password}")]}

    @property
    def identity(self) -> Id:
        """The identity ZooKeeper gives the session (what ``auth`` ACLs name)."""
        if self.scheme == "sasl":
            return Id("sasl", self.user)
        return digest_id(self.user, self.password)


def request_bytes(ops: Sequence[tuple[str, bytes | None]]) -> int:
    """Estimated size of a request packet carrying ``(full path, data)`` ops (an upper bound
    of what ZooKeeper's ``jute.maxbuffer`` is compared with)."""
    return _PACKET_OVERHEAD + sum(
        _OP_OVERHEAD + len(path.encode("utf-8")) + (len(data) if data else 0) for path, data in ops
    )


class SessionState(enum.StrEnum):
    """Connection states delivered by ``ZkStore.add_session_listener``.

    The first three are kazoo's ``KazooState`` strings. ``RECONNECTED_NEW_SESSION`` follows
    ``CONNECTED`` when the connection came back on a *new* session (the old one expired): every
    ephemeral node and watch of the old session is gone, so a broker must register again.
    """

    CONNECTED = "CONNECTED"
    SUSPENDED = "SUSPENDED"
    LOST = "LOST"
    RECONNECTED_NEW_SESSION = "RECONNECTED_NEW_SESSION"


SessionCallback = Callable[[SessionState], object]


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


# --------------------------------------------------------------------------------------------
# error translation


def _classify(exc: BaseException) -> tuple[type[ZkOperationError], str] | None:
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


def _translate(exc: BaseException, op: str, path: str | None) -> BaseException:
    """kazoo exception -> zk_layout exception (others, e.g. TypeError, pass through)."""
    classified = None if isinstance(exc, ZkLayoutError) else _classify(exc)
    if classified is None:
        return exc
    cls, reason = classified
    where = f"{op} {path}" if path else op
    return cls(f"{where}: {reason}", op=op, path=path, cause=exc)


def _split_chroot(hosts: str) -> tuple[str, str]:
    servers, sep, chroot = hosts.partition("/")
    if not sep:
        return servers, ""
    chroot = "/" + chroot.strip("/")
    return servers, "" if chroot == "/" else chroot


def _parent(path: str) -> str:
    parent = path.rsplit("/", 1)[0]
    return parent or "/"


def _ensure_chroot_blocking(
    servers: str, chroot: str, timeout: float, session: float, auth: ZkAuth | None
) -> None:
    """Create the chroot (null data, parents too) from a chroot-less session, as Kafka does
    before connecting inside it, with the ACLs of each path. Runs in an executor thread."""
    client = KazooClient(
        hosts=servers,
        timeout=session,
        handler=SequentialThreadingHandler(),
        **(auth.kazoo_options if auth else {}),
    )
    client.start(timeout=timeout)
    secure = auth is not None and auth.set_acl
    try:
        prefix = ""
        for part in chroot.strip("/").split("/"):
            prefix += "/" + part
            # Looked at first: creating an existing node one may not create under
            # (a secured chroot's parents) answers NoAuth rather than NodeExists.
            if client.exists(prefix) is not None:
                continue
            with contextlib.suppress(kazoo_exc.NodeExistsError):
                client.create(prefix, None, acl=default_acls(secure, prefix))
    finally:
        client.stop()
        client.close()


# --------------------------------------------------------------------------------------------
# transactions


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

    def __init__(self, store: ZkClient, *, fence_version: int | None = None) -> None:
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
        cls, reason = _classify(cause) or (ZkOperationError, repr(cause))
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


# --------------------------------------------------------------------------------------------
# watches


class Watch:
    """Handle of a persistent watch; ``cancel()`` stops callbacks (idempotent)."""

    def __init__(self, store: ZkClient, path: str, kind: str) -> None:
        self._store = store
        self.path = path
        self.kind = kind
        self._lock = threading.Lock()
        self._cancelled = False
        self._has_token = False
        self._token: Any = None
        self._first: asyncio.Future[None] = store._loop.create_future()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
        self._store._client.remove_listener(self._on_state)
        self._store._watches.discard(self)
        if not self._first.done():
            # Whoever awaits the first delivery gets a (cancelled) handle, not a CancelledError
            # that would look like their own task being cancelled.
            self._first.set_result(None)

    # --- kazoo side (completion / connection threads) --------------------------------------

    def _start(self) -> None:
        self._store._client.add_listener(self._on_state)
        self._arm()

    def _primed(self, token: Any) -> None:
        """Armed by a read made elsewhere (``get_many_and_watch``) that returned `token`'s
        version: that version counts as delivered."""
        with self._lock:
            self._has_token = True
            self._token = token
        self._store._client.add_listener(self._on_state)
        if not self._first.done():
            self._first.set_result(None)

    def _on_state(self, state: str) -> None:
        # kazoo clears its client-side watchers when the connection drops, and a new session
        # has none: re-read and re-register after every (re)connection.
        if state == KazooState.CONNECTED:
            self._arm()

    def _on_event(self, event: Any) -> None:
        # EventType.NONE is kazoo's "watchers reset because the connection dropped" signal;
        # _on_state re-arms once reconnected.
        if event.type != EventType.NONE:
            self._arm()

    def _arm(self) -> None:
        raise NotImplementedError

    def _request(self) -> tuple[Any, Callable[[Any], None]]:
        """The kazoo request that arms this watch and the callback of its result (what
        `_arm` sends), for `ZkClient._arm_batched`."""
        raise NotImplementedError

    def _offer(self, token: Any, payload: tuple[Any, ...]) -> None:
        """Deliver ``payload`` unless ``token`` equals the last delivered one."""
        with self._lock:
            if self._cancelled or (self._has_token and token == self._token):
                return
            self._has_token = True
            self._token = token
        self._store._call_on_loop(self._dispatch, payload)

    def _failed(self, exc: BaseException) -> None:
        if isinstance(exc, kazoo_exc.ConnectionClosedError):
            return  # store closing
        if isinstance(exc, kazoo_exc.ConnectionLoss | kazoo_exc.SessionExpiredError):
            return  # re-armed by _on_state once connected again
        log.warning("watch on %s (%s) failed: %r", self.path, self.kind, exc)
        self._store._call_on_loop(self._fail_first, (exc,))

    # --- loop side --------------------------------------------------------------------------

    def _fail_first(self, exc: BaseException) -> None:
        if not self._first.done():
            self._first.set_exception(_translate(exc, f"watch {self.kind}", self.path))

    def _dispatch(self, *payload: Any) -> None:
        if self._cancelled:
            return
        try:
            keep = self._deliver(*payload)
        except Exception:
            log.exception("callback of %s watch on %s raised", self.kind, self.path)
            keep = None
        if not self._first.done():
            self._first.set_result(None)
        if keep is False:
            self.cancel()

    def _deliver(self, *payload: Any) -> Any:
        raise NotImplementedError

    # What a read-and-watch of a node that does not exist delivers (children and data watches).
    _ABSENT: tuple[Any, ...] = (None,)

    def _on_read_failed(self, exception: BaseException) -> None:
        """A children or data read failed: a missing node is watched for its creation."""
        if isinstance(exception, kazoo_exc.NoNodeError):
            self._store._client.exists_async(self.path, watch=self._on_event).rawlink(
                self._on_missing_node_exists
            )
        else:
            self._failed(exception)

    def _on_missing_node_exists(self, result: Any) -> None:
        if not result.successful():
            self._failed(result.exception)
        elif result.value is None:
            self._offer(None, self._ABSENT)
        else:
            self._arm()  # created between our two reads


class _ChildrenWatch(Watch):
    def __init__(self, store: ZkClient, path: str, callback: ChildrenCallback) -> None:
        super().__init__(store, path, "children")
        self._callback = callback

    def _arm(self) -> None:
        if self._cancelled:
            return
        client = self._store._client
        client.get_children_async(self.path, watch=self._on_event, include_data=True).rawlink(
            self._on_children
        )

    def _request(self) -> tuple[Any, Callable[[Any], None]]:
        full = _prefix_root(self._store._client.chroot, self.path)
        return GetChildren2(full, self._on_event), self._on_children

    def _on_children(self, result: Any) -> None:
        if result.successful():
            children, stat = result.value
            # pzxid moves with every child create/delete, czxid with re-creation of the node.
            self._offer((stat.czxid, stat.pzxid), (list(children),))
        else:
            self._on_read_failed(result.exception)

    def _deliver(self, *payload: Any) -> Any:
        return self._callback(payload[0])


class _DataWatch(Watch):
    _ABSENT = (None, None)

    def __init__(self, store: ZkClient, path: str, callback: DataCallback) -> None:
        super().__init__(store, path, "data")
        self._callback = callback

    def _arm(self) -> None:
        if self._cancelled:
            return
        self._store._client.get_async(self.path, watch=self._on_event).rawlink(self._on_data)

    def _request(self) -> tuple[Any, Callable[[Any], None]]:
        full = _prefix_root(self._store._client.chroot, self.path)
        return GetData(full, self._on_event), self._on_data

    def _on_data(self, result: Any) -> None:
        if result.successful():
            data, stat = result.value
            self._offer((stat.czxid, stat.mzxid), (data or b"", stat))
        else:
            self._on_read_failed(result.exception)

    def _deliver(self, *payload: Any) -> Any:
        return self._callback(payload[0], payload[1])


class _ExistsWatch(Watch):
    def __init__(self, store: ZkClient, path: str, callback: ExistsCallback) -> None:
        super().__init__(store, path, "exists")
        self._callback = callback

    def _arm(self) -> None:
        if self._cancelled:
            return
        self._store._client.exists_async(self.path, watch=self._on_event).rawlink(self._on_exists)

    def _request(self) -> tuple[Any, Callable[[Any], None]]:
        full = _prefix_root(self._store._client.chroot, self.path)
        return Exists(full, self._on_event), self._on_exists

    def _on_exists(self, result: Any) -> None:
        if not result.successful():
            self._failed(result.exception)
            return
        stat = result.value
        self._offer(None if stat is None else (stat.czxid, stat.mzxid), (stat,))

    def _deliver(self, *payload: Any) -> Any:
        return self._callback(payload[0])


# --------------------------------------------------------------------------------------------
# the store


def _data_and_stat(value: Any) -> tuple[bytes, Any]:
    return (value[0] or b"", value[1])


@dataclass
class _Window:
    """A window of batched reads sent to kazoo: (index, kazoo async result) pairs, and a
    future set on the loop once the last of them is settled."""

    pending: list[tuple[int, Any]]
    last_settled: asyncio.Future[None]


class ZkClient:
    """One ZooKeeper session, used from one asyncio event loop. Create with ``connect``."""

    def __init__(
        self,
        client: KazooClient,
        loop: asyncio.AbstractEventLoop,
        max_buffer_bytes: int = DEFAULT_MAX_BUFFER_BYTES,
        auth: ZkAuth | None = None,
    ) -> None:
        self._client = client
        self._loop = loop
        #: Whether created znodes get Kafka's secure ACLs (``zookeeper.set.acl``).
        self.secure_acls = auth is not None and auth.set_acl
        self._auth = auth
        #: The server's ``jute.maxbuffer``: writes whose request would exceed it are refused
        #: here (``RequestTooLargeError``) instead of costing the connection.
        self.max_buffer_bytes = max_buffer_bytes
        self._watches: set[Watch] = set()
        self._session_callbacks: list[SessionCallback] = []
        self._session_lock = threading.Lock()
        self._last_session_id: int | None = self.session_id
        self._closed = False
        self._pending_lock = threading.Lock()
        self._pending: collections.deque[tuple[Callable[..., None], tuple[Any, ...]]] = (
            collections.deque()
        )
        self._drain_scheduled = False
        self._arm_queue: list[Watch] = []
        self._arm_scheduled = False
        self._owed_wakeups = 0
        self._wake_lock = threading.Lock()
        self._wake_needed = threading.Event()
        self._waker = threading.Thread(target=self._wake_loop, name="zk-waker", daemon=True)
        self._waker.start()
        client.add_listener(self._on_kazoo_state)

    # --- lifecycle --------------------------------------------------------------------------

    @classmethod
    async def connect(
        cls,
        hosts: str,
        *,
        timeout: float = 10.0,
        session_timeout: float = 18.0,
        max_buffer_bytes: int = DEFAULT_MAX_BUFFER_BYTES,
        auth: ZkAuth | None = None,
    ) -> Self:
        """Connect to ``hosts`` (``"h1:2181,h2:2181[/chroot]"``).

        ``timeout`` bounds the wait for the first connection; ``session_timeout`` is the
        requested session timeout (Kafka's default ``zookeeper.session.timeout.ms`` is 18 s; the
        server clamps it to 2-20 ticks). A chroot is created first if missing, from a separate
        chroot-less session, as Kafka does. With ``auth`` the sessions authenticate with its
        digest and, when ``/brokers`` exists, ``ZkAuthError`` is raised unless they may write it.
        """
        loop = asyncio.get_running_loop()
        servers, chroot = _split_chroot(hosts)
        try:
            if chroot:
                await asyncio.to_thread(
                    _ensure_chroot_blocking, servers, chroot, timeout, session_timeout, auth
                )
            client = KazooClient(
                hosts=servers + chroot,
                timeout=session_timeout,
                handler=SequentialThreadingHandler(),
                **(auth.kazoo_options if auth else {}),
            )
            await asyncio.to_thread(client.start, timeout)
        except (kazoo_exc.AuthFailedError, kazoo_exc.NoAuthError) as exc:
            raise ZkAuthError(
                f"ZooKeeper at {hosts!r} refused zkbroker's credentials: {exc!r}",
                op="connect",
                path=chroot or None,
                cause=exc,
            ) from exc
        except (kazoo_exc.KazooException, KazooTimeoutError) as exc:
            raise ZkConnectionError(
                f"cannot connect to ZooKeeper at {hosts!r} within {timeout}s: {exc!r}",
                op="connect",
                path=chroot or None,
                cause=exc,
            ) from exc
        store = cls(client, loop, max_buffer_bytes, auth)
        try:
            await store._check_may_write(hosts)
        except BaseException:
            await store.close()
            raise
        return store

    async def _check_may_write(self, hosts: str) -> None:
        """Refuse a session that could not write the cluster's znodes: ZooKeeper's digest
        provider takes any password, so a wrong one only shows as NoAuth on the first write."""
        try:
            acls, _stat = await self._bridge(
                self._client.get_acls_async(OWNERSHIP_PROBE_PATH), "get_acls", OWNERSHIP_PROBE_PATH
            )
        except NoNodeError:
            return  # a new cluster: this session creates (and owns) it
        except ZkConnectionError:
            raise
        except ZkOperationError as e:  # NoAuth: not even readable by this session
            raise ZkAuthError(
                f"ZooKeeper at {hosts!r}: zkbroker's session may not read the ACL of "
                f"{OWNERSHIP_PROBE_PATH} ({e}); give the credentials the cluster was created "
                "with (--zookeeper-digest USER:PASSWORD)",
                op="connect",
                path=OWNERSHIP_PROBE_PATH,
            ) from e
        auth = self._auth
        identities = [auth.identity] if auth else []
        if writable_by(acls, identities):
            return
        owners = ", ".join(f"{a.id.scheme}:{a.id.id}" for a in acls if a.perms & 4) or "nobody"
        who = f"{auth.scheme} user {auth.user!r}" if auth else "a session without credentials"
        raise ZkAuthError(
            f"ZooKeeper at {hosts!r}: {OWNERSHIP_PROBE_PATH} may be written only by {owners}, "
            f"and zkbroker authenticated as {who} cannot write it; give the credentials the "
            "cluster was created with (--zookeeper-digest USER:PASSWORD)",
            op="connect",
            path=OWNERSHIP_PROBE_PATH,
        )

    def acls_for(self, path: str) -> list[ACL]:
        """The ACLs a znode created at ``path`` gets (Kafka's ``ZkData.defaultAcls``)."""
        return default_acls(self.secure_acls, path)

    async def close(self) -> None:
        """Stop watches and listeners, close the session (its ephemerals vanish at once)."""
        if self._closed:
            return
        self._closed = True
        self._write_wakeups()  # what is queued goes out before kazoo's close request
        self._wake_needed.set()  # the waker thread ends
        for w in list(self._watches):
            w.cancel()
        with self._session_lock:
            self._session_callbacks.clear()
        self._client.remove_listener(self._on_kazoo_state)
        await asyncio.to_thread(self._stop_client)

    def _stop_client(self) -> None:
        self._client.stop()
        self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def client(self) -> KazooClient:
        """The underlying kazoo client, for the rare raw use (never call its blocking API on
        the event loop)."""
        return self._client

    @property
    def session_id(self) -> int | None:
        """Current session id, None while not connected (changes after an expiry)."""
        client_id = self._client.client_id
        return None if client_id is None else int(client_id[0])

    @property
    def connected(self) -> bool:
        return bool(self._client.connected)

    @property
    def chroot(self) -> str:
        return str(self._client.chroot or "")

    # --- bridging ---------------------------------------------------------------------------

    def _call_on_loop(self, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        """Run ``fn(*args)`` on the loop, in call order. Calls arriving while a drain is already
        scheduled join it, so a burst of replies costs one loop wake-up, not one each."""
        with self._pending_lock:
            self._pending.append((fn, args))
            if self._drain_scheduled:
                return
            self._drain_scheduled = True
        # A closed loop raises RuntimeError: nobody is listening any more.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._pending_lock:
            batch = self._pending
            self._pending = collections.deque()
            self._drain_scheduled = False
        # At most a slice of work per loop iteration: thousands of replies (and the watch
        # callbacks they run) must not hold the loop; the rest runs on the next iteration,
        # still before anything that arrived later.
        deadline = time.perf_counter() + _DRAIN_SLICE_S
        count = 0
        while batch:
            fn, args = batch.popleft()
            try:
                fn(*args)
            except Exception:  # pragma: no cover - the functions queued here do not raise
                log.exception("callback on the event loop raised")
            count += 1
            if count % 64 == 0 and batch and time.perf_counter() >= deadline:
                with self._pending_lock:
                    batch.extend(self._pending)
                    self._pending = batch
                    if self._drain_scheduled:
                        return
                    self._drain_scheduled = True
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon(self._drain)
                return

    def _bridge(self, async_result: Any, op: str, path: str | None) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = self._loop.create_future()

        def resolve(ok: bool, value: Any) -> None:
            if fut.done():
                return  # cancelled by the awaiting side
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(_translate(value, op, path))

        def on_done(result: Any) -> None:
            if result.successful():
                self._call_on_loop(resolve, (True, result.value))
            else:
                self._call_on_loop(resolve, (False, result.exception))

        async_result.rawlink(on_done)
        return fut

    def _full_path(self, path: str) -> str:
        chroot = self._client.chroot or ""
        if path == "/":
            return chroot or "/"
        return chroot + path

    def _check_size(
        self, op: str, path: str | None, ops: Sequence[tuple[str, bytes | None]]
    ) -> None:
        size = request_bytes(ops)
        if size > self.max_buffer_bytes:
            where = f"{op} {path}" if path else op
            raise RequestTooLargeError(
                f"{where}: a request of about {size} bytes exceeds ZooKeeper's jute.maxbuffer "
                f"of {self.max_buffer_bytes} bytes; nothing was written",
                op=op,
                path=path,
                size=size,
                limit=self.max_buffer_bytes,
            )

    async def _multi(self, ops: list[TxOp]) -> list[Any]:
        self._check_size(
            "multi",
            max(ops, key=lambda o: len(o.data or b"")).path if ops else None,
            [(self._full_path(op.path), op.data) for op in ops],
        )
        requests: list[Any] = []
        for op in ops:
            full = self._full_path(op.path)
            if op.kind == "create":
                flags = (1 if op.ephemeral else 0) | (2 if op.sequence else 0)
                requests.append(Create(full, op.data, self.acls_for(op.path), flags))
            elif op.kind == "set":
                requests.append(SetData(full, op.data, op.version))
            elif op.kind == "delete":
                requests.append(Delete(full, op.version))
            elif op.kind == "check":
                requests.append(CheckVersion(full, op.version))
            else:  # pragma: no cover - TxOp is built by ZkTransaction only
                raise ValueError(f"unknown op {op.kind}")
        # kazoo's request tuples directly (instead of tx.create) allow null data; `_submit`
        # coalesces the wake-ups of the many multis a burst of topic creations sends.
        result = self._client.handler.async_result()
        self._submit([(Transaction(requests), result)])
        return list(await self._bridge(result, "multi", None))

    # --- plain operations -------------------------------------------------------------------

    async def get(self, path: str) -> tuple[bytes, Any] | None:
        """Data and stat, or None if the node does not exist (null data reads as ``b""``)."""
        try:
            data, stat = await self._bridge(self._client.get_async(path), "get", path)
        except NoNodeError:
            return None
        return (data or b"", stat)

    async def get_children(self, path: str) -> list[str] | None:
        try:
            children = await self._bridge(
                self._client.get_children_async(path), "get_children", path
            )
        except NoNodeError:
            return None
        return list(children)

    async def get_many(self, paths: Sequence[str]) -> list[tuple[bytes, Any] | None]:
        """``get`` of every path, pipelined, results in order (None where a node is absent).

        Unlike a gather of ``get`` calls this costs no task or future per read: replies are
        collected on kazoo's side and the loop is woken once per window. For loading
        thousands of nodes (a controller's failover)."""

        chroot = self._client.chroot
        return await self._many(
            paths, lambda i: GetData(_prefix_root(chroot, paths[i]), None), _data_and_stat, "get"
        )

    async def get_children_many(self, paths: Sequence[str]) -> list[list[str] | None]:
        """``get_children`` of every path, as ``get_many`` does it."""
        chroot = self._client.chroot
        return await self._many(
            paths, lambda i: GetChildren(_prefix_root(chroot, paths[i]), None), list, "get_children"
        )

    async def get_many_and_watch(
        self, paths: Sequence[str], callbacks: Sequence[DataCallback]
    ) -> tuple[list[tuple[bytes, Any] | None], list[Watch]]:
        """``get_many`` that also leaves a data watch (as ``watch_data``) on each path, armed by
        the read itself: ``callbacks[i]`` is called on later changes only, not for the data
        returned here. Saves the watch's own first read when loading many nodes."""
        watches: list[Watch] = [
            _DataWatch(self, p, cb) for p, cb in zip(paths, callbacks, strict=True)
        ]
        chroot = self._client.chroot
        results = await self._many(
            paths,
            lambda i: GetData(_prefix_root(chroot, paths[i]), watches[i]._on_event),
            _data_and_stat,
            "get",
        )
        for watch, result in zip(watches, results, strict=True):
            self._watches.add(watch)
            if result is None:
                watch._start()  # absent: ZooKeeper set no watch; watch its creation instead
            else:
                watch._primed((result[1].czxid, result[1].mzxid))
        return results, watches

    async def _many(
        self,
        paths: Sequence[str],
        request: Callable[[int], Any],
        convert: Callable[[Any], T],
        op: str,
    ) -> list[T | None]:
        results: list[T | None] = [None] * len(paths)
        # Windows keep kazoo's queue (and the memory of its pending results) bounded and let
        # the loop breathe; two in flight keep ZooKeeper's pipeline full across a boundary.
        in_flight: collections.deque[_Window] = collections.deque()
        for start in range(0, len(paths), _READ_WINDOW):
            window = range(start, min(start + _READ_WINDOW, len(paths)))
            in_flight.append(self._send_window(window, request))
            if len(in_flight) >= 2:
                await self._collect_window(in_flight.popleft(), paths, convert, op, results)
        while in_flight:
            await self._collect_window(in_flight.popleft(), paths, convert, op, results)
        return results

    def _send_window(self, window: range, request: Callable[[int], Any]) -> _Window:
        pending = [(index, self._client.handler.async_result()) for index in window]
        batch = [(request(i), r) for i, r in pending]
        # ZooKeeper answers a session's requests in order, and kazoo settles them in order
        # (connection loss fails them in order too): once the last one is settled, all are.
        # One completion callback per window instead of one per read.
        last_settled = self._settled(pending[-1][1])
        self._submit(batch)
        return _Window(pending, last_settled)

    async def _collect_window(
        self,
        window: _Window,
        paths: Sequence[str],
        convert: Callable[[Any], T],
        op: str,
        results: list[T | None],
    ) -> None:
        await window.last_settled
        failure: tuple[int, BaseException] | None = None
        for index, async_result in window.pending:
            if not async_result.ready():  # not expected; never trade correctness for it
                await self._settled(async_result)
            if async_result.successful():
                results[index] = convert(async_result.value)
            elif not isinstance(async_result.exception, kazoo_exc.NoNodeError):
                failure = failure or (index, async_result.exception)
        if failure is not None:
            raise _translate(failure[1], op, paths[failure[0]])

    def _settled(self, async_result: Any) -> asyncio.Future[None]:
        """A loop future done once kazoo has settled `async_result` (success or failure)."""
        settled: asyncio.Future[None] = self._loop.create_future()

        def settle() -> None:
            if not settled.done():
                settled.set_result(None)

        async_result.rawlink(lambda _: self._call_on_loop(settle, ()))
        return settled

    def _arm_batched(self, watch: Watch) -> None:
        """Arm a new watch with the others started in the same loop iteration, in one
        `_submit`: creating 10,000 topics starts tens of thousands of watches, and one
        wake-up of kazoo's thread each (a GIL hand-off) stalled the loop for seconds."""
        self._arm_queue.append(watch)
        if not self._arm_scheduled:
            self._arm_scheduled = True
            self._loop.call_soon(self._flush_arms)

    def _flush_arms(self) -> None:
        self._arm_scheduled = False
        watches, self._arm_queue = self._arm_queue, []
        handler = self._client.handler
        batch: list[tuple[Any, Any]] = []
        # A slice of work per loop iteration, as `_drain` does: the watches left over go
        # first in the next flush, ahead of any started later.
        deadline = time.perf_counter() + _DRAIN_SLICE_S
        for index, watch in enumerate(watches):
            if index % 64 == 63 and time.perf_counter() >= deadline:
                self._arm_queue = watches[index:] + self._arm_queue
                if not self._arm_scheduled:
                    self._arm_scheduled = True
                    self._loop.call_soon(self._flush_arms)
                break
            if watch.cancelled:
                continue
            request, on_done = watch._request()
            result = handler.async_result()
            result.rawlink(on_done)
            batch.append((request, result))
        for start in range(0, len(batch), _READ_WINDOW):
            self._submit(batch[start : start + _READ_WINDOW])

    def _submit(self, batch: list[tuple[Any, Any]]) -> None:
        """Hand kazoo a batch of requests with ONE wake-up of its connection thread.

        kazoo's own ``_call`` writes a wake-up byte per request, and each write hands the GIL
        to the connection thread and back: at controller-failover scale that hand-off, not
        ZooKeeper, is the cost. The connection thread sends one queued request per byte it
        reads, so queueing the batch and writing as many bytes at once is equivalent. This
        uses kazoo internals (``_queue``, ``_connection._write_sock``; stable through the
        2.x series pinned in pyproject); when they are missing or the session is not
        connected, each request goes through ``_call`` as usual. The bytes are written by
        the waker thread (`_wake_loop`), off the loop."""
        client = self._client
        write_sock = getattr(getattr(client, "_connection", None), "_write_sock", None)
        queue = getattr(client, "_queue", None)
        if write_sock is None or queue is None or client.state != KazooState.CONNECTED:
            for request, async_result in batch:
                client._call(request, async_result)
            return
        queue.extend(batch)
        # The requests are queued already, in order with everything else kazoo sends; the
        # wake-up bytes are written by the waker thread, so the loop never waits for the GIL
        # hand-off a socket write costs while kazoo's threads are busy.
        with self._wake_lock:
            self._owed_wakeups += len(batch)
        self._wake_needed.set()

    def _wake_loop(self) -> None:
        """The waker thread: writes the wake-up bytes `_submit` owes kazoo's thread."""
        while True:
            self._wake_needed.wait()
            self._wake_needed.clear()
            self._write_wakeups()
            if self._closed:
                return

    def _write_wakeups(self) -> None:
        """Write the wake-up bytes owed so far (every queued request needs its byte, or kazoo
        never sends it nor anything queued after it, its close request included)."""
        with self._wake_lock:
            owed, self._owed_wakeups = self._owed_wakeups, 0
        connection = getattr(self._client, "_connection", None)
        write_sock = getattr(connection, "_write_sock", None)
        if owed and write_sock is not None:
            # Closed under us: kazoo fails whatever is still queued when it stops.
            with contextlib.suppress(OSError):
                write_sock.sendall(b"\0" * owed)

    async def exists(self, path: str) -> Any:
        """The node's ``ZnodeStat`` or None."""
        return await self._bridge(self._client.exists_async(path), "exists", path)

    async def _create_raw(
        self, path: str, data: bytes | None, ephemeral: bool, sequence: bool
    ) -> str:
        self._check_size("create", path, [(self._full_path(path), data)])
        ar = self._client.create_async(
            path, data, acl=self.acls_for(path), ephemeral=ephemeral, sequence=sequence
        )
        return str(await self._bridge(ar, "create", path))

    async def create(
        self,
        path: str,
        data: bytes | None = b"",
        *,
        ephemeral: bool = False,
        sequence: bool = False,
        makepath: bool = False,
    ) -> str:
        """Create a node and return its path (with the counter for a sequential node).

        ``data=None`` gives null data. ``makepath`` creates missing parents with null data
        (Kafka's ``createRecursive``).
        """
        try:
            return await self._create_raw(path, data, ephemeral, sequence)
        except NoNodeError:
            if not makepath:
                raise
        await self.ensure_path(_parent(path))
        return await self._create_raw(path, data, ephemeral, sequence)

    async def set(self, path: str, data: bytes, version: int = -1) -> Any:
        """Set data (conditionally on ``version`` unless -1); returns the new ``ZnodeStat``."""
        self._check_size("set", path, [(self._full_path(path), data)])
        return await self._bridge(self._client.set_async(path, data, version), "set", path)

    async def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        """Delete a node. Non-recursive: ``NoNodeError`` if absent, ``NotEmptyError`` if it has
        children. Recursive: children first (concurrently), an absent node is fine, ``version``
        applies to ``path`` itself; children created meanwhile are retried a few times."""
        if not recursive:
            await self._bridge(self._client.delete_async(path, version), "delete", path)
            return
        for attempt in range(5):
            children = await self.get_children(path)
            if children is None:
                return
            base = path.rstrip("/")
            await asyncio.gather(*(self.delete(f"{base}/{c}", recursive=True) for c in children))
            try:
                await self._bridge(self._client.delete_async(path, version), "delete", path)
                return
            except NoNodeError:
                return
            except NotEmptyError:
                if attempt == 4:
                    raise

    async def ensure_path(self, path: str) -> None:
        """Create ``path`` and missing parents with null data; existing nodes are fine."""
        if path in ("", "/"):
            return
        try:
            await self._create_raw(path, None, False, False)
            return
        except NodeExistsError:
            return
        except NoNodeError:
            pass
        await self.ensure_path(_parent(path))
        with contextlib.suppress(NodeExistsError):
            await self._create_raw(path, None, False, False)

    # --- typed helpers ----------------------------------------------------------------------

    async def read(self, node: type[ZNode[T]], *path_args: Any) -> tuple[T, Any] | None:
        """Read ``node.path(*path_args)`` and decode it: ``(value, stat)`` or None if absent.
        Raises ``ZnodeFormatError`` (naming the concrete path) for undecodable data."""
        got = await self.get(node.path(*path_args))
        if got is None:
            return None
        data, stat = got
        return node.decode_at(data, *path_args), stat

    # --- transactions -----------------------------------------------------------------------

    def transaction(self) -> ZkTransaction:
        return ZkTransaction(self)

    def fenced(self, controller_epoch_zk_version: int) -> ZkTransaction:
        """A transaction whose first op is ``check /controller_epoch <version>`` (Kafka's
        ``wrapRequestWithControllerEpochCheck``); its failure raises ``ControllerMovedError``."""
        return ZkTransaction(self, fence_version=controller_epoch_zk_version)

    # --- watches ----------------------------------------------------------------------------

    async def _start_watch(self, watch: Watch) -> Watch:
        if self._closed:
            raise ZkConnectionError("store is closed", op=f"watch {watch.kind}", path=watch.path)
        self._watches.add(watch)
        self._client.add_listener(watch._on_state)
        self._arm_batched(watch)
        try:
            await watch._first
        except BaseException:
            watch.cancel()
            raise
        return watch

    async def watch_children(self, path: str, callback: ChildrenCallback) -> Watch:
        """Call ``callback(children)`` on the event loop now and whenever the children of
        ``path`` may have changed; ``children`` is None while the node does not exist.

        Returns once the first callback has run. Calls carry the current state (several changes
        may collapse into one call; a call whose read shows no change is skipped). Callbacks are
        plain functions, run in order for this watch; order across different watches is not
        defined. An exception in the callback is logged and the watch goes on.
        """
        return await self._start_watch(_ChildrenWatch(self, path, callback))

    async def watch_data(self, path: str, callback: DataCallback) -> Watch:
        """Like ``watch_children`` for the node itself: ``callback(data, stat)`` on creation,
        every data change and deletion; ``(None, None)`` while the node does not exist."""
        return await self._start_watch(_DataWatch(self, path, callback))

    async def watch_exists(self, path: str, callback: ExistsCallback) -> Watch:
        """``callback(stat_or_None)`` on creation, deletion and data change of ``path``
        (without reading the data)."""
        return await self._start_watch(_ExistsWatch(self, path, callback))

    def add_session_listener(self, callback: SessionCallback) -> Callable[[], None]:
        """Deliver connection-state changes to ``callback(state)`` on the event loop, in order:
        CONNECTED, SUSPENDED (connection lost, session may survive), LOST (session expired:
        ephemerals and watches gone; kazoo goes on reconnecting with a new session) and, right
        after the CONNECTED of such a new session, RECONNECTED_NEW_SESSION. Closing the store
        delivers nothing. Returns a function that removes the listener."""
        with self._session_lock:
            self._session_callbacks.append(callback)

        def remove() -> None:
            with self._session_lock, contextlib.suppress(ValueError):
                self._session_callbacks.remove(callback)

        return remove

    def _on_kazoo_state(self, state: str) -> None:
        # kazoo's connection thread; must not block.
        states = [SessionState(state)]
        if state == KazooState.CONNECTED:
            session = self.session_id
            if self._last_session_id is not None and session != self._last_session_id:
                states.append(SessionState.RECONNECTED_NEW_SESSION)
            self._last_session_id = session
        with self._session_lock:
            callbacks = list(self._session_callbacks)
        for callback in callbacks:
            for st in states:
                self._call_on_loop(self._deliver_state, (callback, st))

    def _deliver_state(self, callback: SessionCallback, state: SessionState) -> None:
        with self._session_lock:
            if callback not in self._session_callbacks:
                return  # removed meanwhile
        try:
            callback(state)
        except Exception:
            log.exception("session listener raised")

    # --- Kafka recipes ----------------------------------------------------------------------
