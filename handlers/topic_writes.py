"""ZooKeeper writes of the admin path for topics (Kafka's AdminZkClient), shared by handlers.

`create_topic` writes what Kafka's createTopicWithAssignment writes -- `/config/topics/<t>`
(even with no overrides) and `/brokers/topics/<t>` in the release's format -- in ONE
transaction, so a topic is never half-created; the controller creates the partition states
from there. No config-change notification is written for a create (Kafka writes none).

Deliberately not here: validation (handlers), partition states (the controller).
"""

from __future__ import annotations

from zk_layout import (
    ConfigEntityNode,
    NodeExistsError,
    TopicAssignment,
    TopicNode,
    ZkStore,
    random_uuid,
)


class TopicExists(Exception):
    pass


async def create_topic(
    store: ZkStore,
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
