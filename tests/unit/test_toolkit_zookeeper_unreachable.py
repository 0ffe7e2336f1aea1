"""The toolkit's ZooKeeper container gives up fast when its address does not answer.

Pure: testcontainers' DockerContainer is replaced by a fake (through sys.modules, so the test
runs with or without the `docker` extra installed) whose every address refuses connections.
"""

from __future__ import annotations

import socket
import sys
import time
import types
from collections.abc import Iterator

import pytest

import zkbroker.broker.toolkit.zookeeper as toolkit_zookeeper


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A loopback port bound but not listening for the whole test: connections are refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])


class _Unreachable:
    """A started container whose every address refuses connections (nothing listens)."""

    port = 0
    stops = 0

    def __init__(self, image: str) -> None:
        self.image = image

    def with_exposed_ports(self, *ports: int) -> _Unreachable:
        return self

    def with_env(self, key: str, value: str) -> _Unreachable:
        return self

    def start(self) -> _Unreachable:
        return self

    def get_container_host_ip(self) -> str:
        return "127.0.0.1"

    def get_exposed_port(self, port: int) -> int:
        return _Unreachable.port

    def get_logs(self) -> tuple[bytes, bytes]:
        return b"zookeeper log\n", b""

    def stop(self) -> None:
        _Unreachable.stops += 1


def test_unreachable_container_is_dropped_fast_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, refusing_port: int
) -> None:
    fake = types.ModuleType("testcontainers.core.container")
    vars(fake)["DockerContainer"] = _Unreachable
    monkeypatch.setitem(sys.modules, "testcontainers.core.container", fake)
    monkeypatch.setattr(_Unreachable, "port", refusing_port)
    monkeypatch.setattr(_Unreachable, "stops", 0)
    monkeypatch.setattr(toolkit_zookeeper, "CONTAINER_REACH_TIMEOUT", 1.0)
    started = time.monotonic()
    with pytest.raises(toolkit_zookeeper.ZooKeeperStartError) as caught:
        toolkit_zookeeper._start_container()
    assert time.monotonic() - started < 5  # not CONTAINER_READY_TIMEOUT (60 s)
    assert toolkit_zookeeper.CONTAINER_READY_TIMEOUT >= 60
    assert "TESTCONTAINERS_CONNECTION_MODE" in str(caught.value)
    assert "zookeeper log" in str(caught.value)
    assert f"127.0.0.1:{refusing_port}" in str(caught.value)
    assert _Unreachable.stops == 1
