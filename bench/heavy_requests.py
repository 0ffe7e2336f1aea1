"""Another client's Metadata latency (p50/p99) and the broker's RSS while heavy requests run.

A 3-broker `zkbroker run` process (its own RSS) runs on an embedded ZooKeeper; a probe sends
Metadata v1 to a broker that is not the controller, back to back, for the whole run. After a
baseline, each scenario of `scenarios()` (huge CreateTopics, validate-only or not; Metadata
naming a million topics or one of 46,000 partitions; DescribeConfigs of 10,000 topics) goes to
the controller, one at a time, then `broker_failure` kills a broker leading 40,000 partitions.
Printed per window: the probe's latencies, the request's own time and error codes, RSS before,
peak and after. Target: probe p99 <= 100 ms, RSS within 2x its size before (not asserted).
Requests are framed before the clock starts.

--in-process runs the brokers as `Cluster` in this process instead (Python's default collector;
the RSS then includes the clients).

Run: python bench/heavy_requests.py [--quick] [--in-process] [--only NAME,...] [--repeat N]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zkbroker import Cluster
from zkbroker.broker.log import configure_logging
from zkbroker.broker.protocol import decode_response
from zkbroker.broker.protocol.messages.create_topics import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreateTopicsRequest,
)
from zkbroker.broker.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from zkbroker.broker.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper

INT32_MAX = 2**31 - 1
BASELINE_S = 3.0
CHROOT = "/bench-heavy"
DYING_BROKER = 3


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


def start_broker(
    zk: str, *extra: str, ids: str = "0,1,2", kafka_version: str = "2.8"
) -> tuple[subprocess.Popen[str], list[tuple[str, int]]]:
    """`zkbroker run` with brokers `ids` on `zk` in a process of its own, and their addresses."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "zkbroker",
            "run",
            "--broker-ids",
            ids,
            "--port",
            "0",
            "--zookeeper",
            zk,
            "--log-level",
            "warning",
            "--kafka-version",
            kafka_version,
            *extra,
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


