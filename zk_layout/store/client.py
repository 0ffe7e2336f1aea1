"""The store's session: ``ZkClient``, an asyncio-facing ZooKeeper client over one ``kazoo``
client (Kafka's ``ZooKeeperClient``): connect and close (creating the chroot first, as Kafka
does), plain reads and writes, transactions, watches and session-state listeners, composed from
the modules beside it: ``kazoo_bridge`` (kazoo's threads and the event loop), ``kazoo_errors``,
``request_size`` (``jute.maxbuffer``), ``auth`` (digest/SASL, ``ZkAuth``), ``transactions``
(multis, controller-fenced) and ``watches``. Kafka's recipes on it are ``kafka_zk`` (``ZkStore``)
and ``admin_zk``. Null data: Kafka's containers and markers have *null* data (``create(...,
data=None)``, ``ensure_path``, ``makepath`` parents); reads return ``b""`` for it. Every znode
created gets ``ZkData.defaultAcls`` of its path (``zkbroker.zk_layout.nodes.secure_paths``).

Deliberately not here: retries (a ``ZkConnectionError`` is surfaced; whether the write happened is
unknown, as in ZooKeeper), re-registration after session expiry (the broker listens with
``add_session_listener``), and anything that knows Kafka's layout beyond default ACLs.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Self, TypeVar

from kazoo import exceptions as kazoo_exc
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import GetChildren, GetData, Transaction
from kazoo.protocol.states import KazooState
from kazoo.protocol.states import ZnodeStat as _KazooZnodeStat
from kazoo.security import ACL

from zkbroker.zk_layout.errors import NodeExistsError, NoNodeError, NotEmptyError, ZkConnectionError
from zkbroker.zk_layout.nodes.base import ZNode
from zkbroker.zk_layout.nodes.secure_paths import default_acls
from zkbroker.zk_layout.store.auth import ZkAuth, ZkAuthError, check_may_write
from zkbroker.zk_layout.store.kazoo_bridge import KazooBridge
from zkbroker.zk_layout.store.request_size import (
    DEFAULT_MAX_BUFFER_BYTES,
    check_request_size,
)
from zkbroker.zk_layout.store.transactions import TxOp, ZkTransaction, multi_requests
from zkbroker.zk_layout.store.watches import (
    ChildrenCallback,
    ChildrenWatch,
    DataCallback,
    DataWatch,
    ExistsCallback,
    ExistsWatch,
    Watch,
    WatchSet,
)

__all__ = ["SessionCallback", "SessionState", "ZkClient", "ZnodeStat"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: kazoo's stat namedtuple (czxid, mzxid, ctime, mtime, version, cversion, aversion,
#: ephemeralOwner, dataLength, numChildren, pzxid).
ZnodeStat = _KazooZnodeStat


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


def _split_chroot(hosts: str) -> tuple[str, str]:
    servers, sep, chroot = hosts.partition("/")
    if not sep:
        return servers, ""
    chroot = "/" + chroot.strip("/")
    return servers, "" if chroot == "/" else chroot


def _parent(path: str) -> str:
    parent = path.rsplit("/", 1)[0]
    return parent or "/"


class _KazooLog(logging.LoggerAdapter):
    """kazoo's logger for one of zkbroker's sessions. Once zkbroker stops the session on
    purpose, what kazoo may warn of on the way out (the socket the server already closed,
    its connection retry giving up) is expected: logged at debug, so a quiet library stays
    quiet. Until then kazoo's warnings pass unchanged."""

    def __init__(self) -> None:
        super().__init__(logging.getLogger("kazoo.client"), {})
        self.stopping = threading.Event()

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        if level >= logging.WARNING and self.stopping.is_set():
            level = logging.DEBUG
        super().log(level, msg, *args, **kwargs)


def _new_kazoo(hosts: str, session: float, auth: ZkAuth | None) -> KazooClient:
    return KazooClient(
        hosts=hosts,
        timeout=session,
        handler=SequentialThreadingHandler(),
        logger=_KazooLog(),
        **(auth.kazoo_options if auth else {}),
    )


