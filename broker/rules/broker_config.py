"""The configuration one broker runs with, layered as Kafka's KafkaConfig + DynamicBrokerConfig.

Four layers, highest first: `/config/brokers/<id>`, `/config/brokers/<default>`, the static
configs (zkbroker's server.properties), the release's ConfigDef defaults
(docs/kafka-behaviour.md §4.1 "Dynamic broker configs", §4.3). `BrokerConfig.build` keeps
what Kafka's `fromPersistentProps` keeps; password configs are left out too (zkbroker has no
password encoder secret to decode them). It answers `describe` (a BROKER resource),
`config_synonyms` (`ConfigHelper.configSynonyms`, with its `dropWhile`) and, as the
`BrokerLogDefaults` of `zkbroker.broker.rules.config_catalog`, the broker's value of a topic
config. Frozen and hashable, so the topic-describe cache can key on it.

Not here: reading ZooKeeper (the config watcher fills the image), validating an alter request
(`zkbroker.handlers.support.config_alter`), broker loggers (`zkbroker.broker.rules.broker_loggers`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from types import MappingProxyType

from zkbroker.broker.rules.broker_config_catalog import (
    broker_config_key,
    broker_config_keys,
    broker_synonyms,
    read_only_in_describe,
)
from zkbroker.broker.rules.broker_config_validation import validate_broker_configs
from zkbroker.broker.rules.config_def import (
    ConfigEntry,
    ConfigKey,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    InvalidConfig,
    parse_value,
    render_value,
)
from zkbroker.zk_layout.release import Release, normalize_release

Items = tuple[tuple[str, str], ...]

_HOUR_MS = 60 * 60 * 1000
_MINUTE_MS = 60 * 1000


def _items(configs: Mapping[str, str]) -> Items:
    return tuple(sorted(configs.items()))


@cache
def _defaults(release: Release) -> Mapping[str, str]:
    """The ConfigDef defaults of `release` (the lowest layer), built once per release."""
    keys = broker_config_keys(release, include_internal=True)
    return MappingProxyType({name: k.default for name, k in keys.items() if k.default is not None})


def from_persistent(
    configs: Mapping[str, str], release: Release, *, per_broker: bool
) -> dict[str, str]:
    """The entries of a `/config/brokers/<entity>` node a broker applies (fromPersistentProps)."""
    kept: dict[str, str] = {}
    for name, value in configs.items():
        key = broker_config_key(name, release)
        if key is not None and key.type is ConfigType.PASSWORD:
            continue  # stored encoded; without the encoder secret Kafka ignores it too
        try:
            validate_broker_configs(
                {name: value}, release, per_broker=per_broker, reconfiguration=False
            )
        except InvalidConfig:
            continue
        kept[name] = value
    return kept


def configured_int(value: Callable[[str], str | None], name: str, default: int) -> int:
    """An integer setting from a config lookup (`BrokerConfig.configured`): `default` when it
    is not set or not a number (the coordinators' settings, read once at their start)."""
    text = value(name)
    try:
        return int(text.strip()) if text is not None else default
    except ValueError:
        return default


@dataclass(frozen=True)
class BrokerConfig:
    broker_id: int
    release: Release
    static: Items = ()
    dynamic_default: Items = ()
    dynamic_broker: Items = ()

    @classmethod
    def build(
        cls,
        broker_id: int,
        release: Release,
        static: Mapping[str, str],
        default_overrides: Mapping[str, str],
        broker_overrides: Mapping[str, str],
    ) -> BrokerConfig:
        r = normalize_release(release)
        return cls(
            broker_id,
            r,
            _items(static),
            _items(from_persistent(default_overrides, r, per_broker=False)),
            _items(from_persistent(broker_overrides, r, per_broker=True)),
        )

    # ---- layers ------------------------------------------------------------------------

    @cached_property
    def _layers(self) -> tuple[tuple[Mapping[str, str], ConfigSource], ...]:
        return (
            (dict(self.dynamic_broker), ConfigSource.DYNAMIC_BROKER_CONFIG),
            (dict(self.dynamic_default), ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (dict(self.static), ConfigSource.STATIC_BROKER_CONFIG),
            (_defaults(self.release), ConfigSource.DEFAULT_CONFIG),
        )

    def configured(self, name: str) -> str | None:
        """The raw text of the highest layer that sets `name` (None: no layer does)."""
        for layer, _ in self._layers:
            if name in layer:
                return layer[name]
        return None

    def effective_overrides(self) -> dict[str, str]:
        """Every configured (non-default) entry with the value that applies."""
        merged = dict(self.static)
        merged.update(self.dynamic_default)
        merged.update(self.dynamic_broker)
        return merged

    def value(self, name: str) -> str | None:
        """The effective value as DescribeConfigs renders it (None for a null default)."""
        text = self.configured(name)
        key = broker_config_key(name, self.release)
        if text is None or key is None:
            return text
        try:
            return render_value(key, parse_value(key, text))
        except InvalidConfig:
            return text

    def _int(self, name: str) -> int | None:
        text = self.configured(name)
        return None if text is None else int(text.strip())

    def config_synonyms(
        self, name: str, names: Iterable[str], sensitive: bool
    ) -> list[ConfigSynonym]:
        """ConfigHelper.configSynonyms: every layer in order, each listing the synonyms it
        sets, then `dropWhile(name != described)`."""
        names = list(names)
        found = [
            ConfigSynonym(n, None if sensitive else layer[n], source)
            for layer, source in self._layers
            for n in names
            if n in layer
        ]
        while found and found[0].name != name:
            found.pop(0)
        return found

    # ---- BROKER resources ----------------------------------------------------------------

    def describe(self, *, per_broker: bool) -> list[ConfigEntry]:
        """DescribeConfigs entries for this broker's id (per_broker) or the default resource,
        sorted by name."""
        if per_broker:
            names = set(broker_config_keys(self.release))
            for layer in (self.static, self.dynamic_default, self.dynamic_broker):
                names.update(n for n, _ in layer)
            if normalize_release(self.release) < (1, 1):
                # AdminManager 0.11-1.0 lists `config.values` only: originals that are not
                # KafkaConfig keys (super.users, allow.everyone.if.no.acl.found) are left out;
                # 1.1+ adds `config.originals`, shown as sensitive (ConfigHelper.allConfigs).
                names = {n for n in names if broker_config_key(n, self.release) is not None}
        else:
            names = {n for n, _ in self.dynamic_default}
        return [self._entry(name, per_broker) for name in sorted(names)]

    def _entry(self, name: str, per_broker: bool) -> ConfigEntry:
        key = broker_config_key(name, self.release)
        config_type = key.type if key is not None else ConfigType.UNKNOWN
        sensitive = key is None or key.type is ConfigType.PASSWORD
        if sensitive:
            value = None
        elif per_broker:
            value = self.value(name)
        else:
            value = dict(self.dynamic_default)[name]  # Kafka shows the stored text as is
        synonyms = self.config_synonyms(name, broker_synonyms(name, self.release), sensitive)
        if not per_broker:
            default_layer = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            synonyms = [s for s in synonyms if s.source is default_layer]
        return ConfigEntry(
            name=name,
            value=value,
            source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
            is_sensitive=sensitive,
            read_only=read_only_in_describe(name, self.release),
            config_type=config_type,
            synonyms=tuple(synonyms),
        )

    # ---- topic defaults (config_catalog.BrokerLogDefaults) -------------------------------

    def topic_value(self, key: ConfigKey) -> str | None:
        """What a topic that does not override `key` gets from this broker
        (LogConfig.extractLogConfigMap), rendered as the topic config."""
        if not key.broker_synonyms:
            return key.default
        derived = self._derived_log_value(key.name)
        if derived is None:
            mapped = key.broker_synonyms[0]
            if broker_config_key(mapped, self.release) is None:
                return key.default  # a broker key this release does not have
            derived = self.configured(mapped)
        if derived is None:
            return key.default
        try:
            return render_value(key, parse_value(key, derived))
        except InvalidConfig:
            return key.default

    def _derived_log_value(self, topic_key: str) -> str | None:
        """The topic keys whose broker value combines several broker keys."""
        if topic_key == "retention.ms":
            ms = self._int("log.retention.ms")
            if ms is None:
                minutes = self._int("log.retention.minutes")
                ms = minutes * _MINUTE_MS if minutes is not None else None
            if ms is None:
                ms = (self._int("log.retention.hours") or 0) * _HOUR_MS
            return str(-1 if ms < 0 else ms)
        if topic_key == "segment.ms":
            ms = self._int("log.roll.ms")
            return str(ms if ms is not None else (self._int("log.roll.hours") or 0) * _HOUR_MS)
        if topic_key == "segment.jitter.ms":
            ms = self._int("log.roll.jitter.ms")
            if ms is None:
                ms = (self._int("log.roll.jitter.hours") or 0) * _HOUR_MS
            return str(ms)
        if topic_key == "flush.ms":
            ms = self._int("log.flush.interval.ms")
            return str(ms if ms is not None else self._int("log.flush.scheduler.interval.ms"))
        return None

    def topic_synonyms(self, key: ConfigKey) -> list[ConfigSynonym]:
        """The broker synonyms DescribeConfigs lists for topic config `key`."""
        if not key.broker_synonyms:
            return []
        mapped = key.broker_synonyms[0]
        return self.config_synonyms(mapped, key.broker_synonyms, sensitive=False)
