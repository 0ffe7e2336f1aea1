"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs end to end: real clients
(kafka-python, confluent-kafka, aiokafka) and raw wire requests against real clusters, with
ZooKeeper read back and written directly with kazoo."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource as AioConfigResource
from aiokafka.admin.config_resource import ConfigResourceType as AioConfigResourceType
from confluent_kafka.admin import AdminClient, AlterConfigOpType
from confluent_kafka.admin import ConfigEntry as CfConfigEntry
from confluent_kafka.admin import ConfigResource as CfConfigResource
from confluent_kafka.admin import ConfigSource as CfConfigSource
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from tests.integration.helpers import wait_until, wait_visible
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.alter_configs import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from zkbroker.broker.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from zkbroker.broker.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from zkbroker.broker.protocol.messages.incremental_alter_configs import (
    AlterableConfig as IncAlterableConfig,
)
from zkbroker.broker.protocol.messages.incremental_alter_configs import (
    AlterConfigsResource as IncResource,
)
from zkbroker.broker.protocol.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
)
from zkbroker.broker.toolkit.wire import WireClient

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

# Kafka 2.8's topic configs and the values a default broker reports (docs/kafka-behaviour.md §4.3).
DEFAULTS_2_8 = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "delete.retention.ms": "86400000",
    "file.delete.delay.ms": "60000",
    "flush.messages": "9223372036854775807",
    "flush.ms": "9223372036854775807",
    "follower.replication.throttled.replicas": "",
    "index.interval.bytes": "4096",
    "leader.replication.throttled.replicas": "",
    "max.compaction.lag.ms": "9223372036854775807",
    "max.message.bytes": "1048588",
    "message.downconversion.enable": "true",
    "message.format.version": "2.8-IV1",
    "message.timestamp.difference.max.ms": "9223372036854775807",
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5",
    "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1",
    "preallocate": "false",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.index.bytes": "10485760",
    "segment.jitter.ms": "0",
    "segment.ms": "604800000",
    "unclean.leader.election.enable": "false",
}


