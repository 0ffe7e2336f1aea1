"""A small asyncio Kafka client a broker uses to reach brokers of other zkbroker processes.

It dials a peer as Kafka's marker channel and AddPartitionsToTxn verifier do
(docs/kafka-behaviour.md §17, "The inter-broker client"): the inter-broker listener only (a
peer without it is logged `peer.listener_missing` and unavailable), TLS from
``zkbroker.broker.security.inter_broker``, SASL with the broker's login
(``zkbroker.broker.security.sasl_client``) and in-band re-authentication at 85% of the session.
One connection per peer endpoint, reused, one request at a time. A failed connection raises
`PeerUnavailable`; an authentication failure `PeerAuthenticationFailed`. ``close()`` closes
every connection.

Not here: retry policy (the callers'), which brokers lead what (the metadata image's),
GSSAPI/OAUTHBEARER, pipelining.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import RequestHeader, decode_response, encode_request
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.framing import SIZE_BYTES, FrameRefused, frame_size, size_prefixed
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from zkbroker.broker.protocol.messages.sasl_handshake import SaslHandshakeRequest
from zkbroker.broker.security.inter_broker import PLAINTEXT, InterBrokerSecurity
from zkbroker.broker.security.sasl_client import SaslClient, SaslClientFailed, SaslLogin, new_client

_TIMEOUT_S = 10.0
# Answers from a peer are small (markers, verification); a larger size is a broken stream.
_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
# Kafka's client re-authenticates between 85% and 95% of the session lifetime.
REAUTH_AT = 0.85
_HANDSHAKE, _AUTHENTICATE, _API_VERSIONS = 17, 36, 18

_log = get_logger(__name__)


class PeerUnavailable(Exception):
    """The broker could not be reached or answered nothing usable."""


class PeerAuthenticationFailed(PeerUnavailable):
    """The peer refused this broker's TLS handshake or SASL login."""

    def __init__(self, message: str, error: str) -> None:
        super().__init__(message)
        #: Kafka's error name (SASL_AUTHENTICATION_FAILED, ...) or "SSL_HANDSHAKE_FAILED".
        self.error = error


def endpoint_of(image: MetadataImage, broker_id: int, listener: str) -> tuple[str, int] | None:
    """The broker's endpoint on `listener` (the inter-broker one); None when the broker is
    unknown or has no such listener. A null host (all interfaces) is this host."""
    info = image.brokers.get(broker_id)
    if info is None:
        return None
    chosen = next((e for e in info.endpoints if e.listener == listener), None)
    if chosen is None:
        return None
    return chosen.host or "127.0.0.1", chosen.port


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    correlation: int = 0
    # time.monotonic() of the last (re-)authentication and the session's end (KIP-368).
    authenticated_at: float = 0.0
    session_ends: float | None = None
    versions: dict[int, int] = field(default_factory=dict)

    def next_correlation(self) -> int:
        self.correlation = (self.correlation + 1) & 0x7FFFFFFF
        return self.correlation

    @property
    def usable(self) -> bool:
        return not self.writer.is_closing() and not self.reader.at_eof()


