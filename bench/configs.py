"""Config API round trips per second through a real client, beside the raw ZooKeeper work.

One embedded ZooKeeper, one 3-broker zkbroker cluster, one topic; in the same run:
- DescribeConfigs (all keys of one topic) through confluent-kafka's AdminClient, one request
  at a time (each answer awaited), so the figure is round trips per second; beside it, raw
  kazoo reads of `/config/topics/<t>` (the one ZooKeeper read such a request needs), also
  one at a time;
- AlterConfigs (legacy, one key) through confluent-kafka, one at a time; beside it, raw kazoo
  doing what each write needs: a `set` of the entity node followed by a sequential `create`
  of the change notification, one pair at a time.

Prints the rates and the ratios. Run: python bench/configs.py [--seconds N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka.admin import AdminClient, ConfigResource
from kazoo.client import KazooClient

from zkbroker import Cluster
from zkbroker.broker.log import configure_logging
from zkbroker.broker.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from zkbroker.broker.settings import Settings
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper

TOPIC = "bench-configs"


def rate(seconds: float, op: Callable[[int], None]) -> tuple[int, float]:
    """Run `op` repeatedly for about `seconds`; returns (count, ops per second)."""
    for i in range(20):  # warm-up
        op(i)
    count = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        op(count)
        count += 1
    return count, count / (time.perf_counter() - started)


def create_topic(cluster: Cluster) -> None:
    while cluster.engine.controller_id < 0:
        time.sleep(0.01)
    node = cluster.engine.brokers[cluster.engine.controller_id]
    with WireClient(node.host, node.port) as client:
        request = CreateTopicsRequest(
            topics=[CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=3)],
            timeout_ms=30_000,
        )
        if client.request(4, request).topics[0].error_code:
            raise SystemExit("could not create the benchmark topic")


def bench_zkbroker(zk: str, seconds: float) -> tuple[float, float]:
    settings = Settings(port=0, zookeeper=zk + "/bench-zkbroker")
    with Cluster(settings) as cluster:
        create_topic(cluster)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        resource = ConfigResource("TOPIC", TOPIC)

        def describe(_: int) -> None:
            configs = admin.describe_configs([resource])[resource].result(timeout=30)
            assert "retention.ms" in configs

        def alter(i: int) -> None:
            change = ConfigResource("TOPIC", TOPIC, set_config={"retention.ms": str(1000 + i)})
            admin.alter_configs([change])[change].result(timeout=30)

        _, describes = rate(seconds, describe)
        _, alters = rate(seconds, alter)
        return describes, alters


def bench_raw(zk: str, seconds: float) -> tuple[float, float]:
    client = KazooClient(hosts=zk)
    client.start(15)
    try:
        root = "/bench-raw"
        path = f"{root}/config/topics/{TOPIC}"
        client.ensure_path(f"{root}/config/changes")
        client.create(path, json.dumps({"version": 1, "config": {}}).encode(), makepath=True)
        notification = json.dumps({"version": 2, "entity_path": f"topics/{TOPIC}"}).encode()

        def read(_: int) -> None:
            client.get(path)

        def write(i: int) -> None:
            data = json.dumps({"version": 1, "config": {"retention.ms": str(1000 + i)}})
            client.set(path, data.encode())
            client.create(f"{root}/config/changes/config_change_", notification, sequence=True)

        _, reads = rate(seconds, read)
        _, writes = rate(seconds, write)
        return reads, writes
    finally:
        client.stop()
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per measurement (3)")
    args = parser.parse_args()
    configure_logging("warning")
    with EmbeddedZooKeeper() as zk:
        raw_reads, raw_writes = bench_raw(zk.connect_string, args.seconds)
        describes, alters = bench_zkbroker(zk.connect_string, args.seconds)
    print("Config APIs: one topic, one request at a time (round trips per second)")
    print(f"{'path':<58}{'per second':>12}")
    print(f"{'confluent-kafka DescribeConfigs (topic, all keys)':<58}{describes:>12.0f}")
    print(f"{'raw kazoo get of /config/topics/<t>':<58}{raw_reads:>12.0f}")
    print(f"{'confluent-kafka AlterConfigs (topic, one key)':<58}{alters:>12.0f}")
    print(f"{'raw kazoo set + sequential create of a notification':<58}{raw_writes:>12.0f}")
    print(f"ratio DescribeConfigs/raw read: {describes / raw_reads:.2f}x")
    print(f"ratio AlterConfigs/raw writes: {alters / raw_writes:.2f}x")


if __name__ == "__main__":
    main()
