"""Hostile partial requests: another client's Metadata latency and the broker's RSS.

A one-broker `zkbroker run` process (its own RSS; zkbroker's default budget,
`queued.max.request.bytes` = `socket.request.max.bytes` = 100 MiB) runs on an embedded
ZooKeeper. A probe sends Metadata v1 back to back for the whole run. Windows:

- baseline: nothing else connected;
- held: 3 connections each send a legal size prefix of 100 MiB, then `--partial-mib` of its body,
  and stay open sending nothing more (the senders give up on what the broker does not read);
- after: the 3 connections closed.

Printed: the probe's p50/p99/max per window (a request with no answer for `PROBE_TIMEOUT_S`
counts as that long and ends the probe), RSS at the start, the peak while held and after the
close. Targets (issue 35, not asserted): held p99 <= 50 ms; after within 20 MiB of the start.

Run: python bench/partial_requests.py [--request-mib N] [--partial-mib N] [--hold-s S]
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from heavy_requests import percentile, rss_mib, start_broker

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper

MAX_REQUEST_MIB = 100  # = socket.request.max.bytes: the largest legal request
HOSTILE = 3
PROBE_TIMEOUT_S = 10.0
SETTLE_S = 2.0  # after the close: time for the broker to notice and free
TARGET_P99_MS = 50.0
TARGET_RSS_MIB = 20.0


class Probe:
    """Metadata requests one after the other, latencies (s) tagged with the current window."""

    def __init__(self, host: str, port: int, pid: int) -> None:
        self.client = WireClient(host, port, client_id="probe")
        self.client.sock.settimeout(PROBE_TIMEOUT_S)
        self.pid = pid
        self.window = "warm-up"
        self.samples: dict[str, list[float]] = {}
        self.peak_rss: dict[str, float] = {}
        self.stalled_in: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(PROBE_TIMEOUT_S + 5)
        self.client.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            window = self.window
            started = time.perf_counter()
            try:
                self.client.request(1, MetadataRequest(topics=[]))
            except OSError:  # no answer in PROBE_TIMEOUT_S (or closed): the probe ends
                self.samples.setdefault(window, []).append(time.perf_counter() - started)
                self.stalled_in = window
                return
            elapsed = time.perf_counter() - started
            if window == self.window:
                self.samples.setdefault(window, []).append(elapsed)
                rss = rss_mib(self.pid)
                self.peak_rss[window] = max(self.peak_rss.get(window, 0.0), rss)
            time.sleep(0.002)


class Hostile:
    """A connection that announces `size` bytes and sends `partial` bytes of the body, in a
    thread: the broker may stop reading it, so the send gives up when the socket closes."""

    def __init__(self, host: str, port: int, size: int, partial: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sent = 0
        self._size = size
        self._partial = partial
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        chunk = b"\x00" * (1 << 20)
        try:
            self.sock.settimeout(None)
            self.sock.sendall(struct.pack(">i", self._size))
            while self.sent < self._partial:
                n = self.sock.send(chunk[: self._partial - self.sent])
                self.sent += n
        except OSError:
            pass

    def close(self) -> None:
        # shutdown, not only close: it wakes a send blocked on a connection the broker does not
        # read, and sends the FIN (a plain close would wait for that send to return).
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(10)
        self.sock.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--request-mib", type=int, default=MAX_REQUEST_MIB, help="announced")
    parser.add_argument("--partial-mib", type=int, default=36, help="body bytes each sends")
    parser.add_argument("--hold-s", type=float, default=5.0, help="how long they are held")
    args = parser.parse_args()
    size, partial = args.request_mib << 20, min(args.request_mib, args.partial_mib) << 20

    with EmbeddedZooKeeper() as zk:
        process, brokers = start_broker(
            zk.connect_string + "/bench-partial", ids="0", kafka_version="3.9"
        )
        broker = brokers[0]
        pid = process.pid
        try:
            probe = Probe(*broker, pid=pid)
            time.sleep(1.0)
            probe.window = "baseline"
            time.sleep(2.0)
            start_rss = rss_mib(pid)
            probe.window = "held"
            hostile = [Hostile(*broker, size, partial) for _ in range(HOSTILE)]
            deadline = time.monotonic() + args.hold_s
            held_peak = start_rss
            while time.monotonic() < deadline:
                held_peak = max(held_peak, rss_mib(pid))
                time.sleep(0.05)
            sent = sum(h.sent for h in hostile)
            probe.window = "closing"
            for h in hostile:
                h.close()
            time.sleep(SETTLE_S)
            if probe.stalled_in is not None:  # a fresh connection for the last window
                probe.stop()
                stalled, probe = probe, Probe(*broker, pid=pid)
                probe.samples, probe.stalled_in = stalled.samples, stalled.stalled_in
            probe.window = "after"
            time.sleep(2.0)
            after_rss = rss_mib(pid)
            probe.stop()
        finally:
            process.terminate()
            process.wait(30)

    def row(name: str, target: str) -> str:
        samples = probe.samples.get(name, [])
        p99 = f"{percentile(samples, 0.99) * 1000:>8.1f}"
        stalled = ""
        if probe.stalled_in == name:  # the samples after the stall are missing: no p99
            p99, stalled = f"{'stalled':>8}", f" (no answer in {PROBE_TIMEOUT_S:.0f} s)"
        return (
            f"{name:<10} {len(samples):>7} {percentile(samples, 0.5) * 1000:>8.1f} {p99} "
            f"{(max(samples) if samples else float('nan')) * 1000:>8.1f}  {target}{stalled}"
        )

    print(
        f"{HOSTILE} connections x {size >> 20} MiB size prefix, "
        f"{partial >> 20} MiB of body offered each ({sent / 2**20:.0f} MiB sent in all), "
        f"held {args.hold_s:.0f} s"
    )
    print(f"{'window':<10} {'probe n':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  target")
    print(row("baseline", "(baseline)"))
    print(row("held", f"p99 <= {TARGET_P99_MS:.0f} ms"))
    print(row("after", ""))
    print(
        f"RSS: start {start_rss:.0f} MiB, peak while held {held_peak:.0f} MiB, after the close "
        f"{after_rss:.0f} MiB ({after_rss - start_rss:+.0f} MiB; target within "
        f"{TARGET_RSS_MIB:.0f} MiB of the start)"
    )


if __name__ == "__main__":
    main()
