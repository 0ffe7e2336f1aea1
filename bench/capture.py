"""What request capture costs a request: Metadata and CreateTopics round trips with and
without a file capture, in one run on the same cluster.

One embedded ZooKeeper, one 3-broker zkbroker cluster (release 2.8) with 10 topics. A blocking
wire client (broker/toolkit/wire.py) sends requests one at a time to the controller broker and times
each round trip (send to answer decoded):
- Metadata v9 for all topics;
- CreateTopics v7 of one new topic (1 partition, replication factor 1, timeout 30 s), answered
  once the controller has written it and the metadata image shows it.
Each API is measured in rounds alternating "capture off" (no request hook at all) and
"capture on" (a `RequestCapture` writing JSON lines to a temporary file, added to the
cluster's hooks at run time), so drift (ZooKeeper warming up, more topics) hits both alike.

Prints median and p99 per API and mode, and the overhead of capture on the median (target:
<= 10%; MISSED when above) and, for information, on the p99. Finally checks that the file
holds one line per captured request. Run: python bench/capture.py [--metadata N] [--create N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zkbroker import Cluster
from zkbroker.broker.hooks.capture import RequestCapture
from zkbroker.broker.log import configure_logging
from zkbroker.broker.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.settings import Settings
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper

TARGET_PERCENT = 10.0
ROUNDS = 10


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def measure(
    cluster: Cluster,
    capture: RequestCapture,
    total: int,
    op: Callable[[int], None],
) -> dict[bool, list[float]]:
    """Round-trip times (µs) of about `total` calls of `op` per mode, in alternating rounds."""
    samples: dict[bool, list[float]] = {False: [], True: []}
    per_round = max(1, total // ROUNDS)
    counter = 0
    for i in range(20):  # warm-up, capture off
        op(-1 - i)
    for r in range(ROUNDS):
        # Alternate which mode goes first in a round.
        for on in (False, True) if r % 2 == 0 else (True, False):
            set_capture(cluster, capture, on)
            for _ in range(per_round):
                started = time.perf_counter()
                op(counter)
                samples[on].append((time.perf_counter() - started) * 1e6)
                counter += 1
    set_capture(cluster, capture, False)
    return samples


def set_capture(cluster: Cluster, capture: RequestCapture, on: bool) -> None:
    def apply() -> None:
        if on:
            cluster.engine.hooks.add(capture)
        else:
            cluster.engine.hooks.remove(capture)

    cluster.run_sync(apply)


def report(api: str, samples: dict[bool, list[float]]) -> bool:
    off_med, on_med = statistics.median(samples[False]), statistics.median(samples[True])
    off_p99, on_p99 = p99(samples[False]), p99(samples[True])
    for on, med, tail in ((False, off_med, off_p99), (True, on_med, on_p99)):
        mode = "capture on (file)" if on else "capture off"
        print(f"{api:<14}{mode:<20}{len(samples[on]):>8}{med:>14.0f}{tail:>14.0f}")
    overhead = (on_med / off_med - 1) * 100
    tail_overhead = (on_p99 / off_p99 - 1) * 100
    ok = overhead <= TARGET_PERCENT
    verdict = "ok" if ok else "MISSED"
    print(
        f"{'':<14}overhead: median {overhead:+.1f}% (target <= {TARGET_PERCENT:.0f}%: "
        f"{verdict}), p99 {tail_overhead:+.1f}% (information)"
    )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metadata", type=int, default=4000, help="Metadata requests per mode")
    parser.add_argument("--create", type=int, default=400, help="CreateTopics per mode")
    args = parser.parse_args()
    configure_logging("warning")
    with (
        tempfile.TemporaryDirectory() as tmp,
        EmbeddedZooKeeper() as zk,
        Cluster(Settings(port=0, zookeeper=zk.connect_string + "/bench-capture")) as cluster,
    ):
        while cluster.engine.controller_id < 0:
            time.sleep(0.01)
        node = cluster.engine.brokers[cluster.engine.controller_id]
        path = Path(tmp) / "capture.jsonl"
        capture = RequestCapture(str(path))
        cluster.run_sync(capture.open)
        with WireClient(node.host, node.port, client_id="bench-capture") as client:

            def create(i: int) -> None:
                name = f"bench-{i}" if i >= 0 else f"warm{-i}"
                request = CreateTopicsRequest(
                    topics=[CreatableTopic(name=name, num_partitions=1, replication_factor=1)],
                    timeout_ms=30_000,
                )
                if client.request(7, request).topics[0].error_code:
                    raise SystemExit(f"could not create {name}")

            for i in range(10):
                create(100_000 + i)

            def metadata(_: int) -> None:
                client.request(9, MetadataRequest(topics=None))

            metadata_samples = measure(cluster, capture, args.metadata, metadata)
            create_samples = measure(cluster, capture, args.create, create)
        captured = len(capture.requests())
        cluster.call(capture.aclose())
        lines = len(path.read_text().splitlines())
        size = path.stat().st_size
    print("Request capture: round-trip latency, one request at a time (µs)")
    print(f"{'api':<14}{'mode':<20}{'n':>8}{'median':>14}{'p99':>14}")
    report("Metadata v9", metadata_samples)
    report("CreateTopics", create_samples)
    print(f"capture file: {lines} lines ({size / 1e6:.1f} MB) for {captured} captured requests")
    if lines != captured:
        print("MISSED: the file does not hold one line per captured request")


if __name__ == "__main__":
    main()
