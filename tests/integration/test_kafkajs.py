"""kafkajs (Node.js) against zkbroker: admin offsets, produce, a consumer group and the group
admin calls (tests/js/checks.js does the work; `make test` installs kafkajs there)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from zkbroker import Cluster

JS = Path(__file__).resolve().parents[1] / "js"


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_kafkajs_admin_producer_and_consumer_group(
    cluster_factory: Callable[..., Cluster],
) -> None:
    if not (JS / "node_modules" / "kafkajs").is_dir():
        pytest.fail("kafkajs is not installed: run `make test` (npm ci --prefix tests/js)")
    cluster = cluster_factory(
        kafka_version=(3, 9), broker_configs=(("group.initial.rebalance.delay.ms", "0"),)
    )
    done = subprocess.run(
        ["node", str(JS / "checks.js"), cluster.bootstrap_servers, "js-topic", "js-group"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    seen = json.loads(done.stdout)
    assert seen["produced"] == [[0, 0], [1, 0]]
    assert seen["topicOffsets"] == [[0, 0, 3], [1, 0, 3]]
    assert seen["consumed"] == [f"v{i}" for i in range(6)]
    assert seen["described"] == [["js-group", "Stable", "consumer", 1]]
    assert seen["listed"] == ["js-group"]
    assert seen["committed"] == [[0, 3], [1, 3]]
    # kafkajs resets by committing the sentinel -2 (EARLIEST), which Kafka stores as sent.
    assert seen["reset"] == [[0, -2], [1, -2]]
    assert seen["afterDelete"] == []