def make_topic(cluster: Cluster, name: str, **configs: str) -> None:
    controller = cluster.engine.brokers[_controller(cluster)]
    version = min(4, controller.api_table.ranges[19][1])
    with WireClient(controller.host, controller.port) as client:
        result = client.request(
            version,
            CreateTopicsRequest(
                topics=[
                    CreatableTopic(
                        name=name,
                        num_partitions=1,
                        replication_factor=1,
                        configs=[CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
                    )
                ],
                timeout_ms=15000,
            ),
        ).topics[0]
    assert result.error_code == ec.NONE, result
    wait_visible(cluster, name)


def _controller(cluster: Cluster) -> int:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    return cluster.engine.controller_id


def broker_client(cluster: Cluster, broker_id: int) -> WireClient:
    node = cluster.engine.brokers[broker_id]
    return WireClient(node.host, node.port)


def describe(
    client: WireClient,
    resource_type: int,
    name: str,
    keys: list[str] | None = None,
    *,
    version: int = 4,
    synonyms: bool = True,
    documentation: bool = False,
) -> Any:
    response = client.request(
        version,
        DescribeConfigsRequest(
            resources=[
                DescribeConfigsResource(
                    resource_type=resource_type, resource_name=name, configuration_keys=keys
                )
            ],
            include_synonyms=synonyms,
            include_documentation=documentation,
        ),
    )
    return response.results[0]


def entries(result: Any) -> dict[str, Any]:
    return {c.name: c for c in result.configs}


def incremental(
    client: WireClient,
    resource_type: int,
    name: str,
    *ops: tuple[int, str, str | None],
    validate_only: bool = False,
) -> Any:
    response = client.request(
        1,
        IncrementalAlterConfigsRequest(
            resources=[
                IncResource(
                    resource_type=resource_type,
                    resource_name=name,
                    configs=[
                        IncAlterableConfig(name=k, config_operation=op, value=v) for op, k, v in ops
                    ],
                )
            ],
            validate_only=validate_only,
        ),
    )
    return response.responses[0]


def legacy_alter(
    client: WireClient,
    resource_type: int,
    name: str,
    configs: dict[str, str | None],
    *,
    validate_only: bool = False,
    version: int = 1,
) -> Any:
    response = client.request(
        version,
        AlterConfigsRequest(
            resources=[
                AlterConfigsResource(
                    resource_type=resource_type,
                    resource_name=name,
                    configs=[AlterableConfig(name=k, value=v) for k, v in configs.items()],
                )
            ],
            validate_only=validate_only,
        ),
    )
    return response.responses[0]


def zk_config(kazoo: Any, path: str) -> dict[str, str]:
    return json.loads(kazoo.get(path)[0])["config"]


def notifications(kazoo: Any) -> list[dict[str, Any]]:
    children = sorted(kazoo.get_children("/config/changes"))
    return [json.loads(kazoo.get(f"/config/changes/{c}")[0]) for c in children]


# ---- DescribeConfigs ------------------------------------------------------------------------


@pytest.mark.kafka_version("2.8")
def test_fresh_topic_lists_every_2_8_topic_config_with_kafkas_defaults(
    cluster: Cluster,
) -> None:
    make_topic(cluster, "fresh")
    with WireClient.to(cluster.bootstrap_servers) as client:
        result = describe(client, TOPIC, "fresh")
    assert (result.error_code, result.error_message) == (ec.NONE, None)
    got = entries(result)
    assert {n: e.value for n, e in got.items()} == DEFAULTS_2_8
    assert all(
        e.config_source == 5 and not e.read_only and not e.is_sensitive for e in got.values()
    )
    assert [s.name for s in got["cleanup.policy"].synonyms] == ["log.cleanup.policy"]
    assert got["retention.ms"].synonyms == []  # Kafka's dropWhile quirk (§4.3)
    assert got["cleanup.policy"].config_type == 7 and got["retention.ms"].config_type == 5


def test_confluent_describe_topic_with_override_and_requested_keys(cluster: Cluster) -> None:
    make_topic(cluster, "with-override", **{"retention.ms": "1000"})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    resource = CfConfigResource("TOPIC", "with-override")
    configs = admin.describe_configs([resource])[resource].result(timeout=15)
    assert configs["retention.ms"].value == "1000"
    assert configs["retention.ms"].source == CfConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.bytes"].source == CfConfigSource.DEFAULT_CONFIG.value
    assert configs["segment.bytes"].is_default
    with WireClient.to(cluster.bootstrap_servers) as client:
        only = describe(client, TOPIC, "with-override", ["retention.ms", "no.such.key"])
    assert [c.name for c in only.configs] == ["retention.ms"]


@pytest.mark.kafka_version("2.8")
def test_describe_errors_per_resource(cluster: Cluster) -> None:
    make_topic(cluster, "exists")
    with broker_client(cluster, 1) as client:
        response = client.request(
            2,
            DescribeConfigsRequest(
                resources=[
                    DescribeConfigsResource(resource_type=TOPIC, resource_name="missing"),
                    DescribeConfigsResource(resource_type=TOPIC, resource_name="bad name"),
                    DescribeConfigsResource(resource_type=BROKER, resource_name="2"),
                    DescribeConfigsResource(resource_type=BROKER, resource_name="x"),
                    DescribeConfigsResource(resource_type=TOPIC, resource_name="exists"),
                    DescribeConfigsResource(resource_type=BROKER_LOGGER, resource_name=""),
                    DescribeConfigsResource(resource_type=BROKER_LOGGER, resource_name="0"),
                ]
            ),
        )
    got = [(r.error_code, r.error_message) for r in response.results]
    assert got == [
        (ec.UNKNOWN_TOPIC_OR_PARTITION, None),
        (
            ec.INVALID_TOPIC_EXCEPTION,
            'Topic name "bad name" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'",
        ),
        (ec.INVALID_REQUEST, "Unexpected broker id, expected 1 or empty string, but received 2"),
        (ec.INVALID_REQUEST, "Broker id must be an integer, but it is: x"),
        (ec.NONE, None),
        (ec.INVALID_REQUEST, "Broker id must not be empty"),
        (ec.INVALID_REQUEST, "Unexpected broker id, expected 1 but received 0"),
    ]
    assert response.results[4].configs and not response.results[0].configs


def test_describe_unknown_resource_type_fails_the_whole_request(cluster: Cluster) -> None:
    make_topic(cluster, "t1")
    with WireClient.to(cluster.bootstrap_servers) as client:
        response = client.request(
            1,
            DescribeConfigsRequest(
                resources=[
                    DescribeConfigsResource(resource_type=TOPIC, resource_name="t1"),
                    DescribeConfigsResource(resource_type=99, resource_name="x"),
                ]
            ),
        )
    assert [(r.error_code, r.error_message, r.configs) for r in response.results] == [
        (ec.INVALID_REQUEST, "Unexpected resource type UNKNOWN for resource x", [])
    ] * 2


def test_describe_own_broker_lists_read_only_static_and_dynamic_configs(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(broker_configs=(("log.retention.hours", "24"),))
    with broker_client(cluster, 2) as client:
        got = entries(describe(client, BROKER, "2"))
    assert got["broker.id"].value == "2" and got["broker.id"].read_only
    assert got["broker.id"].config_source == 4  # STATIC_BROKER_CONFIG
    assert got["zookeeper.connect"].config_source == 4
    hours = got["log.retention.hours"]
    # only the .ms forms of the retention keys are dynamic in Kafka 2.8
    assert (hours.value, hours.config_source, hours.read_only) == ("24", 4, True)
    assert [(s.name, s.value, s.source) for s in hours.synonyms] == [
        ("log.retention.hours", "24", 4),
        ("log.retention.hours", "168", 5),
    ]
    assert got["num.io.threads"].config_source == 5 and not got["num.io.threads"].read_only
    assert got["ssl.keystore.password"].is_sensitive and got["ssl.keystore.password"].value is None
    make_topic(cluster, "static-hours")
    with broker_client(cluster, 2) as client:
        retention = entries(describe(client, TOPIC, "static-hours"))["retention.ms"]
    # the value follows log.retention.hours, the source does not (Kafka's dropWhile)
    assert (retention.value, retention.config_source) == ("86400000", 5)


def test_describe_documentation_is_our_own_text(cluster: Cluster) -> None:
    make_topic(cluster, "docs")
    with WireClient.to(cluster.bootstrap_servers) as client:
        with_docs = entries(describe(client, TOPIC, "docs", version=3, documentation=True))
        without = entries(describe(client, TOPIC, "docs", version=3))
    assert with_docs["retention.ms"].documentation
    assert without["retention.ms"].documentation is None


def test_describe_v0_reports_is_default(cluster: Cluster) -> None:
    make_topic(cluster, "v0", **{"retention.ms": "5"})
    with WireClient.to(cluster.bootstrap_servers) as client:
        got = entries(describe(client, TOPIC, "v0", version=0, synonyms=False))
    assert got["retention.ms"].is_default is False
    assert got["segment.bytes"].is_default is True


# ---- AlterConfigs ---------------------------------------------------------------------------


def test_legacy_alter_configs_replaces_the_whole_override_set(
    cluster: Cluster, kazoo: Any
) -> None:
    make_topic(cluster, "replace-me")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    first = CfConfigResource(
        "TOPIC", "replace-me", set_config={"retention.ms": "1000", "cleanup.policy": "compact"}
    )
    admin.alter_configs([first])[first].result(timeout=15)
    assert zk_config(kazoo, "/config/topics/replace-me") == {
        "retention.ms": "1000",
        "cleanup.policy": "compact",
    }
    second = CfConfigResource("TOPIC", "replace-me", set_config={"retention.ms": "2000"})
    admin.alter_configs([second])[second].result(timeout=15)
    assert zk_config(kazoo, "/config/topics/replace-me") == {"retention.ms": "2000"}
    assert notifications(kazoo)[-2:] == [{"version": 2, "entity_path": "topics/replace-me"}] * 2
    with WireClient.to(cluster.bootstrap_servers) as client:
        got = entries(describe(client, TOPIC, "replace-me"))
    assert got["cleanup.policy"].value == "delete" and got["cleanup.policy"].config_source == 5
    assert got["retention.ms"].value == "2000"


def test_kafka_python_alter_and_describe(cluster: Cluster, kazoo: Any) -> None:
    make_topic(cluster, "kp")
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        result = admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "kp", configs={"max.message.bytes": "2048"})]
        )
        assert result == {"topic": {"kp": "OK"}}
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp")])
    finally:
        admin.close()
    assert described["topic"]["kp"]["max.message.bytes"]["value"] == "2048"
    assert zk_config(kazoo, "/config/topics/kp") == {"max.message.bytes": "2048"}


