"""Which `zkbroker` command lines start the embedded ZooKeeper's JVM before their options are
parsed (`zkbroker.broker.cli.launch`): only a `run` whose options cannot concern ZooKeeper."""

from __future__ import annotations

import pytest

from zkbroker.broker.cli import launch
from zkbroker.broker.settings import Settings


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], ("info", "console")),
        (["run", "--brokers", "3", "--host", "127.0.0.1", "--port=9092"], ("info", "console")),
        (["--brokers", "3", "--no-auto-create-topics"], ("info", "console")),
        (["run", "--log-level", "DEBUG", "--log-format", "json"], ("debug", "json")),
        (["run", "--zookeeper", "127.0.0.1:2181"], None),
        (["run", "--log-dir", "/tmp/x"], None),
        (["run", "--broker-config", "zookeeper.connect=x:1"], None),
        (["run", "--broker-config-file", "server.properties"], None),
        (["run", "--zookeeper-auth", "sasl"], None),
        (["run", "--zookeeper-max-buffer-bytes", "4096"], None),
        (["run", "--help"], None),
        (["run", "--brok", "3"], None),  # an abbreviation: main's parser decides
        (["run", "--log-level", "loud"], None),
        (["run", "--port"], None),
        (["broker", "list", "--zookeeper", "x:1"], None),
        (["report", "captures"], None),
    ],
)
def test_which_runs_start_early(args: list[str], expected: tuple[str, str] | None) -> None:
    assert launch.early_run(args, {}) == expected


@pytest.mark.parametrize(
    "env",
    [
        {launch.EARLY_ENV: "off"},
        {"ZKBROKER_ZOOKEEPER_DIGEST": "u:p"},
        {"KAFKA_OPTS": "-Djava.security.auth.login.config=/x"},
    ],
)
def test_the_environment_can_rule_it_out(env: dict[str, str]) -> None:
    assert launch.early_run(["run"], env) is None


def test_the_early_server_is_the_default_one() -> None:
    # The cluster takes the early server over only when its settings want this very one.
    assert Settings().zookeeper_max_buffer_bytes == launch._JUTE_MAX_BUFFER
