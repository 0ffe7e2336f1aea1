"""CLI manners: every bad value is one line on stderr after the subcommand's usage, in
argparse's own format (`usage: zkbroker run ...`, then `zkbroker run: error: ...`), exit 2,
whether argparse finds it or the settings' checks after parsing do."""

from __future__ import annotations

from pathlib import Path

import pytest

from zkbroker.broker.cli.main import main


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], prog: str) -> str:
    """The one error line of `zkbroker ARGV` (after checking exit 2 and the usage)."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert lines[0].startswith(f"usage: {prog} "), captured.err
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1 and errors[0] == lines[-1], captured.err
    assert errors[0].startswith(f"{prog}: error: ")
    assert "Traceback" not in captured.err
    return errors[0].removeprefix(f"{prog}: error: ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--log-level", "verbose"], "argument --log-level: invalid choice: 'verbose'"),
        (["--kafka-version", "2.8.9"], "argument --kafka-version: unknown Kafka release '2.8.9'"),
        (["--kafka-version", "2.9"], "unknown Kafka release '2.9'; accepted: 0.10.0"),
        (["--listener", "FOO://127.0.0.1:9092"], "No security protocol defined for listener FOO"),
        (["--listener", "nohost"], "expected NAME://HOST:PORT, got 'nohost'"),
        (["--broker-ids", "1,1"], "broker ids must be distinct, got [1, 1]"),
        (["--racks", "a,b", "--brokers", "3"], "--racks names 2 racks for 3 brokers"),
        (["--max-request-bytes", "0"], "--max-request-bytes must be positive"),
        (["--statsd", "nowhere"], "--statsd expects host:port"),
        (
            ["--broker-config", "log.retention.hours=x"],
            "Invalid value x for configuration log.retention.hours",
        ),
        (
            ["--broker-config", "num.partitions=2", "--num-partitions", "3"],
            "--broker-config: num.partitions=2 conflicts with --num-partitions 3",
        ),
        (["--jaas-config", "/nonexistent/jaas.conf"], "JAAS file /nonexistent/jaas.conf"),
    ],
)
def test_run_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert message in _refused(["run", *argv], capsys, "zkbroker run")
    # Options without a subcommand mean run: the same usage and message.
    assert message in _refused(argv, capsys, "zkbroker run")


def test_unknown_release_lists_the_accepted_ones(capsys: pytest.CaptureFixture[str]) -> None:
    message = _refused(["run", "--kafka-version", "2.8.9"], capsys, "zkbroker run")
    assert "2.8 (2.8.0-2)" in message and "0.11.0 (0.11.0.0-3)" in message and "3.9" in message


def test_config_file_conflict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "server.properties"
    path.write_text("broker.id=1\n")
    message = _refused(
        ["run", "--broker-config-file", str(path), "--broker-ids", "3"], capsys, "zkbroker run"
    )
    assert (
        message == f"--broker-config-file {path}, line 1: broker.id=1 conflicts with --broker-ids 3"
    )


def test_multi_line_reasons_become_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text('KafkaServer {\n x required a="b\n};\n')
    message = _refused(["run", "--jaas-config", str(jaas)], capsys, "zkbroker run")
    assert "unterminated quoted string" in message


@pytest.mark.parametrize(
    ("argv", "prog", "message"),
    [
        (["broker", "stop", "-1", "--zookeeper", "zk:2181"], "zkbroker broker stop", "broker id"),
        (
            ["user", "add", "u", "--password", "p", "--zookeeper", "zk", "--iterations", "99999"],
            "zkbroker user add",
            "expected iterations between 4096 and 16384, got '99999'",
        ),
        (
            ["user", "add", "u", "--password", "p", "--zookeeper", "zk", "--kafka-version", "9.9"],
            "zkbroker user add",
            "unknown Kafka release '9.9'",
        ),
        (
            ["fault", "push", "NoSuchApi", "NONE", "--zookeeper", "zk"],
            "zkbroker fault push",
            "argument API",
        ),
    ],
)
def test_other_subcommands(
    argv: list[str], prog: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in _refused(argv, capsys, prog)


def test_help_says_what_zkbroker_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Kafka mock broker and controller of a ZooKeeper-mode cluster" in text
    for part in ("data plane", "consumer groups", "transactions", "security", "3.9"):
        assert part in text
    assert "for the admin APIs, on" not in text
