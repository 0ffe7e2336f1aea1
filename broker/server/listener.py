"""One broker's TCP listener: Kafka's size-prefixed framing, dispatch, and per-connection order.

Each connection is served by one task that reads a 4-byte big-endian size, then that many
bytes, answers the request, and only then reads the next one, as a Kafka broker mutes a
channel while a request is in flight. Pipelined requests are therefore answered strictly in
request order, and a slow request (a CreateTopics waiting for leaders) holds back only its
own connection.

What closes a connection (only that one; Kafka does the same, docs/kafka-behaviour.md §0):
a frame `broker.protocol.framing` refuses (a negative size or one above `max_request_bytes`,
socket.request.max.bytes), a header or body that does not decode, or a request `framing.route`
refuses (an API key the emulated release does not serve, a version outside its range; an
unknown ApiVersions version is answered instead, KIP-511). Each close is logged with its
reason. This module does only the I/O; the framing decisions are pure code in
`broker.protocol.framing`. A handler that raises is answered with UNKNOWN_SERVER_ERROR on every item
(Kafka's getErrorResponse), logged, and the connection goes on.

Every decoded request also goes through the cluster's `HookChain` (`broker.server.hooks`):
hooks may delay, hold, drop or fail it (fault injection) and see its outcome (capture,
metrics); with no hooks this costs nothing.

Deliberately not here: TLS/SASL, quotas and throttling, and what the answers contain
(see `handlers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from typing import Any

import structlog

from broker.protocol import (
    CodecError,
    decode_request_body,
    decode_request_header,
    encode_response,
    error_codes,
)
from broker.protocol.framing import (
    SIZE_BYTES,
    Answer,
    Close,
    FrameRefused,
    frame_size,
    route,
    size_prefixed,
)
from broker.server.hooks import (
    HookChain,
    Intervention,
    RequestCall,
    RequestRecord,
    collect_error_codes,
)
from handlers.context import BrokerView, ConnectionInfo, RequestContext
from handlers.registry import ApiTable

_stdlib_log = logging.getLogger(__name__)


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
    ) -> None:
        self._broker = broker
        self._api_table = api_table
        self._hooks = hooks if hooks is not None else HookChain()
        self._host = host
        self._requested_port = port
        self._max_request_bytes = max_request_bytes
        self._listener_name = listener_name
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._ids = itertools.count(1)
        self._log = structlog.get_logger(__name__).bind(broker_id=broker.broker_id)
        self.port = port

    async def start(self) -> int:
        self._server = await asyncio.start_server(
            self._serve, self._host, self._requested_port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._log.info("listener.started", host=self._host, port=self.port)
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._log.info("listener.stopped", port=self.port)

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    # ---- one connection ----------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer_addr = writer.get_extra_info("peername")
        peer = f"{peer_addr[0]}:{peer_addr[1]}" if peer_addr else "?"
        conn = ConnectionInfo(
            connection_id=f"{self._broker.broker_id}-{next(self._ids)}",
            peer=peer,
            listener_name=self._listener_name,
        )
        log = self._log.bind(connection_id=conn.connection_id, peer=peer)
        log.debug("connection.opened")
        reason = "closed by client"
        try:
            while True:
                try:
                    prefix = await reader.readexactly(SIZE_BYTES)
                except asyncio.IncompleteReadError as e:
                    if e.partial:
                        reason = "connection ended inside a size prefix"
                    break
                try:
                    size = frame_size(prefix, self._max_request_bytes)
                except FrameRefused as e:
                    reason = e.reason
                    log.warning("connection.closing", reason=reason)
                    break
                try:
                    frame = await reader.readexactly(size)
                except asyncio.IncompleteReadError:
                    reason = "connection ended inside a request"
                    break
                response = await self._answer(frame, conn, log)
                if response is None:
                    reason = "request refused"
                    break
                writer.write(size_prefixed(response))
                await writer.drain()
        except (ConnectionError, OSError) as e:
            reason = f"socket error: {e}"
        except asyncio.CancelledError:
            reason = "broker stopping"
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(writer.wait_closed(), 1.0)
            log.debug("connection.closed", reason=reason)

    async def _answer(
        self, frame: bytes, conn: ConnectionInfo, log: structlog.stdlib.BoundLogger
    ) -> bytes | None:
        """Bytes to send back (without the size prefix), or None to close the connection."""
        started = time.perf_counter()
        try:
            header, offset = decode_request_header(frame)
        except CodecError as e:
            log.warning("connection.closing", reason=f"undecodable request header: {e}")
            return None
        rlog = log.bind(
            api_key=header.api_key,
            api_version=header.api_version,
            correlation_id=header.correlation_id,
            client_id=header.client_id,
        )
        table = self._api_table
        decision = route(header, table.ranges, self._broker.settings.release_name)
        if isinstance(decision, Close):
            rlog.warning("connection.closing", reason=decision.reason)
            return None
        if isinstance(decision, Answer):
            low, high = decision.supported
            rlog.info("request.unsupported_version", supported=f"{low}-{high}")
            return decision.data
        entry = table.entry(header.api_key)
        assert entry is not None  # route() accepted it: the table serves the key
        rlog = rlog.bind(api=entry.name)
        try:
            request = decode_request_body(header, frame, offset)
        except CodecError as e:
            rlog.warning("connection.closing", reason=f"undecodable request: {e}")
            return None

        hooks = self._hooks
        call: RequestCall | None = None
        intervention: Intervention | None = None
        received_at = 0.0
        if hooks:
            received_at = time.time()
            call = RequestCall(self._broker.broker_id, conn, header, entry.name, request)
            intervention = await hooks.intervene(call)
            if intervention is not None:
                rlog.info(
                    "request.intervention",
                    source=intervention.source,
                    delay_s=intervention.delay_s,
                    hold=intervention.hold is not None,
                    drop=intervention.drop,
                    injected_error_code=intervention.error_code,
                )
                if intervention.delay_s > 0:
                    await asyncio.sleep(intervention.delay_s)
                if intervention.hold is not None:
                    await intervention.hold.wait()
                if intervention.drop:
                    hooks.observe(_record(call, None, received_at, started, intervention))
                    rlog.warning("connection.closing", reason=f"{intervention.source}: drop")
                    return None

        ctx = RequestContext(header=header, broker=self._broker, connection=conn)
        if intervention is not None and intervention.error_code is not None:
            response = entry.error_response(
                request, header.api_version, intervention.error_code, intervention.error_message
            )
        else:
            try:
                response = await entry.handle(ctx, request)
            except Exception:
                rlog.exception("request.failed")
                response = entry.error_response(
                    request, header.api_version, error_codes.UNKNOWN_SERVER_ERROR, None
                )
        try:
            data = encode_response(header, response)
        except CodecError:
            rlog.exception("response.unencodable")
            data = encode_response(
                header,
                entry.error_response(
                    request, header.api_version, error_codes.UNKNOWN_SERVER_ERROR, None
                ),
            )
        record: RequestRecord | None = None
        if call is not None:
            record = _record(call, response, received_at, started, intervention)
            hooks.observe(record)
        if _stdlib_log.isEnabledFor(logging.DEBUG):  # the error-code walk is not free
            rlog.debug(
                "request",
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
                # The record's, when there is one: walked once, whoever reads them first.
                error_codes=(
                    collect_error_codes(response) if record is None else record.error_codes
                ),
            )
        return data


def _record(
    call: RequestCall,
    response: Any | None,
    received_at: float,
    started: float,
    intervention: Intervention | None,
) -> RequestRecord:
    latency_us = int((time.perf_counter() - started) * 1_000_000)
    # Error codes left to the record: collected only if a hook reads them.
    return RequestRecord(call, response, None, received_at, latency_us, intervention)
