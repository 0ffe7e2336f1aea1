"""A broker's SCRAM credentials, as Kafka's `CredentialCache` holds them: loaded from every
`/config/users/<user>` at start, then kept current by `/config/changes` notifications naming
`users/<user>` (Kafka's `UserConfigHandler`), so a credential written by any tool (kafka-configs,
AlterUserScramCredentials on any broker, plain kazoo writing Kafka's format plus a
notification) applies to the next authentication.

With a `feed` (`MetadataImage.client_quotas`, what zkbroker's brokers pass) the cache does not
watch /config/changes itself: the process's config watcher (`zkbroker.broker.image.config_watcher`),
the one follower of the notifications, hands it every `users/<u>` entity it re-reads. Without one
(a cache on its own), notifications are processed here, in sequence order, each one above the
last processed, the entity node re-read (the notification is only a trigger); purging old
notifications is left to that watcher either way.

Deliberately not here: user+client quota entities (`users/<u>/clients/<c>`), delegation tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping

from zkbroker.broker.log import get_logger
from zkbroker.broker.security.quotas import ClientQuotaConfigs
from zkbroker.broker.security.scram import MECHANISM_TYPES, ScramCredential
from zkbroker.zk_layout import (
    ConfigChangeNotificationNode,
    ConfigChangesNode,
    ConfigEntityNode,
    ConfigEntityTypeNode,
    ConfigType,
    ZkStore,
    ZnodeFormatError,
    desanitize,
)
from zkbroker.zk_layout.store import Watch


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
        self._last_executed = -1
        self._wake = asyncio.Event()
        self._watch: Watch | None = None
        self._worker: asyncio.Task[None] | None = None
        self._log = get_logger(__name__)

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
        # Notifications present now are replayed once; the load covers what they name.
        await self._skip_present()
        await asyncio.gather(*(self._reload(n) for n in names))
        self._worker = asyncio.get_running_loop().create_task(self._run())
        self._watch = await self._store.watch_children(
            ConfigChangesNode.path(), lambda _children: self._wake.set()
        )
        self._wake.set()  # a notification created before the watch was set

    async def stop(self) -> None:
        if self._feed is not None:
            self._feed.unsubscribe_users(self._on_user)
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None

    async def _skip_present(self) -> None:
        children = await self._store.get_children(ConfigChangesNode.path()) or []
        numbers = [
            ConfigChangeNotificationNode.sequence_number(c)
            for c in children
            if ConfigChangeNotificationNode.is_child_name(c)
        ]
        self._last_executed = max(numbers, default=-1)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._pass()
            except asyncio.CancelledError:
                raise
            except Exception:
                self._log.exception("credential_cache.pass_failed")

    async def _pass(self) -> None:
        parent = ConfigChangesNode.path()
        children = await self._store.get_children(parent) or []
        new = sorted(
            (ConfigChangeNotificationNode.sequence_number(c), c)
            for c in children
            if ConfigChangeNotificationNode.is_child_name(c)
            and ConfigChangeNotificationNode.sequence_number(c) > self._last_executed
        )
        if not new:
            return
        got = await asyncio.gather(*(self._store.get(f"{parent}/{c}") for _, c in new))
        users: dict[str, None] = {}
        for (number, _child), item in zip(new, got, strict=True):
            self._last_executed = number
            if item is None:
                continue
            try:
                change = ConfigChangeNotificationNode.decode(item[0] or b"")
            except ZnodeFormatError:
                continue
            if change is None or change.entity_type != ConfigType.USERS:
                continue
            if "/" in change.entity_name:  # users/<u>/clients/<c>: quotas only
                continue
            users[change.entity_name] = None
        for name in users:
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
