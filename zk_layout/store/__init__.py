"""Talking to ZooKeeper: the session (``client``: ``ZkClient``, composed of ``kazoo_bridge``,
``kazoo_errors``, ``request_size``, ``auth``, ``transactions`` and ``watches``), Kafka's broker and
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
from zkbroker.zk_layout.store.client import SessionCallback, SessionState, ZkClient, ZnodeStat
from zkbroker.zk_layout.store.kafka_zk import ElectionResult, ZkStore
from zkbroker.zk_layout.store.request_size import DEFAULT_MAX_BUFFER_BYTES, RequestTooLargeError
from zkbroker.zk_layout.store.transactions import TxOp, ZkTransaction
from zkbroker.zk_layout.store.watches import ChildrenCallback, DataCallback, ExistsCallback, Watch

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
