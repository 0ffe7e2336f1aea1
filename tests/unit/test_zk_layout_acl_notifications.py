"""Encode/decode of the controller's notification znodes and of the ACL znodes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from zkbroker.zk_layout import (
    AclChangeNode,
    AclEntry,
    AclNode,
    ExtendedAclChangeNode,
    IsrChangeNotificationNode,
    LogDirEvent,
    LogDirEventNotificationNode,
    ResourcePattern,
    TopicPartition,
    ZnodeFormatError,
    acl_persistent_paths,
)


def _js(data: bytes) -> Any:
    return json.loads(data)


# --- /isr_change_notification ---------------------------------------------------------------


def test_isr_change_notification() -> None:
    data = b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
    assert IsrChangeNotificationNode.decode(data) == {TopicPartition("t", 0)}
    assert IsrChangeNotificationNode.encode(frozenset({TopicPartition("t", 0)}), (2, 6)) == data
    assert IsrChangeNotificationNode.path(3) == "/isr_change_notification/isr_change_0000000003"
    assert IsrChangeNotificationNode.decode(b"junk") == frozenset()


@pytest.mark.parametrize("data", [b"[]", b'{"version":1}', b'{"partitions":[{"topic":1}]}'])
def test_isr_change_notification_rejects(data: bytes) -> None:
    with pytest.raises(ZnodeFormatError):
        IsrChangeNotificationNode.decode(data)


# --- /log_dir_event_notification -------------------------------------------------------------


def test_log_dir_event() -> None:
    data = b'{"version":1,"broker":1,"event":1}'
    assert LogDirEventNotificationNode.encode(LogDirEvent(1), (2, 8)) == data
    assert LogDirEventNotificationNode.decode(data) == LogDirEvent(1, 1)
    assert LogDirEventNotificationNode.decode(b'{"version":1,"broker":2}') == LogDirEvent(2)
    assert LogDirEventNotificationNode.decode(b"junk") is None
    assert LogDirEventNotificationNode.create_path() == (
        "/log_dir_event_notification/log_dir_event_"
    )
    with pytest.raises(ZnodeFormatError):
        LogDirEventNotificationNode.decode(b'{"version":1}')


# --- ACLs -----------------------------------------------------------------------------------


ALICE_READ = AclEntry("User:alice", "Allow", "Read", "*")


def test_acl_paths() -> None:
    assert AclNode.path("Topic", "foo") == "/kafka-acl/Topic/foo"
    assert AclNode.path("Cluster", "kafka-cluster") == "/kafka-acl/Cluster/kafka-cluster"
    assert AclNode.path("Group", "g", "PREFIXED") == "/kafka-acl-extended/prefixed/Group/g"
    assert AclNode.for_resource(ResourcePattern("Topic", "f", "PREFIXED")) == (
        "/kafka-acl-extended/prefixed/Topic/f"
    )
    paths = acl_persistent_paths()
    assert "/kafka-acl/Topic" in paths and "/kafka-acl-extended/prefixed/TransactionalId" in paths
    assert "/kafka-acl-changes" in paths and "/kafka-acl-extended-changes" in paths


def test_acl_node_matches_doc_example() -> None:
    doc = (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
        b'"operation":"Read","host":"*"}]}'
    )
    assert AclNode.decode(doc) == {ALICE_READ}
    assert AclNode.encode(frozenset({ALICE_READ}), (2, 8)) == doc
    two = frozenset({ALICE_READ, AclEntry("User:bob", "Deny", "Write", "10.0.0.1")})
    assert AclNode.decode(AclNode.encode(two, (2, 8))) == two


def test_acl_node_empty_or_unparseable_is_no_acls() -> None:
    assert AclNode.decode(b"") == frozenset()
    assert AclNode.decode(b"junk") == frozenset()
    assert AclNode.decode(b'{"version":1,"acls":[]}') == frozenset()


@pytest.mark.parametrize(
    "doc",
    [
        {"version": 1},
        {"version": 1, "acls": {}},
        {
            "version": 1,
            "acls": [
                {"principal": "alice", "permissionType": "Allow", "operation": "Read", "host": "*"}
            ],
        },
        {"version": 1, "acls": [{"principal": "User:a", "operation": "Read", "host": "*"}]},
        [],
    ],
)
def test_acl_node_rejects(doc: Any) -> None:
    with pytest.raises(ZnodeFormatError):
        AclNode.decode(json.dumps(doc).encode())


def test_literal_acl_change() -> None:
    assert AclChangeNode.create_path() == "/kafka-acl-changes/acl_changes_"
    data = AclChangeNode.encode(ResourcePattern("Topic", "foo"), (2, 8))
    assert data == b"Topic:foo"
    assert AclChangeNode.decode(data) == ResourcePattern("Topic", "foo", "LITERAL")
    assert AclChangeNode.decode(b"Group:a:b") == ResourcePattern("Group", "a:b")
    with pytest.raises(ValueError):
        AclChangeNode.encode(ResourcePattern("Topic", "foo", "PREFIXED"), (2, 8))
    for bad in (b"", b"Topic", b":foo", b"\xff"):
        with pytest.raises(ZnodeFormatError):
            AclChangeNode.decode(bad)


def test_extended_acl_change() -> None:
    assert ExtendedAclChangeNode.create_path() == "/kafka-acl-extended-changes/acl_changes_"
    value = ResourcePattern("TransactionalId", "tx", "PREFIXED")
    data = ExtendedAclChangeNode.encode(value, (2, 8))
    assert _js(data) == {
        "version": 1,
        "resourceType": "TRANSACTIONAL_ID",
        "name": "tx",
        "patternType": "PREFIXED",
    }
    assert ExtendedAclChangeNode.decode(data) == value
    doc = b'{"version":1,"resourceType":"TOPIC","name":"foo","patternType":"PREFIXED"}'
    assert ExtendedAclChangeNode.decode(doc) == ResourcePattern("Topic", "foo", "PREFIXED")
    with pytest.raises(ValueError):
        ExtendedAclChangeNode.encode(ResourcePattern("Topic", "foo"), (2, 8))


@pytest.mark.parametrize(
    "doc",
    [
        {"version": 2, "resourceType": "TOPIC", "name": "f", "patternType": "PREFIXED"},
        {"version": 1, "resourceType": "NOPE", "name": "f", "patternType": "PREFIXED"},
        {"version": 1, "resourceType": "TOPIC", "name": "f", "patternType": "MATCH"},
        {"version": 1, "resourceType": "TOPIC", "name": "f", "patternType": "PREFIXED", "x": 1},
        {"version": 1, "resourceType": "TOPIC", "patternType": "PREFIXED"},
    ],
)
def test_extended_acl_change_rejects(doc: Any) -> None:
    with pytest.raises(ZnodeFormatError):
        ExtendedAclChangeNode.decode(json.dumps(doc).encode())
