"""Which of the keys zkbroker derives are server.properties lines (STATIC_BROKER_CONFIG) and
which are described as Kafka describes an unset key (docs/kafka-behaviour.md §4.3): a key
is static only when the user set it, on the command line, in a properties file or as a
`Cluster(...)` keyword."""

from __future__ import annotations

from pathlib import Path

import pytest

from zkbroker.broker.cli.main import build_parser, settings_from_args
from zkbroker.broker.cluster import settings_from_options
from zkbroker.broker.rules.broker_config import BrokerConfig
from zkbroker.broker.rules.config_def import ConfigSource
from zkbroker.broker.settings import Settings
from zkbroker.zk_layout.release import Release


def parse(*argv: str) -> Settings:
    return settings_from_args(build_parser().parse_args(["run", *argv]))


def static(s: Settings) -> dict[str, str]:
    return s.static_broker_configs(s.broker_ids[0], 9092, "127.0.0.1:2181")


def test_nothing_given_leaves_listeners_and_advertised_listeners_unset() -> None:
    configs = static(parse())
    assert "listeners" not in configs and "advertised.listeners" not in configs
    assert "log.dirs" not in configs and "broker.rack" not in configs
    # Kafka's ZooKeeper mode cannot start without these, and only a set id is 0.
    assert configs["broker.id"] == "0" and configs["zookeeper.connect"] == "127.0.0.1:2181"


@pytest.mark.parametrize(
    ("argv", "listeners", "advertised"),
    [
        (("--port", "19092"), True, False),
        (("--host", "127.0.0.2"), True, False),
        (("--listener", "PLAINTEXT://127.0.0.1:19092"), True, False),
        (("--advertised-host", "kafka.example.com"), False, True),
        (("--advertised-listener", "PLAINTEXT://kafka.example.com:9092"), False, True),
    ],
)
def test_options_set_their_keys(argv: tuple[str, ...], listeners: bool, advertised: bool) -> None:
    configs = static(parse(*argv))
    assert ("listeners" in configs) is listeners
    assert ("advertised.listeners" in configs) is advertised


def test_properties_file_keys(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("listeners=PLAINTEXT://127.0.0.1:19092\nlog.dirs=" + str(tmp_path) + "\n")
    configs = static(parse("--broker-config-file", str(path)))
    assert configs["listeners"] == "PLAINTEXT://127.0.0.1:9092"  # the port bound, here 9092
    assert "advertised.listeners" not in configs and configs["log.dirs"] == str(tmp_path)


def test_legacy_port_line_is_its_own_key(tmp_path: Path) -> None:
    # Before 3.0 `port` makes the listener without `listeners` being set.
    path = tmp_path / "server.properties"
    path.write_text("port=19092\nadvertised.host.name=kafka.example.com\n")
    s = parse("--kafka-version", "2.8", "--broker-config-file", str(path))
    configs = static(s)
    assert configs["port"] == "19092" and configs["advertised.host.name"] == "kafka.example.com"
    assert "listeners" not in configs and "advertised.listeners" not in configs


def test_cluster_keywords() -> None:
    assert "listeners" in static(settings_from_options({"port": 0}))
    plain = static(settings_from_options({"broker_ids": (0,)}))
    assert "listeners" not in plain and "advertised.listeners" not in plain
    assert "advertised.listeners" in static(settings_from_options({"advertised_host": "h"}))
    # A Settings built directly: fields away from their defaults count as set.
    assert "listeners" in static(Settings(port=0))
    assert "advertised.listeners" not in static(Settings(port=0))


@pytest.mark.parametrize(
    ("release", "listeners_default"),
    [((2, 8), None), ((3, 0), "PLAINTEXT://:9092"), ((3, 9), "PLAINTEXT://:9092")],
)
def test_described_as_kafka_describes_an_unset_key(
    release: Release, listeners_default: str | None
) -> None:
    s = Settings(kafka_version=release)
    broker = BrokerConfig.build(0, release, static(s), {}, {})
    entries = {e.name: e for e in broker.describe(per_broker=True)}
    advertised = entries["advertised.listeners"]
    assert (advertised.value, advertised.source) == (None, ConfigSource.DEFAULT_CONFIG)
    listeners = entries["listeners"]
    assert (listeners.value, listeners.source) == (listeners_default, ConfigSource.DEFAULT_CONFIG)
    broker_id = entries["broker.id"]
    assert (broker_id.value, broker_id.source) == ("0", ConfigSource.STATIC_BROKER_CONFIG)
    given = Settings(kafka_version=release, advertised_host="kafka.example.com")
    set_broker = BrokerConfig.build(0, release, static(given), {}, {})
    entry = {e.name: e for e in set_broker.describe(per_broker=True)}["advertised.listeners"]
    assert entry.value == "PLAINTEXT://kafka.example.com:9092"
    assert entry.source == ConfigSource.STATIC_BROKER_CONFIG
