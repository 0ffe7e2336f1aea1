"""Applies config change notifications to the process's metadata image, and purges old ones.

Kafka's `ZkNodeChangeNotificationListener` + `DynamicConfigManager` (docs/kafka-behaviour.md §10.7),
once per process (every broker of a process shares the image):

* `/config/changes` children are watched; each change wakes ONE worker task that runs passes
  one at a time, so notifications are applied strictly in sequence order;
* a pass lists the children sorted by sequence number and processes each one above the last
  processed (which starts at -1, so every notification present at start is replayed, as a
  Kafka broker does on start-up);
* processing a notification reads the entity node it names -- the notification is only a
  trigger -- and, for `brokers/<id>` and `brokers/<default>`, stores the overrides in the
  image; a topic or default entity turning `unclean.leader.election.enable` on is passed to
  `on_unclean_enabled` (the process's active controller elects offline partitions). A topic
  notification drops the topic from the data plane's override cache
  (`zkbroker.broker.image.topic_configs`), which reads it again on the next Produce or Fetch;
  DescribeConfigs reads `/config/topics/<t>` itself as Kafka's `ZkConfigRepository` does.
  A `users/...` or `clients/...` notification re-reads that entity into the image's client
  quotas (`MetadataImage.client_quotas`, Kafka's `UserConfigHandler`/`ClientIdConfigHandler`
  updating the quota managers), as is an `ips/...` one (connection creation rates);
* a notification the release would not act on (format too old or too new), or one that does
  not decode, is logged and skipped;
* after each pass, notifications whose ZooKeeper ctime is older than the expiration
  (Kafka: 15 minutes) are deleted; any process may delete them, a concurrent delete is fine.

Besides notifications, `start()` loads every `/config/brokers/*` entity and every user, client,
user/client and ip entity (quotas), so values written without a notification (as Kafka itself
would see them after a restart) are known at once.

Deliberately not here: validation of what the entity holds (the broker applies the dynamic
rules when it builds its config, `zkbroker.broker.rules.broker_config`), and writes other than the
purge.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.zk_layout import (
    DEFAULT_ENTITY,
    ConfigChangeNotificationNode,
    ConfigChangesNode,
    ConfigEntityNode,
    ConfigEntityTypeNode,
    ConfigType,
    NoNodeError,
    ZkStore,
    ZnodeFormatError,
)
from zkbroker.zk_layout.store import Watch

# Kafka's ZkNodeChangeNotificationListener changeExpirationMs.
DEFAULT_CHANGE_EXPIRATION_MS = 15 * 60 * 1000
UNCLEAN_KEY = "unclean.leader.election.enable"


def _unclean(props: dict[str, str]) -> bool:
    # Scala's String.toBoolean: case-insensitive "true", anything else is not.
    return props.get(UNCLEAN_KEY, "").lower() == "true"


class ConfigWatcher:
    def __init__(
        self,
        store: ZkStore,
        image: MetadataImage,
        release: tuple[int, ...],
        *,
        change_expiration_ms: int = DEFAULT_CHANGE_EXPIRATION_MS,
        on_unclean_enabled: Callable[[str | None], None] | None = None,
    ) -> None:
        self.store = store
        # Told when a topic (its name) or the broker default (None) turns on
        # unclean.leader.election.enable, so an active controller of this process can elect
        # offline partitions (Kafka's TopicConfigHandler / enableDefaultUncleanLeaderElection).
        self.on_unclean_enabled = on_unclean_enabled
        self.image = image
        self.release = release
        self.change_expiration_ms = change_expiration_ms
        self.last_executed = -1
        self._wake = asyncio.Event()
        self._watch: Watch | None = None
        self._worker: asyncio.Task[None] | None = None
        # ctime (ms) of each notification seen, for the purge without re-reading them.
        self._ctimes: dict[str, int] = {}
        self._log = get_logger(__name__)

    async def start(self) -> None:
        await self._load_broker_entities()
        await self._load_quota_entities()
        self._worker = asyncio.get_running_loop().create_task(self._run())
        self._watch = await self.store.watch_children(ConfigChangesNode.path(), self._on_changes)

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None

    # ---- internals ---------------------------------------------------------------------

    def _on_changes(self, children: list[str] | None) -> None:
        self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._pass()
            except asyncio.CancelledError:
                raise
            except Exception:
                # One bad pass must not stop config propagation; the next change retries.
                self._log.exception("config_changes.pass_failed")

    async def _pass(self) -> None:
        parent = ConfigChangesNode.path()
        children = await self.store.get_children(parent) or []
        numbered = sorted(
            (ConfigChangeNotificationNode.sequence_number(c), c)
            for c in children
            if ConfigChangeNotificationNode.is_child_name(c)
        )
        present = {c for _, c in numbered}
        for gone in set(self._ctimes) - present:
            del self._ctimes[gone]
        new = [(n, c) for n, c in numbered if n > self.last_executed]
        if new:
            # Read every new notification at once, then apply them in sequence order; an
            # entity named several times is read once, after, since only its latest value counts.
            got = await asyncio.gather(*(self.store.get(f"{parent}/{c}") for _, c in new))
            entities: dict[str, None] = {}
            for (number, child), item in zip(new, got, strict=True):
                self.last_executed = number
                if item is None:
                    continue  # purged meanwhile; the entity node still holds the value
                data, stat = item
                self._ctimes[child] = stat.ctime
                entity = self._entity_of(f"{parent}/{child}", data)
                if entity is not None:
                    entities[entity] = None
            await self._apply(list(entities))
        await self._purge()

    def _entity_of(self, path: str, data: bytes | None) -> str | None:
        """The entity path a notification names, or None when it is to be skipped."""
        try:
            change = ConfigChangeNotificationNode.decode(data or b"")
        except ZnodeFormatError as e:
            self._log.warning("config_change.undecodable", path=path, reason=str(e))
            return None
        if change is None or not change.honoured_by(self.release):
            self._log.info("config_change.ignored", path=path)
            return None
        self._log.info("config_change.received", path=path, entity=change.entity_path)
        return change.entity_path

    async def _apply(self, entity_paths: list[str]) -> None:
        brokers = [
            p.partition("/")[2] for p in entity_paths if p.startswith(f"{ConfigType.BROKERS}/")
        ]
        changed_topics = [
            p.partition("/")[2] for p in entity_paths if p.startswith(f"{ConfigType.TOPICS}/")
        ]
        for topic in changed_topics:
            # The data plane reads the new overrides on its next request.
            self.image.topic_configs.invalidate(topic)
        topics = changed_topics if self.on_unclean_enabled is not None else []
        configs = await asyncio.gather(
            *(self._read_entity(ConfigEntityNode.path(ConfigType.BROKERS, b)) for b in brokers),
            *(self._read_entity(ConfigEntityNode.path(ConfigType.TOPICS, t)) for t in topics),
        )
        for name, props in zip(brokers, configs[: len(brokers)], strict=True):
            self.image.set_broker_config(name, props)
            if name == DEFAULT_ENTITY and _unclean(props):
                self._unclean_enabled(None)
        for name, props in zip(topics, configs[len(brokers) :], strict=True):
            if _unclean(props):
                self._unclean_enabled(name)
        quota_paths = [
            p
            for p in entity_paths
            if p.partition("/")[0] in (ConfigType.USERS, ConfigType.CLIENTS, ConfigType.IPS)
        ]
        quota_props = await asyncio.gather(
            *(self._read_entity(f"/config/{p}") for p in quota_paths)
        )
        for path, props in zip(quota_paths, quota_props, strict=True):
            self.image.client_quotas.set_entity(path, props)

    def _unclean_enabled(self, topic: str | None) -> None:
        if self.on_unclean_enabled is not None:
            try:
                self.on_unclean_enabled(topic)
            except Exception:
                self._log.exception("config_change.unclean_callback_failed", topic=topic)

    async def _read_entity(self, entity_path: str) -> dict[str, str]:
        got = await self.store.get(entity_path)
        if got is None:
            return {}
        try:
            return ConfigEntityNode.decode(got[0] or b"")
        except ZnodeFormatError as e:
            self._log.warning("config_entity.undecodable", path=entity_path, reason=str(e))
            return {}

    async def _load_broker_entities(self) -> None:
        names = await self.store.get_children(ConfigEntityTypeNode.path(ConfigType.BROKERS)) or []
        paths = [ConfigEntityNode.path(ConfigType.BROKERS, n) for n in names]
        configs = await asyncio.gather(*(self._read_entity(p) for p in paths))
        for name, props in zip(names, configs, strict=True):
            self.image.set_broker_config(name, props)

    async def _load_quota_entities(self) -> None:
        users_root = ConfigEntityTypeNode.path(ConfigType.USERS)
        clients_root = ConfigEntityTypeNode.path(ConfigType.CLIENTS)
        users = await self.store.get_children(users_root) or []
        clients = await self.store.get_children(clients_root) or []
        ips = await self.store.get_children(ConfigEntityTypeNode.path(ConfigType.IPS)) or []
        nested = await self.store.get_children_many([f"{users_root}/{u}/clients" for u in users])
        paths = [f"{ConfigType.USERS}/{u}" for u in users]
        paths += [f"{ConfigType.CLIENTS}/{c}" for c in clients]
        paths += [f"{ConfigType.IPS}/{i}" for i in ips]
        paths += [
            f"{ConfigType.USERS}/{u}/clients/{c}"
            for u, cs in zip(users, nested, strict=True)
            for c in cs or []
        ]
        configs = await asyncio.gather(*(self._read_entity(f"/config/{p}") for p in paths))
        for path, props in zip(paths, configs, strict=True):
            self.image.client_quotas.set_entity(path, props)

    async def _purge(self) -> None:
        cutoff_ms = time.time() * 1000 - self.change_expiration_ms
        expired = [c for c, ctime in self._ctimes.items() if ctime < cutoff_ms]
        parent = ConfigChangesNode.path()
        for child in expired:
            with contextlib.suppress(NoNodeError):
                await self.store.delete(f"{parent}/{child}")
            self._ctimes.pop(child, None)
        if expired:
            self._log.info("config_changes.purged", count=len(expired))
