"""zkbroker's pytest plugin (`zkbroker.broker.toolkit.pytest_plugin`), used as any project would use
it: `zk_cluster` shared and cleaned between tests, `zk_cluster_factory` for special clusters,
and the plugin loaded through its `pytest11` entry point in a project of its own."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.broker.toolkit.zookeeper import TEST_ZOOKEEPER_ENV, ZooKeeperEndpoint


def admin_of(cluster: Cluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)


# The two tests below run in this order (pytest keeps file order): the first leaves topics,
# a config override and a stopped broker behind; the second sees none of it.
_SEEN: dict[str, str] = {}


def test_zk_cluster_first_test_leaves_a_mess(zk_cluster: Cluster) -> None:
    _SEEN["bootstrap"] = zk_cluster.bootstrap_servers
    admin = admin_of(zk_cluster)
    try:
        admin.create_topics([NewTopic("left-over", 3, 2), NewTopic("also-left", 1, 1)])
        assert {"left-over", "also-left"} <= set(admin.list_topics())
        admin.alter_configs(
            [ConfigResource(ConfigResourceType.BROKER, "0", {"log.cleaner.threads": "2"})]
        )
        admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "left-over", {"retention.ms": "1000"})]
        )
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "left-over")])
        assert described["topic"]["left-over"]["retention.ms"]["value"] == "1000"
    finally:
        admin.close()
    wait_until(
        lambda: zk_cluster.engine.image.broker_configs.get("0") == {"log.cleaner.threads": "2"}
    )
    zk_cluster.stop_broker(2)


def test_zk_cluster_second_test_starts_clean(zk_cluster: Cluster) -> None:
    # The same cluster (no restart), cleaned.
    assert zk_cluster.bootstrap_servers == _SEEN["bootstrap"]
    assert all(node.running for node in zk_cluster.engine.brokers.values())
    admin = admin_of(zk_cluster)
    try:
        assert admin.list_topics() == []
        assert not zk_cluster.run_sync(lambda: zk_cluster.engine.image.broker_configs.get("0"))
        # A topic of the same name is a new topic, without the old override.
        admin.create_topics([NewTopic("left-over", 1, 1)])
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "left-over")])
        # kafka-python lists only configs that are not defaults.
        assert "retention.ms" not in described["topic"]["left-over"]
    finally:
        admin.close()


def test_zk_cluster_factory_custom_cluster(zk_cluster_factory) -> None:
    cluster = zk_cluster_factory(
        brokers=2, kafka_version="3.9", racks="r1,r2", auto_create_topics=False
    )
    admin = admin_of(cluster)
    try:
        described = admin.describe_cluster()
        assert sorted((b["broker_id"], b["rack"]) for b in described["brokers"]) == [
            (0, "r1"),
            (1, "r2"),
        ]
        admin.create_topics([NewTopic("own", 2, 2)])
        assert admin.list_topics() == ["own"]
    finally:
        admin.close()
    # Its own chroot: the session cluster does not see its topics, and vice versa.
    assert cluster.zookeeper_connect != ""
    # A second process-like part of the same cluster joins on its ZooKeeper.
    joined = zk_cluster_factory(broker_ids=(5,), zookeeper=cluster.zookeeper_connect)
    wait_until(lambda: sorted(joined.engine.image.brokers) == [0, 1, 5])
    assert joined.engine.settings.kafka_version == (3, 9)  # the default


def test_factory_and_session_cluster_are_isolated(zk_cluster, zk_cluster_factory) -> None:
    other = zk_cluster_factory(brokers=1)
    admin = admin_of(other)
    try:
        admin.create_topics([NewTopic("only-here", 1, 1)])
    finally:
        admin.close()
    assert other.zookeeper_connect != zk_cluster.zookeeper_connect
    assert "only-here" not in zk_cluster.engine.image.topics


def test_plugin_loads_in_another_project(tmp_path: Path, zookeeper: ZooKeeperEndpoint) -> None:
    """A project with no conftest gets the fixtures from the installed entry point."""
    (tmp_path / "test_mine.py").write_text(
        textwrap.dedent(
            """
            from kafka.admin import KafkaAdminClient, NewTopic

            def test_create(zk_cluster):
                admin = KafkaAdminClient(bootstrap_servers=zk_cluster.bootstrap_servers)
                admin.create_topics([NewTopic("mine", 1, 1)])
                assert admin.list_topics() == ["mine"]
                admin.close()

            def test_clean_again(zk_cluster):
                admin = KafkaAdminClient(bootstrap_servers=zk_cluster.bootstrap_servers)
                assert admin.list_topics() == []
                admin.close()

            def test_factory(zk_cluster_factory):
                cluster = zk_cluster_factory(brokers=1, kafka_version="2.4")
                assert len(cluster.engine.brokers) == 1
            """
        )
    )
    env = {
        "PATH": "/usr/bin:/bin",
        TEST_ZOOKEEPER_ENV: zookeeper.connect_string,
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_mine.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "3 passed" in result.stdout


@pytest.mark.parametrize("bad", [{"brokers": 0}, {"kafka_version": "9.9"}])
def test_zk_cluster_factory_refuses_bad_options(zk_cluster_factory, bad) -> None:
    with pytest.raises(ValueError):
        zk_cluster_factory(**bad)
