"""docker-compose.yml: validated as written, then brought up until healthy, with its published
ports on a bridge network and with host networking.

Uses Debian's `docker-compose` (v1.29, the one bookworm packages) or `docker compose` when the
plugin is there.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.docker.conftest import (
    LABELS,
    free_port_block,
    metadata_from_a_container,
    sealed_network,
    wait_for_metadata,
)
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.toolkit.wire import WireClient

ROOT = Path(__file__).resolve().parents[2]


def compose(*args: str, file: Path = ROOT / "docker-compose.yml", check: bool = True) -> str:
    plugin = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    v1 = shutil.which("docker-compose") or "docker-compose"
    command = ["docker", "compose"] if plugin.returncode == 0 else [v1]
    done = subprocess.run(
        [*command, "--project-directory", str(ROOT), "-f", str(file), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"compose {' '.join(args)}: {done.stdout}{done.stderr}")
    return done.stdout


def load_yaml(text: str) -> dict[str, Any]:
    # PyYAML is no test dependency; the system Python has it wherever docker-compose v1 runs.
    done = subprocess.run(
        [
            "/usr/bin/python3",
            "-c",
            "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)",
        ],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    )
    loaded: dict[str, Any] = json.loads(done.stdout)
    return loaded


def test_compose_file_as_written() -> None:
    config = load_yaml(compose("config"))
    service = config["services"]["zkbroker"]
    # ZooKeeper only for an external ensemble: a profile (compose v1's `config` lists it).
    zookeeper = config["services"].get("zookeeper")
    assert zookeeper is None or zookeeper["profiles"] == ["external-zookeeper"]
    environment = service["environment"]
    assert environment["ZKBROKER_KAFKA_VERSION"] == "3.9"
    assert environment["ZKBROKER_BROKERS"] == "3"
    assert environment["ZKBROKER_INTERNAL_HOST"] == "zkbroker"
    published = (
        {(p["host_ip"], int(p["published"])) for p in service["ports"]}
        if isinstance(service["ports"][0], dict)
        else {(p.rsplit(":", 2)[0], 0) for p in service["ports"]}
    )
    assert {host for host, _ in published} == {"127.0.0.1"}
    assert service["healthcheck"]["test"][-1].endswith("healthcheck.py")

    with_zookeeper = load_yaml(compose("--profile", "external-zookeeper", "config"))
    assert "zookeeper" in with_zookeeper["services"]


@pytest.mark.parametrize("mode", ["bridge", "host"])
def test_compose_up_turns_healthy_and_serves_the_cluster(mode: str, tmp_path: Path) -> None:
    """The file as compose resolves it, on free ports of 127.0.0.1 (the tests' network rule):

    * bridge: as written (ports published on 127.0.0.1 under the same numbers, the INTERNAL
      listener advertised as `zkbroker`), with free ports instead of 9092-9094 and a sealed
      network of the test's (conftest.py) as the project's default network;
    * host: ports dropped, `network_mode: host`, both listeners bound to 127.0.0.1.
    """
    port = free_port_block(3)
    config = load_yaml(compose("config"))
    service = config["services"]["zkbroker"]
    service.pop("build", None)
    service["labels"] = LABELS
    service["environment"]["ZKBROKER_PORT"] = str(port)
    with contextlib.ExitStack() as stack:
        if mode == "host":
            internal = free_port_block(3)
            service.pop("ports")
            service["network_mode"] = "host"
            service["environment"] |= {
                "ZKBROKER_LISTEN_HOST": "127.0.0.1",
                "ZKBROKER_INTERNAL_PORT": str(internal),
                "ZKBROKER_INTERNAL_HOST": "127.0.0.1",
            }
            config.pop("networks", None)
        else:
            network = stack.enter_context(sealed_network())
            service["ports"] = [f"127.0.0.1:{port + i}:{port + i}/tcp" for i in range(3)]
            config["networks"] = {"default": {"external": True, "name": network.name}}
        resolved = tmp_path / f"docker-compose.{mode}.json"  # JSON is YAML
        resolved.write_text(json.dumps(config))
        args = ("-p", f"zkbtest{port}")
        started = time.monotonic()
        try:
            compose(*args, "up", "-d", "--no-build", file=resolved)
            container = compose(*args, "ps", "-q", "zkbroker", file=resolved).strip()
            status = ""
            while time.monotonic() - started < 60:
                status = subprocess.run(
                    ["docker", "inspect", "-f", "{{.State.Health.Status}}", container],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.strip()
                if status == "healthy":
                    break
                time.sleep(0.5)
            logs = compose(*args, "logs", file=resolved, check=False)[-3000:]
            assert status == "healthy", logs
            print(f"{mode}: compose up -> healthy in {time.monotonic() - started:.1f} s")
            wait_for_metadata(f"127.0.0.1:{port}", 3)
            with WireClient("127.0.0.1", port + 1) as client:
                brokers = client.request(1, MetadataRequest(topics=[])).brokers
            assert sorted((b.host, b.port) for b in brokers) == [
                ("127.0.0.1", port + i) for i in range(3)
            ]
            if mode == "bridge":
                # "Other services of this file: zkbroker:29092,...", from another container.
                listed = metadata_from_a_container(network.name, "zkbroker:29092")
                assert listed == [["zkbroker", 29092 + i] for i in range(3)]
        finally:
            compose(*args, "down", "--remove-orphans", "-t", "10", file=resolved, check=False)
