"""A Kafka server.properties as it is (`--broker-config-file`): the keys zkbroker sets through
options (broker.id, listeners, zookeeper.connect, log.dirs, ...) set those options, a different
value on the command line is refused naming both, unknown keys are kept and warned about as
Kafka's AbstractConfig.logUnused does; the JAAS file (`--jaas-config`, $KAFKA_OPTS)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from zkbroker.broker.cli import main as cli
from zkbroker.broker.cli.main import build_parser, settings_from_args
from zkbroker.broker.security.jaas import read_jaas_file
from zkbroker.broker.security.listener_config import listener_security
from zkbroker.broker.settings import Settings, unused_configs_message

# Kafka 3.9's config/server.properties as it ships (comments shortened), the quickstart's.
STOCK_SERVER_PROPERTIES = """\
# Licensed to the Apache Software Foundation (ASF) under one or more
# see kafka.server.KafkaConfig for additional details and defaults

############################# Server Basics #############################

# The id of the broker. This must be set to a unique integer for each broker.
broker.id=0

############################# Socket Server Settings #############################

#listeners=PLAINTEXT://:9092
#advertised.listeners=PLAINTEXT://your.host.name:9092
#listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600

############################# Log Basics #############################

log.dirs=/tmp/kafka-logs
num.partitions=1
num.recovery.threads.per.data.dir=1

############################# Internal Topic Settings  #############################
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1

############################# Log Retention Policy #############################

log.retention.hours=168
#log.retention.bytes=1073741824
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000

############################# Zookeeper #############################

zookeeper.connect=localhost:2181
zookeeper.connection.timeout.ms=18000

############################# Group Coordinator Settings #############################

group.initial.rebalance.delay.ms=0
"""


def stock_file(tmp_path: Path, **changes: str) -> Path:
    """The stock file with some keys' values changed (`log_dirs="/x"` for log.dirs)."""
    lines = []
    for line in STOCK_SERVER_PROPERTIES.splitlines():
        key = line.partition("=")[0]
        wanted = changes.pop(key.replace(".", "_"), None)
        lines.append(line if wanted is None else f"{key}={wanted}")
    lines.extend(f"{k.replace('_', '.')}={v}" for k, v in changes.items())
    path = tmp_path / "server.properties"
    path.write_text("\n".join(lines) + "\n", encoding="iso-8859-1")
    return path


def parse(*argv: str) -> Settings:
    return settings_from_args(build_parser().parse_args(["run", *argv]))


def test_stock_file_configures_one_broker(tmp_path: Path) -> None:
    path = stock_file(tmp_path, log_dirs=str(tmp_path / "logs"))
    s = parse("--broker-config-file", str(path), "--kafka-version", "3.9")
    assert s.broker_ids == (0,)  # the file describes one broker
    assert s.zookeeper == "localhost:2181"
    assert s.log_dir == str(tmp_path / "logs")
    assert (s.num_partitions, s.max_request_bytes) == (1, 104857600)
    configs = s.static_broker_configs(0, 9092, "localhost:2181")
    assert configs["broker.id"] == "0"
    assert configs["log.dirs"] == str(tmp_path / "logs")
    assert configs["log.retention.hours"] == "168"
    assert configs["offsets.topic.replication.factor"] == "1"
    assert configs["group.initial.rebalance.delay.ms"] == "0"
    assert s.unknown_broker_configs == ()  # every stock key is a 3.9 broker config


def test_listeners_and_chroot_from_the_file(tmp_path: Path) -> None:
    path = stock_file(
        tmp_path,
        listeners="PLAINTEXT://127.0.0.1:19092,SSL_IN://127.0.0.1:19192",
        listener_security_protocol_map="PLAINTEXT:PLAINTEXT,SSL_IN:PLAINTEXT",
        zookeeper_connect="zk1:2181,zk2:2181/kafka",
    )
    s = parse("--broker-config-file", str(path))
    assert s.listeners == (
        ("PLAINTEXT", "127.0.0.1", 19092),
        ("SSL_IN", "127.0.0.1", 19192),
    )
    assert s.zookeeper == "zk1:2181,zk2:2181/kafka"
    # The same value on the command line is no conflict.
    same = parse("--broker-config-file", str(path), "--port", "19092", "--broker-ids", "0,1")
    assert same.broker_ids == (0, 1) and same.port == 19092


