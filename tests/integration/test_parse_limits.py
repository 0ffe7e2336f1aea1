"""Parse-time limits over real TCP (issue 17 §4): a request Kafka's readers cannot parse closes
its connection unanswered, and nothing of it happens (no topic, no config znode); other
connections go on."""

from __future__ import annotations

import struct

import pytest
from kazoo.client import KazooClient

from tests.unit.test_codec_limits import create_topics_v7_with_value
from zkbroker import Cluster
from zkbroker.broker.protocol import RequestHeader, encode_message
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.toolkit.wire import WireClient


def _create_topics_frame(value: bytes) -> bytes:
    # Request header v2 (CreateTopics v7 is flexible), then the hand-built body.
    header = RequestHeader(api_key=19, api_version=7, correlation_id=7, client_id="limits")
    head = encode_message(header, 2)
    payload = head + create_topics_v7_with_value(value)
    return struct.pack(">i", len(payload)) + payload


def test_create_topics_with_a_one_megabyte_config_value_closes_and_creates_nothing(
    cluster: Cluster, kazoo: KazooClient, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        WireClient.to(cluster.bootstrap_servers) as hostile,
        WireClient.to(cluster.bootstrap_servers) as fine,
    ):
        hostile.send_raw(_create_topics_frame(b"1" * 1_000_000))
        assert hostile.is_closed_by_peer(timeout=30)
        # The connection was closed without an answer; another one is served as before.
        assert fine.request(0, ApiVersionsRequest()).error_code == 0
    assert not kazoo.exists("/brokers/topics/t")
    assert not kazoo.exists("/config/topics/t")
    # One log line says why, in Kafka's words (SocketServer logs and closes).
    (line,) = [
        r.msg
        for r in caplog.records
        if isinstance(r.msg, dict) and r.msg.get("event") == "connection.closing"
    ]
    assert "string field topics[0].configs[0].value had invalid length 1000000" in line["reason"]


def test_a_value_of_exactly_32767_bytes_is_parsed_and_answered(cluster: Cluster) -> None:
    # The limit is Kafka's, not lower: 32767 bytes parse (this answer is the handler's).
    with WireClient.to(cluster.bootstrap_servers) as client:
        client.send_raw(_create_topics_frame(b"x" * 32767))
        frame = client.recv_frame()
        assert struct.unpack_from(">i", frame)[0] == 7  # our correlation id
