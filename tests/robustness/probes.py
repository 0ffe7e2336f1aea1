"""The instruments of the robustness suite: a health client, a broker-log watch, RSS, and a
raw frame connection.

- `HealthMonitor`: a thread with its own connection that sends Metadata (no topics) every
  `interval_s` and times each answer. The issue's definition of "no hang" is that this
  client is answered within 1 s throughout (`HEALTH_LIMIT_S`); latencies are kept for the
  p50/p99/max figures.
- `LogWatch`: a logging handler on the root logger. The broker logs through structlog into
  the standard library (`zkbroker.broker.log`), so every `request.failed` / `response.unencodable`
  event, every record at ERROR or above and every record carrying an exception (a
  traceback: asyncio's "Task exception was never retrieved" included) is kept as a failure.
  Warnings (`connection.closing`, Kafka's expected closes) are only counted.
- `rss_bytes()`: this process's resident set (the brokers of `with Cluster(...)` run in it).
- `FrameConn`: a blocking socket that sends whole frames and reads size-prefixed answers,
  telling an answer, a close by the broker (EOF/reset) and silence apart.

Deliberately not here: what is sent (`frames`) and any assertion (the tests decide).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from zkbroker.broker.protocol import RequestHeader, decode_response, encode_request
from zkbroker.broker.protocol.messages.metadata import MetadataRequest

# The "no hang": the health client's Metadata is answered within 1 s, always.
HEALTH_LIMIT_S = 1.0

_SIZE = struct.Struct(">i")


def rss_bytes() -> int:
    """Resident set size of this process (Linux /proc), in bytes."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


# ---------------------------------------------------------------------------------------
# A raw frame connection
# ---------------------------------------------------------------------------------------


class Closed(Exception):
    """The broker closed the connection (EOF or reset)."""


class FrameConn:
    """One TCP connection that speaks frames: `send(data)`, `recv_frame()`."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = bytearray()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> FrameConn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> None:
        try:
            chunk = self.sock.recv(262144)
        except (ConnectionResetError, BrokenPipeError) as e:
            raise Closed(str(e)) from None
        if not chunk:
            raise Closed("EOF")
        self._buf += chunk

    def recv_frame(self) -> bytes:
        """The next answer (without its size prefix); `Closed` on EOF, `TimeoutError` when
        nothing came within the socket timeout."""
        buf = self._buf
        while len(buf) < 4:
            self._fill()
        (size,) = _SIZE.unpack_from(buf, 0)
        while len(buf) < 4 + size:
            self._fill()
        frame = bytes(buf[4 : 4 + size])
        del buf[: 4 + size]
        return frame

    def closed_by_peer(self) -> bool:
        """Wait (up to the socket timeout) for EOF; True if it came with nothing before it."""
        try:
            self.recv_frame()
        except Closed:
            return True
        return False


_HOLDER = """
import socket, sys
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conns = [socket.create_connection((host, port), timeout=60) for _ in range(n)]
print("ready", flush=True)
sys.stdin.readline()
for c in conns:
    c.close()
