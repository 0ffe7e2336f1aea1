"""EmbeddedZooKeeper against a real JVM, and the `zookeeper` / `zk_connect` fixtures."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kazoo.client import KazooClient

import zkbroker.broker.zookeeper.embedded as zookeeper_module
from zkbroker.broker.toolkit.zookeeper import CHROOT_PREFIX, ZooKeeperEndpoint, fresh_chroot
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper
from zkbroker.broker.zookeeper.errors import (
    ZooKeeperError,
    ZooKeeperNotFoundError,
    ZooKeeperStartError,
)
from zkbroker.broker.zookeeper.network import is_serving, pick_free_port, send_four_letter_word


@contextmanager
def kazoo_client(hosts: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ---------------------------------------------------------------------------
# EmbeddedZooKeeper
# ---------------------------------------------------------------------------


def test_starts_serves_kazoo_and_answers_ruok() -> None:
    with EmbeddedZooKeeper() as zk:
        assert zk.host == "127.0.0.1"
        assert zk.connect_string == f"127.0.0.1:{zk.port}"
        assert zk.running
        assert zk.pid is not None
        assert (zk.data_dir / "zoo.cfg").is_file()

        with kazoo_client(zk.connect_string) as client:
            client.create("/written", b"by kazoo")
            value, _ = client.get("/written")
        assert value == b"by kazoo"

        assert send_four_letter_word(zk.host, zk.port, "ruok") == "imok"
        assert is_serving(zk.host, zk.port)
        with pytest.raises(ZooKeeperError, match="already started"):
            zk.start()


def test_stop_ends_the_jvm_and_removes_the_temporary_data_dir() -> None:
    zk = EmbeddedZooKeeper().start()
    pid, port, data_dir = zk.pid, zk.port, zk.data_dir
    assert pid is not None and pid_alive(pid)

    zk.stop()

    assert not pid_alive(pid)
    assert not data_dir.exists()
    assert not zk.running and zk.pid is None
    assert not is_serving("127.0.0.1", port)
    zk.stop()  # idempotent


def test_two_instances_at_once_get_different_ports_and_separate_data() -> None:
    with EmbeddedZooKeeper() as first, EmbeddedZooKeeper() as second:
        assert first.port != second.port
        assert first.data_dir != second.data_dir
        with kazoo_client(first.connect_string) as client:
            client.create("/only-in-first")
        with kazoo_client(second.connect_string) as client:
            assert client.exists("/only-in-first") is None


def test_given_port_and_data_dir_survive_a_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "zk-data"
    port = pick_free_port()

    with EmbeddedZooKeeper(port=port, data_dir=data_dir) as zk:
        assert zk.port == port and zk.data_dir == data_dir
        with kazoo_client(zk.connect_string) as client:
            client.create("/kept", b"1")
    assert data_dir.is_dir(), "a given data dir belongs to the caller and must be kept"

    with (
        EmbeddedZooKeeper(port=port, data_dir=data_dir) as zk,
        kazoo_client(zk.connect_string) as client,
    ):
        assert client.get("/kept")[0] == b"1"


def test_zookeeper_logs_go_to_a_file_not_to_our_output(capfd: pytest.CaptureFixture[str]) -> None:
    with EmbeddedZooKeeper() as zk:
        log_text = zk.log_file.read_text()
        jvm_output = (zk.data_dir / "zookeeper.out").read_text()
    out, err = capfd.readouterr()

    assert "binding to port" in log_text
    assert "SLF4J" not in jvm_output, "no logging binding on the classpath"
    for line in (out + err).splitlines():
        assert "org.apache.zookeeper" not in line and "[main:" not in line, line


def test_missing_zookeeper_raises_the_helpful_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path))
    zk = EmbeddedZooKeeper(system_jar_dirs=())  # hides /usr/share/java

    with pytest.raises(ZooKeeperNotFoundError) as caught:
        zk.start()

    message = str(caught.value)
    assert message.startswith("ZooKeeper was not found")
    assert f"ZOOKEEPER_HOME={tmp_path}" in message
    assert "`sudo apt-get install -y zookeeper` (it brings Java)" in message
    assert "--zookeeper host:port" in message
    assert zk.pid is None


def test_broken_distribution_fails_with_the_jvm_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "zookeeper-3.8.4.jar").write_bytes(b"not a jar")
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path))

    with pytest.raises(ZooKeeperStartError) as caught:
        EmbeddedZooKeeper(system_jar_dirs=()).start()

    message = str(caught.value)
    assert "exited with code" in message
    assert "QuorumPeerMain" in message  # java's "could not find or load main class"


def test_a_taken_port_is_retried_with_another(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        free = pick_free_port()
        offered = iter([taken, free])
        monkeypatch.setattr(zookeeper_module, "pick_free_port", lambda: next(offered))

        with EmbeddedZooKeeper() as zk:
            assert zk.port == free
            assert is_serving(zk.host, zk.port)


def test_a_taken_requested_port_fails_with_the_bind_error() -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]

        with pytest.raises(ZooKeeperStartError, match="Address already in use"):
            EmbeddedZooKeeper(port=taken).start()


async def test_astart_and_astop_do_not_block_the_event_loop() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticking = asyncio.create_task(ticker())
    try:
        async with EmbeddedZooKeeper() as zk:
            assert await asyncio.to_thread(is_serving, zk.host, zk.port)
            pid = zk.pid
    finally:
        ticking.cancel()

    assert pid is not None and not pid_alive(pid)
    assert ticks >= 10, "the loop stalled while the JVM started"


def test_interpreter_exit_stops_a_forgotten_instance(tmp_path: Path) -> None:
    # A test run that dies with an exception never calls stop(); atexit must.
    script = textwrap.dedent(
        """
        import json
        from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper
        zk = EmbeddedZooKeeper().start()
        print(json.dumps({"pid": zk.pid, "data_dir": str(zk.data_dir)}), flush=True)
        raise RuntimeError("crashed without stopping ZooKeeper")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1, result.stderr
    # stdout also carries the launcher's log lines; the JSON line is ours.
    started = json.loads(next(ln for ln in result.stdout.splitlines() if ln.startswith("{")))
    pid, data_dir = int(started["pid"]), Path(started["data_dir"])
    try:
        assert not pid_alive(pid)
        assert not data_dir.exists()
    finally:
        if pid_alive(pid):
            os.killpg(pid, signal.SIGKILL)


