"""DescribeLogDirs (35) and AlterReplicaLogDirs (34) as a Kafka 3.9 ZooKeeper-mode broker
answers them, with each broker's one log dir: `--log-dir`, or in memory the configured
`log.dirs`/`log.dir` (docs/kafka-behaviour.md §15).

kafka-python's admin client speaks both APIs; the version-specific and error cases go over the
wire with `WireClient`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
from kafka import KafkaAdminClient
from kafka.admin import NewTopic as KafkaNewTopic
from kafka.errors import NoError

from tests.integration.helpers import wait_until, wait_visible
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.alter_replica_log_dirs import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from zkbroker.broker.protocol.messages.describe_log_dirs import (
    DescribableLogDirTopic,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)
from zkbroker.broker.settings import Settings
from zkbroker.broker.toolkit.wire import WireClient

KAFKA_DEFAULT_DIR = "/tmp/kafka-logs"


def _create(cluster: Cluster, name: str, assignment: list[list[int]]) -> None:
    """A topic with an explicit replica assignment (partition i on `assignment[i]`); through
    kafka-python, as confluent-kafka 2.16 refuses any replica assignment locally."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics(
            [
                KafkaNewTopic(
                    name,
                    num_partitions=-1,
                    replication_factor=-1,
                    replica_assignments=dict(enumerate(assignment)),
                )
            ]
        )
    finally:
        admin.close()
    wait_visible(cluster, name)


def _client(cluster: Cluster, broker_id: int) -> WireClient:
    node = cluster.engine.brokers[broker_id]
    return WireClient(node.host, node.port)


def _size(cluster: Cluster, topic: str, partition: int) -> int:
    log = cluster.engine.log_of(topic, partition)
    return 0 if log is None else log.size_bytes


def _sizes(response: DescribeLogDirsResponse) -> dict[tuple[str, int], int]:
    (result,) = response.results
    return {
        (t.name, p.partition_index): p.partition_size for t in result.topics for p in t.partitions
    }


@pytest.fixture
def kafka_admin(cluster: Cluster) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        yield admin
    finally:
        admin.close()


@pytest.fixture
def cluster(cluster_factory: Callable[..., Cluster]) -> Cluster:
    """Three in-memory brokers emulating 3.9 (DescribeLogDirs v4, AlterReplicaLogDirs v2)."""
    return cluster_factory(kafka_version=(3, 9))


def test_kafka_python_describes_each_brokers_hosted_partitions(
    cluster: Cluster, kafka_admin: KafkaAdminClient
) -> None:
    # p0 on brokers 0 and 1, p1 on brokers 2 and 0.
    _create(cluster, "sizes", [[0, 1], [2, 0]])
    for i in range(4):
        cluster.produce("sizes", b"value-%d" % i, partition=0)
    cluster.produce("sizes", b"x" * 300, partition=1)
    expected = {(t, p): _size(cluster, t, p) for t, p in (("sizes", 0), ("sizes", 1))}
    assert all(expected.values())

    answers = {a["broker"]: a["log_dirs"] for a in kafka_admin.describe_log_dirs()}
    assert sorted(answers) == [0, 1, 2]
    hosted = {0: {("sizes", 0), ("sizes", 1)}, 1: {("sizes", 0)}, 2: {("sizes", 1)}}
    for broker_id, log_dirs in answers.items():
        (only,) = log_dirs
        assert only["error_code"] == 0
        assert only["log_dir"] == KAFKA_DEFAULT_DIR
        # In memory nothing is written there, so the volume is "unknown".
        assert (only["total_bytes"], only["usable_bytes"]) == (-1, -1)
        partitions = {
            (t["name"], p["partition_index"]): p for t in only["topics"] for p in t["partitions"]
        }
        assert set(partitions) == hosted[broker_id]
        for key, p in partitions.items():
            # Each replica reports its own log (caught up by acks=all: the leader's size).
            assert p["partition_size"] == cluster.engine.logs_of[broker_id].get(*key).size_bytes
            assert p["partition_size"] == expected[key]
            assert (p["offset_lag"], p["is_future_key"]) == (0, False)

    # Named partitions: only those the broker hosts come back.
    (named,) = kafka_admin.describe_log_dirs({"sizes": [0, 1]}, brokers=[2])
    (only,) = named["log_dirs"]
    assert [
        (t["name"], [p["partition_index"] for p in t["partitions"]]) for t in only["topics"]
    ] == [("sizes", [1])]


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_describe_log_dirs_every_version(cluster: Cluster, version: int) -> None:
    _create(cluster, "multi", [[0], [1], [0]])
    cluster.produce("multi", b"a" * 100, partition=0)
    cluster.produce("multi", b"b" * 10, partition=2)
    with _client(cluster, 0) as client:
        every = client.request(version, DescribeLogDirsRequest(topics=None))
        assert _sizes(every) == {
            ("multi", 0): _size(cluster, "multi", 0),
            ("multi", 2): _size(cluster, "multi", 2),
        }
        (result,) = every.results
        assert (result.error_code, result.log_dir) == (error_codes.NONE, KAFKA_DEFAULT_DIR)
        # v3 adds the top-level error code (NONE), v4 the volume sizes (-1 in memory).
        assert every.error_code == error_codes.NONE
        assert (result.total_bytes, result.usable_bytes) == (-1, -1)

        # Not hosted (p1), out of range (p9) and unknown topics are left out, no error.
        named = client.request(
            version,
            DescribeLogDirsRequest(
                topics=[
                    DescribableLogDirTopic(topic="multi", partitions=[1, 2, 9]),
                    DescribableLogDirTopic(topic="nope", partitions=[0]),
                ]
            ),
        )
        assert _sizes(named) == {("multi", 2): _size(cluster, "multi", 2)}
        # An empty list asks for nothing: the dir alone.
        nothing = client.request(version, DescribeLogDirsRequest(topics=[]))
        assert [(r.log_dir, r.topics) for r in nothing.results] == [(KAFKA_DEFAULT_DIR, [])]


