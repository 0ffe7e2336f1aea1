"""Real Kafka clients against a real 3-broker zkbroker cluster on a real ZooKeeper."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient

from tests.integration.helpers import wait_until, wait_visible, write_topic_like_kafka
from zkbroker import Cluster

TOPIC_ID = "p3t0vCrqQkKpWBbNG2j1Zg"


def _controller(cluster: Cluster) -> int:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    return cluster.engine.controller_id


def test_kafka_python_describe_cluster_and_list_topics(cluster_factory, kazoo) -> None:
    # kafka-python 3.0 needs DescribeCluster v1 (Kafka 3.7+): against v0 its describe_cluster
    # pops a missing 'endpoint_type' key (a client bug that real 2.8-3.6 brokers trigger too).
    cluster = cluster_factory(kafka_version=(3, 9))
    controller = _controller(cluster)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="kp-test")
    try:
        described = admin.describe_cluster()
        assert described["controller_id"] == controller
        assert described["controller_id"] in (0, 1, 2)
        assert sorted(b["broker_id"] for b in described["brokers"]) == [0, 1, 2]
        assert described["cluster_id"] == cluster.engine.image.cluster_id
        assert admin.list_topics() == []

        write_topic_like_kafka(kazoo, "orders", {0: [0, 1, 2], 1: [1, 2, 0]}, topic_id=TOPIC_ID)
        assert wait_until(lambda: "orders" in admin.list_topics())
    finally:
        admin.close()


def test_kafka_python_list_topics_against_default_release(cluster: Cluster, kazoo) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        write_topic_like_kafka(kazoo, "events", {0: [1, 2, 0]})
        assert wait_until(lambda: admin.list_topics() == ["events"])
        (topic,) = admin.describe_topics(["events"])
        assert topic["partitions"][0]["leader_id"] == 1
    finally:
        admin.close()


def test_confluent_kafka_list_topics_and_describe_cluster(cluster: Cluster, kazoo) -> None:
    controller = _controller(cluster)
    write_topic_like_kafka(kazoo, "payments", {0: [2, 0, 1]}, topic_id=TOPIC_ID)
    wait_visible(cluster, "payments")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    metadata = admin.list_topics(timeout=15)
    assert sorted(metadata.brokers) == [0, 1, 2]
    assert metadata.controller_id == controller
    assert metadata.cluster_id == cluster.engine.image.cluster_id
    partition = metadata.topics["payments"].partitions[0]
    assert (partition.leader, partition.replicas, partition.isrs) == (2, [2, 0, 1], [2, 0, 1])

    described = admin.describe_cluster(request_timeout=15).result()
    assert described.controller.id == controller
    assert sorted(n.id for n in described.nodes) == [0, 1, 2]
    assert described.cluster_id == cluster.engine.image.cluster_id


def test_aiokafka_admin(cluster: Cluster) -> None:
    controller = _controller(cluster)

    async def scenario() -> dict:
        admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        await admin.start()
        try:
            topics = await admin.list_topics()
            described = await admin.describe_cluster()
            return {"topics": topics, "cluster": described}
        finally:
            await admin.close()

    result = asyncio.run(scenario())
    assert result["topics"] == []
    assert result["cluster"]["controller_id"] == controller
    assert sorted(b["node_id"] for b in result["cluster"]["brokers"]) == [0, 1, 2]


@pytest.mark.skipif(
    shutil.which("kcat") is None, reason="kcat is not installed (apt-get install kcat)"
)
def test_kcat_lists_three_brokers(cluster: Cluster, kazoo) -> None:
    write_topic_like_kafka(kazoo, "audit", {0: [0, 1, 2]})
    wait_visible(cluster, "audit")
    out = subprocess.run(
        ["kcat", "-L", "-J", "-b", cluster.bootstrap_servers, "-m", "15"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    listing = json.loads(out)
    assert sorted(b["id"] for b in listing["brokers"]) == [0, 1, 2]
    assert [t["topic"] for t in listing["topics"]] == ["audit"]
    assert listing["topics"][0]["partitions"][0]["leader"] == 0
