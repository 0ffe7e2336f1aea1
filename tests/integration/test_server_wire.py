"""The server's framing, dispatch and error paths, over real TCP with zkbroker's codec."""

from __future__ import annotations

import logging
import socket
import struct
import uuid

import pytest
import structlog

from tests.integration.helpers import wait_until, wait_visible, write_topic_like_kafka
from zkbroker import Cluster
from zkbroker.broker.protocol import RequestHeader, decode_response, encode_request, error_codes
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.protocol.messages.describe_cluster import DescribeClusterRequest
from zkbroker.broker.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from zkbroker.broker.protocol.releases import advertised_range
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.handlers.context import ConnectionInfo

LISTENER_LOGGER = "zkbroker.broker.server.listener"


def _first(cluster: Cluster) -> WireClient:
    return WireClient.to(cluster.bootstrap_servers)


@pytest.mark.kafka_version("2.8")
def test_api_versions_every_version(cluster: Cluster) -> None:
    with _first(cluster) as client:
        for version in range(0, 4):
            request = ApiVersionsRequest(
                client_software_name="zkbroker-tests", client_software_version="1.0"
            )
            response = client.request(version, request)
            assert response.error_code == 0
            keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
            # Kafka 2.8 (the default release): exactly the keys zkbroker has handlers for.
            assert keys[18] == (0, 3)
            assert keys[3] == (0, 11)
            assert keys[60] == (0, 0)
        # v4 is beyond Kafka 2.8 (0-3): answered in the v0 format with UNSUPPORTED_VERSION.
        correlation, frame = client.frame(18, 4, ApiVersionsRequest())
        client.send_raw(frame)
        got, response = decode_response(18, 0, client.recv_frame())
        assert (got, response.error_code) == (correlation, error_codes.UNSUPPORTED_VERSION)


