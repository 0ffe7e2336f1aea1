"""Applies config change notifications to the process's metadata image, and purges old ones.

Kafka's `ZkNodeChangeNotificationListener` + `DynamicConfigManager` (docs/kafka-behaviour.md
§10.7, formats §1.8), once per process (its brokers share the image): one worker applies
passes in sequence order, reading each named entity once per pass; broker entities and quota
entities (users, clients, ips) go into the image, a topic change drops the topic from the data
plane's override cache (`zkbroker.broker.image.topic_configs`), and unclean leader election
turned on is passed to `on_unclean_enabled`. A notification that does not decode or that the
release ignores is logged and skipped; a failed pass is retried at the next change. `start()`
also loads every broker and quota entity, so values written without a notification count.

Not here: validating the entities' values (`zkbroker.broker.rules.broker_config`), writes other
than the purge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.zk_layout import (
    DEFAULT_ENTITY,
    ConfigChangeNotificationNode,
    ConfigEntityNode,
    ConfigEntityTypeNode,
    ConfigType,
    ZkStore,
    ZnodeFormatError,
)
from zkbroker.zk_layout.store import CHANGE_EXPIRATION_MS, ChangeNotificationListener, Purge

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
        change_expiration_ms: int = CHANGE_EXPIRATION_MS,
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
        self._log = get_logger(__name__)
        # A pass reads its new notifications at once; the entities they name are applied
        # after them, each once (only its latest value counts).
        self._changes = ChangeNotificationListener.of(
            store,
            ConfigChangeNotificationNode,
            self._entity_of,
            flush=self._apply,
            log=self._log,
            failed_event="config_changes.pass_failed",
            purge=Purge.AFTER_PASS,
            change_expiration_ms=change_expiration_ms,
            purged_event="config_changes.purged",
        )

    @property
    def last_executed(self) -> int:
        """Sequence number of the last notification processed (-1 before any)."""
        return self._changes.last_executed

    async def start(self) -> None:
        await self._load_broker_entities()
        await self._load_quota_entities()
        await self._changes.start()

    async def stop(self) -> None:
        await self._changes.stop()

    # ---- internals ---------------------------------------------------------------------

    async def _entity_of(self, path: str, data: bytes | None) -> str | None:
        """The entity path a notification names, or None when it is to be skipped (one
        deleted meanwhile never gets here: the entity node still holds the value)."""
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
