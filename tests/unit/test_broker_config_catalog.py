"""The broker config catalog against facts read from Kafka's release tags (hardcoded here, so a
drift in the table or in the rules shows up without the Kafka repository)."""

from __future__ import annotations

import pytest

from zkbroker.broker.rules.broker_config_catalog import (
    broker_config_key,
    broker_config_keys,
    broker_synonyms,
    is_dynamic,
    read_only_in_describe,
)
from zkbroker.broker.rules.broker_config_table import (
    BROKER_CONFIG_KEYS,
    inter_broker_protocol_default,
)
from zkbroker.broker.rules.broker_config_types import BrokerConfigKey, DynamicScope
from zkbroker.broker.rules.broker_config_validation import validate_broker_configs
from zkbroker.broker.rules.config_def import (
    ConfigType,
    InvalidConfig,
    render_value,
    validate_value,
)
from zkbroker.zk_layout.release import Release

R28: Release = (2, 8)
R39: Release = (3, 9)


def _key(name: str, release: Release = R28) -> BrokerConfigKey:
    key = broker_config_key(name, release)
    assert key is not None, name
    return key


def _error(
    configs: dict[str, str],
    release: Release = R28,
    *,
    per_broker: bool = True,
    current: dict[str, str] | None = None,
) -> InvalidConfig:
    with pytest.raises(InvalidConfig) as info:
        validate_broker_configs(configs, release, per_broker=per_broker, current=current)
    return info.value


# ----------------------------------------------------------------------------- the table


@pytest.mark.parametrize(
    ("name", "type_", "default", "scope"),
    [
        ("broker.id", ConfigType.INT, "-1", DynamicScope.READ_ONLY),
        ("log.retention.hours", ConfigType.INT, "168", DynamicScope.READ_ONLY),
        ("log.retention.ms", ConfigType.LONG, None, DynamicScope.CLUSTER_WIDE),
        ("log.retention.minutes", ConfigType.INT, None, DynamicScope.READ_ONLY),
        ("listeners", ConfigType.STRING, None, DynamicScope.PER_BROKER),
        ("ssl.keystore.password", ConfigType.PASSWORD, None, DynamicScope.PER_BROKER),
        ("num.io.threads", ConfigType.INT, "8", DynamicScope.CLUSTER_WIDE),
        ("num.network.threads", ConfigType.INT, "3", DynamicScope.CLUSTER_WIDE),
        ("message.max.bytes", ConfigType.INT, "1048588", DynamicScope.CLUSTER_WIDE),
        ("log.cleanup.policy", ConfigType.LIST, "delete", DynamicScope.CLUSTER_WIDE),
        ("log.cleaner.io.max.bytes.per.second", ConfigType.DOUBLE, "1.7976931348623157E308",
         DynamicScope.CLUSTER_WIDE),
        ("max.connections", ConfigType.INT, "2147483647", DynamicScope.CLUSTER_WIDE),
        ("ssl.client.auth", ConfigType.STRING, "none", DynamicScope.PER_BROKER),
        ("offsets.topic.replication.factor", ConfigType.SHORT, "3", DynamicScope.READ_ONLY),
        ("listener.security.protocol.map", ConfigType.STRING,
         "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
         DynamicScope.PER_BROKER),
        ("metric.reporters", ConfigType.LIST, "", DynamicScope.CLUSTER_WIDE),
        ("ssl.cipher.suites", ConfigType.LIST, "", DynamicScope.PER_BROKER),
        ("zookeeper.connect", ConfigType.STRING, None, DynamicScope.READ_ONLY),
        ("zookeeper.session.timeout.ms", ConfigType.INT, "18000", DynamicScope.READ_ONLY),
        ("log.message.format.version", ConfigType.STRING, "2.8-IV1", DynamicScope.READ_ONLY),
    ],
)  # fmt: skip
def test_2_8_facts(name: str, type_: ConfigType, default: str | None, scope: DynamicScope) -> None:
    key = _key(name)
    assert (key.type, key.default, key.scope) == (type_, default, scope)


def test_password_keys_are_sensitive_and_report_no_default() -> None:
    for release in (R28, R39):
        for key in broker_config_keys(release, include_internal=True).values():
            assert key.sensitive == (key.type is ConfigType.PASSWORD), key.name
            if key.type is ConfigType.PASSWORD:
                assert key.default is None


def test_key_counts_and_internal_keys() -> None:
    assert len(broker_config_keys(R28)) == 217
    assert len(broker_config_keys(R28, include_internal=True)) == 232
    assert _key("process.roles").internal  # KRaft keys were internal in 2.8
    assert not _key("process.roles", (3, 0)).internal
    assert "process.roles" not in broker_config_keys(R28)


def test_keys_are_ordered_by_name() -> None:
    names = list(broker_config_keys(R39))
    assert names == sorted(names)


