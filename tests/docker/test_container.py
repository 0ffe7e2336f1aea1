"""`ZkBrokerContainer` (testcontainers) started from a test, plain and secured."""

from __future__ import annotations

import uuid

import pytest

from zkbroker import Security, ZkBrokerContainer
from zkbroker.broker.toolkit.container import ZkBrokerContainerError


def test_plain_cluster_bootstrap_produce_consume_and_fault() -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka import KafkaConsumer, KafkaProducer

    with ZkBrokerContainer(brokers=3, kafka_version="3.9", host_network=True) as kafka:
        bootstrap = kafka.get_bootstrap_server()
        assert len(bootstrap.split(",")) == 3
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
        with pytest.raises(Exception, match=r"(?i)policy"):
            future.result(20)
        assert "CreateTopics" not in kafka.fault("list")  # consumed


def test_sasl_scram_and_plain_over_tls() -> None:
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaProducer

    security = Security(
        protocol="SASL_SSL", mechanisms=("SCRAM-SHA-512", "PLAIN"), users={"alice": "alice-pw"}
    )
    with ZkBrokerContainer(brokers=2, host_network=True, security=security) as kafka:
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
