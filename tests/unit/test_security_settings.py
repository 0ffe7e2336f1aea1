"""Listener and security settings (pure): `--listener`, Kafka's listener checks, the static
configs a secured broker shows, and the refusals a Kafka broker would start with."""

from __future__ import annotations

import pytest

from zkbroker.broker.cli.main import build_parser, settings_from_args
from zkbroker.broker.security.jaas import plain_jaas_config, scram_jaas_config
from zkbroker.broker.settings import Settings


def parse(*argv: str) -> Settings:
    return settings_from_args(build_parser().parse_args(["run", *argv]))


SASL = (
    "--broker-config",
    "sasl.enabled.mechanisms=SCRAM-SHA-512",
    # Kafka refuses a SASL inter-broker listener without the brokers' own login.
    "--broker-config",
    "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
    "--broker-config",
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config="
    + scram_jaas_config("admin", "admin-secret"),
)


def test_listener_option_names_host_port_and_protocol() -> None:
    s = parse("--listener", "SASL_PLAINTEXT://127.0.0.2:19092", *SASL)
    assert (s.listener_name, s.host, s.port) == ("SASL_PLAINTEXT", "127.0.0.2", 19092)
    assert s.listener_security.protocol == "SASL_PLAINTEXT"
    assert s.listener_security.mechanisms == ("SCRAM-SHA-512",)
    assert [s.port_of(b) for b in s.broker_ids] == [19092, 19093, 19094]
    configs = s.static_broker_configs(1, 19093, "zk")
    assert configs["listeners"] == "SASL_PLAINTEXT://127.0.0.2:19093"
    assert configs["inter.broker.listener.name"] == "SASL_PLAINTEXT"
    assert "listener.security.protocol.map" not in configs  # Kafka's default map covers it


def test_several_listeners() -> None:
    s = parse(
        "--listener",
        "SASL_PLAINTEXT://127.0.0.1:9092",
        "--listener",
        "PLAINTEXT://127.0.0.1:9192",
        *SASL,
    )
    assert s.extra_listeners == (("PLAINTEXT", "127.0.0.1", 9192),)
    assert [s.port_of(b, "PLAINTEXT") for b in s.broker_ids] == [9192, 9193, 9194]
    configs = s.static_broker_configs(2, 9094, "zk")
    assert configs["listeners"] == "SASL_PLAINTEXT://127.0.0.1:9094,PLAINTEXT://127.0.0.1:9194"
    # No --advertised-listener: Kafka's unset key (the listeners are advertised).
    assert "advertised.listeners" not in configs
    assert s.security_of("PLAINTEXT").protocol == "PLAINTEXT"


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (("--listener", "nope"), "expected NAME://HOST:PORT"),
        (
            ("--listener", "PLAINTEXT://h:9092", "--listener", "PLAINTEXT://h:9192"),
            "Each listener must have a different name",
        ),
        (
            ("--listener", "PLAINTEXT://h:9092", "--listener", "SSL://h:9093"),
            "would share ports",
        ),
        (("--listener", "SASL_PLAINTEXT://h:9092"), "gssapi.sasl.jaas.config"),
        (("--listener", "SSL://h:9092"), "ssl.keystore.location"),
        (
            (
                "--listener",
                "CLIENT://h:9092",
                "--broker-config",
                "listener.security.protocol.map=OTHER:SSL",
            ),
            "No security protocol defined for listener CLIENT",
        ),
        (
            ("--broker-config", "inter.broker.listener.name=NOPE"),
            "inter.broker.listener.name must be a listener name defined in advertised.listeners",
        ),
        (
            (
                "--broker-config",
                "ssl.keystore.type=JKS",
                "--listener",
                "SSL://h:9092",
                "--broker-config",
                "ssl.keystore.location=/x.jks",
            ),
            "PEM keystores only",
        ),
    ],
)
def test_refusals(argv: tuple[str, ...], reason: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises((ValueError, SystemExit)):
        parse(*argv)
    err = capsys.readouterr().err
    if err:
        assert reason in err
    else:
        with pytest.raises(ValueError, match=reason):
            parse(*argv)


def test_custom_listener_names_keep_plaintext_by_default() -> None:
    s = Settings(listener_name="CLIENT", extra_listeners=(("SSL_IN", "127.0.0.1", 0),), port=0)
    assert s.security_of("CLIENT").protocol == "PLAINTEXT"
    configs = s.static_broker_configs(0, 1, "zk")
    assert configs["listener.security.protocol.map"] == "CLIENT:PLAINTEXT,SSL_IN:PLAINTEXT"


def test_plain_users_from_the_listener_jaas_config() -> None:
    jaas = plain_jaas_config({"alice": "a", "bob": "b"}, login=("alice", "a"))
    s = Settings(
        listener_name="SASL_PLAINTEXT",
        broker_configs=(
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", jaas),
        ),
    )
    assert dict(s.listener_security.plain_users) == {"alice": "a", "bob": "b"}