def test_aiokafka_alter_and_describe(cluster: Cluster) -> None:
    make_topic(cluster, "aio")

    async def run() -> Any:
        admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        await admin.start()
        try:
            await admin.alter_configs(
                [
                    AioConfigResource(
                        AioConfigResourceType.TOPIC, "aio", configs={"segment.ms": "3600000"}
                    )
                ]
            )
            return await admin.describe_configs(
                [AioConfigResource(AioConfigResourceType.TOPIC, "aio")]
            )
        finally:
            await admin.close()

    responses = asyncio.run(run())
    resources = responses[0].resources
    (error_code, _, _, _, configs) = resources[0][:5]
    assert error_code == 0
    assert {c[0]: c[1] for c in configs}["segment.ms"] == "3600000"


@pytest.mark.parametrize(
    ("release", "bad_value_code"),
    [((2, 8), ec.INVALID_REQUEST), ((3, 9), ec.INVALID_CONFIG)],
)
def test_alter_topic_errors(
    cluster_factory: Callable[..., Cluster],
    kazoo: Any,
    release: tuple[int, ...],
    bad_value_code: int,
) -> None:
    cluster = cluster_factory(kafka_version=release)
    make_topic(cluster, "t")
    before = kazoo.get("/config/topics/t")[0]
    with WireClient.to(cluster.bootstrap_servers) as client:
        missing = legacy_alter(client, TOPIC, "nope", {"retention.ms": "1"})
        unknown = legacy_alter(client, TOPIC, "t", {"foo.bar": "1"})
        bad = legacy_alter(client, TOPIC, "t", {"retention.ms": "abc"})
        null = legacy_alter(client, TOPIC, "t", {"retention.ms": None})
        dry = legacy_alter(client, TOPIC, "t", {"retention.ms": "7"}, validate_only=True)
    assert (missing.error_code, missing.error_message) == (
        ec.UNKNOWN_TOPIC_OR_PARTITION,
        "The topic 'nope' does not exist.",
    )
    assert (unknown.error_code, unknown.error_message) == (
        ec.INVALID_CONFIG,
        "Unknown topic config name: foo.bar",
    )
    assert bad.error_code == bad_value_code
    assert bad.error_message == (
        "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): "
        "Invalid value abc for configuration retention.ms: Not a number of type LONG"
    )
    assert (null.error_code, null.error_message) == (
        ec.INVALID_REQUEST,
        "Null value not supported for : retention.ms",
    )
    assert (dry.error_code, dry.error_message) == (ec.NONE, None)
    assert kazoo.get("/config/topics/t")[0] == before  # validate_only wrote nothing


