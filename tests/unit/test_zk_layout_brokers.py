"""Encode/decode of the broker and topic znodes (``/brokers/...``) for every format version."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from zkbroker.zk_layout import (
    BrokerIdNode,
    BrokerInfo,
    BrokerSeqIdNode,
    Endpoint,
    PartitionState,
    PartitionStateNode,
    TopicAssignment,
    TopicNode,
    TopicPartitionNode,
    TopicPartitionsNode,
    TopicsNode,
    ZnodeFormatError,
)

PLAIN = Endpoint("PLAINTEXT", "b1", 9092, "PLAINTEXT")
SSL = Endpoint("SSL", "b1", 9093, "SSL")
CLIENT = Endpoint("CLIENT", "b1", 19092, "SASL_SSL")


def _js(data: bytes) -> Any:
    return json.loads(data)


# --- /brokers/ids/<id> ----------------------------------------------------------------------


def test_broker_paths() -> None:
    assert BrokerIdNode.path(1) == "/brokers/ids/1"
    assert TopicsNode.path() == "/brokers/topics"
    assert BrokerSeqIdNode.path() == "/brokers/seqid"
    assert BrokerIdNode.broker_id_from_child("12") == 12
    assert BrokerIdNode.broker_id_from_child("x") is None


@pytest.mark.parametrize(
    ("release", "version"),
    [
        ((0, 8, 2), 1),
        ((0, 9), 2),
        ((0, 10), 3),
        ((0, 10, 1), 3),
        ((0, 10, 2), 4),
        ((2, 6), 4),
        ((2, 7), 5),
        ((2, 8), 5),
        ((3, 9), 5),
    ],
)
def test_broker_written_version(release: tuple[int, ...], version: int) -> None:
    assert BrokerIdNode.written_version(release) == version


def test_broker_v5_matches_doc_example() -> None:
    info = BrokerInfo.create(1, [PLAIN], rack="r1", timestamp_ms=1620000000000)
    data = BrokerIdNode.encode(info, (2, 8))
    assert _js(data) == {
        "version": 5,
        "host": "b1",
        "port": 9092,
        "jmx_port": -1,
        "timestamp": "1620000000000",
        "endpoints": ["PLAINTEXT://b1:9092"],
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "rack": "r1",
        "features": {},
    }
    # compact, in the documented key order
    assert data.startswith(b'{"version":5,"host":"b1","port":9092,"jmx_port":-1,"timestamp"')
    back = BrokerIdNode.decode(data, 1)
    assert back == BrokerInfo(1, "b1", 9092, (PLAIN,), "r1", -1, 1620000000000, {}, version=5)


def test_broker_encode_per_version_keys() -> None:
    info = BrokerInfo.create(2, [SSL, PLAIN], rack="r", jmx_port=9999, timestamp_ms=5)
    keys = {r: set(_js(BrokerIdNode.encode(info, r))) for r in [(0, 8), (0, 9), (0, 10), (0, 11)]}
    base = {"version", "host", "port", "jmx_port", "timestamp"}
    assert keys[(0, 8)] == base
    assert keys[(0, 9)] == base | {"endpoints"}
    assert keys[(0, 10)] == base | {"endpoints", "rack"}
    assert keys[(0, 11)] == base | {"endpoints", "rack", "listener_security_protocol_map"}
    # top-level host/port: first PLAINTEXT endpoint even if not first in the list
    doc = _js(BrokerIdNode.encode(info, (2, 8)))
    assert isinstance(doc, dict)
    assert (doc["host"], doc["port"]) == ("b1", 9092)
    assert doc["timestamp"] == "5"


def test_broker_rack_only_when_set() -> None:
    info = BrokerInfo.create(1, [PLAIN], timestamp_ms=1)
    for release in [(0, 10), (2, 0), (2, 8)]:
        assert "rack" not in _js(BrokerIdNode.encode(info, release))


def test_broker_without_plaintext_has_null_host() -> None:
    info = BrokerInfo.create(3, [CLIENT], timestamp_ms=1)
    assert info.host is None and info.port == -1
    doc = _js(BrokerIdNode.encode(info, (3, 0)))
    assert isinstance(doc, dict)
    assert doc["host"] is None and doc["port"] == -1
    assert doc["endpoints"] == ["CLIENT://b1:19092"]
    assert doc["listener_security_protocol_map"] == {"CLIENT": "SASL_SSL"}
    assert BrokerIdNode.decode(BrokerIdNode.encode(info, (3, 0)), 3).endpoints == (CLIENT,)


def test_broker_decode_v1_builds_plaintext_endpoint() -> None:
    data = b'{"version":1,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1"}'
    info = BrokerIdNode.decode(data, 7)
    assert info.broker_id == 7
    assert info.endpoints == (Endpoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),)
    assert info.version == 1 and info.timestamp_ms == 1


def test_broker_decode_v2_v3_use_listener_as_protocol() -> None:
    v2 = {
        "version": 2,
        "host": "h",
        "port": 9092,
        "jmx_port": 9999,
        "timestamp": "1",
        "endpoints": ["PLAINTEXT://h:9092", "SSL://h:9093"],
    }
    info = BrokerIdNode.decode(json.dumps(v2).encode(), 1)
    assert info.endpoints == (
        Endpoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),
        Endpoint("SSL", "h", 9093, "SSL"),
    )
    assert info.rack is None and info.jmx_port == 9999
    v3 = dict(v2, version=3, rack="dc1")
    assert BrokerIdNode.decode(json.dumps(v3).encode(), 1).rack == "dc1"


def test_broker_decode_v4_uses_security_map_and_ipv6() -> None:
    v4 = {
        "version": 4,
        "host": None,
        "port": -1,
        "jmx_port": -1,
        "timestamp": "1",
        "endpoints": ["CLIENT://[::1]:9092", "REPLICATION://:9093"],
        "listener_security_protocol_map": {"CLIENT": "SSL", "REPLICATION": "PLAINTEXT"},
    }
    info = BrokerIdNode.decode(json.dumps(v4).encode(), 1)
    assert info.endpoints == (
        Endpoint("CLIENT", "::1", 9092, "SSL"),
        Endpoint("REPLICATION", None, 9093, "PLAINTEXT"),
    )
    assert info.endpoints[0].connection_string() == "CLIENT://[::1]:9092"
    assert info.endpoints[1].connection_string() == "REPLICATION://:9093"


def test_broker_decode_v5_features() -> None:
    doc = {
        "version": 5,
        "host": "h",
        "port": 1,
        "jmx_port": -1,
        "timestamp": "1",
        "endpoints": ["PLAINTEXT://h:1"],
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "features": {"f": {"min_version": 1, "max_version": 3}},
    }
    info = BrokerIdNode.decode(json.dumps(doc).encode(), 1)
    assert info.features == {"f": {"min_version": 1, "max_version": 3}}
    again = BrokerIdNode.decode(BrokerIdNode.encode(info, (2, 8)), 1)
    assert again.features == info.features


def test_broker_timestamp_is_lenient() -> None:
    base = {"version": 1, "host": "h", "port": 1, "jmx_port": -1}
    for ts, expected in [("12", 12), (12, 12), ("x", -1), (None, -1)]:
        doc = dict(base, timestamp=ts)
        assert BrokerIdNode.decode(json.dumps(doc).encode(), 1).timestamp_ms == expected


@pytest.mark.parametrize(
    "doc",
    [
        {"version": 0, "host": "h", "port": 1, "jmx_port": -1},
        {"version": 6, "host": "h", "port": 1, "jmx_port": -1, "endpoints": []},
        {"host": "h", "port": 1, "jmx_port": -1},
        {"version": 1, "host": "h", "port": 1},
        {"version": 1, "port": 1, "jmx_port": -1},
        {"version": 2, "host": "h", "port": 1, "jmx_port": -1},
        {"version": 2, "jmx_port": -1, "endpoints": ["nonsense"]},
        {"version": 2, "jmx_port": -1, "endpoints": ["FOO://h:1"]},
        {
            "version": 4,
            "jmx_port": -1,
            "endpoints": ["A://h:1"],
            "listener_security_protocol_map": {"B": "SSL"},
        },
        {"version": 2, "jmx_port": "1", "endpoints": []},
        [1, 2],
    ],
)
def test_broker_decode_rejects(doc: object) -> None:
    with pytest.raises(ZnodeFormatError) as info:
        BrokerIdNode.decode_at(json.dumps(doc).encode(), 4)
    assert info.value.where == "/brokers/ids/4"


def test_broker_decode_rejects_non_json() -> None:
    with pytest.raises(ZnodeFormatError):
        BrokerIdNode.decode(b"not json")


# --- /brokers/topics/<t> --------------------------------------------------------------------


TOPIC_ID = uuid.UUID("a77b74bc-2aea-4242-a958-16cd1b68f566")


def test_topic_paths() -> None:
    assert TopicNode.path("foo") == "/brokers/topics/foo"
    assert TopicPartitionsNode.path("foo") == "/brokers/topics/foo/partitions"
    assert TopicPartitionNode.path("foo", 3) == "/brokers/topics/foo/partitions/3"
    assert PartitionStateNode.path("foo", 3) == "/brokers/topics/foo/partitions/3/state"


@pytest.mark.parametrize(
    ("release", "version"), [((0, 8), 1), ((2, 3), 1), ((2, 4), 2), ((2, 7), 2), ((2, 8), 3)]
)
def test_topic_written_version(release: tuple[int, ...], version: int) -> None:
    assert TopicNode.written_version(release) == version


def test_topic_v1() -> None:
    value = TopicAssignment({1: (2, 3, 1), 0: (1, 2, 3)})
    data = TopicNode.encode(value, (2, 3))
    assert data == b'{"version":1,"partitions":{"0":[1,2,3],"1":[2,3,1]}}'
    assert TopicNode.decode(data) == value


def test_topic_v2_always_has_both_maps_with_non_empty_entries_only() -> None:
    value = TopicAssignment({0: (1, 2, 3), 1: (2, 3, 1)})
    assert _js(TopicNode.encode(value, (2, 4))) == {
        "version": 2,
        "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]},
        "adding_replicas": {},
        "removing_replicas": {},
    }
    moving = TopicAssignment(
        {0: (4, 5, 6, 1, 2, 3), 1: (2, 3, 1)}, adding={0: (4, 5, 6), 1: ()}, removing={0: (1, 2, 3)}
    )
    doc = _js(TopicNode.encode(moving, (2, 7)))
    assert doc == {
        "version": 2,
        "partitions": {"0": [4, 5, 6, 1, 2, 3], "1": [2, 3, 1]},
        "adding_replicas": {"0": [4, 5, 6]},
        "removing_replicas": {"0": [1, 2, 3]},
    }
    back = TopicNode.decode(TopicNode.encode(moving, (2, 7)))
    assert back.adding == {0: (4, 5, 6)} and back.removing == {0: (1, 2, 3)}
    assert back.is_reassigning(0) and not back.is_reassigning(1)


def test_topic_v3_matches_doc_example() -> None:
    doc_example = (
        b'{"version":3,"partitions":{"0":[4,5,6,1,2,3]},"adding_replicas":{"0":[4,5,6]},'
        b'"removing_replicas":{"0":[1,2,3]},"topic_id":"p3t0vCrqQkKpWBbNG2j1Zg"}'
    )
    value = TopicNode.decode(doc_example)
    assert value == TopicAssignment(
        {0: (4, 5, 6, 1, 2, 3)}, {0: (4, 5, 6)}, {0: (1, 2, 3)}, TOPIC_ID
    )
    assert TopicNode.encode(value, (2, 8)) == doc_example


def test_topic_id_only_when_set_and_dropped_before_2_8() -> None:
    assert "topic_id" not in _js(TopicNode.encode(TopicAssignment({0: (1,)}), (3, 0)))
    with_id = TopicAssignment({0: (1,)}, topic_id=TOPIC_ID)
    assert "topic_id" not in _js(TopicNode.encode(with_id, (2, 7)))


def test_topic_reassignment_state_cannot_go_to_v1() -> None:
    with pytest.raises(ValueError):
        TopicNode.encode(TopicAssignment({0: (1, 2)}, adding={0: (2,)}), (2, 3))


def test_topic_decode_missing_partitions_and_adding_entries() -> None:
    assert TopicNode.decode(b'{"version":1}') == TopicAssignment({})
    value = TopicNode.decode(b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{}}')
    assert value.adding == {} and value.removing == {}


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"garbage",
        b"[]",
        b'{"version":3,"partitions":{"x":[1]}}',
        b'{"version":3,"partitions":{"0":["1"]}}',
        b'{"version":3,"partitions":{"0":1}}',
        b'{"version":3,"partitions":[]}',
        b'{"version":3,"partitions":{},"adding_replicas":[]}',
        b'{"version":3,"partitions":{},"topic_id":"short"}',
        b'{"version":3,"partitions":{},"topic_id":5}',
    ],
)
def test_topic_decode_rejects(data: bytes) -> None:
    with pytest.raises(ZnodeFormatError):
        TopicNode.decode(data)


# --- partition state ------------------------------------------------------------------------


def test_state_matches_doc_example() -> None:
    doc_example = b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]}'
    value = PartitionState(leader=1, leader_epoch=0, isr=(1, 2, 3), controller_epoch=1)
    assert PartitionStateNode.encode(value, (2, 8)) == doc_example
    assert PartitionStateNode.decode(doc_example) == value
    assert PartitionStateNode.written_version((3, 9)) == 1


def test_state_leader_recovery_state() -> None:
    recovering = PartitionState(-1, 3, (2,), 5, leader_recovery_state=1)
    data = PartitionStateNode.encode(recovering, (3, 2))
    assert _js(data) == {
        "controller_epoch": 5,
        "leader": -1,
        "version": 1,
        "leader_epoch": 3,
        "isr": [2],
        "leader_recovery_state": 1,
    }
    assert PartitionStateNode.decode(data) == recovering
    recovered = PartitionState(1, 3, (1,), 5)
    assert "leader_recovery_state" not in _js(PartitionStateNode.encode(recovered, (3, 5)))
    with pytest.raises(ValueError):
        PartitionStateNode.encode(recovering, (3, 1))
    explicit_zero = (
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1],'
        b'"leader_recovery_state":0}'
    )
    assert PartitionStateNode.decode(explicit_zero).leader_recovery_state == 0


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"x",
        b'{"leader":1,"leader_epoch":0,"isr":[1]}',
        b'{"controller_epoch":1,"leader":"1","leader_epoch":0,"isr":[1]}',
        b'{"controller_epoch":1,"leader":1,"leader_epoch":0,"isr":1}',
        b'{"controller_epoch":1,"leader":1,"leader_epoch":0,"isr":[1],"leader_recovery_state":2}',
    ],
)
def test_state_decode_rejects(data: bytes) -> None:
    with pytest.raises(ZnodeFormatError) as info:
        PartitionStateNode.decode_at(data, "t", 0)
    assert info.value.where == "/brokers/topics/t/partitions/0/state"
