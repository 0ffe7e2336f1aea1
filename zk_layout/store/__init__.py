"""Talking to ZooKeeper: the kazoo bridge (``client``: ``ZkClient``), Kafka's broker and
controller recipes on it (``kafka_zk``: ``ZkStore``, what the rest of zkbroker holds), the
admin path's multi-znode writes (``admin_zk``) and the follower of a folder of change
notifications (``change_notifications``: ``ChangeNotificationListener``).

Deliberately not here: znode formats (``zkbroker.zk_layout.nodes``); anything above ZooKeeper.
"""

from zkbroker.zk_layout.store.change_notifications import (
    CHANGE_EXPIRATION_MS,
    ChangeNotificationListener,
    Purge,
)
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
    "CHANGE_EXPIRATION_MS",
    "DEFAULT_MAX_BUFFER_BYTES",
    "ChangeNotificationListener",
    "ChildrenCallback",
    "DataCallback",
    "ElectionResult",
    "ExistsCallback",
    "Purge",
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
