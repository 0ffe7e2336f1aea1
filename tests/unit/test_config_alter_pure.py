"""Pure rules of the config APIs: incremental ops, entry checks, resource naming, loggers."""

from __future__ import annotations

import pytest

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.rules.broker_loggers import BrokerLoggers, LoggerOpError
from zkbroker.broker.rules.config_def import InvalidConfig
from zkbroker.handlers.support.config_alter import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    Op,
    apply_incremental,
    check_entries,
    config_failure,
    java_split,
    topic_key_lookup,
)
from zkbroker.handlers.support.config_resources import (
    ResourceError,
    entries_filtered,
    parse_broker_id,
    resource_text,
    type_name,
)

LOOKUP = topic_key_lookup((2, 8))


def test_java_split() -> None:
    assert java_split("") == [""]
    assert java_split("a") == ["a"]
    assert java_split("a,b,,") == ["a", "b"]
    assert java_split(",") == []
    assert java_split(",a") == ["", "a"]


def test_append_starts_from_the_default_and_subtract_is_a_multiset_difference() -> None:
    assert apply_incremental([Op("cleanup.policy", APPEND, "compact")], {}, LOOKUP) == {
        "cleanup.policy": "delete,compact"
    }
    props = {"cleanup.policy": "compact,delete,compact"}
    assert apply_incremental([Op("cleanup.policy", SUBTRACT, "compact")], props, LOOKUP) == {
        "cleanup.policy": "delete,compact"
    }
    # an empty default list splits into one empty element, as Java's String.split does
    assert apply_incremental(
        [Op("leader.replication.throttled.replicas", APPEND, "0:1")], {}, LOOKUP
    ) == {"leader.replication.throttled.replicas": ",0:1"}


def test_ops_apply_in_order() -> None:
    ops = [Op("retention.ms", SET, "1"), Op("segment.ms", DELETE, None), Op("x", SET, "2")]
    assert apply_incremental(ops, {"segment.ms": "5"}, LOOKUP) == {"retention.ms": "1", "x": "2"}


def test_append_refusals() -> None:
    with pytest.raises(ResourceError) as info:
        apply_incremental([Op("retention.ms", SUBTRACT, "1")], {}, LOOKUP)
    assert (info.value.code, info.value.message) == (
        ec.INVALID_REQUEST,
        "Config value subtract is not allowed for config key: retention.ms",
    )
    with pytest.raises(ResourceError) as info:
        apply_incremental([Op("nope", APPEND, "1")], {}, LOOKUP)
    assert (info.value.code, info.value.message) == (ec.UNKNOWN_SERVER_ERROR, None)
    with pytest.raises(ResourceError) as info:
        apply_incremental([Op("retention.ms", 7, "1")], {}, LOOKUP)
    assert info.value.code == ec.UNKNOWN_SERVER_ERROR


@pytest.mark.parametrize(
    ("release", "incremental", "message"),
    [
        ((2, 8), True, "Null value not supported for : SET:a,APPEND:b"),
        ((2, 8), False, "Null value not supported for : a,b"),
        ((3, 2), True, "Null value not supported for : a, b"),
    ],
)
def test_null_values(release: tuple[int, ...], incremental: bool, message: str) -> None:
    ops = [Op("a", SET, None), Op("b", APPEND if incremental else SET, None), Op("c", DELETE, None)]
    if not incremental:
        ops = ops[:2]
    with pytest.raises(ResourceError) as info:
        check_entries(ops, release, incremental=incremental)
    assert (info.value.code, info.value.message) == (ec.INVALID_REQUEST, message)


def test_duplicate_keys() -> None:
    ops = [Op("b", SET, "1"), Op("a", SET, "1"), Op("b", DELETE, None), Op("a", SET, "2")]
    with pytest.raises(ResourceError) as info:
        check_entries(ops, (2, 8), incremental=True)
    assert info.value.message == "Error due to duplicate config keys : a,b"
    with pytest.raises(ResourceError) as info:
        check_entries(ops, (3, 5), incremental=False)
    assert info.value.message == "Error due to duplicate config keys"
    check_entries(ops[:2], (2, 8), incremental=False)  # legacy 2.8: the last one wins, no error


def test_config_failure_codes_and_prefix() -> None:
    bad = InvalidConfig("Invalid value x for configuration y: z", config_exception=True)
    before = config_failure(bad, 4, "", (3, 2))
    after = config_failure(bad, 4, "", (3, 3))
    assert (before.code, after.code) == (ec.INVALID_REQUEST, ec.INVALID_CONFIG)
    assert before.message == (
        "Invalid config value for resource ConfigResource(type=BROKER, name=''): "
        "Invalid value x for configuration y: z"
    )
    unknown = config_failure(InvalidConfig("Unknown topic config name: q"), 2, "t", (2, 8))
    assert (unknown.code, unknown.message) == (ec.INVALID_CONFIG, "Unknown topic config name: q")


