"""The topic-config catalog (broker/rules/config_catalog.py): keys per release, Kafka's parse and
validator rules with their exact messages, LogConfig.validate's order, and DescribeConfigs'
entries and synonyms. Pure: no ZooKeeper, no sockets.

Expected values come from docs/kafka-behaviour.md §4.3 and from Kafka's sources at the
release tags (LogConfig, ConfigDef, KafkaConfig Defaults, ConfigHelper)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pytest

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.broker_config import BrokerConfig
from zkbroker.broker.rules.broker_config_catalog import broker_config_key
from zkbroker.broker.rules.config_catalog import (
    describe_topic_config,
    key_since,
    topic_config_keys,
    validate_topic_configs,
)
from zkbroker.broker.rules.config_def import (
    ConfigEntry,
    ConfigKey,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    InvalidConfig,
    java_double_str,
    message_format_version_default,
    parse_value,
    render_value,
    validate_value,
)

LONG_MAX = "9223372036854775807"

# §4.3 "Topic configs of Kafka 2.8.0": name -> (type, default reported, first broker synonym).
SEMANTICS_TABLE_2_8: dict[str, tuple[ConfigType, str, str | None]] = {
    "cleanup.policy": (ConfigType.LIST, "delete", "log.cleanup.policy"),
    "compression.type": (ConfigType.STRING, "producer", "compression.type"),
    "delete.retention.ms": (ConfigType.LONG, "86400000", "log.cleaner.delete.retention.ms"),
    "file.delete.delay.ms": (ConfigType.LONG, "60000", "log.segment.delete.delay.ms"),
    "flush.messages": (ConfigType.LONG, LONG_MAX, "log.flush.interval.messages"),
    "flush.ms": (ConfigType.LONG, LONG_MAX, "log.flush.interval.ms"),
    "follower.replication.throttled.replicas": (ConfigType.LIST, "", None),
    "index.interval.bytes": (ConfigType.INT, "4096", "log.index.interval.bytes"),
    "leader.replication.throttled.replicas": (ConfigType.LIST, "", None),
    "max.compaction.lag.ms": (ConfigType.LONG, LONG_MAX, "log.cleaner.max.compaction.lag.ms"),
    "max.message.bytes": (ConfigType.INT, "1048588", "message.max.bytes"),
    "message.downconversion.enable": (
        ConfigType.BOOLEAN,
        "true",
        "log.message.downconversion.enable",
    ),
    "message.format.version": (ConfigType.STRING, "2.8-IV1", "log.message.format.version"),
    "message.timestamp.difference.max.ms": (
        ConfigType.LONG,
        LONG_MAX,
        "log.message.timestamp.difference.max.ms",
    ),
    "message.timestamp.type": (ConfigType.STRING, "CreateTime", "log.message.timestamp.type"),
    "min.cleanable.dirty.ratio": (ConfigType.DOUBLE, "0.5", "log.cleaner.min.cleanable.ratio"),
    "min.compaction.lag.ms": (ConfigType.LONG, "0", "log.cleaner.min.compaction.lag.ms"),
    "min.insync.replicas": (ConfigType.INT, "1", "min.insync.replicas"),
    "preallocate": (ConfigType.BOOLEAN, "false", "log.preallocate"),
    "retention.bytes": (ConfigType.LONG, "-1", "log.retention.bytes"),
    "retention.ms": (ConfigType.LONG, "604800000", "log.retention.ms"),
    "segment.bytes": (ConfigType.INT, "1073741824", "log.segment.bytes"),
    "segment.index.bytes": (ConfigType.INT, "10485760", "log.index.size.max.bytes"),
    "segment.jitter.ms": (ConfigType.LONG, "0", "log.roll.jitter.ms"),
    "segment.ms": (ConfigType.LONG, "604800000", "log.roll.ms"),
    "unclean.leader.election.enable": (
        ConfigType.BOOLEAN,
        "false",
        "unclean.leader.election.enable",
    ),
}

KEYS_2_8 = set(SEMANTICS_TABLE_2_8)
REMOTE_3_0 = {"remote.storage.enable", "local.retention.ms", "local.retention.bytes"}
ADDED_3_6 = REMOTE_3_0 | {"message.timestamp.before.max.ms", "message.timestamp.after.max.ms"}
ADDED_3_8 = {"compression.gzip.level", "compression.lz4.level", "compression.zstd.level"}
ADDED_3_9 = {"remote.log.copy.disable", "remote.log.delete.on.disable"}


def default_broker(release: tuple[int, ...]) -> BrokerConfig:
    """A broker running on Kafka's defaults."""
    return BrokerConfig.build(0, release, {}, {}, {})


def broker_synonym_default(name: str, release: tuple[int, ...]) -> str | None:
    key = broker_config_key(name, release)
    assert key is not None, name
    return key.default


# The broker keys 2.8 topic keys map to, with their defaults (None: Kafka's default is null).
BROKER_DEFAULTS_FOR_TOPIC_SYNONYMS = {
    b: broker_synonym_default(b, (2, 8))
    for k in topic_config_keys((2, 8)).values()
    for b in k.broker_synonyms
}