"""


@contextlib.contextmanager
def held_connections(host: str, port: int, count: int) -> Iterator[None]:
    """`count` idle connections opened and held by a child process (not by a thread of
    this one, whose tight connect loop would starve the brokers' thread of the GIL and
    measure that instead), closed on exit."""
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, host, str(port), str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError("the connection holder failed to open its connections")
        yield
        child.stdin.write("\n")
        child.stdin.flush()
        child.wait(60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)


def frame_of(api_key: int, version: int, body: Any, correlation_id: int, client_id: str) -> bytes:
    """A size-prefixed request frame."""
    header = RequestHeader(
        api_key=api_key, api_version=version, correlation_id=correlation_id, client_id=client_id
    )
    payload = encode_request(header, body)
    return _SIZE.pack(len(payload)) + payload


# ---------------------------------------------------------------------------------------
# The health client
# ---------------------------------------------------------------------------------------


@dataclass
class HealthFigures:
    samples: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    over_limit: int

    def line(self) -> str:
        return (
            f"health: {self.samples} Metadata, p50 {self.p50_ms:.2f} ms, "
            f"p99 {self.p99_ms:.2f} ms, max {self.max_ms:.2f} ms, "
            f"over {HEALTH_LIMIT_S:.0f} s: {self.over_limit}"
        )


@dataclass
class HealthMonitor:
    """Metadata v1 (no topics) on a connection of its own, every `interval_s`, timed."""

    host: str
    port: int
    interval_s: float = 0.05
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> HealthMonitor:
        self._thread = threading.Thread(target=self._run, name="health-client", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(15)

    def _run(self) -> None:
        correlation = 0
        conn: FrameConn | None = None
        body = MetadataRequest(topics=[])
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = FrameConn(self.host, self.port, timeout=10.0)
                correlation += 1
                frame = frame_of(3, 1, body, correlation, "health")
                started = time.perf_counter()
                conn.send(frame)
                got, _ = decode_response(3, 1, conn.recv_frame())
                elapsed = time.perf_counter() - started
                self.latencies.append(elapsed)
                if got != correlation:
                    self.failures.append(
                        f"health answer has correlation id {got}, not {correlation}"
                    )
                if elapsed > HEALTH_LIMIT_S:
                    self.failures.append(f"health Metadata answered after {elapsed:.3f} s")
            except Exception as e:  # a hang (timeout) or a close: both are failures here
                self.latencies.append(10.0)
                self.failures.append(f"health client: {type(e).__name__}: {e}")
                if conn is not None:
                    conn.close()
                conn = None
            self._stop.wait(self.interval_s)
        if conn is not None:
            conn.close()

    def check_now(self) -> float:
        """One extra Metadata on a fresh connection, timed (for tests that want a probe at a
        precise moment rather than the background cadence)."""
        started = time.perf_counter()
        with FrameConn(self.host, self.port, timeout=10.0) as conn:
            conn.send(frame_of(3, 1, MetadataRequest(topics=[]), 1, "health-probe"))
            decode_response(3, 1, conn.recv_frame())
        return time.perf_counter() - started

    def figures(self) -> HealthFigures:
        values = sorted(self.latencies) or [0.0]
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        return HealthFigures(
            samples=len(self.latencies),
            p50_ms=statistics.median(values) * 1000,
            p99_ms=p99 * 1000,
            max_ms=values[-1] * 1000,
            over_limit=sum(1 for v in values if v > HEALTH_LIMIT_S),
        )


# ---------------------------------------------------------------------------------------
# The broker's log
# ---------------------------------------------------------------------------------------

# Events that mean "a request went wrong inside the broker" whatever their level.
FAILURE_EVENTS = frozenset({"request.failed", "response.unencodable"})


def _event_of(record: logging.LogRecord) -> tuple[str, dict[str, Any]]:
    msg = record.msg
    if isinstance(msg, dict):  # zkbroker.broker.log.Event: the event's fields
        return str(msg.get("event", "")), msg
    return record.getMessage(), {}


class LogWatch(logging.Handler):
    """Keeps the broker log records that are failures (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.failures: list[str] = []
        self.warnings = 0
        self.lock_ = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        event, fields = _event_of(record)
        failure = (
            event in FAILURE_EVENTS
            or record.levelno >= logging.ERROR
            or record.exc_info is not None
            or bool(fields.get("exc_info"))
            or "exception" in fields
        )
        if failure:
            detail = {k: v for k, v in fields.items() if not k.startswith("_")}
            text = f"{record.name} {logging.getLevelName(record.levelno)} {event} {detail}"
            if record.exc_info and record.exc_info[1] is not None:
                text += f" {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
            with self.lock_:
                if len(self.failures) < 100:
                    self.failures.append(text[:2000])
        elif record.levelno >= logging.WARNING:
            self.warnings += 1

    def take(self) -> list[str]:
        with self.lock_:
            got, self.failures = self.failures, []
        return got


@contextlib.contextmanager
def quiet_handlers(level: int = logging.ERROR) -> Iterator[None]:
    """Raise every root handler but `LogWatch` to `level` (pytest's own capture handler
    included, which would otherwise keep every warning record of a run in memory)."""
    root = logging.getLogger()
    saved = [(h, h.level) for h in root.handlers if not isinstance(h, LogWatch)]
    for handler, _ in saved:
        handler.setLevel(level)
    try:
        yield
    finally:
        for handler, old in saved:
            handler.setLevel(old)
