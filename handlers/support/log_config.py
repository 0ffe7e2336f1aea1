"""A topic's effective log configuration: its overrides over the leader broker's defaults.

Kafka builds a partition's `LogConfig` from the topic's `/config/topics/<t>` overrides laid
over the broker's log defaults (`LogConfig.fromProps(kafkaConfig.extractLogConfigMap, props)`,
docs/kafka-behaviour.md §10). The data-plane handlers need a handful of those values per
request, so the result is computed once per (overrides, broker config, release) and cached.

* `TopicLogConfig.validation` is what `zkbroker.broker.rules.log_validation` takes; the timestamp
  window is `message.timestamp.before/after.max.ms` from 3.6 (KIP-937), else
  `message.timestamp.difference.max.ms` on both sides.
* An override that does not parse falls back to the broker's value for that key, with one
  warning: Kafka would refuse to load such a log, but zkbroker never writes one, and a hand-made
  znode should not take the partition down in a mock.

Deliberately not here: reading the overrides (`zkbroker.broker.image.topic_configs`), validation of
config writes (`zkbroker.broker.rules.config_catalog`), and configs the data plane does not use.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol.records import TimestampType
from zkbroker.broker.rules.broker_config import BrokerConfig
from zkbroker.broker.rules.config_catalog import topic_config_keys
from zkbroker.broker.rules.config_def import InvalidConfig, parse_value
from zkbroker.broker.rules.log_validation import LogConfig, topic_record_magic
from zkbroker.zk_layout import Release, release_at_least

_log = get_logger(__name__)


@dataclass(frozen=True)
class TopicLogConfig:
    validation: LogConfig
    retention_ms: int
    retention_bytes: int
    segment_bytes: int
    segment_ms: int
    min_insync_replicas: int
    cleanup_policy: tuple[str, ...]
    unclean_leader_election: bool
    # The log cleaner's (compaction, docs/kafka-behaviour.md §15).
    min_cleanable_dirty_ratio: float = 0.5
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = (1 << 63) - 1
    segment_index_bytes: int = 10 * 1024 * 1024


def effective_log_config(
    topic: str, overrides: Mapping[str, str], broker: BrokerConfig, release: Release
) -> TopicLogConfig:
    if not overrides:
        # Most topics have no overrides: one entry serves them all (the name is only used
        # in warnings about an override), so a new topic's first Produce finds it computed.
        return _effective("", (), broker, release)
    return _effective(topic, tuple(sorted(overrides.items())), broker, release)


_LONG_MAX = (1 << 63) - 1


@functools.lru_cache(maxsize=4096)
def _effective(
    topic: str, items: tuple[tuple[str, str], ...], broker: BrokerConfig, release: Release
) -> TopicLogConfig:
    values = _Values(topic, dict(items), broker, release)
    integer = values.integer
    policy = values.value("cleanup.policy")
    cleanup = tuple(policy) if isinstance(policy, list) else ("delete",)
    validation = _validation(values, cleanup, release)
    unclean = values.value("unclean.leader.election.enable")
    ratio = values.value("min.cleanable.dirty.ratio")
    return TopicLogConfig(
        validation=validation,
        retention_ms=integer("retention.ms", 7 * 24 * 3600 * 1000),
        retention_bytes=integer("retention.bytes", -1),
        segment_bytes=validation.segment_bytes,
        segment_ms=integer("segment.ms", 7 * 24 * 3600 * 1000),
        min_insync_replicas=integer("min.insync.replicas", 1),
        cleanup_policy=cleanup,
        unclean_leader_election=unclean is True,
        min_cleanable_dirty_ratio=float(ratio) if isinstance(ratio, int | float) else 0.5,
        delete_retention_ms=integer("delete.retention.ms", 86_400_000),
        min_compaction_lag_ms=integer("min.compaction.lag.ms", 0),
        max_compaction_lag_ms=integer("max.compaction.lag.ms", _LONG_MAX),
        segment_index_bytes=integer("segment.index.bytes", 10 * 1024 * 1024),
    )


class _Values:
    """A topic's effective values, parsed: its override where it parses, else the broker's."""

    def __init__(
        self, topic: str, overrides: dict[str, str], broker: BrokerConfig, release: Release
    ) -> None:
        self.topic, self.overrides, self.broker = topic, overrides, broker
        self.keys = topic_config_keys(release, include_internal=True)

    def value(self, name: str) -> object:
        key = self.keys.get(name)
        if key is None:
            return None
        text = self.overrides.get(name)
        if text is not None:
            try:
                return parse_value(key, text)
            except InvalidConfig as e:
                _log.warning("topic_config.unusable", topic=self.topic, key=name, reason=e.message)
        default = self.broker.topic_value(key)
        return None if default is None else parse_value(key, default)

    def integer(self, name: str, fallback: int) -> int:
        got = self.value(name)
        return got if isinstance(got, int) and not isinstance(got, bool) else fallback


def _validation(values: _Values, cleanup: tuple[str, ...], release: Release) -> LogConfig:
    """What `zkbroker.broker.rules.log_validation` checks a produced batch against."""
    timestamp_type = (
        TimestampType.LOG_APPEND_TIME
        if values.value("message.timestamp.type") == "LogAppendTime"
        else TimestampType.CREATE_TIME
    )
    format_version = values.value("message.format.version")
    if release_at_least(release, (3, 6)):
        before = values.integer("message.timestamp.before.max.ms", _LONG_MAX)
        after = values.integer("message.timestamp.after.max.ms", _LONG_MAX)
    else:
        before = after = values.integer("message.timestamp.difference.max.ms", _LONG_MAX)
    compression = values.value("compression.type")
    return LogConfig(
        max_message_bytes=values.integer("max.message.bytes", 1048588),
        segment_bytes=values.integer("segment.bytes", 1 << 30),
        timestamp_type=timestamp_type,
        timestamp_before_max_ms=before,
        timestamp_after_max_ms=after,
        compacted="compact" in cleanup,
        compression_type=compression if isinstance(compression, str) else "producer",
        record_magic=topic_record_magic(
            release, format_version if isinstance(format_version, str) else None
        ),
    )
