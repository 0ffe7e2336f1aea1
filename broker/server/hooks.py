"""The extension point of request handling, into which fault injection, capture and metrics plug.

The request pipeline (`zkbroker.broker.server.request_pipeline`) calls a broker's `HookChain`
for every decoded request: `intervene` before the handler (the first hook answering an
`Intervention` decides: delay, hold, drop the connection, or answer the API's error response
with one code on every item, as Kafka's `getErrorResponse`), then `observe` with the record of
the exchange. Observers run on the event loop in the request's path, so they must be quick;
one that raises is logged and never fails the request. A record's `error_codes` are computed
on first read, so hooks that do not read them cost nothing.

Not here: requests refused before decoding (they close the connection, docs/kafka-behaviour.md
§0, and reach no hook), particular hooks (`zkbroker.broker.hooks`), state shared across processes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Protocol

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import RequestHeader
from zkbroker.handlers.context import ConnectionInfo

log = get_logger(__name__)


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


def collect_error_codes(message: Any) -> list[int]:
    """Distinct non-zero error codes anywhere in a response, in first-seen order."""
    found: dict[int, None] = {}
    stack = [message]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif is_dataclass(item):
            for f in fields(item):
                value = getattr(item, f.name)
                if f.name.endswith("error_code") and isinstance(value, int):
                    if value:
                        found.setdefault(value)
                elif isinstance(value, list) or is_dataclass(value):
                    stack.append(value)
    return list(found)


class RequestRecord:
    """One answered (or dropped) request as observers see it."""

    __slots__ = ("_error_codes", "call", "intervention", "latency_us", "received_at", "response")

    def __init__(
        self,
        call: RequestCall,
        response: Any | None,
        error_codes: list[int] | None,
        received_at: float,
        latency_us: int,
        intervention: Intervention | None = None,
    ) -> None:
        self.call = call
        # None when the connection was dropped without an answer.
        self.response = response
        # None: collected from the response when first read.
        self._error_codes = error_codes
        # Wall-clock time the request was decoded (seconds since the epoch).
        self.received_at = received_at
        self.latency_us = latency_us
        self.intervention = intervention

    @property
    def error_codes(self) -> list[int]:
        """Every distinct non-zero error code of the response (`collect_error_codes`)."""
        if self._error_codes is None:
            self._error_codes = collect_error_codes(self.response)
        return self._error_codes

    def __repr__(self) -> str:
        return (
            f"RequestRecord(call={self.call!r}, response={self.response!r}, "
            f"error_codes={self.error_codes!r}, received_at={self.received_at!r}, "
            f"latency_us={self.latency_us!r}, intervention={self.intervention!r})"
        )


class RequestHook(Protocol):
    async def intervene(self, call: RequestCall) -> Intervention | None: ...

    def observe(self, record: RequestRecord) -> None: ...


class HookChain:
    """The hooks of a cluster's brokers, in the order they were added."""

    def __init__(self) -> None:
        # Replaced, never mutated: a request iterates the hooks it started with, without a copy.
        self._hooks: tuple[RequestHook, ...] = ()

    def add(self, hook: RequestHook) -> None:
        """Add `hook` at the end (no-op if it is already in the chain)."""
        if hook not in self._hooks:
            self._hooks = (*self._hooks, hook)

    def remove(self, hook: RequestHook) -> None:
        if hook in self._hooks:
            hooks = list(self._hooks)
            hooks.remove(hook)
            self._hooks = tuple(hooks)

    def __bool__(self) -> bool:
        return bool(self._hooks)

    async def intervene(self, call: RequestCall) -> Intervention | None:
        for hook in self._hooks:
            try:
                intervention = await hook.intervene(call)
            except Exception:
                log.exception("request_hook.intervene_failed", hook=type(hook).__name__)
                continue
            if intervention is not None:
                return intervention
        return None

    def observe(self, record: RequestRecord) -> None:
        for hook in self._hooks:
            try:
                hook.observe(record)
            except Exception:
                log.exception("request_hook.observe_failed", hook=type(hook).__name__)
