"""Topics created per second through CreateTopics, beside raw pipelined kazoo creates.

Both run in the same process against the same embedded ZooKeeper, each in its own chroot:
- zkbroker: a 3-broker cluster; a client sends CreateTopics v7 in batches of 100 topics
  (3 partitions, replication factor 3, timeout 60 s), so each batch is answered only when the
  controller has written every partition's leader state and the metadata image shows it;
- raw: a kazoo client creates the same znodes a created topic ends up with (config node,
  topic node, partitions node, and per partition its node and leader state), all issued
  asynchronously in one burst per batch (ZooKeeper keeps one session's requests in order).

Prints both rates and their ratio (target: zkbroker >= 0.8x raw). Run: python bench/create_topics.py
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kazoo.client import KazooClient

from zkbroker import Cluster
from zkbroker.broker.log import configure_logging
from zkbroker.broker.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from zkbroker.broker.settings import Settings
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper

BATCH = 100
PARTITIONS = 3
REPLICATION = 3


def bench_zkbroker(zk: str, batches: int) -> float:
    with Cluster(Settings(port=0, zookeeper=zk + "/bench-zkbroker")) as cluster:
        while cluster.engine.controller_id < 0:
            time.sleep(0.01)
        node = cluster.engine.brokers[cluster.engine.controller_id]
        with WireClient(node.host, node.port) as client:
            started = time.perf_counter()
            for b in range(batches):
                request = CreateTopicsRequest(
                    topics=[
                        CreatableTopic(
                            name=f"t-{b}-{i}",
                            num_partitions=PARTITIONS,
                            replication_factor=REPLICATION,
                        )
                        for i in range(BATCH)
                    ],
                    timeout_ms=60_000,
                )
                errors = [t.error_code for t in client.request(7, request).topics if t.error_code]
                if errors:
                    raise SystemExit(f"CreateTopics failed: {errors[:5]}")
            return time.perf_counter() - started


def bench_raw(zk: str, batches: int) -> float:
    client = KazooClient(hosts=zk)
    client.start(15)
    try:
        client.ensure_path("/bench-raw/brokers/topics")
        client.ensure_path("/bench-raw/config/topics")
        root = "/bench-raw"
        config = json.dumps({"version": 1, "config": {}}).encode()
        started = time.perf_counter()
        for b in range(batches):
            pending = []
            for i in range(BATCH):
                name = f"t-{b}-{i}"
                replicas = {str(p): [(p + k) % 3 for k in range(REPLICATION)] for p in range(3)}
                topic = json.dumps({"version": 3, "partitions": replicas}).encode()
                pending.append(client.create_async(f"{root}/config/topics/{name}", config))
                pending.append(client.create_async(f"{root}/brokers/topics/{name}", topic))
                base = f"{root}/brokers/topics/{name}/partitions"
                pending.append(client.create_async(base, b""))
                for p, r in replicas.items():
                    state = json.dumps(
                        {
                            "controller_epoch": 1,
                            "leader": r[0],
                            "version": 1,
                            "leader_epoch": 0,
                            "isr": r,
                        }
                    ).encode()
                    pending.append(client.create_async(f"{base}/{p}", b""))
                    pending.append(client.create_async(f"{base}/{p}/state", state))
            for result in pending:
                result.get(timeout=60)
        return time.perf_counter() - started
    finally:
        client.stop()
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=10, help="batches of 100 topics (10)")
    args = parser.parse_args()
    topics = args.batches * BATCH
    configure_logging("warning")
    with EmbeddedZooKeeper() as zk:
        raw = bench_raw(zk.connect_string, args.batches)
        ours = bench_zkbroker(zk.connect_string, args.batches)
    raw_rate, our_rate = topics / raw, topics / ours
    ratio = our_rate / raw_rate
    print(
        f"CreateTopics: {topics} topics x {PARTITIONS} partitions x RF {REPLICATION}, "
        f"batches of {BATCH}"
    )
    print(f"{'path':<34}{'seconds':>10}{'topics/s':>12}")
    print(f"{'raw pipelined kazoo creates':<34}{raw:>10.2f}{raw_rate:>12.0f}")
    print(f"{'zkbroker CreateTopics (to leaders)':<34}{ours:>10.2f}{our_rate:>12.0f}")
    print(
        f"ratio zkbroker/raw: {ratio:.2f}x (target >= 0.8x: {'met' if ratio >= 0.8 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