@pytest.mark.parametrize(
    ("changes", "argv", "message"),
    [
        (
            {"broker_id": "1"},
            ["--broker-ids", "3"],
            "line 7: broker.id=1 conflicts with --broker-ids 3",
        ),
        (
            {"listeners": "PLAINTEXT://127.0.0.1:19092"},
            ["--port", "9092"],
            "listeners=PLAINTEXT://127.0.0.1:19092 conflicts with --port 9092",
        ),
        (
            {"listeners": "PLAINTEXT://127.0.0.1:19092"},
            ["--listener", "PLAINTEXT://127.0.0.1:29092"],
            "conflicts with --listener PLAINTEXT://127.0.0.1:29092",
        ),
        (
            {},
            ["--zookeeper", "other:2181"],
            "zookeeper.connect=localhost:2181 conflicts with --zookeeper other:2181",
        ),
        ({}, ["--num-partitions", "3"], "num.partitions=1 conflicts with --num-partitions 3"),
        ({"log_dirs": "/a,/b"}, [], "log.dirs: zkbroker keeps one log dir, 2 are named"),
        ({"broker_rack": "r1"}, ["--racks", "r2"], "broker.rack=r1 conflicts with --racks r2"),
        ({"num_partitions": "0"}, [], "num.partitions: Invalid value 0"),
        ({"listeners": "PLAINTEXT:9092"}, [], "listeners: expected NAME://HOST:PORT"),
    ],
)
def test_conflicts_and_invalid_values(
    tmp_path: Path, changes: dict[str, str], argv: list[str], message: str
) -> None:
    path = stock_file(tmp_path, **changes)
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("+", r"\+")) as e:
        parse("--broker-config-file", str(path), *argv)
    assert str(e.value).startswith(f"--broker-config-file {path}, line ")
    assert "\n" not in str(e.value)


def test_broker_id_is_the_first_of_several(tmp_path: Path) -> None:
    path = stock_file(tmp_path, broker_id="5", broker_rack="r1")
    s = parse("--broker-config-file", str(path), "--brokers", "3")
    assert s.broker_ids == (5, 6, 7)
    assert [s.rack_of(b) for b in s.broker_ids] == ["r1", "r1", "r1"]
    assert parse("--broker-config-file", str(path), "--broker-ids", "5,9").broker_ids == (5, 9)
    # -1: Kafka generates the id; zkbroker keeps its own ids.
    generated = parse("--broker-config-file", str(stock_file(tmp_path, broker_id="-1")))
    assert generated.broker_ids == (0, 1, 2)


def test_option_keys_given_as_broker_config() -> None:
    s = parse(
        "--broker-config", "broker.id=4",
        "--broker-config", "listeners=PLAINTEXT://127.0.0.1:0",
        "--broker-config", "zookeeper.connect=zk:2181/c",
        "--broker-config", "zookeeper.session.timeout.ms=6000",
        "--broker-config", "auto.create.topics.enable=FALSE",
        "--broker-config", "leader.imbalance.check.interval.seconds=30",
    )  # fmt: skip
    assert (s.broker_ids, s.port, s.zookeeper) == ((4,), 0, "zk:2181/c")
    assert s.zk_session_timeout_s == 6.0
    assert s.auto_create_topics is False
    assert s.leader_imbalance_check_interval_s == 30.0


def test_command_line_broker_config_wins_over_the_file(tmp_path: Path) -> None:
    path = stock_file(tmp_path)
    s = parse("--broker-config-file", str(path), "--broker-config", "num.partitions=6")
    assert s.num_partitions == 6


def test_old_releases_port_and_host_name(tmp_path: Path) -> None:
    path = tmp_path / "old.properties"
    path.write_text(
        "broker.id=0\nport=19092\nhost.name=127.0.0.2\nadvertised.host.name=kafka.local\n"
    )
    s = parse("--broker-config-file", str(path), "--kafka-version", "0.11.0")
    assert (s.host, s.port, s.advertised_host) == ("127.0.0.2", 19092, "kafka.local")
    assert s.static_broker_configs(0, 19092, "zk")["port"] == "19092"
    with_port = tmp_path / "adv.properties"
    with_port.write_text("port=19092\nadvertised.port=29092\n")
    adv = parse("--broker-config-file", str(with_port), "--kafka-version", "2.8")
    assert adv.advertised_listeners == (("PLAINTEXT", "127.0.0.1", 29092),)
    # 3.0 removed them: kept, unknown, warned about; zkbroker's own defaults apply.
    new = parse("--broker-config-file", str(path), "--kafka-version", "3.9")
    assert (new.host, new.port) == ("127.0.0.1", 9092)
    assert new.unknown_broker_configs == ("advertised.host.name", "host.name", "port")


def test_unused_configs_message_is_kafkas() -> None:
    assert unused_configs_message(["b", "a"], (3, 9)) == [
        "These configurations '[a, b]' were supplied but are not used yet."
    ]
    assert unused_configs_message(["a"], (2, 8)) == [
        "The configuration 'a' was supplied but isn't a known config."
    ]
    assert unused_configs_message([], (3, 9)) == []


def test_command_warns_about_unknown_keys_and_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    started: list[Settings] = []

    async def fake_run(settings: Settings, **_: object) -> int:
        started.append(settings)
        return 0

    monkeypatch.setattr(cli, "run_until_signalled", fake_run)
    path = stock_file(tmp_path, log_dirs=str(tmp_path), no_such_key="1")
    code = cli.main(
        ["run", "--broker-config-file", str(path), "--kafka-version", "3.9", "--log-format", "json"]
    )
    assert code == 0 and started
    err = capsys.readouterr().err
    warning = [line for line in err.splitlines() if "config.unused" in line]
    assert len(warning) == 1 and '"level": "warning"' in warning[0]
    assert "These configurations '[no.such.key]' were supplied but are not used yet." in warning[0]


