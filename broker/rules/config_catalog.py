"""Kafka's topic-config catalog: every topic config of every emulated release, as data.

Pure code. `TOPIC_CONFIG_KEYS` holds one `ConfigKey` per variant (a key whose type, default or
validator changed has one record per release range); `topic_config_keys(release)` picks one
release's. `validate_topic_configs` is `LogConfig.validate` as CreateTopics and AlterConfigs
run it; `describe_topic_config` the entries DescribeConfigs reports, the broker's part coming
from `BrokerLogDefaults` (`zkbroker.broker.rules.broker_config`) (docs/kafka-behaviour.md §4.1,
§4.3). Documentation is left None here (the handler adds zkbroker's own text).

Not here: the value engine (`zkbroker.broker.rules.config_def`), broker configs
(`broker_config_catalog`, `broker_config`), null values (refused by the handlers), the error code
other APIs answer (`InvalidConfig.for_create_topics`, `config_alter.config_failure`), tiered
storage beyond its enable flag. Approximations: 0.10.x order assumes Java 8's HashMap, several
unknown names come in the caller's order, DOUBLEs print as JDK 19+'s `Double.toString`.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Mapping
from functools import cache
from typing import Protocol

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.config_def import (
    LONG_MAX,
    ConfigEntry,
    ConfigKey,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    ConfigValue,
    GzipLevel,
    InvalidConfig,
    ThrottledReplicaList,
    Validator,
    ValidList,
    ValidString,
    at_least,
    between,
    config_error,
    message_format_version_default,
    parse_value,
    render_value,
    validate_value,
    version_key_eras,
)
from zkbroker.broker.rules.jvm_collections import java_hashmap_order
from zkbroker.zk_layout.release import Release, normalize_release

__all__ = [
    "TOPIC_CONFIG_KEYS",
    "BrokerLogDefaults",
    "describe_topic_config",
    "key_since",
    "topic_config_keys",
    "validate_topic_configs",
]


# --------------------------------------------------------------------------------------------
# The catalog

_LONG_MAX_TEXT = str(LONG_MAX)
_COMPRESSION_BEFORE_2_1 = ("uncompressed", "snappy", "lz4", "gzip", "producer")
_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

_THROTTLED_ERAS: tuple[tuple[Release, Release | None, ThrottledReplicaList], ...] = (
    ((0, 10, 1), (1, 0), ThrottledReplicaList(wildcard_by_join=False, message_style=0)),
    ((1, 0), (2, 3), ThrottledReplicaList(wildcard_by_join=False, message_style=1)),
    ((2, 3), (2, 8), ThrottledReplicaList(wildcard_by_join=False, message_style=2)),
    ((2, 8), None, ThrottledReplicaList(wildcard_by_join=True, message_style=2)),
)


def _message_format_version_keys() -> list[ConfigKey]:
    return [
        ConfigKey(
            "message.format.version",
            ConfigType.STRING,
            message_format_version_default(since),
            validator,
            ("log.message.format.version",),
            since=since,
            until=until,
        )
        for since, until, validator in version_key_eras()
    ]


def _throttled_keys(name: str) -> list[ConfigKey]:
    return [
        ConfigKey(name, ConfigType.LIST, "", validator, since=since, until=until)
        for since, until, validator in _THROTTLED_ERAS
    ]


def _remote_keys(name: str, type_: ConfigType, default: str, validator: Validator | None,
                 synonyms: tuple[str, ...]) -> list[ConfigKey]:  # fmt: skip
    """Defined publicly in 3.0, internal (settable, hidden) in 3.1-3.5, public again in 3.6."""
    return [
        ConfigKey(name, type_, default, validator, since=(3, 0), until=(3, 1)),
        ConfigKey(name, type_, default, validator, since=(3, 1), until=(3, 6), internal=True),
        ConfigKey(name, type_, default, validator, synonyms, since=(3, 6)),
    ]


_L = ConfigType.LONG
_I = ConfigType.INT
_B = ConfigType.BOOLEAN
_S = ConfigType.STRING

# In Kafka's definition order (the order ConfigDef.parse reports the first bad value in).
TOPIC_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("segment.bytes", _I, "1073741824", at_least(14), ("log.segment.bytes",)),
    ConfigKey("segment.ms", _L, "604800000", at_least(0), ("log.roll.ms", "log.roll.hours"),
              until=(2, 0)),
    ConfigKey("segment.ms", _L, "604800000", at_least(1), ("log.roll.ms", "log.roll.hours"),
              since=(2, 0)),
    ConfigKey("segment.jitter.ms", _L, "0", at_least(0),
              ("log.roll.jitter.ms", "log.roll.jitter.hours")),
    ConfigKey("segment.index.bytes", _I, "10485760", at_least(0), ("log.index.size.max.bytes",),
              until=(3, 3)),
    ConfigKey("segment.index.bytes", _I, "10485760", at_least(4), ("log.index.size.max.bytes",),
              since=(3, 3)),
    ConfigKey("flush.messages", _L, _LONG_MAX_TEXT, at_least(0),
              ("log.flush.interval.messages",), until=(3, 3)),
    ConfigKey("flush.messages", _L, _LONG_MAX_TEXT, at_least(1),
              ("log.flush.interval.messages",), since=(3, 3)),
    ConfigKey("flush.ms", _L, _LONG_MAX_TEXT, at_least(0),
              ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")),
    ConfigKey("retention.bytes", _L, "-1", None, ("log.retention.bytes",)),
    ConfigKey("retention.ms", _L, "604800000", None,
              ("log.retention.ms", "log.retention.minutes", "log.retention.hours"), until=(2, 2)),
    ConfigKey("retention.ms", _L, "604800000", at_least(-1),
              ("log.retention.ms", "log.retention.minutes", "log.retention.hours"), since=(2, 2)),
    ConfigKey("max.message.bytes", _I, "1000012", at_least(0), ("message.max.bytes",),
              until=(2, 5)),
    ConfigKey("max.message.bytes", _I, "1048588", at_least(0), ("message.max.bytes",),
              since=(2, 5)),
    ConfigKey("index.interval.bytes", _I, "4096", at_least(0), ("log.index.interval.bytes",)),
    ConfigKey("delete.retention.ms", _L, "86400000", at_least(0),
              ("log.cleaner.delete.retention.ms",)),
    ConfigKey("min.compaction.lag.ms", _L, "0", at_least(0),
              ("log.cleaner.min.compaction.lag.ms",), since=(0, 10, 1)),
    ConfigKey("max.compaction.lag.ms", _L, _LONG_MAX_TEXT, at_least(1),
              ("log.cleaner.max.compaction.lag.ms",), since=(2, 3)),
    ConfigKey("file.delete.delay.ms", _L, "60000", at_least(0), ("log.segment.delete.delay.ms",)),
    ConfigKey("min.cleanable.dirty.ratio", ConfigType.DOUBLE, "0.5", between(0, 1),
              ("log.cleaner.min.cleanable.ratio",)),
    ConfigKey("cleanup.policy", _S, "delete", ValidString(("compact", "delete")),
              ("log.cleanup.policy",), until=(0, 10, 1)),
    ConfigKey("cleanup.policy", ConfigType.LIST, "delete", ValidList(("compact", "delete")),
              ("log.cleanup.policy",), since=(0, 10, 1)),
    ConfigKey("unclean.leader.election.enable", _B, "true", None,
              ("unclean.leader.election.enable",), until=(0, 11)),
    ConfigKey("unclean.leader.election.enable", _B, "false", None,
              ("unclean.leader.election.enable",), since=(0, 11)),
    ConfigKey("min.insync.replicas", _I, "1", at_least(1), ("min.insync.replicas",)),
    ConfigKey("compression.type", _S, "producer", ValidString(_COMPRESSION_BEFORE_2_1),
              ("compression.type",), until=(2, 1)),
    ConfigKey("compression.type", _S, "producer", ValidString(_COMPRESSION),
              ("compression.type",), since=(2, 1)),
    ConfigKey("compression.gzip.level", _I, "-1", GzipLevel(), ("compression.gzip.level",),
              since=(3, 8)),
    ConfigKey("compression.lz4.level", _I, "9", between(1, 17), ("compression.lz4.level",),
              since=(3, 8)),
    ConfigKey("compression.zstd.level", _I, "3", between(-131072, 22),
              ("compression.zstd.level",), since=(3, 8)),
    ConfigKey("preallocate", _B, "false", None, ("log.preallocate",)),
    *_message_format_version_keys(),
    ConfigKey("message.timestamp.type", _S, "CreateTime", None, ("log.message.timestamp.type",),
              until=(2, 0)),
    ConfigKey("message.timestamp.type", _S, "CreateTime",
              ValidString(("CreateTime", "LogAppendTime")), ("log.message.timestamp.type",),
              since=(2, 0)),
    ConfigKey("message.timestamp.difference.max.ms", _L, _LONG_MAX_TEXT, at_least(0),
              ("log.message.timestamp.difference.max.ms",)),
    ConfigKey("message.timestamp.before.max.ms", _L, _LONG_MAX_TEXT, at_least(0),
              ("log.message.timestamp.before.max.ms",), since=(3, 6)),
    ConfigKey("message.timestamp.after.max.ms", _L, _LONG_MAX_TEXT, at_least(0),
              ("log.message.timestamp.after.max.ms",), since=(3, 6)),
    *_throttled_keys("leader.replication.throttled.replicas"),
    *_throttled_keys("follower.replication.throttled.replicas"),
    ConfigKey("message.downconversion.enable", _B, "true", None,
              ("log.message.downconversion.enable",), since=(2, 0)),
    *_remote_keys("remote.storage.enable", _B, "false", None, ()),
    *_remote_keys("local.retention.ms", _L, "-2", at_least(-2), ("log.local.retention.ms",)),
    *_remote_keys("local.retention.bytes", _L, "-2", at_least(-2),
                  ("log.local.retention.bytes",)),
    ConfigKey("remote.log.copy.disable", _B, "false", None, since=(3, 9)),
    ConfigKey("remote.log.delete.on.disable", _B, "false", None, since=(3, 9)),
)  # fmt: skip


@cache
def _keys_in_definition_order(release: Release, include_internal: bool) -> tuple[ConfigKey, ...]:
    keys = [
        k
        for k in TOPIC_CONFIG_KEYS
        if k.applies_to(release) and (include_internal or not k.internal)
    ]
    if release < (0, 11):  # ConfigDef kept its keys in a HashMap before 0.11
        by_name = {k.name: k for k in keys}
        keys = [by_name[n] for n in java_hashmap_order(by_name)]
    return tuple(keys)


def topic_config_keys(release: Release, *, include_internal: bool = False) -> dict[str, ConfigKey]:
    """The topic configs of `release`, ordered by name. Internal keys (remote storage in
    3.1-3.5) are valid names but left out unless `include_internal`."""
    keys = _keys_in_definition_order(normalize_release(release), include_internal)
    return {k.name: k for k in sorted(keys, key=lambda k: k.name)}


def key_since(name: str) -> Release | None:
    """The first release that defines topic config `name` (None if none does)."""
    sinces = [k.since for k in TOPIC_CONFIG_KEYS if k.name == name]
    return min(sinces, key=normalize_release) if sinces else None


# --------------------------------------------------------------------------------------------
# Validation (LogConfig.validate and what ZkAdminManager/AdminZkClient wrap around it)


def _unknown_name_message(name: str, release: Release) -> str:
    if release < (0, 10, 1):
        return f"requirement failed: Unknown configuration `{name}`."
    if release < (0, 11):
        return f"Unknown Log configuration {name}."
    return f"Unknown topic config name: {name}"


def validate_topic_configs(
    configs: Mapping[str, str | None],
    release: Release,
    *,
    remote_storage_system_enabled: bool = False,
) -> None:
    """Raise InvalidConfig (code 40) if Kafka's LogConfig.validate refuses `configs`.

    Order: unknown names (caller's order); each value parsed and validated in Kafka's definition
    order, so the first bad one in that order is reported; min.compaction.lag.ms >
    max.compaction.lag.ms (2.3+); 3.9's ZK-mode refusal of remote.log.copy.disable /
    remote.log.delete.on.disable; 3.6+ remote.storage.enable on a broker without tiered storage.
    """
    r = normalize_release(release)
    keys = _keys_in_definition_order(r, True)
    known = {k.name for k in keys}
    for name in configs:
        if name not in known:
            raise InvalidConfig(_unknown_name_message(name, r))
    values: dict[str, ConfigValue] = {}
    for key in keys:
        text = configs.get(key.name)
        if text is None:
            assert key.default is not None, key.name
            values[key.name] = parse_value(key, key.default)
        else:
            values[key.name] = validate_value(key, text)
    if r >= (2, 3):
        low, high = values["min.compaction.lag.ms"], values["max.compaction.lag.ms"]
        assert isinstance(low, int) and isinstance(high, int)
        if low > high:
            raise InvalidConfig(
                "conflict topic config setting min.compaction.lag.ms "
                f"({low}) > max.compaction.lag.ms ({high})"
            )
    if r >= (3, 6):
        _validate_remote_storage(values, r, remote_storage_system_enabled)


def _validate_remote_storage(
    values: Mapping[str, ConfigValue], release: Release, system_enabled: bool
) -> None:
    if release >= (3, 9) and (
        values["remote.log.delete.on.disable"] is True or values["remote.log.copy.disable"] is True
    ):
        raise InvalidConfig(
            "It is invalid to set `remote.log.delete.on.disable` or "
            "`remote.log.copy.disable` under Zookeeper's mode."
        )
    if values["remote.storage.enable"] is not True:
        return
    if not system_enabled:
        raise InvalidConfig(
            "Tiered Storage functionality is disabled in the broker. "
            "Topic cannot be configured with remote log storage.",
            config_exception=True,
        )
    policy = values["cleanup.policy"]
    if isinstance(policy, list) and any("compact" in p.lower() for p in policy):
        raise InvalidConfig(
            "Remote log storage is unsupported for the compacted topics", config_exception=True
        )
    total_bytes, local_bytes = values["retention.bytes"], values["local.retention.bytes"]
    assert isinstance(total_bytes, int) and isinstance(local_bytes, int)
    if total_bytes > -1:
        _check_local_retention("local.retention.bytes", local_bytes, "retention.bytes", total_bytes)
    total_ms, local_ms = values["retention.ms"], values["local.retention.ms"]
    assert isinstance(total_ms, int) and isinstance(local_ms, int)
    if total_ms != -1:
        _check_local_retention("local.retention.ms", local_ms, "retention.ms", total_ms)


def _check_local_retention(local_name: str, local: int, total_name: str, total: int) -> None:
    if local == -2:  # derived from the total
        return
    if local == -1:
        raise config_error(
            local_name, "-1", f"Value must not be -1 as {total_name} value is set as {total}."
        )
    if local > total:
        raise config_error(
            local_name,
            str(local),
            f"Value must not be more than {total_name} property value: {total}",
        )


# --------------------------------------------------------------------------------------------
# DescribeConfigs (ConfigHelper.createTopicConfigEntry)


class BrokerLogDefaults(Hashable, Protocol):
    """What a broker's own configuration contributes to a topic's described configs
    (implemented by `zkbroker.broker.rules.broker_config.BrokerConfig`; must be hashable)."""

    def topic_value(self, key: ConfigKey) -> str | None: ...

    def topic_synonyms(self, key: ConfigKey) -> list[ConfigSynonym]: ...


def describe_topic_config(
    topic: str,
    overrides: Mapping[str, str],
    release: Release,
    broker: BrokerLogDefaults,
) -> list[ConfigEntry]:
    """Every config DescribeConfigs lists for `topic` with these znode overrides, sorted by name.

    Public keys of the release plus every override (internal and unknown keys too). An unknown
    key has type UNKNOWN and, from 2.6, is treated as sensitive (value null); before 2.6 its raw
    value was shown. An override that does not parse or validate raises InvalidConfig with
    UNKNOWN_SERVER_ERROR: Kafka fails building the topic's LogConfig and answers -1 (message null).
    `topic` is not needed for the answer; it is taken for the handlers' convenience.

    `broker` supplies the values and synonyms the broker's own configs give the keys the topic
    does not override.
    """
    # Most topics share their overrides (often none): the answer is computed once per set.
    return list(
        _describe_cached(tuple(sorted(overrides.items())), normalize_release(release), broker)
    )


@functools.lru_cache(maxsize=1024)
def _describe_cached(
    overrides_items: tuple[tuple[str, str], ...], r: Release, broker: BrokerLogDefaults
) -> tuple[ConfigEntry, ...]:
    overrides = dict(overrides_items)
    every = {k.name: k for k in _keys_in_definition_order(r, True)}
    names = {k.name for k in every.values() if not k.internal} | set(overrides)
    entries = []
    for name in sorted(names):
        key = every.get(name)
        overridden = name in overrides
        if key is None:
            sensitive = r >= (2, 6)
            value = None if sensitive else overrides[name]
            config_type = ConfigType.UNKNOWN
            from_broker: list[ConfigSynonym] = []
        else:
            sensitive = key.sensitive or key.type is ConfigType.PASSWORD
            if overridden:
                try:
                    value = render_value(key, validate_value(key, overrides[name]))
                except InvalidConfig as e:
                    raise InvalidConfig(
                        e.message, error_codes.UNKNOWN_SERVER_ERROR, config_exception=True
                    ) from e
            else:
                value = broker.topic_value(key)
            if sensitive:
                value = None
            config_type = key.type
            from_broker = broker.topic_synonyms(key)
        synonyms = (
            [ConfigSynonym(name, value, ConfigSource.TOPIC_CONFIG), *from_broker]
            if overridden
            else from_broker
        )
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=source,
                is_sensitive=sensitive,
                read_only=False,
                config_type=config_type,
                synonyms=tuple(synonyms),
                documentation=None,
            )
        )
    return tuple(entries)