def broker_failure(
    zk_connect: str,
    heavy: WireClient,
    probe: Probe,
    pid: int,
    partitions: int,
) -> tuple[str, str, str, float, float]:
    """Kill a broker (its own process) that leads every partition of a wide topic; the
    window is from ZooKeeper losing its registration until new leaders show (+1 s)."""
    from kazoo.client import KazooClient

    name = f"broker-dies-{partitions // 1000}k-leaders"
    dying, _ = start_broker(
        zk_connect + CHROOT,
        "--zookeeper-session-timeout-ms",
        "4000",
        ids=str(DYING_BROKER),
    )
    kazoo = KazooClient(hosts=zk_connect)
    kazoo.start()
    try:
        assignments = [
            CreatableReplicaAssignment(partition_index=i, broker_ids=[DYING_BROKER, i % 3])
            for i in range(partitions)
        ]
        created = heavy.request(
            7,
            CreateTopicsRequest(
                topics=[
                    CreatableTopic(
                        name="led-by-3",
                        num_partitions=-1,
                        replication_factor=-1,
                        assignments=assignments,
                    )
                ],
                timeout_ms=120_000,
            ),
        )
        assert created.topics[0].error_code == 0, created.topics[0]
        samples = sorted({0, partitions // 2, partitions - 1})
        state = CHROOT + "/brokers/topics/led-by-3/partitions/{}/state"

        def leaders() -> list[int]:
            out = []
            for p in samples:
                data, _ = kazoo.get(state.format(p))
                out.append(json.loads(data)["leader"])
            return out

        deadline = time.monotonic() + 120
        while set(leaders()) != {DYING_BROKER} and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # the watches of the probe's broker deliver the states
        before = rss_mib(pid)
        dying.send_signal(signal.SIGKILL)
        dying.wait(30)
        registration = f"{CHROOT}/brokers/ids/{DYING_BROKER}"
        while kazoo.exists(registration) is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        probe.window = name
        started = time.perf_counter()
        while DYING_BROKER in leaders() and time.monotonic() < deadline:
            time.sleep(0.05)
        took = time.perf_counter() - started
        time.sleep(1.0)
        probe.window = None
        moved = "all moved" if DYING_BROKER not in leaders() else "NOT MOVED"
        return name, f"{took:.2f}s", moved, before, rss_mib(pid)
    finally:
        if dying.poll() is None:
            dying.kill()
            dying.wait(30)
        kazoo.stop()
        kazoo.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller requests")
    parser.add_argument(
        "--in-process", action="store_true", help="brokers as Cluster in this process"
    )
    parser.add_argument("--repeat", type=int, default=1, help="send each read-only request N times")
    parser.add_argument("--only", default="", help="comma-separated scenario name prefixes")
    args = parser.parse_args()
    only = tuple(p for p in args.only.split(",") if p)

    def wanted(name: str) -> bool:
        return not only or name.startswith(only)

    with EmbeddedZooKeeper() as zk:
        cluster: Cluster | None = None
        process: subprocess.Popen[str] | None = None
        if args.in_process:
            configure_logging("warning")  # what `zkbroker run --log-level warning` does
            cluster = Cluster(
                brokers=3,
                port=0,
                zookeeper=zk.connect_string + CHROOT,
                kafka_version="2.8",
                log_level="warning",
            ).start()
            brokers = [(b.host, b.port) for _, b in sorted(cluster.brokers.items())]
            pid = os.getpid()
        else:
            process, brokers = start_broker(zk.connect_string + CHROOT)
            pid = process.pid
        try:
            controller = controller_index(brokers)
            other = next(i for i in range(len(brokers)) if i != controller)
            probe = Probe(*brokers[other], pid=pid)
            probe.start()
            rows: list[tuple[str, str, str, float, float]] = []
            probe.window = "baseline"
            before = rss_mib(pid)
            time.sleep(BASELINE_S)
            probe.window = None
            rows.append(("baseline (no heavy request)", "-", "-", before, rss_mib(pid)))
            with WireClient(*brokers[controller], client_id="heavy") as heavy:
                heavy.sock.settimeout(600)
                for name, api_key, version, request in scenarios(args.quick):
                    if not wanted(name):
                        continue
                    _, frame = heavy.frame(api_key, version, request)
                    # Requests that change nothing may be sent again (--repeat): more samples.
                    read_only = getattr(request, "validate_only", True)
                    before = rss_mib(pid)
                    probe.window = name
                    took = 0.0
                    for _ in range(args.repeat if read_only else 1):
                        started = time.perf_counter()
                        heavy.send_raw(frame)
                        answer = heavy.recv_frame()
                        took = max(took, time.perf_counter() - started)
                    time.sleep(0.05)
                    probe.window = None
                    errors = error_summary(api_key, version, answer)
                    rows.append((name, f"{took:.2f}s", errors, before, rss_mib(pid)))
                failing = 4_000 if args.quick else 40_000
                if wanted(f"broker-dies-{failing // 1000}k-leaders"):
                    rows.append(broker_failure(zk.connect_string, heavy, probe, pid, failing))
            probe.stop()
        finally:
            if process is not None:
                process.terminate()
                process.wait(30)
            if cluster is not None:
                cluster.stop()
    print(
        f"{'request':<30} {'answered':>9} {'probe n':>7} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'max ms':>7} {'RSS before':>10} {'peak':>7} {'after':>7}  errors"
    )
    for name, answered, errors, rss_before, rss_after in rows:
        window = "baseline" if name.startswith("baseline") else name
        samples = probe.samples.get(window, [])
        print(
            f"{name:<30} {answered:>9} {len(samples):>7} "
            f"{percentile(samples, 0.5) * 1000:>7.1f} {percentile(samples, 0.99) * 1000:>7.1f} "
            f"{(max(samples) if samples else float('nan')) * 1000:>7.1f} "
            f"{rss_before:>9.0f}M {probe.peak_rss.get(window, 0.0):>6.0f}M {rss_after:>6.0f}M  "
            f"{errors}"
        )


if __name__ == "__main__":
    main()
