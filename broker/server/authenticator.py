"""SASL authentication of one connection, as Kafka's `SaslServerAuthenticator` runs it before
any request reaches the API layer (KIP-43, KIP-152, KIP-368; docs/kafka-behaviour.md §0,
"SASL authentication").

Reads ApiVersions, SaslHandshake v0/v1 and the tokens (in SaslAuthenticate, or raw after v0);
answers failures after `connection.failed.authentication.delay.ms` and closes; handles
re-authentication (KIP-368; the expired-session close is in `zkbroker.broker.server.listener`)
and token logins (KIP-48, `zkbroker.broker.security.delegation_tokens`). GSSAPI
(`zkbroker.broker.security.gssapi_server`) runs in a worker thread, bounded in time;
OAUTHBEARER (`zkbroker.broker.security.oauthbearer`) answers a refused token with Kafka's error
JSON as a challenge.

Not here: `sasl.server.max.receive.size` reconfiguration (fixed at 524288 bytes).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import structlog

from zkbroker.broker.asyncutil import wait_for
from zkbroker.broker.protocol import (
    CodecError,
    RequestHeader,
    decode_request_body,
    decode_request_header,
    encode_response,
    error_codes,
)
from zkbroker.broker.protocol.api_keys import API_KEYS, ApiKey
from zkbroker.broker.protocol.framing import (
    Answer,
    Close,
    FrameRefused,
    api_name,
    route,
)
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.protocol.messages.sasl_authenticate import SaslAuthenticateResponse
from zkbroker.broker.protocol.messages.sasl_handshake import SaslHandshakeResponse
from zkbroker.broker.security.gssapi_server import GssapiServer
from zkbroker.broker.security.listener_config import ListenerSecurity
from zkbroker.broker.security.oauthbearer import BrokenToken
from zkbroker.broker.security.oauthbearer_server import oauthbearer_server
from zkbroker.broker.security.sasl import (
    PlainServer,
    SaslAuthenticationFailed,
    SaslClosed,
    SaslFailed,
    SaslServer,
    credential_lifetime_applies,
)
from zkbroker.broker.security.scram import ScramCredential, ScramServer, TokenCredential
from zkbroker.broker.server.frame_protocol import FrameProtocol
from zkbroker.handlers.context import BrokerView, ConnectionInfo, RequestContext
from zkbroker.handlers.registry import ApiTable

# (user, mechanism) -> the user's SCRAM credential (`zkbroker.broker.security.credential_cache`).
CredentialsOf = Callable[[str, str], "ScramCredential | None"]
# Kafka's sasl.server.max.receive.size default (BrokerSecurityConfigs).
MAX_RECEIVE_SIZE = 524288
# KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS
MIN_REAUTH_INTERVAL_S = 1.0
# Mechanisms whose steps block (GSSAPI: crypto, keytab and replay-cache files) run on these
# few threads, each step bounded in time, so that the event loop never waits for them.
_BLOCKING_STEP_WORKERS = 4
BLOCKING_STEP_TIMEOUT_S = 30.0
_blocking_steps: ThreadPoolExecutor | None = None


def kafka_enum_name(api_key: int) -> str:
    """Kafka's ApiKeys constant as its messages print it: `Metadata` -> `METADATA`,
    `OffsetForLeaderEpoch` -> `OFFSET_FOR_LEADER_EPOCH`."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", api_name(api_key)).upper()