def _key(name: str, release: tuple[int, ...] = (2, 8)) -> ConfigKey:
    return topic_config_keys(release, include_internal=True)[name]


def _error(configs: Mapping[str, str | None], release: tuple[int, ...] = (2, 8), **kw: bool) -> str:
    with pytest.raises(InvalidConfig) as info:
        validate_topic_configs(configs, release, **kw)
    assert info.value.error_code == error_codes.INVALID_CONFIG
    return info.value.message


def _invalid(name: str, value: str, message: str) -> str:
    return f"Invalid value {value} for configuration {name}: {message}"


# --- ids ---------------------------------------------------------------------------------------


def test_type_and_source_ids() -> None:
    assert [(t.name, int(t)) for t in ConfigType] == [
        ("UNKNOWN", 0), ("BOOLEAN", 1), ("STRING", 2), ("INT", 3), ("SHORT", 4), ("LONG", 5),
        ("DOUBLE", 6), ("LIST", 7), ("CLASS", 8), ("PASSWORD", 9),
    ]  # fmt: skip
    assert [(s.name, int(s)) for s in ConfigSource] == [
        ("UNKNOWN", 0), ("TOPIC_CONFIG", 1), ("DYNAMIC_BROKER_CONFIG", 2),
        ("DYNAMIC_DEFAULT_BROKER_CONFIG", 3), ("STATIC_BROKER_CONFIG", 4), ("DEFAULT_CONFIG", 5),
        ("DYNAMIC_BROKER_LOGGER_CONFIG", 6),
    ]  # fmt: skip


# --- the 2.8 table and the key sets of each release ------------------------------------------


@pytest.mark.parametrize("name", sorted(SEMANTICS_TABLE_2_8))
def test_2_8_key_matches_the_semantics_table(name: str) -> None:
    type_, default, synonym = SEMANTICS_TABLE_2_8[name]
    key = topic_config_keys((2, 8))[name]
    assert key.type is type_
    assert key.default == default
    assert (key.broker_synonyms[0] if key.broker_synonyms else None) == synonym
    assert not key.sensitive and not key.internal


def test_2_8_key_set_is_the_table_sorted_by_name() -> None:
    keys = topic_config_keys((2, 8))
    assert list(keys) == sorted(KEYS_2_8)
    assert all(name == key.name for name, key in keys.items())


def test_patch_releases_and_trailing_zeros_use_their_line() -> None:
    assert topic_config_keys((2, 8, 1)) == topic_config_keys((2, 8))
    assert topic_config_keys((2, 8, 0)) == topic_config_keys((2, 8))
    assert topic_config_keys((3, 0, 0)) == topic_config_keys((3, 0))


def test_multi_synonym_chains() -> None:
    keys = topic_config_keys((2, 8))
    assert keys["retention.ms"].broker_synonyms == (
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    )
    assert keys["segment.ms"].broker_synonyms == ("log.roll.ms", "log.roll.hours")
    assert keys["segment.jitter.ms"].broker_synonyms == (
        "log.roll.jitter.ms",
        "log.roll.jitter.hours",
    )
    assert keys["flush.ms"].broker_synonyms == (
        "log.flush.interval.ms",
        "log.flush.scheduler.interval.ms",
    )


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        ((3, 0), KEYS_2_8 | REMOTE_3_0),  # defined publicly in 3.0 only
        ((3, 1), KEYS_2_8),
        ((3, 5), KEYS_2_8),
        ((3, 6), KEYS_2_8 | ADDED_3_6),
        ((3, 7), KEYS_2_8 | ADDED_3_6),
        ((3, 8), KEYS_2_8 | ADDED_3_6 | ADDED_3_8),
        ((3, 9), KEYS_2_8 | ADDED_3_6 | ADDED_3_8 | ADDED_3_9),
    ],
)
def test_key_sets_of_3_x(release: tuple[int, ...], expected: set[str]) -> None:
    assert set(topic_config_keys(release)) == expected


@pytest.mark.parametrize("release", [(3, 1), (3, 2), (3, 3), (3, 4), (3, 5)])
def test_remote_storage_keys_are_internal_in_3_1_to_3_5(release: tuple[int, ...]) -> None:
    every = topic_config_keys(release, include_internal=True)
    assert set(every) == KEYS_2_8 | REMOTE_3_0
    assert all(every[n].internal for n in REMOTE_3_0)


@pytest.mark.parametrize(
    ("release", "missing"),
    [
        ((2, 7), set()),
        ((2, 2), {"max.compaction.lag.ms"}),
        ((1, 1), {"max.compaction.lag.ms", "message.downconversion.enable"}),
        ((0, 10, 1), {"max.compaction.lag.ms", "message.downconversion.enable"}),
        (
            (0, 10, 0),
            {
                "max.compaction.lag.ms",
                "message.downconversion.enable",
                "min.compaction.lag.ms",
                "leader.replication.throttled.replicas",
                "follower.replication.throttled.replicas",
            },
        ),
    ],
)
def test_key_sets_before_2_8(release: tuple[int, ...], missing: set[str]) -> None:
    assert set(topic_config_keys(release)) == KEYS_2_8 - missing


