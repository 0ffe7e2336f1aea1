"""One broker's TCP listener: accepts connections, admits them, and owns them until they close.

It applies the admission limits (docs/kafka-behaviour.md §0, "Connection limits"; README
"Limits"), runs TLS handshakes and the first SASL exchange (`zkbroker.broker.server.authenticator`;
README "Security"), then hands the connection to `zkbroker.broker.server.connection`; one task
per connection waits for its end, and idle expiry and excess connections close it from here.
Connections are accepted in the listening socket's reader callback, and a plain connection is
started from its protocol's `connection_made`, so its first request is read without waiting
for a task.

Not here: bytes into frames and the memory rules (`zkbroker.broker.server.frame_protocol`), the
request loop and KIP-368 re-authentication (`zkbroker.broker.server.connection`), turning a frame
into an answer (`zkbroker.broker.server.request_pipeline`), the admission rules as pure code
(`zkbroker.broker.server.admission`), connection creation rate limits (KIP-612).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import itertools
import logging
import socket
import ssl
import time
from typing import Any

import structlog

from zkbroker.broker.asyncutil import cancel_and_wait, wait_for
from zkbroker.broker.log import get_logger
from zkbroker.broker.rules.broker_config import BrokerConfig
from zkbroker.broker.rules.request_description import connection_id as kafka_connection_id
from zkbroker.broker.rules.request_description import processor_of
from zkbroker.broker.security.listener_config import ListenerSecurity
from zkbroker.broker.security.principal_mapping import NoMatchingRule, rfc2253
from zkbroker.broker.security.quotas import ip_connection_throttle_ms
from zkbroker.broker.server.admission import (
    UNPOOLED_REQUEST_BYTES,
    AdmissionLimits,
    ConnectionQuotas,
    IdleConnections,
    ReportThrottle,
    RequestMemoryPool,
    RequestRead,
    idle_close_reason,
    normalize_ip,
)
from zkbroker.broker.server.authenticator import (
    AuthenticationClosed,
    CredentialsOf,
    SaslAuthenticator,
    Session,
)
from zkbroker.broker.server.connection import Connection
from zkbroker.broker.server.frame_protocol import FrameProtocol, RequestMemory
from zkbroker.broker.server.hooks import HookChain
from zkbroker.broker.server.request_pipeline import RequestPipeline
from zkbroker.handlers.context import BrokerView, ConnectionInfo
from zkbroker.handlers.registry import ApiTable
from zkbroker.zk_layout import DEFAULT_ENTITY

_stdlib_log = logging.getLogger(__name__)

# asyncio's start_server backlog.
LISTEN_BACKLOG = 100
# Accept failures that mean "out of resources": back off instead of spinning on them.
_RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
# Failures of one pending connection (it went away before it was accepted): try the next one.
_TRANSIENT_ERRNOS = frozenset(
    {errno.ECONNABORTED, errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR, errno.EPROTO, errno.EPERM}
)
ACCEPT_BACKOFF_S = (0.05, 1.0)
ACCEPT_ERROR_LOG_INTERVAL_S = 10.0
REJECTION_LOG_INTERVAL_S = 1.0
# How long a TLS handshake may take (asyncio's default is 60 s; Kafka has no separate bound,
# its idle expiry applies).
TLS_HANDSHAKE_TIMEOUT_S = 10.0
ANONYMOUS = "User:ANONYMOUS"
# How often limits are re-read and idle connections looked for, at most.
HOUSEKEEPING_MAX_INTERVAL_S = 1.0


class BrokerServer:
    """The listener of one broker. `start()` binds; `stop()` closes it and every connection."""

    def __init__(
        self,
        broker: BrokerView,
        api_table: ApiTable,
        host: str,
        port: int,
        *,
        max_request_bytes: int,
        listener_name: str,
        hooks: HookChain | None = None,
        security: ListenerSecurity | None = None,
        ssl_context: ssl.SSLContext | None = None,
        credentials: CredentialsOf | None = None,
    ) -> None:
        self._security = security
        self._ssl_context = ssl_context
        self._credentials = credentials
        self._broker = broker
        self._api_table = api_table
        self._host = host
        self._requested_port = port
        self._max_request_bytes = max_request_bytes
        self._listener_name = listener_name
        self._sockets: list[socket.socket] = []
        self._background: list[asyncio.Task[None]] = []
        self._connections: set[asyncio.Task[None]] = set()
        # connection id -> its task, for closing idle or excess connections
        self._by_id: dict[str, asyncio.Task[None]] = {}
        self._close_reasons: dict[str, str] = {}
        # connection id -> the request it is reading, for the reason of an idle close
        self._reading: dict[str, RequestRead] = {}
        self._ids = itertools.count(1)
        self._admitted = 0  # connections admitted so far: Kafka's Acceptor round robin
        self._log = get_logger(__name__).bind(broker_id=broker.broker_id)
        self._pipeline = RequestPipeline(
            broker,
            api_table,
            hooks if hooks is not None else HookChain(),
            self._log,
            _stdlib_log,
        )
        self.port = port
        self._limits_version = -1
        self.limits = AdmissionLimits()
        self._quotas = ConnectionQuotas(self.limits)
        self._idle = IdleConnections(self.limits.connections_max_idle_ms)
        self._memory = RequestMemory(RequestMemoryPool(-1))
        # accepting, waiting_for_slot, backing_off (after an accept error) or stopped
        self._accept_state = "stopped"
        self._backoff = ACCEPT_BACKOFF_S[0]
        self._retry_accept: asyncio.TimerHandle | None = None
        self._accept_errors = ReportThrottle(ACCEPT_ERROR_LOG_INTERVAL_S)
        self._rejections = ReportThrottle(REJECTION_LOG_INTERVAL_S)
        # connection id -> seconds its next read waits (client quotas, KIP-219 muting)
        self._mutes = self._pipeline.mutes
        self._resolving: asyncio.Task[None] | None = None

    async def start(self) -> int:
        self._refresh_limits(initial=True)
        if self._resolving is not None:  # static overrides naming hosts apply from the start
            await self._resolving
        # Static configs: read once, as Kafka's SocketServer does.
        self._idle = IdleConnections(self.limits.connections_max_idle_ms)
        self._memory = RequestMemory(
            RequestMemoryPool(self.limits.queued_max_request_bytes, UNPOOLED_REQUEST_BYTES)
        )
        self._sockets = await _bind(self._host, self._requested_port)
        self.port = self._sockets[0].getsockname()[1]
        loop = asyncio.get_running_loop()
        self._start_accepting()
        self._background.append(loop.create_task(self._housekeeping()))
        self._log.info(
            "listener.started",
            host=self._host,
            port=self.port,
            max_connections=self.limits.max_connections,
            max_connections_per_ip=self.limits.max_connections_per_ip,
            connections_max_idle_ms=self.limits.connections_max_idle_ms,
            queued_max_request_bytes=self.limits.queued_max_request_bytes,
        )
        return self.port

    async def stop(self) -> None:
        self._stop_accepting("stopped")
        if self._retry_accept is not None:
            self._retry_accept.cancel()
            self._retry_accept = None
        background, self._background = self._background, []
        if self._resolving is not None:
            background.append(self._resolving)
            self._resolving = None
        # Each wait is bounded (`cancel_and_wait`: a task that does not end is logged and left
        # behind) and the caller's own cancellation is raised; the sockets are closed and the
        # connections cancelled whatever happens.
        try:
            await cancel_and_wait(background, what="listener", log=self._log)
        finally:
            sockets, self._sockets = self._sockets, []
            for sock in sockets:
                sock.close()
            connections = list(self._connections)
            for task in connections:
                task.cancel()
        await cancel_and_wait(connections, what="connections", log=self._log)
        self._log.info("listener.stopped", port=self.port)

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    @property
    def idle_connections(self) -> int:
        """Open connections with no request being handled."""
        return len(self._idle)

    @property
    def queued_request_bytes(self) -> int:
        """Bytes of requests being read, as counted against queued.max.request.bytes."""
        pool = self._memory.pool
        return pool.capacity - pool.available if pool.bounded else 0

    # ---- admission ---------------------------------------------------------------------

    def _refresh_limits(self, initial: bool = False) -> None:
        """Re-read the limits when the image's broker configs changed (Kafka applies dynamic
        max.connections* to new connections; the idle timeout and the memory pool are static
        and read at start only)."""
        broker = self._broker
        image = broker.image
        version = image.broker_configs_version
        if version == self._limits_version:
            return
        self._limits_version = version
        settings = broker.settings
        static = dict(settings.broker_configs)
        static.setdefault("queued.max.request.bytes", str(settings.queued_max_request_bytes))
        overrides = image.broker_configs
        config = BrokerConfig.build(
            broker.broker_id,
            settings.kafka_version,
            static,
            overrides.get(DEFAULT_ENTITY, {}),
            overrides.get(str(broker.broker_id), {}),
        )
        limits = AdmissionLimits.from_config(
            config.configured,
            self._listener_name,
            queued_default=settings.queued_max_request_bytes,
            on_invalid=lambda name, why: self._log.warning(
                "listener.config_ignored", config=name, reason=why
            ),
        )
        if limits == self.limits and not initial:
            return
        if not initial:
            self._log.info(
                "listener.reconfigured",
                max_connections=limits.max_connections,
                max_connections_per_ip=limits.max_connections_per_ip,
                max_connections_per_ip_overrides=dict(limits.per_ip_overrides),
            )
        self.limits = limits
        per_ip = limits.per_ip_overrides
        addresses = {normalize_ip(h): n for h, n in per_ip.items() if _is_ip(h)}
        self._quotas.update(limits, addresses)
        if self._resolving is not None:
            self._resolving.cancel()
            self._resolving = None
        names = {h: n for h, n in per_ip.items() if not _is_ip(h)}
        if names:
            self._resolving = asyncio.get_running_loop().create_task(
                self._resolve_overrides(limits, addresses, names)
            )
        self._resume_if_slot()

    async def _resolve_overrides(
        self, limits: AdmissionLimits, addresses: dict[str, int], names: dict[str, int]
    ) -> None:
        """Overrides may name hosts (Kafka: InetAddress.getByName): they are resolved without
        holding the event loop, and every address a name resolves to gets its count."""
        loop = asyncio.get_running_loop()
        resolved = dict(addresses)
        for host, count in names.items():
            try:
                infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
            except OSError as e:
                self._log.warning("listener.override_unresolved", host=host, error=str(e))
                continue
            for info in infos:  # an address given as such wins over a name's
                resolved.setdefault(normalize_ip(str(info[4][0])), count)
        if self.limits is limits:
            self._quotas.update(limits, resolved)

    # ---- accepting ---------------------------------------------------------------------
    # Our own accepting rather than asyncio's server, so that it can stop at max.connections
    # and back off (logged once per interval) on resource errors. Connections are accepted in
    # the listening socket's reader callback, with no task per accept.

    def _start_accepting(self) -> None:
        loop = asyncio.get_running_loop()
        for sock in self._sockets:
            loop.add_reader(sock.fileno(), self._accept_ready, sock)
        self._accept_state = "accepting"

    def _stop_accepting(self, state: str) -> None:
        if self._accept_state == "accepting":
            loop = asyncio.get_running_loop()
            for sock in self._sockets:
                loop.remove_reader(sock.fileno())
        self._accept_state = state

    def _accept_ready(self, sock: socket.socket) -> None:
        """Accept what is pending (at most a backlog's worth per turn of the loop)."""
        for _ in range(LISTEN_BACKLOG):
            if not self._quotas.slot_available():
                self._wait_for_slot()
                return
            try:
                conn, address = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in _TRANSIENT_ERRNOS:
                    continue
                self._accept_failed(e)
                return
            self._backoff = ACCEPT_BACKOFF_S[0]
            try:
                conn.setblocking(False)
                self._admit(conn, address)
            except Exception:  # never let one connection stop accepting
                conn.close()
                self._log.exception("listener.admit_failed")

    def _wait_for_slot(self) -> None:
        """Kafka's waitForConnectionSlot: stop accepting while at max.connections."""
        self._stop_accepting("waiting_for_slot")
        self._log.info(
            "listener.accept_paused",
            reason="max.connections reached",
            max_connections=self.limits.max_connections,
            open_connections=self._quotas.total,
        )

    def _resume_if_slot(self) -> None:
        """Accept again once a connection slot is free (a connection closed, or
        max.connections was raised)."""
        if self._accept_state == "waiting_for_slot" and self._quotas.slot_available():
            self._log.info("listener.accept_resumed", open_connections=self._quotas.total)
            self._start_accepting()

    def _accept_failed(self, e: OSError) -> None:
        """Out of file descriptors (or another failure of the listening socket): the pending
        connection stays in the backlog, so accepting again at once would spin. Stop for a
        backoff that doubles up to its maximum."""
        loop = asyncio.get_running_loop()
        if self._accept_errors.failed(loop.time()):
            self._log.warning(
                "listener.accept_failed",
                error=f"{errno.errorcode.get(e.errno or 0, e.errno)}: {e.strerror}",
                out_of_resources=e.errno in _RESOURCE_ERRNOS,
                not_logged_since_last=self._accept_errors.take_suppressed(),
                retry_in_s=self._backoff,
                log_interval_s=ACCEPT_ERROR_LOG_INTERVAL_S,
            )
        self._stop_accepting("backing_off")
        self._retry_accept = loop.call_later(self._backoff, self._accept_again)
        self._backoff = min(self._backoff * 2, ACCEPT_BACKOFF_S[1])

    def _accept_again(self) -> None:
        self._retry_accept = None
        if self._accept_state != "backing_off":
            return
        if self._quotas.slot_available():
            self._start_accepting()
        else:
            self._wait_for_slot()

    def _admit(self, conn: socket.socket, address: Any) -> None:
        self._refresh_limits()
        ip = normalize_ip(str(address[0])) if address else "?"
        throttle_ms = ip_connection_throttle_ms(self._broker, ip)
        if throttle_ms > 0:
            # KIP-612: over the ip's connection_creation_rate the connection is held unserved
            # and closed after the throttle time (Kafka's Acceptor DelayedCloseSocket).
            asyncio.get_running_loop().call_later(throttle_ms / 1000, conn.close)
            self._log.info("connection.throttled", peer_ip=ip, throttle_ms=throttle_ms)
            return
        refused = self._quotas.admit(ip)
        if refused is not None:
            # Kafka: TooManyConnectionsException, logged at INFO, socket closed at once.
            conn.close()
            if self._rejections.failed(time.monotonic()):
                self._log.info(
                    "connection.rejected",
                    peer_ip=ip,
                    reason=refused.message,
                    not_logged_since_last=self._rejections.take_suppressed(),
                )
            return
        peer = f"{address[0]}:{address[1]}" if address else "?"
        connection_id = f"{self._broker.broker_id}-{next(self._ids)}"
        kafka_names = self._kafka_names(conn)
        task = asyncio.get_running_loop().create_task(
            self._serve_socket(conn, connection_id, ip, peer, kafka_names)
        )
        self._connections.add(task)
        self._by_id[connection_id] = task
        self._idle.touch(connection_id, asyncio.get_running_loop().time())

    def _closed(self, connection_id: str, ip: str) -> None:
        task = self._by_id.pop(connection_id, None)
        if task is not None:
            self._connections.discard(task)
        self._close_reasons.pop(connection_id, None)
        self._reading.pop(connection_id, None)
        self._idle.remove(connection_id)
        self._quotas.release(ip)
        self._resume_if_slot()

    def _close(self, connection_id: str, reason: str) -> None:
        """Close an idle connection (its task waits for a request, nothing is in flight)."""
        task = self._by_id.get(connection_id)
        if task is not None and not task.done():
            self._close_reasons[connection_id] = reason
            task.cancel()

    async def _housekeeping(self) -> None:
        """Kafka's per-poll chores: idle expiry, excess connections, dynamic limits."""
        loop = asyncio.get_running_loop()
        idle = self._idle
        interval = HOUSEKEEPING_MAX_INTERVAL_S
        if idle.enabled:
            interval = min(interval, max(0.01, idle.max_idle_s / 10))
        while True:
            await asyncio.sleep(interval)
            try:
                self._housekeep(loop.time())
            except Exception:  # logged; the next round tries again
                self._log.exception("listener.housekeeping_failed")

    def _housekeep(self, now: float) -> None:
        """One round: re-read the limits, close expired idle and excess connections."""
        idle = self._idle
        self._refresh_limits()
        max_idle_ms = self.limits.connections_max_idle_ms
        for connection_id in list(idle.expired(now)):
            reading = self._reading.get(connection_id)
            reason = idle_close_reason(reading, max_idle_ms)
            if reading is not None and reading.size > 0:
                # A request held unfinished (or unread): logged, since it held buffered bytes
                # or a share of queued.max.request.bytes until now.
                self._log.info(
                    "connection.closing",
                    connection_id=connection_id,
                    reason=reason,
                    config="connections.max.idle.ms",
                    request_bytes=reading.size,
                    received_bytes=reading.received,
                )
            self._close(connection_id, reason)
        excess = self._quotas.excess()
        while excess > 0:
            oldest = idle.oldest()
            if oldest is None:
                break  # every connection has a request in flight: next round
            idle.remove(oldest)
            self._log.info(
                "connection.closing",
                connection_id=oldest,
                reason="max.connections lowered below the open connections: "
                "closing the least recently used",
                max_connections=self.limits.max_connections,
            )
            self._close(oldest, "max.connections exceeded (least recently used)")
            excess -= 1

    # ---- one connection ----------------------------------------------------------------

    def _kafka_names(self, sock: socket.socket) -> tuple[int, str]:
        """The processor and connection id Kafka would give this admitted connection (what
        ClusterAuthorizationException prints; `zkbroker.broker.rules.request_description`)."""
        accepted = self._admitted
        self._admitted += 1
        try:
            settings = self._broker.settings
            names = [name for name, _, _ in settings.listeners]
            index = names.index(self._listener_name) if self._listener_name in names else 0
            threads = int(self._broker.broker_config.value("num.network.threads") or "3")
            slot = processor_of(accepted, index, threads)
            local, remote = sock.getsockname(), sock.getpeername()
        except (AttributeError, ValueError, OSError):  # a bare test broker, a socket gone
            return 0, ""
        ident = kafka_connection_id(
            settings.kafka_version, (local[0], local[1]), (remote[0], remote[1]), slot.index
        )
        return slot.processor, ident

    async def _serve_socket(
        self,
        sock: socket.socket,
        connection_id: str,
        ip: str,
        peer: str,
        kafka_names: tuple[int, str] = (0, ""),
    ) -> None:
        reading = self._reading[connection_id] = RequestRead()
        protocol = FrameProtocol(connection_id, self._memory, self._idle, reading)
        try:
            if self._ssl_context is not None:
                principal = await self._open_tls(sock, protocol, connection_id, peer)
                if principal is None:
                    return
                await self._serve(protocol, connection_id, peer, principal, kafka_names)
            else:
                await self._serve(protocol, connection_id, peer, ANONYMOUS, kafka_names, sock)
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        finally:
            self._closed(connection_id, ip)

    async def _open_tls(
        self, sock: socket.socket, protocol: FrameProtocol, connection_id: str, peer: str
    ) -> str | None:
        """The TLS handshake of an accepted socket (asyncio's SSL protocol: the loop keeps
        serving others meanwhile) and the principal of its client certificate; None when the
        handshake failed (logged, socket closed)."""
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.connect_accepted_socket(
                lambda: protocol,
                sock,
                ssl=self._ssl_context,
                ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S,
            )
        except (ssl.SSLError, ConnectionError, OSError, TimeoutError) as e:
            sock.close()
            self._log.info(
                "connection.closing",
                connection_id=connection_id,
                peer=peer,
                reason=f"SSL handshake failed: {e}",
            )
            return None
        principal = ANONYMOUS
        ssl_object = transport.get_extra_info("ssl_object")
        cert = ssl_object.getpeercert() if ssl_object is not None else None
        if cert:
            dn = rfc2253(cert.get("subject", ()))
            mapper = self._security.principal_mapper if self._security is not None else None
            try:
                principal = f"User:{mapper.name(dn) if mapper is not None else dn}"
            except NoMatchingRule as e:
                self._log.info(
                    "connection.closing",
                    connection_id=connection_id,
                    peer=peer,
                    reason=f"SSL authentication failed: {e}",
                )
                transport.close()
                return None
        return principal

    async def _serve(
        self,
        protocol: FrameProtocol,
        connection_id: str,
        peer: str,
        principal: str = ANONYMOUS,
        kafka_names: tuple[int, str] = (0, ""),
        sock: socket.socket | None = None,
    ) -> None:
        """Serve a connection until it ends. `sock`, a plain socket not yet attached to
        `protocol`, is attached once the connection is ready, and the protocol starts it from
        `connection_made`: its first request is then read in the callback that brings it."""
        conn = self._connection_info(connection_id, peer, principal, kafka_names)
        log = self._log.bind(connection_id=conn.connection_id, peer=peer)
        if principal != ANONYMOUS:  # a client certificate's (SSL); SASL binds its own below
            log = log.bind(principal=principal)
        log.debug("connection.opened")
        session: Session | None = None
        authenticator: SaslAuthenticator | None = None
        connection: Connection | None = None
        reason = "closed by client"
        try:
            security = self._security
            if security is not None and security.sasl:
                if sock is not None:  # the SASL exchange reads the first frames
                    await self._attach(protocol, sock)
                    sock = None
                authenticator = SaslAuthenticator(
                    security, self._credentials, self._broker, self._api_table, conn, protocol, log
                )
                try:
                    session = await authenticator.authenticate()
                except AuthenticationClosed as e:
                    reason = e.reason
                    log.info("connection.closing", reason=f"SASL authentication: {reason}")
                    return
                log = self._authenticated(conn, session, log)
            connection = self._new_connection(protocol, conn, log, session, authenticator)
            if sock is not None:
                protocol.on_made = connection.start
                await self._attach(protocol, sock)
            else:
                connection.start()
            reason = await connection.finished
        except (ConnectionError, OSError) as e:
            reason = f"socket error: {e}"
        except asyncio.CancelledError:
            reason = self._close_reasons.pop(connection_id, "broker stopping")
        finally:
            if connection is not None:
                connection.close()
            self._mutes.pop(connection_id, None)
            protocol.close()
            if protocol.transport is not None:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await wait_for(asyncio.shield(protocol.lost), 1.0)
            log.debug("connection.closed", reason=reason)

    def _connection_info(
        self, connection_id: str, peer: str, principal: str, kafka_names: tuple[int, str]
    ) -> ConnectionInfo:
        """What the handlers see of the connection (`kafka_names`: Kafka's processor and
        connection id)."""
        return ConnectionInfo(
            connection_id=connection_id,
            peer=peer,
            listener_name=self._listener_name,
            principal=principal,
            processor=kafka_names[0],
            kafka_connection_id=kafka_names[1],
        )

    def _authenticated(
        self, conn: ConnectionInfo, session: Session, log: structlog.stdlib.BoundLogger
    ) -> structlog.stdlib.BoundLogger:
        """The connection's principal from its SASL session; its logger, bound to it."""
        conn.principal = session.principal
        conn.token_authenticated = session.token_authenticated
        log = log.bind(principal=session.principal)
        log.debug("sasl.authenticated", mechanism=session.mechanism)
        self._idle.touch(conn.connection_id, asyncio.get_running_loop().time())
        return log

    def _new_connection(
        self,
        protocol: FrameProtocol,
        conn: ConnectionInfo,
        log: structlog.stdlib.BoundLogger,
        session: Session | None,
        authenticator: SaslAuthenticator | None,
    ) -> Connection:
        """The request loop of an accepted (and, on a SASL listener, authenticated)
        connection."""
        return Connection(
            protocol,
            conn,
            log,
            self._pipeline.answer,
            idle=self._idle,
            mutes=self._mutes,
            max_request_bytes=self._max_request_bytes,
            kafka_version=self._broker.settings.kafka_version,
            session=session,
            authenticator=authenticator,
        )

    @staticmethod
    async def _attach(protocol: FrameProtocol, sock: socket.socket) -> None:
        """Give an accepted plain socket its transport, with `protocol` as its protocol."""
        try:
            await asyncio.get_running_loop().connect_accepted_socket(lambda: protocol, sock)
        except BaseException:
            sock.close()
            raise


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


async def _bind(host: str, port: int) -> list[socket.socket]:
    """Listening sockets for every address `host` resolves to (as asyncio.start_server binds
    them), with SO_REUSEADDR, IPv6 sockets IPv6-only, non-blocking; when `port` is 0 the
    addresses after the first reuse the first one's port."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    sockets: list[socket.socket] = []
    seen: set[tuple[int, Any]] = set()
    try:
        for family, kind, proto, _, address in infos:
            if (family, address) in seen:
                continue
            seen.add((family, address))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            try:
                sock.bind(address)
            except OSError as e:
                raise OSError(
                    e.errno,
                    f"error while attempting to bind on address {address!r}: "
                    f"{(e.strerror or '').lower()}",
                ) from None
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    if not sockets:
        raise OSError(f"{host!r} resolves to no address to listen on")
    return sockets
