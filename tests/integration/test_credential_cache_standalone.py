"""A `CredentialCache` without a feed (on its own, not fed by the process's config watcher)
follows `/config/changes` itself: notifications present at start are not replayed (the load
covers them), later `users/<u>` notifications re-read the user, and it purges nothing."""

from __future__ import annotations

from tests.integration.test_zk_store import eventually
from zkbroker.broker.security.credential_cache import CredentialCache
from zkbroker.broker.security.scram import credential_from_password
from zkbroker.zk_layout import ZkStore
from zkbroker.zk_layout.store.admin_zk import change_entity_config

RELEASE = (3, 9)
MECHANISM = "SCRAM-SHA-256"


def _props(password: str) -> dict[str, str]:
    return {MECHANISM: credential_from_password(MECHANISM, password, 4096).to_text()}


async def test_a_cache_without_a_feed_follows_config_changes(zk_connect: str) -> None:
    store = await ZkStore.connect(zk_connect, timeout=15)
    try:
        await store.create_top_level_paths()
        await change_entity_config(store, "users", "alice", _props("a1"), RELEASE)
        cache = CredentialCache(store, RELEASE)
        await cache.start()
        try:
            first = cache.get("alice", MECHANISM)
            assert first is not None
            await change_entity_config(store, "users", "bob", _props("b1"), RELEASE)
            await eventually(lambda: cache.get("bob", MECHANISM) is not None)
            await change_entity_config(store, "users", "alice", {}, RELEASE)
            await eventually(lambda: cache.get("alice", MECHANISM) is None)
            # Purging is left to the config watcher.
            assert len(await store.get_children("/config/changes") or []) == 3
        finally:
            await cache.stop()
    finally:
        await store.close()
