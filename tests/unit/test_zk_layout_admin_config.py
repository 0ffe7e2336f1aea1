"""Encode/decode of /admin/* and /config/* znodes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from zkbroker.zk_layout import (
    DEFAULT_ENTITY,
    ConfigChangeNotification,
    ConfigChangeNotificationNode,
    ConfigEntityNode,
    ConfigEntityTypeNode,
    ConfigType,
    DeleteTopicMarkerNode,
    DeleteTopicsNode,
    PreferredReplicaElectionNode,
    ReassignPartitionsNode,
    TopicPartition,
    ZnodeFormatError,
)


def _js(data: bytes) -> Any:
    return json.loads(data)


TP0 = TopicPartition("foo", 0)
TP1 = TopicPartition("bar", 1)


# --- /admin/reassign_partitions -------------------------------------------------------------


def test_reassignment_matches_doc_example() -> None:
    doc_example = b'{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[4,5,6]}]}'
    value = ReassignPartitionsNode.decode(doc_example)
    assert value == {TP0: (4, 5, 6)}
    assert ReassignPartitionsNode.encode(value, (2, 8)) == doc_example
    assert ReassignPartitionsNode.path() == "/admin/reassign_partitions"


def test_reassignment_keeps_order_and_last_duplicate_wins() -> None:
    doc = {
        "version": 1,
        "partitions": [
            {"topic": "foo", "partition": 0, "replicas": [1]},
            {"topic": "bar", "partition": 1, "replicas": [2, 3]},
            {"topic": "foo", "partition": 0, "replicas": [4]},
        ],
    }
    value = ReassignPartitionsNode.decode(json.dumps(doc).encode())
    assert value == {TP0: (4,), TP1: (2, 3)}
    assert ReassignPartitionsNode.decode(b'{"partitions":[]}') == {}


@pytest.mark.parametrize(
    "doc",
    [
        # unknown field (the tool's log_dirs) invalidates the whole node, like Kafka's bean
        {
            "version": 1,
            "partitions": [{"topic": "foo", "partition": 0, "replicas": [1], "log_dirs": ["any"]}],
        },
        {"version": 1, "partitions": [], "extra": 1},
        {"version": 1},
        {"version": 1, "partitions": [{"topic": "foo", "replicas": [1]}]},
        {"version": 1, "partitions": [{"partition": 0, "replicas": [1]}]},
        {"version": 1, "partitions": [{"topic": "foo", "partition": 0}]},
        {"version": 1, "partitions": [{"topic": "foo", "partition": 0, "replicas": ["1"]}]},
        {"version": "1", "partitions": []},
        {"version": 1, "partitions": {}},
        [],
    ],
)
def test_reassignment_rejects(doc: Any) -> None:
    with pytest.raises(ZnodeFormatError):
        ReassignPartitionsNode.decode(json.dumps(doc).encode())


def test_reassignment_rejects_non_json() -> None:
    with pytest.raises(ZnodeFormatError):
        ReassignPartitionsNode.decode(b"{not json")


# --- /admin/preferred_replica_election ------------------------------------------------------


def test_preferred_election() -> None:
    data = b'{"version":1,"partitions":[{"topic":"foo","partition":0}]}'
    assert PreferredReplicaElectionNode.decode(data) == frozenset({TP0})
    encoded = PreferredReplicaElectionNode.encode(frozenset({TP0, TP1}), (2, 8))
    assert _js(encoded) == {
        "version": 1,
        "partitions": [{"topic": "bar", "partition": 1}, {"topic": "foo", "partition": 0}],
    }
    assert PreferredReplicaElectionNode.decode(encoded) == {TP0, TP1}


def test_preferred_election_unparseable_is_empty() -> None:
    for data in (b"", b"garbage", b"{", b"\xff"):
        assert PreferredReplicaElectionNode.decode(data) == frozenset()


@pytest.mark.parametrize(
    "data",
    [b'{"version":1}', b"[]", b'{"partitions":[{"topic":"foo"}]}', b'{"partitions":{}}'],
)
def test_preferred_election_valid_json_without_partitions_is_an_error(data: bytes) -> None:
    with pytest.raises(ZnodeFormatError):
        PreferredReplicaElectionNode.decode(data)


def test_delete_topic_markers() -> None:
    assert DeleteTopicsNode.path() == "/admin/delete_topics"
    assert DeleteTopicMarkerNode.path("foo") == "/admin/delete_topics/foo"
    assert DeleteTopicMarkerNode.encode(None, (2, 8)) == b""
    assert DeleteTopicMarkerNode.decode(b"") is None


# --- /config/<type>/<name> ------------------------------------------------------------------


def test_config_paths() -> None:
    assert ConfigEntityTypeNode.path("topics") == "/config/topics"
    assert ConfigEntityNode.path("topics", "foo") == "/config/topics/foo"
    assert ConfigEntityNode.topic("foo") == "/config/topics/foo"
    assert ConfigEntityNode.broker(None) == "/config/brokers/<default>"
    assert ConfigEntityNode.broker(3) == "/config/brokers/3"
    assert ConfigEntityNode.user("CN=a b*") == "/config/users/CN%3Da%20b%2A"
    assert ConfigEntityNode.user(None) == f"/config/users/{DEFAULT_ENTITY}"
    assert ConfigEntityNode.client("app 1") == "/config/clients/app%201"
    assert ConfigEntityNode.user_client("alice", "app1") == "/config/users/alice/clients/app1"
    assert ConfigEntityNode.user_client(None, None) == "/config/users/<default>/clients/<default>"
    assert ConfigEntityNode.ip(None) == "/config/ips/<default>"
    assert ConfigEntityNode.ip("10.0.0.1") == "/config/ips/10.0.0.1"
    assert ConfigEntityNode.entity_path("/config/users/alice/clients/app1") == (
        "users/alice/clients/app1"
    )
    assert ConfigType.ALL == ("topics", "clients", "users", "brokers", "ips")


def test_config_entity_round_trip() -> None:
    value = {"cleanup.policy": "compact", "retention.ms": "1000"}
    data = ConfigEntityNode.encode(value, (2, 8))
    assert _js(data) == {"version": 1, "config": value}
    assert data.startswith(b'{"version":1,"config":{')
    assert ConfigEntityNode.decode(data) == value
    assert ConfigEntityNode.encode({}, (2, 8)) == b'{"version":1,"config":{}}'
    with pytest.raises(TypeError):
        ConfigEntityNode.encode({"retention.ms": 1000}, (2, 8))  # type: ignore[dict-item]


@pytest.mark.parametrize(
    "data", [b"", b"garbage", b"[]", b'{"version":1}', b'{"version":1,"config":[]}']
)
def test_config_entity_is_lenient_like_kafka(data: bytes) -> None:
    assert ConfigEntityNode.decode(data) == {}


def test_config_entity_rejects_non_string_values() -> None:
    with pytest.raises(ZnodeFormatError):
        ConfigEntityNode.decode(b'{"version":1,"config":{"retention.ms":1000}}')


# --- /config/changes/config_change_N --------------------------------------------------------


@pytest.mark.parametrize(
    ("release", "version"),
    [((0, 8, 2), 0), ((0, 9), 1), ((0, 10), 1), ((0, 10, 1), 2), ((3, 9), 2)],
)
def test_config_change_written_version(release: tuple[int, ...], version: int) -> None:
    assert ConfigChangeNotificationNode.written_version(release) == version


def test_config_change_v2() -> None:
    value = ConfigChangeNotification("users", "alice/clients/app1")
    data = ConfigChangeNotificationNode.encode(value, (2, 8))
    assert data == b'{"version":2,"entity_path":"users/alice/clients/app1"}'
    back = ConfigChangeNotificationNode.decode(data)
    assert back == ConfigChangeNotification("users", "alice/clients/app1", 2)
    assert back is not None and back.entity_path == "users/alice/clients/app1"
    brokers = ConfigChangeNotificationNode.decode(
        b'{"version":2,"entity_path":"brokers/<default>"}'
    )
    assert brokers == ConfigChangeNotification("brokers", "<default>", 2)


def test_config_change_v1() -> None:
    value = ConfigChangeNotification.for_path("topics/foo")
    data = ConfigChangeNotificationNode.encode(value, (0, 9))
    assert _js(data) == {"version": 1, "entity_type": "topics", "entity_name": "foo"}
    assert ConfigChangeNotificationNode.decode(data) == ConfigChangeNotification("topics", "foo", 1)
    with pytest.raises(ValueError):
        ConfigChangeNotificationNode.encode(ConfigChangeNotification("users", "a"), (0, 10))


def test_config_change_pre_v1() -> None:
    data = ConfigChangeNotificationNode.encode(ConfigChangeNotification("topics", "foo"), (0, 8, 2))
    assert data == b'"foo"'
    decoded = ConfigChangeNotificationNode.decode(data)
    assert decoded == ConfigChangeNotification("topics", "foo", 0)
    assert decoded is not None
    assert decoded.honoured_by((0, 8, 2)) and not decoded.honoured_by((0, 9))
    with pytest.raises(ValueError):
        ConfigChangeNotificationNode.encode(ConfigChangeNotification("clients", "c"), (0, 8))


def test_config_change_honoured_by() -> None:
    v1 = ConfigChangeNotification("topics", "foo", 1)
    v2 = ConfigChangeNotification("topics", "foo", 2)
    assert v1.honoured_by((0, 9)) and v1.honoured_by((2, 8))
    assert not v2.honoured_by((0, 10)) and v2.honoured_by((0, 10, 1))


@pytest.mark.parametrize("data", [b"", b"garbage", b"1", b"[1]", b"null", b"true"])
def test_config_change_ignored(data: bytes) -> None:
    assert ConfigChangeNotificationNode.decode(data) is None


@pytest.mark.parametrize(
    "doc",
    [
        {"entity_path": "topics/foo"},
        {"version": 3, "entity_path": "topics/foo"},
        {"version": 1, "entity_type": "users", "entity_name": "a"},
        {"version": 1, "entity_type": "topics"},
        {"version": 2},
        {"version": 2, "entity_path": "topics"},
        {"version": 2, "entity_path": "groups/g"},
        {"version": 2, "entity_path": 5},
    ],
)
def test_config_change_rejects(doc: Any) -> None:
    with pytest.raises(ZnodeFormatError):
        ConfigChangeNotificationNode.decode(json.dumps(doc).encode())
