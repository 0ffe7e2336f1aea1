"""The pure parts of the ZooKeeper consumer registry support: znode formats, ConsumerProtocol
bytes, coordinator choice, pattern subscriptions, client hosts."""

from __future__ import annotations

import struct

import pytest

from zkbroker.broker.groups.zk_registry import (
    ConsumerGroup,
    coordinator_id,
    storable,
    subscribed_topics,
)
from zkbroker.broker.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from zkbroker.broker.rules.jvm_collections import java_abs_hash
from zkbroker.handlers.describe_groups import client_host
from zkbroker.zk_layout import ZnodeFormatError
from zkbroker.zk_layout.nodes.base import TopicPartition
from zkbroker.zk_layout.nodes.consumers import (
    ConsumerIdNode,
    ConsumerOffsetNode,
    ConsumerOwnerNode,
    ConsumerRegistration,
    owner_consumer,
)


def test_subscription_bytes_are_consumer_protocol_v0() -> None:
    data = encode_subscription(["b", "a", "a"])
    assert data == (struct.pack(">hi", 0, 2) + b"\x00\x01a" + b"\x00\x01b" + struct.pack(">i", -1))
    assert decode_subscription(data) == (0, ["a", "b"], None)
    assert decode_subscription(encode_subscription([], b"xy")) == (0, [], b"xy")


def test_assignment_bytes_are_consumer_protocol_v0() -> None:
    data = encode_assignment({"t2": [1], "t1": [3, 0]})
    assert data == (
        struct.pack(">hi", 0, 2)
        + b"\x00\x02t1"
        + struct.pack(">iii", 2, 0, 3)
        + b"\x00\x02t2"
        + struct.pack(">ii", 1, 1)
        + struct.pack(">i", -1)
    )
    assert decode_assignment(data) == (0, {"t1": [0, 3], "t2": [1]}, None)
    assert decode_assignment(encode_assignment({})) == (0, {}, None)


def test_coordinator_is_kafkas_hash_over_sorted_live_brokers() -> None:
    # "g1".hashCode() == 3242; 3242 % 3 == 2.
    assert java_abs_hash("g1") == 3242
    assert coordinator_id("g1", {2: None, 0: None, 1: None}) == 2
    assert coordinator_id("g1", [5, 7]) == 5
    assert coordinator_id("g1", []) is None
    # Negative hash codes: "polygenelubricants" hashes to Integer.MIN_VALUE, which
    # Utils.abs maps to 0; "zzzzzzzz".hashCode() == -1910022912, negated.
    assert java_abs_hash("polygenelubricants") == 0
    assert java_abs_hash("zzzzzzzz") == 1910022912


def test_registration_round_trip_and_kafkas_required_fields() -> None:
    value = ConsumerRegistration({"topic1": 1}, "static", 1700000000000)
    data = ConsumerIdNode.encode(value, (2, 8))
    assert data == (
        b'{"version":1,"subscription":{"topic1":1},"pattern":"static","timestamp":"1700000000000"}'
    )
    assert ConsumerIdNode.decode(data) == value
    seed = b'{"version":1,"pattern":"static","subscription":{"topic1":1}}'
    assert ConsumerIdNode.decode(seed) == ConsumerRegistration({"topic1": 1})
    for bad in (
        b'{"version":1,"subscription":{"t":1}}',
        b'{"version":1,"pattern":"static"}',
        b'{"version":1,"pattern":"glob","subscription":{"t":1}}',
        b'{"version":1,"pattern":"white_list","subscription":{"a":1,"b":1}}',
        b'{"version":1,"pattern":"static","subscription":{"t":"1"}}',
    ):
        with pytest.raises(ZnodeFormatError):
            ConsumerIdNode.decode(bad)


def test_owner_and_offset_nodes() -> None:
    assert ConsumerOwnerNode.decode(b"c1-0") == "c1-0"
    assert owner_consumer("g_host-1-abcdef01-3") == "g_host-1-abcdef01"
    assert owner_consumer("plain") == "plain"
    assert ConsumerOffsetNode.decode(b"42") == 42
    assert ConsumerOffsetNode.decode(b"") is None
    assert ConsumerOffsetNode.encode(-1, (2, 8)) == b"-1"
    with pytest.raises(ZnodeFormatError):
        ConsumerOffsetNode.decode(b"4x")
    assert ConsumerOffsetNode.path("g", "t", 3) == "/consumers/g/offsets/t/3"


def test_pattern_subscriptions_expand_like_the_old_topic_filter() -> None:
    topics = ["orders", "payments", "__consumer_offsets", "orders-eu"]
    white = ConsumerRegistration({" 'orders.*, payments' ": 1}, "white_list")
    assert subscribed_topics(white, topics) == ["orders", "orders-eu", "payments"]
    black = ConsumerRegistration({"orders.*": 1}, "black_list")
    assert subscribed_topics(black, topics) == ["payments"]
    broken = ConsumerRegistration({"(": 1}, "white_list")
    assert subscribed_topics(broken, topics) == []
    static = ConsumerRegistration({"missing": 1, "orders": 2})
    assert subscribed_topics(static, topics) == ["missing", "orders"]


def test_group_state_and_assignment() -> None:
    group = ConsumerGroup(
        "g",
        members={"a": None, "b": None},
        owners={
            TopicPartition("t", 1): "a-0",
            TopicPartition("t", 0): "a-1",
            TopicPartition("u", 0): "b-0",
        },
    )
    assert group.state == "Stable"
    assert group.assignment("a") == {"t": [0, 1]}
    assert ConsumerGroup("g").state == "Empty"
    assert not storable("") and not storable("a/b") and storable("g1")


def test_client_host_from_generated_consumer_ids() -> None:
    assert client_host("g", "g_host-a.example-1700000000000-0123abcd") == "/host-a.example"
    assert client_host("g", "custom-id") == ""
    assert client_host("g", "other_host-1-0123abcd") == ""
