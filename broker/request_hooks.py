"""The extension point of request handling: what fault injection, capture and metrics plug into.

A broker's listener (`broker.server`) calls its `HookChain` for every request it has decoded:

1. `await chain.intervene(call)` before the handler runs. A hook may answer an `Intervention`:
   wait (`delay_s`, or until `hold` is set: a blackhole), then close the connection without
   an answer (`drop`), answer the API's error response with `error_code` on every item (as
   Kafka's getErrorResponse does), or go on to the handler. The first hook that intervenes
   decides; hooks are asked in the order they were added.
2. `chain.observe(record)` once the answer is known (or the connection is being dropped),
   with the decoded request and response, error codes and latency. Observers must be quick
   and must not block: they run on the event loop inside the request's path. An observer that
   raises is logged and never fails the request.

Requests the listener refuses before decoding (unknown API, bad version, bad frame) reach no
hook: they close the connection as Kafka does, and are logged by the listener.

Deliberately not here: any particular fault, capture format or metric (`broker.faults`,
`broker.capture`, `broker.metrics`), and state shared across processes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from broker.protocol import RequestHeader
from handlers.context import ConnectionInfo

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class RequestCall:
    """One decoded request as a hook sees it."""

    broker_id: int
    connection: ConnectionInfo
    header: RequestHeader
    api_name: str
    request: Any


@dataclass(frozen=True, slots=True)
class Intervention:
    """What a hook wants done with a request instead of (or before) handling it."""

    delay_s: float = 0.0
    # Answer nothing until this is set (a blackhole); then the request goes on as below.
    hold: asyncio.Event | None = None
    drop: bool = False
    error_code: int | None = None
    error_message: str | None = None
    # Who intervened, for logs and records (e.g. "fault:3").
    source: str = ""


@dataclass(frozen=True, slots=True)
class RequestRecord:
    call: RequestCall
    # None when the connection was dropped without an answer.
    response: Any | None
    error_codes: list[int]
    # Wall-clock time the request was decoded (seconds since the epoch).
    received_at: float
    latency_us: int
    intervention: Intervention | None = None


class RequestHook(Protocol):
    async def intervene(self, call: RequestCall) -> Intervention | None: ...

    def observe(self, record: RequestRecord) -> None: ...


class HookChain:
    """The hooks of a cluster's brokers, in the order they were added."""

    def __init__(self) -> None:
        self._hooks: list[RequestHook] = []

    def add(self, hook: RequestHook) -> None:
        self._hooks.append(hook)

    def remove(self, hook: RequestHook) -> None:
        if hook in self._hooks:
            self._hooks.remove(hook)

    def __bool__(self) -> bool:
        return bool(self._hooks)

    async def intervene(self, call: RequestCall) -> Intervention | None:
        for hook in list(self._hooks):
            try:
                intervention = await hook.intervene(call)
            except Exception:
                log.exception("request_hook.intervene_failed", hook=type(hook).__name__)
                continue
            if intervention is not None:
                return intervention
        return None

    def observe(self, record: RequestRecord) -> None:
        for hook in list(self._hooks):
            try:
                hook.observe(record)
            except Exception:
                log.exception("request_hook.observe_failed", hook=type(hook).__name__)
