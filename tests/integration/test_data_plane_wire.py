"""The data plane's answers on the wire: Fetch, ListOffsets, OffsetForLeaderEpoch,
DeleteRecords error codes as Kafka gives them; retention, topic deletion, and two engines
each with its own --log-dir (docs/kafka-behaviour.md §15, §24)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.helpers import wait_until, wait_visible, write_topic_like_kafka
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from zkbroker.broker.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from zkbroker.broker.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from zkbroker.broker.protocol.records import iter_batches
from zkbroker.broker.storage import LogDirInUse
from zkbroker.broker.toolkit.wire import WireClient


@pytest.fixture
def cluster(cluster_factory: Callable[..., Cluster]) -> Cluster:
    """Three brokers emulating 3.9 (topic ids in Fetch, max timestamp in ListOffsets)."""
    return cluster_factory(kafka_version=(3, 9))


def _create(cluster: Cluster, name: str, rf: int = 1, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, 1, rf, config=config)])[name].result(30)
    wait_visible(cluster, name)


def _leader(cluster: Cluster, topic: str) -> int:
    return cluster.engine.image.topics[topic].partitions[0].leader


def _client(cluster: Cluster, broker_id: int) -> WireClient:
    node = cluster.engine.brokers[broker_id]
    return WireClient(node.host, node.port)


def _fetch(offset: int, *, topic: str = "", topic_id: uuid.UUID | None = None, **kw: Any):
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=kw.pop("max_wait_ms", 0),
        min_bytes=kw.pop("min_bytes", 0),
        session_id=kw.pop("session_id", 0),
        session_epoch=kw.pop("session_epoch", -1),
        topics=[
            FetchTopic(
                topic=topic,
                topic_id=topic_id or uuid.UUID(int=0),
                partitions=[
                    FetchPartition(
                        partition=0,
                        fetch_offset=offset,
                        partition_max_bytes=kw.pop("partition_max_bytes", 1 << 20),
                        current_leader_epoch=kw.pop("current_leader_epoch", -1),
                    )
                ],
            )
        ],
    )


def test_fetch_answers_as_kafka_does(cluster: Cluster) -> None:
    _create(cluster, "reads", rf=3)
    for i in range(5):
        cluster.produce("reads", b"%d" % i)
    leader = _leader(cluster, "reads")
    follower = next(b for b in (0, 1, 2) if b != leader)
    topic_id = cluster.engine.image.topics["reads"].topic_id
    with _client(cluster, leader) as client:
        whole = client.request(12, _fetch(0, topic="reads")).responses[0].partitions[0]
        assert (whole.error_code, whole.high_watermark, whole.log_start_offset) == (0, 5, 0)
        assert whole.aborted_transactions is None  # read_uncommitted
        assert sum(b.records_count for b in iter_batches(whole.records)) == 5

        past = client.request(12, _fetch(6, topic="reads")).responses[0].partitions[0]
        assert (past.error_code, past.high_watermark) == (error_codes.OFFSET_OUT_OF_RANGE, -1)

        future = client.request(12, _fetch(0, topic="reads", current_leader_epoch=99))
        assert future.responses[0].partitions[0].error_code == error_codes.UNKNOWN_LEADER_EPOCH

        by_id = client.request(13, _fetch(0, topic_id=topic_id)).responses[0]
        assert by_id.topic_id == topic_id and by_id.partitions[0].high_watermark == 5
        unknown = client.request(13, _fetch(0, topic_id=uuid.uuid4())).responses[0]
        assert unknown.partitions[0].error_code == error_codes.UNKNOWN_TOPIC_ID

        # KIP-227: a full fetch opens a session; the next incremental one leaves out the
        # unchanged partition; a wrong epoch or an unknown session is a top-level error.
        opened = client.request(12, _fetch(5, topic="reads", session_epoch=0))
        assert opened.session_id > 0 and len(opened.responses) == 1
        quiet = client.request(
            12, FetchRequest(session_id=opened.session_id, session_epoch=1, max_wait_ms=0)
        )
        assert (quiet.error_code, quiet.responses) == (0, [])
        stale = client.request(
            12, FetchRequest(session_id=opened.session_id, session_epoch=1, max_wait_ms=0)
        )
        assert stale.error_code == error_codes.INVALID_FETCH_SESSION_EPOCH
        lost = client.request(12, FetchRequest(session_id=12345, session_epoch=3))
        assert lost.error_code == error_codes.FETCH_SESSION_ID_NOT_FOUND

    with _client(cluster, follower) as client:
        # KIP-392: v11+ consumers may read a follower; older ones must read the leader.
        old = client.request(10, _fetch(0, topic="reads")).responses[0].partitions[0]
        assert old.error_code == error_codes.NOT_LEADER_OR_FOLLOWER
        # A follower learns the high watermark from its next fetch answer (within
        # replica.fetch.wait.max.ms), so it may lag the leader's for that long.
        new = wait_until(
            lambda: (
                answer
                if (
                    answer := client.request(11, _fetch(0, topic="reads"))
                    .responses[0]
                    .partitions[0]
                ).high_watermark
                == 5
                else None
            )
        )
        assert new.error_code == error_codes.NONE


def test_fetch_before_v4_gets_converted_message_sets(cluster: Cluster) -> None:
    _create(cluster, "old-readers")
    cluster.produce("old-readers", b"hello", key=b"k")
    with _client(cluster, _leader(cluster, "old-readers")) as client:
        for version, magic in ((0, 0), (2, 1), (4, 2)):
            data = client.request(version, _fetch(0, topic="old-readers"))
            records = data.responses[0].partitions[0].records
            (batch,) = list(iter_batches(records))
            assert batch.magic == magic
            (record,) = batch.records()
            assert (record.offset, record.key, record.value) == (0, b"k", b"hello")


def test_fetch_long_poll_returns_at_max_wait(cluster: Cluster) -> None:
    _create(cluster, "idle")
    with _client(cluster, _leader(cluster, "idle")) as client:
        started = time.monotonic()
        answer = client.request(12, _fetch(0, topic="idle", max_wait_ms=400, min_bytes=1))
        waited = time.monotonic() - started
    assert answer.responses[0].partitions[0].records == b""
    assert 0.35 <= waited < 5


def test_list_offsets_and_offset_for_leader_epoch(cluster: Cluster) -> None:
    _create(cluster, "epochs", rf=3)
    for i in range(3):
        cluster.produce("epochs", b"%d" % i)
    leader = _leader(cluster, "epochs")

    def list_offsets(broker: int, version: int, *targets: int) -> list:
        with _client(cluster, broker) as client:
            answer = client.request(
                version,
                ListOffsetsRequest(
                    replica_id=-1,
                    topics=[
                        ListOffsetsTopic(
                            name="epochs",
                            partitions=[
                                ListOffsetsPartition(
                                    partition_index=0, timestamp=t, max_num_offsets=10
                                )
                                for t in targets
                            ],
                        )
                    ],
                ),
            )
        return answer.topics[0].partitions

    (earliest,) = list_offsets(leader, 7, -2)
    (latest,) = list_offsets(leader, 7, -1)
    assert (earliest.offset, latest.offset, latest.leader_epoch) == (0, 3, 0)
    twice = list_offsets(leader, 7, -1, -1)
    assert [p.error_code for p in twice] == [error_codes.INVALID_REQUEST] * 2
    (v0,) = list_offsets(leader, 0, -1)
    assert v0.old_style_offsets == [3, 0]
    follower = next(b for b in (0, 1, 2) if b != leader)
    (refused,) = list_offsets(follower, 7, -1)
    assert refused.error_code == error_codes.NOT_LEADER_OR_FOLLOWER

    # A new leader (epoch 1) then more records: epoch 0 ended where epoch 1 began.
    cluster.stop_broker(leader)
    wait_until(lambda: _leader(cluster, "epochs") not in (leader, -1))
    new_leader = _leader(cluster, "epochs")
    cluster.produce("epochs", b"3")
    with _client(cluster, new_leader) as client:
        answer = client.request(
            4,
            OffsetForLeaderEpochRequest(
                replica_id=-1,
                topics=[
                    OffsetForLeaderTopic(
                        topic="epochs",
                        partitions=[
                            OffsetForLeaderPartition(partition=0, leader_epoch=0),
                            OffsetForLeaderPartition(partition=0, leader_epoch=1),
                        ],
                    )
                ],
            ),
        )
        fenced = client.request(12, _fetch(0, topic="epochs", current_leader_epoch=0))
    first, second = answer.topics[0].partitions
    assert (first.error_code, first.leader_epoch, first.end_offset) == (0, 0, 3)
    assert (second.leader_epoch, second.end_offset) == (1, 4)
    assert fenced.responses[0].partitions[0].error_code == error_codes.FENCED_LEADER_EPOCH


def test_retention_deletes_old_segments(cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(
        broker_ids=(0,),
        kafka_version=(3, 9),
        broker_configs=(("log.retention.check.interval.ms", "200"),),
    )
    _create(cluster, "short", **{"segment.bytes": "100", "retention.bytes": "1"})
    for i in range(5):
        cluster.produce("short", b"%d" % i)
    # Every full segment goes; the active one stays until it rolls.
    wait_until(lambda: [r.value for r in cluster.records("short")] == [b"4"], timeout=10)
    assert cluster.engine.log_of("short", 0).log_start_offset == 4


def test_a_deleted_topic_takes_its_records(cluster: Cluster) -> None:
    _create(cluster, "gone")
    cluster.produce("gone", b"old")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.delete_topics(["gone"])["gone"].result(30)
    wait_until(lambda: "gone" not in cluster.engine.image.topics)
    wait_until(lambda: cluster.engine.log_of("gone", 0) is None)
    _create(cluster, "gone")
    assert cluster.records("gone") == []
    assert cluster.produce("gone", b"new") == 0


def test_two_engines_each_with_its_own_log_dir(
    cluster_factory: Callable[..., Cluster], tmp_path, zk_connect: str, kazoo
) -> None:
    """Each broker keeps its own log (a second process on the same log dir is refused with
    Kafka's message); the follower in the other process has every record when the leader
    goes."""
    first = cluster_factory(broker_ids=(0,), log_dir=str(tmp_path / "first"))
    with pytest.raises(LogDirInUse, match=r"Failed to acquire lock on file \.lock in "):
        cluster_factory(broker_ids=(1,), log_dir=str(tmp_path / "first"), zookeeper=zk_connect)
    second = cluster_factory(
        broker_ids=(1,), log_dir=str(tmp_path / "second"), zookeeper=zk_connect
    )
    wait_until(lambda: len(first.engine.image.brokers) == 2)
    write_topic_like_kafka(kazoo, "shared", {0: [0, 1]}, topic_id="p3t0vCrqQkKpWBbNG2j1Zg")
    wait_visible(first, "shared")
    wait_visible(second, "shared")
    for i in range(3):
        first.produce("shared", b"%d" % i)
    first.stop_broker(0)  # the leader moves to broker 1, in the other engine
    wait_until(lambda: second.engine.image.topics["shared"].partitions[0].leader == 1)
    assert second.produce("shared", b"3") == 3
    assert [r.value for r in second.records("shared")] == [b"0", b"1", b"2", b"3"]
