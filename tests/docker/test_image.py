"""The image run as a user runs it: `docker run --network host`, driven by real clients."""

from __future__ import annotations

import json
import subprocess
import time
import uuid

from tests.docker.conftest import IMAGE, RunningImage, docker, run_image, wait_for_metadata


def test_metadata_lists_three_brokers_to_every_client(cluster: RunningImage) -> None:
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=10000)
    try:
        described = admin.describe_cluster()
    finally:
        admin.close()
    ports = sorted(b["port"] for b in described["brokers"])
    assert ports == [cluster.port, cluster.port + 1, cluster.port + 2]
    assert {b["host"] for b in described["brokers"]} == {"127.0.0.1"}

    brokers = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=10).brokers
    assert sorted(b.port for b in brokers.values()) == ports

    listing = subprocess.run(
        ["kcat", "-L", "-J", "-b", cluster.bootstrap, "-m", "10"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert len(json.loads(listing.stdout)["brokers"]) == 3


def test_topic_produce_consume_and_group_commit(cluster: RunningImage) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka import KafkaProducer

    topic = f"orders-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])[topic].result(20)

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    for i in range(10):
        producer.send(topic, key=str(i % 3).encode(), value=f"order-{i}".encode())
    producer.flush(20)
    producer.close()

    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < 10 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
    consumer.close()
    assert sorted(values) == sorted(f"order-{i}".encode() for i in range(10))
    assert sum(max(tp.offset, 0) for tp in committed) == 10  # -1001: nothing in it

    consumed = subprocess.run(
        ["kcat", "-C", "-b", cluster.bootstrap, "-t", topic, "-o", "beginning", "-e", "-q"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert len(consumed.stdout.split()) == 10


def test_healthcheck_turns_healthy(cluster: RunningImage) -> None:
    deadline = time.monotonic() + 30
    status = ""
    while time.monotonic() < deadline:
        status = docker("inspect", "-f", "{{.State.Health.Status}}", cluster.name).stdout.strip()
        if status == "healthy":
            break
        time.sleep(0.2)
    assert status == "healthy", cluster.logs()
    print(f"healthy {time.monotonic() - cluster.started_at:.1f} s after docker run")


def test_first_metadata_answer_within_seconds_of_docker_run() -> None:
    with run_image() as running:
        waited = wait_for_metadata(running.bootstrap, 3)
        elapsed = time.monotonic() - running.started_at
    print(
        f"docker run -> Metadata with 3 brokers: {elapsed:.2f} s (after run returned {waited:.2f})"
    )
    assert elapsed < 10, elapsed


def test_environment_chooses_release_and_broker_count() -> None:
    from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
    from zkbroker.broker.toolkit.wire import WireClient

    with run_image(brokers=1, env={"ZKBROKER_KAFKA_VERSION": "2.8"}) as running:
        wait_for_metadata(running.bootstrap, 1)
        with WireClient.to(running.bootstrap) as client:
            answer = client.request(0, ApiVersionsRequest())
    versions = {key.api_key: key.max_version for key in answer.api_keys}
    assert versions[3] == 11  # Metadata v11 is 2.8's newest (3.9 answers v12)


def test_internal_listener_is_advertised_as_the_internal_host(cluster: RunningImage) -> None:
    from zkbroker.broker.protocol.messages.metadata import MetadataRequest
    from zkbroker.broker.toolkit.wire import WireClient

    with WireClient("127.0.0.1", cluster.internal_port) as client:
        brokers = client.request(1, MetadataRequest(topics=[])).brokers
    assert sorted(b.port for b in brokers) == [cluster.internal_port + i for i in range(3)]


def test_runs_as_non_root_without_sources_or_build_leftovers() -> None:
    probe = docker(
        "run",
        "--rm",
        "--network",
        "none",
        "--entrypoint",
        "sh",
        IMAGE,
        "-c",
        "id -u; ls -d /src /app /tmp/dist 2>/dev/null; "
        "find / -xdev \\( -name 'zkbroker*.egg-info' -o -name pyproject.toml -o -name build "
        "-o -name '*.whl' -o -name .git \\) -print 2>/dev/null; "
        "ls /opt/zkbroker/lib/python3.11/site-packages | grep -c -i -e '^pip' -e '^setuptools'; "
        "command -v java; test -f /usr/share/java/zookeeper.jar && echo zookeeper-jar",
        check=False,
    )
    lines = probe.stdout.split()
    assert lines[0] != "0", "the image runs as root"
    assert lines[1:] == ["0", "/usr/bin/java", "zookeeper-jar"], probe.stdout
    user = docker("image", "inspect", "-f", "{{.Config.User}}", IMAGE).stdout.strip()
    assert user == "zkbroker"
    health = docker("image", "inspect", "-f", "{{json .Config.Healthcheck.Test}}", IMAGE).stdout
    assert "healthcheck.py" in health


def test_zkbroker_zk_runs_the_fault_cli_against_the_embedded_zookeeper(
    cluster: RunningImage,
) -> None:
    pushed = docker(
        "exec",
        cluster.name,
        "zkbroker-zk",
        "fault",
        "push",
        "CreateTopics",
        "POLICY_VIOLATION",
        "--count",
        "1",
    )
    assert "error api=CreateTopics" in pushed.stdout
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    future = admin.create_topics([NewTopic("refused", num_partitions=1, replication_factor=1)])
    try:
        future["refused"].result(20)
        raise AssertionError("the injected POLICY_VIOLATION was not answered")
    except Exception as exc:  # KafkaException(POLICY_VIOLATION)
        assert "POLICY_VIOLATION" in str(exc) or "olicy" in str(exc), exc
    docker("exec", cluster.name, "zkbroker-zk", "fault", "clear")
