"""Request capture: every request a cluster's brokers answer, kept in memory and optionally
written to a JSON Lines file (`zkbroker run --capture FILE.jsonl`, `Cluster.capture()`).

`RequestCapture` is a request hook (`zkbroker.broker.server.hooks`): on the request path its
`observe()` only appends to a bounded deque (the newest `DEFAULT_MAX_RECORDS`) and to the
writer's queue; a background task writes the lines in batches when the listeners are quiet (at
most `WRITE_MAX_LAG_S` late). A file zkbroker creates is owner-only (`CAPTURE_FILE_MODE`); an
existing one is appended to as it is. A line's fields are `CAPTURE_LINE_SCHEMA` (README
"Request capture"); `CapturedRequest` is the Python view of one (`Cluster.requests(...)`).
Requests refused before decoding reach no hook and are never captured.

Not here: fault injection and metrics (`zkbroker.broker.hooks.faults`, `...hooks.metrics`),
capture across processes (each process captures what its own brokers answer).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import enum
import json
import math
import os
import uuid
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

from zkbroker.broker.asyncutil import cancel_and_wait
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol.jsonable import message_converter
from zkbroker.broker.server.hooks import Intervention, RequestCall, RequestRecord

log = get_logger(__name__)

# How many records the in-memory view keeps (the newest ones).
DEFAULT_MAX_RECORDS = 100_000

# The mode a capture file is created with: whole requests, config values included.
CAPTURE_FILE_MODE = 0o600

_NULLABLE_STRING = {"type": ["string", "null"]}
_INT = {"type": "integer"}

# JSON Schema (draft 2020-12) of one line of a capture file.
CAPTURE_LINE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "zkbroker captured request",
    "type": "object",
    "required": [
        "time",
        "broker_id",
        "connection_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "api",
        "api_key",
        "api_version",
        "correlation_id",
        "request",
        "response",
        "error_codes",
        "latency_us",
        "intervention",
    ],
    "additionalProperties": False,
    "properties": {
        "time": {"type": "string", "format": "date-time"},
        "broker_id": {"type": "integer", "minimum": 0},
        "connection_id": {"type": "string"},
        "client_id": _NULLABLE_STRING,
        "client_software_name": _NULLABLE_STRING,
        "client_software_version": _NULLABLE_STRING,
        "api": {"type": "string"},
        "api_key": {"type": "integer", "minimum": 0},
        "api_version": {"type": "integer", "minimum": 0},
        "correlation_id": _INT,
        # Field names are the snake_case attributes of zkbroker.broker.protocol's message classes.
        "request": {"type": "object"},
        "response": {"type": ["object", "null"]},
        "error_codes": {"type": "array", "items": _INT},
        "latency_us": {"type": "integer", "minimum": 0},
        "intervention": {
            "type": ["object", "null"],
            "required": ["source", "kind", "delay_s", "error_code"],
            "additionalProperties": False,
            "properties": {
                "source": {"type": "string"},
                "kind": {"enum": ["drop", "error", "hold", "delay", "none"]},
                "delay_s": {"type": "number", "minimum": 0},
                "error_code": {"type": ["integer", "null"]},
            },
        },
    },
}


def to_jsonable(value: Any) -> Any:
    """A JSON-safe form of a decoded message or any value inside one.

    Generated Kafka messages go through `zkbroker.broker.protocol.message_to_dict` (snake_case keys,
    every field; UUIDs as Kafka's own text, e.g. "AAAAAAAAAAAAAAAAAAAAAA"). Anything else:
    dataclasses become dicts, bytes standard base64 text, UUIDs `str(uuid)`, enums their
    value, tuples/sets lists, non-finite floats their repr; other objects their `str()`.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    convert = message_converter(type(value))
    if convert is not None:
        return convert(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    return str(value)


def _intervention_json(intervention: Intervention | None) -> dict[str, Any] | None:
    if intervention is None:
        return None
    if intervention.drop:
        kind = "drop"
    elif intervention.error_code is not None:
        kind = "error"
    elif intervention.hold is not None:
        kind = "hold"
    elif intervention.delay_s > 0:
        kind = "delay"
    else:
        kind = "none"
    return {
        "source": intervention.source,
        "kind": kind,
        "delay_s": intervention.delay_s,
        "error_code": intervention.error_code,
    }


def _iso_utc(timestamp: float) -> str:
    text = datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="microseconds")
    return text.replace("+00:00", "Z")


def record_to_json(record: RequestRecord) -> dict[str, Any]:
    """One capture line's dict (`CAPTURE_LINE_SCHEMA`) for a request record."""
    call = record.call
    header = call.header
    conn = call.connection
    return {
        "time": _iso_utc(record.received_at),
        "broker_id": call.broker_id,
        "connection_id": conn.connection_id,
        "client_id": header.client_id,
        "client_software_name": conn.client_software_name,
        "client_software_version": conn.client_software_version,
        "api": call.api_name,
        "api_key": header.api_key,
        "api_version": header.api_version,
        "correlation_id": header.correlation_id,
        "request": to_jsonable(call.request),
        "response": to_jsonable(record.response),
        "error_codes": list(record.error_codes),
        "latency_us": record.latency_us,
        "intervention": _intervention_json(record.intervention),
    }


def record_to_line(record: RequestRecord) -> str:
    """The capture file's line (with its newline) for a request record."""
    return json.dumps(record_to_json(record), separators=(",", ":"), allow_nan=False) + "\n"


@dataclass(frozen=True, slots=True)
class CapturedRequest:
    """One captured request, for assertions: the decoded request and response objects."""

    record: RequestRecord

    @property
    def api(self) -> str:
        return self.record.call.api_name

    @property
    def api_key(self) -> int:
        return self.record.call.header.api_key

    @property
    def version(self) -> int:
        return self.record.call.header.api_version

    @property
    def correlation_id(self) -> int:
        return self.record.call.header.correlation_id

    @property
    def broker_id(self) -> int:
        return self.record.call.broker_id

    @property
    def connection_id(self) -> str:
        return self.record.call.connection.connection_id

    @property
    def client_id(self) -> str | None:
        return self.record.call.header.client_id

    @property
    def client_software_name(self) -> str | None:
        return self.record.call.connection.client_software_name

    @property
    def client_software_version(self) -> str | None:
        return self.record.call.connection.client_software_version

    @property
    def request(self) -> Any:
        return self.record.call.request

    @property
    def response(self) -> Any | None:
        """None when the connection was dropped without an answer."""
        return self.record.response

    @property
    def error_codes(self) -> list[int]:
        return self.record.error_codes

    @property
    def latency_us(self) -> int:
        return self.record.latency_us

    @property
    def received_at(self) -> float:
        return self.record.received_at

    @property
    def intervention(self) -> Intervention | None:
        return self.record.intervention

    def as_json(self) -> dict[str, Any]:
        """The same dict as this request's line in a capture file."""
        return record_to_json(self.record)


# The file is written in batches, off the requests' path: when no request has arrived for
# WRITE_QUIET_S, and at the latest WRITE_MAX_LAG_S after the oldest unwritten record or once
# WRITE_MAX_PENDING records wait. Converting a record costs tens of microseconds, as much as
# answering a small request, so converting each one as it comes would slow the next request.
WRITE_QUIET_S = 0.005
WRITE_MAX_LAG_S = 0.5
WRITE_MAX_PENDING = 5_000


class RequestCapture:
    """The capture hook: records in memory, and lines in `path` when one is given.

    Use it on the cluster's event loop (it is one of the cluster's request hooks).
    """

    def __init__(self, path: str | None = None, max_records: int = DEFAULT_MAX_RECORDS) -> None:
        if max_records < 1:
            raise ValueError("max_records must be >= 1")
        self.path = path
        self.max_records = max_records
        self._records: deque[RequestRecord] = deque(maxlen=max_records)
        self._pending: deque[RequestRecord] = deque()
        self._wake = asyncio.Event()
        self._file: IO[str] | None = None
        self._writer: asyncio.Task[None] | None = None
        self.lines_written = 0
        self._observed = 0

    # -- the hook ---------------------------------------------------------------------------

    async def intervene(self, call: RequestCall) -> Intervention | None:
        return None

    def observe(self, record: RequestRecord) -> None:
        self._observed += 1
        self._records.append(record)
        if self._file is not None:
            self._pending.append(record)
            if self._writer is None:
                self._writer = asyncio.get_running_loop().create_task(
                    self._write_loop(), name="zkbroker-capture-writer"
                )
            self._wake.set()

    # -- the file ---------------------------------------------------------------------------

    def open(self) -> None:
        """Open the file for appending (no-op without a path or when open already)."""
        if self.path is not None and self._file is None:
            # Created 0600 (the umask can only narrow it); an existing file keeps its mode.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, CAPTURE_FILE_MODE)
            self._file = os.fdopen(fd, "a", encoding="utf-8")

    async def aclose(self) -> None:
        """Write every queued record, then close the file. In-memory records stay. The writer
        task is cancelled and waited for, at most `CANCEL_WAIT_S` (`cancel_and_wait`); the
        file is written and closed even when the caller is cancelled meanwhile (then
        CancelledError is raised)."""
        writer, self._writer = self._writer, None
        try:
            if writer is not None:
                await cancel_and_wait([writer], what="capture", log=log)
        finally:
            if self._file is not None:
                self._drain_now()
                self._file.close()
                self._file = None

    async def flushed(self) -> None:
        """Wait until every record observed so far is written to the file."""
        while self._pending and self._writer is not None and not self._writer.done():
            await asyncio.sleep(0.001)
        if self._pending and self._file is not None:
            self._drain_now()

    def _drain_now(self) -> None:
        assert self._file is not None
        while self._pending:
            self._write(self._pending.popleft())
        self._file.flush()

    def _write(self, record: RequestRecord) -> None:
        assert self._file is not None
        try:
            line = record_to_line(record)
        except Exception:
            log.exception("capture.unconvertible", api=record.call.api_name)
            return
        self._file.write(line)
        self.lines_written += 1

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                # Serving requests comes first: convert once the listeners have been quiet for
                # a moment, or when the file would lag too far behind (time or records).
                deadline = loop.time() + WRITE_MAX_LAG_S
                while (
                    self._pending
                    and loop.time() < deadline
                    and len(self._pending) < WRITE_MAX_PENDING
                ):
                    seen = self._observed
                    await asyncio.sleep(WRITE_QUIET_S)
                    if self._observed == seen:
                        break
                if self._file is not None:
                    self._drain_now()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("capture.writer_failed", path=self.path)

    # -- the in-memory view -----------------------------------------------------------------

    def clear(self) -> None:
        """Forget the in-memory records (the file keeps its lines)."""
        self._records.clear()

    def requests(
        self,
        api: str | None = None,
        client_id: str | None = None,
        broker_id: int | None = None,
        version: int | None = None,
    ) -> list[CapturedRequest]:
        """The captured requests matching every filter given, oldest first."""
        return [
            CapturedRequest(r)
            for r in self._records
            if (api is None or r.call.api_name == api)
            and (client_id is None or r.call.header.client_id == client_id)
            and (broker_id is None or r.call.broker_id == broker_id)
            and (version is None or r.call.header.api_version == version)
        ]
