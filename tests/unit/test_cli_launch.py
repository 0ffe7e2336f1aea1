"""When `zkbroker run` starts the embedded ZooKeeper's JVM (`zkbroker.broker.cli.launch`): once
the Settings are built, never for a refused command line, with the options the cluster would
give it (so the cluster takes it over), and not at all with `--zookeeper` or
`ZKBROKER_EARLY_ZOOKEEPER=off`. Nothing is started here: `start_zookeeper` is a recorder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from zkbroker.broker.cli import launch
from zkbroker.broker.cli import main as cli
from zkbroker.broker.settings import Settings
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper


class Recorder:
    """A `start_zookeeper` that records what it was asked, and what ran before it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[Settings] = []
        self.events: list[str] = []

        async def fake_run(settings: Settings, **kwargs: Any) -> int:
            self.events.append("run")
            assert kwargs == {"early_zookeeper": None}
            return 0

        monkeypatch.setattr(cli, "run_until_signalled", fake_run)

    def __call__(self, settings: Settings) -> EmbeddedZooKeeper | None:
        self.calls.append(settings)
        self.events.append("start_zookeeper")
        return None


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--kafka-version", "2.8.9"],
        ["run", "--racks", "a,b", "--brokers", "3"],
        ["run", "--jaas-config", "/nonexistent/jaas.conf"],
        ["run", "--broker-config", "log.retention.hours=x"],
    ],
)
def test_nothing_starts_for_a_refused_command_line(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder(monkeypatch)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv, start_zookeeper=recorder)
    assert exit_info.value.code == 2
    assert recorder.events == []


def test_the_zookeeper_starts_once_the_settings_are_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorder = Recorder(monkeypatch)
    assert cli.main(["--brokers", "2", "--port", "0"], start_zookeeper=recorder) == 0
    assert recorder.events == ["start_zookeeper", "run"]
    assert recorder.calls[0].broker_ids == (0, 1)


def test_no_early_server_with_a_running_zookeeper_or_when_turned_off() -> None:
    assert launch.start_zookeeper_early(Settings(zookeeper="127.0.0.1:2181"), {}) is None
    assert launch.start_zookeeper_early(Settings(), {launch.EARLY_ENV: "off"}) is None


def test_the_early_server_has_the_clusters_options(tmp_path: Path) -> None:
    # What ClusterEngine.start builds for the same settings (the integration test
    # tests/integration/test_command_line.py sees the cluster take the early server over).
    plain = Settings().embedded_zookeeper_options()
    assert plain == {"data_dir": None, "max_buffer_bytes": 0xFFFFF, "sasl_users": None}
    kept = Settings(
        log_dir=str(tmp_path / "logs"),
        zookeeper_max_buffer_bytes=4096,
        zookeeper_digest="zk:secret",
        zookeeper_auth_scheme="sasl",
    ).embedded_zookeeper_options()
    assert kept == {
        "data_dir": tmp_path / "logs" / "zookeeper",
        "max_buffer_bytes": 4096,
        "sasl_users": {"zk": "secret"},
    }
    digest = Settings(zookeeper_digest="zk:secret").embedded_zookeeper_options()
    assert digest["sasl_users"] is None  # digest credentials need no server user
    assert EmbeddedZooKeeper(**kept).configured_as(**kept)
    assert not (tmp_path / "logs").exists()  # options only: nothing made
