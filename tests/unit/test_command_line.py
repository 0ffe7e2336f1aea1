"""The `zkbroker` command as users meet it: the installed console script, in a child process.

Every kind of refused command line (a bad option value, an unknown option, bad broker ids or
racks, a listener without a protocol, a server.properties with a bad value or missing, a JAAS
file missing or unparsable, conflicting options) exits 2 with argparse's usage and one
`zkbroker run: error: ...` line on stderr, nothing on stdout, and having started nothing:
the `java` it would run (a script on JAVA_HOME and PATH) never ran, nothing was logged (no
`zookeeper.starting`), and no file or directory appeared (not the `--log-dir`, not the
`--capture` file, not the class-data archive under XDG_CACHE_HOME, not a temporary directory).
`zkbroker run --help` groups the options and ends with examples. No timing is asserted here:
the README's figures come from running the command by hand.

The integration counterpart (`tests/integration/test_command_line.py`) shows that the same
fake `java` is seen when a run does start, and that the early ZooKeeper is the cluster's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from zkbroker.broker.cli import run_options
from zkbroker.broker.cli.arguments import (
    DEFAULT_KAFKA_RELEASE,
    KAFKA_PATCH_RELEASES,
    kafka_release,
)
from zkbroker.broker.cli.main import build_parser
from zkbroker.broker.protocol.releases import DEFAULT_RELEASE, RELEASES, parse_release
from zkbroker.broker.settings import Settings

#: The console script pip installed next to this interpreter.
ZKBROKER = Path(sys.executable).with_name("zkbroker")
GROUPS = ("cluster", "listeners and security", "ZooKeeper", "storage", "observability")
USAGE = "usage: zkbroker run "
ERROR = "zkbroker run: error: "


def fake_java(directory: Path, marker: Path) -> Path:
    """A JAVA_HOME whose bin/java records that it ran (and fails)."""
    java = directory / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f'#!/bin/sh\necho "$@" >> "{marker}"\nexit 1\n')
    java.chmod(0o755)
    return directory


@dataclass(frozen=True)
class Sandbox:
    """Where a command runs: HOME, the cache, the temporary directory and the working
    directory all inside `root`, `java` a recording fake."""

    root: Path
    cwd: Path
    marker: Path
    env: dict[str, str]

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"  # never created by a refused command

    @property
    def capture(self) -> Path:
        return self.root / "capture" / "requests.jsonl"

    def files(self) -> list[str]:
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*"))


def sandbox_env(root: Path, marker: Path) -> dict[str, str]:
    """A user's environment confined to `root`, with the recording `java` first everywhere."""
    java_home = fake_java(root / "jdk", marker)
    for name in ("home", "tmp"):
        (root / name).mkdir()
    return {
        "HOME": str(root / "home"),
        "XDG_CACHE_HOME": str(root / "home" / ".cache"),
        "TMPDIR": str(root / "tmp"),
        "JAVA_HOME": str(java_home),
        "PATH": os.pathsep.join([str(java_home / "bin"), os.defpath]),
        "LC_ALL": "C.UTF-8",
        "COLUMNS": "100",
    }


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    marker = tmp_path / "java-ran"
    env = sandbox_env(tmp_path, marker)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    return Sandbox(tmp_path, cwd, marker, env)


