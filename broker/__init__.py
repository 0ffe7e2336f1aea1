"""zkbroker: a Kafka mock broker and controller of a ZooKeeper-mode cluster, on a real ZooKeeper.

The one public face: `Cluster`, `BrokerHandle` and `Security` (re-exported by
`broker.cluster`). The pytest fixtures are `broker.toolkit.pytest_plugin` (registered as a
pytest plugin when zkbroker is installed); the `zkbroker` command is `broker.cli`. Where
everything else is: "Where things are" in README.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["BrokerHandle", "Cluster", "OffsetsUnavailable", "ProduceFailed", "Security"]

if TYPE_CHECKING:
    from broker.cluster import BrokerHandle, Cluster, OffsetsUnavailable, ProduceFailed, Security


def __getattr__(name: str) -> Any:
    # Imported lazily: `import broker.protocol` (the codec) must not start the whole stack.
    if name in __all__:
        from broker import cluster

        return getattr(cluster, name)
    raise AttributeError(f"module 'broker' has no attribute {name!r}")