@pytest.mark.parametrize(
    ("name", "present", "absent"),
    [
        ("log.local.retention.ms", (3, 6), (3, 5)),
        ("group.share.max.size", (3, 9), (3, 8)),
        ("producer.id.expiration.ms", (3, 4), (3, 3)),
        ("sasl.jaas.config", (1, 1), (1, 0)),
        ("max.connections", (2, 3), (2, 2)),
        ("listener.security.protocol.map", (0, 10, 2), (0, 10, 1)),
        ("port", (2, 8), (3, 0)),
        ("quota.producer.default", (2, 8), (3, 0)),
        ("zookeeper.sync.time.ms", (3, 1), (3, 2)),
    ],
)
def test_key_presence_by_release(name: str, present: Release, absent: Release) -> None:
    assert name in broker_config_keys(present)
    assert name not in broker_config_keys(absent, include_internal=True)


def test_release_dependent_defaults() -> None:
    assert _key("message.max.bytes", (2, 4)).default == "1000012"
    assert _key("unclean.leader.election.enable", (0, 10, 2)).default == "true"
    assert _key("unclean.leader.election.enable", (0, 11)).default == "false"
    assert _key("offsets.retention.minutes", (1, 1)).default == "1440"
    assert _key("offsets.retention.minutes", (2, 0)).default == "10080"
    assert _key("listeners", (3, 0)).default == "PLAINTEXT://:9092"
    assert _key("delete.topic.enable", (0, 11)).default == "false"
    assert _key("delete.topic.enable", (1, 0)).default == "true"


def test_inter_broker_protocol_follows_the_release() -> None:
    assert _key("inter.broker.protocol.version", (0, 10, 0)).default == "0.10.0-IV1"
    assert _key("inter.broker.protocol.version", (2, 8)).default == "2.8-IV1"
    assert _key("inter.broker.protocol.version", (3, 3)).default == "3.3-IV3"
    assert _key("inter.broker.protocol.version", (3, 9)).default == "3.9-IV0"
    assert inter_broker_protocol_default((3, 7, 1)) == "3.7-IV4"
    assert _key("log.message.format.version", (3, 9)).default == "3.0-IV1"
    assert _key("log.message.format.version", (2, 0)).default == "2.0-IV1"


def test_validators_change_with_the_release() -> None:
    # compression.type had no validator before 3.3.
    assert validate_value(_key("compression.type"), "bogus") == "bogus"
    with pytest.raises(InvalidConfig):
        validate_value(_key("compression.type", (3, 3)), "bogus")
    # inter.broker.protocol.version is checked from 2.1.
    assert _key("inter.broker.protocol.version", (2, 0)).validator is None
    with pytest.raises(InvalidConfig, match="is not a valid version"):
        validate_value(_key("inter.broker.protocol.version"), "9.9")


def test_later_dynamic_keys() -> None:
    assert _key("num.network.threads", (1, 0)).scope is DynamicScope.READ_ONLY
    assert _key("producer.id.expiration.ms", (3, 4)).scope is DynamicScope.CLUSTER_WIDE
    assert _key("log.local.retention.ms", (3, 6)).scope is DynamicScope.CLUSTER_WIDE
    assert _key("remote.fetch.max.wait.ms", (3, 8)).scope is DynamicScope.CLUSTER_WIDE
    assert _key("ssl.truststore.location", (1, 1)).scope is DynamicScope.PER_BROKER


def test_double_default_renders_like_java() -> None:
    key = _key("log.cleaner.min.cleanable.ratio")
    assert key.default == "0.5"
    assert render_value(key, validate_value(key, "1")) == "1.0"


def test_records_do_not_overlap() -> None:
    for release in ((0, 10, 0), (1, 1), R28, (3, 0), (3, 6), R39):
        names = [k.name for k in BROKER_CONFIG_KEYS if k.applies_to(release)]
        assert len(names) == len(set(names)), release


# ----------------------------------------------------------------------------- lookups


def test_dynamic_only_quota_keys() -> None:
    key = _key("leader.replication.throttled.rate")
    assert key.dynamic_only and key.scope is DynamicScope.CLUSTER_WIDE
    assert key.default == "9223372036854775807"
    assert "leader.replication.throttled.rate" not in broker_config_keys(R28)
    assert broker_config_key("replica.alter.log.dirs.io.max.bytes.per.second", (1, 0)) is None
    assert is_dynamic("follower.replication.throttled.rate", R28)
    assert read_only_in_describe("follower.replication.throttled.rate", R28)


