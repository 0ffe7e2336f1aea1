"""Fault injection, the pure parts: the fault node's format, request matching, names of APIs
and error codes, and what the `zkbroker fault` command line turns into."""

from __future__ import annotations

import pytest

from zkbroker.broker.cli.fault_command import entry_from_args
from zkbroker.broker.cli.main import build_parser
from zkbroker.broker.hooks.faults import (
    Fault,
    api_key_of,
    error_code_of,
    fault_matches,
    request_mentions,
)
from zkbroker.broker.protocol import RequestHeader
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from zkbroker.broker.protocol.messages.elect_leaders import ElectLeadersRequest, TopicPartitions
from zkbroker.broker.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.server.hooks import RequestCall
from zkbroker.handlers.context import ConnectionInfo
from zkbroker.zk_layout import ALL_NODE_CLASSES, NodeKind, ZnodeFormatError
from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.nodes import FaultEntry, FaultKind, FaultNode, FaultsNode


def test_fault_node_paths_and_roundtrip() -> None:
    assert FaultsNode.path() == "/zkbroker/faults"
    assert FaultNode.create_path() == "/zkbroker/faults/fault-"
    assert FaultNode.path(7) == "/zkbroker/faults/fault-0000000007"
    assert FaultNode.sequence_number("/zkbroker/faults/fault-0000000007") == 7
    assert FaultNode.KIND is NodeKind.PERSISTENT_SEQUENTIAL
    assert FaultNode in ALL_NODE_CLASSES and FaultsNode in ALL_NODE_CLASSES
    entry = FaultEntry(
        kind=FaultKind.ERROR, api=19, broker=1, topic="t", partition=2, error_code=44, count=3
    )
    data = FaultNode.encode(entry, (2, 8))
    assert cj.parse_object(data, "x") == {
        "version": 1,
        "kind": "error",
        "api": 19,
        "broker": 1,
        "topic": "t",
        "partition": 2,
        "error_code": 44,
        "delay_ms": 0,
        "count": 3,
        "skip": 0,
    }
    assert FaultNode.decode(data) == entry
    # Written by hand: an API name, optional fields left out.
    assert FaultNode.decode(b'{"version":1,"kind":"latency","api":"Metadata","delay_ms":5}') == (
        FaultEntry(kind=FaultKind.LATENCY, api="Metadata", delay_ms=5)
    )
    skipping = FaultEntry(kind=FaultKind.DROP, api=0, count=1, skip=2)
    assert FaultNode.decode(FaultNode.encode(skipping, (3, 9))) == skipping


@pytest.mark.parametrize(
    "data",
    [
        b'{"version":2,"kind":"drop"}',
        b'{"version":1,"kind":"explode"}',
        b'{"version":1,"kind":"error"}',  # no error_code
        b'{"version":1,"kind":"drop","count":-1}',
        b'{"version":1,"kind":"latency","delay_ms":-5}',
        b'{"version":1,"kind":"drop","skip":-1}',
        b'{"version":1,"kind":"drop","api":true}',
        b'{"version":1,"kind":"drop","topic":3}',
        b"[]",
        b"not json",
    ],
)
def test_fault_node_decode_is_strict(data: bytes) -> None:
    with pytest.raises(ZnodeFormatError) as e:
        FaultNode.decode_at(data, 4)
    assert "/zkbroker/faults/fault-0000000004" in str(e.value)


def _create(*names: str) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=[CreatableTopic(name=n, num_partitions=1, replication_factor=1) for n in names]
    )


def test_request_mentions_topics_and_partitions() -> None:
    assert request_mentions(_create("a", "b"), None, None)
    assert request_mentions(_create("a", "b"), "b", None)
    assert not request_mentions(_create("a"), "b", None)
    assert not request_mentions(MetadataRequest(topics=None), "a", None)  # names no topic
    elect = ElectLeadersRequest(
        topic_partitions=[TopicPartitions(topic="a", partitions=[0, 1]), TopicPartitions("b", [2])]
    )
    assert request_mentions(elect, "a", 1)
    assert not request_mentions(elect, "a", 2)  # partition 2 is b's, not a's
    assert request_mentions(elect, "b", 2)
    assert request_mentions(elect, None, 2)
    assert not request_mentions(elect, None, 3)
    listing = ListPartitionReassignmentsRequest(
        topics=[ListPartitionReassignmentsTopics(name="a", partition_indexes=[4])]
    )
    assert request_mentions(listing, "a", 4) and not request_mentions(listing, "a", 0)


