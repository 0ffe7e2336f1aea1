"""The data plane's answers for a topic being deleted, on the wire (issue 41, item 8).

Kafka 3.9 in ZooKeeper mode: when deletion begins the controller sends UpdateMetadata with
leader -2 for the topic's partitions (every broker drops them, and the topic id, from its
metadata cache), then StopReplica with delete to the replicas (the partitions leave the replica
manager, and a Fetch waiting on them is completed at once). Every partition of the topic is then
UNKNOWN_TOPIC_OR_PARTITION: `KafkaApis.handleFetchRequest` / `handleProduceRequest` check the
metadata cache, `ReplicaManager.getPartitionOrError` (and WriteTxnMarkers' `onlinePartition`)
answer the rest; a Fetch v13+ naming the
topic by an id no longer known is UNKNOWN_TOPIC_ID. Deletion is held in progress the way Kafka
holds it: a replica's broker is down (docs/kafka-behaviour.md §10.6).
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until, wait_visible
from zkbroker import Cluster
from zkbroker.broker.protocol import decode_response, error_codes
from zkbroker.broker.protocol.messages.fetch import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
)
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
from zkbroker.broker.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from zkbroker.broker.protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from zkbroker.broker.protocol.records import NewRecord, encode_batch
from zkbroker.broker.toolkit.wire import WireClient

UNKNOWN = error_codes.UNKNOWN_TOPIC_OR_PARTITION
#: A waiting Fetch's max_wait_ms: far longer than the liveness deadline of its answer, so an
#: answer within that deadline is the deletion completing it, not the wait running out.
LONG_POLL_MS = 120_000
ANSWER_DEADLINE_S = 30.0


@pytest.fixture
def cluster(cluster_factory: Callable[..., Cluster]) -> Cluster:
    return cluster_factory(kafka_version=(3, 9))


def _create(cluster: Cluster, name: str, replicas: list[int]) -> uuid.UUID:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = NewTopic(name, num_partitions=1, replica_assignment=[replicas])
    admin.create_topics([topic])[name].result(30)
    wait_visible(cluster, name)
    topic_id = cluster.engine.image.topics[name].topic_id
    assert topic_id is not None
    return topic_id


def _client(cluster: Cluster, broker_id: int) -> WireClient:
    node = cluster.engine.brokers[broker_id]
    return WireClient(node.host, node.port)


def _fetch(
    offset: int,
    *,
    topic: str = "",
    topic_id: uuid.UUID | None = None,
    max_wait_ms: int = 0,
    session_epoch: int = -1,
) -> FetchRequest:
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        session_id=0,
        session_epoch=session_epoch,
        topics=[
            FetchTopic(
                topic=topic,
                topic_id=topic_id or uuid.UUID(int=0),
                partitions=[
                    FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
                ],
            )
        ],
    )


class WaitingFetch:
    """A long-polling Fetch sent on a connection of its own; its answer is read later."""

    def __init__(self, cluster: Cluster, broker_id: int, version: int, request: FetchRequest):
        self.version = version
        self.client = _client(cluster, broker_id)
        self.correlation, frame = self.client.frame(FetchRequest.API_KEY, version, request)
        self.client.send_raw(frame)

    def answer(self) -> FetchResponse:
        self.client.sock.settimeout(ANSWER_DEADLINE_S)
        try:
            got, response = decode_response(
                FetchRequest.API_KEY, self.version, self.client.recv_frame()
            )
        finally:
            self.client.close()
        assert got == self.correlation
        return response

    def still_waiting(self) -> bool:
        """Nothing answered yet (and the connection open): peeks, reads nothing."""
        self.client.sock.settimeout(0.3)
        try:
            self.client.sock.recv(1, socket.MSG_PEEK)
        except TimeoutError:
            return True
        return False


def _partition(response: FetchResponse) -> Any:
    (topic,) = response.responses
    (partition,) = topic.partitions
    return partition


def _waited_answer(fetch: WaitingFetch) -> Any:
    answered = fetch.answer()
    assert answered.error_code == error_codes.NONE
    return _partition(answered)


def test_a_topic_being_deleted_is_unknown_to_the_data_plane(
    cluster: Cluster, kazoo: KazooClient
) -> None:
    topic_id = _create(cluster, "going", [0, 1])
    cluster.produce("going", b"last words")
    # With a replica on a stopped broker the deletion waits, as Kafka's does.
    cluster.stop_broker(1)
    wait_until(lambda: cluster.engine.image.topics["going"].partitions[0].isr == (0,))

    # Long polls at the log end, waiting when the deletion begins: by name, by id, and a
    # fetch session (by id) whose next incremental fetch comes during the deletion.
    by_name = WaitingFetch(cluster, 0, 12, _fetch(1, topic="going", max_wait_ms=LONG_POLL_MS))
    by_id = WaitingFetch(cluster, 0, 16, _fetch(1, topic_id=topic_id, max_wait_ms=LONG_POLL_MS))
    with _client(cluster, 0) as client:
        opened = client.request(16, _fetch(1, topic_id=topic_id, session_epoch=0))
        assert opened.session_id > 0 and _partition(opened).error_code == error_codes.NONE
    assert by_name.still_waiting() and by_id.still_waiting()

    kazoo.create("/admin/delete_topics/going", b"")  # as `kafka-topics --delete` marks it
    # Both are answered when the deletion begins, long before their max_wait_ms.
    for fetch in (by_name, by_id):
        waited = _waited_answer(fetch)
        assert waited.error_code == UNKNOWN
        assert (waited.high_watermark, waited.log_start_offset) == (-1, -1)
        assert waited.records in (b"", None)
    image = cluster.engine.image
    assert "going" in image.topics_being_deleted and "going" in image.topics  # in progress

    with _client(cluster, 0) as client:
        for version in (4, 12):
            named = client.request(version, _fetch(0, topic="going"))
            assert _partition(named).error_code == UNKNOWN
        # No leader is named: the broker has no such partition any more (KIP-951's hint
        # comes with NOT_LEADER_OR_FOLLOWER only).
        incremental = client.request(
            16, FetchRequest(session_id=opened.session_id, session_epoch=1, max_wait_ms=0)
        )
        assert incremental.error_code == error_codes.NONE
        listed = _partition(incremental)
        assert listed.error_code == UNKNOWN and listed.current_leader.leader_id == -1
        assert incremental.node_endpoints == []
        # A new fetch by id: the id left the metadata with the topic.
        by_id_now = client.request(16, _fetch(0, topic_id=topic_id))
        assert _partition(by_id_now).error_code == error_codes.UNKNOWN_TOPIC_ID

        offsets = client.request(
            7,
            ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    ListOffsetsTopic(
                        name="going",
                        partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)],
                    )
                ],
            ),
        )
        assert offsets.topics[0].partitions[0].error_code == UNKNOWN
        epochs = client.request(
            4,
            OffsetForLeaderEpochRequest(
                replica_id=-1,
                topics=[
                    OffsetForLeaderTopic(
                        topic="going",
                        partitions=[OffsetForLeaderPartition(partition=0, leader_epoch=0)],
                    )
                ],
            ),
        )
        assert epochs.topics[0].partitions[0].error_code == UNKNOWN
        batch = encode_batch([NewRecord(0, int(time.time() * 1000), b"k", b"v")])
        produced = client.request(
            9,
            ProduceRequest(
                acks=-1,
                timeout_ms=5000,
                topic_data=[
                    TopicProduceData(
                        name="going",
                        partition_data=[PartitionProduceData(index=0, records=batch)],
                    )
                ],
            ),
        )
        assert produced.responses[0].partition_responses[0].error_code == UNKNOWN
        marked = client.request(
            1,
            WriteTxnMarkersRequest(
                markers=[
                    WritableTxnMarker(
                        producer_id=7,
                        producer_epoch=0,
                        transaction_result=False,
                        topics=[WritableTxnMarkerTopic(name="going", partition_indexes=[0])],
                    )
                ]
            ),
        )
        assert marked.markers[0].topics[0].partitions[0].error_code == UNKNOWN

    # The replica's broker is back: the deletion completes; the answers stay the same.
    cluster.start_broker(1)
    wait_until(lambda: "going" not in image.topics and "going" not in image.topics_being_deleted)
    with _client(cluster, 0) as client:
        assert _partition(client.request(12, _fetch(0, topic="going"))).error_code == UNKNOWN
        gone = client.request(16, _fetch(0, topic_id=topic_id))
        assert _partition(gone).error_code == error_codes.UNKNOWN_TOPIC_ID


def test_a_waiting_fetch_is_answered_when_its_topic_is_deleted(cluster: Cluster) -> None:
    topic_id = _create(cluster, "brief", [2])
    cluster.produce("brief", b"only")
    waiting = [
        WaitingFetch(cluster, 2, 11, _fetch(1, topic="brief", max_wait_ms=LONG_POLL_MS)),
        WaitingFetch(cluster, 2, 16, _fetch(1, topic_id=topic_id, max_wait_ms=LONG_POLL_MS)),
    ]
    assert all(fetch.still_waiting() for fetch in waiting)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.delete_topics(["brief"])["brief"].result(30)
    for fetch in waiting:
        assert _waited_answer(fetch).error_code == UNKNOWN


def test_a_waiting_fetch_still_waits_through_other_metadata_changes(cluster: Cluster) -> None:
    _create(cluster, "steady", [0, 1])
    _create(cluster, "other", [2])
    waiting = WaitingFetch(cluster, 0, 12, _fetch(0, topic="steady", max_wait_ms=LONG_POLL_MS))
    assert waiting.still_waiting()
    # The metadata changes (a broker leaves, another topic goes), this partition stays: the
    # fetch goes on waiting, and is answered by the next append.
    cluster.stop_broker(1)
    wait_until(lambda: cluster.engine.image.topics["steady"].partitions[0].isr == (0,))
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.delete_topics(["other"])["other"].result(30)
    assert waiting.still_waiting()
    cluster.produce("steady", b"news")
    answered = _waited_answer(waiting)
    assert (answered.error_code, answered.high_watermark) == (error_codes.NONE, 1)