@pytest.mark.kafka_version("2.8")
def test_legacy_alter_broker_logger_fails_whole_request_before_3_2(
    cluster: Cluster,
) -> None:
    make_topic(cluster, "t")
    with WireClient.to(cluster.bootstrap_servers) as client:
        response = client.request(
            0,
            AlterConfigsRequest(
                resources=[
                    AlterConfigsResource(resource_type=TOPIC, resource_name="t", configs=[]),
                    AlterConfigsResource(resource_type=BROKER_LOGGER, resource_name="0"),
                ]
            ),
        )
    message = "AlterConfigs is deprecated and does not support the resource type BROKER_LOGGER"
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (ec.INVALID_REQUEST, message)
    ] * 2


def test_3_9_answers_duplicates_and_unknown_types_per_resource(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(kafka_version=(3, 9))
    make_topic(cluster, "t")
    with WireClient.to(cluster.bootstrap_servers) as client:
        response = client.request(
            2,
            AlterConfigsRequest(
                resources=[
                    AlterConfigsResource(resource_type=TOPIC, resource_name="t"),
                    AlterConfigsResource(resource_type=BROKER_LOGGER, resource_name="0"),
                    AlterConfigsResource(resource_type=TOPIC, resource_name="t"),
                ]
            ),
        )
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (ec.INVALID_REQUEST, "Each resource must appear at most once."),
        (ec.INVALID_REQUEST, "Unknown resource type 8"),
        (ec.INVALID_REQUEST, "Each resource must appear at most once."),
    ]