def test_key_since() -> None:
    assert key_since("segment.bytes") == (0, 10, 0)
    assert key_since("min.compaction.lag.ms") == (0, 10, 1)
    assert key_since("message.downconversion.enable") == (2, 0)
    assert key_since("max.compaction.lag.ms") == (2, 3)
    assert key_since("remote.storage.enable") == (3, 0)
    assert key_since("message.timestamp.before.max.ms") == (3, 6)
    assert key_since("compression.zstd.level") == (3, 8)
    assert key_since("remote.log.copy.disable") == (3, 9)
    assert key_since("no.such.key") is None


def test_3_x_additions_types_defaults_and_synonyms() -> None:
    keys = topic_config_keys((3, 9))
    expected = {
        "remote.storage.enable": (ConfigType.BOOLEAN, "false", ()),
        "local.retention.ms": (ConfigType.LONG, "-2", ("log.local.retention.ms",)),
        "local.retention.bytes": (ConfigType.LONG, "-2", ("log.local.retention.bytes",)),
        "message.timestamp.before.max.ms": (
            ConfigType.LONG,
            LONG_MAX,
            ("log.message.timestamp.before.max.ms",),
        ),
        "message.timestamp.after.max.ms": (
            ConfigType.LONG,
            LONG_MAX,
            ("log.message.timestamp.after.max.ms",),
        ),
        "compression.gzip.level": (ConfigType.INT, "-1", ("compression.gzip.level",)),
        "compression.lz4.level": (ConfigType.INT, "9", ("compression.lz4.level",)),
        "compression.zstd.level": (ConfigType.INT, "3", ("compression.zstd.level",)),
        "remote.log.copy.disable": (ConfigType.BOOLEAN, "false", ()),
        "remote.log.delete.on.disable": (ConfigType.BOOLEAN, "false", ()),
    }
    for name, (type_, default, synonyms) in expected.items():
        key = keys[name]
        assert (key.type, key.default, key.broker_synonyms) == (type_, default, synonyms), name
    # 3.0 defined the remote keys without broker synonyms
    assert topic_config_keys((3, 0))["local.retention.ms"].broker_synonyms == ()


@pytest.mark.parametrize(
    ("release", "default"),
    [
        ((0, 10, 0), "0.10.0-IV1"),
        ((0, 10, 1), "0.10.1-IV2"),
        ((0, 11, 0), "0.11.0-IV2"),
        ((1, 0), "1.0-IV0"),
        ((2, 0), "2.0-IV1"),
        ((2, 7), "2.7-IV2"),
        ((2, 8), "2.8-IV1"),
        ((3, 0), "3.0-IV1"),
        ((3, 5), "3.0-IV1"),
        ((3, 9), "3.0-IV1"),
    ],
)
def test_message_format_version_default(release: tuple[int, ...], default: str) -> None:
    assert message_format_version_default(release) == default
    assert topic_config_keys(release)["message.format.version"].default == default
    assert broker_synonym_default("log.message.format.version", release) == default


def test_defaults_that_changed_before_2_8() -> None:
    assert topic_config_keys((2, 4))["max.message.bytes"].default == "1000012"
    assert topic_config_keys((2, 5))["max.message.bytes"].default == "1048588"
    assert topic_config_keys((0, 10, 2))["unclean.leader.election.enable"].default == "true"
    assert topic_config_keys((0, 11))["unclean.leader.election.enable"].default == "false"
    assert topic_config_keys((0, 10, 0))["cleanup.policy"].type is ConfigType.STRING
    assert broker_synonym_default("message.max.bytes", (2, 4)) == "1000012"
    assert broker_synonym_default("unclean.leader.election.enable", (0, 10, 2)) == "true"


def test_broker_defaults_of_topic_synonyms_against_kafka_2_8_defaults() -> None:
    nulls = {k for k, v in BROKER_DEFAULTS_FOR_TOPIC_SYNONYMS.items() if v is None}
    assert nulls == {
        "log.roll.ms",
        "log.roll.jitter.ms",
        "log.flush.interval.ms",
        "log.retention.ms",
        "log.retention.minutes",
    }
    assert BROKER_DEFAULTS_FOR_TOPIC_SYNONYMS["log.retention.hours"] == "168"
    assert BROKER_DEFAULTS_FOR_TOPIC_SYNONYMS["log.roll.hours"] == "168"
    assert BROKER_DEFAULTS_FOR_TOPIC_SYNONYMS["log.segment.bytes"] == "1073741824"
    assert BROKER_DEFAULTS_FOR_TOPIC_SYNONYMS["log.cleanup.policy"] == "delete"
    assert "num.partitions" not in BROKER_DEFAULTS_FOR_TOPIC_SYNONYMS
    # every broker key a 2.8 topic key maps to is in the table
    for key in topic_config_keys((2, 8)).values():
        for broker_key in key.broker_synonyms:
            assert broker_key in BROKER_DEFAULTS_FOR_TOPIC_SYNONYMS, broker_key
    assert broker_synonym_default("log.local.retention.ms", (3, 6)) == "-2"
    assert broker_synonym_default("compression.lz4.level", (3, 8)) == "9"


