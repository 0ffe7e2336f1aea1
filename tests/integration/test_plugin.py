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


# The next two tests run in this order too: the first changes every kind of state a test can
# leave (through clients, and in ZooKeeper directly as Kafka's own tools write it), the second
# finds the cluster as the first found it: ZooKeeper's persistent nodes, node for node, and
# what brokers keep in memory.
_CLEAN: dict[str, dict[str, bytes]] = {}
# Nodes that change in any running cluster: registrations, epochs, id blocks, and notification
# queues (consumed and purged by the brokers on their own schedule; a queue's root is made by
# its first writer and kept, as Kafka keeps it).
_VOLATILE_ROOTS = (
    "/delegation_token",
    "/delegation_token/token_changes",
    "/kafka-acl-changes",
    "/kafka-acl-extended-changes",
)
_VOLATILE = (
    "/brokers/ids/",
    "/controller",
    "/controller_epoch",
    "/latest_producer_id_block",
    "/config/changes/",
    "/kafka-acl-changes/",
    "/kafka-acl-extended-changes/",
    "/delegation_token/token_changes/",
    "/isr_change_notification/",
    "/log_dir_event_notification/",
    "/zkbroker/",
)


def _persistent_tree(cluster: Cluster) -> dict[str, bytes]:
    from zkbroker.zk_layout import ZkStore

    async def dump() -> dict[str, bytes]:
        store = await ZkStore.connect(cluster.zookeeper_connect)
        try:
            tree: dict[str, bytes] = {}
            level = ["/"]
            while level:
                below: list[str] = []
                for path in level:
                    got = await store.get(path)
                    if got is None or got[1].ephemeralOwner:
                        continue
                    if not path.startswith(_VOLATILE) and path not in _VOLATILE + _VOLATILE_ROOTS:
                        tree[path] = got[0]
                    for name in await store.get_children(path) or ():
                        below.append(f"{path.rstrip('/')}/{name}")
                level = below
            return tree
        finally:
            await store.close()

    return cluster.call(dump())


def _leave_state_in_zookeeper(cluster: Cluster) -> None:
    """What Kafka's tools write into ZooKeeper directly (kafka-acls.sh --authorizer-properties
    zookeeper.connect=..., a token, a feature level)."""
    from zkbroker.zk_layout import AclNode, DelegationTokenInfoNode, ZkStore
    from zkbroker.zk_layout.nodes.acl import AclEntry
    from zkbroker.zk_layout.nodes.delegation_token import Principal, TokenInformation

    async def write() -> None:
        store = await ZkStore.connect(cluster.zookeeper_connect)
        try:
            entry = AclEntry("User:alice", "Allow", "Read", "*")
            for path in (AclNode.path("Topic", "left"), AclNode.path("Group", "g", "PREFIXED")):
                data = AclNode.encode(frozenset({entry}), (3, 9))
                await store.create(path, data, makepath=True)
            alice = Principal("User", "alice")
            token = TokenInformation("tok-1", alice, alice, (), 1, 2**40, 2**40)
            data = DelegationTokenInfoNode.encode(token, (3, 9))
            await store.create(DelegationTokenInfoNode.path("tok-1"), data, makepath=True)
        finally:
            await store.close()

    cluster.call(write())


def test_zk_cluster_leaves_every_kind_of_state(zk_cluster: Cluster) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    _CLEAN["tree"] = _persistent_tree(zk_cluster)
    bootstrap = zk_cluster.bootstrap_servers
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "left-txn"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("txn-topic", b"x")
    producer.commit_transaction(30)
    del producer  # no client left to create the internal topics again after the cleaning
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "left-group"})
    consumer.commit(offsets=[TopicPartition("txn-topic", 0, 1)], asynchronous=False)
    consumer.close()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    upsert = UserScramCredentialUpsertion("carol", info, b"pw")
    admin.alter_user_scram_credentials([upsert])["carol"].result(30)
    kafka_admin = admin_of(zk_cluster)
    try:  # confluent-kafka has no BROKER_LOGGER resource: kafka-python, incrementally
        levels = {"kafka.server.KafkaApis": "TRACE"}
        logger = ConfigResource(ConfigResourceType.BROKER_LOGGER, "0", levels)
        kafka_admin.alter_configs([logger], incremental=True)
    finally:
        kafka_admin.close()
    loggers = zk_cluster.engine.brokers[0].broker_loggers
    assert loggers.effective("kafka.server.KafkaApis") == "TRACE"
    _leave_state_in_zookeeper(zk_cluster)


def test_zk_cluster_then_is_as_it_was(zk_cluster: Cluster) -> None:
    from confluent_kafka.admin import AdminClient

    assert _persistent_tree(zk_cluster) == _CLEAN["tree"]
    admin = AdminClient({"bootstrap.servers": zk_cluster.bootstrap_servers})
    assert admin.list_consumer_groups().result(30).valid == []
    assert admin.describe_user_scram_credentials().result(30) == {}
    loggers = zk_cluster.engine.brokers[0].broker_loggers
    assert loggers.effective("kafka.server.KafkaApis") == "INFO"
    for node in zk_cluster.engine.brokers.values():
        _, listed = node.transaction_coordinator.list_states(set(), set(), -1)
        assert listed == []


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
