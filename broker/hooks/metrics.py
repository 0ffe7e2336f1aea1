"""StatsD metrics of a cluster, sent over UDP with asyncio-dgram (`--statsd host:port`).

`StatsdMetrics` is a request hook (`zkbroker.broker.server.hooks`) that never intervenes: its
`observe()` only puts a small tuple into a bounded queue (full: dropped and counted). One
background task formats the lines, adds the gauges every `interval_s`, packs them into packets
of at most `MAX_PACKET_BYTES` and sends them; a failed send is logged once and forgotten, so
metrics never block or fail a request. The metric names are listed in the README, "Metrics
(StatsD)".

Not here: other backends (Prometheus, OpenTelemetry), tags (DogStatsD), metrics of other
processes (each zkbroker process sends its own).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import asyncio_dgram

from zkbroker.broker.asyncutil import cancel_and_wait, wait_for
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol.error_codes import name_of
from zkbroker.broker.server.hooks import Intervention, RequestCall, RequestRecord
from zkbroker.broker.settings import parse_address

__all__ = [
    "DEFAULT_INTERVAL_S",
    "MAX_PACKET_BYTES",
    "PREFIX",
    "StatsdMetrics",
    "pack_lines",
]

PREFIX = "zkbroker."
DEFAULT_INTERVAL_S = 10.0
# Fits an Internet MTU of 1500 with IP and UDP headers: what StatsD clients use by default.
MAX_PACKET_BYTES = 1432
DEFAULT_QUEUE_SIZE = 10_000
_SEND_TIMEOUT_S = 1.0

log = get_logger(__name__)

# (api name, version, error, latency in ms, a hook intervened)
# A request: (api, version, error, latency ms, injected); a controller event: (name, ms).
_RequestSample = tuple[str, int, str, float, bool]
_EventSample = tuple[str, float]
_Sample = _RequestSample | _EventSample



def pack_lines(lines: Iterable[str], max_bytes: int = MAX_PACKET_BYTES) -> list[bytes]:
    """Newline-separated packets of at most `max_bytes` (a longer single line goes alone)."""
    packets: list[bytes] = []
    current = bytearray()
    for line in lines:
        data = line.encode()
        if current and len(current) + 1 + len(data) > max_bytes:
            packets.append(bytes(current))
            current = bytearray()
        if current:
            current += b"\n"
        current += data
    if current:
        packets.append(bytes(current))
    return packets



def _format_sample(sample: _Sample, prefix: str) -> list[str]:
    if len(sample) == 2:
        name, run_ms = sample
        return [f"{prefix}controller.event.{name}:{run_ms:.3f}|ms"]
    api, version, error, latency_ms, injected = sample
    lines = [
        f"{prefix}requests.{api}.v{version}.{error}:1|c",
        f"{prefix}request_latency.{api}.v{version}:{latency_ms:.3f}|ms",
    ]
    if injected:
        lines.append(f"{prefix}faults.injected:1|c")
    return lines


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.3f}"


class StatsdMetrics:
    """A request hook that sends StatsD metrics; `start()`/`stop()` run its sender task."""

    def __init__(
        self,
        address: str,
        *,
        gauges: Callable[[], Mapping[str, float]] | None = None,
        interval_s: float = DEFAULT_INTERVAL_S,
        prefix: str = PREFIX,
        queue_size: int = DEFAULT_QUEUE_SIZE,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("the StatsD gauge interval must be positive")
        self.address = parse_address(address)
        self.prefix = prefix
        self.interval_s = interval_s
        self._gauges = gauges
        self._queue: asyncio.Queue[_Sample] = asyncio.Queue(maxsize=queue_size)
        self._task: asyncio.Task[None] | None = None
        self._stream: Any = None
        self._send_error_logged = False
        # Counters for tests and diagnostics.
        self.dropped = 0
        self._dropped_reported = 0
        self.packets_sent = 0
        self.send_errors = 0
        # Packets given up when the socket would not take them within the send timeout.
        self.dropped_packets = 0

    # ---- RequestHook ---------------------------------------------------------------------

    async def intervene(self, call: RequestCall) -> Intervention | None:
        return None

    def observe(self, record: RequestRecord) -> None:
        if record.response is None:
            error = "dropped"
        elif record.error_codes:
            error = name_of(record.error_codes[0]).lower()
        else:
            error = "none"
        call = record.call
        sample = (
            call.api_name,
            call.header.api_version,
            error,
            record.latency_us / 1000,
            record.intervention is not None,
        )
        try:
            self._queue.put_nowait(sample)
        except asyncio.QueueFull:
            self.dropped += 1

    def controller_event(self, name: str, run_s: float) -> None:
        """A controller event of this process ran for `run_s` seconds (never waits)."""
        try:
            self._queue.put_nowait((name, run_s * 1000))
        except asyncio.QueueFull:
            self.dropped += 1

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="zkbroker-statsd")
            log.info("statsd.started", host=self.address[0], port=self.address[1])

    async def stop(self) -> None:
        """Stop the sender; what is still queued is sent once more (best effort)."""
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait([task], what="statsd", log=log)
            await self._send_lines(self._drain_queue())
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    # ---- sender ----------------------------------------------------------------------------

    def _drain_queue(self) -> list[str]:
        lines: list[str] = []
        while True:
            try:
                sample = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                return lines
            lines.extend(_format_sample(sample, self.prefix))

    def gauge_lines(self) -> list[str]:
        lines = []
        if self._gauges is not None:
            try:
                gauges = self._gauges()
            except Exception:
                log.exception("statsd.gauges_failed")
                gauges = {}
            lines = [f"{self.prefix}{k}:{_number(v)}|g" for k, v in gauges.items()]
        dropped = self.dropped - self._dropped_reported
        if dropped:
            self._dropped_reported = self.dropped
            lines.append(f"{self.prefix}metrics.dropped:{dropped}|c")
        return lines

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_gauges = loop.time()
        while True:
            lines: list[str] = []
            timeout = next_gauges - loop.time()
            if timeout > 0:
                with contextlib.suppress(TimeoutError):
                    sample = await wait_for(self._queue.get(), timeout)
                    lines.extend(_format_sample(sample, self.prefix))
            lines.extend(self._drain_queue())
            if loop.time() >= next_gauges:
                lines.extend(self.gauge_lines())
                next_gauges = max(next_gauges + self.interval_s, loop.time())
            await self._send_lines(lines)

    async def _send_lines(self, lines: list[str]) -> None:
        packets = pack_lines(lines)
        for index, packet in enumerate(packets):
            try:
                if self._stream is None:
                    self._stream = await asyncio_dgram.connect(self.address)
                await wait_for(self._stream.send(packet), _SEND_TIMEOUT_S)
                self.packets_sent += 1
            except asyncio.CancelledError:
                raise
            except TimeoutError:
                # The socket stopped taking packets (its buffer is full): every later packet
                # of this round would wait as long, so they are dropped and counted.
                self.send_errors += 1
                self.dropped_packets += len(packets) - index
                return
            except Exception as e:
                self.send_errors += 1
                if isinstance(e, asyncio_dgram.TransportClosed) and self._stream is not None:
                    self._stream = None  # connect again for the next packet
                if not self._send_error_logged:
                    self._send_error_logged = True
                    log.warning(
                        "statsd.send_failed",
                        host=self.address[0],
                        port=self.address[1],
                        error=repr(e),
                        note="further send errors are not logged",
                    )
