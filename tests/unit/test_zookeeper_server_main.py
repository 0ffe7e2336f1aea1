"""`zookeeper-server-start FILE` (`zkbroker.broker.zookeeper.server_main`): the configuration
file read as java.util.Properties, its directories created, the console log configurations with
Confluent's pattern, the JVM's command and its environment knobs, the refusals (exit 2, a
message on stderr), and, where Java and ZooKeeper are installed, one real start that answers
`ruok`, logs to stdout in Confluent's pattern and ends on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import IO

import pytest

from tests.shared_data import under_ci
from zkbroker.broker.zookeeper import server_main
from zkbroker.broker.zookeeper.discovery import DEFAULT_SYSTEM_JAR_DIRS, resolve_runtime
from zkbroker.broker.zookeeper.errors import ZooKeeperNotFoundError
from zkbroker.broker.zookeeper.jvm_launch import DEFAULT_HEAP, QUORUM_PEER_MAIN
from zkbroker.broker.zookeeper.network import pick_free_port, send_four_letter_word
from zkbroker.broker.zookeeper.server_main import (
    CONSOLE_PATTERN,
    EXIT_RUNTIME,
    EXIT_USAGE,
    Runtime,
    ServerConfig,
    StartError,
    command_for,
    config_path_from,
    ensure_dirs,
    find_java_and_classpath,
    heap_for,
    main,
    parse_properties,
    read_config,
    render_console_log4j_properties,
    render_console_logback_xml,
    write_console_logging,
)

KNOBS = (
    "JAVA",
    "JAVA_HOME",
    "ZOOKEEPER_HOME",
    "ZOOKEEPER_HEAP",
    "KAFKA_HEAP_OPTS",
    "KAFKA_OPTS",
    "ZOOKEEPER_SERVER_JVMFLAGS",
    "SERVER_JVMFLAGS",
)
# `[2024-05-01 12:00:00,123] INFO message (logger.Name)`: CONSOLE_PATTERN's output.
CONFLUENT_LINE = re.compile(
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) "
    r".* \([\w.$]+\)$"
)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in KNOBS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def runtime(tmp_path: Path) -> Runtime:
    return Runtime("/opt/java/bin/java", "/zk/a.jar:/zk/b.jar", tmp_path / "l4j", tmp_path / "lb")


def write_cfg(folder: Path, text: str) -> Path:
    path = folder / "zookeeper.properties"
    path.write_text(text, encoding="iso-8859-1")
    return path


# -- the configuration file ------------------------------------------------------------------


def test_properties_syntax_as_java_reads_it() -> None:
    text = (
        "# comment \\\n"
        "  ! another\n"
        "\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "d = = x=y:z\n"
        "e\n"
        "long = one, \\\n"
        "       two\n"
        "odd\\ key\\=\\:x = \\tv\\u00e9\\\\\n"
        "trimmed=  spaced  \n"
        "a=last\r\n"
        "end\\\n"
    )
    assert parse_properties(text) == {
        "a": "last",
        "b": "2",
        "c": "3",
        "d": "= x=y:z",
        "e": "",
        "long": "one, two",
        "odd key=:x": "v\u00e9\\",
        "trimmed": "spaced",
        "end": "",
    }


def test_malformed_unicode_escape_is_refused() -> None:
    with pytest.raises(StartError, match="Malformed"):
        parse_properties("a=\\u12x4\n")


def test_read_config_takes_the_ports_and_dirs(tmp_path: Path) -> None:
    # testcontainers' file, plus what Confluent's template writes.
    path = write_cfg(
        tmp_path,
        "clientPort=2181\ndataDir=/var/lib/zookeeper/data\n"
        "dataLogDir=/var/lib/zookeeper/log\ntickTime=2000\n",
    )
    assert read_config(path) == ServerConfig(
        path, 2181, Path("/var/lib/zookeeper/data"), Path("/var/lib/zookeeper/log")
    )
    only_data = write_cfg(tmp_path, "clientPort 2181\ndataDir : d\n")
    assert read_config(only_data) == ServerConfig(only_data, 2181, Path("d"), None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("dataDir=/d\n", "clientPort is not set"),
        ("clientPort=\ndataDir=/d\n", "clientPort is not set"),
        ("clientPort=abc\ndataDir=/d\n", "clientPort must be a port number"),
        ("clientPort=65536\ndataDir=/d\n", "clientPort must be a port number"),
        ("clientPort=2181\n", "dataDir is not set"),
    ],
)
def test_read_config_refuses_a_file_without_port_or_data_dir(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(StartError, match=message) as caught:
        read_config(write_cfg(tmp_path, text))
    assert caught.value.exit_code == EXIT_USAGE


def test_read_config_refuses_a_missing_or_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(StartError, match="does not exist"):
        read_config(tmp_path / "nope.properties")
    with pytest.raises(StartError, match="cannot read"):
        read_config(tmp_path)  # a directory: read as root too


def test_ensure_dirs_creates_both_with_mode_0750(tmp_path: Path) -> None:
    config = ServerConfig(tmp_path / "c", 2181, tmp_path / "a" / "data", tmp_path / "a" / "log")
    old = os.umask(0o022)
    try:
        ensure_dirs(config)
        ensure_dirs(config)  # existing ones are fine
    finally:
        os.umask(old)
    for folder in (tmp_path / "a" / "data", tmp_path / "a" / "log"):
        assert folder.is_dir()
        assert folder.stat().st_mode & 0o777 == 0o750


def test_ensure_dirs_reports_a_dir_it_cannot_create(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    config = ServerConfig(tmp_path / "c", 2181, tmp_path / "ok", tmp_path / "file" / "log")
    with pytest.raises(StartError, match=r"^dataLogDir .*/file/log: cannot create it"):
        ensure_dirs(config)


# -- console logging -------------------------------------------------------------------------


def test_log4j_configuration_logs_info_to_stdout_in_confluents_pattern() -> None:
    entries = parse_properties(render_console_log4j_properties())
    assert CONSOLE_PATTERN == "[%d] %p %m (%c)%n"
    assert entries["log4j.rootLogger"] == "INFO, stdout"
    assert entries["log4j.appender.stdout"] == "org.apache.log4j.ConsoleAppender"
    assert entries["log4j.appender.stdout.Target"] == "System.out"
    assert entries["log4j.appender.stdout.layout.ConversionPattern"] == CONSOLE_PATTERN


def test_logback_configuration_logs_info_to_stdout_in_confluents_pattern() -> None:
    root = ET.fromstring(render_console_logback_xml())
    appender = root.find("appender")
    assert appender is not None
    assert appender.get("class") == "ch.qos.logback.core.ConsoleAppender"
    assert appender.findtext("target") == "System.out"
    assert appender.findtext("encoder/pattern") == CONSOLE_PATTERN
    level = root.find("root")
    assert level is not None and level.get("level") == "INFO"
    ref = level.find("appender-ref")
    assert ref is not None and ref.get("ref") == appender.get("name")


def test_write_console_logging_writes_both_files(tmp_path: Path) -> None:
    log4j, logback = write_console_logging(tmp_path)
    assert log4j.read_text() == render_console_log4j_properties()
    assert logback.read_text() == render_console_logback_xml()


# -- the command -----------------------------------------------------------------------------


def test_command_runs_quorum_peer_main_with_the_file(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    command = command_for("zookeeper.properties", environ={}, runtime=rt)
    assert command[0] == rt.java
    assert command[-2:] == [QUORUM_PEER_MAIN, "zookeeper.properties"]
    assert command[command.index("-cp") + 1] == rt.classpath
    assert f"-Xmx{DEFAULT_HEAP}" in command
    assert f"-Dlog4j.configuration={rt.log4j_config.as_uri()}" in command
    assert f"-Dlogback.configurationFile={rt.logback_config}" in command
    assert "-Dzookeeper.admin.enableServer=false" in command
    assert not any("auth.login.config" in arg for arg in command)


@pytest.mark.parametrize(
    ("environ", "heap"),
    [
        ({}, DEFAULT_HEAP),
        ({"ZOOKEEPER_HEAP": "1g"}, "1g"),
        ({"ZOOKEEPER_HEAP": " -Xmx768M "}, "768M"),
        ({"ZOOKEEPER_HEAP": "512"}, "512m"),  # megabytes, as zkEnv.sh's ZK_SERVER_HEAP
        ({"KAFKA_HEAP_OPTS": "-Xmx512M -Xms512M"}, "512M"),
        ({"KAFKA_HEAP_OPTS": "-Xms1g -Xmx1g -Xmx2g"}, "2g"),
        ({"KAFKA_HEAP_OPTS": "-Xms1g"}, DEFAULT_HEAP),
        ({"ZOOKEEPER_HEAP": "300m", "KAFKA_HEAP_OPTS": "-Xmx1g"}, "300m"),
    ],
)
def test_heap(environ: dict[str, str], heap: str, tmp_path: Path) -> None:
    assert heap_for(environ) == heap
    command = command_for("z.cfg", environ=environ, runtime=runtime(tmp_path))
    assert [arg for arg in command if arg.startswith("-Xmx")] == [f"-Xmx{heap}"]


def test_a_heap_that_is_no_size_is_refused() -> None:
    with pytest.raises(StartError, match="ZOOKEEPER_HEAP=lots: not a heap size") as caught:
        heap_for({"ZOOKEEPER_HEAP": "lots"})
    assert caught.value.exit_code == EXIT_USAGE


def test_kafka_opts_pass_through_with_their_jaas_file(tmp_path: Path) -> None:
    environ = {
        "KAFKA_OPTS": "-Djava.security.auth.login.config=secrets/zk_jaas.conf "
        "-Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
    }
    command = command_for("z.cfg", environ=environ, runtime=runtime(tmp_path))
    jaas = [arg for arg in command if arg.startswith("-Djava.security.auth.login.config=")]
    assert jaas == [f"-Djava.security.auth.login.config={Path('secrets/zk_jaas.conf').absolute()}"]
    assert (
        "-Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
        in command
    )


def test_server_jvm_flags_come_after_the_defaults_so_they_win(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    environ = {
        "KAFKA_OPTS": "-Dfrom.kafka.opts=1",
        "SERVER_JVMFLAGS": "-Dzookeeper.admin.enableServer=true -Dx='a b'",
    }
    command = command_for("z.cfg", environ=environ, runtime=rt)
    admin = [i for i, arg in enumerate(command) if arg.startswith("-Dzookeeper.admin.enable")]
    assert [command[i] for i in admin] == [
        "-Dzookeeper.admin.enableServer=false",
        "-Dzookeeper.admin.enableServer=true",
    ]
    assert command.index("-Dfrom.kafka.opts=1") < admin[1]
    assert "-Dx=a b" in command
    assert command.index("-Dx=a b") < command.index("-cp")
    # ZooKeeper's own name wins over the generic one.
    both = {**environ, "ZOOKEEPER_SERVER_JVMFLAGS": "-Dmine=1"}
    command = command_for("z.cfg", environ=both, runtime=rt)
    assert "-Dmine=1" in command
    assert "-Dzookeeper.admin.enableServer=true" not in command


def test_an_unbalanced_quote_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(StartError, match=r"^KAFKA_OPTS: "):
        command_for("z.cfg", environ={"KAFKA_OPTS": "-Da='b"}, runtime=runtime(tmp_path))


def test_java_from_the_environment(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "zookeeper.jar").write_bytes(b"")
    java, classpath = find_java_and_classpath({"JAVA": "/opt/jdk/bin/java"}, [jars])
    assert (java, classpath) == ("/opt/jdk/bin/java", str(jars / "zookeeper.jar"))
    # A bare name is looked up on the environment's PATH, as a shell would.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "myjava").write_text("#!/bin/sh\n")
    (bin_dir / "myjava").chmod(0o755)
    environ = {"JAVA": "myjava", "PATH": str(bin_dir)}
    assert find_java_and_classpath(environ, [jars])[0] == str(bin_dir / "myjava")
    with pytest.raises(StartError, match="JAVA=nojava: no such program") as caught:
        find_java_and_classpath({"JAVA": "nojava", "PATH": str(bin_dir)}, [jars])
    assert caught.value.exit_code == EXIT_RUNTIME


def test_missing_zookeeper_is_a_runtime_error(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pytest.raises(StartError, match="ZooKeeper was not found") as caught:
        find_java_and_classpath({"JAVA": "/opt/jdk/bin/java"}, [tmp_path])
    assert caught.value.exit_code == EXIT_RUNTIME


# -- the command line ------------------------------------------------------------------------


def test_command_line() -> None:
    assert config_path_from(["/etc/kafka/zookeeper.properties"]) == Path(
        "/etc/kafka/zookeeper.properties"
    )
    assert config_path_from(["--help"]) is None
    with pytest.raises(StartError, match="-daemon is not supported"):
        config_path_from(["-daemon", "zookeeper.properties"])
    with pytest.raises(StartError, match="unknown option -loggc"):
        config_path_from(["-loggc", "zookeeper.properties"])
    with pytest.raises(StartError, match=r"^usage: "):
        config_path_from([])
    with pytest.raises(StartError, match=r"^usage: "):
        config_path_from(["a.properties", "b.properties"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-daemon", "zookeeper.properties"], "-daemon is not supported"),
        ([], "usage: zookeeper-server-start zookeeper.properties"),
        (["{tmp}/missing.properties"], "the configuration file does not exist"),
        (["{tmp}/no-port.properties"], "clientPort is not set"),
    ],
)
def test_main_refuses_with_status_2_and_a_message_on_stderr(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "no-port.properties").write_text(f"dataDir={tmp_path / 'data'}\n")
    assert main([arg.format(tmp=tmp_path) for arg in argv]) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("zookeeper-server-start: ")
    assert message in err


def test_main_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert capsys.readouterr().out == "usage: zookeeper-server-start zookeeper.properties\n"


class Execed(Exception):
    pass


def fake_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "zk-home"
    (home / "lib").mkdir(parents=True)
    jar = home / "lib" / "zookeeper-3.8.4.jar"
    jar.write_bytes(b"")
    monkeypatch.setenv("ZOOKEEPER_HOME", str(home))
    return jar


def test_main_execs_the_jvm_with_console_logging_in_a_private_tmp_folder(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    jar = fake_distribution(tmp_path, clean_env)
    clean_env.setenv("JAVA", "/opt/jdk/bin/java")
    clean_env.setenv("KAFKA_HEAP_OPTS", "-Xmx64m")
    clean_env.setattr(server_main.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    cfg = write_cfg(tmp_path, f"clientPort=2181\ndataDir={tmp_path / 'd'}\n")
    calls: list[tuple[str, list[str]]] = []

    def execv(path: str, args: list[str]) -> None:
        calls.append((path, args))
        raise Execed

    clean_env.setattr(server_main.os, "execv", execv)
    with pytest.raises(Execed):
        main([str(cfg)])
    [(path, args)] = calls
    (folder,) = (tmp_path / "tmp").iterdir()
    assert folder.name.startswith("zookeeper-server-start-")
    log4j, logback = folder / "log4j.properties", folder / "logback.xml"
    assert args == command_for(
        cfg,
        environ={"KAFKA_HEAP_OPTS": "-Xmx64m"},
        runtime=Runtime("/opt/jdk/bin/java", str(jar), log4j, logback),
    )
    assert path == args[0] == "/opt/jdk/bin/java"
    assert CONSOLE_PATTERN in log4j.read_text() and CONSOLE_PATTERN in logback.read_text()
    assert (tmp_path / "d").is_dir()


def test_main_reports_a_java_it_cannot_run_and_cleans_up(
    clean_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_distribution(tmp_path, clean_env)
    clean_env.setenv("JAVA", str(tmp_path / "no-such-java"))
    clean_env.setattr(server_main.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    cfg = write_cfg(tmp_path, f"clientPort=2181\ndataDir={tmp_path / 'd'}\n")
    assert main([str(cfg)]) == EXIT_RUNTIME
    assert capsys.readouterr().err.startswith("zookeeper-server-start: cannot run ")
    assert list((tmp_path / "tmp").iterdir()) == []


# -- one real server -------------------------------------------------------------------------


def _installed() -> str | None:
    """Why no real ZooKeeper can run here, None when it can."""
    try:
        resolve_runtime(None, None, DEFAULT_SYSTEM_JAR_DIRS)
    except ZooKeeperNotFoundError as exc:
        return str(exc)
    return None


def _collect(stream: IO[bytes], lines: list[str]) -> None:
    for raw in stream:
        lines.append(raw.decode("utf-8", errors="replace").rstrip("\n"))


def _answers_imok(port: int) -> bool:
    try:
        return send_four_letter_word("127.0.0.1", port, "ruok", timeout=1.0) == "imok"
    except OSError:
        return False


@pytest.mark.integration
@pytest.mark.skipif(_installed() is not None and not under_ci(), reason=str(_installed()))
def test_a_real_server_serves_logs_to_stdout_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = pick_free_port()
    cfg = write_cfg(
        tmp_path,
        f"clientPort={port}\nclientPortAddress=127.0.0.1\ndataDir={tmp_path / 'data'}\n"
        f"dataLogDir={tmp_path / 'log'}\n4lw.commands.whitelist=ruok,srvr\n",
    )
    # Where Java and ZooKeeper were found above stays; the command's own knobs go.
    kept = ("JAVA_HOME", "ZOOKEEPER_HOME")
    env = {k: v for k, v in os.environ.items() if k not in KNOBS or k in kept}
    env["TMPDIR"] = str(tmp_path)
    process = subprocess.Popen(
        [sys.executable, "-m", "zkbroker.broker.zookeeper.server_main", str(cfg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    lines: list[str] = []
    reader = threading.Thread(target=_collect, args=(process.stdout, lines), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 30
        while not _answers_imok(port):
            assert process.poll() is None, "\n".join(lines)
            assert time.monotonic() < deadline, "\n".join(lines)
            time.sleep(0.1)
        # Replaced by the JVM, not its parent: the signal below reaches ZooKeeper itself.
        cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes().split(b"\0")
        assert QUORUM_PEER_MAIN.encode() in cmdline
        assert any(CONFLUENT_LINE.match(line) for line in lines), "\n".join(lines)
        assert (tmp_path / "data").is_dir() and (tmp_path / "log").is_dir()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 128 + signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(timeout=5)
