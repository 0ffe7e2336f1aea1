"""Group coordinator rules that differ by release, over the wire (no client sends these
exchanges on purpose): the pending-sync deadline of 2.8.1 (KAFKA-12890) and a Heartbeat
between JoinGroup and SyncGroup (KAFKA-8386 in 2.3, KAFKA-10134 in 2.7); docs/kafka-behaviour.md
§16, "Rules by release". A kafka-python group at 2.4 shows an ordinary client unaffected.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.describe_groups import DescribeGroupsRequest
from zkbroker.broker.protocol.messages.find_coordinator import FindCoordinatorRequest
from zkbroker.broker.protocol.messages.heartbeat import HeartbeatRequest
from zkbroker.broker.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from zkbroker.broker.protocol.messages.sync_group import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from zkbroker.broker.toolkit.wire import WireClient

FAST = (("group.initial.rebalance.delay.ms", "0"),)


def _one_broker(factory: Callable[..., Cluster], release: tuple[int, ...]) -> WireClient:
    cluster = factory(brokers=1, kafka_version=release, broker_configs=FAST)
    node = cluster.engine.brokers[0]
    client = WireClient(node.host, node.port)
    # The first lookup creates __consumer_offsets and answers COORDINATOR_NOT_AVAILABLE.
    wait_until(
        lambda: client.request(2, FindCoordinatorRequest(key="g")).error_code == ec.NONE,
        timeout=30,
        interval=0.1,
    )
    return client


def _described(client: WireClient) -> tuple[str, list[str]]:
    """Group g's state and member ids, as DescribeGroups tells them."""
    (group,) = client.request(1, DescribeGroupsRequest(groups=["g"])).groups
    assert group.error_code == ec.NONE
    return group.group_state, [m.member_id for m in group.members]


def _join(client: WireClient, rebalance_timeout_ms: int) -> JoinGroupResponse:
    """JoinGroup v5 (KIP-394's two steps): the answer of the join with the handed-out id."""
    request = JoinGroupRequest(
        group_id="g",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=rebalance_timeout_ms,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol("range", b"")],
    )
    first = client.request(5, request)
    assert first.error_code == ec.MEMBER_ID_REQUIRED
    request.member_id = first.member_id
    joined = client.request(5, request)
    assert joined.error_code == ec.NONE and joined.leader == joined.member_id
    return joined


@pytest.mark.parametrize(
    ("release", "sync_error"),
    [
        ((2, 4), ec.NONE),
        ((2, 7), ec.NONE),
        ((2, 8), ec.UNKNOWN_MEMBER_ID),  # 2.8.1+ (a release line is its last patch)
        ((3, 9), ec.UNKNOWN_MEMBER_ID),
    ],
)
def test_leader_sync_after_a_zero_rebalance_timeout(
    cluster_factory: Callable[..., Cluster], release: tuple[int, ...], sync_error: int
) -> None:
    with _one_broker(cluster_factory, release) as client:
        joined = _join(client, rebalance_timeout_ms=0)
        if sync_error == ec.UNKNOWN_MEMBER_ID:
            # Kafka's expired DelayedSync fires on its own timer thread: the member that did
            # not sync within the (zero) rebalance timeout is removed.
            wait_until(lambda: joined.member_id not in _described(client)[1])
        else:
            # A negative check: before 2.8.1 there is no such deadline, so nothing happens to
            # wait for. The window is far past the zero timeout that removes the member at
            # 2.8.1+ within a loop iteration (the case above); the member is still there.
            time.sleep(0.5)
            assert _described(client) == ("CompletingRebalance", [joined.member_id])
        synced = client.request(
            3,
            SyncGroupRequest(
                group_id="g",
                generation_id=joined.generation_id,
                member_id=joined.member_id,
                assignments=[SyncGroupRequestAssignment(joined.member_id, b"a")],
            ),
        )
        assert synced.error_code == sync_error
        if sync_error == ec.NONE:
            assert synced.assignment == b"a"


@pytest.mark.parametrize(
    ("release", "heartbeat_error", "stale_generation_error"),
    [
        ((2, 2), ec.REBALANCE_IN_PROGRESS, ec.REBALANCE_IN_PROGRESS),
        ((2, 6), ec.REBALANCE_IN_PROGRESS, ec.ILLEGAL_GENERATION),
        ((2, 7), ec.NONE, ec.ILLEGAL_GENERATION),
    ],
)
def test_heartbeat_before_sync_group(
    cluster_factory: Callable[..., Cluster],
    release: tuple[int, ...],
    heartbeat_error: int,
    stale_generation_error: int,
) -> None:
    with _one_broker(cluster_factory, release) as client:
        # JoinGroup v4 exists from 2.2; the group now awaits the leader's SyncGroup.
        request = JoinGroupRequest(
            group_id="g",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=30_000,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol("range", b"")],
        )
        request.member_id = client.request(4, request).member_id
        joined = client.request(4, request)
        assert joined.error_code == ec.NONE

        def beat(generation: int) -> int:
            body = HeartbeatRequest(
                group_id="g", generation_id=generation, member_id=joined.member_id
            )
            return int(client.request(2, body).error_code)

        assert beat(joined.generation_id) == heartbeat_error
        assert beat(joined.generation_id + 5) == stale_generation_error


@pytest.mark.kafka_version("2.4")
def test_kafka_python_group_at_2_4(cluster: Cluster) -> None:
    bootstrap = cluster.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("t", 2, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(4):
        producer.send("t", b"v%d" % i, partition=i % 2)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        "t",
        bootstrap_servers=bootstrap,
        group_id="kp",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        seen = []
        deadline = time.monotonic() + 60
        while len(seen) < 4 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                seen.extend(r.value for r in records)
        assert sorted(seen) == [b"v0", b"v1", b"v2", b"v3"]
        consumer.commit()
    finally:
        consumer.close()