def zkbroker(
    sandbox: Sandbox, args: Sequence[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ZKBROKER), *args],
        cwd=sandbox.cwd,
        env={**sandbox.env, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def refused(sandbox: Sandbox, args: Sequence[str], env: dict[str, str] | None = None) -> str:
    """The one error of `zkbroker ARGS --log-dir ... --capture ...`, after checking that the
    command refused it as argparse does and started and created nothing."""
    before = sandbox.files()
    argv = [*args, "--log-dir", str(sandbox.log_dir), "--capture", str(sandbox.capture)]
    done = zkbroker(sandbox, argv, env)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    # The usage (its continuation lines indented), then the error: no log line (no
    # `zookeeper.starting`), no traceback.
    assert lines[0].startswith(USAGE), done.stderr
    assert all(line.startswith(" ") for line in lines[1:-1]), done.stderr
    errors = [line for line in lines if "error:" in line]
    assert errors == [lines[-1]] and errors[0].startswith(ERROR), done.stderr
    assert not sandbox.marker.exists(), "a JVM was started"
    assert not sandbox.log_dir.exists() and not sandbox.capture.parent.exists()
    assert sandbox.files() == before, "something was created"
    return errors[0].removeprefix(ERROR)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kafka-version", "2.8.9"], "argument --kafka-version: unknown Kafka release '2.8.9'"),
        (["run", "--log-level", "loud"], "argument --log-level: invalid choice: 'loud'"),
        (["--brokers", "three"], "argument --brokers: invalid int value: 'three'"),
        (["--no-such-option"], "unrecognized arguments: --no-such-option"),
        (["run", "--port", "9092", "extra"], "unrecognized arguments: extra"),
        (["--broker-ids", "1,1"], "broker ids must be distinct, got [1, 1]"),
        (["--broker-ids", "-1"], "broker ids must be >= 0, got [-1]"),
        (["--racks", "a,b", "--brokers", "3"], "--racks names 2 racks for 3 brokers"),
        (["--port", "65535", "--brokers", "3"], "port 65535 leaves no room for 3 brokers"),
        (["--listener", "nohost"], "expected NAME://HOST:PORT, got 'nohost'"),
        (
            ["--listener", "FOO://127.0.0.1:9092"],
            "No security protocol defined for listener FOO",
        ),
        (["--statsd", "nowhere"], "--statsd expects host:port"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_refused_options(sandbox: Sandbox, args: list[str], message: str) -> None:
    assert message in refused(sandbox, args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--brokers", "3", "--broker-ids", "1,2"],
            "argument --broker-ids: not allowed with argument --brokers",
        ),
        (
            ["--advertised-host", "h", "--advertised-listener", "PLAINTEXT://h:1"],
            "give --advertised-host or --advertised-listener, not both",
        ),
        (["--zookeeper-set-acl"], "zookeeper.set.acl is true, but no ZooKeeper credentials"),
        (
            ["--broker-config", "num.partitions=2", "--num-partitions", "3"],
            "--broker-config: num.partitions=2 conflicts with --num-partitions 3",
        ),
    ],
    ids=["ids", "advertised", "set-acl", "broker-config"],
)
def test_conflicting_options(sandbox: Sandbox, args: list[str], message: str) -> None:
    assert message in refused(sandbox, args)


def test_server_properties_with_a_bad_value(sandbox: Sandbox) -> None:
    path = sandbox.cwd / "server.properties"
    path.write_text("broker.id=0\nlog.retention.hours=x\n")
    message = refused(sandbox, ["--broker-config-file", "server.properties"])
    assert message.startswith("--broker-config-file server.properties, line 2: ")
    assert "Invalid value x for configuration log.retention.hours" in message


def test_server_properties_that_do_not_exist(sandbox: Sandbox) -> None:
    message = refused(sandbox, ["--broker-config-file", "missing.properties"])
    assert message == "--broker-config-file missing.properties: No such file or directory"


def test_server_properties_against_the_command_line(sandbox: Sandbox) -> None:
    # The file's log dir and broker id against the options': neither directory is made.
    elsewhere = sandbox.root / "kafka-logs"
    (sandbox.cwd / "server.properties").write_text(f"broker.id=1\nlog.dirs={elsewhere}\n")
    message = refused(sandbox, ["--broker-config-file", "server.properties"])
    assert f"log.dirs={elsewhere} conflicts with --log-dir {sandbox.log_dir}" in message
    assert not elsewhere.exists()
    message = refused(sandbox, ["--broker-config-file", "server.properties", "--broker-ids", "3"])
    assert "line 1: broker.id=1 conflicts with --broker-ids 3" in message


def test_jaas_file_missing(sandbox: Sandbox) -> None:
    message = refused(sandbox, ["--jaas-config", "missing.conf"])
    assert message == "JAAS file missing.conf: No such file or directory"


def test_jaas_file_missing_from_kafka_opts(sandbox: Sandbox) -> None:
    missing = sandbox.root / "nowhere" / "kafka_server_jaas.conf"
    env = {"KAFKA_OPTS": f"-Xmx1g -Djava.security.auth.login.config={missing}"}
    message = refused(sandbox, ["--brokers", "1"], env)
    assert message == f"JAAS file {missing}: No such file or directory"


def test_jaas_file_unparsable(sandbox: Sandbox) -> None:
    (sandbox.cwd / "jaas.conf").write_text('KafkaServer {\n x required a="b\n};\n')
    message = refused(sandbox, ["--jaas-config", "jaas.conf"])
    assert message.startswith("JAAS file jaas.conf: ") and "unterminated quoted string" in message


