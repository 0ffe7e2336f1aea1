"""End to end: real zkbroker clusters with capture on, emulating Kafka 2.8 and 3.9, real
clients (kafka-python, confluent-kafka, aiokafka) making admin calls against each, then the
report with the 2.8 captures as the baseline: the matrix names each client's software and
the versions it negotiated, the diff shows what changed between the releases, the HTML page
parses and references nothing outside itself."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from confluent_kafka.admin import AdminClient, ConfigResource
from confluent_kafka.admin import NewTopic as CkNewTopic
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

from zkbroker import Cluster
from zkbroker.broker.report.job import run_report
from zkbroker.broker.report.options import ReportOptions

# Two clusters, three clients each, then the job: more than 120 s on a busy 2-core machine.
pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(300)]


def _kafka_python(bootstrap: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="e2e-kp")
    try:
        admin.create_topics([NewTopic("kp-topic", 1, 1)])
        with contextlib.suppress(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("kp-topic", 1, 1)])  # answered with that error
        admin.list_topics()
        admin.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, "kp-topic")])
    finally:
        admin.close()


def _confluent(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "e2e-ck"})
    for future in admin.create_topics([CkNewTopic("ck-topic", 1, 1)]).values():
        future.result(timeout=30)
    admin.list_topics(timeout=15)
    for future in admin.describe_configs([ConfigResource("topic", "ck-topic")]).values():
        future.result(timeout=30)


def _aiokafka(bootstrap: str) -> None:
    async def scenario() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="e2e-aio")
        await admin.start()
        try:
            await admin.create_topics([AioNewTopic("aio-topic", 1, 1)])
            await admin.list_topics()
            await admin.describe_cluster()
        finally:
            await admin.close()

    asyncio.run(scenario())


def _capture(factory: Callable[..., Cluster], version: str, path: Path) -> None:
    cluster = factory(kafka_version=version, capture_path=str(path))
    for client in (_kafka_python, _confluent, _aiokafka):
        client(cluster.bootstrap_servers)
    cluster.call(cluster.capture().flushed())


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for key, value in attrs:
            if key in ("src", "href") and value and not value.startswith(("data:", "#")):
                self.external.append(value)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_report_on_two_releases(
    zk_cluster_factory: Callable[..., Cluster], spark: Any, tmp_path: Path
) -> None:
    old, new = tmp_path / "kafka-2.8.jsonl", tmp_path / "kafka-3.9.jsonl"
    _capture(zk_cluster_factory, "2.8", old)
    _capture(zk_cluster_factory, "3.9", new)
    (tmp_path / "kafka-3.9.jsonl.meta.json").write_text(json.dumps({"kafka_version": "3.9"}))

    result = run_report(
        ReportOptions(out=str(tmp_path / "out"), inputs=(str(new),), baseline=(str(old),),
                      fail_on=("changed-versions",)),
        spark=spark,
    )
    by_client: dict[str, dict[str, set[int]]] = {}
    for r in result.tables["matrix"]:
        by_client.setdefault(r["client_software"], {}).setdefault(r["api"], set()).add(
            r["api_version"]
        )
    # Each client's software (as its ApiVersions v3+ said) and what it negotiated.
    assert "kafka-python" in by_client, by_client
    assert any("confluent" in name or "librdkafka" in name for name in by_client), by_client
    assert len(by_client) >= 3, by_client
    for apis in by_client.values():
        assert "Metadata" in apis
    assert by_client["kafka-python"]["CreateTopics"] == {7}

    # 2.8 -> 3.9: ApiVersions v4 and Metadata v12 exist only in 3.9, so some client's
    # negotiated versions changed, and --fail-on changed-versions makes that exit 3.
    changed = [r for r in result.tables["version_diff"] if r["status"] == "changed"]
    assert changed, result.tables["version_diff"]
    assert any(max(r["current_versions"]) > max(r["baseline_versions"]) for r in changed)
    assert result.exit_code == 3
    # kafka-python's second CreateTopics answered TOPIC_ALREADY_EXISTS in both releases.
    kp_errors = {(r["api"], r["error_name"]) for r in result.tables["errors"]
                 if r["client_software"] == "kafka-python"}
    assert ("CreateTopics", "TOPIC_ALREADY_EXISTS") in kp_errors
    run = result.tables["runs"][0]
    assert run["kafka_version"] == "3.9" and run["bad_lines"] == 0 and run["clients"] >= 3

    page = _Page()
    page.feed((tmp_path / "out" / "report.html").read_text())
    assert page.tags.count("table") >= 6 and page.external == []
    text = " ".join(page.text)
    assert "kafka-python" in text and "Diff against the baseline" in text
    for r in changed:
        assert r["api"] in text
