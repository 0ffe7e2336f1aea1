"""zkbroker: a Kafka mock broker and controller for the admin APIs, on a real ZooKeeper.

The public Python API is `Cluster` (see `broker.api`); the pytest fixtures are in
`broker.pytest_plugin`, registered as a pytest plugin when zkbroker is installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["BrokerHandle", "Cluster"]

if TYPE_CHECKING:
    from broker.api import BrokerHandle, Cluster


def __getattr__(name: str) -> Any:
    # Imported lazily: `import broker.protocol` (the codec) must not start the whole stack.
    if name in __all__:
        from broker import api

        return getattr(api, name)
    raise AttributeError(f"module 'broker' has no attribute {name!r}")