# ---- IncrementalAlterConfigs -------------------------------------------------------------------


def test_confluent_incremental_append_and_subtract_cleanup_policy(
    cluster: Cluster, kazoo: Any
) -> None:
    make_topic(cluster, "policy")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})

    def change(op: AlterConfigOpType, value: str) -> None:
        resource = CfConfigResource(
            "TOPIC",
            "policy",
            incremental_configs=[CfConfigEntry("cleanup.policy", value, incremental_operation=op)],
        )
        admin.incremental_alter_configs([resource])[resource].result(timeout=15)

    change(AlterConfigOpType.APPEND, "compact")  # starts from the default list
    assert zk_config(kazoo, "/config/topics/policy") == {"cleanup.policy": "delete,compact"}
    change(AlterConfigOpType.SUBTRACT, "delete")
    assert zk_config(kazoo, "/config/topics/policy") == {"cleanup.policy": "compact"}
    resource = CfConfigResource("TOPIC", "policy")
    described = admin.describe_configs([resource])[resource].result(timeout=15)
    assert described["cleanup.policy"].value == "compact"


@pytest.mark.kafka_version("2.8")
def test_incremental_errors(cluster: Cluster, kazoo: Any) -> None:
    make_topic(cluster, "inc", **{"retention.ms": "100"})
    with WireClient.to(cluster.bootstrap_servers) as client:
        dup = incremental(client, TOPIC, "inc", (SET, "a", "1"), (DELETE, "a", None))
        null = incremental(client, TOPIC, "inc", (SET, "retention.ms", None))
        not_list = incremental(client, TOPIC, "inc", (APPEND, "retention.ms", "1"))
        unknown_list = incremental(client, TOPIC, "inc", (APPEND, "foo", "1"))
        deleted = incremental(client, TOPIC, "inc", (DELETE, "retention.ms", None))
    assert (dup.error_code, dup.error_message) == (
        ec.INVALID_REQUEST,
        "Error due to duplicate config keys : a",
    )
    assert (null.error_code, null.error_message) == (
        ec.INVALID_REQUEST,
        "Null value not supported for : SET:retention.ms",
    )
    assert (not_list.error_code, not_list.error_message) == (
        ec.INVALID_REQUEST,
        "Config value append is not allowed for config key: retention.ms",
    )
    assert (unknown_list.error_code, unknown_list.error_message) == (
        ec.UNKNOWN_SERVER_ERROR,
        None,
    )
    assert deleted.error_code == ec.NONE
    assert zk_config(kazoo, "/config/topics/inc") == {}


# ---- broker configs ---------------------------------------------------------------------------


def test_cluster_default_and_per_broker_configs_reach_every_broker(
    cluster: Cluster, kazoo: Any
) -> None:
    with broker_client(cluster, 2) as client:  # librdkafka refuses an empty resource name
        assert incremental(client, BROKER, "", (SET, "log.retention.ms", "3600000")).error_code == 0
    assert zk_config(kazoo, "/config/brokers/<default>") == {"log.retention.ms": "3600000"}
    assert notifications(kazoo)[-1] == {"version": 2, "entity_path": "brokers/<default>"}
    with broker_client(cluster, 1) as client:
        assert (
            incremental(client, BROKER, "1", (SET, "message.max.bytes", "2000000")).error_code == 0
        )
    for broker_id in (0, 1, 2):
        expected = ("2000000", 2) if broker_id == 1 else ("1048588", 5)

        def seen(b: int = broker_id, want: tuple[str, int] = expected) -> Any:
            with broker_client(cluster, b) as client:
                got = entries(describe(client, BROKER, str(b)))
            size = got["message.max.bytes"]
            done = got["log.retention.ms"].config_source == 3
            return got if done and (size.value, size.config_source) == want else None

        got = wait_until(seen)
        assert got["log.retention.ms"].value == "3600000"
    with broker_client(cluster, 0) as client:
        only_default = entries(describe(client, BROKER, ""))
    assert list(only_default) == ["log.retention.ms"]
    make_topic(cluster, "inherits")
    with broker_client(cluster, 0) as client:
        retention = entries(describe(client, TOPIC, "inherits"))["retention.ms"]
    assert (retention.value, retention.config_source) == ("3600000", 3)
    assert [(s.name, s.source) for s in retention.synonyms] == [
        ("log.retention.ms", 3),
        ("log.retention.hours", 5),
    ]


