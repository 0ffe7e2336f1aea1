"""Pure tests of ZooKeeper configuration, discovery and test-backend choice (no JVM, no network)."""

from __future__ import annotations

import os
import stat
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

import zkbroker.broker.toolkit.zookeeper as toolkit_zookeeper
from zkbroker.broker.toolkit.zookeeper import (
    CHROOT_PREFIX,
    TEST_ZOOKEEPER_ENV,
    ZOOKEEPER_IMAGE,
    ZooKeeperEndpoint,
    docker_engine_available,
    fresh_chroot,
    remove_chroot,
    start_zookeeper_for_tests,
)
from zkbroker.broker.zookeeper.config_files import (
    render_log4j_properties,
    render_logback_xml,
    render_server_jaas,
    render_zoo_cfg,
)
from zkbroker.broker.zookeeper.discovery import find_java, find_zookeeper_classpath
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper
from zkbroker.broker.zookeeper.errors import (
    ZooKeeperError,
    ZooKeeperNotFoundError,
    ZooKeeperStartError,
)
from zkbroker.broker.zookeeper.jvm_launch import QUORUM_PEER_MAIN, build_java_command
from zkbroker.broker.zookeeper.network import pick_free_port, send_four_letter_word


def _properties(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
    return {key: value for key, value in pairs}


def _touch(path: Path, *, executable: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


# ---------------------------------------------------------------------------
# zoo.cfg and logging configuration
# ---------------------------------------------------------------------------


def test_zoo_cfg_has_the_test_friendly_settings(tmp_path: Path) -> None:
    cfg = _properties(render_zoo_cfg(port=21810, data_dir=tmp_path))

    assert cfg == {
        "tickTime": "2000",
        "dataDir": str(tmp_path),
        "clientPort": "21810",
        "clientPortAddress": "127.0.0.1",
        "maxClientCnxns": "0",
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "ruok,srvr,conf",
        "autopurge.purgeInterval": "0",
        "forceSync": "no",
    }


def test_sasl_server_configuration(tmp_path: Path) -> None:
    cfg = _properties(render_zoo_cfg(port=1, data_dir=tmp_path, sasl=True))
    assert cfg["authProvider.1"] == "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
    assert render_server_jaas({"kafka": 'p"w\\x'}) == (
        "Server {\n"
        "  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        '    user_kafka="p\\"w\\\\x";\n'
        "};\n"
    )
    with pytest.raises(ValueError):
        render_server_jaas({"bad user": "x"})
    command = build_java_command(
        java="java",
        classpath="cp",
        config_file=tmp_path / "zoo.cfg",
        log4j_config=tmp_path / "l",
        logback_config=tmp_path / "b",
        jaas_config=tmp_path / "jaas.conf",
    )
    assert f"-Djava.security.auth.login.config={tmp_path / 'jaas.conf'}" in command


def test_zoo_cfg_escapes_backslashes_and_rejects_line_breaks() -> None:
    assert "dataDir=/tmp/a\\\\b\n" in render_zoo_cfg(port=1, data_dir="/tmp/a\\b")
    with pytest.raises(ValueError, match="line break"):
        render_zoo_cfg(port=1, data_dir="/tmp/a\nclientPort=2")


def test_log4j_config_writes_only_to_the_file(tmp_path: Path) -> None:
    log_file = tmp_path / "zookeeper.log"
    props = _properties(render_log4j_properties(log_file))

    assert props["log4j.rootLogger"] == "INFO, FILE"
    assert props["log4j.appender.FILE"] == "org.apache.log4j.FileAppender"
    assert props["log4j.appender.FILE.File"] == str(log_file)
    assert not any("ConsoleAppender" in value for value in props.values())


def test_logback_config_is_valid_xml_even_for_odd_paths(tmp_path: Path) -> None:
    log_file = tmp_path / "a&b<c>" / "zookeeper.log"
    root = ET.fromstring(render_logback_xml(log_file))

    appender = root.find("appender")
    assert appender is not None
    assert appender.get("class") == "ch.qos.logback.core.FileAppender"
    assert appender.findtext("file") == str(log_file)
    assert root.find("root/appender-ref") is not None
    assert "ConsoleAppender" not in render_logback_xml(log_file)


def test_java_command_runs_quorum_peer_main_with_small_heap_and_file_logging(
    tmp_path: Path,
) -> None:
    command = build_java_command(
        java="/opt/java/bin/java",
        classpath="/a.jar:/b.jar",
        config_file=tmp_path / "zoo.cfg",
        log4j_config=tmp_path / "log4j.properties",
        logback_config=tmp_path / "logback.xml",
    )

    assert command[0] == "/opt/java/bin/java"
    assert "-Xmx256m" in command
    assert command[command.index("-cp") + 1] == "/a.jar:/b.jar"
    assert command[-2:] == [QUORUM_PEER_MAIN, str(tmp_path / "zoo.cfg")]
    assert f"-Dlog4j.configuration=file://{tmp_path}/log4j.properties" in command
    assert f"-Dlogback.configurationFile={tmp_path}/logback.xml" in command
    assert not any(arg.startswith("-Djute.maxbuffer") for arg in command)


def test_java_command_sets_jute_maxbuffer_when_the_cluster_has_another_limit(
    tmp_path: Path,
) -> None:
    # The brokers refuse writes over Settings.zookeeper_max_buffer_bytes; the embedded server
    # must accept up to the same size.
    command = build_java_command(
        java="java",
        classpath="/a.jar",
        config_file=tmp_path / "zoo.cfg",
        log4j_config=tmp_path / "log4j.properties",
        logback_config=tmp_path / "logback.xml",
        max_buffer_bytes=4 * 1024 * 1024,
    )
    assert "-Djute.maxbuffer=4194304" in command
    assert command.index("-Djute.maxbuffer=4194304") < command.index("-cp")


# ---------------------------------------------------------------------------
# ZooKeeper discovery
# ---------------------------------------------------------------------------


def _split(classpath: str) -> list[str]:
    return classpath.split(os.pathsep)


def test_zookeeper_home_with_lib_layout(tmp_path: Path) -> None:
    home = tmp_path / "apache-zookeeper-3.8.4-bin"
    jars = [
        _touch(home / "lib" / name)
        for name in (
            "logback-classic-1.2.13.jar",
            "zookeeper-3.8.4.jar",
            "zookeeper-jute-3.8.4.jar",
        )
    ]
    _touch(home / "docs" / "index.html")

    classpath = find_zookeeper_classpath(env={"ZOOKEEPER_HOME": str(home)}, system_jar_dirs=())

    assert sorted(_split(classpath)) == sorted(str(jar) for jar in jars)


def test_zookeeper_home_with_34_layout_skips_source_and_test_jars(tmp_path: Path) -> None:
    home = tmp_path / "zookeeper-3.4.14"
    server = _touch(home / "zookeeper-3.4.14.jar")
    dependency = _touch(home / "lib" / "slf4j-api-1.7.25.jar")
    _touch(home / "zookeeper-3.4.14-sources.jar")
    _touch(home / "lib" / "zookeeper-3.4.14-tests.jar")

    classpath = find_zookeeper_classpath(env={"ZOOKEEPER_HOME": str(home)}, system_jar_dirs=())

    assert _split(classpath) == [str(server), str(dependency)]


def test_zookeeper_home_wins_over_debian(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = _touch(home / "lib" / "zookeeper-3.9.2.jar")
    debian = tmp_path / "share-java"
    _touch(debian / "zookeeper.jar")

    classpath = find_zookeeper_classpath(
        env={"ZOOKEEPER_HOME": str(home)}, system_jar_dirs=(debian,)
    )

    assert _split(classpath) == [str(server)]


def test_zookeeper_home_without_server_jar_falls_back_to_debian(tmp_path: Path) -> None:
    home = tmp_path / "not-a-distribution"
    _touch(home / "lib" / "zookeeper-jute-3.8.4.jar")
    debian = tmp_path / "share-java"
    server = _touch(debian / "zookeeper.jar")

    classpath = find_zookeeper_classpath(
        env={"ZOOKEEPER_HOME": str(home)}, system_jar_dirs=(debian,)
    )

    assert _split(classpath) == [str(server)]


def test_debian_jar_comes_with_the_log4j_binding(tmp_path: Path) -> None:
    # Debian's manifest names slf4j-api only; without a binding ZooKeeper logs nothing.
    names = ("zookeeper.jar", "slf4j-log4j12.jar", "log4j-1.2.jar")
    jars = [_touch(tmp_path / name) for name in (*names, "logback-classic.jar", "logback-core.jar")]

    classpath = find_zookeeper_classpath(env={}, system_jar_dirs=(tmp_path,))

    assert _split(classpath) == [str(jar) for jar in jars[:3]]


def test_debian_jar_uses_logback_when_log4j_is_incomplete(tmp_path: Path) -> None:
    server = _touch(tmp_path / "zookeeper.jar")
    _touch(tmp_path / "slf4j-log4j12.jar")  # without log4j-1.2.jar it is useless
    classic = _touch(tmp_path / "logback-classic.jar")
    core = _touch(tmp_path / "logback-core.jar")

    classpath = find_zookeeper_classpath(env={}, system_jar_dirs=(tmp_path,))

    assert _split(classpath) == [str(server), str(classic), str(core)]


def test_first_system_dir_with_zookeeper_wins(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    second = _touch(tmp_path / "second" / "zookeeper.jar")
    _touch(tmp_path / "third" / "zookeeper.jar")

    classpath = find_zookeeper_classpath(
        env={}, system_jar_dirs=(empty, tmp_path / "second", tmp_path / "third")
    )

    assert _split(classpath) == [str(second)]


def test_missing_zookeeper_says_what_was_searched_and_how_to_install(tmp_path: Path) -> None:
    home = tmp_path / "empty-home"
    home.mkdir()

    with pytest.raises(ZooKeeperNotFoundError) as caught:
        find_zookeeper_classpath(env={"ZOOKEEPER_HOME": str(home)}, system_jar_dirs=(tmp_path,))

    message = str(caught.value)
    assert message.startswith("ZooKeeper was not found (")
    assert f"ZOOKEEPER_HOME={home}" in message
    assert f"{tmp_path / 'zookeeper.jar'} does not exist" in message
    assert "sudo apt-get install -y zookeeper" in message
    assert "set ZOOKEEPER_HOME" in message
    assert "--zookeeper host:port" in message
    assert "\n" not in message


# ---------------------------------------------------------------------------
# Java discovery
# ---------------------------------------------------------------------------


def test_java_home_wins_over_path(tmp_path: Path) -> None:
    java_home_java = _touch(tmp_path / "jdk" / "bin" / "java", executable=True)
    _touch(tmp_path / "bin" / "java", executable=True)

    found = find_java(env={"JAVA_HOME": str(tmp_path / "jdk"), "PATH": str(tmp_path / "bin")})

    assert found == str(java_home_java)


def test_java_on_path_when_java_home_is_unusable(tmp_path: Path) -> None:
    _touch(tmp_path / "jdk" / "bin" / "java")  # not executable
    on_path = _touch(tmp_path / "bin" / "java", executable=True)

    found = find_java(env={"JAVA_HOME": str(tmp_path / "jdk"), "PATH": str(tmp_path / "bin")})

    assert found == str(on_path)


def test_missing_java_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(ZooKeeperNotFoundError) as caught:
        find_java(env={"PATH": str(tmp_path)})

    message = str(caught.value)
    assert message.startswith("Java was not found (JAVA_HOME is not set; no `java` on PATH)")
    assert "sudo apt-get install -y zookeeper" in message
    assert "set JAVA_HOME" in message


def test_start_reports_missing_java_and_zookeeper_in_one_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("ZOOKEEPER_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    zookeeper = EmbeddedZooKeeper(system_jar_dirs=(tmp_path,))

    with pytest.raises(ZooKeeperNotFoundError, match=r"^Neither Java nor ZooKeeper was found"):
        zookeeper.start()

    assert zookeeper.pid is None
    assert not zookeeper.running


def test_explicit_classpath_and_java_skip_discovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With both given, an empty environment must not matter: the failure is
    # the fake java not starting ZooKeeper, not "not found".
    monkeypatch.setenv("PATH", str(tmp_path))
    fake_java = tmp_path / "java"
    fake_java.write_text("#!/bin/sh\necho 'fake java refuses' >&2\nexit 7\n")
    fake_java.chmod(0o755)
    zookeeper = EmbeddedZooKeeper(classpath="/nowhere.jar", java=str(fake_java))

    with pytest.raises(ZooKeeperError, match="exited with code 7") as caught:
        zookeeper.start()

    assert not isinstance(caught.value, ZooKeeperNotFoundError)
    assert "fake java refuses" in str(caught.value)


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def test_picked_ports_are_distinct() -> None:
    ports = {pick_free_port() for _ in range(20)}
    assert len(ports) == 20


def test_four_letter_words_have_four_letters() -> None:
    with pytest.raises(ValueError):
        send_four_letter_word("127.0.0.1", 1, "ok")


def test_properties_need_a_started_instance() -> None:
    zookeeper = EmbeddedZooKeeper()
    with pytest.raises(ZooKeeperError):
        _ = zookeeper.connect_string
    assert EmbeddedZooKeeper(port=2999).connect_string == "127.0.0.1:2999"
    zookeeper.stop()  # never started: a no-op


# ---------------------------------------------------------------------------
# zkbroker.toolkit_zookeeper: chroots, endpoints, backend choice
# ---------------------------------------------------------------------------


def test_fresh_chroot_is_unique_and_appended() -> None:
    first = fresh_chroot("127.0.0.1:2181")
    second = fresh_chroot("127.0.0.1:2181/")

    assert first.startswith("127.0.0.1:2181" + CHROOT_PREFIX)
    assert second.startswith("127.0.0.1:2181" + CHROOT_PREFIX)
    assert first != second
    assert fresh_chroot("h1:1,h2:2/outer").startswith("h1:1,h2:2/outer" + CHROOT_PREFIX)


def test_remove_chroot_refuses_a_connect_string_without_chroot() -> None:
    with pytest.raises(ValueError, match="no chroot"):
        remove_chroot("127.0.0.1:2181/")


def test_external_zookeeper_from_environment_is_used_as_is() -> None:
    endpoint = start_zookeeper_for_tests(env={TEST_ZOOKEEPER_ENV: " zk1:2181,zk2:2181 "})

    assert endpoint == ZooKeeperEndpoint("zk1:2181,zk2:2181", "external")
    endpoint.stop()  # nothing to stop, must not fail


def test_endpoint_context_manager_stops() -> None:
    stopped: list[bool] = []
    with ZooKeeperEndpoint("h:1", "local", lambda: stopped.append(True)) as endpoint:
        assert endpoint.connect_string == "h:1"
    assert stopped == [True]


def test_docker_is_unavailable_quickly_when_its_socket_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/docker.sock")
    started = time.monotonic()

    assert docker_engine_available() is False
    assert time.monotonic() - started < 1.0


class _FakeContainer:
    """Stands in for testcontainers' DockerContainer: records what the test support asks."""

    instances: list[_FakeContainer] = []

    def __init__(self, image: str) -> None:
        self.image = image
        self.env: dict[str, str] = {}
        self.ports: list[int] = []
        self.stops = 0
        _FakeContainer.instances.append(self)

    def with_exposed_ports(self, *ports: int) -> _FakeContainer:
        self.ports.extend(ports)
        return self

    def with_env(self, key: str, value: str) -> _FakeContainer:
        self.env[key] = value
        return self

    def start(self) -> _FakeContainer:
        return self

    def get_container_host_ip(self) -> str:
        return "docker-host"

    def get_exposed_port(self, port: int) -> int:
        return 32768

    def get_logs(self) -> tuple[bytes, bytes]:
        return b"zookeeper said something\n", b""

    def stop(self) -> None:
        self.stops += 1


@pytest.fixture
def fake_container(monkeypatch: pytest.MonkeyPatch) -> type[_FakeContainer]:
    import testcontainers.core.container

    _FakeContainer.instances = []
    monkeypatch.setattr(testcontainers.core.container, "DockerContainer", _FakeContainer)
    monkeypatch.setattr(toolkit_zookeeper, "docker_engine_available", lambda: True)
    return _FakeContainer


def test_container_backend_configures_the_image_and_stops_once(
    fake_container: type[_FakeContainer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(toolkit_zookeeper, "is_serving", lambda host, port: True)

    endpoint = start_zookeeper_for_tests(env={})
    endpoint.stop()
    endpoint.stop()

    (container,) = fake_container.instances
    assert endpoint.kind == "container"
    assert endpoint.connect_string == "docker-host:32768"
    assert container.image == ZOOKEEPER_IMAGE
    assert container.ports == [2181]
    assert container.env["ZOO_4LW_COMMANDS_WHITELIST"] == "*"
    assert container.env["ZOO_MAX_CLIENT_CNXNS"] == "0"
    assert container.stops == 1


def test_container_that_never_answers_is_removed_and_reported(
    fake_container: type[_FakeContainer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(toolkit_zookeeper, "is_serving", lambda host, port: False)
    monkeypatch.setattr(toolkit_zookeeper, "CONTAINER_READY_TIMEOUT", 0.0)

    with pytest.raises(ZooKeeperStartError, match="zookeeper said something"):
        toolkit_zookeeper._start_container()

    assert fake_container.instances[0].stops == 1


def test_failed_container_falls_back_to_local_and_both_are_reported(
    fake_container: type[_FakeContainer], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def pull_fails() -> ZooKeeperEndpoint:
        raise RuntimeError("pull failed")

    monkeypatch.setattr(toolkit_zookeeper, "_start_container", pull_fails)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java: the local fallback fails too

    with pytest.raises(ZooKeeperNotFoundError) as caught:
        start_zookeeper_for_tests(env={})

    message = str(caught.value)
    assert message.startswith("Java was not found")
    assert f"set {TEST_ZOOKEEPER_ENV}=host:port" in message
    assert "which failed on the Docker engine that answered: RuntimeError('pull failed')" in message
    assert "--zookeeper" not in message  # the command line's way out, not a test session's


@pytest.mark.parametrize(
    ("testcontainers_installed", "advice"),
    [
        (True, "run a Docker engine (ZooKeeper then runs in a container)"),
        (False, "install zkbroker[docker] and run a Docker engine"),
    ],
)
def test_without_docker_the_advice_fits_what_is_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, testcontainers_installed: bool, advice: str
) -> None:
    real_find_spec = toolkit_zookeeper.importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        if name == "testcontainers" and not testcontainers_installed:
            return None
        return real_find_spec(name, *args)

    monkeypatch.setattr(toolkit_zookeeper, "docker_engine_available", lambda: False)
    monkeypatch.setattr(toolkit_zookeeper.importlib.util, "find_spec", find_spec)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))

    with pytest.raises(ZooKeeperNotFoundError) as caught:
        start_zookeeper_for_tests(env={})

    message = str(caught.value)
    assert advice in message
    assert "--zookeeper" not in message


def test_docker_ping_decides_availability(monkeypatch: pytest.MonkeyPatch) -> None:
    import docker  # type: ignore[import-untyped, unused-ignore]

    seen: dict[str, object] = {}

    class Client:
        def __init__(self, answer: bool) -> None:
            self.answer = answer

        def ping(self) -> bool:
            if not self.answer:
                raise ConnectionError("no engine")
            return True

        def close(self) -> None:
            pass

    def from_env(answer: bool) -> object:
        def build(**kwargs: object) -> Client:
            seen.update(kwargs)
            return Client(answer)

        return build

    monkeypatch.setenv("DOCKER_HOST", "tcp://docker.invalid:2375")
    monkeypatch.setattr(docker, "from_env", from_env(True))
    assert docker_engine_available() is True
    assert seen["timeout"] == 2.0
    environment = seen["environment"]
    assert isinstance(environment, dict)
    assert environment["DOCKER_HOST"] == "tcp://docker.invalid:2375"

    monkeypatch.setattr(docker, "from_env", from_env(False))
    assert docker_engine_available() is False
