"""One client connection after its handshakes: frames in, answers out, one request at a time.

`Connection.start` takes frames from the connection's `FrameProtocol` as they arrive. Each
request runs through the request pipeline as soon as it is read (`EagerRunner`): one that
needs no waiting is answered in the same callback, a slower one goes on in the connection's
task, and the
connection reads no further request until it is answered (docs/kafka-behaviour.md §0, "One
request at a time per connection"). It also applies KIP-368 re-authentication and session
expiry, and client-quota muting (KIP-219; before 2.0 the answer itself waits). After a slice of
back-to-back pipelined requests it lets the loop run everything else that is ready.

Not here: accepting, TLS, the first SASL exchange, idle expiry (`zkbroker.broker.server.listener`),
splitting bytes into frames (`zkbroker.broker.server.frame_protocol`), answering a request
(`zkbroker.broker.server.request_pipeline`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog

from zkbroker.broker.asyncutil import SLICE_S, EagerRunner
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.framing import FrameRefused
from zkbroker.broker.server.admission import IdleConnections
from zkbroker.broker.server.authenticator import (
    MIN_REAUTH_INTERVAL_S,
    AuthenticationClosed,
    SaslAuthenticator,
    Session,
)
from zkbroker.broker.server.frame_protocol import FrameProtocol
from zkbroker.broker.server.request_pipeline import UNANSWERED
from zkbroker.handlers.context import ConnectionInfo

Answer = Callable[[bytes, ConnectionInfo, structlog.stdlib.BoundLogger], Awaitable[bytes | None]]


class Connection:
    """The request loop of one connection; `finished` holds the reason it ended."""

    def __init__(
        self,
        protocol: FrameProtocol,
        conn: ConnectionInfo,
        log: structlog.stdlib.BoundLogger,
        answer: Answer,
        *,
        idle: IdleConnections,
        mutes: dict[str, float],
        max_request_bytes: int,
        kafka_version: tuple[int, ...],
        session: Session | None = None,
        authenticator: SaslAuthenticator | None = None,
    ) -> None:
        self._protocol = protocol
        self._conn = conn
        self._log = log
        self._answer = answer
        self._idle = idle
        self._mutes = mutes
        self._max_request_bytes = max_request_bytes
        # Before KIP-219 (2.0) a throttled answer itself waits; from 2.0 it is sent, then the
        # connection is muted.
        self._mute_before_answer = kafka_version < (2, 0)
        self._session = session
        self._authenticator = authenticator
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._now = loop.time
        self._runner: EagerRunner[str | None] = EagerRunner(self._handled)
        self.finished: asyncio.Future[str] = loop.create_future()

    def start(self) -> None:
        """Serve the connection's requests, from the next turn of the loop (the caller is a
        task; requests start from plain callbacks, see `EagerRunner`)."""
        self._protocol.on_frames = self._take_frames
        self._loop.call_soon(self._take_frames)

    def close(self) -> None:
        """Stop the request in flight, if any (the connection is closing)."""
        self._runner.close()

    # ---- the loop ----------------------------------------------------------------------

    def _take_frames(self) -> None:
        protocol = self._protocol
        if protocol.in_flight or self.finished.done():
            return
        slice_ends = self._now() + SLICE_S
        while True:
            try:
                frame = protocol.take_frame(self._max_request_bytes)
            except FrameRefused as e:
                self._log.warning("connection.closing", reason=e.reason)
                self._finish(e.reason)
                return
            if frame is None:
                if protocol.ended:
                    error = protocol.error
                    self._finish(
                        f"socket error: {error}" if error is not None else protocol.end_reason()
                    )
                return
            self._idle.remove(self._conn.connection_id)  # a request in flight is not idle
            protocol.in_flight = True
            try:
                finished = self._runner.run(self._handle(frame))
            except Exception:
                self._log.exception("connection.failed")
                self._finish("request failed")
                return
            if finished is None:
                return  # it waits; `_handled` takes the next frame
            protocol.in_flight = False
            if finished.value is not None:
                self._finish(finished.value)
                return
            if self._now() >= slice_ends:
                # Fairness: a client's pipelined requests are already buffered; after a slice
                # of them the loop runs everything else that is ready first.
                protocol.in_flight = True
                self._loop.call_soon(self._next_slice)
                return

    def _next_slice(self) -> None:
        self._protocol.in_flight = False
        self._take_frames()

    def _handled(self, reason: str | None, error: BaseException | None) -> None:
        """A request that waited is done (`EagerRunner`'s `on_done`)."""
        self._protocol.in_flight = False
        if error is not None:
            self._log.error("connection.failed", exc_info=error)
            self._finish("request failed")
            return
        if reason is not None:
            self._finish(reason)
        else:
            self._take_frames()

    def _finish(self, reason: str) -> None:
        if not self.finished.done():
            self.finished.set_result(reason)

    # ---- one request -------------------------------------------------------------------

    async def _handle(self, frame: bytes) -> str | None:
        """Answer one request; the reason to close the connection, or None to go on."""
        conn, log, protocol = self._conn, self._log, self._protocol
        try:
            session, authenticator = self._session, self._authenticator
            if session is not None and authenticator is not None:
                clock = time.monotonic()
                if (
                    _api_key_of(frame) == ApiKey.SASL_HANDSHAKE
                    and session.expires_at is not None
                    and clock - session.last_reauth_started >= MIN_REAUTH_INTERVAL_S
                ):
                    # KIP-368: Kafka's maybeBeginServerReauthentication.
                    try:
                        self._session = await authenticator.reauthenticate(session, frame)
                    except AuthenticationClosed as e:
                        reason = f"SASL re-authentication: {e.reason}"
                        log.info("connection.closing", reason=reason)
                        return reason
                    log.debug("sasl.reauthenticated", mechanism=self._session.mechanism)
                    conn.token_authenticated = self._session.token_authenticated
                    self._idle.touch(conn.connection_id, self._now())
                    return None
                if session.expired(clock):
                    reason = "SASL session expired (connections.max.reauth.ms)"
                    log.info("connection.closing", reason=reason)
                    return reason
            response = await self._answer(frame, conn, log)
            if response is None:
                return "request refused"
            if response == UNANSWERED:
                self._idle.touch(conn.connection_id, self._now())
                return None
            mute_s = self._mutes.pop(conn.connection_id, 0.0)
            if mute_s and self._mute_before_answer:
                await asyncio.sleep(mute_s)
                mute_s = 0.0
            protocol.write_frame(response)
            await protocol.drain()
            if mute_s:
                await asyncio.sleep(mute_s)  # KIP-219: answered at once, then muted
            self._idle.touch(conn.connection_id, self._now())
            return None
        except (ConnectionError, OSError) as e:
            return f"socket error: {e}"


def _api_key_of(frame: bytes) -> int:
    """The api key of a request frame (its first two bytes), -1 when too short."""
    return int.from_bytes(frame[:2], "big", signed=True) if len(frame) >= 2 else -1
