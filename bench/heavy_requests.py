"""Another client's Metadata latency (p50/p99) and the broker's RSS while heavy requests run.

A 3-broker zkbroker process (`zkbroker run`, its own process so its RSS is its own) runs on an
embedded ZooKeeper. A probe client sends Metadata v1 (no topics) to a broker that is not the
controller, one request after the other, for the whole run. The bench first measures a
baseline with no heavy request, then sends each heavy request of issue 17 to the controller
broker, one at a time, and prints the probe's latencies while it was in flight:

- create-invalid-int32max: CreateTopics v7 validate_only, an illegal name, 2**31-1 partitions;
- validate-10M-partitions: CreateTopics v7 validate_only, 10,000,000 partitions;
- validate-80k-partitions: CreateTopics v7 validate_only, 80,000 partitions (about the most that fit
  in one ZooKeeper request: the placement runs in slices);
- create-10k-topics: CreateTopics v7 of 10,000 topics (1 partition each), waiting for leaders;
- metadata-1M-names: Metadata v4 naming 1,000,000 topics (no auto-creation);
- create-46k-partition-topic: CreateTopics v7 of one topic with 46,000 partitions (about the
  most whose assignment fits one ZooKeeper request);
- metadata-46k-partitions: Metadata v9 naming that topic (one answer of 46,000 partitions);
- describe-configs-10k: DescribeConfigs v1 of the 10,000 topics created above.

Target (issue 17): the probe's p99 <= 100 ms and the broker's RSS within 2x its size before.
The heavy request's own answer time and its error codes are printed too. Each request is
framed before the clock starts (encoding a million names takes the client seconds).

Run: python bench/heavy_requests.py [--quick]   (--quick: smaller sizes, for a smoke run)
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker.protocol import decode_response
from broker.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from broker.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from broker.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from broker.toolkit.wire import WireClient
from broker.zookeeper.embedded import EmbeddedZooKeeper

INT32_MAX = 2**31 - 1
BASELINE_S = 3.0


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Probe:
    """Metadata requests one after the other; latencies (s) tagged with a window name."""

    def __init__(self, host: str, port: int, pid: int) -> None:
        self.client = WireClient(host, port, client_id="probe")
        self.client.sock.settimeout(120)
        self.pid = pid
        self.window: str | None = None
        self.samples: dict[str, list[float]] = collections.defaultdict(list)
        self.peak_rss: dict[str, float] = collections.defaultdict(float)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(120)
        self.client.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            window = self.window
            started = time.perf_counter()
            self.client.request(1, MetadataRequest(topics=[]))
            elapsed = time.perf_counter() - started
            if window is not None and window == self.window:
                self.samples[window].append(elapsed)
                self.peak_rss[window] = max(self.peak_rss[window], rss_mib(self.pid))
            time.sleep(0.002)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def error_summary(api_key: int, version: int, frame: bytes) -> str:
    _, response = decode_response(api_key, version, frame)
    codes: collections.Counter[int] = collections.Counter()
    for item in getattr(response, "topics", None) or getattr(response, "results", None) or []:
        codes[item.error_code] += 1
    return ", ".join(f"{code}x{n}" for code, n in sorted(codes.items())) or "-"


def start_broker(zk: str) -> tuple[subprocess.Popen[str], list[tuple[str, int]]]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker.cli.main",
            "run",
            "--brokers",
            "3",
            "--port",
            "0",
            "--zookeeper",
            zk,
            "--log-level",
            "warning",
            "--kafka-version",
            "2.8",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("bootstrap_servers="):
            servers = line.strip().split("=", 1)[1].split(",")
            return process, [(h, int(p)) for h, p in (s.rsplit(":", 1) for s in servers)]
    raise SystemExit("zkbroker did not start")


def controller_index(brokers: list[tuple[str, int]]) -> int:
    with WireClient(*brokers[0]) as client:
        controller = client.request(1, MetadataRequest(topics=[])).controller_id
    # `--port 0` and broker ids 0..2: the bootstrap list is in id order.
    return controller


def scenarios(quick: bool) -> list[tuple[str, int, int, Any]]:
    topics = 1_000 if quick else 10_000
    names = 100_000 if quick else 1_000_000
    # About the most partitions whose assignment fits one ZooKeeper request (jute.maxbuffer).
    partitions = 5_000 if quick else 46_000
    return [
        (
            "create-invalid-int32max",
            19,
            7,
            CreateTopicsRequest(
                topics=[
                    CreatableTopic(name="bad name!", num_partitions=INT32_MAX, replication_factor=1)
                ],
                validate_only=True,
            ),
        ),
        (
            "validate-10M-partitions",
            19,
            7,
            CreateTopicsRequest(
                topics=[
                    CreatableTopic(name="big", num_partitions=10_000_000, replication_factor=1)
                ],
                validate_only=True,
            ),
        ),
        (
            "validate-80k-partitions",
            19,
            7,
            CreateTopicsRequest(
                topics=[CreatableTopic(name="big", num_partitions=80_000, replication_factor=1)],
                validate_only=True,
            ),
        ),
        (
            f"create-{topics // 1000}k-topics",
            19,
            7,
            CreateTopicsRequest(
                topics=[
                    CreatableTopic(name=f"bulk-{i}", num_partitions=1, replication_factor=1)
                    for i in range(topics)
                ],
                timeout_ms=120_000,
            ),
        ),
        (
            f"metadata-{names // 1000}k-names",
            3,
            4,
            MetadataRequest(
                topics=[MetadataRequestTopic(name=f"absent-{i}") for i in range(names)],
                allow_auto_topic_creation=False,
            ),
        ),
        (
            f"create-{partitions // 1000}k-partition-topic",
            19,
            7,
            CreateTopicsRequest(
                topics=[
                    CreatableTopic(name="wide", num_partitions=partitions, replication_factor=1)
                ],
                timeout_ms=120_000,
            ),
        ),
        (
            f"metadata-{partitions // 1000}k-partitions",
            3,
            9,
            MetadataRequest(topics=[MetadataRequestTopic(name="wide")]),
        ),
        (
            f"describe-configs-{topics // 1000}k",
            32,
            1,
            DescribeConfigsRequest(
                resources=[
                    DescribeConfigsResource(resource_type=2, resource_name=f"bulk-{i}")
                    for i in range(topics)
                ]
            ),
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller requests")
    args = parser.parse_args()
    with EmbeddedZooKeeper() as zk:
        process, brokers = start_broker(zk.connect_string + "/bench-heavy")
        try:
            controller = controller_index(brokers)
            other = next(i for i in range(len(brokers)) if i != controller)
            probe = Probe(*brokers[other], pid=process.pid)
            probe.start()
            rows = []
            probe.window = "baseline"
            before = rss_mib(process.pid)
            time.sleep(BASELINE_S)
            probe.window = None
            rows.append(("baseline (no heavy request)", "-", "-", before, rss_mib(process.pid)))
            with WireClient(*brokers[controller], client_id="heavy") as heavy:
                heavy.sock.settimeout(600)
                for name, api_key, version, request in scenarios(args.quick):
                    _, frame = heavy.frame(api_key, version, request)
                    before = rss_mib(process.pid)
                    probe.window = name
                    started = time.perf_counter()
                    heavy.send_raw(frame)
                    answer = heavy.recv_frame()
                    took = time.perf_counter() - started
                    time.sleep(0.05)
                    probe.window = None
                    errors = error_summary(api_key, version, answer)
                    rows.append((name, f"{took:.2f}s", errors, before, rss_mib(process.pid)))
            probe.stop()
        finally:
            process.terminate()
            process.wait(30)
    print(
        f"{'request':<30} {'answered':>9} {'probe n':>7} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'max ms':>7} {'RSS before':>10} {'peak':>7} {'after':>7}  errors"
    )
    for name, took, errors, rss_before, rss_after in rows:
        window = "baseline" if name.startswith("baseline") else name
        samples = probe.samples.get(window, [])
        print(
            f"{name:<30} {took:>9} {len(samples):>7} "
            f"{percentile(samples, 0.5) * 1000:>7.1f} {percentile(samples, 0.99) * 1000:>7.1f} "
            f"{(max(samples) if samples else float('nan')) * 1000:>7.1f} "
            f"{rss_before:>9.0f}M {probe.peak_rss.get(window, 0.0):>6.0f}M {rss_after:>6.0f}M  "
            f"{errors}"
        )


if __name__ == "__main__":
    main()
