"""The image in the place of Confluent's ZooKeeper-mode images (issue 44's targets).

1. testcontainers-python's `KafkaContainer("zkbroker:3.9")` from `start()` until the module's
   own wait returns (its start script, `[KafkaServer id=1] started`): target ≤ 3 s, where the
   Confluent image takes 3-25 s. Beside it, in the same rounds, the image's own
   `ZkBrokerContainer(brokers=1)` to its first Metadata answer (the baseline).
2. A compose file in Confluent's convention (a ZooKeeper and three one-broker containers, as
   tests/docker/test_kafka_images.py writes it) from `up -d` until every container is healthy:
   target ≤ 10 s.

Needs an engine and the image: `make bench-image` (scripts/docker/with-engine.sh) provides
both. Containers are on sealed networks of the bench's (tests/docker/conftest.py), reached on
127.0.0.1; all are removed. Prints figures, asserts nothing.

    python bench/image_dropin.py [--rounds N] [--compose-rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.docker.conftest import sealed_network  # noqa: E402
from tests.docker.test_kafka_images import (  # noqa: E402
    RELEASE_IMAGE,
    _confluent_cluster,
    _testcontainers_network,
)
from zkbroker.broker.toolkit.container import free_port_block  # noqa: E402

LABELS = {"zkbroker-test": os.environ.get("ZKBROKER_DOCKER_RUN_ID", "bench")}


def _kafka_container(network: Any) -> float:
    from testcontainers.community.kafka import KafkaContainer

    container = KafkaContainer(RELEASE_IMAGE).with_network(network).with_kwargs(labels=LABELS)
    started = time.monotonic()
    container.start(timeout=60)
    try:
        return time.monotonic() - started
    finally:
        container.stop()


def _own_container(network: Any) -> float:
    from zkbroker import ZkBrokerContainer

    container = ZkBrokerContainer(brokers=1, labels=LABELS, network=network)
    started = time.monotonic()
    container.start()
    try:
        return time.monotonic() - started
    finally:
        container.stop()


def _compose(path: Path, project: str, *args: str) -> str:
    plugin = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    command = ["docker", "compose"] if plugin.returncode == 0 else ["docker-compose"]
    done = subprocess.run(
        [*command, "-p", project, "-f", str(path), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=180,
    )
    return done.stdout


def _compose_healthy(folder: Path, round_: int, network: str) -> float:
    port = free_port_block(3)
    config = _confluent_cluster([port, port + 1, port + 2])
    config["networks"] = {"default": {"external": True, "name": network}}
    for service in config["services"].values():
        service["labels"] = LABELS
    path = folder / f"compose-{round_}.json"
    path.write_text(json.dumps(config))
    project = f"zkbbench{os.getpid()}{round_}"
    started = time.monotonic()
    try:
        _compose(path, project, "up", "-d", "--no-build")
        containers = _compose(path, project, "ps", "-q").split()
        while time.monotonic() - started < 120:
            states = subprocess.run(
                ["docker", "inspect", "-f", "{{.State.Health.Status}}", *containers],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.split()
            if len(states) == len(containers) == 4 and set(states) == {"healthy"}:
                return time.monotonic() - started
            time.sleep(0.2)
        raise RuntimeError(f"compose round {round_}: not healthy in 120 s")
    finally:
        _compose(path, project, "down", "--remove-orphans", "-t", "5")


def _line(name: str, values: list[float], target: float | None) -> str:
    median = statistics.median(values)
    verdict = "" if target is None else ("met" if median <= target else "NOT met")
    spread = f"{min(values):.2f}-{max(values):.2f} s"
    aim = "" if target is None else f"(target <= {target:g} s) {verdict}"
    return f"  {name:<46} median {median:5.2f} s  {spread:<14} {aim}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--compose-rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"image drop-in ({RELEASE_IMAGE}, load average {os.getloadavg()[0]:.2f})")
    tc: list[float] = []
    own: list[float] = []
    with _testcontainers_network() as network:
        for _ in range(args.rounds):
            tc.append(_kafka_container(network))
            own.append(_own_container(network))
    with tempfile.TemporaryDirectory() as folder, sealed_network() as sealed:
        composed = [
            _compose_healthy(Path(folder), i, sealed.name) for i in range(args.compose_rounds)
        ]
    print(_line("KafkaContainer(zkbroker:3.9) ready", tc, 3.0))
    print(_line("ZkBrokerContainer(brokers=1) ready (baseline)", own, None))
    print(_line("Confluent compose, 3 brokers, all healthy", composed, 10.0))
    print(f"end: load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
