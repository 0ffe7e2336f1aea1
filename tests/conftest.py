"""Session-wide test configuration: markers and the shared ZooKeeper.

Fixtures for one area of the suite belong in that directory's conftest.py;
only fixtures every area needs live here, one commented block per group.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from zkbroker.broker.toolkit.zookeeper import ZooKeeperEndpoint, fresh_chroot, remove_chroot

# ---------------------------------------------------------------------------
# Markers
#
# Everything under tests/integration needs a real ZooKeeper and opens sockets;
# marking it here (not per file) means `-m "not integration"` can never miss a
# test someone forgot to decorate.
# ---------------------------------------------------------------------------

_INTEGRATION_DIR = Path(__file__).parent / "integration"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _INTEGRATION_DIR in item.path.parents:
            item.add_marker(pytest.mark.integration)


# ---------------------------------------------------------------------------
# ZooKeeper
#
# `zookeeper`: one server per test session; ZKBROKER_TEST_ZOOKEEPER=host:port,
#   else a Docker container, else a local JVM (see broker/testing.py).
# `zk_connect`: that server's connect string plus a chroot of its own, so tests
#   are isolated without paying a ZooKeeper start each. The chroot znode is
#   created by whoever connects first (zkbroker's store does it itself).
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def zookeeper(zk_test_zookeeper: ZooKeeperEndpoint) -> ZooKeeperEndpoint:
    # zkbroker's own pytest plugin (zkbroker.broker.toolkit.pytest_plugin) provides the server, so
    # the plugin's fixtures (zk_cluster, zk_cluster_factory) and ours share one ZooKeeper.
    return zk_test_zookeeper


@pytest.fixture
def zk_connect(zookeeper: ZooKeeperEndpoint) -> Iterator[str]:
    connect_string = fresh_chroot(zookeeper.connect_string)
    yield connect_string
    # Container and local servers vanish with the session; a shared external
    # ensemble would otherwise collect one chroot per test run.
    if zookeeper.kind == "external":
        remove_chroot(connect_string)


# ---------------------------------------------------------------------------
# Logging
#
# Some tests run the command's `main([...])` in this process; its `configure_logging` is the
# command's (a stderr handler on the root logger, the levels of the root, `zkbroker` and
# `kazoo`), meant for a process of its own. Each test gets the levels back afterwards and
# loses the handler, so a later test sees zkbroker's events as a user's process would.
# ---------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _logging_as_before() -> Iterator[None]:
    import logging

    import structlog

    from zkbroker.broker.log import ROOT_LOGGER

    loggers = [logging.getLogger(name) for name in ("", ROOT_LOGGER, "kazoo")]
    levels = [logger.level for logger in loggers]
    before = set(logging.getLogger().handlers)
    yield
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler not in before and isinstance(
            handler.formatter, structlog.stdlib.ProcessorFormatter
        ):
            root.removeHandler(handler)
