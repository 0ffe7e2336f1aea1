"""Fixtures of the Docker tests: the image in both network modes users run it in.

These tests need a Docker engine and the built image; `make docker-test` provides both and sets
ZKBROKER_DOCKER_TESTS=1. Without that variable the folder is not collected (the normal
`make test` run never sees it); with it, a missing engine or image fails instead of skipping.
Every container and network started here is removed (and labelled `zkbroker-test`, so
scripts/docker/docker-test.sh can remove what a killed run left).

The two network modes, as users meet them (`cluster` runs each test in both):

* `host`: `docker run --network host`, the listeners bound to 127.0.0.1 on free ports.
* `bridge`: the README's first example, `docker run -p 127.0.0.1:P-P+2:P-P+2
  -e ZKBROKER_PORT=P IMAGE` (free ports P instead of 9092, the image's defaults otherwise:
  listeners on 0.0.0.0 inside the container, EXTERNAL advertised as 127.0.0.1:P+i, INTERNAL as
  the container's host name), on a bridge network the session creates.

Why that bridge has no route out (`sealed_network`). Traffic a test sends goes to 127.0.0.1
(the published ports, which Docker's docker-proxy forwards to the container on the bridge, a
host-to-container hop) or to containers on networks the test created. What a container could
send itself must stay on this machine too, and the choices were:

* `docker network create --internal`: no gateway, but Docker publishes no port of a container
  on an internal network, so it cannot test this mode.
* `-o com.docker.network.bridge.enable_ip_masquerade=false`: set (no NAT for the network on
  engines that write iptables rules; the private engine of scripts/docker/dockerd.sh writes
  none, `--iptables=false`), but not enough: without NAT a container's packet for another
  address is still routed out, un-NATed, whenever the host forwards IPv4 (this machine has
  net.ipv4.ip_forward=1, and Docker turns it on itself unless `--ip-forward=false`, which the
  private engine now has).
* What closes it: `net.ipv4.conf.<bridge>.forwarding=0` on the network's own bridge (named by
  `-o com.docker.network.bridge.name`), written right after the network is created, before
  any container joins it, and read back. IPv4 forwarding is decided per input interface, so the
  kernel routes nothing that arrives on this bridge; it still delivers what is addressed to the
  host itself (the replies to docker-proxy, whose connections start on the host). Docker's
  embedded DNS forwards names it does not know from the container's own namespace (for a
  non-loopback upstream, as here), so through the same bridge; the networks have no IPv6
  (link-local addresses only, never routed). `test_bridge_network_has_no_route_out` checks it:
  a container on the bridge cannot open a connection to a container on a second sealed
  network, which the host reaches (the way out any route would take; with the bridge's
  forwarding at 1, as the host's default, the same connection succeeds).

Writing the sysctl needs root on the machine whose network namespace holds the engine's bridges
(a local engine, as `make docker-test` starts; `sudo -n` when not root); elsewhere the bridge
mode fails, naming this.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from zkbroker.broker.toolkit.container import free_port_block

if os.environ.get("ZKBROKER_DOCKER_TESTS") != "1":
    collect_ignore_glob = ["test_*.py"]

IMAGE = os.environ.get("ZKBROKER_IMAGE", "zkbroker:latest")
#: Every container and network the tests create carries the label zkbroker-test=<run id>:
#: docker-test.sh sets the id and, on exit, removes whatever still carries it.
LABELS = {"zkbroker-test": os.environ.get("ZKBROKER_DOCKER_RUN_ID") or secrets.token_hex(4)}
LABEL_FLAG = "--label=" + ",".join(f"{key}={value}" for key, value in LABELS.items())
MODES = ("host", "bridge")


def docker(
    *args: str, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=False, timeout=timeout
    )
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done


# ---- the sealed bridge -----------------------------------------------------------------------


@dataclass
class SealedNetwork:
    """A user-defined bridge network whose bridge forwards nothing (see the module docstring)."""

    name: str
    bridge: str

    @staticmethod
    def options(bridge: str) -> dict[str, str]:
        """`docker network create -o` options: the bridge's name, and no NAT."""
        return {
            "com.docker.network.bridge.name": bridge,
            "com.docker.network.bridge.enable_ip_masquerade": "false",
        }


def new_bridge_name() -> str:
    return f"zkbt{secrets.token_hex(4)}"  # 12 characters: Linux allows 15


def seal_bridge(bridge: str) -> None:
    """`net.ipv4.conf.<bridge>.forwarding=0`, read back."""
    path = Path(f"/proc/sys/net/ipv4/conf/{bridge}/forwarding")
    if not path.exists():
        raise AssertionError(
            f"the engine's bridge {bridge} is not in this network namespace: the bridge-mode "
            "tests seal it with a sysctl and need a local engine (as `make docker-test` starts)"
        )
    if os.geteuid() == 0:
        path.write_text("0\n")
    else:
        subprocess.run(
            ["sudo", "-n", "tee", str(path)], input="0\n", capture_output=True, check=True
        )
    assert path.read_text().strip() == "0", f"{path} stays {path.read_text().strip()}"


