"""The toolkit's ZooKeeper container gives up fast when its address does not answer."""

from __future__ import annotations

import time

import pytest
import testcontainers.core.container

import zkbroker.broker.toolkit.zookeeper as toolkit_zookeeper
from tests.docker.conftest import free_port_block


class _Unreachable:
    """A started container whose every address refuses connections (nothing listens)."""

    stops = 0

    def __init__(self, image: str) -> None:
        self.port = free_port_block(1)

    def with_exposed_ports(self, *ports: int) -> _Unreachable:
        return self

    def with_env(self, key: str, value: str) -> _Unreachable:
        return self

    def start(self) -> _Unreachable:
        return self

    def get_container_host_ip(self) -> str:
        return "127.0.0.1"

    def get_exposed_port(self, port: int) -> int:
        return self.port

    def get_logs(self) -> tuple[bytes, bytes]:
        return b"zookeeper log\n", b""

    def stop(self) -> None:
        _Unreachable.stops += 1


def test_unreachable_container_is_dropped_fast_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(testcontainers.core.container, "DockerContainer", _Unreachable)
    monkeypatch.setattr(toolkit_zookeeper, "CONTAINER_REACH_TIMEOUT", 1.0)
    started = time.monotonic()
    with pytest.raises(toolkit_zookeeper.ZooKeeperStartError) as caught:
        toolkit_zookeeper._start_container()
    assert time.monotonic() - started < 5  # not CONTAINER_READY_TIMEOUT (60 s)
    assert "TESTCONTAINERS_CONNECTION_MODE" in str(caught.value)
    assert "zookeeper log" in str(caught.value)
    assert _Unreachable.stops == 1