def test_listener_prefixed_resolution() -> None:
    key = _key("listener.name.internal.ssl.keystore.password")
    assert key.name == "listener.name.internal.ssl.keystore.password"
    assert key.type is ConfigType.PASSWORD and key.sensitive
    assert key.scope is DynamicScope.PER_BROKER
    jaas = _key("listener.name.sasl_ssl.plain.sasl.jaas.config")
    assert jaas.type is ConfigType.PASSWORD
    assert _key("listener.name.internal.max.connections").scope is DynamicScope.CLUSTER_WIDE
    assert _key("listener.name.internal.broker.id").type is ConfigType.INT
    assert broker_config_key("listener.name.internal.no.such.key", R28) is None
    assert broker_config_key("listener.name.internal.ssl.keystore.password", (1, 0)) is None


def test_is_dynamic_and_read_only() -> None:
    assert is_dynamic("log.retention.ms", R28)
    assert not is_dynamic("log.retention.hours", R28)
    assert not is_dynamic("broker.id", R28)
    assert not is_dynamic("num.io.threads", (1, 0))
    assert is_dynamic("listener.name.internal.ssl.keystore.location", R28)
    assert not is_dynamic("listener.name.internal.broker.id", R28)
    assert not is_dynamic("custom.key", R28)
    assert read_only_in_describe("listener.name.internal.ssl.keystore.location", R28)
    assert not read_only_in_describe("listeners", R28)
    assert read_only_in_describe("broker.id", R28)


@pytest.mark.parametrize(
    ("name", "synonyms"),
    [
        ("log.retention.ms", ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]),
        ("log.retention.minutes",
         ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]),
        ("log.retention.hours",
         ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]),
        ("log.roll.ms", ["log.roll.ms", "log.roll.hours"]),
        ("log.roll.hours", ["log.roll.ms", "log.roll.hours"]),
        ("log.roll.jitter.ms", ["log.roll.jitter.ms", "log.roll.jitter.hours"]),
        ("log.flush.interval.ms", ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]),
        ("log.flush.scheduler.interval.ms", ["log.flush.scheduler.interval.ms"]),
        ("broker.id", ["broker.id"]),
        ("listener.name.internal.ssl.keystore.type",
         ["listener.name.internal.ssl.keystore.type", "ssl.keystore.type"]),
        ("listener.name.sasl_ssl.plain.sasl.jaas.config",
         ["listener.name.sasl_ssl.plain.sasl.jaas.config", "sasl.jaas.config"]),
        ("listener.name.sasl_ssl.plain.sasl.login.class",
         ["listener.name.sasl_ssl.plain.sasl.login.class", "sasl.login.class"]),
    ],
)  # fmt: skip
def test_synonyms(name: str, synonyms: list[str]) -> None:
    assert broker_synonyms(name) == synonyms


def test_synonyms_release_and_flag() -> None:
    # Before 2.7 only sasl.jaas.config was a mechanism config.
    assert broker_synonyms("listener.name.l.plain.sasl.login.class", (2, 6)) == [
        "listener.name.l.plain.sasl.login.class",
        "plain.sasl.login.class",
    ]
    assert broker_synonyms("listener.name.l.ssl.key.password", match_listener_override=False) == [
        "listener.name.l.ssl.key.password"
    ]


# ----------------------------------------------------------------------------- validation


def test_custom_and_dynamic_keys_pass() -> None:
    validate_broker_configs(
        {"my.custom.key": "anything", "log.retention.ms": "1000", "message.max.bytes": "2000"},
        R28,
        per_broker=False,
    )
    validate_broker_configs(
        {"listener.name.internal.ssl.keystore.location": "/k.jks", "listeners": "PLAINTEXT://:1"},
        R28,
        per_broker=True,
    )


def test_non_dynamic_message() -> None:
    error = _error({"broker.id": "2"})
    assert error.message == "Cannot update these configs dynamically: Set(broker.id)"
    assert error.config_exception


def test_non_dynamic_set_follows_properties_order() -> None:
    error = _error({"broker.id": "2", "log.retention.hours": "1", "port": "1"})
    assert error.message == (
        "Cannot update these configs dynamically: Set(log.retention.hours, port, broker.id)"
    )


def test_non_dynamic_five_names_print_as_hash_set() -> None:
    error = _error(
        {"broker.id": "2", "log.retention.hours": "1", "zookeeper.connect": "x", "port": "1",
         "host.name": "h"}
    )  # fmt: skip
    assert error.message.startswith("Cannot update these configs dynamically: HashSet(")
    assert sorted(error.message[error.message.index("(") + 1 : -1].split(", ")) == sorted(
        ["broker.id", "log.retention.hours", "zookeeper.connect", "port", "host.name"]
    )


def test_internal_keys_are_not_dynamic() -> None:
    error = _error({"process.roles": "broker"})
    assert error.message == "Cannot update these configs dynamically: Set(process.roles)"