# --- parse rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("   ", []),
        ("compact", ["compact"]),
        (" compact , delete ", ["compact", "delete"]),
        ("a,,b", ["a", "", "b"]),
        ("compact,", ["compact", ""]),
        ("a\t,\nb", ["a", "b"]),
    ],
)
def test_list_parsing_splits_on_commas_and_trims(text: str, expected: list[str]) -> None:
    assert parse_value(_key("cleanup.policy"), text) == expected


@pytest.mark.parametrize("text", ["true", "TRUE", "True", " tRuE "])
def test_booleans_are_case_insensitive_true(text: str) -> None:
    assert parse_value(_key("preallocate"), text) is True


@pytest.mark.parametrize(
    "text", ["false", "FALSE", "False", "fal\u017fe"]
)  # long s: Java equalsIgnoreCase
def test_booleans_are_case_insensitive_false(text: str) -> None:
    assert parse_value(_key("preallocate"), text) is False


@pytest.mark.parametrize("text", ["yes", "1", "", "t"])
def test_boolean_parse_failure(text: str) -> None:
    with pytest.raises(InvalidConfig) as info:
        parse_value(_key("preallocate"), text)
    assert info.value.message == _invalid(
        "preallocate", text, "Expected value to be either true or false"
    )
    assert info.value.config_exception


@pytest.mark.parametrize(
    ("text", "expected"),
    [(" 42 ", 42), ("+5", 5), ("-0", 0), ("007", 7), ("-2147483648", -(2**31)), ("١٢", 12)],
)
def test_int_parsing_follows_java(text: str, expected: int) -> None:
    assert parse_value(_key("segment.bytes"), text) == expected


@pytest.mark.parametrize(
    ("name", "text", "type_name"),
    [
        ("segment.bytes", "2147483648", "INT"),
        ("segment.bytes", "1_0", "INT"),
        ("segment.bytes", "0x10", "INT"),
        ("segment.bytes", "1.0", "INT"),
        ("segment.bytes", "+", "INT"),
        ("retention.ms", "abc", "LONG"),
        ("retention.ms", "9223372036854775808", "LONG"),
        ("retention.ms", "", "LONG"),
        ("min.cleanable.dirty.ratio", "abc", "DOUBLE"),
        ("min.cleanable.dirty.ratio", "nan", "DOUBLE"),
        ("min.cleanable.dirty.ratio", "1e", "DOUBLE"),
    ],
)
def test_number_parse_failures(name: str, text: str, type_name: str) -> None:
    with pytest.raises(InvalidConfig) as info:
        parse_value(_key(name), text)
    assert info.value.message == _invalid(name, text, f"Not a number of type {type_name}")


def test_unparsable_value_is_shown_untrimmed() -> None:
    message = _error({"retention.ms": " abc "})
    assert (
        message == "Invalid value  abc  for configuration retention.ms: Not a number of type LONG"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0.5", 0.5), (".5", 0.5), ("5e-1", 0.5), ("0.5d", 0.5), ("0x1p-1", 0.5), ("1", 1.0)],
)
def test_double_parsing_follows_java(text: str, expected: float) -> None:
    assert parse_value(_key("min.cleanable.dirty.ratio"), text) == expected


def test_strings_are_trimmed() -> None:
    assert parse_value(_key("compression.type"), "  gzip ") == "gzip"


# --- rendering -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("cleanup.policy", ["compact", "delete"], "compact,delete"),
        ("cleanup.policy", [], ""),
        ("preallocate", True, "true"),
        ("preallocate", False, "false"),
        ("retention.ms", 100, "100"),
        ("retention.ms", -1, "-1"),
        ("min.cleanable.dirty.ratio", 0.5, "0.5"),
        ("min.cleanable.dirty.ratio", 1.0, "1.0"),
        ("min.cleanable.dirty.ratio", 0.0001, "1.0E-4"),
        ("compression.type", "gzip", "gzip"),
    ],
)
def test_render_value(name: str, value: object, text: str) -> None:
    assert render_value(_key(name), value) == text  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.5, "0.5"),
        (1e7, "1.0E7"),
        (9999999.0, "9999999.0"),
        (1e-3, "0.001"),
        (1.5e-5, "1.5E-5"),
        (123456789.5, "1.234567895E8"),
        (-0.0, "-0.0"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        (math.nan, "NaN"),
        (0.30000000000000004, "0.30000000000000004"),
    ],
)
def test_java_double_str(value: float, text: str) -> None:
    assert java_double_str(value) == text


# --- validators: accept and reject with Kafka's words ----------------------------------------