def _ensure_chroot_blocking(
    servers: str, chroot: str, timeout: float, session: float, auth: ZkAuth | None
) -> None:
    """Create the chroot (null data, parents too) from a chroot-less session, as Kafka does
    before connecting inside it, with the ACLs of each path. Runs in an executor thread."""
    client = _new_kazoo(servers, session, auth)
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
        _stop_kazoo(client)


def _start_kazoo(client: KazooClient, timeout: float) -> bool:
    """`KazooClient.start`, telling whether the chroot exists (kazoo asks anyway, to warn
    about a missing one; here a missing one is created next, so there is nothing to warn of)."""
    event = client.start_async()
    event.wait(timeout=timeout)
    if not client.connected:
        _stop_kazoo(client)
        raise client.handler.timeout_exception("Connection time-out")
    return not client.chroot or client.exists("/") is not None


def _stop_kazoo(client: KazooClient) -> None:
    if isinstance(client.logger, _KazooLog):
        client.logger.stopping.set()
    client.stop()
    client.close()


def _data_and_stat(value: Any) -> tuple[bytes, Any]:
    return (value[0] or b"", value[1])


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
        self._bridge = KazooBridge(client, loop)
        self._watches = WatchSet(self._bridge)
        self._session_callbacks: list[SessionCallback] = []
        self._session_lock = threading.Lock()
        self._last_session_id: int | None = self.session_id
        self._closed = False
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
            client = _new_kazoo(servers + chroot, session_timeout, auth)
            # Only a missing chroot costs the chroot-less session that creates it: every
            # session of a cluster but the first finds it, and saves that session.
            if not await asyncio.to_thread(_start_kazoo, client, timeout):
                try:
                    await asyncio.to_thread(
                        _ensure_chroot_blocking, servers, chroot, timeout, session_timeout, auth
                    )
                except BaseException:
                    await asyncio.to_thread(_stop_kazoo, client)
                    raise
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
        """Refuse a session that could not write the cluster's znodes (``auth``)."""

        def get_acls(path: str) -> asyncio.Future[Any]:
            return self._bridge.future(self._client.get_acls_async(path), "get_acls", path)

        await check_may_write(get_acls, self._auth, hosts)

    def acls_for(self, path: str) -> list[ACL]:
        """The ACLs a znode created at ``path`` gets (Kafka's ``ZkData.defaultAcls``)."""
        return default_acls(self.secure_acls, path)

    async def close(self) -> None:
        """Stop watches and listeners, close the session (its ephemerals vanish at once)."""
        if self._closed:
            return
        self._closed = True
        self._bridge.stop()  # what is queued goes out before kazoo's close request
        for w in list(self._watches):
            w.cancel()
        with self._session_lock:
            self._session_callbacks.clear()
        self._client.remove_listener(self._on_kazoo_state)
        await asyncio.to_thread(self._stop_client)

    def _stop_client(self) -> None:
        _stop_kazoo(self._client)

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

    def _full_path(self, path: str) -> str:
        chroot = self._client.chroot or ""
        if path == "/":
            return chroot or "/"
        return chroot + path

    def _check_size(
        self, op: str, path: str | None, ops: Sequence[tuple[str, bytes | None]]
    ) -> None:
        check_request_size(op, path, ops, self.max_buffer_bytes)

    async def _multi(self, ops: list[TxOp]) -> list[Any]:
        self._check_size(
            "multi",
            max(ops, key=lambda o: len(o.data or b"")).path if ops else None,
            [(self._full_path(op.path), op.data) for op in ops],
        )
        requests = multi_requests(ops, self._full_path, self.acls_for)
        # kazoo's request tuples directly (instead of tx.create) allow null data; `submit`
        # coalesces the wake-ups of the many multis a burst of topic creations sends.
        result = self._client.handler.async_result()
        self._bridge.submit([(Transaction(requests), result)])
        return list(await self._bridge.future(result, "multi", None))

    # --- plain operations -------------------------------------------------------------------

    async def get(self, path: str) -> tuple[bytes, Any] | None:
        """Data and stat, or None if the node does not exist (null data reads as ``b""``)."""
        try:
            data, stat = await self._bridge.future(self._client.get_async(path), "get", path)
        except NoNodeError:
            return None
        return (data or b"", stat)

    async def get_children(self, path: str) -> list[str] | None:
        try:
            children = await self._bridge.future(
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
        return await self._bridge.many(
            paths, lambda i: GetData(_prefix_root(chroot, paths[i]), None), _data_and_stat, "get"
        )

    async def get_children_many(self, paths: Sequence[str]) -> list[list[str] | None]:
        """``get_children`` of every path, as ``get_many`` does it."""
        chroot = self._client.chroot
        return await self._bridge.many(
            paths, lambda i: GetChildren(_prefix_root(chroot, paths[i]), None), list, "get_children"
        )

    async def get_many_and_watch(
        self, paths: Sequence[str], callbacks: Sequence[DataCallback]
    ) -> tuple[list[tuple[bytes, Any] | None], list[Watch]]:
        """``get_many`` that also leaves a data watch (as ``watch_data``) on each path, armed by
        the read itself: ``callbacks[i]`` is called on later changes only, not for the data
        returned here. Saves the watch's own first read when loading many nodes."""
        watches: list[Watch] = [
            DataWatch(self._watches, p, cb) for p, cb in zip(paths, callbacks, strict=True)
        ]
        chroot = self._client.chroot
        results = await self._bridge.many(
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

    async def exists(self, path: str) -> Any:
        """The node's ``ZnodeStat`` or None."""
        return await self._bridge.future(self._client.exists_async(path), "exists", path)

    async def _create_raw(
        self, path: str, data: bytes | None, ephemeral: bool, sequence: bool
    ) -> str:
        self._check_size("create", path, [(self._full_path(path), data)])
        ar = self._client.create_async(
            path, data, acl=self.acls_for(path), ephemeral=ephemeral, sequence=sequence
        )
        return str(await self._bridge.future(ar, "create", path))

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
        return await self._bridge.future(self._client.set_async(path, data, version), "set", path)

    async def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        """Delete a node. Non-recursive: ``NoNodeError`` if absent, ``NotEmptyError`` if it has
        children. Recursive: children first (concurrently), an absent node is fine, ``version``
        applies to ``path`` itself; children created meanwhile are retried a few times."""
        if not recursive:
            await self._bridge.future(self._client.delete_async(path, version), "delete", path)
            return
        for attempt in range(5):
            children = await self.get_children(path)
            if children is None:
                return
            base = path.rstrip("/")
            await asyncio.gather(*(self.delete(f"{base}/{c}", recursive=True) for c in children))
            try:
                await self._bridge.future(self._client.delete_async(path, version), "delete", path)
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
        self._watches.arm_batched(watch)
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
        return await self._start_watch(ChildrenWatch(self._watches, path, callback))

    async def watch_data(self, path: str, callback: DataCallback) -> Watch:
        """Like ``watch_children`` for the node itself: ``callback(data, stat)`` on creation,
        every data change and deletion; ``(None, None)`` while the node does not exist."""
        return await self._start_watch(DataWatch(self._watches, path, callback))

    async def watch_exists(self, path: str, callback: ExistsCallback) -> Watch:
        """``callback(stat_or_None)`` on creation, deletion and data change of ``path``
        (without reading the data)."""
        return await self._start_watch(ExistsWatch(self._watches, path, callback))

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
                self._bridge.call_on_loop(self._deliver_state, (callback, st))

    def _deliver_state(self, callback: SessionCallback, state: SessionState) -> None:
        with self._session_lock:
            if callback not in self._session_callbacks:
                return  # removed meanwhile
        try:
            callback(state)
        except Exception:
            log.exception("session listener raised")