# ---------------------------------------------------------------------------
# Fixtures from tests/conftest.py
# ---------------------------------------------------------------------------


def test_zookeeper_fixture_is_a_running_server(zookeeper: ZooKeeperEndpoint) -> None:
    assert zookeeper.kind in ("container", "local", "external")
    with kazoo_client(zookeeper.connect_string) as client:
        assert client.exists("/") is not None


def test_zk_connect_is_a_fresh_chroot_of_the_session_server(
    zookeeper: ZooKeeperEndpoint, zk_connect: str
) -> None:
    assert zk_connect.startswith(zookeeper.connect_string + CHROOT_PREFIX)


# kazoo warns about every chroot that does not exist yet; here that is the point.
@pytest.mark.filterwarnings("ignore:No chroot path exists")
def test_chroots_are_isolated(zookeeper: ZooKeeperEndpoint, zk_connect: str) -> None:
    other = fresh_chroot(zookeeper.connect_string)

    with kazoo_client(zk_connect) as mine:
        mine.ensure_path("/")
        mine.create("/topic", b"mine")
        with kazoo_client(other) as theirs:
            theirs.ensure_path("/")
            assert theirs.exists("/topic") is None
            theirs.create("/topic", b"theirs")
        assert mine.get("/topic")[0] == b"mine"

    chroot = zk_connect.removeprefix(zookeeper.connect_string)
    with kazoo_client(zookeeper.connect_string) as root:
        assert root.get(f"{chroot}/topic")[0] == b"mine"
        start = time.monotonic()
        root.delete(other.removeprefix(zookeeper.connect_string), recursive=True)
        assert time.monotonic() - start < 10
