"""zkbroker's image in the place of the ZooKeeper-mode Kafka images (issue 44), as users meet it:

* testcontainers-python's `KafkaContainer("zkbroker:3.9")`, the module's own start script and
  wait, used by kafka-python and confluent-kafka;
* Node's `@testcontainers/kafka` `new KafkaContainer("zkbroker:3.9")` with kafkajs
  (tests/js/testcontainers_kafka.js);
* a compose file in Confluent's convention (a ZooKeeper and three one-broker containers with
  KAFKA_* variables), healthy, keeping every acknowledged record when the leader's container is
  killed; and one in Bitnami's (KAFKA_CFG_*, ALLOW_PLAINTEXT_LISTENER);
* the warning for a variable zkbroker ignores, and Confluent's error for a missing one.

Every container is on a sealed network of the test's (conftest.py), its ports published on
127.0.0.1 only where the test chooses them; everything started is removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docker.conftest import (
    IMAGE,
    LABEL_FLAG,
    LABELS,
    SealedNetwork,
    docker,
    free_port_block,
    sealed_network,
)
from tests.docker.test_compose import compose

JS = Path(__file__).resolve().parents[1] / "js"
#: The image of the default release, as build-image.sh tags it (zkbroker:latest -> zkbroker:3.9).
RELEASE_IMAGE = IMAGE.rsplit(":", 1)[0] + ":3.9"
KAFKA_SERVER_STARTED = "[KafkaServer id=1] started (kafka.server.KafkaServer)"


def _round_trip(bootstrap: str, topic: str, count: int) -> list[bytes]:
    """Produce `count` records with confluent-kafka (acks=all), read them back with
    kafka-python."""
    from confluent_kafka import Producer
    from kafka import KafkaConsumer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(count):
        producer.produce(topic, value=b"v%d" % i)
    assert producer.flush(30) == 0
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=20_000,
    )
    try:
        return [message.value for _, message in zip(range(count), consumer, strict=False)]
    finally:
        consumer.close()


# ---- testcontainers ---------------------------------------------------------------------------


@contextlib.contextmanager
def _testcontainers_network() -> Iterator[Any]:
    from testcontainers.core.network import Network

    from tests.docker.conftest import new_bridge_name, seal_bridge

    bridge = new_bridge_name()
    kw = {"driver": "bridge", "options": SealedNetwork.options(bridge), "labels": LABELS}
    with Network(docker_network_kw=kw) as network:
        seal_bridge(bridge)
        yield network


def test_testcontainers_python_kafka_container_by_image_name() -> None:
    """The module's ZooKeeper mode unchanged: its start script (zookeeper-server-start, then
    Confluent's configure and launch), its wait for `[KafkaServer id=1] started`."""
    from testcontainers.community.kafka import KafkaContainer

    with _testcontainers_network() as network:
        container = KafkaContainer(RELEASE_IMAGE).with_network(network).with_kwargs(labels=LABELS)
        started = time.monotonic()
        kafka = container.start(timeout=60)
        try:
            ready = time.monotonic() - started
            bootstrap = kafka.get_bootstrap_server()
            print(f"KafkaContainer({RELEASE_IMAGE}) ready in {ready:.1f} s at {bootstrap}")
            assert bootstrap.startswith("127.0.0.1:")  # TESTCONTAINERS_HOST_OVERRIDE
            assert _round_trip(bootstrap, "tc-python", 5) == [b"v%d" % i for i in range(5)]
            logs = kafka.get_logs()
            text = (logs[0] + logs[1]).decode(errors="replace")
            assert KAFKA_SERVER_STARTED in text
        finally:
            kafka.stop()


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_testcontainers_node_kafka_container_by_image_name() -> None:
    """@testcontainers/kafka's ZooKeeper mode (its start script, the image's HEALTHCHECK as
    its wait) with kafkajs producing and consuming."""
    if not (JS / "node_modules" / "@testcontainers" / "kafka").is_dir():
        pytest.fail("@testcontainers/kafka is not installed: run `make test` (npm ci)")
    with sealed_network() as network:
        done = subprocess.run(
            ["node", str(JS / "testcontainers_kafka.js"), RELEASE_IMAGE, network.name],
            capture_output=True,
            timeout=240,
            check=False,
            env={**os.environ, "ZKBROKER_TEST_LABELS": json.dumps(LABELS)},
        )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    seen = json.loads(done.stdout)
    print(f"@testcontainers/kafka ready in {seen['readyMs'] / 1000:.1f} s")
    assert seen["consumed"] == ["n0", "n1", "n2"]


