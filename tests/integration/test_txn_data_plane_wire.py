"""The transactional data plane over the wire on a real cluster (docs/kafka-behaviour.md §17):
transactional Produce on a release before KIP-890's verification (3.5), WriteTxnMarkers with
Kafka's per-partition errors, the LSO and aborted transactions of read_committed Fetch,
DescribeProducers, and TxnOffsetCommit's group checks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.helpers import wait_until, wait_visible
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.describe_producers import (
    DescribeProducersRequest,
    TopicRequest,
)
from zkbroker.broker.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from zkbroker.broker.protocol.messages.find_coordinator import FindCoordinatorRequest
from zkbroker.broker.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from zkbroker.broker.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from zkbroker.broker.protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from zkbroker.broker.protocol.records import NewRecord, encode_batch
from zkbroker.broker.toolkit.wire import WireClient

TOPIC = "txn-wire-data"
PID = 4242


@pytest.fixture
def cluster(cluster_factory: Callable[..., Cluster]) -> Cluster:
    cluster = cluster_factory(kafka_version="3.5")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(timeout=30)
    wait_visible(cluster, TOPIC)
    return cluster


def _client(cluster: Cluster, broker_id: int) -> WireClient:
    node = cluster.engine.brokers[broker_id]
    return WireClient(node.host, node.port)


def _leader_id(cluster: Cluster) -> int:
    return cluster.engine.image.topics[TOPIC].partitions[0].leader


def _produce(
    client: WireClient, *, epoch: int, sequence: int, transactional: bool, offset: int = 0
) -> int:
    batch = encode_batch(
        [NewRecord(offset, int(time.time() * 1000), None, b"v")],
        base_offset=0,
        producer_id=PID,
        producer_epoch=epoch,
        base_sequence=sequence,
        transactional=transactional,
    )
    got = client.request(
        8,
        ProduceRequest(
            transactional_id="wire-txn" if transactional else None,
            acks=-1,
            timeout_ms=5000,
            topic_data=[
                TopicProduceData(
                    name=TOPIC, partition_data=[PartitionProduceData(index=0, records=batch)]
                )
            ],
        ),
    )
    return int(got.responses[0].partition_responses[0].error_code)


def _marker(
    client: WireClient,
    *,
    commit: bool,
    epoch: int = 0,
    coordinator_epoch: int = 0,
    topic: str = TOPIC,
) -> int:
    got = client.request(
        1,
        WriteTxnMarkersRequest(
            markers=[
                WritableTxnMarker(
                    producer_id=PID,
                    producer_epoch=epoch,
                    transaction_result=commit,
                    coordinator_epoch=coordinator_epoch,
                    topics=[WritableTxnMarkerTopic(name=topic, partition_indexes=[0])],
                )
            ]
        ),
    )
    marker = got.markers[0]
    assert marker.producer_id == PID and marker.topics[0].name == topic
    return int(marker.topics[0].partitions[0].error_code)


def _read_committed(client: WireClient) -> tuple[int, int, list[tuple[int, int]]]:
    got = client.request(
        11,
        FetchRequest(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=1 << 20,
            isolation_level=1,
            topics=[
                FetchTopic(
                    topic=TOPIC,
                    partitions=[
                        FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
                    ],
                )
            ],
        ),
    )
    p = got.responses[0].partitions[0]
    assert p.error_code == ec.NONE
    aborted = [(a.producer_id, a.first_offset) for a in p.aborted_transactions or []]
    return p.high_watermark, p.last_stable_offset, aborted


def _producers(client: WireClient) -> Any:
    got = client.request(
        0, DescribeProducersRequest(topics=[TopicRequest(name=TOPIC, partition_indexes=[0])])
    )
    return got.topics[0].partitions[0]


def test_markers_close_transactions_and_fence(cluster: Cluster) -> None:
    leader = _leader_id(cluster)
    follower = next(b for b in cluster.engine.brokers if b != leader)
    with _client(cluster, leader) as client, _client(cluster, follower) as other:
        assert _produce(client, epoch=0, sequence=0, transactional=True) == ec.NONE
        state = _producers(client)
        assert state.error_code == ec.NONE
        [producer] = state.active_producers
        assert (producer.producer_id, producer.producer_epoch, producer.last_sequence) == (
            PID,
            0,
            0,
        )
        assert (producer.coordinator_epoch, producer.current_txn_start_offset) == (-1, 0)
        assert _producers(other).error_code == ec.NOT_LEADER_OR_FOLLOWER
        # An open transaction: read_committed stops before it.
        assert _read_committed(client) == (1, 0, [])
        # Its producer may not write outside the transaction meanwhile.
        assert _produce(client, epoch=0, sequence=1, transactional=False) == ec.INVALID_TXN_STATE

        assert _marker(other, commit=False) == ec.NOT_LEADER_OR_FOLLOWER
        assert _marker(client, commit=False, topic="no-such-topic") == (
            ec.UNKNOWN_TOPIC_OR_PARTITION
        )
        # The coordinator fenced the producer: its abort marker carries the bumped epoch.
        assert _marker(client, commit=False, epoch=1, coordinator_epoch=5) == ec.NONE
        assert _read_committed(client) == (2, 2, [(PID, 0)])
        [producer] = _producers(client).active_producers
        assert (producer.producer_epoch, producer.coordinator_epoch) == (1, 5)
        assert producer.current_txn_start_offset == -1

        assert _produce(client, epoch=0, sequence=1, transactional=True) == (
            ec.INVALID_PRODUCER_EPOCH
        )
        assert _marker(client, commit=True, epoch=1, coordinator_epoch=4) == (
            ec.TRANSACTION_COORDINATOR_FENCED
        )
        assert _marker(client, commit=True, epoch=0, coordinator_epoch=5) == (
            ec.INVALID_PRODUCER_EPOCH
        )
        # The next transaction of the new epoch, committed.
        assert _produce(client, epoch=1, sequence=0, transactional=True) == ec.NONE
        assert _read_committed(client) == (3, 2, [(PID, 0)])
        assert _marker(client, commit=True, epoch=1, coordinator_epoch=5) == ec.NONE
        assert _read_committed(client) == (4, 4, [(PID, 0)])


def _txn_offset_commit(client: WireClient, version: int, **kw: Any) -> int:
    got = client.request(
        version,
        TxnOffsetCommitRequest(
            transactional_id="wire-txn",
            producer_id=PID,
            producer_epoch=0,
            topics=[
                TxnOffsetCommitRequestTopic(
                    name=kw.pop("topic", TOPIC),
                    partitions=[
                        TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=3)
                    ],
                )
            ],
            **kw,
        ),
    )
    return int(got.topics[0].partitions[0].error_code)


def test_txn_offset_commit_checks(cluster: Cluster) -> None:
    group = "wire-group"

    def coordinator() -> WireClient | None:
        with WireClient.to(cluster.bootstrap_servers) as client:
            got = client.request(3, FindCoordinatorRequest(key=group, key_type=0))
        return WireClient(got.host, got.port) if got.error_code == ec.NONE else None

    client = wait_until(coordinator, timeout=30)
    with client:
        assert _txn_offset_commit(client, 3, group_id="") == ec.INVALID_GROUP_ID
        assert _txn_offset_commit(client, 3, group_id=group, topic="nope") == (
            ec.UNKNOWN_TOPIC_OR_PARTITION
        )
        # v3+: a named member must belong to the group, a generation must be the group's.
        assert _txn_offset_commit(client, 3, group_id=group, member_id="m-1") == (
            ec.UNKNOWN_MEMBER_ID
        )
        assert _txn_offset_commit(client, 3, group_id=group, generation_id=2) == (
            ec.ILLEGAL_GENERATION
        )
        # v2 carries no member fields: stored, pending until the producer's marker.
        wait_until(lambda: _txn_offset_commit(client, 2, group_id=group) == ec.NONE, timeout=30)
