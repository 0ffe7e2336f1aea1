"""The robustness suite's settings and fixtures: hypothesis profiles, the fuzz budget and seed, the
shared fuzz cluster, the broker-log watch and the figures printed at the end.

`ZKBROKER_FUZZ` picks the length: `ci` (default, `make test`: a few examples per API and
version, 20,000 mutated frames) or `long` (`make fuzz`: hundreds of examples, 1,000,000
frames). `ZKBROKER_FUZZ_FRAMES` and `ZKBROKER_FUZZ_SEED` override the budget and the seed (17
for `ci`, fresh for `long`, printed in the header), which drives hypothesis and the mutations,
so `ZKBROKER_FUZZ_SEED=<seed> make fuzz` replays a run. `fuzz_cluster` is 3 brokers emulating
Kafka 3.9 on a fresh chroot, `auto.create.topics.enable=false`, with one topic `fuzz-t`; not
the shared `zk_cluster`, because the probes leave odd state behind.

Not here: the probes (`probes`, `frames`) and assertions.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.robustness.frames import FUZZ_TOPIC, RELEASE, random_seed
from tests.robustness.probes import LogWatch
from zkbroker import Cluster
from zkbroker.broker.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.toolkit.zookeeper import ZooKeeperEndpoint, fresh_chroot, remove_chroot

# ---------------------------------------------------------------------------------------
# Run length, seed, hypothesis profiles
# ---------------------------------------------------------------------------------------

MODE = os.environ.get("ZKBROKER_FUZZ", "ci")
if MODE not in ("ci", "long"):
    raise ValueError(f"ZKBROKER_FUZZ must be 'ci' or 'long', not {MODE!r}")
LONG = MODE == "long"
FRAMES = int(os.environ.get("ZKBROKER_FUZZ_FRAMES", 1_000_000 if LONG else 20_000))
SEED = int(os.environ.get("ZKBROKER_FUZZ_SEED", random_seed() if LONG else 17))

settings.register_profile(
    "zkbroker-robustness",
    deadline=None,
    database=None,  # replay by seed, not by a local example database
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
_BASE = settings.get_profile("zkbroker-robustness")
settings.register_profile("ci", _BASE, max_examples=6)
settings.register_profile("long", _BASE, max_examples=300)
# Applied per test (`@FUZZ_SETTINGS`), not loaded globally: other suites keep their own.
FUZZ_SETTINGS = settings.get_profile(MODE)

# Lines for the end-of-run summary (pytest_terminal_summary).
FIGURES: list[str] = []


def pytest_report_header(config: pytest.Config) -> str:
    return f"zkbroker robustness: ZKBROKER_FUZZ={MODE} seed={SEED} frames={FRAMES}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section("zkbroker robustness figures")
        terminalreporter.write_line(f"mode {MODE}, seed {SEED} (ZKBROKER_FUZZ_SEED replays it)")
        for line in FIGURES:
            terminalreporter.write_line(line)


@pytest.fixture
def log_watch() -> Iterator[LogWatch]:
    """The broker log's failures during one test (the test asserts on `take()`)."""
    watch = LogWatch()
    root = logging.getLogger()
    root.addHandler(watch)
    try:
        yield watch
    finally:
        root.removeHandler(watch)


# ---------------------------------------------------------------------------------------
# The fuzz cluster
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def fuzz_cluster(zk_test_zookeeper: ZooKeeperEndpoint) -> Iterator[Cluster]:
    connect = fresh_chroot(zk_test_zookeeper.connect_string)
    cluster = Cluster(
        brokers=3,
        port=0,
        zookeeper=connect,
        kafka_version=RELEASE,
        auto_create_topics=False,
    ).start()
    try:
        with WireClient(*target(cluster)) as client:
            topic = CreatableTopic(name=FUZZ_TOPIC, num_partitions=2, replication_factor=2)
            answer = client.request(5, CreateTopicsRequest(topics=[topic], timeout_ms=10_000))
            assert answer.topics[0].error_code == 0, answer
        yield cluster
    finally:
        cluster.stop()
        if zk_test_zookeeper.kind == "external":
            remove_chroot(connect)


def target(cluster: Cluster) -> tuple[str, int]:
    """Host and port of the broker the probes talk to: the active controller, so the
    controller's APIs run their whole path (any other broker answers NOT_CONTROLLER)."""
    deadline = time.monotonic() + 30
    while cluster.controller_id not in cluster.brokers:
        if time.monotonic() > deadline:
            raise TimeoutError("the fuzz cluster has no controller")
        time.sleep(0.05)
    broker = cluster.brokers[cluster.controller_id]
    return broker.host, broker.port