class PeerClient:
    """Connections of one broker to its peers' inter-broker listener."""

    def __init__(
        self,
        security: InterBrokerSecurity = PLAINTEXT,
        *,
        client_id: str = "zkbroker-txn-coordinator",
        timeout_s: float = _TIMEOUT_S,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._security = security
        self._client_id = client_id
        self._timeout_s = timeout_s
        self._now = now
        self._connections: dict[tuple[str, int], _Connection] = {}
        self._locks: dict[tuple[str, int], asyncio.Lock] = {}
        self._missing_logged: set[int] = set()
        self._closed = False
        self._log = _log.bind(client_id=client_id, listener=security.listener_name)

    @property
    def listener(self) -> str:
        return self._security.listener_name

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    def endpoint_of(self, image: MetadataImage, broker_id: int) -> tuple[str, int] | None:
        """`endpoint_of` on the inter-broker listener, logging (once per broker) a peer
        registered without that listener."""
        endpoint = endpoint_of(image, broker_id, self.listener)
        info = image.brokers.get(broker_id)
        if endpoint is None and info is not None and broker_id not in self._missing_logged:
            self._missing_logged.add(broker_id)
            self._log.error(
                "peer.listener_missing",
                broker=broker_id,
                listeners=[e.listener for e in info.endpoints],
                reason="every broker needs the inter-broker listener "
                f"{self.listener} (inter.broker.listener.name); not dialling another one",
            )
        elif endpoint is not None:
            self._missing_logged.discard(broker_id)
        return endpoint

    async def send(self, host: str, port: int, version: int, body: Any) -> Any:
        """Send `body` at `version` to host:port and return the decoded response."""
        if self._closed:
            raise PeerUnavailable(f"{host}:{port}: the client is closed")
        key = (host, port)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            conn = self._connections.get(key)
            dialled = False
            try:
                async with asyncio.timeout(self._timeout_s):
                    if conn is not None and not conn.usable:
                        self._drop(key)
                        conn = None
                    if conn is not None and conn.session_ends is not None:
                        conn = await self._keep_session(key, conn)
                    if conn is None:
                        dialled = True
                        conn = await self._connect(host, port)
                        if self._closed:  # closed while this one was being dialled
                            conn.writer.close()
                            raise PeerUnavailable(f"{host}:{port}: the client is closed")
                        self._connections[key] = conn
                    return await self._request(conn, version, body)
            except PeerAuthenticationFailed:
                self._drop(key)
                raise
            except ssl.SSLError as e:
                # A refused client certificate shows on the first read (TLS 1.3).
                self._drop(key)
                raise PeerAuthenticationFailed(
                    f"{host}:{port}: SSL handshake failed: {e}", "SSL_HANDSHAKE_FAILED"
                ) from e
            except (asyncio.IncompleteReadError, ConnectionResetError) as e:
                self._drop(key)
                if dialled and self._security.ssl_context is not None:
                    # A TLS peer that closes before its first answer refused the handshake
                    # after it completed on this side: TLS 1.3 checks the client certificate
                    # then (ssl.client.auth=required without, or with an untrusted, one).
                    # Closed with our request unread, the peer's socket resets rather than
                    # ends: which of the two arrives first is a race, the refusal the same.
                    raise PeerAuthenticationFailed(
                        f"{host}:{port}: SSL handshake failed: the peer closed the connection "
                        "before its first answer (client certificate refused?)",
                        "SSL_HANDSHAKE_FAILED",
                    ) from e
                raise PeerUnavailable(f"{host}:{port}: {e!r}") from e
            except (OSError, TimeoutError, PeerUnavailable) as e:
                self._drop(key)
                if isinstance(e, PeerUnavailable):
                    raise
                raise PeerUnavailable(f"{host}:{port}: {e!r}") from e

    async def close(self) -> None:
        """Close every connection; later sends fail with PeerUnavailable."""
        self._closed = True
        for key in list(self._connections):
            self._drop(key)

    # ---- connections -------------------------------------------------------------------

    def _drop(self, key: tuple[str, int]) -> None:
        conn = self._connections.pop(key, None)
        if conn is not None:
            conn.writer.close()

    async def _connect(self, host: str, port: int) -> _Connection:
        if self._security.protocol.startswith("SASL_") and self._security.login is None:
            raise PeerAuthenticationFailed(
                f"{host}:{port}: no inter-broker SASL login (before Kafka 1.1 it comes from a "
                "JAAS file, which zkbroker does not read)",
                ec.name_of(ec.SASL_AUTHENTICATION_FAILED),
            )
        context = self._security.ssl_context
        try:
            if context is None:
                reader, writer = await asyncio.open_connection(host, port)
            else:
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=context, server_hostname=host
                )
        except ssl.SSLError as e:
            raise PeerAuthenticationFailed(
                f"{host}:{port}: SSL handshake failed: {e}", "SSL_HANDSHAKE_FAILED"
            ) from e
        conn = _Connection(reader, writer)
        login = self._security.login
        if login is not None:
            try:
                await self._authenticate(conn, login, first=True)
            except BaseException:
                writer.close()
                raise
        return conn

    async def _keep_session(self, key: tuple[str, int], conn: _Connection) -> _Connection | None:
        """KIP-368: re-authenticate once REAUTH_AT of the session has passed; a session
        already over is dialled afresh (None)."""
        assert conn.session_ends is not None and self._security.login is not None
        now = self._now()
        if now >= conn.session_ends:
            self._drop(key)
            return None
        if now >= conn.authenticated_at + REAUTH_AT * (conn.session_ends - conn.authenticated_at):
            await self._authenticate(conn, self._security.login, first=False)
            self._log.debug("peer.reauthenticated", peer=f"{key[0]}:{key[1]}")
        return conn

    # ---- the wire ----------------------------------------------------------------------

    async def _request(self, conn: _Connection, version: int, body: Any) -> Any:
        correlation = conn.next_correlation()
        header = RequestHeader(
            api_key=body.API_KEY,
            api_version=version,
            correlation_id=correlation,
            client_id=self._client_id,
        )
        await self._write(conn, encode_request(header, body))
        frame = await self._read(conn)
        try:
            got, response = decode_response(body.API_KEY, version, frame)
        except Exception as e:  # a codec error of any kind: the stream is unusable
            raise PeerUnavailable(f"undecodable response to API key {body.API_KEY}: {e}") from e
        if got != correlation:
            raise PeerUnavailable(f"correlation id {got} != {correlation}")
        return response

    @staticmethod
    async def _write(conn: _Connection, payload: bytes) -> None:
        conn.writer.write(size_prefixed(payload))
        await conn.writer.drain()

    @staticmethod
    async def _read(conn: _Connection) -> bytes:
        prefix = await conn.reader.readexactly(SIZE_BYTES)
        try:
            size = frame_size(prefix, _MAX_RESPONSE_BYTES, what="response")
        except FrameRefused as e:
            raise PeerUnavailable(e.reason) from None
        return await conn.reader.readexactly(size)

    # ---- SASL (Kafka's SaslClientAuthenticator) ----------------------------------------

    async def _authenticate(self, conn: _Connection, login: SaslLogin, *, first: bool) -> None:
        if first:
            # ApiVersions first: which SaslHandshake / SaslAuthenticate versions the peer
            # serves (v0 is served by every release and answers in v0 when refused).
            response = await self._request(conn, 0, ApiVersionsRequest())
            if response.error_code != ec.NONE:
                raise PeerUnavailable(f"ApiVersions: {ec.name_of(response.error_code)}")
            conn.versions = {k.api_key: k.max_version for k in response.api_keys}
        handshake_version = min(1, conn.versions.get(_HANDSHAKE, 0))
        handshake = await self._request(
            conn, handshake_version, SaslHandshakeRequest(mechanism=login.mechanism)
        )
        if handshake.error_code == ec.UNSUPPORTED_SASL_MECHANISM:
            raise PeerAuthenticationFailed(
                f"Client SASL mechanism '{login.mechanism}' not enabled in the server, enabled "
                f"mechanisms are {handshake.mechanisms}",
                ec.name_of(handshake.error_code),
            )
        if handshake.error_code != ec.NONE:
            raise PeerAuthenticationFailed(
                f"SaslHandshake: {ec.name_of(handshake.error_code)}",
                ec.name_of(handshake.error_code),
            )
        client = new_client(login)
        started = self._now()
        try:
            if handshake_version == 0:
                lifetime_ms = await self._raw_tokens(conn, client)
            else:
                lifetime_ms = await self._authenticate_requests(conn, client)
        except SaslClientFailed as e:
            raise PeerAuthenticationFailed(str(e), ec.name_of(ec.SASL_AUTHENTICATION_FAILED)) from e
        conn.authenticated_at = started
        conn.session_ends = started + lifetime_ms / 1000 if lifetime_ms > 0 else None

    async def _authenticate_requests(self, conn: _Connection, client: SaslClient) -> int:
        version = min(2, conn.versions.get(_AUTHENTICATE, 0))
        token: bytes | None = client.first()
        lifetime_ms = 0
        while token is not None:
            response = await self._request(conn, version, SaslAuthenticateRequest(auth_bytes=token))
            if response.error_code != ec.NONE:
                raise PeerAuthenticationFailed(
                    response.error_message or ec.name_of(response.error_code),
                    ec.name_of(response.error_code),
                )
            lifetime_ms = response.session_lifetime_ms
            token = client.evaluate(response.auth_bytes)
        return lifetime_ms

    async def _raw_tokens(self, conn: _Connection, client: SaslClient) -> int:
        """SaslHandshake v0 (before 1.0): the tokens go size-prefixed with no header, and a
        failure is a bare close."""
        token: bytes | None = client.first()
        while token is not None:
            await self._write(conn, token)
            try:
                challenge = await self._read(conn)
            except asyncio.IncompleteReadError:
                raise PeerAuthenticationFailed(
                    "the peer closed the connection during SASL authentication (SaslHandshake "
                    "v0: authentication failed)",
                    ec.name_of(ec.SASL_AUTHENTICATION_FAILED),
                ) from None
            token = client.evaluate(challenge)
        return 0