def test_in_memory_log_dir_follows_the_configured_log_dirs(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(
        broker_ids=(0,),
        kafka_version=(3, 9),
        broker_configs=(("log.dirs", "/data/k1, /data/k2"), ("log.dir", "/ignored")),
    )
    with _client(cluster, 0) as client:
        (result,) = client.request(4, DescribeLogDirsRequest(topics=None)).results
        # log.dirs wins over log.dir; zkbroker's one dir is its first entry.
        assert result.log_dir == "/data/k1"
        moved = client.request(
            2,
            AlterReplicaLogDirsRequest(
                dirs=[AlterReplicaLogDir(path="/data/k2", topics=[_topic("any", 0)])]
            ),
        )
        assert _codes(moved) == {("any", 0): error_codes.LOG_DIR_NOT_FOUND}


def test_on_disk_log_dir_sizes_volume_and_describe_configs(
    cluster_factory: Callable[..., Cluster], tmp_path: Any
) -> None:
    log_dir = str(tmp_path / "logs")
    cluster = cluster_factory(broker_ids=(0, 1), kafka_version=(3, 9), log_dir=log_dir)
    _create(cluster, "disk", [[0, 1]])
    for i in range(3):
        cluster.produce("disk", b"on disk %d" % i)
    # Two brokers in one process: each its own directory under --log-dir.
    broker_dir = os.path.join(os.path.abspath(log_dir), "broker-1")
    wait_until(lambda: cluster.engine.logs_of[1].get("disk", 0).log_end_offset == 3)
    on_disk = sum(
        e.stat().st_size
        for e in os.scandir(os.path.join(broker_dir, "disk-0"))
        if e.name.endswith(".log")
    )
    assert on_disk == _size(cluster, "disk", 0) > 0

    with _client(cluster, 1) as client:
        response = client.request(4, DescribeLogDirsRequest(topics=None))
        (result,) = response.results
        assert result.log_dir == broker_dir
        assert _sizes(response) == {("disk", 0): on_disk}
        stats = os.statvfs(log_dir)
        assert result.total_bytes == stats.f_blocks * stats.f_frsize
        assert 0 < result.usable_bytes <= result.total_bytes
        # Before v4 the sizes are not on the wire: the decoded default.
        (old,) = client.request(3, DescribeLogDirsRequest(topics=None)).results
        assert (old.log_dir, old.total_bytes, old.usable_bytes) == (result.log_dir, -1, -1)

    # DescribeConfigs names the same dir, as a static broker config.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    (future,) = admin.describe_configs([ConfigResource("BROKER", "1")]).values()
    entry = future.result(timeout=30)["log.dirs"]
    assert entry.value == broker_dir
    assert entry.source == ConfigSource.STATIC_BROKER_CONFIG.value

    # Moving a replica to the dir it is in is NONE: nothing to do.
    kafka_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        moved = kafka_admin.alter_replica_log_dirs(
            {("disk", 0, 0): os.path.join(os.path.abspath(log_dir), "broker-0")}
        )
    finally:
        kafka_admin.close()
    assert [(tpr.topic, tpr.partition, tpr.broker_id) for tpr in moved] == [("disk", 0, 0)]
    assert list(moved.values()) == [NoError]


def _topic(name: str, *partitions: int) -> AlterReplicaLogDirTopic:
    return AlterReplicaLogDirTopic(name=name, partitions=list(partitions))


def _codes(response: Any) -> dict[tuple[str, int], int]:
    return {
        (t.topic_name, p.partition_index): p.error_code
        for t in response.results
        for p in t.partitions
    }


@pytest.mark.parametrize("version", [0, 1, 2])
def test_alter_replica_log_dirs_answers_as_kafka_does(cluster: Cluster, version: int) -> None:
    _create(cluster, "moves", [[0, 1], [1, 2], [2, 0]])
    # "<topic>-<partition>.<32 hex>-future" may have 255 characters, not 256.
    long_name, longest = "t" * 214, "t" * 213
    with _client(cluster, 0) as client:
        response = client.request(
            version,
            AlterReplicaLogDirsRequest(
                dirs=[
                    AlterReplicaLogDir(
                        path=KAFKA_DEFAULT_DIR,
                        topics=[
                            _topic("moves", 0, 1, 7),
                            _topic("unknown", 0),
                            _topic(long_name, 0),
                        ],
                    ),
                    AlterReplicaLogDir(
                        path="/elsewhere", topics=[_topic("unknown", 1), _topic(longest, 0)]
                    ),
                    # Not the exact absolute path: Kafka compares text.
                    AlterReplicaLogDir(path=KAFKA_DEFAULT_DIR + "/", topics=[_topic("moves", 2)]),
                ]
            ),
        )
        assert _codes(response) == {
            ("moves", 0): error_codes.NONE,  # hosted, already in this dir
            ("moves", 1): error_codes.REPLICA_NOT_AVAILABLE,  # known, hosted elsewhere
            ("moves", 7): error_codes.UNKNOWN_TOPIC_OR_PARTITION,
            ("unknown", 0): error_codes.UNKNOWN_TOPIC_OR_PARTITION,
            (long_name, 0): error_codes.INVALID_TOPIC_EXCEPTION,
            # The path is checked before the partition.
            ("unknown", 1): error_codes.LOG_DIR_NOT_FOUND,
            (longest, 0): error_codes.LOG_DIR_NOT_FOUND,
            ("moves", 2): error_codes.LOG_DIR_NOT_FOUND,
        }
        # One entry per topic, in the order the request first names them.
        assert [t.topic_name for t in response.results] == ["moves", "unknown", long_name, longest]

        # A partition named under two dirs is answered once, for the last one.
        twice = client.request(
            version,
            AlterReplicaLogDirsRequest(
                dirs=[
                    AlterReplicaLogDir(path="/elsewhere", topics=[_topic("moves", 0)]),
                    AlterReplicaLogDir(path=KAFKA_DEFAULT_DIR, topics=[_topic("moves", 0)]),
                ]
            ),
        )
        assert [(t.topic_name, len(t.partitions)) for t in twice.results] == [("moves", 1)]
        assert _codes(twice) == {("moves", 0): error_codes.NONE}


def test_topic_being_deleted_is_not_hosted(cluster: Cluster, kazoo: Any) -> None:
    _create(cluster, "gone", [[0, 1]])
    cluster.produce("gone", b"soon deleted")
    # With a replica on a stopped broker the deletion waits, as in Kafka.
    cluster.stop_broker(1)
    kazoo.create("/admin/delete_topics/gone", b"")  # as kafka-topics --delete marks it
    wait_until(lambda: "gone" in cluster.engine.image.topics_being_deleted)
    with _client(cluster, 0) as client:
        moved = client.request(
            2,
            AlterReplicaLogDirsRequest(
                dirs=[AlterReplicaLogDir(path=KAFKA_DEFAULT_DIR, topics=[_topic("gone", 0)])]
            ),
        )
        # Deletion began with leader -2 in UpdateMetadata: the broker's metadata cache forgot
        # the partition and StopReplica removed it, so getPartitionOrException finds neither
        # (UNKNOWN_TOPIC_OR_PARTITION, not the NOT_LEADER_OR_FOLLOWER that a known partition
        # hosted elsewhere gets and that this API answers as REPLICA_NOT_AVAILABLE).
        assert _codes(moved) == {("gone", 0): error_codes.UNKNOWN_TOPIC_OR_PARTITION}
        # Its log is gone from the broker's log dir too.
        described = client.request(4, DescribeLogDirsRequest(topics=None))
        assert _sizes(described) == {}


def test_log_dirs_broker_config_is_refused_beside_log_dir(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="use --log-dir"):
        Settings(log_dir=str(tmp_path), broker_configs=(("log.dirs", "/other"),))
    configs = Settings(log_dir="relative/logs").static_broker_configs(0, 9092, "zk")
    assert configs["log.dirs"] == os.path.abspath("relative/logs")
    assert "log.dirs" not in Settings().static_broker_configs(0, 9092, "zk")