# ---- compose files ----------------------------------------------------------------------------


class Project:
    """A compose project of the test's: its file and name."""

    def __init__(self, path: Path, name: str) -> None:
        self.path, self.name = path, name
        self.started = time.monotonic()

    def __call__(self, *args: str, check: bool = True) -> str:
        return compose("-p", self.name, *args, file=self.path, check=check)

    def container(self, service: str) -> str:
        return self("ps", "-q", service).strip()

    def wait_healthy(self, services: list[str], timeout: float = 90) -> float:
        """Seconds from now until every service's container is healthy."""
        started = time.monotonic()
        status: dict[str, str] = {}
        containers = {service: self.container(service) for service in services}
        while time.monotonic() - started < timeout:
            for service, container in containers.items():
                status[service] = docker(
                    "inspect", "-f", "{{.State.Health.Status}}", container, check=False
                ).stdout.strip()
            if all(s == "healthy" for s in status.values()):
                return time.monotonic() - started
            time.sleep(0.3)
        raise AssertionError(f"not healthy: {status}\n{self('logs', check=False)[-4000:]}")


@contextlib.contextmanager
def _compose_up(config: dict[str, Any], tmp_path: Path, name: str) -> Iterator[Project]:
    """`compose up -d` of `config` on a sealed network; the project is taken down after."""
    with sealed_network() as network:
        config["networks"] = {"default": {"external": True, "name": network.name}}
        for service in config["services"].values():
            service["labels"] = LABELS
        path = tmp_path / f"{name}.json"  # JSON is YAML
        path.write_text(json.dumps(config))
        project = Project(path, f"zkbtest{name}{os.getpid()}")
        try:
            project("up", "-d", "--no-build")
            yield project
        finally:
            project("down", "--remove-orphans", "-t", "5", check=False)


def _confluent_cluster(ports: list[int]) -> dict[str, Any]:
    """Confluent's multi-broker example: cp-zookeeper and three cp-kafka services, the images
    replaced by zkbroker's and nothing else changed."""
    services: dict[str, Any] = {
        "zookeeper": {
            "image": RELEASE_IMAGE,
            "hostname": "zookeeper",
            "environment": {"ZOOKEEPER_CLIENT_PORT": "2181", "ZOOKEEPER_TICK_TIME": "2000"},
        }
    }
    for i, port in enumerate(ports, start=1):
        services[f"kafka-{i}"] = {
            "image": RELEASE_IMAGE,
            "hostname": f"kafka-{i}",
            "depends_on": ["zookeeper"],
            "ports": [f"127.0.0.1:{port}:{port}"],
            "environment": {
                "KAFKA_BROKER_ID": str(i),
                "KAFKA_ZOOKEEPER_CONNECT": "zookeeper:2181",
                "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,HOST:PLAINTEXT",
                "KAFKA_LISTENERS": f"PLAINTEXT://0.0.0.0:29092,HOST://0.0.0.0:{port}",
                "KAFKA_ADVERTISED_LISTENERS": (
                    f"PLAINTEXT://kafka-{i}:29092,HOST://127.0.0.1:{port}"
                ),
                "KAFKA_INTER_BROKER_LISTENER_NAME": "PLAINTEXT",
                "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "3",
                "KAFKA_MIN_INSYNC_REPLICAS": "2",
                "KAFKA_JMX_PORT": "9101",  # the cp image's JMX: warned about, ignored
            },
        }
    return {"services": services}


