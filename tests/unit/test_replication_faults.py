"""Replication faults, the pure parts: their entries' format and checks, which partitions and
brokers the view answers for, and what the `zkbroker fault` command line turns into."""

from __future__ import annotations

import inspect

import pytest

from zkbroker.broker.cli.fault_command import entry_from_args
from zkbroker.broker.cli.main import build_parser, main
from zkbroker.broker.hooks.faults import Fault, fault_matches
from zkbroker.broker.hooks.replication_faults import (
    ReplicationFaults,
    cut_inter_broker_entry,
    pause_replication_entry,
    slow_replication_entry,
)
from zkbroker.broker.protocol import RequestHeader
from zkbroker.broker.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from zkbroker.broker.replication.fault_view import ReplicationFaultView
from zkbroker.broker.server.hooks import RequestCall
from zkbroker.handlers.context import ConnectionInfo
from zkbroker.zk_layout import ZnodeFormatError
from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.nodes import FaultEntry, FaultKind, FaultNode

ZK = ["--zookeeper", "h:1/c"]


def _view(*entries: FaultEntry) -> ReplicationFaults:
    view = ReplicationFaults()
    view.update(entries)
    return view


def test_the_view_is_what_the_replication_layer_asks_for() -> None:
    # The same methods with the same signatures as the protocol the replica manager is typed
    # with (mypy checks the package, not the tests: this is the check that runs).
    asked = [n for n in vars(ReplicationFaultView) if not n.startswith("_")]
    assert sorted(asked) == ["fetch_delay_s", "fetch_paused", "inter_broker_cut"]
    for name in asked:
        expected = inspect.signature(getattr(ReplicationFaultView, name))
        assert inspect.signature(getattr(ReplicationFaults, name)) == expected, name
    view: ReplicationFaultView = ReplicationFaults()
    assert not view.fetch_paused(1, "t", 0)
    assert view.fetch_delay_s(1, "t", 0) == 0.0
    assert not view.inter_broker_cut(1)


def test_pause_matches_its_broker_and_scope() -> None:
    everything = _view(pause_replication_entry(1))
    assert everything.fetch_paused(1, "a", 0) and everything.fetch_paused(1, "b", 7)
    assert not everything.fetch_paused(2, "a", 0)  # another follower fetches on
    topic = _view(pause_replication_entry(1, "a"))
    assert topic.fetch_paused(1, "a", 0) and topic.fetch_paused(1, "a", 3)
    assert not topic.fetch_paused(1, "b", 0)
    partition = _view(pause_replication_entry(1, "a", 2))
    assert partition.fetch_paused(1, "a", 2)
    assert not partition.fetch_paused(1, "a", 1) and not partition.fetch_paused(1, "b", 2)
    any_topic = _view(pause_replication_entry(1, partition=2))  # partition 2 of every topic
    assert any_topic.fetch_paused(1, "a", 2) and any_topic.fetch_paused(1, "b", 2)
    assert not any_topic.fetch_paused(1, "a", 0)
    # Pausing delays nothing and cuts nothing.
    assert everything.fetch_delay_s(1, "a", 0) == 0.0 and not everything.inter_broker_cut(1)


def test_delay_is_the_longest_of_the_matching_entries() -> None:
    view = _view(
        slow_replication_entry(1, 100),
        slow_replication_entry(1, 250, "a"),
        slow_replication_entry(1, 50, "a", 0),
        slow_replication_entry(1, 900, "b", 3),
        slow_replication_entry(2, 400),
    )
    assert view.fetch_delay_s(1, "a", 0) == 0.25
    assert view.fetch_delay_s(1, "a", 5) == 0.25
    assert view.fetch_delay_s(1, "b", 3) == 0.9
    assert view.fetch_delay_s(1, "b", 0) == 0.1
    assert view.fetch_delay_s(2, "b", 3) == 0.4
    assert view.fetch_delay_s(3, "a", 0) == 0.0
    assert not view.fetch_paused(1, "a", 0)
    # Two entries of one scope: the longer one.
    assert _view(
        slow_replication_entry(1, 300, "a"), slow_replication_entry(1, 200, "a")
    ).fetch_delay_s(1, "a", 0) == pytest.approx(0.3)


def test_cut_is_per_broker_and_update_replaces_everything() -> None:
    view = _view(cut_inter_broker_entry(2), pause_replication_entry(1))
    assert view.inter_broker_cut(2) and not view.inter_broker_cut(1)
    assert not view.fetch_paused(2, "a", 0)  # a cut is the fetcher's to apply, not a pause
    request_fault = FaultEntry(kind=FaultKind.LATENCY, broker=1, delay_ms=500)
    view.update([request_fault])  # the entries now: only a request fault
    assert not view.inter_broker_cut(2) and not view.fetch_paused(1, "a", 0)
    assert view.fetch_delay_s(1, "a", 0) == 0.0


def _fetch_call(broker_id: int) -> RequestCall:
    header = RequestHeader(api_key=1, api_version=12, correlation_id=1, client_id="c")
    request = FetchRequest(
        replica_id=broker_id,
        topics=[FetchTopic(topic="a", partitions=[FetchPartition(partition=0)])],
    )
    return RequestCall(broker_id, ConnectionInfo("0-1", "p", "PLAINTEXT"), header, "Fetch", request)