@pytest.mark.kafka_version("2.8")
def test_broker_alter_errors(cluster: Cluster, kazoo: Any) -> None:
    with broker_client(cluster, 0) as client:
        other = legacy_alter(client, BROKER, "1", {"num.io.threads": "4"})
        not_int = legacy_alter(client, BROKER, "zero", {"num.io.threads": "4"})
        read_only = legacy_alter(client, BROKER, "0", {"broker.id": "5"})
        per_broker_only = incremental(client, BROKER, "", (SET, "listeners", "PLAINTEXT://:1"))
        unprefixed = incremental(client, BROKER, "0", (SET, "ssl.key.password", "secret"))
        password = incremental(
            client, BROKER, "0", (SET, "listener.name.plaintext.ssl.key.password", "secret")
        )
    assert (other.error_code, other.error_message) == (
        ec.INVALID_REQUEST,
        "Unexpected broker id, expected 0, but received 1",
    )
    assert (not_int.error_code, not_int.error_message) == (
        ec.INVALID_REQUEST,
        "Broker id must be an integer, but it is: zero",
    )
    assert read_only.error_code == ec.INVALID_REQUEST
    assert read_only.error_message.startswith(
        "Invalid config value for resource ConfigResource(type=BROKER, name='0'): "
        "Cannot update these configs dynamically: "
    )
    assert "broker.id" in read_only.error_message
    assert per_broker_only.error_code == ec.INVALID_REQUEST
    assert "broker id must be specified" in per_broker_only.error_message
    assert unprefixed.error_message.endswith(
        "These security configs can be dynamically updated only per-listener using the "
        "listener prefix: HashSet(ssl.key.password)"
    )
    assert password.error_code == ec.INVALID_REQUEST
    assert password.error_message.endswith("Password encoder secret not configured")
    assert not kazoo.exists("/config/brokers/0") and not kazoo.exists("/config/brokers/<default>")


def test_config_written_by_plain_kazoo_reaches_brokers_of_every_process(
    cluster_factory: Callable[..., Cluster], kazoo: Any
) -> None:
    first = cluster_factory(broker_ids=(0, 1))
    second = cluster_factory(broker_ids=(2,))
    kazoo.create("/config/brokers/<default>", json.dumps(
        {"version": 1, "config": {"log.cleaner.threads": "2"}}
    ).encode())  # fmt: skip
    kazoo.create(
        "/config/changes/config_change_",
        json.dumps({"version": 2, "entity_path": "brokers/<default>"}).encode(),
        sequence=True,
    )
    for runner, broker_id in ((first, 0), (first, 1), (second, 2)):

        def seen(r: Cluster = runner, b: int = broker_id) -> bool:
            with broker_client(r, b) as client:
                got = entries(describe(client, BROKER, str(b), ["log.cleaner.threads"]))
            return got["log.cleaner.threads"].value == "2"

        wait_until(seen)
    # a topic config written by kazoo alone shows at once: DescribeConfigs reads ZooKeeper
    make_topic(first, "by-kazoo")
    wait_visible(second, "by-kazoo")  # the other process learns of the topic from its watches
    kazoo.set(
        "/config/topics/by-kazoo",
        json.dumps({"version": 1, "config": {"retention.bytes": "99"}}).encode(),
    )
    with broker_client(second, 2) as client:
        got = entries(describe(client, TOPIC, "by-kazoo"))
    assert (got["retention.bytes"].value, got["retention.bytes"].config_source) == ("99", 1)


