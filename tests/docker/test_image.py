"""The image run as users run it, driven by real clients: with `--network host`, and with the
README's published ports on a bridge network (see conftest.py for both modes)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import uuid

import pytest

from tests.docker.conftest import (
    IMAGE,
    LABEL_FLAG,
    RunningImage,
    SealedNetwork,
    container_ip,
    docker,
    metadata_from_a_container,
    network_for,
    run_image,
    sealed_network,
    wait_for_metadata,
)


def test_metadata_lists_three_brokers_to_every_client(cluster: RunningImage) -> None:
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient

    from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
    from zkbroker.broker.toolkit.wire import WireClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=10000)
    try:
        described = admin.describe_cluster()
    finally:
        admin.close()
    ports = [cluster.port, cluster.port + 1, cluster.port + 2]
    assert sorted(b["port"] for b in described["brokers"]) == ports
    assert {b["host"] for b in described["brokers"]} == {"127.0.0.1"}

    brokers = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=10).brokers
    assert sorted((b.host, b.port) for b in brokers.values()) == [("127.0.0.1", p) for p in ports]

    listing = subprocess.run(
        ["kcat", "-L", "-J", "-b", cluster.bootstrap, "-m", "10"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert len(json.loads(listing.stdout)["brokers"]) == 3

    # Each advertised address answers, as the broker it advertises.
    for broker in brokers.values():
        with WireClient(broker.host, broker.port) as client:
            assert client.request(0, ApiVersionsRequest()).error_code == 0

    if cluster.mode == "bridge":
        assert cluster.network is not None
        assert cluster.inspect("{{.HostConfig.NetworkMode}}") == cluster.network.name
        bindings = json.loads(cluster.inspect("{{json .HostConfig.PortBindings}}"))
        # Exactly the brokers' ports, each on 127.0.0.1 under its own number; INTERNAL unpublished.
        assert {
            (key, b["HostIp"], b["HostPort"]) for key, found in bindings.items() for b in found
        } == {(f"{p}/tcp", "127.0.0.1", str(p)) for p in ports}
        assert sorted(cluster.published) == sorted(f"{p}/tcp -> 127.0.0.1:{p}" for p in ports), (
            cluster.published
        )


def test_topic_produce_consume_across_the_brokers_and_group_commit(
    cluster: RunningImage,
) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka import KafkaProducer

    topic = f"orders-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])[topic].result(20)
    deadline = time.monotonic() + 20
    leaders: dict[int, int] = {}
    while len(leaders) < 3 and time.monotonic() < deadline:
        described = admin.list_topics(topic, timeout=10).topics[topic].partitions
        leaders = {p: meta.leader for p, meta in described.items() if meta.leader >= 0}
        if len(leaders) < 3:
            time.sleep(0.2)
    # One partition led by each broker: producing to all three reaches every broker's port.
    assert sorted(leaders.values()) == [0, 1, 2], leaders

    # Bootstrapped from the last broker alone: the others are found through what it advertises.
    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{cluster.port + 2}", acks="all")
    for i in range(12):
        producer.send(topic, value=f"order-{i}".encode(), partition=i % 3).get(timeout=20)
    producer.close()

    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{cluster.port}",
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    received: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 30
    while len(received) < 12 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            received.append((message.partition(), message.value()))
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
    consumer.close()
    assert sorted(received) == sorted((i % 3, f"order-{i}".encode()) for i in range(12))
    assert sorted(tp.offset for tp in committed) == [4, 4, 4]

    consumed = subprocess.run(
        ["kcat", "-C", "-b", cluster.bootstrap, "-t", topic, "-o", "beginning", "-e", "-q"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert sorted(consumed.stdout.split()) == sorted(f"order-{i}" for i in range(12))


def test_healthcheck_turns_healthy(cluster: RunningImage) -> None:
    deadline = time.monotonic() + 30
    status = ""
    while time.monotonic() < deadline:
        status = cluster.inspect("{{.State.Health.Status}}")
        if status == "healthy":
            break
        time.sleep(0.2)
    assert status == "healthy", cluster.logs()
    print(f"{cluster.mode}: healthy {time.monotonic() - cluster.started_at:.1f} s after docker run")


def test_first_metadata_answer_within_seconds_of_docker_run(
    mode: str, request: pytest.FixtureRequest
) -> None:
    with run_image(network=network_for(mode, request)) as running:
        waited = wait_for_metadata(running.bootstrap, 3)
        elapsed = time.monotonic() - running.started_at
    print(
        f"{mode}: docker run -> Metadata with 3 brokers: {elapsed:.2f} s "
        f"(after run returned {waited:.2f})"
    )
    assert elapsed < 10, elapsed


def test_environment_chooses_release_and_broker_count(
    mode: str, request: pytest.FixtureRequest
) -> None:
    from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
    from zkbroker.broker.toolkit.wire import WireClient

    network = network_for(mode, request)
    with run_image(brokers=1, env={"ZKBROKER_KAFKA_VERSION": "2.8"}, network=network) as running:
        wait_for_metadata(running.bootstrap, 1)
        with WireClient.to(running.bootstrap) as client:
            answer = client.request(0, ApiVersionsRequest())
    versions = {key.api_key: key.max_version for key in answer.api_keys}
    assert versions[3] == 11  # Metadata v11 is 2.8's newest (3.9 answers v12)


def test_internal_listener_is_advertised_as_the_internal_host(cluster: RunningImage) -> None:
    from zkbroker.broker.protocol.messages.metadata import MetadataRequest
    from zkbroker.broker.toolkit.wire import WireClient

    internal_ports = [cluster.internal_port + i for i in range(3)]
    if cluster.mode == "host":
        with WireClient("127.0.0.1", cluster.internal_port) as client:
            brokers = client.request(1, MetadataRequest(topics=[])).brokers
        assert sorted((b.host, b.port) for b in brokers) == [
            ("127.0.0.1", p) for p in internal_ports
        ]
        return
    # Another container on the network dials the host name the image advertises by default.
    assert cluster.network is not None
    hostname = cluster.inspect("{{.Config.Hostname}}")
    listed = metadata_from_a_container(cluster.network.name, f"{hostname}:{cluster.internal_port}")
    assert listed == [[hostname, p] for p in internal_ports]


def http_server(name: str, network: SealedNetwork) -> str:
    """Start `python3 -m http.server 8000` in the image on `network`; its address, once the
    host connects to it."""
    docker(
        "run", "-d", "--name", name, LABEL_FLAG, f"--network={network.name}",
        "--entrypoint=python3", IMAGE, "-m", "http.server", "8000",
    )  # fmt: skip
    address = container_ip(name, network)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection((address, 8000), timeout=2).close()
            return address
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


# Run on the bridge: connects to argv[1] (a neighbour on the same bridge: must work), then to
# argv[2] (beyond the bridge); exit 0 only when the second connection fails.
_ROUTE_PROBE = """
import socket, sys
socket.create_connection((sys.argv[1], 8000), timeout=5).close()
try:
    socket.create_connection((sys.argv[2], 8000), timeout=3).close()