def test_api_versions_v4_on_kafka_3_9(cluster_factory) -> None:
    cluster = cluster_factory(broker_ids=(0,), kafka_version=(3, 9))
    with _first(cluster) as client:
        response = client.request(
            4, ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert keys == {
            18: (0, 4),
            3: (0, 12),
            60: (0, 1),
            19: (0, 7),
            20: (0, 6),
            37: (0, 3),
            32: (0, 4),
            33: (0, 2),
            44: (0, 1),
            43: (0, 2),
            45: (0, 0),
            46: (0, 0),
            62: (0, 4),
            63: (0, 1),
            10: (0, 6),
            16: (0, 5),
            15: (0, 5),
            9: (0, 9),
            8: (0, 9),
            42: (0, 2),
            # The data plane and the group coordinator (Kafka 3.9's zkBroker ranges).
            0: (0, 11),
            1: (0, 17),
            2: (0, 9),
            21: (0, 2),
            22: (0, 5),
            23: (0, 4),
            11: (0, 9),
            12: (0, 4),
            13: (0, 5),
            14: (0, 5),
            47: (0, 0),
            # Log dirs (one per broker).
            34: (0, 2),
            35: (0, 4),
            # SASL and the SCRAM credential APIs.
            17: (0, 1),
            36: (0, 2),
            50: (0, 0),
            51: (0, 0),
            # UpdateFeatures and the inter-broker keys served (issue 14).
            57: (0, 1),
            7: (0, 3),
            56: (0, 3),
            67: (0, 0),
            4: (0, 7),
            5: (0, 4),
            6: (0, 8),
            58: (0, 0),
            27: (0, 1),
            28: (0, 4),
            61: (0, 0),
            68: (0, 0),
            69: (0, 0),
            # Delegation tokens (issue 15).
            38: (0, 3),
            39: (0, 2),
            40: (0, 2),
            41: (0, 3),
            # Client quotas (issue 15).
            48: (0, 1),
            49: (0, 1),
            # ACLs (issue 15).
            29: (0, 3),
            30: (0, 3),
            31: (0, 3),
            # The transaction coordinator (issue 14).
            24: (0, 5),
            25: (0, 4),
            26: (0, 4),
            65: (0, 0),
            66: (0, 1),
        }
        # The 3.9 controller wrote /feature enabled with no features: epoch = its zk version.
        assert wait_until(lambda: cluster.engine.image.finalized_features_epoch == 0)
        response = client.request(
            4, ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        assert response.finalized_features_epoch == 0
        assert response.finalized_features == []


@pytest.mark.kafka_version("2.8")
def test_api_versions_unsupported_version_answers_v0_with_own_range(cluster: Cluster) -> None:
    with _first(cluster) as client:
        # ApiVersions v9 does not exist: the broker must not parse the body and must answer
        # in the v0 format, error 35, listing only its own ApiVersions range (KIP-511).
        header = RequestHeader(api_key=18, api_version=9, correlation_id=77, client_id="x")
        payload = encode_request(
            RequestHeader(api_key=18, api_version=3, correlation_id=77, client_id="x"),
            ApiVersionsRequest(client_software_name="a", client_software_version="b"),
        )
        # Patch the version field (bytes 2-3) to 9: same header layout (v2) as v3.
        payload = payload[:2] + struct.pack(">h", header.api_version) + payload[4:] + b"garbage"
        client.send_raw(struct.pack(">i", len(payload)) + payload)
        correlation, response = decode_response(18, 0, client.recv_frame())
        assert correlation == 77
        assert response.error_code == error_codes.UNSUPPORTED_VERSION
        assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
            (18, 0, 3)
        ]
        # The connection stays usable.
        assert client.request(0, ApiVersionsRequest()).error_code == 0


def test_api_versions_v3_invalid_software_name(cluster: Cluster) -> None:
    with _first(cluster) as client:
        response = client.request(
            3, ApiVersionsRequest(client_software_name="-bad", client_software_version="1")
        )
        assert response.error_code == error_codes.INVALID_REQUEST
        assert response.api_keys == []


def test_unknown_api_key_closes_only_that_connection(cluster: Cluster) -> None:
    with _first(cluster) as bad, _first(cluster) as good:
        # Key 999 is no Kafka API: Kafka closes the connection without answering.
        header = struct.pack(">hhih", 999, 3, 1, 1) + b"x"
        bad.send_raw(struct.pack(">i", len(header) + 6) + header + b"\x00" * 6)
        assert bad.is_closed_by_peer()
        assert good.request(1, MetadataRequest(topics=[])).controller_id >= -1


@pytest.mark.kafka_version("2.8")
def test_unsupported_version_of_other_api_closes(cluster: Cluster) -> None:
    with _first(cluster) as client:
        # Metadata v12 is beyond Kafka 2.8's range (0-11).
        _, frame = client.frame(3, 12, MetadataRequest(topics=None))
        client.send_raw(frame)
        assert client.is_closed_by_peer()


def test_oversized_and_negative_size_close_the_connection(cluster_factory) -> None:
    cluster = cluster_factory(broker_ids=(0,), max_request_bytes=1024)
    with _first(cluster) as big, _first(cluster) as negative, _first(cluster) as fine:
        big.send_raw(struct.pack(">i", 1025))
        assert big.is_closed_by_peer()
        negative.send_raw(struct.pack(">i", -5))
        assert negative.is_closed_by_peer()
        assert fine.request(0, ApiVersionsRequest()).error_code == 0


@pytest.mark.parametrize("cut", [0, 1, 3, 5, 7])
def test_truncated_or_garbage_body_closes(cluster: Cluster, cut: int) -> None:
    with _first(cluster) as client:
        _, frame = client.frame(3, 9, MetadataRequest(topics=[MetadataRequestTopic(name="abc")]))
        payload = frame[4:]
        header_len = 2 + 2 + 4 + 2 + len(client.client_id) + 1
        broken = payload[: header_len + cut]
        client.send_raw(struct.pack(">i", len(broken)) + broken)
        assert client.is_closed_by_peer()
    with _first(cluster) as client:
        garbage = b"\x00\x03\x00\x09\x00\x00\x00\x01\xff\xff\x00\xff\xff\xff\xff\xff\xff"
        client.send_raw(struct.pack(">i", len(garbage)) + garbage)
        assert client.is_closed_by_peer()


def test_pipelined_requests_are_answered_in_order(cluster: Cluster) -> None:
    with _first(cluster) as client:
        frames = []
        expected = []
        for i in range(60):
            if i % 3 == 0:
                correlation, frame = client.frame(18, i % 4, ApiVersionsRequest())
                expected.append((correlation, 18, i % 4))
            elif i % 3 == 1:
                correlation, frame = client.frame(3, i % 12, MetadataRequest(topics=None))
                expected.append((correlation, 3, i % 12))
            else:
                correlation, frame = client.frame(60, 0, DescribeClusterRequest())
                expected.append((correlation, 60, 0))
            frames.append(frame)
        client.send_raw(b"".join(frames))
        for correlation, api_key, version in expected:
            got, _ = decode_response(api_key, version, client.recv_frame())
            assert got == correlation


def test_metadata_topic_selection_rules(cluster: Cluster, kazoo) -> None:
    write_topic_like_kafka(kazoo, "a", {0: [0, 1, 2]})
    write_topic_like_kafka(kazoo, "b", {0: [1, 2, 0], 1: [2, 0, 1]})
    wait_visible(cluster, "a")
    wait_visible(cluster, "b")
    with _first(cluster) as client:
        # v0: an empty list means all topics.
        assert sorted(t.name for t in client.request(0, MetadataRequest(topics=[])).topics) == [
            "a",
            "b",
        ]
        # v1+: empty list = no topics, null = all topics.
        assert client.request(1, MetadataRequest(topics=[])).topics == []
        assert sorted(t.name for t in client.request(4, MetadataRequest(topics=None)).topics) == [
            "a",
            "b",
        ]
        missing = client.request(
            9,
            MetadataRequest(
                topics=[MetadataRequestTopic(name="nope"), MetadataRequestTopic(name="bad name")],
                allow_auto_topic_creation=False,
            ),
        ).topics
        assert [(t.name, t.error_code) for t in missing] == [
            ("nope", error_codes.UNKNOWN_TOPIC_OR_PARTITION),
            ("bad name", error_codes.INVALID_TOPIC_EXCEPTION),
        ]
        response = client.request(11, MetadataRequest(topics=[MetadataRequestTopic(name="b")]))
        (topic,) = response.topics
        assert [p.partition_index for p in topic.partitions] == [0, 1]
        assert topic.partitions[1].leader_id == 2
        assert topic.partitions[1].replica_nodes == [2, 0, 1]
        assert topic.topic_authorized_operations == -(2**31)
        assert sorted(b.node_id for b in response.brokers) == [0, 1, 2]


def test_metadata_answer_reused_only_while_the_image_is_unchanged(
    cluster: Cluster, kazoo, caplog: pytest.LogCaptureFixture
) -> None:
    """A Metadata answer may be encoded once and sent again (issue 35): each copy carries its
    own correlation id, and a topic created since is in the next answer."""
    caplog.set_level(logging.INFO, logger=LISTENER_LOGGER)  # at DEBUG nothing is reused
    pipeline = cluster.engine.brokers[min(cluster.brokers)]._server._pipeline
    write_topic_like_kafka(kazoo, "kept", {0: [0, 1, 2]})
    wait_visible(cluster, "kept")
    with _first(cluster) as client:
        frames = []
        for _ in range(3):
            correlation, frame = client.frame(3, 12, MetadataRequest(topics=None))
            client.send_raw(frame)
            answer = client.recv_frame()
            assert decode_response(3, 12, answer)[0] == correlation
            frames.append(answer[4:])  # without the correlation id
        assert frames[0] == frames[1] == frames[2]
        assert len(pipeline._answers) == 1  # encoded once, sent three times
        before = {t.name for t in client.request(12, MetadataRequest(topics=None)).topics}
        assert "kept" in before and "added" not in before
        write_topic_like_kafka(kazoo, "added", {0: [1, 2, 0]})
        wait_visible(cluster, "added")
        after = {t.name for t in client.request(12, MetadataRequest(topics=None)).topics}
        assert after == before | {"added"}


def test_metadata_leader_not_alive_and_v0_filtering(cluster_factory, kazoo) -> None:
    cluster = cluster_factory(broker_ids=(0, 1))
    write_topic_like_kafka(kazoo, "t", {0: [5, 0], 1: [0, 5]})  # broker 5 does not exist
    wait_until(lambda: len(getattr(cluster.engine.image.topics.get("t"), "partitions", {})) == 2)
    assert cluster.engine.image.topics["t"].all_partitions_led
    with _first(cluster) as client:
        v5 = client.request(5, MetadataRequest(topics=[MetadataRequestTopic(name="t")])).topics[0]
        p0, p1 = v5.partitions
        assert (p0.error_code, p0.leader_id, p0.replica_nodes, p0.offline_replicas) == (
            error_codes.LEADER_NOT_AVAILABLE,
            -1,
            [5, 0],
            [5],
        )
        assert (p1.error_code, p1.leader_id, p1.isr_nodes) == (0, 0, [0, 5])
        v0 = client.request(0, MetadataRequest(topics=[MetadataRequestTopic(name="t")])).topics[0]
        assert (v0.partitions[1].error_code, v0.partitions[1].replica_nodes) == (
            error_codes.REPLICA_NOT_AVAILABLE,
            [0],
        )


def test_release_table_narrows_api_versions(cluster_factory) -> None:
    cluster = cluster_factory(broker_ids=(0,), kafka_version=(0, 10, 0))
    with _first(cluster) as client:
        keys = {
            k.api_key: (k.min_version, k.max_version)
            for k in client.request(0, ApiVersionsRequest()).api_keys
        }
        # ApiVersions, Metadata, the data plane (Produce, Fetch, ListOffsets) and the group
        # APIs (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, OffsetCommit/Fetch,
        # GroupCoordinator, DescribeGroups, ListGroups), SaslHandshake and ControlledShutdown
        # and the inter-broker keys (ControlledShutdown, LeaderAndIsr, StopReplica,
        # UpdateMetadata) are what 0.10.0 served: zkbroker serves all of them.
        served = (18, 3, 0, 1, 2, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 7, 4, 5, 6)
        assert keys == {k: advertised_range((0, 10, 0), k) for k in served}
        assert keys[7] == (1, 1)  # Protocol.java's {null, V1}: v1 only
        assert (keys[0], keys[1], keys[2]) == ((0, 2), (0, 2), (0, 0))
        assert keys[3] == (0, 1)
        assert keys[8] == (0, 2)
        # DescribeCluster did not exist in 0.10.0: the connection is closed.
        _, frame = client.frame(60, 0, DescribeClusterRequest())
        client.send_raw(frame)
        assert client.is_closed_by_peer()


def test_metadata_v12_topic_ids(cluster_factory, kazoo) -> None:
    cluster = cluster_factory(broker_ids=(0,), kafka_version=(3, 9))
    write_topic_like_kafka(kazoo, "ids", {0: [0]}, topic_id="p3t0vCrqQkKpWBbNG2j1Zg")
    topic = wait_visible(cluster, "ids")
    assert topic.topic_id is not None
    unknown = uuid.uuid4()
    with _first(cluster) as client:
        response = client.request(
            12,
            MetadataRequest(
                topics=[
                    MetadataRequestTopic(topic_id=topic.topic_id, name=None),
                    MetadataRequestTopic(topic_id=unknown, name=None),
                ]
            ),
        )
        by_id = {t.topic_id: t for t in response.topics}
        assert by_id[topic.topic_id].name == "ids"
        assert (by_id[unknown].name, by_id[unknown].error_code) == (
            None,
            error_codes.UNKNOWN_TOPIC_ID,
        )
        # Below v12 a 3.x broker refuses topic ids with INVALID_REQUEST on every topic.
        refused = client.request(
            10, MetadataRequest(topics=[MetadataRequestTopic(topic_id=unknown, name="ids")])
        )
        assert [t.error_code for t in refused.topics] == [error_codes.INVALID_REQUEST]


def test_describe_cluster_endpoint_types(cluster_factory) -> None:
    cluster = cluster_factory(broker_ids=(0,), kafka_version=(3, 9))
    with _first(cluster) as client:
        ok = client.request(1, DescribeClusterRequest(include_cluster_authorized_operations=True))
        assert ok.error_code == 0 and [b.broker_id for b in ok.brokers] == [0]
        assert ok.cluster_authorized_operations == 8096
        mismatched = client.request(1, DescribeClusterRequest(endpoint_type=2))
        assert mismatched.error_code == error_codes.MISMATCHED_ENDPOINT_TYPE
        unknown = client.request(1, DescribeClusterRequest(endpoint_type=7))
        assert unknown.error_code == error_codes.UNSUPPORTED_ENDPOINT_TYPE
        assert unknown.error_message == "Unsupported endpoint type 7"


def test_raw_socket_half_frame_then_close_does_not_disturb_others(cluster: Cluster) -> None:
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    s.sendall(struct.pack(">i", 100) + b"\x00" * 10)
    s.close()
    with _first(cluster) as client:
        assert client.request(2, ApiVersionsRequest()).error_code == 0


async def test_api_versions_answer_reused_and_the_client_software_still_recorded(
    zk_connect: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An ApiVersions answer is encoded once and sent again while nothing that decides it has
    changed (issue 35); the client software each request names is recorded on its connection
    all the same, as Kafka's network layer does (KIP-511), reused answer or not."""
    caplog.set_level(logging.INFO, logger=LISTENER_LOGGER)  # at DEBUG nothing is reused
    async with Cluster(broker_ids=(0,), port=0, zookeeper=zk_connect) as cluster:
        pipeline = cluster.engine.brokers[0]._server._pipeline
        header = RequestHeader(api_key=18, api_version=3, correlation_id=1, client_id="t")
        request = ApiVersionsRequest(
            client_software_name="reuse-client", client_software_version="2.0"
        )
        frame = encode_request(header, request)
        log = structlog.get_logger("test")
        first, second = (
            ConnectionInfo(connection_id=f"reuse-{i}", peer="test", listener_name="PLAINTEXT")
            for i in range(2)
        )
        answer = await pipeline.answer(frame, first, log)
        assert len(pipeline._answers) == 1  # kept
        assert await pipeline.answer(frame, second, log) == answer
        for conn in (first, second):
            assert (conn.client_software_name, conn.client_software_version) == (
                "reuse-client",
                "2.0",
            )
        # An invalid name is answered INVALID_REQUEST, and records nothing.
        bad = encode_request(
            header, ApiVersionsRequest(client_software_name="-bad", client_software_version="1")
        )
        third = ConnectionInfo(connection_id="reuse-3", peer="test", listener_name="PLAINTEXT")
        for _ in range(2):
            _, refused = decode_response(18, 3, (await pipeline.answer(bad, third, log)) or b"")
            assert refused.error_code == error_codes.INVALID_REQUEST
        assert third.client_software_name is None
