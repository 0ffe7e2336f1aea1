"""zkbroker: a Kafka mock broker and controller of a ZooKeeper-mode cluster, on a real ZooKeeper.

The one import name of the project. Users need only what this module exports: `Cluster`
(a cluster in this process), `BrokerHandle`, `Security` and the exceptions of
`Cluster.produce` and `Cluster.records`. The pytest fixtures come with the package (a pytest11
plugin); the `zkbroker` command is `python -m zkbroker`.

Inside, three packages, kept at the repository's root and linked here: `zkbroker.broker` (the
server, controller, coordinators, CLI and toolkit), `zkbroker.handlers` (one module per API key)
and `zkbroker.zk_layout` (Kafka's znodes and the ZooKeeper store). "Where things are" in
README.md maps them.

Logging follows Python's convention for a library: the `zkbroker` logger (every module logs
under `zkbroker.*`) has a `NullHandler` and no level, set here so that any import of zkbroker
does it; what is printed, and from which level, is the application's choice (see
`zkbroker.broker.log`). Only the `zkbroker` command configures output.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

# No level, no output: Python's "configuring logging for a library". Without a handler of its
# own, zkbroker's warnings would reach `logging.lastResort` (stderr) in a process that
# configured nothing.
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "BrokerHandle",
    "Cluster",
    "OffsetsUnavailable",
    "ProduceFailed",
    "Security",
    "ZkBrokerContainer",
]

if TYPE_CHECKING:
    from zkbroker.broker.cluster import BrokerHandle, Cluster
    from zkbroker.broker.engine.records import OffsetsUnavailable, ProduceFailed
    from zkbroker.broker.security.cluster_security import Security
    from zkbroker.broker.toolkit.container import ZkBrokerContainer

# Where each public name lives, imported on first use.
_HOMES = {
    "BrokerHandle": "zkbroker.broker.cluster",
    "Cluster": "zkbroker.broker.cluster",
    "OffsetsUnavailable": "zkbroker.broker.engine.records",
    "ProduceFailed": "zkbroker.broker.engine.records",
    "Security": "zkbroker.broker.security.cluster_security",
    # needs testcontainers: the `docker` extra
    "ZkBrokerContainer": "zkbroker.broker.toolkit.container",
}


def __getattr__(name: str) -> Any:
    # Imported lazily: `import zkbroker.broker.protocol` (the codec alone) must not start the
    # whole stack.
    home = _HOMES.get(name)
    if home is not None:
        return getattr(importlib.import_module(home), name)
    raise AttributeError(f"module 'zkbroker' has no attribute {name!r}")