@contextlib.contextmanager
def sealed_network() -> Iterator[SealedNetwork]:
    bridge = new_bridge_name()
    name = f"zkbroker-test-{bridge}"
    options = [f"--opt={key}={value}" for key, value in SealedNetwork.options(bridge).items()]
    docker("network", "create", "--driver=bridge", LABEL_FLAG, *options, name)
    try:
        seal_bridge(bridge)
        yield SealedNetwork(name, bridge)
    finally:
        docker("network", "rm", name, check=False)


@pytest.fixture(scope="session")
def bridge_network() -> Iterator[SealedNetwork]:
    with sealed_network() as network:
        yield network


# ---- the image, run ------------------------------------------------------------------------


@dataclass
class RunningImage:
    name: str
    mode: str
    port: int
    internal_port: int
    brokers: int
    started_at: float
    network: SealedNetwork | None = None
    published: list[str] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.port + i}" for i in range(self.brokers))

    def inspect(self, template: str) -> str:
        return docker("inspect", "-f", template, self.name).stdout.strip()

    def logs(self) -> str:
        out = docker("logs", self.name, check=False)
        return (out.stdout + out.stderr)[-4000:]


@pytest.fixture(scope="session", autouse=True)
def engine_and_image() -> None:
    version = docker("version", "--format", "{{.Server.Version}}", check=False, timeout=15)
    assert version.returncode == 0, f"no Docker engine answers: {version.stderr}"
    image = docker("image", "inspect", IMAGE, check=False)
    assert image.returncode == 0, f"{IMAGE} is not built (scripts/docker/build-image.sh)"


def port_range(first: int, count: int) -> str:
    return str(first) if count == 1 else f"{first}-{first + count - 1}"


@contextlib.contextmanager
def run_image(
    *args: str,
    brokers: int = 3,
    env: dict[str, str] | None = None,
    network: SealedNetwork | None = None,
) -> Iterator[RunningImage]:
    """`docker run -d IMAGE` with its EXTERNAL listener on free ports of 127.0.0.1.

    Without `network`: `--network host`, both listeners bound to 127.0.0.1. With it: the
    README's `-p 127.0.0.1:P-P+2:P-P+2 -e ZKBROKER_PORT=P` on that network, nothing else set.
    """
    port = free_port_block(brokers)
    name = f"zkbroker-test-{secrets.token_hex(4)}"
    variables = {"ZKBROKER_BROKERS": str(brokers), "ZKBROKER_PORT": str(port)}
    if network is None:
        internal = free_port_block(brokers)
        variables |= {
            "ZKBROKER_LISTEN_HOST": "127.0.0.1",
            "ZKBROKER_INTERNAL_PORT": str(internal),
            "ZKBROKER_INTERNAL_HOST": "127.0.0.1",
        }
        placement = ["--network=host"]
    else:
        internal = 29092  # the image's default
        ports = port_range(port, brokers)
        placement = [f"--network={network.name}", f"--publish=127.0.0.1:{ports}:{ports}"]
    variables |= env or {}
    flags = [f"--env={key}={value}" for key, value in variables.items()]
    started = time.monotonic()
    try:  # a failed `docker run` may leave the container created: removed all the same
        docker("run", "-d", "--name", name, LABEL_FLAG, *placement, *flags, IMAGE, *args)
        running = RunningImage(
            name,
            "host" if network is None else "bridge",
            port,
            internal,
            brokers,
            started,
            network,
        )
        if network is not None:
            running.published = docker("port", name).stdout.strip().splitlines()
        yield running
    finally:
        docker("rm", "-f", name, check=False)


def container_ip(name: str, network: SealedNetwork) -> str:
    template = "{{json .NetworkSettings.Networks}}"
    networks = json.loads(docker("inspect", "-f", template, name).stdout)
    return str(networks[network.name]["IPAddress"])


# What another container on the same network runs: Metadata on the INTERNAL listener.
_METADATA_PROBE = """
import json, sys
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.toolkit.wire import WireClient
with WireClient.to(sys.argv[1]) as client:
    brokers = client.request(1, MetadataRequest(topics=[])).brokers
print(json.dumps(sorted([b.host, b.port] for b in brokers)))
"""


def metadata_from_a_container(network: str, bootstrap: str) -> list[list[object]]:
    """The brokers a Metadata answer lists, asked from a new container on `network`."""
    done = docker(
        "run", "--rm", LABEL_FLAG, f"--network={network}", "--entrypoint=python3",
        IMAGE, "-c", _METADATA_PROBE, bootstrap,
    )  # fmt: skip
    listed: list[list[object]] = json.loads(done.stdout)
    return listed


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


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    """The network mode of a test that starts its own container."""
    return str(request.param)


def network_for(mode: str, request: pytest.FixtureRequest) -> SealedNetwork | None:
    if mode == "host":
        return None
    network: SealedNetwork = request.getfixturevalue("bridge_network")
    return network


@pytest.fixture(scope="module", params=MODES)
def cluster(request: pytest.FixtureRequest) -> Iterator[RunningImage]:
    """The image's default cluster (3 brokers, Kafka 3.9), in each network mode."""
    with run_image(network=network_for(str(request.param), request)) as running:
        wait_for_metadata(running.bootstrap, 3)
        yield running