@pytest.mark.parametrize(
    ("configs", "release"),
    [
        ({"segment.bytes": "14"}, (2, 8)),
        ({"segment.ms": "1"}, (2, 8)),
        ({"segment.ms": "0"}, (1, 1)),  # atLeast(0) before 2.0
        ({"retention.ms": "-1"}, (2, 8)),
        ({"retention.ms": "-5"}, (2, 1)),  # no validator before 2.2
        ({"retention.bytes": "-100"}, (2, 8)),
        ({"min.cleanable.dirty.ratio": "0"}, (2, 8)),
        ({"min.cleanable.dirty.ratio": "1"}, (2, 8)),
        ({"min.cleanable.dirty.ratio": "NaN"}, (2, 8)),  # NaN passes Kafka's Range
        ({"cleanup.policy": "compact,delete"}, (2, 8)),
        ({"cleanup.policy": ""}, (2, 8)),
        ({"compression.type": "zstd"}, (2, 8)),
        ({"message.timestamp.type": "LogAppendTime"}, (2, 8)),
        ({"message.timestamp.type": "anything"}, (1, 1)),  # no validator before 2.0
        ({"flush.messages": "0"}, (3, 2)),
        ({"segment.index.bytes": "0"}, (3, 2)),
        ({"leader.replication.throttled.replicas": "*"}, (2, 8)),
        ({"leader.replication.throttled.replicas": "0:1, 1:2"}, (2, 8)),
        ({"follower.replication.throttled.replicas": ""}, (2, 8)),
        ({"preallocate": "TRUE", "unclean.leader.election.enable": "False"}, (2, 8)),
        ({"compression.gzip.level": "-1"}, (3, 8)),
        ({"compression.gzip.level": "9"}, (3, 8)),
        ({"compression.zstd.level": "-131072"}, (3, 8)),
        ({"min.compaction.lag.ms": "5", "max.compaction.lag.ms": "5"}, (2, 8)),
    ],
)
def test_valid_configs_pass(configs: dict[str, str | None], release: tuple[int, ...]) -> None:
    validate_topic_configs(configs, release)


@pytest.mark.parametrize(
    ("configs", "release", "message"),
    [
        (
            {"segment.bytes": "-5"},
            (2, 8),
            _invalid("segment.bytes", "-5", "Value must be at least 14"),
        ),
        (
            {"min.cleanable.dirty.ratio": "1.5"},
            (2, 8),
            _invalid("min.cleanable.dirty.ratio", "1.5", "Value must be no more than 1"),
        ),
        (
            {"min.cleanable.dirty.ratio": "2"},
            (2, 8),
            _invalid("min.cleanable.dirty.ratio", "2.0", "Value must be no more than 1"),
        ),
        (
            {"min.cleanable.dirty.ratio": "-0.1"},
            (2, 8),
            _invalid("min.cleanable.dirty.ratio", "-0.1", "Value must be at least 0"),
        ),
        (
            {"cleanup.policy": "foo"},
            (2, 8),
            _invalid("cleanup.policy", "foo", "String must be one of: compact, delete"),
        ),
        (
            {"cleanup.policy": "compact,Delete"},
            (2, 8),
            _invalid("cleanup.policy", "Delete", "String must be one of: compact, delete"),
        ),
        (
            {"cleanup.policy": "compact,"},
            (2, 8),
            _invalid("cleanup.policy", "", "String must be one of: compact, delete"),
        ),
        (
            {"compression.type": "GZIP"},
            (2, 8),
            _invalid(
                "compression.type",
                "GZIP",
                "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
            ),
        ),
        (
            {"compression.type": "zstd"},
            (2, 0),
            _invalid(
                "compression.type",
                "zstd",
                "String must be one of: uncompressed, snappy, lz4, gzip, producer",
            ),
        ),
        (
            {"message.timestamp.type": "createtime"},
            (2, 8),
            _invalid(
                "message.timestamp.type",
                "createtime",
                "String must be one of: CreateTime, LogAppendTime",
            ),
        ),
        (
            {"preallocate": "yes"},
            (2, 8),
            _invalid("preallocate", "yes", "Expected value to be either true or false"),
        ),
        (
            {"compression.gzip.level": "0"},
            (3, 8),
            _invalid("compression.gzip.level", "0", "Value must be between 1 and 9 or equal to -1"),
        ),
        (
            {"compression.gzip.level": "10"},
            (3, 8),
            _invalid(
                "compression.gzip.level", "10", "Value must be between 1 and 9 or equal to -1"
            ),
        ),
        (
            {"compression.lz4.level": "18"},
            (3, 8),
            _invalid("compression.lz4.level", "18", "Value must be no more than 17"),
        ),
        (
            {"compression.zstd.level": "-131073"},
            (3, 9),
            _invalid("compression.zstd.level", "-131073", "Value must be at least -131072"),
        ),
        (
            {"local.retention.ms": "-3"},
            (3, 6),
            _invalid("local.retention.ms", "-3", "Value must be at least -2"),
        ),
    ],
)
def test_invalid_values_are_refused_with_kafkas_words(
    configs: dict[str, str | None], release: tuple[int, ...], message: str
) -> None:
    assert _error(configs, release) == message


