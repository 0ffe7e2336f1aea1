"""Each topic's config overrides (`/config/topics/<t>`) as the brokers of this process apply them.

Kafka's broker reads a topic's overrides when it creates the partition's log and applies
later changes when a `/config/changes` notification names the topic (`TopicConfigHandler`,
docs/kafka-behaviour.md §10.7). The data plane (Produce, Fetch, retention) reads them on every
request, so they are kept here instead of being read from ZooKeeper each time:

* `overrides(topic)` answers from the cache, or reads the znode once and caches it;
* `invalidate(topic)` is called by the config watcher for every notification naming the topic
  and by the metadata watcher's topic removal; a read that was in flight when the topic was
  invalidated is not cached (its value may predate the change), so a change is never lost.

Deliberately not here: resolving the overrides against the broker's defaults (the handlers do
that with the broker's own config, `zkbroker.handlers.support.log_config`), validation (a value that
does not parse is reported by whoever reads it), and DescribeConfigs, which reads the znode
itself as Kafka's `ZkConfigRepository` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from zkbroker.broker.log import get_logger
from zkbroker.zk_layout import ConfigEntityNode, ConfigType, ZkStore, ZnodeFormatError

_log = get_logger(__name__)

_EMPTY: Mapping[str, str] = MappingProxyType({})


class TopicConfigCache:
    """Topic overrides by topic name, filled on demand and dropped on change notifications."""

    def __init__(self) -> None:
        self._store: ZkStore | None = None
        self._cached: dict[str, Mapping[str, str]] = {}
        # Bumped by every invalidation; a read caches its value only if it did not move.
        self._changes: dict[str, int] = {}

    def attach(self, store: ZkStore | None) -> None:
        """Read through `store` from now on (None while the cluster is stopped)."""
        self._store = store
        self._cached.clear()

    def invalidate(self, topic: str) -> None:
        self._cached.pop(topic, None)
        self._changes[topic] = self._changes.get(topic, 0) + 1

    def cached(self, topic: str) -> Mapping[str, str] | None:
        return self._cached.get(topic)

    async def overrides(self, topic: str) -> Mapping[str, str]:
        """The topic's overrides (empty when it has none); reads ZooKeeper on a cache miss."""
        hit = self._cached.get(topic)
        if hit is not None:
            return hit
        store = self._store
        if store is None:
            return _EMPTY
        seen = self._changes.get(topic, 0)
        got = await store.get(ConfigEntityNode.path(ConfigType.TOPICS, topic))
        value: Mapping[str, str] = _EMPTY
        if got is not None:
            try:
                value = MappingProxyType(ConfigEntityNode.decode(got[0] or b""))
            except ZnodeFormatError as e:
                # Kafka would fail to build the log's config; the defaults keep the log usable
                # and the warning says why the overrides are not applied.
                _log.warning("topic_config.undecodable", topic=topic, reason=str(e))
        if self._changes.get(topic, 0) == seen:
            self._cached[topic] = value
        return value