except OSError as exc:
    print(repr(exc))
    sys.exit(0)
print("connected")
sys.exit(1)
"""


def test_bridge_network_has_no_route_out(bridge_network: SealedNetwork) -> None:
    """The seal of conftest.py at work: a container on the bridge reaches its neighbours on the
    bridge and nothing beyond it.

    "Beyond" is a container on a second network this test creates (sealed too), which the host
    reaches: a route out of the bridge would reach it the same way.
    """
    token = uuid.uuid4().hex[:8]
    neighbour, target = f"zkbroker-test-n{token}", f"zkbroker-test-t{token}"
    with sealed_network() as other:
        try:
            near = http_server(neighbour, bridge_network)
            far = http_server(target, other)
            attempt = docker(
                "run", "--rm", LABEL_FLAG, f"--network={bridge_network.name}",
                "--entrypoint=python3", IMAGE, "-c", _ROUTE_PROBE, near, far,
                check=False,
            )  # fmt: skip
            assert attempt.returncode == 0, f"the bridge routes out: {attempt}"
            print(f"from {bridge_network.bridge} to {far}: {attempt.stdout.strip()}")
        finally:
            docker("rm", "-f", neighbour, target, check=False)


def test_runs_as_non_root_without_sources_or_build_leftovers() -> None:
    probe = docker(
        "run",
        "--rm",
        LABEL_FLAG,
        "--network",
        "none",
        "--entrypoint",
        "sh",
        IMAGE,
        "-c",
        "id -u; ls -d /src /app /tmp/dist /stage 2>/dev/null; "
        "find / -xdev \\( -name 'zkbroker*.egg-info' -o -name pyproject.toml -o -name build "
        "-o -name '*.whl' -o -name .git \\) -print 2>/dev/null; "
        "ls /opt/zkbroker/lib/python3.11/site-packages | grep -c -i -e '^pip' -e '^setuptools'; "
        "command -v java; test -f /usr/share/java/zookeeper.jar && echo zookeeper-jar; "
        "head -n 1 /opt/zkbroker/bin/zkbroker; zkbroker --help >/dev/null && echo cli",
        check=False,
    )
    lines = probe.stdout.split()
    assert lines[0] != "0", "the image runs as root"
    assert lines[1:] == [
        "0",
        "/usr/bin/java",
        "zookeeper-jar",
        "#!/opt/zkbroker/bin/python3",
        "cli",
    ], probe.stdout
    user = docker("image", "inspect", "-f", "{{.Config.User}}", IMAGE).stdout.strip()
    assert user == "zkbroker"
    health = docker("image", "inspect", "-f", "{{json .Config.Healthcheck.Test}}", IMAGE).stdout
    assert "healthcheck.py" in health


def test_zkbroker_zk_runs_the_fault_cli_against_the_embedded_zookeeper(
    cluster: RunningImage,
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

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
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        topic = f"refused-{uuid.uuid4().hex[:8]}"
        future = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
        with pytest.raises(KafkaException) as refused:
            future[topic].result(20)
        assert refused.value.args[0].code() == KafkaError.POLICY_VIOLATION, refused.value
        # Consumed: the same request now succeeds.
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[
            topic
        ].result(20)
    finally:
        docker("exec", cluster.name, "zkbroker-zk", "fault", "clear")