@pytest.mark.parametrize(
    ("name", "text", "release", "shown", "minimum"),
    [
        ("segment.bytes", " 13 ", (2, 8), "13", 14),  # the message shows the parsed value
        ("segment.ms", "0", (2, 8), "0", 1),
        ("retention.ms", "-2", (2, 8), "-2", -1),
        ("max.compaction.lag.ms", "0", (2, 8), "0", 1),
        ("min.insync.replicas", "0", (2, 8), "0", 1),
        ("delete.retention.ms", "-1", (2, 8), "-1", 0),
        ("flush.messages", "0", (3, 3), "0", 1),
        ("segment.index.bytes", "3", (3, 3), "3", 4),
        ("message.timestamp.before.max.ms", "-1", (3, 6), "-1", 0),
    ],
)
def test_at_least_refusals(
    name: str, text: str, release: tuple[int, ...], shown: str, minimum: int
) -> None:
    assert _error({name: text}, release) == _invalid(
        name, shown, f"Value must be at least {minimum}"
    )


THROTTLED_2_3 = (
    "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the "
    "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [("x", "[x]"), ("0:1,x", "[0:1, x]"), ("*,0:1", "[*, 0:1]"), ("1:", "[1:]"), ("*,*", "[*, *]")],
)
def test_throttled_replicas_refused(text: str, shown: str) -> None:
    message = _error({"leader.replication.throttled.replicas": text})
    assert message == _invalid("leader.replication.throttled.replicas", shown, THROTTLED_2_3)


def test_throttled_replicas_rule_and_words_by_release() -> None:
    name = "leader.replication.throttled.replicas"
    # up to 2.7 a leading '*' passed whatever followed; from 2.8 the entries must join to '*'
    validate_topic_configs({name: "*,0:1"}, (2, 7))
    validate_topic_configs({name: "*,"}, (2, 8))
    assert _error({name: "x"}, (2, 7)) == _invalid(name, "[x]", THROTTLED_2_3)
    assert _error({name: "x"}, (2, 2)) == _invalid(
        name,
        "[x]",
        f"{name} must be the literal '*' or a list of replicas in the following format: "
        "[partitionId],[brokerId]:[partitionId],[brokerId]:...",
    )
    assert _error({name: "x"}, (0, 11)) == _invalid(
        name,
        "[x]",
        f"{name}  must match for format "
        "[partitionId],[brokerId]:[partitionId],[brokerId]:[partitionId],[brokerId] etc",
    )


@pytest.mark.parametrize(
    ("release", "text"),
    [
        ((2, 8), "2.8-IV1"),
        ((2, 8), "2.8"),
        ((2, 8), "2.7.1"),
        ((2, 8), "0.10.0"),
        ((2, 8), "0.10.0-IV1"),
        ((2, 8), "0.8.2"),
        ((2, 8), "0.8.2.1"),
        ((2, 8), "1.0"),
        ((2, 8), " 2.1-IV2 "),
        ((2, 8), "2.8."),  # Scala's split drops the trailing empty part
        ((3, 3), "3.3-IV3"),
        ((3, 6), "3.6"),
        ((3, 7), "3.8-IV0"),  # listed, not production
        ((3, 9), "4.0-IV1"),
        ((2, 0), "anything"),  # no validator before 2.1
    ],
)
def test_message_format_version_accepted(release: tuple[int, ...], text: str) -> None:
    validate_topic_configs({"message.format.version": text}, release)


@pytest.mark.parametrize(
    ("release", "text", "message"),
    [
        ((2, 8), "2.9", "Version `2.9` is not a valid version"),
        ((2, 8), "3.0", "Version `3.0` is not a valid version"),
        ((2, 8), "2.8-IV2", "Version `2.8-IV2` is not a valid version"),
        ((2, 8), "abc", "Version `abc` is not a valid version"),
        ((2, 1), "2.2", "Version `2.2` is not a valid version"),
        ((3, 2), "3.3", "Version `3.3` is not a valid version"),
        ((3, 3), "3.4", "Version 3.4 is not a valid version"),
        ((3, 3), "2.8.", "Version 2.8. is not a valid version"),  # Java: whole string as key
        ((3, 7), "3.8", "Version 3.8 is not a valid version"),  # short form: production only
        ((3, 9), "4.0", "Version 4.0 is not a valid version"),
        ((3, 9), "", "Version  is not a valid version"),
    ],
)
def test_message_format_version_refused(release: tuple[int, ...], text: str, message: str) -> None:
    assert _error({"message.format.version": text}, release) == _invalid(
        "message.format.version", text, message
    )


# --- LogConfig.validate order and cross-key rules ---------------------------------------------


@pytest.mark.parametrize(
    ("release", "message"),
    [
        ((2, 8), "Unknown topic config name: x"),
        ((0, 11), "Unknown topic config name: x"),
        ((0, 10, 1), "Unknown Log configuration x."),
        ((0, 10, 0), "requirement failed: Unknown configuration `x`."),
    ],
)
def test_unknown_name(release: tuple[int, ...], message: str) -> None:
    with pytest.raises(InvalidConfig) as info:
        validate_topic_configs({"x": "1"}, release)
    assert (info.value.error_code, info.value.message) == (error_codes.INVALID_CONFIG, message)
    assert not info.value.config_exception