class AuthenticationClosed(Exception):
    """Authentication failed or the client broke the protocol: close the connection."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Session:
    """What a successful authentication established on the connection."""

    mechanism: str
    principal: str
    # time.monotonic() after which the session is over (KIP-368); None = never.
    expires_at: float | None
    last_reauth_started: float = 0.0
    # Logged in with a delegation token (SCRAM tokenauth=true).
    token_authenticated: bool = False

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now > self.expires_at


class SaslAuthenticator:
    def __init__(
        self,
        security: ListenerSecurity,
        credentials: CredentialsOf | None,
        broker: BrokerView,
        api_table: ApiTable,
        conn: ConnectionInfo,
        channel: FrameProtocol,
        log: structlog.stdlib.BoundLogger,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._security = security
        self._credentials = credentials
        self._broker = broker
        self._api_table = api_table
        self._conn = conn
        self._channel = channel
        self._log = log
        self._now = now

    # ---- entry points ------------------------------------------------------------------

    async def authenticate(self) -> Session:
        """The first authentication of the connection; AuthenticationClosed to close it."""
        return await self._exchange(previous=None, first_frame=None)

    async def reauthenticate(self, previous: Session, handshake_frame: bytes) -> Session:
        """KIP-368: a SaslHandshake on an authenticated connection starts over."""
        previous.last_reauth_started = self._now()
        session = await self._exchange(previous=previous, first_frame=handshake_frame)
        session.last_reauth_started = previous.last_reauth_started
        return session

    # ---- the exchange ------------------------------------------------------------------

    async def _exchange(self, previous: Session | None, first_frame: bytes | None) -> Session:
        what = "re-authentication" if previous is not None else "authentication"
        versions_allowed = previous is None
        server: SaslServer | None = None
        raw_tokens = False
        bad_mechanism: str | None = None
        frame = first_frame
        first_packet = previous is None
        while True:
            if frame is None:
                frame = await self._read_frame()
            if server is None and first_packet and await self._headerless_gssapi(frame):
                # A 0.9 client's first GSSAPI token, sent with no handshake: raw tokens follow.
                server, raw_tokens = self._server("GSSAPI"), True
            first_packet = False
            if server is None:
                header, offset = self._header(frame)
                if header.api_key not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE):
                    await self._fail(
                        f"Unexpected Kafka request of type {kafka_enum_name(header.api_key)} "
                        "during SASL handshake."
                    )
                if header.api_key == ApiKey.API_VERSIONS:
                    if not versions_allowed:
                        raise AuthenticationClosed(
                            "Unexpected ApiVersions request received during SASL "
                            "authentication state HANDSHAKE_REQUEST"
                        )
                    if await self._api_versions(header, frame, offset):
                        versions_allowed = False
                    frame = None
                    continue
                mechanism = await self._handshake(header, frame, offset)
                raw_tokens = header.api_version == 0
                if previous is not None and mechanism != previous.mechanism:
                    bad_mechanism = (
                        f"SASL mechanism '{mechanism}' requested by client is not supported "
                        f"for re-authentication of mechanism '{previous.mechanism}'"
                    )
                server = self._server(mechanism)
                frame = None
                continue
            if bad_mechanism is not None:
                await self._fail(bad_mechanism)
            if raw_tokens:
                session = await self._raw_token(server, frame, previous)
            else:
                session = await self._authenticate_request(server, frame, previous, what)
            frame = None
            if session is not None:
                return session

    async def _read_frame(self) -> bytes:
        try:
            return await self._channel.read_frame(MAX_RECEIVE_SIZE)
        except FrameRefused:
            raise AuthenticationClosed(
                "Failing SASL authentication due to invalid receive size"
            ) from None
        except asyncio.IncompleteReadError:
            raise AuthenticationClosed("closed by client during SASL authentication") from None

    def _header(self, frame: bytes) -> tuple[RequestHeader, int]:
        try:
            return decode_request_header(frame)
        except CodecError:
            # Past the first packet (`_headerless_gssapi` took that one) Kafka's
            # InvalidRequestException closes the connection at once.
            api_key = int.from_bytes(frame[:2], "big", signed=True) if len(frame) >= 2 else -1
            raise AuthenticationClosed(
                f"Error parsing request header. Our best guess of the apiKey is: {api_key}"
            ) from None

    async def _send(self, payload: bytes) -> None:
        self._channel.write_frame(payload)
        await self._channel.drain()

    async def _fail(self, reason: str, answer: bytes | None = None) -> None:
        """Kafka's delayed close on authentication failure: the failure answer (if any) is
        sent after connection.failed.authentication.delay.ms, then the connection closes."""
        delay = self._security.failed_auth_delay_ms
        if delay > 0:
            await asyncio.sleep(delay / 1000)
        if answer is not None:
            await self._send(answer)
        raise AuthenticationClosed(reason)

    async def _routed(self, header: RequestHeader) -> bool:
        """True when the version is served; an unsupported one closes (or, for ApiVersions,
        is answered by `route`) as on any connection."""
        decision = route(header, self._api_table.ranges, self._broker.settings.release_name)
        if isinstance(decision, Close):
            raise AuthenticationClosed(decision.reason)
        if isinstance(decision, Answer):
            await self._send(decision.data)
            return False
        return True

    def _decode(self, header: RequestHeader, frame: bytes, offset: int) -> object:
        try:
            return decode_request_body(header, frame, offset)
        except CodecError as e:
            raise AuthenticationClosed(f"undecodable request: {e}") from None

    async def _api_versions(self, header: RequestHeader, frame: bytes, offset: int) -> bool:
        if not await self._routed(header):
            return False
        request = self._decode(header, frame, offset)
        assert isinstance(request, ApiVersionsRequest)
        self._conn.record_software(
            header.api_version, request.client_software_name, request.client_software_version
        )
        entry = self._api_table.entry(ApiKey.API_VERSIONS)
        assert entry is not None
        ctx = RequestContext(header=header, broker=self._broker, connection=self._conn)
        response = await entry.handle(ctx, request)
        await self._send(encode_response(header, response))
        # An invalid ApiVersions (bad software name) is answered and the state stays.
        return getattr(response, "error_code", 0) == error_codes.NONE

    async def _handshake(self, header: RequestHeader, frame: bytes, offset: int) -> str:
        if not await self._routed(header):  # pragma: no cover - route closes non-ApiVersions
            raise AuthenticationClosed("unsupported SaslHandshake version")
        request = self._decode(header, frame, offset)
        mechanism: str = getattr(request, "mechanism")  # noqa: B009
        enabled = list(self._security.mechanisms)
        if mechanism in enabled:
            self._log.debug("sasl.handshake", mechanism=mechanism)
            await self._send(
                encode_response(
                    header, SaslHandshakeResponse(error_code=error_codes.NONE, mechanisms=enabled)
                )
            )
            return mechanism
        await self._fail(
            f"Unsupported SASL mechanism {mechanism}",
            encode_response(
                header,
                SaslHandshakeResponse(
                    error_code=error_codes.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled
                ),
            ),
        )
        raise AssertionError("unreachable")

    async def _headerless_gssapi(self, frame: bytes) -> bool:
        """Whether the connection's first packet is a GSSAPI token rather than a Kafka request
        (Kafka: a header it cannot parse, or an unknown API key); then, without GSSAPI
        enabled, the authentication fails with no answer."""
        try:
            header, _ = decode_request_header(frame)
            if header.api_key in API_KEYS:
                return False
        except CodecError:
            pass
        if "GSSAPI" in self._security.mechanisms:
            return True
        await self._fail(
            "Exception handling first SASL packet from client, GSSAPI is not supported by server"
        )
        raise AssertionError("unreachable")

    async def _evaluate(self, server: SaslServer, token: bytes) -> bytes | None:
        """The mechanism's answer to `token`: a blocking mechanism's step in a worker thread,
        bounded by BLOCKING_STEP_TIMEOUT_S (then the connection is closed)."""
        if not getattr(server, "offload", False):
            return server.evaluate(token)
        global _blocking_steps
        if _blocking_steps is None:
            _blocking_steps = ThreadPoolExecutor(
                _BLOCKING_STEP_WORKERS, thread_name_prefix="zkbroker-sasl"
            )
        step = asyncio.get_running_loop().run_in_executor(_blocking_steps, server.evaluate, token)
        try:
            return await wait_for(step, BLOCKING_STEP_TIMEOUT_S)
        except TimeoutError:
            raise AuthenticationClosed(
                f"{server.mechanism} step took longer than {BLOCKING_STEP_TIMEOUT_S:g} s"
            ) from None

    def _server(self, mechanism: str) -> SaslServer:
        if mechanism == "PLAIN":
            return PlainServer(self._security.plain_users)
        if mechanism == "GSSAPI":
            login, namer = self._security.kerberos, self._security.kerberos_namer
            assert login is not None and namer is not None  # checked with the listener
            return GssapiServer(login, namer)
        if mechanism == "OAUTHBEARER":
            return oauthbearer_server(self._security, self._broker.settings.kafka_version)
        lookup = self._credentials
        tokens = self._broker.delegation_tokens

        def token_lookup(token_id: str) -> TokenCredential | None:
            login = tokens.login(token_id, mechanism) if tokens is not None else None
            if login is None:
                return None
            return TokenCredential(login.credential, login.owner_name, login.expiry_timestamp_ms)

        if lookup is None:
            return ScramServer(mechanism, lambda _user: None, token_lookup)
        return ScramServer(mechanism, lambda user: lookup(user, mechanism), token_lookup)

    def _check_principal(self, server: SaslServer) -> None:
        """GSSAPI: a principal the short-name rules map to nothing fails once the exchange is
        over (Kafka builds the principal then, and closes the connection)."""
        error = getattr(server, "principal_error", None)
        if server.complete and error:
            self._log.warning("sasl.principal_failed", mechanism=server.mechanism, reason=error)
            raise AuthenticationClosed(error)

    def _session(self, server: SaslServer, previous: Session | None) -> tuple[Session, int]:
        principal = f"User:{server.authorization_id}"
        if previous is not None and previous.principal != principal:
            old_type, _, old_name = previous.principal.partition(":")
            new_type, _, new_name = principal.partition(":")
            raise SaslAuthenticationFailed(
                f"Cannot change principals during re-authentication from {old_type}.{old_name}: "
                f"{new_type}.{new_name}"
            )
        lifetime_ms = max(0, self._security.reauth_ms.get(server.mechanism, 0))
        token_expiry = getattr(server, "token_expiry_ms", None)
        if token_expiry is not None and credential_lifetime_applies(
            self._broker.settings.kafka_version, lifetime_ms
        ):
            # ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs with a credential
            # lifetime: the token's remaining time, or the smaller of it and the max.
            remaining = max(0, token_expiry - int(time.time() * 1000))
            lifetime_ms = min(lifetime_ms, remaining) if lifetime_ms > 0 else remaining
            expires = self._now() + lifetime_ms / 1000
        else:
            expires = self._now() + lifetime_ms / 1000 if lifetime_ms > 0 else None
        token = bool(getattr(server, "token_authenticated", False))
        return Session(server.mechanism, principal, expires, token_authenticated=token), lifetime_ms

    async def _raw_token(
        self, server: SaslServer, token: bytes, previous: Session | None
    ) -> Session | None:
        try:
            answer = await self._evaluate(server, token)
            session = self._session(server, previous)[0] if server.complete else None
        except BrokenToken as e:
            raise AuthenticationClosed(str(e)) from None
        except SaslClosed as e:
            raise AuthenticationClosed(str(e)) from None
        except (SaslAuthenticationFailed, SaslFailed) as e:
            await self._fail(str(e))
            raise AssertionError("unreachable") from None
        if answer is not None:  # GSSAPI's last step has no answer
            await self._send(answer)
        self._check_principal(server)
        return session

    async def _authenticate_request(
        self, server: SaslServer, frame: bytes, previous: Session | None, what: str
    ) -> Session | None:
        header, offset = self._header(frame)
        if header.api_key != ApiKey.SASL_AUTHENTICATE:
            await self._refuse_unexpected(header, frame, offset)
        if not await self._routed(header):  # pragma: no cover - route closes non-ApiVersions
            raise AuthenticationClosed("unsupported SaslAuthenticate version")
        request = self._decode(header, frame, offset)
        token: bytes = getattr(request, "auth_bytes")  # noqa: B009
        try:
            answer_token = await self._evaluate(server, token)
            session, lifetime_ms = self._session(server, previous) if server.complete else (None, 0)
        except BrokenToken as e:
            # Kafka's OAUTHBEARER server throws an unexpected exception: closed unanswered.
            raise AuthenticationClosed(str(e)) from None
        except SaslClosed as e:
            # Kafka rethrows a retriable Kerberos error (or an unexpected one): closed
            # unanswered, at once.
            raise AuthenticationClosed(str(e)) from None
        except SaslAuthenticationFailed as e:
            message = str(e)
        except SaslFailed as e:
            # The mechanism's own reason stays in the log (Kafka logs it at debug): the client
            # must not learn whether the user exists.
            self._log.debug("sasl.mechanism_failed", mechanism=server.mechanism, detail=str(e))
            message = (
                f"Authentication failed during {what} due to invalid credentials with SASL "
                f"mechanism {server.mechanism}"
            )
        else:
            await self._send(
                encode_response(
                    header,
                    SaslAuthenticateResponse(
                        error_code=error_codes.NONE,
                        error_message=None,
                        auth_bytes=answer_token or b"",
                        session_lifetime_ms=lifetime_ms,
                    ),
                )
            )
            self._check_principal(server)
            return session
        self._log.info("sasl.authentication_failed", mechanism=server.mechanism, reason=message)
        await self._fail(
            message,
            encode_response(
                header,
                SaslAuthenticateResponse(
                    error_code=error_codes.SASL_AUTHENTICATION_FAILED,
                    error_message=message,
                    auth_bytes=b"",
                ),
            ),
        )
        raise AssertionError("unreachable")

    async def _refuse_unexpected(self, header: RequestHeader, frame: bytes, offset: int) -> None:
        """Fail the authentication on a request other than SaslAuthenticate: answered with
        ILLEGAL_SASL_STATE when its version is served, then closed (always raises)."""
        reason = (
            f"Unexpected Kafka request of type {kafka_enum_name(header.api_key)} during "
            "SASL authentication."
        )
        entry = self._api_table.entry(header.api_key)
        answer = None
        if entry is not None and self._api_table.supports(header.api_key, header.api_version):
            request = self._decode(header, frame, offset)
            answer = encode_response(
                header,
                entry.error_response(
                    request, header.api_version, error_codes.ILLEGAL_SASL_STATE, reason
                ),
            )
        await self._fail(reason, answer)
