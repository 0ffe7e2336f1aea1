"""Kafka's admin-path recipes over ZooKeeper (Kafka's `AdminZkClient`): the multi-znode writes
that topic and config changes make, each as ONE ZooKeeper transaction.

- `change_entity_config` replaces `/config/<type>/<name>` with exactly the given entries and
  creates a `/config/changes/config_change_<seq>` notification naming it, in the format the
  emulated release writes (v1 before 0.10.1, v2 after). Kafka writes the two one after the
  other; a multi is a strict improvement no reader can tell apart. Kafka's write is
  set-then-create-if-absent, last writer wins; the same here: the multi first tries `set`, and
  only if the entity node is missing, `create`.
- `create_topic` writes what Kafka's `createTopicWithAssignment` writes -- `/config/topics/<t>`
  (even with no overrides) and `/brokers/topics/<t>` in the release's format -- so a topic is
  never half-created; the controller creates the partition states from there. No config-change
  notification is written for a create (Kafka writes none).

Deliberately not here: validation (the handlers and `zkbroker.broker.rules`), reading configs,
partition states (the controller), and the purge of old notifications
(`zkbroker.broker.image.config_watcher`).
"""

from __future__ import annotations

from collections.abc import Mapping

from zkbroker.zk_layout.errors import NodeExistsError, NoNodeError
from zkbroker.zk_layout.nodes import (
    ConfigChangeNotification,
    ConfigChangeNotificationNode,
    ConfigEntityNode,
    TopicAssignment,
    TopicNode,
)
from zkbroker.zk_layout.store.client import ZkClient
from zkbroker.zk_layout.uuid_text import random_uuid


async def change_entity_config(
    store: ZkClient,
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


class TopicExists(Exception):
    pass


async def create_topic(
    store: ZkClient,
    name: str,
    assignment: dict[int, list[int]],
    configs: dict[str, str],
    release: tuple[int, ...],
    *,
    config_exists: bool | None = None,
) -> TopicAssignment:
    """Create the topic's znodes; returns what was written. Raises TopicExists.

    `config_exists` spares a read when the caller already listed `/config/topics`.
    """
    topic_id = random_uuid() if release >= (2, 8) else None
    topic = TopicAssignment(
        partitions={p: tuple(r) for p, r in sorted(assignment.items())}, topic_id=topic_id
    )
    config_path = ConfigEntityNode.topic(name)
    config_data = ConfigEntityNode.encode(configs, release)
    if config_exists is None:
        config_exists = await store.exists(config_path) is not None
    for _ in range(2):
        tx = store.transaction()
        # Kafka sets the config node, or creates it when absent (last writer wins).
        if config_exists:
            tx.set(config_path, config_data)
        else:
            tx.create(config_path, config_data)
        tx.create(TopicNode.path(name), TopicNode.encode(topic, release))
        try:
            await tx.commit()
            return topic
        except NodeExistsError as e:
            if e.path == config_path and not config_exists:
                config_exists = True  # created meanwhile by someone else: set it instead
                continue
            raise TopicExists(name) from e
    raise TopicExists(name)
