"""Turning one request frame into its answer: Kafka's request pipeline, without sockets.

`RequestPipeline.answer` decodes the header, refuses or answers an unsupported key or version
(`zkbroker.broker.protocol.framing.route`), decodes the body, runs the cluster's `HookChain`
(`zkbroker.broker.server.hooks`: faults may delay, hold, drop or fail a request; capture and
metrics see its outcome; with no hooks this costs nothing), calls the handler, applies client
quotas, and encodes the answer. A handler that raises is answered with UNKNOWN_SERVER_ERROR on
every item (Kafka's getErrorResponse), logged, and the connection goes on. A Metadata or
ApiVersions answer is encoded once and its body sent again while the image has not changed and
nothing else decides its bytes (`RequestPipeline._reusable`). Like Kafka's network layer, the
pipeline records the client software an ApiVersions request names on its connection (KIP-511).

A testing aid checks that reuse: with `ZKBROKER_CHECK_REUSED_ANSWERS` set (to anything but
empty, `0` or `false`; zkbroker's own test suite sets it) when a pipeline is made, every reused
answer is also built afresh (handler and encoder, as if nothing were kept) and the two bodies
compared. A difference is logged at ERROR (`request.reused_answer_differs`, both byte strings
in hex) and kept in `REUSE_CHECKS`, where the suite's autouse fixture finds it and fails the
test that caused it; the client still gets the reused answer, as it would without the check.
Off, the mode costs one attribute read per reused answer.

A request larger than `LARGE_FRAME_BYTES` is decoded, and its answer encoded, in a worker
thread (as is an answer with more than `LARGE_ANSWER_ITEMS` top-level entries): the codec is
pure, and the loop thread gets the GIL back every switch interval, so a Metadata naming a
million topics does not hold every other client of the process for its whole decode.

Not here: sockets, connections, TLS, SASL, admission and idle expiry, writing the answer and
muting the connection (`zkbroker.broker.server.listener`, which owns one pipeline and gives it
its logger, so every event is logged under the listener's name).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import structlog

from zkbroker.broker.asyncutil import gc_paused
from zkbroker.broker.protocol import (
    CodecError,
    RequestHeader,
    decode_request_body,
    decode_request_header,
    encode_response,
    error_codes,
)
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.codec import definition_of
from zkbroker.broker.protocol.framing import Close, route
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.protocol.messages.metadata import MetadataResponse
from zkbroker.broker.protocol.request_codec import response_head
from zkbroker.broker.rules.client_software import registered_software
from zkbroker.broker.security.quotas import quota_manager_of, set_throttle_time
from zkbroker.broker.server.hooks import (
    HookChain,
    Intervention,
    RequestCall,
    RequestRecord,
    collect_error_codes,
)
from zkbroker.handlers.context import BrokerView, ConnectionInfo, NoResponse, RequestContext
from zkbroker.handlers.registry import ApiTable, HandlerEntry

# Requests larger than this are decoded, and their answers encoded, in a worker thread; so
# are answers whose top-level lists hold more than LARGE_ANSWER_ITEMS entries (Metadata of
# every topic of a big cluster). Below it the thread hop costs more than it saves.
LARGE_FRAME_BYTES = 1 << 20
LARGE_ANSWER_ITEMS = 10_000

# What `RequestPipeline.answer` returns for a request that gets no answer (never a real
# encoding: those always hold at least a correlation id).
UNANSWERED = b""

# Answers kept for reuse (`RequestPipeline._reusable`): at most this many distinct requests per
# image version, each answer at most this large (the few topics a client polls, not the whole
# cluster).
REUSED_ANSWERS = 64
REUSED_ANSWER_BYTES = 64 << 10
# The APIs whose answers may be reused: nothing but the request's bytes, its version, the
# listener, the settings and the metadata image decides them.
REUSED_APIS = frozenset({ApiKey.METADATA, ApiKey.API_VERSIONS})

#: Testing aid (see the module's docstring): set when a pipeline is made, every reused answer is
#: compared with one built afresh.
CHECK_REUSED_ANSWERS_ENV = "ZKBROKER_CHECK_REUSED_ANSWERS"


def check_reused_answers() -> bool:
    """Whether the environment asks for the reused-answer check (any value but empty, `0`,
    `false`, `no` or `off`)."""
    value = os.environ.get(CHECK_REUSED_ANSWERS_ENV, "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


class RequestPipeline:
    """The request path of one broker's listener: frame in, answer bytes out.

    `mutes` maps a connection id to the seconds its next read waits (client quotas, KIP-219
    muting): the pipeline sets it, the listener applies and clears it.
    """

    def __init__(
        self,
        broker: BrokerView,
        api_table: ApiTable,
        hooks: HookChain,
        log: structlog.stdlib.BoundLogger,
        stdlib_log: logging.Logger,
    ) -> None:
        self._broker = broker
        self._api_table = api_table
        self._hooks = hooks
        self._log = log
        self._stdlib_log = stdlib_log  # the one `log` writes to: is DEBUG on?
        self.mutes: dict[str, float] = {}
        # Encoded answer bodies by (listener, api key, version, request body), valid while the
        # image, its version and the settings are those of `_answers_for` (see `_reusable`).
        self._answers: dict[tuple[str, int, int, bytes], _Reused] = {}
        self._answers_for: tuple[object, ...] = ()
        # Testing aid: read once here, never per request.
        self._check_reused = check_reused_answers()

    async def answer(
        self, frame: bytes, conn: ConnectionInfo, log: structlog.stdlib.BoundLogger
    ) -> bytes | None:
        """Bytes to send back (without the size prefix), or None to close the connection.

        A large request's millions of objects cost the loop twice more than its decoding:
        garbage-collector passes over them while they live, and their deallocation when the
        request is done. The collector is paused while a large request is in flight (they
        hold no cycles; refcounting frees them), and they are released in a worker thread.
        """
        keep: list[Any] = []
        if len(frame) <= LARGE_FRAME_BYTES:
            data = await self._answer_one(frame, conn, log, keep)
        else:
            with gc_paused():
                data = await self._answer_one(frame, conn, log, keep)
        if keep:
            await asyncio.to_thread(keep.clear)
        return data

    async def _answer_one(
        self,
        frame: bytes,
        conn: ConnectionInfo,
        log: structlog.stdlib.BoundLogger,
        keep: list[Any],
    ) -> bytes | None:
        started = time.perf_counter()
        try:
            header, offset = decode_request_header(frame)
        except CodecError as e:
            log.warning("connection.closing", reason=f"undecodable request header: {e}")
            return None
        bounds = self._api_table.ranges.get(header.api_key)
        if bounds is None or not bounds[0] <= header.api_version <= bounds[1]:
            return self._refused(header, log)
        reuse_key = self._reusable(header, frame, offset, conn)
        kept = None if reuse_key is None else self._answers.get(reuse_key)
        if kept is not None and not self._check_reused:
            return _resent(kept, header, conn)
        entry = self._api_table.entry(header.api_key)
        assert entry is not None  # the version check accepted it: the table serves the key
        r = _InFlight(log, header, entry, conn, started, reuse_key, kept)
        try:
            if len(frame) > LARGE_FRAME_BYTES:  # in a worker thread (see the module's docstring)
                request = await asyncio.to_thread(decode_request_body, header, frame, offset)
            else:
                request = decode_request_body(header, frame, offset)
        except CodecError as e:
            r.warning("connection.closing", reason=f"undecodable request: {e}")
            return None
        if header.api_key == ApiKey.API_VERSIONS:
            conn.record_software(
                header.api_version, request.client_software_name, request.client_software_version
            )
        if self._hooks:
            r.received_at = time.time()
            r.call = RequestCall(self._broker.broker_id, conn, header, entry.name, request)
            r.intervention = await self._hooks.intervene(r.call)
            if r.intervention is not None and await self._intervened(r):
                return None  # dropped
        ctx = RequestContext(header=header, broker=self._broker, connection=conn, size=len(frame))
        if r.intervention is not None and r.intervention.error_code is not None:
            response = self._injected_error(r, request)
        else:
            try:
                response = await entry.handle(ctx, request)
            except Exception:
                response = self._failed(r, request, "request.failed")
        if isinstance(response, NoResponse):
            return self._unanswered(r, response)
        try:
            if len(frame) > LARGE_FRAME_BYTES or _many_items(response):
                keep.extend((request, response))  # released off the loop (see answer)
                data = await asyncio.to_thread(encode_response, header, response)
            else:
                data = encode_response(header, response)
        except CodecError:
            data = encode_response(header, self._failed(r, request, "response.unencodable"))
        return self._answered(r, request, response, data, frame, offset)

    def _refused(self, header: RequestHeader, log: structlog.stdlib.BoundLogger) -> bytes | None:
        """A request whose key or version the table does not serve: Kafka's unsupported-version
        answer to an ApiVersions request (KIP-511), else None (the connection closes)."""
        # route() is only asked about refusals: it formats the release name and reasons.
        decision = route(header, self._api_table.ranges, self._broker.settings.release_name)
        assert decision is not None  # route() dispatches only what the table serves
        if isinstance(decision, Close):
            _RequestLog(log, header, None).warning("connection.closing", reason=decision.reason)
            return None
        low, high = decision.supported
        _RequestLog(log, header, None).info(
            "request.unsupported_version", supported=f"{low}-{high}"
        )
        return decision.data

    async def _intervened(self, r: _InFlight) -> bool:
        """Apply the hooks' intervention in `r` (a delay, a hold, a drop); True when the request
        is dropped (observed unanswered: the connection closes)."""
        intervention = r.intervention
        assert intervention is not None and r.call is not None
        r.info(
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
        if not intervention.drop:
            return False
        self._hooks.observe(_record(r.call, None, r.received_at, r.started, intervention))
        r.warning("connection.closing", reason=f"{intervention.source}: drop")
        return True

    @staticmethod
    def _injected_error(r: _InFlight, request: Any) -> Any:
        """The answer with the error the hooks' intervention injects, instead of the handler's."""
        intervention = r.intervention
        assert intervention is not None and intervention.error_code is not None
        return r.entry.error_response(
            request, r.header.api_version, intervention.error_code, intervention.error_message
        )

    @staticmethod
    def _failed(r: _InFlight, request: Any, event: str) -> Any:
        """UNKNOWN_SERVER_ERROR on every item (Kafka's getErrorResponse), the failure logged with
        its traceback as `event`; a failure is not the answer to give again."""
        r.exception(event)
        r.reuse_key = None
        return r.entry.error_response(
            request, r.header.api_version, error_codes.UNKNOWN_SERVER_ERROR, None
        )

    def _unanswered(self, r: _InFlight, response: NoResponse) -> bytes | None:
        """Produce with acks=0: the client reads nothing back (or sees the close)."""
        if r.call is not None:
            self._hooks.observe(_record(r.call, None, r.received_at, r.started, r.intervention))
        if response.close_reason is not None:
            r.warning("connection.closing", reason=response.close_reason)
            return None
        if self._stdlib_log.isEnabledFor(logging.DEBUG):  # acks=0 Produce: a hot path
            r.debug("request.unanswered", duration_ms=_ms_since(r.started))
        return UNANSWERED

    def _answered(
        self, r: _InFlight, request: Any, response: Any, data: bytes, frame: bytes, offset: int
    ) -> bytes:
        """The encoded answer's last steps: compared with the kept one (the testing aid), kept
        for reuse, throttled (client quotas), observed by the hooks, logged at DEBUG."""
        header = r.header
        if r.kept is not None:
            return self._checked(r.kept, header, request, data, r.conn, r, frame[offset:])
        if r.reuse_key is not None:
            self._keep_answer(r.reuse_key, header, request, response, data)
        data = self._throttle(header, r.conn, len(frame), response, data, r.started)
        record: RequestRecord | None = None
        if r.call is not None:
            record = _record(r.call, response, r.received_at, r.started, r.intervention)
            self._hooks.observe(record)
        if self._stdlib_log.isEnabledFor(logging.DEBUG):  # the error-code walk is not free
            r.debug(
                "request",
                duration_ms=round((time.perf_counter() - r.started) * 1000, 3),
                # The record's, when there is one: walked once, whoever reads them first.
                error_codes=(
                    collect_error_codes(response) if record is None else record.error_codes
                ),
            )
        return data

    def _reusable(
        self, header: RequestHeader, frame: bytes, offset: int, conn: ConnectionInfo
    ) -> tuple[str, int, int, bytes] | None:
        """The key under which this request's answer may be reused, None when it may not.

        Only REUSED_APIS, and only when nothing but the metadata image decides the answer's
        bytes: no authorizer (authorized operations, denied topics), no client quotas (throttle
        time), no hooks (faults, capture and metrics see every request), DEBUG off (the request
        line lists the answer's error codes). The response header (correlation id) is per
        request.
        """
        if header.api_key not in REUSED_APIS or len(frame) > REUSED_ANSWER_BYTES or self._hooks:
            return None
        broker = self._broker
        image = broker.image
        if image.client_quotas or getattr(broker, "authorizer", None) is not None:
            return None
        if self._stdlib_log.isEnabledFor(logging.DEBUG):
            return None
        stamp = (image, image.version, broker.settings)
        if self._answers_for != stamp:  # identities first: cheap while nothing changed
            self._answers.clear()
            self._answers_for = stamp
        return conn.listener_name, header.api_key, header.api_version, frame[offset:]

    def _keep_answer(
        self,
        key: tuple[str, int, int, bytes],
        header: RequestHeader,
        request: Any,
        response: Any,
        data: bytes,
    ) -> None:
        """Keep an answer for reuse when it is one Kafka would give again unchanged: for
        Metadata, every topic answered without error (an auto-created or unknown topic's
        answer changes as the topic appears); and the image has not changed while it was
        built. An ApiVersions answer keeps the client software its request records."""
        image = self._broker.image
        if (
            len(data) > REUSED_ANSWER_BYTES
            or self._answers_for != (image, image.version, self._broker.settings)
            or (
                isinstance(response, MetadataResponse)
                and any(topic.error_code != error_codes.NONE for topic in response.topics)
            )
        ):
            return
        software = None
        if isinstance(request, ApiVersionsRequest):
            software = registered_software(
                header.api_version, request.client_software_name, request.client_software_version
            )
        if len(self._answers) >= REUSED_ANSWERS:
            self._answers.clear()
        self._answers[key] = _Reused(data[len(response_head(header)) :], software)

    def _checked(
        self,
        kept: _Reused,
        header: RequestHeader,
        request: Any,
        fresh: bytes,
        conn: ConnectionInfo,
        rlog: _RequestLog,
        request_body: bytes,
    ) -> bytes:
        """The testing aid: the kept answer, sent as it would be without the check, once
        compared with `fresh`, the same request's answer built anew. A difference (body or
        the client software recorded) is logged at ERROR and kept in `REUSE_CHECKS`. When the
        image changed while the fresh answer was built, the two cannot be compared."""
        head = response_head(header)
        image = self._broker.image
        if self._answers_for == (image, image.version, self._broker.settings):
            fresh_software = None
            if isinstance(request, ApiVersionsRequest):
                fresh_software = registered_software(
                    header.api_version,
                    request.client_software_name,
                    request.client_software_version,
                )
            mismatch = None
            if fresh[len(head) :] != kept.body or fresh_software != kept.software:
                mismatch = ReusedAnswerMismatch(
                    broker_id=self._broker.broker_id,
                    listener=conn.listener_name,
                    api_key=header.api_key,
                    api_version=header.api_version,
                    request_body=request_body,
                    kept=kept.body,
                    fresh=fresh[len(head) :],
                    kept_software=kept.software,
                    fresh_software=fresh_software,
                )
                rlog.error(
                    "request.reused_answer_differs",
                    first_difference=mismatch.first_difference,
                    kept=kept.body.hex(),
                    fresh=mismatch.fresh.hex(),
                    kept_software=kept.software,
                    fresh_software=fresh_software,
                )
            REUSE_CHECKS.add(header.api_key, mismatch)
        if kept.software is not None:
            conn.client_software_name, conn.client_software_version = kept.software
        return head + kept.body

    def _throttle(
        self,
        header: RequestHeader,
        conn: ConnectionInfo,
        request_bytes: int,
        response: Any,
        data: bytes,
        started: float,
    ) -> bytes:
        """Client quotas (`zkbroker.broker.security.quotas`): record the request, and when a quota
        is violated put the throttle time in the response and mute the connection for it."""
        quotas = self._broker.image.client_quotas
        if not quotas:
            return data
        settings = self._broker.settings
        manager = quota_manager_of(self._broker, quotas, dict(settings.broker_configs))
        throttle_ms = manager.throttle_ms(
            header.api_key,
            conn.principal,
            header.client_id,
            request_bytes,
            len(data),
            time.perf_counter() - started,
        )
        # A handler's own throttle (controller mutations, KIP-599) mutes the connection too.
        own = getattr(response, "throttle_time_ms", 0)
        mute_ms = max(throttle_ms, own if isinstance(own, int) else 0)
        if mute_ms > 0:
            self.mutes[conn.connection_id] = mute_ms / 1000
        if throttle_ms <= 0:
            return data
        self._log.debug("request.throttled", client_id=header.client_id, throttle_ms=throttle_ms)
        if set_throttle_time(response, throttle_ms):
            return encode_response(header, response)
        return data


class _RequestLog:
    """`log` bound to a request's fields on first use: binding builds a logger and a context
    dict per request, and most requests log nothing."""

    __slots__ = ("_bound", "_log", "api", "header")

    def __init__(
        self, log: structlog.stdlib.BoundLogger, header: RequestHeader, api: str | None
    ) -> None:
        self._log, self.header, self.api = log, header, api
        self._bound: structlog.stdlib.BoundLogger | None = None

    def _get(self) -> structlog.stdlib.BoundLogger:
        if self._bound is None:
            header = self.header
            bound = self._log.bind(
                api_key=header.api_key,
                api_version=header.api_version,
                correlation_id=header.correlation_id,
                client_id=header.client_id,
            )
            self._bound = bound if self.api is None else bound.bind(api=self.api)
        return self._bound

    def debug(self, event: str, **kw: Any) -> None:
        self._get().debug(event, **kw)

    def info(self, event: str, **kw: Any) -> None:
        self._get().info(event, **kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._get().warning(event, **kw)

    def error(self, event: str, **kw: Any) -> None:
        self._get().error(event, **kw)

    def exception(self, event: str, **kw: Any) -> None:
        self._get().exception(event, **kw)


class _InFlight(_RequestLog):
    """A request on its way to a fresh answer (one per request the kept answers do not serve):
    what the pipeline's steps share, and its logger. `reuse_key` is where its answer may be kept
    (None once it failed), `kept` the kept answer the testing aid compares it with; `call`,
    `intervention` and `received_at` are the hooks' view of it, when there are hooks."""

    __slots__ = (
        "call",
        "conn",
        "entry",
        "intervention",
        "kept",
        "received_at",
        "reuse_key",
        "started",
    )

    def __init__(
        self,
        log: structlog.stdlib.BoundLogger,
        header: RequestHeader,
        entry: HandlerEntry,
        conn: ConnectionInfo,
        started: float,
        reuse_key: tuple[str, int, int, bytes] | None,
        kept: _Reused | None,
    ) -> None:
        # The logger's fields set here rather than by _RequestLog.__init__: one call less on
        # every request.
        self._log = log
        self.header = header
        self.api = entry.name
        self._bound = None
        self.entry = entry
        self.conn = conn
        self.started = started
        self.reuse_key = reuse_key
        self.kept = kept
        self.call: RequestCall | None = None
        self.intervention: Intervention | None = None
        self.received_at = 0.0


def _resent(kept: _Reused, header: RequestHeader, conn: ConnectionInfo) -> bytes:
    """A kept answer under this request's correlation id; a kept ApiVersions answer records the
    client software its request named, as answering it afresh would."""
    if kept.software is not None:
        conn.client_software_name, conn.client_software_version = kept.software
    return response_head(header) + kept.body


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


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


@dataclass(frozen=True, slots=True)
class _Reused:
    """A kept answer's body, and the client software its request records (ApiVersions)."""

    body: bytes
    software: tuple[str, str] | None


@dataclass(frozen=True, slots=True)
class ReusedAnswerMismatch:
    """A reused answer that differs from the one built afresh (the testing aid's finding)."""

    broker_id: int
    listener: str
    api_key: int
    api_version: int
    request_body: bytes
    kept: bytes
    fresh: bytes
    kept_software: tuple[str, str] | None
    fresh_software: tuple[str, str] | None

    @property
    def first_difference(self) -> int:
        """The offset of the first byte where the bodies differ (the shorter one's length
        when one is a prefix of the other; -1 when only the software differs)."""
        for i, (a, b) in enumerate(zip(self.kept, self.fresh, strict=False)):
            if a != b:
                return i
        return -1 if len(self.kept) == len(self.fresh) else min(len(self.kept), len(self.fresh))

    def describe(self) -> str:
        try:
            api = ApiKey(self.api_key).name
        except ValueError:
            api = str(self.api_key)
        return (
            f"broker {self.broker_id}, listener {self.listener}: a reused {api} "
            f"v{self.api_version} answer differs from the one built afresh "
            f"(first difference at body byte {self.first_difference})\n"
            f"  request body: {self.request_body.hex()}\n"
            f"  kept  ({len(self.kept)} bytes): {self.kept.hex()}\n"
            f"  fresh ({len(self.fresh)} bytes): {self.fresh.hex()}"
            + (
                f"\n  client software: kept {self.kept_software}, fresh {self.fresh_software}"
                if self.kept_software != self.fresh_software
                else ""
            )
        )


class ReuseChecks:
    """What the testing aid found in this process, across every broker: how many reused
    answers were compared, by API key, and those that differed (in order)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.compared: dict[int, int] = {}
        self.mismatches: list[ReusedAnswerMismatch] = []

    def add(self, api_key: int, mismatch: ReusedAnswerMismatch | None) -> None:
        with self._lock:
            self.compared[api_key] = self.compared.get(api_key, 0) + 1
            if mismatch is not None:
                self.mismatches.append(mismatch)


#: The testing aid's findings in this process (`CHECK_REUSED_ANSWERS_ENV`).
REUSE_CHECKS = ReuseChecks()


def _many_items(message: Any) -> bool:
    """Whether an answer holds so many entries that encoding it would hold the loop for long:
    its top-level lists (topics, resources, results, ...) and the lists inside their entries
    (a topic's partitions), counted until the limit is passed. Which fields are lists comes
    from the message's definition, so entries without lists (ApiVersions' keys) are not
    walked."""
    total = 0
    for name, inner in _list_fields(type(message)):
        value = getattr(message, name, None)
        if not value:
            continue
        total += len(value)
        if total > LARGE_ANSWER_ITEMS:
            return True
        if not inner:
            continue
        for item in value:
            for inner_name in inner:
                nested = getattr(item, inner_name, None)
                if nested:
                    total += len(nested)
            if total > LARGE_ANSWER_ITEMS:
                return True
    return False


def _list_fields(cls: type) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """A message class's array fields, each with the array fields of its entries (worked out
    once per class from its definition)."""
    known = _LIST_FIELDS.get(cls)
    if known is None:
        known = _LIST_FIELDS[cls] = tuple(
            (
                field.attr,
                tuple(f.attr for f in field.struct.fields if f.is_array) if field.struct else (),
            )
            for field in definition_of(cls).struct.fields
            if field.is_array
        )
    return known


_LIST_FIELDS: dict[type, tuple[tuple[str, tuple[str, ...]], ...]] = {}
