"""Talking to ZooKeeper: the kazoo bridge (``client``: ``ZkClient``), Kafka's broker and
controller recipes on it (``kafka_zk``: ``ZkStore``, what the rest of zkbroker holds) and the
admin path's multi-znode writes (``admin_zk``).

Deliberately not here: znode formats (``zkbroker.zk_layout.nodes``); anything above ZooKeeper.
"""

from zkbroker.zk_layout.store.client import (
    DEFAULT_MAX_BUFFER_BYTES,
    ChildrenCallback,
    DataCallback,
    ExistsCallback,
    RequestTooLargeError,
    SessionCallback,
    SessionState,
    TxOp,
    Watch,
    ZkClient,
    ZkTransaction,
    ZnodeStat,
)
from zkbroker.zk_layout.store.kafka_zk import ElectionResult, ZkStore

__all__ = [
    "DEFAULT_MAX_BUFFER_BYTES",
    "ChildrenCallback",
    "DataCallback",
    "ElectionResult",
    "ExistsCallback",
    "RequestTooLargeError",
    "SessionCallback",
    "SessionState",
    "TxOp",
    "Watch",
    "ZkClient",
    "ZkStore",
    "ZkTransaction",
    "ZnodeStat",
]
