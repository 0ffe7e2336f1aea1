"""The layered broker config: sources, synonyms, values and the topic defaults it gives."""

from __future__ import annotations

from zkbroker.broker.rules.broker_config import BrokerConfig, from_persistent
from zkbroker.broker.rules.config_catalog import describe_topic_config, topic_config_keys
from zkbroker.broker.rules.config_def import ConfigSource, ConfigSynonym

R = (2, 8)


def config(
    static: dict[str, str] | None = None,
    default: dict[str, str] | None = None,
    broker: dict[str, str] | None = None,
) -> BrokerConfig:
    return BrokerConfig.build(1, R, static or {}, default or {}, broker or {})


def topic_entries(broker: BrokerConfig, overrides: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return {e.name: e for e in describe_topic_config("t", overrides or {}, R, broker)}


def test_layers_order_and_synonyms() -> None:
    broker = config(
        static={"log.retention.hours": "24"},
        default={"log.retention.ms": "5000"},
        broker={"log.retention.minutes": "3"},
    )
    assert broker.config_synonyms(
        "log.retention.ms", ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
        sensitive=False,
    ) == [
        ConfigSynonym("log.retention.ms", "5000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ConfigSynonym("log.retention.hours", "24", ConfigSource.STATIC_BROKER_CONFIG),
        ConfigSynonym("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG),
    ]  # fmt: skip
    retention = topic_entries(broker)["retention.ms"]
    # log.retention.ms wins over minutes/hours; the dynamic-broker minutes entry is dropped
    assert (retention.value, retention.source) == (
        "5000",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )


def test_retention_from_minutes_and_hours() -> None:
    assert topic_entries(config(static={"log.retention.minutes": "2"}))["retention.ms"].value == (
        "120000"
    )
    hours = topic_entries(config(static={"log.retention.hours": "1"}))["retention.ms"]
    assert (hours.value, hours.source, hours.synonyms) == (
        "3600000",
        ConfigSource.DEFAULT_CONFIG,
        (),
    )
    assert topic_entries(config(static={"log.retention.ms": "-5"}))["retention.ms"].value == "-1"


def test_other_derived_topic_values() -> None:
    broker = config(
        static={"log.roll.hours": "2", "log.flush.scheduler.interval.ms": "7"},
        default={"log.cleanup.policy": "compact", "log.segment.bytes": "2097152"},
    )
    got = topic_entries(broker)
    assert got["segment.ms"].value == "7200000"
    assert got["flush.ms"].value == "7"
    assert (got["cleanup.policy"].value, got["cleanup.policy"].source) == (
        "compact",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    assert got["segment.bytes"].synonyms == (
        ConfigSynonym("log.segment.bytes", "2097152", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ConfigSynonym("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG),
    )
    overridden = topic_entries(broker, {"segment.bytes": "1048576"})["segment.bytes"]
    assert overridden.source is ConfigSource.TOPIC_CONFIG
    assert [s.source for s in overridden.synonyms] == [
        ConfigSource.TOPIC_CONFIG,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        ConfigSource.DEFAULT_CONFIG,
    ]


def test_from_persistent_drops_what_a_broker_ignores() -> None:
    stored = {
        "log.retention.ms": "100",
        "broker.id": "7",  # not dynamic
        "num.io.threads": "abc",  # invalid value
        "ssl.key.password": "encoded",  # a password: cannot be decoded here
        "listeners": "PLAINTEXT://:1",  # per-broker only
    }
    assert from_persistent(stored, R, per_broker=False) == {"log.retention.ms": "100"}
    assert "listeners" in from_persistent(stored, R, per_broker=True)


def test_describe_broker_resources() -> None:
    broker = config(
        static={"broker.id": "1", "log.retention.hours": "24"},
        default={"log.cleaner.threads": "2"},
        broker={"message.max.bytes": "2000000"},
    )
    own = {e.name: e for e in broker.describe(per_broker=True)}
    assert (
        own["broker.id"].read_only and own["broker.id"].source is ConfigSource.STATIC_BROKER_CONFIG
    )
    assert own["log.cleaner.threads"].source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert own["message.max.bytes"].value == "2000000"
    assert own["message.max.bytes"].source is ConfigSource.DYNAMIC_BROKER_CONFIG
    assert own["ssl.keystore.password"].value is None and own["ssl.keystore.password"].is_sensitive
    default_only = broker.describe(per_broker=False)
    assert [(e.name, e.value, e.source) for e in default_only] == [
        ("log.cleaner.threads", "2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    ]
    assert [s.source for s in default_only[0].synonyms] == [
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    ]


def test_custom_keys_are_listed_as_sensitive() -> None:
    broker = config(broker={"my.plugin.setting": "x"})
    entry = {e.name: e for e in broker.describe(per_broker=True)}.get("my.plugin.setting")
    if entry is not None:  # only if Kafka's dynamic validation accepts custom keys
        assert entry.value is None and entry.is_sensitive


def test_topic_keys_without_broker_synonyms_keep_their_default() -> None:
    key = topic_config_keys(R)["leader.replication.throttled.replicas"]
    assert config(static={"log.retention.hours": "1"}).topic_value(key) == ""


def test_broker_config_is_hashable_and_equal_by_value() -> None:
    assert hash(config(default={"log.retention.ms": "1"})) == hash(
        config(default={"log.retention.ms": "1"})
    )