def test_security_configs_need_the_listener_prefix() -> None:
    error = _error({"ssl.keystore.location": "/k.jks"})
    assert error.message == (
        "These security configs can be dynamically updated only per-listener using the "
        "listener prefix: HashSet(ssl.keystore.location)"
    )
    assert error.config_exception


def test_non_dynamic_is_checked_before_security() -> None:
    error = _error({"ssl.keystore.location": "/k.jks", "broker.id": "1"})
    assert error.message.startswith("Cannot update these configs dynamically")


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"message.max.bytes": "abc"},
         "Invalid value abc for configuration message.max.bytes: Not a number of type INT"),
        ({"message.max.bytes": "-1"},
         "Invalid value -1 for configuration message.max.bytes: Value must be at least 0"),
        ({"log.cleanup.policy": "compact,foo"},
         "Invalid value foo for configuration log.cleanup.policy: "
         "String must be one of: compact, delete"),
        ({"log.message.timestamp.type": "Now"},
         "Invalid value Now for configuration log.message.timestamp.type: "
         "String must be one of: CreateTime, LogAppendTime"),
        ({"log.preallocate": "yes"},
         "Invalid value yes for configuration log.preallocate: "
         "Expected value to be either true or false"),
        ({"listener.name.internal.ssl.client.auth": "bogus"},
         "Invalid value bogus for configuration ssl.client.auth: "
         "String must be one of: required, requested, none"),
        ({"principal.builder.class": "com.example.Nope"},
         "Invalid value com.example.Nope for configuration principal.builder.class: "
         "Class com.example.Nope could not be found."),
        ({"leader.replication.throttled.rate": "-5"},
         "Invalid value -5 for configuration leader.replication.throttled.rate: "
         "Value must be at least 0"),
    ],
)  # fmt: skip
def test_value_errors(configs: dict[str, str], message: str) -> None:
    error = _error(configs)
    assert error.message == message
    assert error.config_exception


def test_first_bad_value_in_definition_order() -> None:
    # The throttle keys come first, then KafkaConfig order: message.max.bytes before log.*.
    error = _error({"log.retention.bytes": "x", "message.max.bytes": "y"})
    assert "configuration message.max.bytes" in error.message
    error = _error({"message.max.bytes": "y", "follower.replication.throttled.rate": "z"})
    assert "configuration follower.replication.throttled.rate" in error.message


def test_per_broker_keys_at_cluster_default() -> None:
    error = _error({"listeners": "PLAINTEXT://:9093"}, per_broker=False)
    assert error.message == (
        "Cannot update these configs at default cluster level, broker id must be specified: "
        "Set(listeners)"
    )
    assert error.config_exception
    error = _error({"listener.name.internal.ssl.keystore.location": "/k"}, per_broker=False)
    assert error.message.endswith("Set(listener.name.internal.ssl.keystore.location)")
    validate_broker_configs(
        {"listener.name.internal.max.connections": "10", "max.connections": "10"},
        R28,
        per_broker=False,
    )


def test_value_errors_come_before_the_cluster_default_rule() -> None:
    error = _error({"listeners": "x", "message.max.bytes": "x"}, per_broker=False)
    assert "Not a number of type INT" in error.message


def test_num_network_threads_is_cluster_level_with_prefix_from_3_2() -> None:
    validate_broker_configs(
        {"listener.name.internal.num.network.threads": "3"}, (3, 2), per_broker=False
    )
    error = _error({"listener.name.internal.num.network.threads": "3"}, (3, 1), per_broker=False)
    assert "broker id must be specified" in error.message


def test_thread_count_rules() -> None:
    error = _error({"num.io.threads": "17"})
    assert error.message == (
        "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread count "
        "update validation failed for num.io.threads=17, value should not be greater than "
        "double the current value 8 for configuration Invalid dynamic configuration"
    )
    error = _error({"num.io.threads": "5"}, current={"num.io.threads": "12"})
    assert "value should be at least half the current value 12" in error.message
    validate_broker_configs({"num.io.threads": "16"}, R28, per_broker=True)
    error = _error({"log.cleaner.threads": "3"})
    assert error.message == (
        "Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads "
        "cannot be increased to more than double the current value 1 for configuration "
        "Invalid dynamic configuration"
    )


def test_3_9_rules() -> None:
    error = _error({"broker.id": "1"}, R39)
    assert error.message == "Cannot update these configs dynamically: Set(broker.id)"
    error = _error({"compression.type": "brotli"}, R39)
    assert error.message == (
        "Invalid value brotli for configuration compression.type: "
        "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"
    )
    validate_broker_configs({"remote.fetch.max.wait.ms": "100"}, R39, per_broker=False)
    error = _error({"compression.gzip.level": "11"}, R39)
    assert error.message == (
        "Invalid value 11 for configuration compression.gzip.level: "
        "Value must be between 1 and 9 or equal to -1"
    )
