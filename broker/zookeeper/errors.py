"""The errors of the embedded ZooKeeper: what a caller of `EmbeddedZooKeeper` (the command, the
cluster, the pytest plugin) catches and shows.

Not here: the launcher's own control flow between attempts
(`zkbroker.broker.zookeeper.jvm_launch`), errors of the client side (`zkbroker.zk_layout.errors`).
"""

from __future__ import annotations

from collections.abc import Sequence

_USE_RUNNING = "pass --zookeeper host:port to use a running ensemble"


class ZooKeeperError(RuntimeError):
    """Base class of the embedded ZooKeeper's errors."""


class ZooKeeperNotFoundError(ZooKeeperError):
    """Java or a ZooKeeper installation is missing; the message says how to get it.

    `what` says what is missing and where it was looked for; `remedies` are the ways to
    install it; `elsewhere` the way to use a ZooKeeper that runs already, which differs
    between the command line (the default) and a test session (the pytest plugin)."""

    def __init__(self, what: str, remedies: Sequence[str], *, elsewhere: str = _USE_RUNNING):
        self.what, self.remedies = what, tuple(remedies)
        super().__init__(f"{what}: {', or '.join((*self.remedies, elsewhere))}.")


class ZooKeeperStartError(ZooKeeperError):
    """The JVM was launched but ZooKeeper did not come up; the message quotes its logs."""


class ZooKeeperDataDirInUseError(ZooKeeperError):
    """Another server (of this or another process) uses the data directory."""