def test_keys_of_later_releases_are_unknown() -> None:
    assert _error({"compression.gzip.level": "1"}, (3, 7)) == (
        "Unknown topic config name: compression.gzip.level"
    )
    assert _error({"max.compaction.lag.ms": "1"}, (2, 2)) == (
        "Unknown topic config name: max.compaction.lag.ms"
    )


def test_unknown_names_are_checked_before_values() -> None:
    assert _error({"retention.ms": "abc", "x": "1"}) == "Unknown topic config name: x"


def test_first_bad_value_in_definition_order_wins() -> None:
    configs = {"compression.type": "foo", "retention.ms": "abc", "segment.bytes": "1"}
    assert _error(configs, (2, 8)) == _invalid("segment.bytes", "1", "Value must be at least 14")
    # 0.10.x ConfigDef kept its keys in a HashMap: compression.type comes first there
    assert _error(configs, (0, 10, 1)).startswith("Invalid value foo for configuration compression")


def test_none_values_are_left_to_the_caller() -> None:
    validate_topic_configs({"retention.ms": None}, (2, 8))


def test_compaction_lag_conflict() -> None:
    assert _error({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}) == (
        "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"
    )
    with pytest.raises(InvalidConfig) as info:
        validate_topic_configs(
            {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, (3, 9)
        )
    assert not info.value.config_exception
    # against the default max (Long.MAX_VALUE) nothing conflicts
    validate_topic_configs({"min.compaction.lag.ms": LONG_MAX}, (2, 8))
    # before 2.3 there is no max.compaction.lag.ms, and no rule
    validate_topic_configs({"min.compaction.lag.ms": "10"}, (2, 2))


def test_range_errors_come_before_the_compaction_rule() -> None:
    configs = {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5", "segment.ms": "0"}
    assert _error(configs) == _invalid("segment.ms", "0", "Value must be at least 1")


def test_remote_storage_on_a_broker_without_tiered_storage() -> None:
    message = (
        "Tiered Storage functionality is disabled in the broker. "
        "Topic cannot be configured with remote log storage."
    )
    assert _error({"remote.storage.enable": "true"}, (3, 6)) == message
    validate_topic_configs({"remote.storage.enable": "false"}, (3, 6))
    # 3.0-3.5 only parse the key
    validate_topic_configs({"remote.storage.enable": "true"}, (3, 0))
    validate_topic_configs({"remote.storage.enable": "true"}, (3, 5))
    assert _error({"remote.storage.enable": "true"}, (2, 8)) == (
        "Unknown topic config name: remote.storage.enable"
    )


def test_remote_storage_rules_with_tiered_storage_enabled() -> None:
    on = {"remote.storage.enable": "true"}
    validate_topic_configs(on, (3, 6), remote_storage_system_enabled=True)
    assert _error(
        {**on, "cleanup.policy": "delete,compact"}, (3, 6), remote_storage_system_enabled=True
    ) == ("Remote log storage is unsupported for the compacted topics")
    assert _error(
        {**on, "retention.bytes": "100", "local.retention.bytes": "-1"},
        (3, 6),
        remote_storage_system_enabled=True,
    ) == _invalid(
        "local.retention.bytes",
        "-1",
        "Value must not be -1 as retention.bytes value is set as 100.",
    )
    assert _error(
        {**on, "retention.ms": "100", "local.retention.ms": "200"},
        (3, 6),
        remote_storage_system_enabled=True,
    ) == _invalid(
        "local.retention.ms", "200", "Value must not be more than retention.ms property value: 100"
    )
    validate_topic_configs(
        {**on, "retention.ms": "-1", "local.retention.ms": "-1"},
        (3, 6),
        remote_storage_system_enabled=True,
    )  # fmt: skip


@pytest.mark.parametrize("name", ["remote.log.copy.disable", "remote.log.delete.on.disable"])
def test_zk_mode_refuses_remote_log_disable_keys_in_3_9(name: str) -> None:
    with pytest.raises(InvalidConfig) as info:
        validate_topic_configs({name: "true"}, (3, 9))
    assert info.value.message == (
        "It is invalid to set `remote.log.delete.on.disable` or "
        "`remote.log.copy.disable` under Zookeeper's mode."
    )
    assert not info.value.config_exception
    validate_topic_configs({name: "false"}, (3, 9))


def test_validate_value_returns_the_parsed_value() -> None:
    assert validate_value(_key("cleanup.policy"), "compact , delete") == ["compact", "delete"]
    assert validate_value(_key("retention.ms"), "0100") == 100


# --- how APIs answer an InvalidConfig --------------------------------------------------------


def test_create_topics_mapping() -> None:
    bad = InvalidConfig("Invalid value x for configuration y: z", config_exception=True)
    assert bad.for_create_topics((2, 1)).error_code == error_codes.INVALID_CONFIG
    assert bad.for_create_topics((2, 0)).error_code == error_codes.UNKNOWN_SERVER_ERROR
    conflict = InvalidConfig("conflict topic config setting ...")
    assert conflict.for_create_topics((2, 0)).error_code == error_codes.INVALID_CONFIG


# --- DescribeConfigs -------------------------------------------------------------------------


def _entries(
    overrides: dict[str, str], release: tuple[int, ...] = (2, 8)
) -> dict[str, ConfigEntry]:
    entries = describe_topic_config("t", overrides, release, default_broker(release))
    assert [e.name for e in entries] == sorted(e.name for e in entries)
    return {e.name: e for e in entries}


def test_describe_without_overrides_lists_every_key_with_its_default() -> None:
    entries = _entries({})
    assert set(entries) == KEYS_2_8
    for name, entry in entries.items():
        type_, default, _ = SEMANTICS_TABLE_2_8[name]
        assert entry.value == default
        assert entry.config_type is type_
        assert entry.source is ConfigSource.DEFAULT_CONFIG
        assert not entry.is_sensitive and not entry.read_only
        assert entry.documentation is None
        assert all(s.source is ConfigSource.DEFAULT_CONFIG for s in entry.synonyms)


def test_describe_synonyms_follow_kafkas_drop_while() -> None:
    entries = _entries({})
    # the mapped broker key has a null default, so Kafka drops the hours/minutes synonyms too
    assert entries["retention.ms"].synonyms == ()
    assert entries["segment.ms"].synonyms == ()
    assert entries["segment.jitter.ms"].synonyms == ()
    assert entries["flush.ms"].synonyms == ()
    assert entries["cleanup.policy"].synonyms == (
        ConfigSynonym("log.cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG),
    )
    assert entries["segment.bytes"].synonyms == (
        ConfigSynonym("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG),
    )
    assert entries["min.cleanable.dirty.ratio"].synonyms == (
        ConfigSynonym("log.cleaner.min.cleanable.ratio", "0.5", ConfigSource.DEFAULT_CONFIG),
    )
    assert entries["leader.replication.throttled.replicas"].synonyms == ()


def test_describe_overrides() -> None:
    entries = _entries(
        {
            "retention.ms": "0100",
            "segment.ms": "3600000",
            "cleanup.policy": " compact , delete ",
            "min.cleanable.dirty.ratio": "0.50",
            "preallocate": "TRUE",
        }
    )
    retention = entries["retention.ms"]
    assert (retention.value, retention.source) == ("100", ConfigSource.TOPIC_CONFIG)
    assert retention.synonyms == (ConfigSynonym("retention.ms", "100", ConfigSource.TOPIC_CONFIG),)
    assert entries["segment.ms"].synonyms == (
        ConfigSynonym("segment.ms", "3600000", ConfigSource.TOPIC_CONFIG),
    )
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.source) == ("compact,delete", ConfigSource.TOPIC_CONFIG)
    assert policy.synonyms == (
        ConfigSynonym("cleanup.policy", "compact,delete", ConfigSource.TOPIC_CONFIG),
        ConfigSynonym("log.cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG),
    )
    assert entries["min.cleanable.dirty.ratio"].value == "0.5"
    assert entries["preallocate"].value == "true"
    assert entries["segment.bytes"].source is ConfigSource.DEFAULT_CONFIG


def test_describe_unknown_override_keys() -> None:
    entry = _entries({"foo.bar": "x"})["foo.bar"]
    assert entry == ConfigEntry(
        name="foo.bar",
        value=None,
        source=ConfigSource.TOPIC_CONFIG,
        is_sensitive=True,
        read_only=False,
        config_type=ConfigType.UNKNOWN,
        synonyms=(ConfigSynonym("foo.bar", None, ConfigSource.TOPIC_CONFIG),),
        documentation=None,
    )
    before_2_6 = _entries({"foo.bar": "x"}, (2, 5))["foo.bar"]
    assert (before_2_6.value, before_2_6.is_sensitive) == ("x", False)


def test_describe_internal_keys_only_when_overridden() -> None:
    assert "local.retention.ms" not in _entries({}, (3, 3))
    entry = _entries({"local.retention.ms": "1000"}, (3, 3))["local.retention.ms"]
    assert (entry.value, entry.config_type, entry.source) == (
        "1000",
        ConfigType.LONG,
        ConfigSource.TOPIC_CONFIG,
    )
    public = _entries({}, (3, 6))["local.retention.ms"]
    assert public.synonyms == (
        ConfigSynonym("log.local.retention.ms", "-2", ConfigSource.DEFAULT_CONFIG),
    )


def test_describe_release_specific_values() -> None:
    assert _entries({}, (3, 9))["message.format.version"].synonyms == (
        ConfigSynonym("log.message.format.version", "3.0-IV1", ConfigSource.DEFAULT_CONFIG),
    )
    assert _entries({}, (2, 4))["max.message.bytes"].synonyms == (
        ConfigSynonym("message.max.bytes", "1000012", ConfigSource.DEFAULT_CONFIG),
    )
    assert _entries({}, (3, 8))["compression.zstd.level"].value == "3"


def test_describe_refuses_an_unreadable_override() -> None:
    with pytest.raises(InvalidConfig) as info:
        describe_topic_config("t", {"retention.ms": "abc"}, (2, 8), default_broker((2, 8)))
    assert info.value.error_code == error_codes.UNKNOWN_SERVER_ERROR
