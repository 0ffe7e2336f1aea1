"""Command-line parsing and settings validation (pure)."""

from __future__ import annotations

import pytest

from zkbroker.broker.cli.main import build_parser, main, settings_from_args
from zkbroker.broker.settings import Settings


def parse(*argv: str) -> Settings:
    return settings_from_args(build_parser().parse_args(["run", *argv]))


def test_defaults_are_kafkas() -> None:
    s = parse()
    assert s.broker_ids == (0, 1, 2)
    assert (s.host, s.port) == ("127.0.0.1", 9092)
    assert s.kafka_version == (3, 9)
    assert s.max_request_bytes == 104_857_600
    assert s.zookeeper is None
    assert [s.port_of(b) for b in s.broker_ids] == [9092, 9093, 9094]


def test_explicit_ids_racks_and_release() -> None:
    s = parse("--broker-ids", "4,7", "--racks", "r1,r2", "--kafka-version", "2.8.2", "--port", "0")
    assert s.broker_ids == (4, 7)
    assert (s.rack_of(4), s.rack_of(7)) == ("r1", "r2")
    assert s.kafka_version == (2, 8)
    assert s.port_of(7) == 0


def test_broker_session_timeout_is_a_static_config_when_not_default() -> None:
    assert parse().broker_session_timeout_ms == 9000
    assert "broker.session.timeout.ms" not in parse().static_broker_configs(0, 9092, "zk")
    s = parse("--broker-session-timeout-ms", "1500")
    assert s.broker_session_timeout_ms == 1500
    assert s.static_broker_configs(0, 9092, "zk")["broker.session.timeout.ms"] == "1500"
    # Kafka 2.7 had no broker.session.timeout.ms (KIP-631 came in 2.8).
    old = parse("--broker-session-timeout-ms", "1500", "--kafka-version", "2.7")
    assert "broker.session.timeout.ms" not in old.static_broker_configs(0, 9092, "zk")


@pytest.mark.parametrize(
    "argv",
    [
        ["--broker-ids", "1,1"],
        ["--racks", "a,b", "--brokers", "3"],
        ["--port", "65535", "--brokers", "3"],
        ["--max-request-bytes", "0"],
        ["--broker-session-timeout-ms", "0"],
        ["--broker-config", "broker.session.timeout.ms=100", "--broker-session-timeout-ms", "200"],
    ],
)
def test_invalid_settings_exit_2_with_message(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", *argv])
    assert exit_info.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_unknown_release_lists_known_ones(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--kafka-version", "2.9"])
    err = capsys.readouterr().err
    assert "2.9" in err and "3.9" in err


def test_options_without_subcommand_mean_run() -> None:
    # `zkbroker --brokers 1 ...` is `zkbroker run --brokers 1 ...`; checked via parsing only.
    args = build_parser().parse_args(["run", "--brokers", "1"])
    assert args.command == "run" and args.brokers == 1


# ---- zkbroker broker stop|start|list ------------------------------------------------------


def test_broker_stop_and_start_parse() -> None:
    parser = build_parser()
    args = parser.parse_args(["broker", "stop", "1", "--zookeeper", "zk:2181/x"])
    assert (args.command, args.broker_command) == ("broker", "stop")
    assert (args.broker_id, args.zookeeper, args.timeout) == (1, "zk:2181/x", 30.0)
    args = parser.parse_args(["broker", "start", "4", "--zookeeper", "zk:2181", "--timeout", "2.5"])
    assert (args.broker_command, args.broker_id, args.timeout) == ("start", 4, 2.5)
    args = parser.parse_args(["broker", "list", "--zookeeper", "zk:2181"])
    assert (args.broker_command, args.zookeeper) == ("list", "zk:2181")


@pytest.mark.parametrize(
    "argv",
    [
        ["broker"],
        ["broker", "pause", "1", "--zookeeper", "zk:2181"],
        ["broker", "stop", "--zookeeper", "zk:2181"],
        ["broker", "stop", "1"],
        ["broker", "stop", "x", "--zookeeper", "zk:2181"],
        ["broker", "stop", "-1", "--zookeeper", "zk:2181"],
        ["broker", "start", "1", "--zookeeper", "zk:2181", "--timeout", "0"],
        ["broker", "start", "1", "--zookeeper", "zk:2181", "--timeout", "nan"],
        ["broker", "list"],
        ["broker", "list", "1", "--zookeeper", "zk:2181"],
    ],
)
def test_bad_broker_commands_exit_2(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_broker_subcommand_does_not_swallow_implicit_run() -> None:
    # `zkbroker --port 0` still means `zkbroker run --port 0`: main inserts `run` only before
    # an option, so `broker` must stay a subcommand and `run` keep all its options.
    args = build_parser().parse_args(["run", "--port", "0", "--zookeeper", "zk:2181"])
    assert (args.command, args.port, args.zookeeper) == ("run", 0, "zk:2181")
    assert not hasattr(args, "broker_command")
