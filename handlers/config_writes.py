"""ZooKeeper writes of entity configs (Kafka's `AdminZkClient.changeEntityConfig`).

`change_entity_config` replaces `/config/<type>/<name>` with exactly the given entries and
creates a `/config/changes/config_change_<seq>` notification naming it, in the format the
emulated release writes (v1 before 0.10.1, v2 after). Both go in ONE ZooKeeper multi, so no
reader can see the new config without its notification or the reverse (Kafka writes them one
after the other; the multi is a strict improvement that no reader can tell apart).

Kafka's write is set-then-create-if-absent, last writer wins; the same here: the multi first
tries `set`, and only if the entity node is missing, `create`.

Deliberately not here: validation (the config handlers), reading configs, and the purge of
old notifications (`broker.config_watcher`).
"""

from __future__ import annotations

from collections.abc import Mapping

from zk_layout import (
    ConfigChangeNotification,
    ConfigChangeNotificationNode,
    ConfigEntityNode,
    NodeExistsError,
    NoNodeError,
    ZkStore,
)


async def change_entity_config(
    store: ZkStore,
    entity_type: str,
    entity_name: str,
    configs: Mapping[str, str],
    release: tuple[int, ...],
) -> str:
    """Write the entity config and its change notification; returns the notification path."""
    path = ConfigEntityNode.path(entity_type, entity_name)
    data = ConfigEntityNode.encode(configs, release)
    notification = ConfigChangeNotificationNode.encode(
        ConfigChangeNotification(entity_type, entity_name), release
    )
    prefix = ConfigChangeNotificationNode.create_path()
    exists = True
    for _ in range(3):
        tx = store.transaction()
        if exists:
            tx.set(path, data)
        else:
            tx.create(path, data)
        tx.create(prefix, notification, sequence=True)
        try:
            results = await tx.commit()
        except NoNodeError as e:
            if e.op_index != 0:
                raise
            exists = False  # no entity node yet: create it
            continue
        except NodeExistsError as e:
            if e.op_index != 0:
                raise
            exists = True  # created meanwhile by another writer: set it (last writer wins)
            continue
        created = results[1]
        assert isinstance(created, str)
        return created
    raise RuntimeError(f"could not write {path}: it kept appearing and disappearing")
