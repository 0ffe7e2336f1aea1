"""One cluster across three hosts: three network namespaces the test builds (tests/integration/
hosts.py), a three-server ZooKeeper ensemble across them, and one `zkbroker run` per host with
its own broker id, address and log directory. A client on the first host sees the three brokers
at their own addresses, and a topic replicated over the three takes records on its leaders and
serves them back; the followers on the other hosts fetch them over the inter-broker listener
(docs/kafka-behaviour.md §24; the crash and cut-off rounds are tests/integration/test_chaos.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.hosts import Hosts, available
from tests.shared_data import under_ci

# Skipped where hosts cannot be built (not root, no iproute2), but never under CI, which
# installs iproute2 and runs as root: there a missing part fails the test.
pytestmark = pytest.mark.skipif(
    available() is not None and not under_ci(), reason=str(available())
)

CLIENT = """
import json, sys, time
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap = sys.argv[1]
admin = AdminClient({"bootstrap.servers": bootstrap})
deadline = time.monotonic() + 90
while True:  # until the three processes registered and one of them is the controller
    try:
        cluster = admin.list_topics(timeout=10)
        if len(cluster.brokers) == 3 and cluster.controller_id >= 0:
            break
    except KafkaException:
        pass
    assert time.monotonic() < deadline, "the three brokers never showed up"
    time.sleep(0.5)
brokers = {b.id: f"{b.host}:{b.port}" for b in cluster.brokers.values()}
admin.create_topics([NewTopic("spread", 3, 3)])["spread"].result(30)
producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
for p in range(3):
    for i in range(5):
        producer.produce("spread", b"%d-%d" % (p, i), partition=p)
assert producer.flush(30) == 0
metadata = admin.list_topics("spread", timeout=30).topics["spread"].partitions
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
consumer.assign([TopicPartition("spread", p, 0) for p in range(3)])
values = []
deadline = time.monotonic() + 60
while len(values) < 15 and time.monotonic() < deadline:
    message = consumer.poll(1)
    if message is not None and message.error() is None:
        values.append(message.value().decode())
consumer.close()
after = admin.list_topics("spread", timeout=30).topics["spread"].partitions
print(json.dumps({
    "brokers": brokers,
    "leaders": {p: m.leader for p, m in metadata.items()},
    "leaders_after": {p: m.leader for p, m in after.items()},
    "replicas": {p: sorted(m.replicas) for p, m in metadata.items()},
    "values": sorted(values),
}))
"""


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[Hosts]:
    built = Hosts(3)
    try:
        yield built
    finally:
        built.close()


def test_three_processes_on_three_hosts_form_one_cluster(hosts: Hosts, tmp_path: Path) -> None:
    connect = hosts.zookeeper_ensemble(tmp_path)
    for i, host in enumerate(hosts.hosts):
        argv = [
            *(sys.executable, "-m", "zkbroker", "run", "--broker-ids", str(i)),
            *("--host", host.address, "--port", "9092", "--zookeeper", connect),
            *("--log-dir", str(tmp_path / f"logs{i}"), "--broker-session-timeout-ms", "6000"),
        ]
        host.start(argv, tmp_path / f"zkbroker{i}.log")
    bootstrap = ",".join(f"{h.address}:9092" for h in hosts.hosts)
    done = hosts.hosts[0].run([sys.executable, "-c", CLIENT, bootstrap], timeout=180)
    assert done.returncode == 0, done.stderr[-3000:] + _logs(tmp_path)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["brokers"] == {str(i): f"{h.address}:9092" for i, h in enumerate(hosts.hosts)}
    assert all(r == [0, 1, 2] for r in seen["replicas"].values())
    assert seen["values"] == sorted(f"{p}-{i}" for p in range(3) for i in range(5)), seen


def _logs(tmp_path: Path) -> str:
    return "".join(
        f"\n--- {p.name}\n{p.read_text(errors='replace')[-2000:]}"
        for p in sorted(tmp_path.glob("zkbroker*.log"))
    )
