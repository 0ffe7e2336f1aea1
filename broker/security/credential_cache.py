"""A broker's SCRAM credentials, as Kafka's `CredentialCache` holds them: loaded from every
`/config/users/<user>` at start, then kept current from `/config/changes` notifications naming
`users/<user>` (Kafka's `UserConfigHandler`), so a credential written by any tool (kafka-configs,
AlterUserScramCredentials on any broker, plain kazoo writing Kafka's format plus a
notification) applies to the next authentication.

The cache follows no notification itself: the process's config watcher
(`zkbroker.broker.image.config_watcher`), the one follower of /config/changes per process (and
the one that purges it), re-reads each `users/<u>` entity a notification names and hands it over
through its feed (`MetadataImage.client_quotas`).

Deliberately not here: user+client quota entities (`users/<u>/clients/<c>`), delegation tokens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from zkbroker.broker.log import get_logger
from zkbroker.broker.security.quotas import ClientQuotaConfigs
from zkbroker.broker.security.scram import MECHANISM_TYPES, ScramCredential
from zkbroker.zk_layout import (
    ConfigEntityNode,
    ConfigEntityTypeNode,
    ConfigType,
    ZkStore,
    ZnodeFormatError,
    desanitize,
)


class CredentialCache:
    def __init__(self, store: ZkStore, release: tuple[int, ...], feed: ClientQuotaConfigs) -> None:
        self._store = store
        self._feed = feed
        # While start() loads: users the feed delivered meanwhile (newer than the load's read).
        self._fed: set[str] | None = None
        self._release = release
        # user -> mechanism -> credential
        self._credentials: dict[str, dict[str, ScramCredential]] = {}
        self._log = get_logger(__name__)

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._credentials.get(user, {}).get(mechanism)

    async def start(self) -> None:
        # Subscribed before the load: a change meanwhile is applied after it, never lost.
        self._fed = set()
        self._feed.subscribe_users(self._on_user)
        names = await self._store.get_children(ConfigEntityTypeNode.path(ConfigType.USERS))
        await asyncio.gather(*(self._reload(n) for n in names or []))
        self._fed = None

    async def stop(self) -> None:
        self._feed.unsubscribe_users(self._on_user)

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
