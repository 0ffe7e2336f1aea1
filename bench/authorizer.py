"""The ACL authorizer's cost: Metadata round trips with AclAuthorizer and 10,000 ACLs, against
the same cluster set-up without an authorizer, from the same run.

Two one-broker clusters in this process (each on its own embedded ZooKeeper), PLAINTEXT, the
client ``User:ANONYMOUS``. Both get the same topics. The secured one gets ``--acls`` ACLs through
CreateAcls (5 principals on each of ``--acls``/5 resources: half literal topic names, half
prefixed; the client's own: DESCRIBE on every topic through ``User:*`` and ALTER on the cluster),
so each topic's decision looks up its literal name, the wildcard and every prefix of its name.
Then Metadata v12 for all topics, ``--requests`` round trips on one connection each, p50/p99
printed beside the baseline with the 1-minute load average. Target: p50 ratio <= 1.2x.
Run: python bench/authorizer.py [--acls N] [--topics N] [--requests N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zkbroker import Cluster
from zkbroker.broker.log import configure_logging
from zkbroker.broker.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from zkbroker.broker.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.rules import acl_matching as m
from zkbroker.broker.toolkit.wire import WireClient

AUTHORIZER = ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")
# Lets the client grant itself ALTER on the cluster first; every resource the Metadata
# requests touch then has ACLs, so the flag plays no part in the measured decisions.
EVERYONE_IF_NONE = ("allow.everyone.if.no.acl.found", "true")


def _ms(samples: list[float]) -> tuple[float, str]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    p50 = statistics.median(ordered)
    return p50, f"p50 {p50 * 1000:7.3f} ms  p99 {p99 * 1000:7.3f} ms"


def _creation(rt: int, name: str, pt: int, principal: str, op: int) -> AclCreation:
    return AclCreation(
        resource_type=rt,
        resource_name=name,
        resource_pattern_type=pt,
        principal=principal,
        host="*",
        operation=op,
        permission_type=m.ALLOW,
    )


def _setup(cluster: Cluster, topics: int, acls: int) -> WireClient:
    client = WireClient.to(cluster.bootstrap_servers)
    if acls:
        own = [
            _creation(m.CLUSTER, m.CLUSTER_NAME, m.PT_LITERAL, "User:ANONYMOUS", m.ALTER),
            _creation(m.CLUSTER, m.CLUSTER_NAME, m.PT_LITERAL, "User:ANONYMOUS", m.CREATE),
            _creation(m.TOPIC, "*", m.PT_LITERAL, "User:*", m.DESCRIBE),
        ]
        assert all(r.error_code == 0 for r in client.request(3, CreateAclsRequest(own)).results)
        creations = []
        for i in range(acls // 5):
            pattern = m.PT_LITERAL if i % 2 else m.PT_PREFIXED
            name = f"bench-topic-{i:05d}" if i % 2 else f"bench-{i:05d}"
            creations.extend(
                _creation(m.TOPIC, name, pattern, f"User:user-{u}", m.READ) for u in range(5)
            )
        for start in range(0, len(creations), 1000):
            batch = CreateAclsRequest(creations[start : start + 1000])
            assert all(r.error_code == 0 for r in client.request(3, batch).results)
    create = CreateTopicsRequest(
        topics=[
            CreatableTopic(name=f"bench-topic-{i:05d}", num_partitions=1, replication_factor=1)
            for i in range(topics)
        ],
        timeout_ms=30000,
    )
    assert all(t.error_code == 0 for t in client.request(7, create).topics)
    return client


def _round_trips(client: WireClient, topics: int, requests: int) -> list[float]:
    while len(client.request(12, MetadataRequest(topics=None)).topics) < topics:
        time.sleep(0.05)
    # The broker re-reads each resource its own change notifications name (as Kafka's
    # listener does): let that settle, then warm up, before measuring.
    time.sleep(5)
    for _ in range(200):
        client.request(12, MetadataRequest(topics=None))
    samples = []
    for _ in range(requests):
        started = time.perf_counter()
        client.request(12, MetadataRequest(topics=None))
        samples.append(time.perf_counter() - started)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--acls", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--requests", type=int, default=1000)
    args = parser.parse_args()
    configure_logging("warning", "console")
    results = {}
    for label, configs, acls in (
        ("no authorizer (baseline)", (), 0),
        (f"AclAuthorizer, {args.acls} ACLs", (AUTHORIZER, EVERYONE_IF_NONE), args.acls),
    ):
        with Cluster(brokers=1, port=0, kafka_version="3.9", broker_configs=configs) as cluster:
            started = time.perf_counter()
            client = _setup(cluster, args.topics, acls)
            setup_s = time.perf_counter() - started
            samples = _round_trips(client, args.topics, args.requests)
            client.close()
            p50, text = _ms(samples)
            results[label] = p50
            print(
                f"  {label:32s} {text}   (set-up {setup_s:5.1f} s, load {os.getloadavg()[0]:.2f})"
            )
    base, secured = results.values()
    print(f"Metadata (all {args.topics} topics) p50 ratio: {secured / base:.2f}x (target <= 1.2x)")


if __name__ == "__main__":
    main()
