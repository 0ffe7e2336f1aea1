"""Fixtures of the Docker tests: the image, a cluster container on free loopback ports.

These tests need a Docker engine and the built image; `make docker-test` provides both and sets
ZKBROKER_DOCKER_TESTS=1. Without that variable the folder is not collected (the normal
`make test` run never sees it); with it, a missing engine or image fails instead of skipping.
Containers use host networking and bind 127.0.0.1 only; every container started is removed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from zkbroker.broker.toolkit.container import free_port_block

if os.environ.get("ZKBROKER_DOCKER_TESTS") != "1":
    collect_ignore_glob = ["test_*.py"]

IMAGE = os.environ.get("ZKBROKER_IMAGE", "zkbroker:latest")


def docker(
    *args: str, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=check, timeout=timeout
    )


@dataclass
class RunningImage:
    name: str
    port: int
    internal_port: int
    brokers: int
    started_at: float

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.port + i}" for i in range(self.brokers))

    def logs(self) -> str:
        out = docker("logs", self.name, check=False)
        return (out.stdout + out.stderr)[-4000:]


@pytest.fixture(scope="session", autouse=True)
def engine_and_image() -> None:
    version = docker("version", "--format", "{{.Server.Version}}", check=False, timeout=15)
    assert version.returncode == 0, f"no Docker engine answers: {version.stderr}"
    image = docker("image", "inspect", IMAGE, check=False)
    assert image.returncode == 0, f"{IMAGE} is not built (scripts/docker/build-image.sh)"


@contextlib.contextmanager
def run_image(
    *args: str, brokers: int = 3, env: dict[str, str] | None = None
) -> Iterator[RunningImage]:
    """`docker run -d --network host IMAGE` with its listeners on free loopback ports."""
    port, internal = free_port_block(brokers), free_port_block(brokers)
    name = f"zkbroker-test-{secrets.token_hex(4)}"
    variables = {
        "ZKBROKER_BROKERS": str(brokers),
        "ZKBROKER_LISTEN_HOST": "127.0.0.1",
        "ZKBROKER_PORT": str(port),
        "ZKBROKER_INTERNAL_PORT": str(internal),
        "ZKBROKER_INTERNAL_HOST": "127.0.0.1",
        **(env or {}),
    }
    flags = [f"--env={key}={value}" for key, value in variables.items()]
    started = time.monotonic()
    docker("run", "-d", "--name", name, "--network", "host", *flags, IMAGE, *args)
    try:
        yield RunningImage(name, port, internal, brokers, started)
    finally:
        docker("rm", "-f", name, check=False)


def wait_for_metadata(bootstrap: str, brokers: int, timeout: float = 30.0) -> float:
    """Seconds until a Metadata request lists `brokers` brokers (zkbroker's wire client)."""
    from zkbroker.broker.protocol.messages.metadata import MetadataRequest
    from zkbroker.broker.toolkit.wire import WireClient

    started = time.monotonic()
    last: object = None
    while time.monotonic() - started < timeout:
        try:
            with WireClient.to(bootstrap) as client:
                answer = client.request(1, MetadataRequest(topics=[]))
            if len(answer.brokers) == brokers:
                return time.monotonic() - started
            last = f"{len(answer.brokers)} brokers"
        except OSError as exc:
            last = exc
        time.sleep(0.05)
    raise AssertionError(f"no Metadata with {brokers} brokers from {bootstrap}: {last}")


@pytest.fixture(scope="module")
def cluster() -> Iterator[RunningImage]:
    """The image's default cluster (3 brokers, Kafka 3.9) on free loopback ports."""
    with run_image() as running:
        wait_for_metadata(running.bootstrap, 3)
        yield running
