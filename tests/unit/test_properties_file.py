"""`--broker-config-file`: java.util.Properties syntax (comments, `=`/`:`/blank separators,
continuations, escapes, ISO-8859-1, last duplicate wins), applied like `--broker-config` with
its checks (invalid values refused, unknown keys kept), the command line winning; and
`--zookeeper-set-acl` / `--zookeeper-digest`."""

from __future__ import annotations

from pathlib import Path

import pytest

from zkbroker.broker.cli.main import build_parser, settings_from_args
from zkbroker.broker.jvm.properties import PropertiesError, parse_properties
from zkbroker.broker.settings import Settings


def parse(*argv: str) -> Settings:
    return settings_from_args(build_parser().parse_args(["run", *argv]))


def test_java_properties_syntax() -> None:
    text = (
        "# a comment\n"
        "  ! another\n"
        "\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "d=\n"
        "e\n"
        "f = x=y:z\n"
        "long = one, \\\n"
        "       two\n"
        "key\\ with\\=odd\\:chars = \\tv\\u00e9\\\\\n"
        "a=last\r\n"
        "ends\\\n"
    )
    entries = [(k, v) for k, v, _ in parse_properties(text)]
    assert entries == [
        ("a", "1"),
        ("b", "2"),
        ("c", "3"),
        ("d", ""),
        ("e", ""),
        ("f", "x=y:z"),
        ("long", "one, two"),
        ("key with=odd:chars", "\tv\u00e9\\"),
        ("a", "last"),
        ("ends", ""),
    ]
    assert [n for _, _, n in parse_properties("x=1\n#c\ny=\\\n 2\nz=3")] == [1, 3, 5]
    with pytest.raises(PropertiesError, match="Malformed"):
        parse_properties("x=\\u12")


def test_file_applies_like_broker_config(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_bytes(
        b"# Kafka's server.properties\n"
        b"log.retention.hours=24\n"
        b"message.max.bytes : 2000000\n"
        b"log.cleaner.enable=false\n"
        b"ssl.keystore.password=caf\xe9\n"  # ISO-8859-1, as Properties.load(InputStream)
    )
    s = parse("--broker-config-file", str(path), "--broker-config", "message.max.bytes=3000000")
    configs = s.static_broker_configs(0, 9092, "zk")
    assert configs["log.retention.hours"] == "24"
    assert configs["message.max.bytes"] == "3000000"  # the command line wins
    assert configs["log.cleaner.enable"] == "false"
    assert configs["ssl.keystore.password"] == "caf\u00e9"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("broker.id=x", "line 2: broker.id: Invalid value x for configuration broker.id"),
        ("num.partitions=x", "line 2: num.partitions: Invalid value x"),
        ("log.retention.hours=x", "line 2: log.retention.hours: Invalid value x"),
    ],
)
def test_file_values_are_checked(tmp_path: Path, line: str, reason: str) -> None:
    path = tmp_path / "server.properties"
    path.write_text(f"# first\n{line}\n")
    with pytest.raises(ValueError, match=reason):
        parse("--broker-config-file", str(path))


def test_unknown_keys_are_kept_not_refused(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("no.such.config=1\nport=9092\n")
    s = parse("--broker-config-file", str(path), "--kafka-version", "3.9")
    assert s.unknown_broker_configs == ("no.such.config", "port")  # port went in 3.0
    assert "no.such.config" not in s.known_broker_configs


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"--broker-config-file .*missing"):
        parse("--broker-config-file", str(tmp_path / "missing"))


def test_zookeeper_acl_options(monkeypatch: pytest.MonkeyPatch) -> None:
    s = parse("--zookeeper-set-acl", "--zookeeper-digest", "kafka:p:w")
    auth = s.zookeeper_auth
    assert auth is not None and (auth.user, auth.password, auth.set_acl) == ("kafka", "p:w", True)
    assert s.static_broker_configs(0, 9092, "zk")["zookeeper.set.acl"] == "true"
    assert "p:w" not in repr(s) and "p:w" not in repr(auth)
    with pytest.raises(ValueError, match=r"zookeeper\.set\.acl is true, but no ZooKeeper"):
        parse("--zookeeper-set-acl")
    with pytest.raises(ValueError, match="user:password"):
        parse("--zookeeper-digest", "nocolon")
    # The key itself, as a server.properties holds it, is the same switch.
    keyed = parse("--broker-config", "zookeeper.set.acl=true", "--zookeeper-digest", "k:p")
    assert keyed.zookeeper_auth is not None and keyed.zookeeper_auth.set_acl
    with pytest.raises(ValueError, match=r"zookeeper\.set\.acl is true"):
        parse("--broker-config", "zookeeper.set.acl=true")
    monkeypatch.setenv("ZKBROKER_ZOOKEEPER_DIGEST", "env:secret")
    from_env = parse()
    assert from_env.zookeeper_auth is not None and from_env.zookeeper_auth.user == "env"
    assert not from_env.zookeeper_auth.set_acl


def test_advertised_listeners_per_listener() -> None:
    s = parse(
        "--listener",
        "INTERNAL://127.0.0.1:0",
        "--listener",
        "EXTERNAL://0.0.0.0:0",
        "--broker-config",
        "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "--advertised-listener",
        "INTERNAL://10.0.0.5:0",
        "--advertised-listener",
        "EXTERNAL://kafka.example.com:19092",
        "--brokers",
        "2",
    )
    bound = {"INTERNAL": 4000, "EXTERNAL": 4001}
    assert s.advertised_endpoints(1, bound) == [
        ("INTERNAL", "10.0.0.5", 4000),
        ("EXTERNAL", "kafka.example.com", 19093),  # broker i advertises PORT + i
    ]
    configs = s.static_broker_configs(1, 4000, "zk", {"EXTERNAL": 4001})
    assert configs["advertised.listeners"] == (
        "INTERNAL://10.0.0.5:4000,EXTERNAL://kafka.example.com:19093"
    )


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (
            ["--advertised-listener", "PLAINTEXT://0.0.0.0:1"],
            "cannot use the nonroutable meta-address 0.0.0.0",
        ),
        (
            ["--advertised-listener", "SSL://h:1", "--advertised-listener", "PLAINTEXT://h:1"],
            "listener names must be equal to or a subset of the ones defined in listeners",
        ),
        (
            [
                "--listener",
                "A://127.0.0.1:0",
                "--listener",
                "B://127.0.0.1:0",
                "--broker-config",
                "listener.security.protocol.map=A:PLAINTEXT,B:PLAINTEXT",
                "--advertised-listener",
                "B://h:0",
            ],
            "inter.broker.listener.name must be a listener name defined in advertised.listeners",
        ),
        (
            ["--advertised-host", "h", "--advertised-listener", "PLAINTEXT://h:1"],
            "not both",
        ),
        (
            [
                "--broker-config",
                "advertised.listeners=PLAINTEXT://h:1",
                "--advertised-listener",
                "PLAINTEXT://h:2",
            ],
            "--broker-config: advertised.listeners=PLAINTEXT://h:1 conflicts with "
            "--advertised-listener PLAINTEXT://h:2",
        ),
    ],
)
def test_advertised_listener_refusals(argv: list[str], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse(*argv)