def _call(api_key: int, api_name: str, request: object, broker_id: int = 0) -> RequestCall:
    header = RequestHeader(api_key=api_key, api_version=0, correlation_id=1, client_id="c")
    return RequestCall(
        broker_id, ConnectionInfo("0-1", "p", "PLAINTEXT"), header, api_name, request
    )


def test_fault_matches_api_broker_topic_and_count() -> None:
    call = _call(19, "CreateTopics", _create("orders"), broker_id=1)
    error = FaultEntry(kind=FaultKind.ERROR, api=19, error_code=44, count=1)
    assert fault_matches(error, call)
    assert fault_matches(FaultEntry(kind=FaultKind.DROP, api="createtopics"), call)
    assert not fault_matches(FaultEntry(kind=FaultKind.DROP, api=3), call)
    assert fault_matches(FaultEntry(kind=FaultKind.LATENCY, delay_ms=1), call)  # any API
    assert fault_matches(FaultEntry(kind=FaultKind.DROP, api=19, broker=1), call)
    assert not fault_matches(FaultEntry(kind=FaultKind.DROP, api=19, broker=2), call)
    assert fault_matches(FaultEntry(kind=FaultKind.DROP, api=19, topic="orders"), call)
    assert not fault_matches(FaultEntry(kind=FaultKind.DROP, api=19, topic="other"), call)
    assert not fault_matches(FaultEntry(kind=FaultKind.DROP, api=19, count=0), call)


def test_api_and_error_names() -> None:
    assert api_key_of("CreateTopics") == api_key_of("createtopics") == api_key_of("19") == 19
    assert api_key_of(3) == 3
    assert error_code_of("POLICY_VIOLATION") == error_code_of("44") == ec.POLICY_VIOLATION
    assert error_code_of("unknown_server_error") == -1
    with pytest.raises(ValueError):
        api_key_of("Produce!")
    with pytest.raises(ValueError):
        error_code_of("NOT_AN_ERROR")


def test_describe() -> None:
    entry = FaultEntry(kind=FaultKind.ERROR, api=19, topic="t", error_code=44, count=2)
    assert Fault(3, entry).describe() == (
        "fault 3: error api=CreateTopics topic=t error_code=44 count=2"
    )
    third = FaultEntry(kind=FaultKind.ERROR, api=0, partition=0, error_code=6, count=1, skip=2)
    assert Fault(5, third).describe() == (
        "fault 5: error api=Produce partition=0 error_code=6 skip=2 count=1"
    )
    blackhole = FaultEntry(kind=FaultKind.BLACKHOLE, broker=1)
    assert Fault(4, blackhole).describe() == "fault 4: blackhole api=* broker=1 count=until-cleared"


def test_cli_builds_entries() -> None:
    parse = build_parser().parse_args
    zk = ["--zookeeper", "h:1/c"]
    args = parse(["fault", "push", "CreateTopics", "POLICY_VIOLATION", "--count", "2", *zk])
    assert entry_from_args(args) == FaultEntry(kind=FaultKind.ERROR, api=19, error_code=44, count=2)
    args = parse(
        ["fault", "push", "19", "36", "--until-cleared", "--topic", "t", "--delay-ms", "9", *zk]
    )
    assert entry_from_args(args) == FaultEntry(
        kind=FaultKind.ERROR, api=19, topic="t", error_code=36, delay_ms=9, count=None
    )
    args = parse(["fault", "latency", "250", "--broker", "1", *zk])
    assert entry_from_args(args) == FaultEntry(kind=FaultKind.LATENCY, broker=1, delay_ms=250)
    args = parse(["fault", "drop", "Metadata", *zk])
    assert entry_from_args(args) == FaultEntry(kind=FaultKind.DROP, api=3, count=1)
    args = parse(["fault", "push", "Produce", "NOT_LEADER_OR_FOLLOWER", "--skip", "2", *zk])
    assert entry_from_args(args) == FaultEntry(
        kind=FaultKind.ERROR, api=0, error_code=6, count=1, skip=2
    )
    args = parse(["fault", "drop", "Fetch", "--skip", "1", *zk])
    assert entry_from_args(args) == FaultEntry(kind=FaultKind.DROP, api=1, count=1, skip=1)
    args = parse(["fault", "blackhole", "--api", "Metadata", *zk])
    assert entry_from_args(args) == FaultEntry(kind=FaultKind.BLACKHOLE, api=3)
    assert parse(["fault", "clear", *zk]).fault_id is None
    assert parse(["fault", "clear", "5", *zk]).fault_id == 5
    with pytest.raises(SystemExit):
        parse(["fault", "push", "NoSuchApi", "44", *zk])
    with pytest.raises(SystemExit):
        parse(["fault", "push", "19", "44", "--count", "0", *zk])