def test_config_failure_for_a_topic_resource() -> None:
    bad = InvalidConfig(
        "Invalid value abc for configuration retention.ms: Not a number of type LONG",
        config_exception=True,
    )
    prefixed = (
        "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): " + bad.message
    )
    old = config_failure(bad, 2, "t", (2, 8))
    assert (old.code, old.message) == (ec.INVALID_REQUEST, prefixed)
    new = config_failure(bad, 2, "t", (3, 3))
    assert (new.code, new.message) == (ec.INVALID_CONFIG, prefixed)
    ancient = config_failure(bad, 2, "t", (1, 1))
    assert ancient.message is not None
    assert ancient.message.startswith(
        "Invalid config value for resource Resource(type=TOPIC, name='t'}: "
    )
    unknown = InvalidConfig("Unknown topic config name: x")
    assert config_failure(unknown, 2, "t", (2, 8)).code == ec.INVALID_CONFIG
    assert config_failure(unknown, 2, "t", (2, 8)).message == unknown.message


def test_resource_naming() -> None:
    assert type_name(8, (2, 3)) == "UNKNOWN" and type_name(8, (2, 4)) == "BROKER_LOGGER"
    assert type_name(16, (3, 7)) == "CLIENT_METRICS" and type_name(99, (3, 9)) == "UNKNOWN"
    assert resource_text(2, "t", (1, 1)) == "Resource(type=TOPIC, name='t'}"


@pytest.mark.parametrize("name", ["", "x", "1.0", " 1", "2147483648", "--1", "1_0"])
def test_parse_broker_id_refuses_what_java_refuses(name: str) -> None:
    with pytest.raises(ResourceError) as info:
        parse_broker_id(name)
    assert info.value.message == f"Broker id must be an integer, but it is: {name}"


def test_parse_broker_id_accepts_what_java_accepts() -> None:
    assert [parse_broker_id(n) for n in ("0", "+7", "-1", "007")] == [0, 7, -1, 7]
    assert parse_broker_id("\u0661") == 1  # ARABIC-INDIC DIGIT ONE: Character.digit reads it
    with pytest.raises(ResourceError) as info:
        parse_broker_id("q", node_wording=True)
    assert info.value.message == "Node id must be an integer, but it is: q"


def test_entries_filtered() -> None:
    assert entries_filtered(["a", "b"], None) == ["a", "b"]
    assert entries_filtered(["a", "b"], []) == ["a", "b"]
    assert entries_filtered(["a", "b"], ["b", "zz"]) == ["b"]


def test_loggers_inherit_and_reset() -> None:
    loggers = BrokerLoggers((2, 8))
    assert loggers.effective("kafka.controller.KafkaController") == "TRACE"
    assert loggers.effective("kafka.server.KafkaApis") == "INFO"
    loggers.apply(SET, "kafka.server.KafkaApis", "debug")
    assert loggers.describe()["kafka.server.KafkaApis"] == "DEBUG"
    loggers.apply(DELETE, "kafka.server.KafkaApis", None)
    assert loggers.describe()["kafka.server.KafkaApis"] == "INFO"
    assert "org.apache.kafka.controller" not in loggers.describe()
    assert "org.apache.kafka.controller" in BrokerLoggers((3, 0)).describe()


@pytest.mark.parametrize(
    ("release", "code", "order"),
    [
        ((2, 8), ec.INVALID_REQUEST, "TRACE, ERROR, INFO, FATAL, DEBUG, WARN"),
        ((3, 2), ec.INVALID_CONFIG, "TRACE, ERROR, INFO, FATAL, DEBUG, WARN"),
        ((3, 7), ec.INVALID_CONFIG, "DEBUG, ERROR, FATAL, INFO, TRACE, WARN"),
    ],
)
def test_logger_level_errors(release: tuple[int, ...], code: int, order: str) -> None:
    loggers = BrokerLoggers(release)
    with pytest.raises(LoggerOpError) as info:
        loggers.check_op(SET, "kafka", "debug")  # Kafka compares case-sensitively
    assert info.value.code == code
    assert info.value.message == (
        "Cannot set the log level of kafka to debug as it is not a supported log level. "
        f"Valid log levels are {order}"
    )
    with pytest.raises(LoggerOpError) as info:
        loggers.check_op(APPEND, "kafka", "x")
    assert info.value.message == "APPEND operation is not allowed for the BROKER_LOGGER resource"
