"""zk_layout: Kafka's ZooKeeper layout — one class per znode path (path, encode, decode, format
versions, which version a release writes) — and ``ZkStore``, the asyncio store over kazoo
(pipelined requests, multi-op and controller-fenced transactions, persistent watches, Kafka's
registration/election recipes).

This is the bottom layer of zkbroker: it imports nothing from ``broker`` or ``handlers`` and holds
no global mutable state. The znode classes do no I/O; only ``zkbroker.zk_layout.store`` talks to
ZooKeeper.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from zkbroker.zk_layout import nodes as _nodes
from zkbroker.zk_layout.codec_json import dumps as json_dumps
from zkbroker.zk_layout.errors import (
    BadVersionError,
    BrokerIdInUseError,
    ControllerMovedError,
    InvalidPathError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
    ZkConnectionError,
    ZkLayoutError,
    ZkOperationError,
    ZnodeFormatError,
)

# Every znode class and constant, listed once, in zkbroker.zk_layout.nodes.__all__.
from zkbroker.zk_layout.nodes import *  # noqa: F403
from zkbroker.zk_layout.paths import check_path, invalid_path_reason
from zkbroker.zk_layout.release import Release, normalize_release, release_at_least, release_name
from zkbroker.zk_layout.sanitizer import desanitize, sanitize
from zkbroker.zk_layout.uuid_text import (
    METADATA_TOPIC_ID,
    ZERO_UUID,
    random_uuid,
    random_uuid_text,
    uuid_from_text,
    uuid_to_text,
)

if TYPE_CHECKING:
    from zkbroker.zk_layout.store import (
        ElectionResult,
        SessionState,
        TxOp,
        Watch,
        ZkClient,
        ZkStore,
        ZkTransaction,
        ZnodeStat,
    )

# The store (kazoo and its threads' machinery) is loaded on first use (PEP 562): the znode
# classes alone, which the command's option checks use, must not pay for it.
_STORE_NAMES = frozenset(
    {
        "ElectionResult",
        "SessionState",
        "TxOp",
        "Watch",
        "ZkClient",
        "ZkStore",
        "ZkTransaction",
        "ZnodeStat",
    }
)


def __getattr__(name: str) -> Any:
    if name not in _STORE_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.store"), name)
    globals()[name] = value
    return value


__all__ = [
    "METADATA_TOPIC_ID",
    "ZERO_UUID",
    "BadVersionError",
    "BrokerIdInUseError",
    "ControllerMovedError",
    "ElectionResult",
    "InvalidPathError",
    "NoNodeError",
    "NodeExistsError",
    "NotEmptyError",
    "Release",
    "SessionExpiredError",
    "SessionState",
    "TxOp",
    "Watch",
    "ZkClient",
    "ZkConnectionError",
    "ZkLayoutError",
    "ZkOperationError",
    "ZkStore",
    "ZkTransaction",
    "ZnodeFormatError",
    "ZnodeStat",
    "check_path",
    "desanitize",
    "invalid_path_reason",
    "json_dumps",
    "normalize_release",
    "random_uuid",
    "random_uuid_text",
    "release_at_least",
    "release_name",
    "sanitize",
    "uuid_from_text",
    "uuid_to_text",
]
__all__ += _nodes.__all__