# ---- JAAS files ---------------------------------------------------------------------------

JAAS = """\
// The brokers' JAAS file, as Kafka's docs write one.
KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin"
    password="admin-secret"   /* the broker's own login */
    user_admin="admin-secret"
    user_alice="alice \\"quoted\\" secret";
};

sasl_ssl.KafkaServer {
    org.apache.kafka.common.security.scram.ScramLoginModule required
        username=broker password="broker-secret";
    org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";
};

Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="kafka"
    password="zk-secret";
};
"""


def _sasl_args(jaas: Path, listener: str = "SASL_PLAINTEXT") -> list[str]:
    return [
        "--brokers", "1", "--port", "0",
        "--listener", f"{listener}://127.0.0.1:0",
        "--broker-config", "sasl.enabled.mechanisms=PLAIN",
        "--broker-config", "sasl.mechanism.inter.broker.protocol=PLAIN",
        "--jaas-config", str(jaas),
    ]  # fmt: skip


@pytest.mark.parametrize("release", ["0.11.0", "1.0", "1.1", "3.9"])
def test_jaas_file_gives_plain_users_and_the_broker_login(tmp_path: Path, release: str) -> None:
    jaas = tmp_path / "kafka_server_jaas.conf"
    jaas.write_text(JAAS)
    s = parse(*_sasl_args(jaas), "--kafka-version", release)
    security = s.security_of("SASL_PLAINTEXT")
    assert dict(security.plain_users) == {"admin": "admin-secret", "alice": 'alice "quoted" secret'}
    login = s.inter_broker_security().login
    assert login is not None and (login.username, login.password) == ("admin", "admin-secret")
    # The Client section is ZooKeeper's SASL login, as Kafka's ZooKeeper client takes it.
    auth = s.zookeeper_auth
    assert auth is not None and (auth.user, auth.password) == ("kafka", "zk-secret")
    assert s.zookeeper_auth_scheme == "sasl"


def test_listener_section_first_from_1_1(tmp_path: Path) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(JAAS)
    configs = {"sasl.enabled.mechanisms": "PLAIN"}
    new = listener_security(configs, "SASL_SSL", (3, 9), read_jaas_file(str(jaas)))
    assert dict(new.plain_users) == {"bob": "bob-secret"}
    assert new.jaas_section is not None and new.jaas_section[0] == "sasl_ssl.KafkaServer"
    old = listener_security(configs, "SASL_SSL", (1, 0), read_jaas_file(str(jaas)))
    assert dict(old.plain_users) == {"admin": "admin-secret", "alice": 'alice "quoted" secret'}
    # A sasl.jaas.config config of the mechanism wins over the file (1.1+).
    prefixed = {
        **configs,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": (
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_carol="c";'
        ),
    }
    assert dict(
        listener_security(prefixed, "SASL_SSL", (3, 9), read_jaas_file(str(jaas))).plain_users
    ) == {"carol": "c"}


def test_jaas_file_without_a_server_section(tmp_path: Path) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text("Client { org.apache.zookeeper.server.auth.DigestLoginModule required; };")
    with pytest.raises(
        ValueError,
        match=r"Could not find a 'sasl_plaintext\.KafkaServer or KafkaServer' entry in the JAAS "
        r"configuration\. System property 'java\.security\.auth\.login\.config' is ",
    ):
        parse(*_sasl_args(jaas), "--kafka-version", "3.9")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('KafkaServer { x required a="b" };', "missing ';' at the end of a login module"),
        ("KafkaServer { x sometimes; };", "invalid control flag sometimes"),
        ("KafkaServer { x required; }", "expected ';' after '}'"),
        ('KafkaServer { x required a="b;\n};', "unterminated quoted string"),
        ("/* open", "unterminated /* comment"),
    ],
)
def test_malformed_jaas_files(tmp_path: Path, text: str, reason: str) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(text)
    with pytest.raises(
        ValueError, match=f"JAAS file {re.escape(str(jaas))}: .*{re.escape(reason)}"
    ):
        parse("--jaas-config", str(jaas))


def test_jaas_file_from_kafka_opts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jaas = tmp_path / "jaas file.conf"
    jaas.write_text(JAAS)
    monkeypatch.setenv("KAFKA_OPTS", f"-Xmx1g '-Djava.security.auth.login.config={jaas}' -Dother=1")
    s = parse("--brokers", "1")
    assert s.jaas_config == str(jaas)
    explicit = tmp_path / "other.conf"
    explicit.write_text("KafkaServer { a required; };")
    assert parse("--jaas-config", str(explicit)).jaas_config == str(explicit)


def test_missing_jaas_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"JAAS file .*missing\.conf: No such file"):
        parse("--jaas-config", str(tmp_path / "missing.conf"))


def test_relative_log_dir_is_one_directory(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    path = stock_file(tmp_path, log_dirs="logs")
    s = parse("--broker-config-file", str(path), "--log-dir", os.path.join(str(tmp_path), "logs"))
    assert os.path.abspath(s.log_dir or "") == str(tmp_path / "logs")