def test_notification_format_follows_the_release(
    cluster_factory: Callable[..., Cluster], kazoo: Any
) -> None:
    cluster = cluster_factory(kafka_version=(0, 10, 0))
    # 0.10.0 has no AlterConfigs: write as its kafka-configs tool would, via the store
    assert 33 not in cluster.engine.brokers[0].api_table.ranges
    from zkbroker.zk_layout.store.admin_zk import change_entity_config

    cluster.call(
        change_entity_config(
            cluster.engine.brokers[0].store, "topics", "old", {"retention.ms": "1"}, (0, 10, 0)
        )
    )
    assert notifications(kazoo)[-1] == {"version": 1, "entity_type": "topics", "entity_name": "old"}


def test_old_notifications_are_purged(
    cluster_factory: Callable[..., Cluster], kazoo: Any
) -> None:
    cluster = cluster_factory(config_change_expiration_ms=0)
    make_topic(cluster, "purged")
    with WireClient.to(cluster.bootstrap_servers) as client:
        assert legacy_alter(client, TOPIC, "purged", {"retention.ms": "10"}).error_code == 0
    wait_until(lambda: kazoo.get_children("/config/changes") == [])
    assert zk_config(kazoo, "/config/topics/purged") == {"retention.ms": "10"}


def test_create_topics_v5_reports_broker_level_values(cluster: Cluster) -> None:
    with broker_client(cluster, 0) as client:
        assert (
            incremental(client, BROKER, "", (SET, "log.segment.bytes", "2097152")).error_code == 0
        )
    wait_until(lambda: cluster.engine.image.broker_configs.get("<default>"))
    controller = cluster.engine.brokers[_controller(cluster)]
    with WireClient(controller.host, controller.port) as client:
        result = client.request(
            5,
            CreateTopicsRequest(
                topics=[CreatableTopic(name="v5", num_partitions=1, replication_factor=1)],
                timeout_ms=15000,
                validate_only=True,
            ),
        ).topics[0]
    segment = {c.name: c for c in result.configs}["segment.bytes"]
    assert (segment.value, segment.config_source) == ("2097152", 3)


# ---- broker loggers ---------------------------------------------------------------------------


@pytest.mark.kafka_version("2.8")
def test_broker_logger_levels(cluster: Cluster, kazoo: Any) -> None:
    with broker_client(cluster, 1) as client:
        before = entries(describe(client, BROKER_LOGGER, "1"))
        assert before["root"].value == "INFO" and before["kafka.controller"].value == "TRACE"
        assert before["kafka.server.KafkaApis"].value == "INFO"
        assert before["root"].config_source == 6
        ok = incremental(client, BROKER_LOGGER, "1", (SET, "kafka", "DEBUG"))
        assert (ok.error_code, ok.error_message) == (ec.NONE, None)
        after = entries(describe(client, BROKER_LOGGER, "1"))
        assert after["kafka.server.KafkaApis"].value == "DEBUG"  # inherited from "kafka"
        unknown = incremental(client, BROKER_LOGGER, "1", (SET, "no.such.logger", "DEBUG"))
        bad_level = incremental(client, BROKER_LOGGER, "1", (SET, "kafka", "LOUD"))
        root = incremental(client, BROKER_LOGGER, "1", (DELETE, "root", None))
    assert (unknown.error_code, unknown.error_message) == (
        ec.INVALID_REQUEST,
        "Invalid config value for resource ConfigResource(type=BROKER_LOGGER, name='1'): "
        "Logger no.such.logger does not exist!",
    )
    assert bad_level.error_message.endswith(
        "Valid log levels are TRACE, ERROR, INFO, FATAL, DEBUG, WARN"
    )
    assert (root.error_code, root.error_message) == (
        ec.INVALID_REQUEST,
        "Removing the log level of the root logger is not allowed",
    )
    with broker_client(cluster, 0) as client:  # levels are per broker
        assert entries(describe(client, BROKER_LOGGER, "0"))["kafka"].value == "INFO"
    assert not kazoo.exists("/config/brokers/1")