def test_help_groups_every_option_and_ends_with_examples(sandbox: Sandbox) -> None:
    done = zkbroker(sandbox, ["run", "--help"])
    assert done.returncode == 0 and done.stderr == ""
    text = done.stdout
    titles = [line[:-1] for line in text.splitlines() if line.endswith(":") and line[0] != " "]
    assert titles == ["options", *GROUPS, "examples"], titles
    examples = text.split("\nexamples:\n", 1)[1]
    assert "  zkbroker run --brokers 3 --port 0\n" in examples
    assert "  zkbroker run --broker-config-file config/server.properties" in examples
    assert not sandbox.marker.exists()


def _run_parser() -> argparse.ArgumentParser:
    parser = build_parser("run")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["run"]


def test_every_run_option_has_help_and_a_group() -> None:
    run = _run_parser()
    grouped = {g.title: g._group_actions for g in run._action_groups}
    assert list(grouped) == ["positional arguments", "options", *GROUPS]
    assert [a.dest for a in grouped["options"]] == ["help"]
    assert grouped["positional arguments"] == []
    for action in run._actions:
        assert action.help and action.help != argparse.SUPPRESS, action.dest
        assert sum(action in actions for actions in grouped.values()) == 1, action.dest


def test_help_defaults_are_the_settings_defaults() -> None:
    defaults = Settings()
    assert str(defaults.max_request_bytes) == run_options.DEFAULT_MAX_REQUEST_BYTES_TEXT
    buffer = str(defaults.zookeeper_max_buffer_bytes)
    assert buffer == run_options.DEFAULT_ZOOKEEPER_MAX_BUFFER_TEXT


def test_the_command_lines_releases_are_the_emulated_ones() -> None:
    # The parser's light table and the protocol's (whose import loads the codec) agree.
    assert tuple(KAFKA_PATCH_RELEASES) == RELEASES
    assert DEFAULT_KAFKA_RELEASE == DEFAULT_RELEASE == Settings().kafka_version
    for line, patches in KAFKA_PATCH_RELEASES.items():
        name = ".".join(map(str, line))
        assert kafka_release(name) == parse_release(name) == line
        for patch in patches:
            assert kafka_release(f"{name}.{patch}") == line
    for text in ("2.9", "2.8.9", "3.3.0", "0.10", "2.8.0.0", "3.9-rc1", "", "03.9", " "):
        with pytest.raises(argparse.ArgumentTypeError, match="unknown Kafka release"):
            kafka_release(text)


# What parsing and the settings' first checks may not import: the codec, the server, the
# engine, the handlers, the znode layer (kazoo).
_HEAVY = (
    "zkbroker.broker.protocol",
    "zkbroker.broker.server",
    "zkbroker.broker.engine",
    "zkbroker.handlers",
    "zkbroker.zk_layout",
    "kazoo",
)


@pytest.mark.parametrize(
    "argv",
    [
        ["--kafka-version", "2.8.9"],
        ["--brokers", "3", "--racks", "a,b"],
        ["--broker-ids", "1,1"],
        ["--listener", "FOO://127.0.0.1:9092"],
        ["--jaas-config", "/nonexistent/jaas.conf"],
    ],
)
def test_refusing_imports_nothing_heavy(argv: list[str]) -> None:
    code = (
        "import sys\n"
        "from zkbroker.broker.cli.launch import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit as e:\n"
        "    assert e.code == 2, e.code\n"
        f"heavy = sorted(m for m in sys.modules if m.startswith({_HEAVY!r}))\n"
        "print(heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


@pytest.mark.parametrize("where", ["file", "under-a-file"])
def test_a_log_dir_that_cannot_be_one(sandbox: Sandbox, where: str) -> None:
    # Refused before anything starts, as a bad option is, and the file is left as it was.
    blocker = sandbox.cwd / "not-a-dir"
    blocker.write_text("kept\n")
    log_dir = blocker if where == "file" else blocker / "logs"
    before = sandbox.files()
    done = zkbroker(sandbox, ["--log-dir", str(log_dir), "--brokers", "1"])
    assert done.returncode == 2 and done.stdout == "", done.stderr
    error = done.stderr.splitlines()[-1].removeprefix(ERROR)
    if where == "file":
        assert error == f"--log-dir: {blocker} is not a readable log directory."
    else:
        assert error == (
            f"--log-dir: {log_dir} cannot be created ({blocker} is not a writable directory)"
        )
    assert not sandbox.marker.exists(), "a JVM was started"
    assert sandbox.files() == before and blocker.read_text() == "kept\n"
