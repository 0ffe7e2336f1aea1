"""Fixtures for integration tests: zkbroker clusters on the session's real ZooKeeper."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from zkbroker import Cluster


@pytest.fixture
def cluster_factory(
    zk_cluster_factory: Callable[..., Cluster], zk_connect: str, request: pytest.FixtureRequest
) -> Callable[..., Cluster]:
    """The shipped `zk_cluster_factory`, on this test's chroot (the one `kazoo` looks at):
    `cluster_factory(broker_ids=(0, 1), ...)`; every cluster is stopped after the test. A test
    marked `@pytest.mark.kafka_version("2.8")` gets that release unless it names another."""
    marker = request.node.get_closest_marker("kafka_version")

    def start(**settings: Any) -> Cluster:
        settings.setdefault("zookeeper", zk_connect)
        if marker is not None:
            settings.setdefault("kafka_version", marker.args[0])
        return zk_cluster_factory(**settings)

    return start


@pytest.fixture
def cluster(cluster_factory: Callable[..., Cluster]) -> Cluster:
    """A 3-broker cluster (ids 0, 1, 2) emulating the default release (3.9), or the one a
    `@pytest.mark.kafka_version(...)` marker names."""
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
