"""A Kafka server.properties and JAAS file as they are, over real TCP against a real ZooKeeper:
Kafka 3.9's stock config/server.properties starts a broker (`zkbroker run` as a process) that
kafka-python produces to and consumes from, an unknown key is warned about and the broker
starts; PLAIN users from a JAAS file log in with a real client at 0.11 (before sasl.jaas.config
existed) and at 3.9."""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import wait_until
from tests.unit.test_cli_config_file import JAAS, stock_file
from zkbroker import Cluster
from zkbroker.broker.cli.main import build_parser, settings_from_args
from zkbroker.broker.toolkit.zookeeper import ZooKeeperEndpoint, fresh_chroot

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _read_until(process: subprocess.Popen[str], prefix: str, timeout: float = 60.0) -> str:
    """The first stdout line of `process` starting with `prefix`."""
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not selector.select(timeout=0.5):
            if process.poll() is not None:
                break
            continue
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            break
        if line.startswith(prefix):
            return line.strip().removeprefix(prefix)
    raise AssertionError(f"zkbroker printed no {prefix!r} line (exit code {process.poll()})")


@pytest.fixture
def zkbroker_process() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:  # only the processes this test started
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def test_stock_server_properties_serves_a_client(
    zk_test_zookeeper: ZooKeeperEndpoint,
    tmp_path: Path,
    zkbroker_process: list[subprocess.Popen[str]],
) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    port = _free_port()
    path = stock_file(
        tmp_path,
        listeners=f"PLAINTEXT://127.0.0.1:{port}",
        zookeeper_connect=fresh_chroot(zk_test_zookeeper.connect_string),
        log_dirs=str(tmp_path / "kafka-logs"),
        no_such_key="1",  # unknown: warned about, the broker starts
    )
    stderr_path = tmp_path / "stderr.log"
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "zkbroker", "--broker-config-file", str(path),
             "--kafka-version", "3.9", "--log-format", "json"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True,
            env={**os.environ, "KAFKA_OPTS": ""},
        )  # fmt: skip
        zkbroker_process.append(process)
        bootstrap = _read_until(process, "bootstrap_servers=")
        assert bootstrap == f"127.0.0.1:{port}"  # one broker, on the file's listener

        producer = KafkaProducer(bootstrap_servers=bootstrap)
        producer.send("quickstart-events", b"hello").get(timeout=30)
        producer.close()
        consumer = KafkaConsumer(
            "quickstart-events",
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            consumer_timeout_ms=15000,
        )
        assert [m.value for m in consumer] == [b"hello"]
        consumer.close()
        # On disk, in the file's log.dirs.
        assert (tmp_path / "kafka-logs" / "quickstart-events-0").is_dir()

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    err = stderr_path.read_text()
    warnings = [line for line in err.splitlines() if "config.unused" in line]
    assert len(warnings) == 1, err
    assert "These configurations '[no.such.key]' were supplied but are not used yet." in warnings[0]


@pytest.mark.parametrize("release", ["0.11.0", "3.9"])
def test_jaas_file_plain_users_log_in(
    zk_test_zookeeper: ZooKeeperEndpoint, tmp_path: Path, release: str
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    jaas = tmp_path / "kafka_server_jaas.conf"
    # No Client section: this test's ZooKeeper has no SASL users.
    jaas.write_text(JAAS.split("Client {")[0])
    args = build_parser().parse_args(
        ["run", "--brokers", "1", "--listener", "SASL_PLAINTEXT://127.0.0.1:0",
         "--zookeeper", fresh_chroot(zk_test_zookeeper.connect_string),
         "--kafka-version", release, "--jaas-config", str(jaas),
         "--broker-config", "sasl.enabled.mechanisms=PLAIN",
         "--broker-config", "sasl.mechanism.inter.broker.protocol=PLAIN"]
    )  # fmt: skip
    with Cluster(settings_from_args(args)) as cluster:

        def conf(user: str, password: str) -> dict[str, str]:
            return {
                "bootstrap.servers": cluster.bootstrap_servers,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": user,
                "sasl.password": password,
            }

        metadata = AdminClient(conf("alice", 'alice "quoted" secret')).list_topics(timeout=20)
        assert list(metadata.brokers) == [0]
        # The wrong password is refused by the broker, not merely unanswered: librdkafka
        # reports an authentication error (with the broker's message since KIP-152, 1.0;
        # before it Kafka closes the connection in the middle of the SASL exchange). Its
        # metadata request fails alike either way, so the error is what tells them apart.
        errors: list[KafkaError] = []
        wrong: dict[str, Any] = {**conf("alice", "wrong"), "error_cb": errors.append}
        admin = AdminClient(wrong)
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=5)

        def refusals() -> list[str]:
            admin.poll(0.1)
            return [e.str() for e in errors if e.code() == KafkaError._AUTHENTICATION]

        refused = wait_until(refusals)
        if release == "0.11.0":
            assert "SASL authentication failure: Disconnected" in refused[0], refused
            assert "in state AUTH_LEGACY" in refused[0], refused
        else:
            assert (
                "SASL authentication error: Authentication failed: Invalid username or password"
                in refused[0]
            ), refused
