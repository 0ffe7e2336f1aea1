"""A `CredentialCache` as a broker runs it, fed by the process's config watcher: users present
at start are loaded, later `users/<u>` notifications re-read the user and reach the cache, and
the cache purges no notification (the watcher purges only expired ones)."""

from __future__ import annotations

from tests.integration.test_zk_store import eventually
from zkbroker.broker.image.config_watcher import ConfigWatcher
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.security.credential_cache import CredentialCache
from zkbroker.broker.security.scram import credential_from_password
from zkbroker.zk_layout import ZkStore
from zkbroker.zk_layout.store.admin_zk import change_entity_config

RELEASE = (3, 9)
MECHANISM = "SCRAM-SHA-256"


def _props(password: str) -> dict[str, str]:
    return {MECHANISM: credential_from_password(MECHANISM, password, 4096).to_text()}


async def test_a_cache_fed_by_the_config_watcher_follows_config_changes(zk_connect: str) -> None:
    store = await ZkStore.connect(zk_connect, timeout=15)
    try:
        await store.create_top_level_paths()
        await change_entity_config(store, "users", "alice", _props("a1"), RELEASE)
        image = MetadataImage()
        watcher = ConfigWatcher(store, image, RELEASE)
        await watcher.start()
        cache = CredentialCache(store, RELEASE, feed=image.client_quotas)
        await cache.start()
        try:
            first = cache.get("alice", MECHANISM)
            assert first is not None
            await change_entity_config(store, "users", "bob", _props("b1"), RELEASE)
            await eventually(lambda: cache.get("bob", MECHANISM) is not None)
            await change_entity_config(store, "users", "alice", {}, RELEASE)
            await eventually(lambda: cache.get("alice", MECHANISM) is None)
            # None of the three notifications has expired: nothing purged them.
            assert len(await store.get_children("/config/changes") or []) == 3
        finally:
            await cache.stop()
            await watcher.stop()
    finally:
        await store.close()
