"""`ZkBrokerContainer` (testcontainers) started from a test: with published ports (its default)
on a bridge network, a testcontainers `Network` sealed as conftest.py explains (the private
engine has no default bridge), and with `host_network=True`; plain and secured."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.docker.conftest import (
    LABELS,
    SealedNetwork,
    metadata_from_a_container,
    new_bridge_name,
    seal_bridge,
)
from zkbroker import Security, ZkBrokerContainer
from zkbroker.broker.toolkit.container import ZkBrokerContainerError


@contextlib.contextmanager
def placement(mode: str) -> Iterator[dict[str, Any]]:
    """ZkBrokerContainer's arguments for `mode`: a sealed testcontainers Network for "bridge"."""
    if mode == "host":
        yield {"host_network": True, "labels": LABELS}
        return
    from testcontainers.core.network import Network

    bridge = new_bridge_name()
    network_kw = {
        "driver": "bridge",
        "options": SealedNetwork.options(bridge),
        "labels": LABELS,
    }
    with Network(docker_network_kw=network_kw) as network:
        seal_bridge(bridge)
        yield {"network": network, "labels": LABELS}


@pytest.mark.parametrize("mode", ["bridge", "host"])
def test_plain_cluster_bootstrap_produce_consume_and_fault(mode: str) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka import KafkaConsumer, KafkaProducer

    with (
        placement(mode) as where,
        ZkBrokerContainer(brokers=3, kafka_version="3.9", **where) as kafka,
    ):
        bootstrap = kafka.get_bootstrap_server()
        assert bootstrap == ",".join(f"127.0.0.1:{kafka.port + i}" for i in range(3))
        if mode == "bridge":
            wrapped = kafka.get_wrapped_container()
            wrapped.reload()
            bindings = wrapped.attrs["HostConfig"]["PortBindings"]
            assert {
                (key, b["HostIp"], b["HostPort"]) for key, found in bindings.items() for b in found
            } == {(f"{kafka.port + i}/tcp", "127.0.0.1", str(kafka.port + i)) for i in range(3)}
            assert wrapped.attrs["HostConfig"]["NetworkMode"] == where["network"].name
            # Other containers on the network: the INTERNAL listener under the advertised name.
            internal = kafka.get_internal_bootstrap_server()
            host = internal.split(",")[0].rsplit(":", 1)[0]
            assert host.startswith("zkbroker-"), internal
            listed = metadata_from_a_container(where["network"].name, internal.split(",")[0])
            assert listed == [[host, kafka.internal_port + i] for i in range(3)]

        topic = f"t-{uuid.uuid4().hex[:8]}"
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        producer.send(topic, b"hello").get(timeout=20)  # auto-created
        producer.close()
        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            consumer_timeout_ms=10000,
        )
        assert next(iter(consumer)).value == b"hello"
        consumer.close()

        assert "error api=CreateTopics" in kafka.fault(
            "push", "CreateTopics", "POLICY_VIOLATION", "--count", "1"
        )
        admin = AdminClient(kafka.client_config("confluent"))
        future = admin.create_topics([NewTopic("refused", 1, 1)])["refused"]
        with pytest.raises(KafkaException) as refused:
            future.result(20)
        assert refused.value.args[0].code() == KafkaError.POLICY_VIOLATION, refused.value
        assert "CreateTopics" not in kafka.fault("list")  # consumed


def test_sasl_scram_and_plain_over_tls() -> None:
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaProducer

    security = Security(
        protocol="SASL_SSL", mechanisms=("SCRAM-SHA-512", "PLAIN"), users={"alice": "alice-pw"}
    )
    with ZkBrokerContainer(brokers=2, host_network=True, security=security, labels=LABELS) as kafka:
        conf = kafka.client_config("confluent")
        assert conf["security.protocol"] == "SASL_SSL"
        assert len(AdminClient(conf).list_topics(timeout=15).brokers) == 2

        plain = kafka.client_config("kafka-python") | {"sasl_mechanism": "PLAIN"}
        producer = KafkaProducer(**plain)
        producer.send("secured", b"x").get(timeout=20)
        producer.close()

        # A real SCRAM exchange on the wire: the right password passes, a wrong one fails.
        assert kafka._scram_login(kafka.port, "alice", "alice-pw", "SCRAM-SHA-512")
        assert not kafka._scram_login(kafka.port, "alice", "wrong", "SCRAM-SHA-512")


def test_ryuk_failure_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from testcontainers.core.config import testcontainers_config

    monkeypatch.setattr(testcontainers_config, "ryuk_disabled", False)
    monkeypatch.setattr(testcontainers_config, "ryuk_image", "zkbroker-test/no-such-ryuk:0")
    with pytest.raises(ZkBrokerContainerError, match="TESTCONTAINERS_RYUK_DISABLED=true"):
        ZkBrokerContainer(brokers=1, host_network=True).start()
