"""A broker's SCRAM credentials, as Kafka's `CredentialCache` holds them: loaded from every
`/config/users/<user>` at start, then kept current by `/config/changes` notifications naming
`users/<user>` (Kafka's `UserConfigHandler`), so a credential written by any tool (kafka-configs,
AlterUserScramCredentials on any broker, plain kazoo writing Kafka's format plus a
notification) applies to the next authentication.

With a `feed` (`MetadataImage.client_quotas`, what zkbroker's brokers pass) the cache does not
watch /config/changes itself: the process's config watcher (`zkbroker.broker.image.config_watcher`),
the one follower of the notifications, hands it every `users/<u>` entity it re-reads. Without one
(a cache on its own), notifications are processed here by a
`zkbroker.zk_layout.store.ChangeNotificationListener` that starts after those present at start
(the load covers what they name), in sequence order, each one above the last processed, the
entity node re-read (the notification is only a trigger; a user named several times is re-read
once); purging old notifications is left to that watcher either way (`Purge.NONE`).

Deliberately not here: user+client quota entities (`users/<u>/clients/<c>`), delegation tokens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from zkbroker.broker.log import get_logger
from zkbroker.broker.security.quotas import ClientQuotaConfigs
from zkbroker.broker.security.scram import MECHANISM_TYPES, ScramCredential
from zkbroker.zk_layout import (
    ConfigChangeNotificationNode,
    ConfigEntityNode,
    ConfigEntityTypeNode,
    ConfigType,
    ZkStore,
    ZnodeFormatError,
    desanitize,
)
from zkbroker.zk_layout.store import ChangeNotificationListener


class CredentialCache:
    def __init__(
        self, store: ZkStore, release: tuple[int, ...], feed: ClientQuotaConfigs | None = None
    ) -> None:
        self._store = store
        self._feed = feed
        # While start() loads: users the feed delivered meanwhile (newer than the load's read).
        self._fed: set[str] | None = None
        self._release = release
        # user -> mechanism -> credential
        self._credentials: dict[str, dict[str, ScramCredential]] = {}
        self._log = get_logger(__name__)
        # Without a feed: the users a pass's notifications name are re-read after them, once.
        self._changes = ChangeNotificationListener.of(
            store,
            ConfigChangeNotificationNode,
            self._user_of,
            flush=self._reload_all,
            log=self._log,
            failed_event="credential_cache.pass_failed",
        )

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._credentials.get(user, {}).get(mechanism)

    async def start(self) -> None:
        if self._feed is not None:
            # Subscribed before the load: a change meanwhile is applied after it, never lost.
            self._fed = set()
            self._feed.subscribe_users(self._on_user)
            names = await self._store.get_children(ConfigEntityTypeNode.path(ConfigType.USERS))
            await asyncio.gather(*(self._reload(n) for n in names or []))
            self._fed = None
            return
        names = await self._store.get_children(ConfigEntityTypeNode.path(ConfigType.USERS)) or []
        # Notifications present now are not replayed: the load covers what they name.
        await self._changes.skip_existing()
        await asyncio.gather(*(self._reload(n) for n in names))
        await self._changes.start()

    async def stop(self) -> None:
        if self._feed is not None:
            self._feed.unsubscribe_users(self._on_user)
        await self._changes.stop()

    async def _user_of(self, path: str, data: bytes) -> str | None:
        """The (sanitized) user a notification names; None for anything else."""
        try:
            change = ConfigChangeNotificationNode.decode(data or b"")
        except ZnodeFormatError:
            return None
        if change is None or change.entity_type != ConfigType.USERS:
            return None
        if "/" in change.entity_name:  # users/<u>/clients/<c>: quotas only
            return None
        return change.entity_name

    async def _reload_all(self, names: list[str]) -> None:
        for name in names:
            await self._reload(name)

    async def _reload(self, sanitized: str) -> None:
        got = await self._store.get(ConfigEntityNode.path(ConfigType.USERS, sanitized))
        user = desanitize(sanitized)
        if self._fed is not None and sanitized in self._fed:
            return  # the feed already gave a newer read of this user
        if got is None:
            self._credentials.pop(user, None)
            return
        try:
            props = ConfigEntityNode.decode(got[0] or b"")
        except ZnodeFormatError as e:
            self._log.warning("credential_cache.undecodable", user=user, reason=str(e))
            return
        self._apply(sanitized, props)

    def _on_user(self, sanitized: str, props: Mapping[str, str]) -> None:
        if self._fed is not None:
            self._fed.add(sanitized)
        self._apply(sanitized, props)

    def _apply(self, sanitized: str, props: Mapping[str, str]) -> None:
        """The user's entity as last read: its credentials replace the cached ones."""
        user = desanitize(sanitized)
        credentials: dict[str, ScramCredential] = {}
        for mechanism in MECHANISM_TYPES:
            text = props.get(mechanism)
            if text is None:
                continue
            try:
                credentials[mechanism] = ScramCredential.from_text(text)
            except ValueError as e:
                self._log.warning(
                    "credential_cache.invalid", user=user, mechanism=mechanism, reason=str(e)
                )
        if credentials:
            self._credentials[user] = credentials
        else:
            self._credentials.pop(user, None)
        self._log.info("credential_cache.updated", user=user, mechanisms=sorted(credentials))
