"""Fixtures for integration tests: zkbroker clusters on the session's real ZooKeeper."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from broker.runner import ClusterThread
from broker.settings import Settings


@pytest.fixture
def cluster_factory(zk_connect: str) -> Iterator[Callable[..., ClusterThread]]:
    """Start clusters on a fresh chroot: `cluster_factory(broker_ids=(0, 1), ...)`."""
    started: list[ClusterThread] = []

    def start(**overrides: Any) -> ClusterThread:
        options: dict[str, Any] = {"port": 0, "zookeeper": zk_connect}
        options.update(overrides)
        runner = ClusterThread(Settings(**options)).start()
        started.append(runner)
        return runner

    yield start
    for runner in reversed(started):
        runner.stop()


@pytest.fixture
def cluster(cluster_factory: Callable[..., ClusterThread]) -> ClusterThread:
    """A 3-broker cluster (ids 0, 1, 2) emulating the default release."""
    return cluster_factory()


@pytest.fixture
def kazoo(zk_connect: str) -> Iterator[KazooClient]:
    """A plain kazoo client on the test's chroot, to look at or write znodes directly."""
    hosts, _, chroot = zk_connect.partition("/")
    root = KazooClient(hosts=hosts)
    root.start(timeout=15)
    root.ensure_path("/" + chroot)
    root.stop()
    root.close()
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture(autouse=True, scope="session")
def _debug_logging() -> Iterator[None]:
    """Log at debug level so every request's log line (and its error-code walk) is exercised."""
    import logging

    from broker.log import configure_logging

    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    configure_logging("debug", "console")
    yield
    # The handler writes to the stream pytest captured; threads still logging at shutdown
    # (kazoo's) must not write to it once pytest has closed it.
    root.handlers[:], _ = saved[0], root.setLevel(saved[1])
