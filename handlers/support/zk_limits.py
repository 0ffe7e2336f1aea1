"""What fits in one ZooKeeper write: the topic-znode size check of CreateTopics and
CreatePartitions.

A ZooKeeper server drops a client whose request exceeds its `jute.maxbuffer` (0xfffff bytes by
default; `Settings.zookeeper_max_buffer_bytes` gives the cluster's value), and a topic's whole
partition map is one znode, `/brokers/topics/<t>`, so its size bounds partitions x replicas.
The handlers check it after Kafka's own checks and before building a placement, answering
INVALID_PARTITIONS naming the limit (`zkbroker.handlers.create_topics` says why that code).

Not here: Kafka's own checks (the handlers, `zkbroker.broker.rules`), the store's guard
(`zkbroker.zk_layout.store.request_size.RequestTooLargeError`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.api_error import ApiError
from zkbroker.zk_layout import ConfigEntityNode, TopicNode, ZkStore
from zkbroker.zk_layout.store.request_size import request_bytes

# The topic znode's JSON besides its partition map, at its longest (v3 with a topic id):
# {"version":3,"partitions":,"adding_replicas":{},"removing_replicas":{},"topic_id":"<22>"}
TOPIC_ZNODE_EXTRA = 110


def partition_entry_bytes(partition: int, replicas: Sequence[int]) -> int:
    """Bytes of `"p":[r1,r2],` in the compact JSON partition map."""
    # quotes, ':', '[', ']', ',' and the commas between replicas
    return len(str(partition)) + 5 + len(replicas) + sum(len(str(b)) for b in replicas)


def replica_map_bytes(assignment: Iterable[tuple[int, Sequence[int]]]) -> int:
    """Exact size of the compact JSON partition map `{"0":[1,2],...}`."""
    return 1 + sum(partition_entry_bytes(p, r) for p, r in assignment)


def too_large_message(name: str, partitions: int, size: int, limit: int) -> str:
    return (
        f"Topic '{name}' with {partitions} partitions would need a ZooKeeper write of at least "
        f"{size} bytes, more than the cluster's ZooKeeper allows in one request (jute.maxbuffer "
        f"= {limit} bytes). Use fewer partitions or replicas."
    )


def check_topic_write(
    store: ZkStore,
    name: str,
    partitions: int,
    map_bytes: int,
    config_data: bytes | None = None,
) -> None:
    """Raise INVALID_PARTITIONS when writing topic `name` with a partition map of `map_bytes`
    (and, for a creation, its config node `config_data`) cannot fit one ZooKeeper request."""
    chroot = store.chroot
    ops: list[tuple[str, bytes | None]] = [(chroot + TopicNode.path(name), None)]
    if config_data is not None:
        ops.append((chroot + ConfigEntityNode.topic(name), config_data))
    size = map_bytes + TOPIC_ZNODE_EXTRA + request_bytes(ops)
    limit = store.max_buffer_bytes
    if size > limit:
        raise ApiError(
            error_codes.INVALID_PARTITIONS, too_large_message(name, partitions, size, limit)
        )