@pytest.mark.parametrize(
    "entry",
    [pause_replication_entry(1), slow_replication_entry(1, 10, "a"), cut_inter_broker_entry(1)],
)
def test_replication_kinds_match_no_request(entry: FaultEntry) -> None:
    assert not fault_matches(entry, _fetch_call(1))


def test_entries_roundtrip_through_the_node() -> None:
    slow = slow_replication_entry(3, 250, "orders", 1)
    data = FaultNode.encode(slow, (3, 9))
    assert cj.parse_object(data, "x") == {
        "version": 1,
        "kind": "slow-replication",
        "api": None,
        "broker": 3,
        "topic": "orders",
        "partition": 1,
        "error_code": None,
        "delay_ms": 250,
        "count": None,
        "skip": 0,
    }
    for entry in (slow, pause_replication_entry(0, "t"), cut_inter_broker_entry(2)):
        assert FaultNode.decode(FaultNode.encode(entry, (2, 8))) == entry
    # Written by hand, optional fields left out.
    assert FaultNode.decode(b'{"version":1,"kind":"cut-inter-broker","broker":4}') == (
        FaultEntry(kind=FaultKind.CUT_INTER_BROKER, broker=4)
    )
    # Entries of the older kinds decode as before.
    assert FaultNode.decode(b'{"version":1,"kind":"blackhole","broker":1}') == FaultEntry(
        kind=FaultKind.BLACKHOLE, broker=1
    )


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"version":1,"kind":"pause-replication"}', "needs a broker"),
        (b'{"version":1,"kind":"pause-replication","broker":1,"count":2}', "no count"),
        (b'{"version":1,"kind":"pause-replication","broker":1,"skip":1}', "no count or skip"),
        (b'{"version":1,"kind":"slow-replication","broker":1,"api":1}', "no API"),
        (b'{"version":1,"kind":"pause-replication","broker":1,"delay_ms":5}', "no delay"),
        (b'{"version":1,"kind":"cut-inter-broker","broker":1,"topic":"t"}', "whole broker"),
        (b'{"version":1,"kind":"cut-inter-broker","broker":1,"error_code":6}', "no error code"),
    ],
)
def test_decode_refuses_malformed_replication_entries(data: bytes, reason: str) -> None:
    with pytest.raises(ZnodeFormatError, match=reason):
        FaultNode.decode_at(data, 4)


def test_builders_refuse_what_decoding_would() -> None:
    with pytest.raises(ValueError, match="delay_ms must be >= 0"):
        slow_replication_entry(1, -1)
    with pytest.raises(ValueError, match="broker id"):
        pause_replication_entry(-1)


def test_describe() -> None:
    assert Fault(7, pause_replication_entry(1, "t", 0)).describe() == (
        "fault 7: pause-replication broker=1 topic=t partition=0 count=until-cleared"
    )
    assert Fault(8, slow_replication_entry(2, 300)).describe() == (
        "fault 8: slow-replication broker=2 delay_ms=300 count=until-cleared"
    )
    assert Fault(9, cut_inter_broker_entry(0)).describe() == (
        "fault 9: cut-inter-broker broker=0 count=until-cleared"
    )


def test_cli_builds_entries() -> None:
    parse = build_parser().parse_args
    args = parse(["fault", "pause-replication", "--broker", "1", *ZK])
    assert entry_from_args(args) == FaultEntry(kind=FaultKind.PAUSE_REPLICATION, broker=1)
    args = parse(
        ["fault", "pause-replication", "--broker", "1", "--topic", "t", "--partition", "2", *ZK]
    )
    assert entry_from_args(args) == pause_replication_entry(1, "t", 2)
    args = parse(["fault", "slow-replication", "--broker", "2", "--delay-ms", "500", *ZK])
    assert entry_from_args(args) == FaultEntry(
        kind=FaultKind.SLOW_REPLICATION, broker=2, delay_ms=500
    )
    args = parse(
        ["fault", "slow-replication", "--broker", "2", "--delay-ms", "5", "--topic", "t", *ZK]
    )
    assert entry_from_args(args) == slow_replication_entry(2, 5, "t")
    args = parse(["fault", "cut-inter-broker", "--broker", "0", *ZK])
    assert entry_from_args(args) == FaultEntry(kind=FaultKind.CUT_INTER_BROKER, broker=0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["pause-replication", *ZK], "the following arguments are required: --broker"),
        (["slow-replication", "--broker", "1", *ZK], "required: --delay-ms"),
        (["slow-replication", "--broker", "1", "--delay-ms", "-5", *ZK], "argument --delay-ms"),
        (["cut-inter-broker", "--broker", "1", "--topic", "t", *ZK], "unrecognized arguments"),
        (["pause-replication", "--broker", "x", *ZK], "argument --broker"),
    ],
)
def test_cli_refusals(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    prog = f"zkbroker fault {argv[0]}"
    with pytest.raises(SystemExit) as exit_info:
        main(["fault", *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {prog} ")
    assert err.splitlines()[-1].startswith(f"{prog}: error: ") and message in err


def test_cli_help_names_the_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["fault", "--help"])
    out = capsys.readouterr().out
    for action in ("pause-replication", "slow-replication", "cut-inter-broker"):
        assert action in out
    with pytest.raises(SystemExit):
        main(["fault", "cut-inter-broker", "--help"])
    assert "network partition between brokers only" in " ".join(capsys.readouterr().out.split())