def test_confluent_compose_three_brokers_keep_acknowledged_records(tmp_path: Path) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    port = free_port_block(3)
    ports = [port, port + 1, port + 2]
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    with _compose_up(_confluent_cluster(ports), tmp_path, "cp") as project:
        project.wait_healthy(["zookeeper", "kafka-1", "kafka-2", "kafka-3"])
        took = time.monotonic() - project.started
        print(f"Confluent-convention compose (3 brokers) up and healthy in {took:.1f} s")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topic = NewTopic("kept", 1, 3, config={"min.insync.replicas": "2"})
        admin.create_topics([topic])["kept"].result(30)
        acked: list[bytes] = []

        def produce(values: list[bytes]) -> None:
            producer = Producer(
                {"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 60_000}
            )

            def done(error: Any, message: Any) -> None:
                if error is None:
                    acked.append(message.value())

            for value in values:
                producer.produce("kept", value=value, on_delivery=done)
            producer.flush(90)

        produce([b"before-%d" % i for i in range(200)])
        assert len(acked) == 200
        leader = admin.list_topics("kept", timeout=10).topics["kept"].partitions[0].leader
        docker("kill", project.container(f"kafka-{leader}"))
        produce([b"after-%d" % i for i in range(100)])
        assert len(acked) == 300, f"{len(acked)} of 300 acknowledged after the kill"

        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "reader",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        consumer.assign([TopicPartition("kept", 0, 0)])
        read: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(read) < len(acked) and time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is not None and message.error() is None:
                read.append(message.value() or b"")
        consumer.close()
        assert read == acked  # every acknowledged record, in order, none twice

        logs = project("logs", "kafka-1", check=False)
        warned = [line for line in logs.splitlines() if "KAFKA_JMX_PORT" in line]
        assert len(warned) == 1, warned
        assert KAFKA_SERVER_STARTED in logs


def test_bitnami_compose_serves_clients(tmp_path: Path) -> None:
    """Bitnami's ZooKeeper-mode development example (two listeners), the images replaced."""
    port = free_port_block(1)
    config = {
        "services": {
            "zookeeper": {
                "image": RELEASE_IMAGE,
                "environment": ["ALLOW_ANONYMOUS_LOGIN=yes"],
            },
            "kafka": {
                "image": RELEASE_IMAGE,
                "depends_on": ["zookeeper"],
                "ports": [f"127.0.0.1:{port}:{port}"],
                "environment": [
                    "KAFKA_BROKER_ID=1",
                    "KAFKA_CFG_ZOOKEEPER_CONNECT=zookeeper:2181",
                    "KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP=CLIENT:PLAINTEXT,EXTERNAL:PLAINTEXT",
                    f"KAFKA_CFG_LISTENERS=CLIENT://:9092,EXTERNAL://:{port}",
                    f"KAFKA_CFG_ADVERTISED_LISTENERS=CLIENT://kafka:9092,EXTERNAL://127.0.0.1:{port}",
                    "KAFKA_CFG_INTER_BROKER_LISTENER_NAME=CLIENT",
                    "ALLOW_PLAINTEXT_LISTENER=yes",
                ],
            },
        }
    }
    with _compose_up(config, tmp_path, "bitnami") as project:
        took = project.wait_healthy(["kafka"])
        print(f"Bitnami-convention compose healthy in {took:.1f} s")
        bootstrap = f"127.0.0.1:{port}"
        assert _round_trip(bootstrap, "bitnami", 3) == [b"v0", b"v1", b"v2"]


def test_a_missing_required_variable_is_confluents_error() -> None:
    done = docker(
        "run", "--rm", LABEL_FLAG, "--network=none", "-e", "KAFKA_BROKER_ID=1",
        "-e", "KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092", RELEASE_IMAGE,
        check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "KAFKA_ZOOKEEPER_CONNECT is required." in done.stdout + done.stderr
