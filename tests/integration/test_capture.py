"""Request capture against a real cluster: real clients' requests in `Cluster.requests()` and
in the `--capture` file, each line validated against `CAPTURE_LINE_SCHEMA` and compared with
what the client sent."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient, NewTopic
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until, wait_visible, write_topic_like_kafka
from tests.json_schema import validate
from zkbroker import Cluster
from zkbroker.broker.groups.zk_registry import coordinator_id
from zkbroker.broker.hooks.capture import CAPTURE_LINE_SCHEMA, CapturedRequest
from zkbroker.broker.protocol.messages.describe_groups import DescribeGroupsRequest
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.toolkit.wire import WireClient


def _lines(cluster: Cluster, path: Path) -> list[dict[str, Any]]:
    capture = cluster.capture()
    cluster.call(capture.flushed())
    lines = [json.loads(text) for text in path.read_text().splitlines()]
    for line in lines:
        assert validate(line, CAPTURE_LINE_SCHEMA) == [], line
    return lines


def test_kafka_python_create_topics_validate_only(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    path = tmp_path / "c.jsonl"
    cluster = cluster_factory(capture_path=str(path))
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="cap-kp")
    try:
        admin.create_topics([NewTopic("captured", 3, 1)], validate_only=True)
        sent_version = admin._client.api_version(_create_topics_class(), max_version=7)
    finally:
        admin.close()

    (created,) = cluster.requests(api="CreateTopics")
    assert isinstance(created, CapturedRequest)
    assert created.version == sent_version == 7
    assert created.request.validate_only is True
    assert [t.name for t in created.request.topics] == ["captured"]
    assert created.client_id == "cap-kp"
    assert created.client_software_name == "kafka-python"
    assert created.error_codes == [] and created.latency_us > 0
    assert cluster.requests(api="CreateTopics", client_id="cap-kp", version=7) == [created]
    assert cluster.requests(api="CreateTopics", client_id="someone-else") == []

    lines = _lines(cluster, path)
    assert len(lines) == len(cluster.requests())
    (line,) = [x for x in lines if x["api"] == "CreateTopics"]
    assert line == created.as_json()
    assert (line["api_key"], line["api_version"]) == (19, 7)
    assert line["request"]["validate_only"] is True
    assert line["request"]["topics"][0]["name"] == "captured"
    assert line["request"]["topics"][0]["num_partitions"] == 3
    assert line["response"]["topics"][0]["error_code"] == 0
    assert line["client_id"] == "cap-kp"
    # The software name and version are what this connection's ApiVersions v3 said.
    (hello,) = [
        x
        for x in lines
        if x["api"] == "ApiVersions" and x["connection_id"] == line["connection_id"]
    ]
    assert hello["api_version"] >= 3
    assert hello["request"]["client_software_name"] == "kafka-python"
    assert line["client_software_name"] == "kafka-python"
    assert line["client_software_version"] == hello["request"]["client_software_version"]
    # Lines are in the order requests were answered, with increasing correlation ids per
    # connection.
    ids = [x["correlation_id"] for x in lines if x["connection_id"] == line["connection_id"]]
    assert ids == sorted(ids)


def _create_topics_class() -> Any:
    from kafka.protocol.admin import CreateTopicsRequest

    return CreateTopicsRequest


def test_confluent_kafka_software_name_and_runtime_capture(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "cap-ck"})
    admin.list_topics(timeout=10)
    assert cluster.requests() == []  # nothing captured before capture()

    before = time.time()
    capture = cluster.capture()
    assert cluster.capture() is capture  # idempotent
    admin2 = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "cap-ck2"})
    admin2.list_topics(timeout=10)
    metadata = wait_until(lambda: cluster.requests(api="Metadata", client_id="cap-ck2"))
    hellos = cluster.requests(api="ApiVersions", client_id="cap-ck2")
    assert hellos
    sent = hellos[0].request
    assert sent.client_software_name == "confluent-kafka-python"
    assert "rdkafka" in sent.client_software_version
    assert metadata[0].client_software_name == "confluent-kafka-python"
    assert metadata[0].client_software_version == sent.client_software_version
    assert metadata[0].as_json()["client_software_name"] == "confluent-kafka-python"
    assert validate(metadata[0].as_json(), CAPTURE_LINE_SCHEMA) == []
    # Only requests after capture() were recorded (the first client may still be refreshing
    # its metadata in the background).
    assert all(r.received_at >= before for r in cluster.requests())


def test_bytes_fields_are_base64_in_lines(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient, tmp_path: Path
) -> None:
    path = tmp_path / "c.jsonl"
    cluster = cluster_factory(capture_path=str(path))
    write_topic_like_kafka(kazoo, "topic1", {0: [0, 1, 2]})
    wait_visible(cluster, "topic1")
    # A group of the old ZooKeeper consumer registry with one member.
    registration = {
        "version": 1,
        "pattern": "static",
        "subscription": {"topic1": 1},
        "timestamp": "1700000000000",
    }
    kazoo.create("/consumers/g1/ids/c1", json.dumps(registration).encode(), makepath=True)
    kazoo.create("/consumers/g1/owners/topic1/0", b"c1-0", makepath=True)
    coordinator = coordinator_id("g1", cluster.engine.image.brokers)
    assert coordinator is not None
    node = cluster.engine.brokers[coordinator]
    with WireClient(node.host, node.port, client_id="cap-wire") as client:
        answer = client.request(5, DescribeGroupsRequest(groups=["g1"]))
        client.request(9, MetadataRequest(topics=None))
    (member,) = answer.groups[0].members
    assert member.member_metadata and member.member_assignment

    lines = [x for x in _lines(cluster, path) if x["client_id"] == "cap-wire"]
    assert [(x["api"], x["api_version"]) for x in lines] == [
        ("DescribeGroups", 5),
        ("Metadata", 9),
    ]
    # No ApiVersions on this connection: the software name is unknown.
    assert lines[0]["client_software_name"] is None
    (got,) = lines[0]["response"]["groups"][0]["members"]
    assert base64.b64decode(got["member_metadata"]) == member.member_metadata
    assert base64.b64decode(got["member_assignment"]) == member.member_assignment
    assert lines[0]["broker_id"] == coordinator
