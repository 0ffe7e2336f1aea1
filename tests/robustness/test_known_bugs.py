"""Regression tests of bugs found by a load review and by the robustness probes, each asserting
Kafka's behaviour. A bug found open is added as `xfail(strict=True)` with a matching
`frames.hazard` rule keeping the fuzzers off it; both go when it is fixed.

- #1: CreateTopics with 2^31-1 partitions (validate_only) is answered at once, and an illegal
  name first, without stalling other clients (brokers in a capped child process).
- #2: growing a topic to 46,335 partitions holds no client while the controller brings them
  online (health Metadata within 1 s).
- #3: `max.connections.per.ip` and `connections.max.idle.ms` close connections.
- #4: strings over 32,767 bytes close the connection (docs/kafka-behaviour.md §0).
- Probes: CreatePartitions and IncrementalAlterConfigs naming a topic that is no znode name
  ("", ".", "..") fail that topic alone (UNKNOWN_SERVER_ERROR), with no traceback.

Not here: the fuzzers (`test_structured.py`, `test_mutation.py`).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from tests.robustness.conftest import target
from tests.robustness.frames import FUZZ_TOPIC
from tests.robustness.probes import (
    HEALTH_LIMIT_S,
    Closed,
    FrameConn,
    HealthMonitor,
    LogWatch,
    frame_of,
)
from zkbroker import Cluster
from zkbroker.broker.protocol import RequestHeader, decode_response, encode_request, error_codes
from zkbroker.broker.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from zkbroker.broker.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from zkbroker.broker.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from zkbroker.broker.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from zkbroker.broker.protocol.primitives import encode_uvarint
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.toolkit.zookeeper import ZooKeeperEndpoint, fresh_chroot

pytestmark = [pytest.mark.robustness, pytest.mark.integration]

INT32_MAX = 0x7FFFFFFF
TOPIC = 2  # ConfigResource.Type.TOPIC

# ---------------------------------------------------------------------------------------
# A broker in a child process, for the bugs that freeze (and bloat) the whole process
# ---------------------------------------------------------------------------------------

_ADDRESS_SPACE_CAP = 3 << 30  # a runaway assignment fails with MemoryError, not the machine


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_ADDRESS_SPACE_CAP, _ADDRESS_SPACE_CAP))


@pytest.fixture
def broker_process(zk_test_zookeeper: ZooKeeperEndpoint) -> Iterator[tuple[str, int]]:
    """`zkbroker run`, 3 brokers emulating 3.9, in a child process killed after the test."""
    command = [
        sys.executable,
        "-c",
        "import sys; from zkbroker.broker.cli.main import main; sys.exit(main())",
        "run",
        "--brokers", "3",
        "--port", "0",
        "--zookeeper", fresh_chroot(zk_test_zookeeper.connect_string),
        "--kafka-version", "3.9",
        "--log-level", "warning",
    ]  # fmt: skip
    child = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=_cap_memory,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert child.stdout is not None
        bootstrap = ""
        for line in child.stdout:
            if line.startswith("bootstrap_servers="):
                bootstrap = line.strip().split("=", 1)[1]
                break
        assert bootstrap, "zkbroker run printed no bootstrap_servers"
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        yield host, int(port)
    finally:
        child.kill()
        child.wait(30)


def _answered_without_stalling(
    host: str, port: int, api_key: int, version: int, body: object, window_s: float = 2.0
) -> object:
    """Send `body`, then probe the broker with Metadata on another connection for
    `window_s`: every probe must be answered within 1 s. Then the answer to `body`."""
    with FrameConn(host, port, timeout=30) as conn:
        conn.send(frame_of(api_key, version, body, 7, "known-bug"))
        health = HealthMonitor(host, port)
        deadline = time.monotonic() + window_s
        while time.monotonic() < deadline:
            try:
                latency = health.check_now()
            except TimeoutError:
                latency = float("inf")
            assert latency <= HEALTH_LIMIT_S, f"health Metadata waited {latency:.2f} s"
            time.sleep(0.05)
        correlation, answer = decode_response(api_key, version, conn.recv_frame())
        assert correlation == 7
        return answer


def test_illegal_name_with_huge_partition_count_is_answered_at_once(
    broker_process: tuple[str, int],
) -> None:
    topic = CreatableTopic(name="bad name!", num_partitions=INT32_MAX, replication_factor=1)
    request = CreateTopicsRequest(topics=[topic], timeout_ms=5_000, validate_only=True)
    answer = _answered_without_stalling(*broker_process, 19, 7, request)
    assert answer.topics[0].error_code == error_codes.INVALID_TOPIC_EXCEPTION  # type: ignore[attr-defined]


def test_huge_partition_count_is_refused_without_stalling(
    broker_process: tuple[str, int],
) -> None:
    topic = CreatableTopic(name="fuzz-huge", num_partitions=INT32_MAX, replication_factor=1)
    request = CreateTopicsRequest(topics=[topic], timeout_ms=5_000, validate_only=True)
    answer = _answered_without_stalling(*broker_process, 19, 7, request)
    assert answer.topics[0].error_code != error_codes.NONE  # type: ignore[attr-defined]


def _health_holds(host: str, port: int, window_s: float) -> None:
    """Probe with Metadata on fresh connections for `window_s`: each within 1 s."""
    health = HealthMonitor(host, port)
    deadline = time.monotonic() + window_s
    while time.monotonic() < deadline:
        try:
            latency = health.check_now()
        except TimeoutError:
            latency = float("inf")
        assert latency <= HEALTH_LIMIT_S, f"health Metadata waited {latency:.2f} s"
        time.sleep(0.05)


def test_growing_a_topic_to_46335_partitions_holds_no_one(
    broker_process: tuple[str, int],
) -> None:
    host, port = broker_process
    with WireClient(host, port) as client:
        topic = CreatableTopic(name="grow", num_partitions=2, replication_factor=2)
        created = client.request(5, CreateTopicsRequest(topics=[topic], timeout_ms=10_000))
        assert created.topics[0].error_code == error_codes.NONE
        grow = CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name="grow", count=46_335, assignments=None)],
            timeout_ms=0,
        )
        answer = client.request(3, grow)
        # timeout_ms=0: the write is accepted and the answer does not wait (Kafka's
        # REQUEST_TIMED_OUT); the controller now brings the partitions online.
        assert answer.results[0].error_code in (error_codes.NONE, error_codes.REQUEST_TIMED_OUT)
    _health_holds(host, port, window_s=10.0)


# ---------------------------------------------------------------------------------------
# #4: strings over 32,767 bytes
# ---------------------------------------------------------------------------------------

_MARK = "M" * 100
LONG_STRING_BYTES = 40_000


def _with_long_string(api_key: int, version: int, body: object) -> bytes:
    """The frame of `body` (flexible `version`) with its one `_MARK` string made
    `LONG_STRING_BYTES` long: a compact string the codec itself refuses to write."""
    header = RequestHeader(api_key=api_key, api_version=version, correlation_id=9, client_id="x")
    payload = encode_request(header, body)
    short = encode_uvarint(len(_MARK) + 1) + _MARK.encode()
    assert payload.count(short) == 1
    long_ = encode_uvarint(LONG_STRING_BYTES + 1) + b"M" * LONG_STRING_BYTES
    payload = payload.replace(short, long_)
    return len(payload).to_bytes(4, "big") + payload


def test_config_value_over_32767_bytes_closes_the_connection(
    fuzz_cluster: Cluster, log_watch: LogWatch
) -> None:
    config = CreatableTopicConfig(name="cleanup.policy", value=_MARK)
    topic = CreatableTopic(
        name="long-value", num_partitions=1, replication_factor=1, configs=[config]
    )
    request = CreateTopicsRequest(topics=[topic], timeout_ms=1_000, validate_only=True)
    with FrameConn(*target(fuzz_cluster)) as conn:
        conn.send(_with_long_string(19, 7, request))
        assert conn.closed_by_peer()
    assert log_watch.take() == []


def test_topic_name_over_32767_bytes_closes_the_connection(
    fuzz_cluster: Cluster, log_watch: LogWatch
) -> None:
    request = MetadataRequest(topics=[MetadataRequestTopic(name=_MARK)])
    with FrameConn(*target(fuzz_cluster)) as conn:
        conn.send(_with_long_string(3, 12, request))
        assert conn.closed_by_peer()
    # Closed by the parser, not by an exception while answering.
    assert log_watch.take() == []


# ---------------------------------------------------------------------------------------
# #3: admission limits
# ---------------------------------------------------------------------------------------


def _api_versions_answered(conn: FrameConn) -> bool:
    from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest

    try:
        conn.send(frame_of(18, 0, ApiVersionsRequest(), 1, "limits"))
        decode_response(18, 0, conn.recv_frame())
        return True
    except (Closed, OSError):
        return False


def test_max_connections_per_ip_closes_the_connection_over_the_limit(
    zk_cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = zk_cluster_factory(
        brokers=1, kafka_version="3.9", broker_configs=(("max.connections.per.ip", "3"),)
    )
    broker = cluster.brokers[0]
    conns = [FrameConn(broker.host, broker.port, timeout=10) for _ in range(4)]
    try:
        assert [_api_versions_answered(c) for c in conns[:3]] == [True, True, True]
        # Kafka's acceptor closes a connection over the per-IP quota at once.
        assert not _api_versions_answered(conns[3])
    finally:
        for c in conns:
            c.close()


def test_idle_connection_is_closed_after_connections_max_idle_ms(
    zk_cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = zk_cluster_factory(
        brokers=1, kafka_version="3.9", broker_configs=(("connections.max.idle.ms", "300"),)
    )
    broker = cluster.brokers[0]
    with FrameConn(broker.host, broker.port, timeout=10) as conn:
        assert _api_versions_answered(conn)
        # Kafka's selector closes it once idle for longer than 300 ms; 10 s is the wait.
        assert conn.closed_by_peer()


# ---------------------------------------------------------------------------------------
# Found by the probes: topic names that are no znode names
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", ".", ".."])
def test_create_partitions_of_a_name_that_is_no_znode(
    fuzz_cluster: Cluster, log_watch: LogWatch, name: str
) -> None:
    request = CreatePartitionsRequest(
        topics=[
            # Null assignments: automatic placement (an empty list would be "0 assignments
            # provided", INVALID_REPLICA_ASSIGNMENT, as in Kafka).
            CreatePartitionsTopic(name=name, count=3, assignments=None),
            CreatePartitionsTopic(name=FUZZ_TOPIC, count=3, assignments=None),
        ],
        timeout_ms=1_000,
        validate_only=True,
    )
    with WireClient(*target(fuzz_cluster)) as client:
        answer = client.request(0, request)
    codes = {r.name: r.error_code for r in answer.results}
    # Kafka answers per topic: the odd name fails alone, fuzz-t (2 -> 3) validates.
    assert codes[FUZZ_TOPIC] == error_codes.NONE
    # Kafka's ZooKeeper client refuses the path: UNKNOWN_SERVER_ERROR, null message.
    assert codes[name] == error_codes.UNKNOWN_SERVER_ERROR
    assert log_watch.take() == []


@pytest.mark.parametrize("name", [".", ".."])
def test_incremental_alter_configs_of_a_name_that_is_no_znode(
    fuzz_cluster: Cluster, log_watch: LogWatch, name: str
) -> None:
    def resource_(topic: str) -> AlterConfigsResource:
        config = AlterableConfig(name="retention.ms", config_operation=0, value="1000")
        return AlterConfigsResource(resource_type=TOPIC, resource_name=topic, configs=[config])

    request = IncrementalAlterConfigsRequest(
        resources=[resource_(name), resource_(FUZZ_TOPIC)], validate_only=True
    )
    with WireClient(*target(fuzz_cluster)) as client:
        answer = client.request(1, request)
    codes = {r.resource_name: r.error_code for r in answer.responses}
    assert codes[FUZZ_TOPIC] == error_codes.NONE
    # Kafka reads /config/topics/<name> first; its ZooKeeper client refuses the path:
    # UNKNOWN_SERVER_ERROR for this resource alone.
    assert codes[name] == error_codes.UNKNOWN_SERVER_ERROR
    assert log_watch.take() == []
