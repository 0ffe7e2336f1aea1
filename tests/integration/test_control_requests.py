"""LeaderAndIsr, StopReplica, UpdateMetadata and Envelope sent over TCP to a broker of a real
cluster on a real ZooKeeper, as a ZooKeeper-mode Kafka broker answers them from any sender
(docs/kafka-behaviour.md §20): stale controller and broker epochs, per-partition leader epoch
decisions against what the controller wrote, the applied effect in the broker's logs, and
Envelope closing the connection. Wire requests: only a controller sends these."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Producer
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until
from tests.integration.test_controller import create_topic, state
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.envelope import EnvelopeRequest
from zkbroker.broker.protocol.messages.leader_and_isr import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
)
from zkbroker.broker.protocol.messages.stop_replica import (
    StopReplicaPartitionState,
    StopReplicaPartitionV0,
    StopReplicaRequest,
    StopReplicaTopicState,
    StopReplicaTopicV1,
)
from zkbroker.broker.protocol.messages.update_metadata import UpdateMetadataRequest
from zkbroker.broker.toolkit.wire import WireClient

BROKER = 1


def client_of(cluster: Cluster, broker_id: int = BROKER) -> WireClient:
    node = cluster.engine.brokers[broker_id]
    return WireClient(node.host, node.port)


def epochs(kazoo: KazooClient, broker_id: int = BROKER) -> tuple[int, int]:
    controller_epoch = int(kazoo.get("/controller_epoch")[0])
    return controller_epoch, int(kazoo.get(f"/brokers/ids/{broker_id}")[1].czxid)


def produce_one(cluster: Cluster, topic: str) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    producer.produce(topic, b"v")
    assert producer.flush(15) == 0


def lai(
    version: int,
    controller_epoch: int,
    broker_epoch: int,
    parts: list[tuple[str, int, int]],
    topic_ids: dict[str, uuid.UUID] | None = None,
) -> LeaderAndIsrRequest:
    states = [
        LeaderAndIsrPartitionState(
            topic_name=t,
            partition_index=p,
            controller_epoch=controller_epoch,
            leader=BROKER,
            leader_epoch=e,
            isr=[BROKER],
            replicas=[BROKER] if t != "elsewhere" else [0],
        )
        for t, p, e in parts
    ]
    request = LeaderAndIsrRequest(
        controller_id=0, controller_epoch=controller_epoch, broker_epoch=broker_epoch
    )
    if version < 2:
        request.ungrouped_partition_states = states
    else:
        for name in dict.fromkeys(t for t, _, _ in parts):
            request.topic_states.append(
                LeaderAndIsrTopicState(
                    topic_name=name,
                    topic_id=(topic_ids or {}).get(name, uuid.UUID(int=0)),
                    partition_states=[s for s in states if s.topic_name == name],
                )
            )
    return request


def lai_errors(version: int, response: Any) -> dict[tuple[str, int], int]:
    if version < 5:
        return {(e.topic_name, e.partition_index): e.error_code for e in response.partition_errors}
    ids = {t.topic_id for t in response.topics}
    assert len(ids) == len(response.topics)
    return {
        (str(t.topic_id), e.partition_index): e.error_code
        for t in response.topics
        for e in t.partition_errors
    }


def test_leader_and_isr(cluster: Cluster, kazoo: KazooClient) -> None:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    create_topic(cluster, "lai", {0: [BROKER], 1: [BROKER]})
    produce_one(cluster, "lai")
    logs = cluster.engine.brokers[BROKER].logs
    wait_until(lambda: logs.get("lai", 0) is not None or logs.get("lai", 1) is not None)
    hosted = 0 if logs.get("lai", 0) is not None else 1
    held = state(kazoo, "lai", hosted)["leader_epoch"]
    cepoch, bepoch = epochs(kazoo)
    with client_of(cluster) as client:
        for version in range(0, 5):
            # Stale controller epoch: every partition, and the top level.
            answer = client.request(version, lai(version, cepoch - 1, bepoch, [("lai", hosted, 9)]))
            assert answer.error_code == ec.STALE_CONTROLLER_EPOCH
            assert set(lai_errors(version, answer).values()) == {ec.STALE_CONTROLLER_EPOCH}
            answer = client.request(
                version,
                lai(
                    version,
                    cepoch,
                    bepoch,
                    [
                        ("lai", hosted, held - 1 if held > 0 else held),  # not newer
                        ("new-here", 0, 0),  # not hosted, names this broker: applied
                        ("elsewhere", 0, 3),  # not hosted, not among the replicas
                    ],
                ),
            )
            assert answer.error_code == ec.NONE
            assert lai_errors(version, answer) == {
                ("lai", hosted): ec.STALE_CONTROLLER_EPOCH,
                ("new-here", 0): ec.NONE,
                ("elsewhere", 0): ec.UNKNOWN_TOPIC_OR_PARTITION,
            }
            if version >= 2:  # KIP-380 broker epoch
                answer = client.request(
                    version, lai(version, cepoch, bepoch - 1, [("lai", hosted, 9)])
                )
                assert answer.error_code == ec.STALE_BROKER_EPOCH
                assert set(lai_errors(version, answer).values()) == {ec.STALE_BROKER_EPOCH}
                # A newer broker epoch is accepted (the controller may know it first).
                answer = client.request(
                    version, lai(version, cepoch, bepoch + 1, [("lai", hosted, held)])
                )
                assert lai_errors(version, answer) == {("lai", hosted): ec.STALE_CONTROLLER_EPOCH}
        # Applied: the partition's log now exists on this broker.
        assert logs.get("new-here", 0) is not None
        # v5 (2.8): answers grouped by topic id; another id than the log's is inconsistent.
        hosted_log = logs.get("lai", hosted)
        assert hosted_log is not None and hosted_log.topic_id is not None
        log_id = hosted_log.topic_id
        other = uuid.uuid4()
        answer = client.request(
            5, lai(5, cepoch, bepoch, [("lai", hosted, held + 1)], {"lai": other})
        )
        assert lai_errors(5, answer) == {(str(other), hosted): ec.INCONSISTENT_TOPIC_ID}
        answer = client.request(
            5, lai(5, cepoch, bepoch, [("lai", hosted, held + 1)], {"lai": log_id})
        )
        assert lai_errors(5, answer) == {(str(log_id), hosted): ec.NONE}
    # What the controller wrote still rules: ZooKeeper and the leader are unchanged.
    assert state(kazoo, "lai", hosted)["leader_epoch"] == held


def test_stop_replica(cluster: Cluster, kazoo: KazooClient) -> None:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    create_topic(cluster, "sr", {0: [BROKER]})
    produce_one(cluster, "sr")
    logs = cluster.engine.brokers[BROKER].logs
    wait_until(lambda: logs.get("sr", 0) is not None)
    held = state(kazoo, "sr", 0)["leader_epoch"]
    cepoch, bepoch = epochs(kazoo)
    with client_of(cluster) as client:
        answer = client.request(
            0,
            StopReplicaRequest(
                controller_epoch=cepoch - 1,
                delete_partitions=True,
                ungrouped_partitions=[StopReplicaPartitionV0(topic_name="sr", partition_index=0)],
            ),
        )
        assert (answer.error_code, answer.partition_errors) == (ec.STALE_CONTROLLER_EPOCH, [])
        v1 = StopReplicaRequest(
            controller_epoch=cepoch,
            broker_epoch=bepoch - 1,
            delete_partitions=True,
            topics=[StopReplicaTopicV1(name="sr", partition_indexes=[0])],
        )
        answer = client.request(1, v1)
        assert (answer.error_code, answer.partition_errors) == (ec.STALE_BROKER_EPOCH, [])

        def v3(epoch: int, delete: bool) -> StopReplicaRequest:
            return StopReplicaRequest(
                controller_epoch=cepoch,
                broker_epoch=bepoch,
                topic_states=[
                    StopReplicaTopicState(
                        topic_name="sr",
                        partition_states=[
                            StopReplicaPartitionState(
                                partition_index=0, leader_epoch=epoch, delete_partition=delete
                            )
                        ],
                    )
                ],
            )

        def errors(answer: Any) -> list[tuple[str, int, int]]:
            return [
                (e.topic_name, e.partition_index, e.error_code) for e in answer.partition_errors
            ]

        if held > 0:
            answer = client.request(3, v3(held - 1, True))
            assert errors(answer) == [("sr", 0, ec.FENCED_LEADER_EPOCH)]
        # The topic still exists in ZooKeeper: its log (every replica's copy) stays.
        answer = client.request(3, v3(held, True))
        assert (answer.error_code, errors(answer)) == (ec.NONE, [("sr", 0, ec.NONE)])
        assert logs.get("sr", 0) is not None
        answer = client.request(
            2,
            StopReplicaRequest(
                controller_epoch=cepoch,
                broker_epoch=bepoch,
                delete_partitions=True,
                topics=[StopReplicaTopicV1(name="gone", partition_indexes=[0])],
            ),
        )
        assert errors(answer) == [("gone", 0, ec.NONE)]  # not hosted: nothing to stop
        # A topic ZooKeeper no longer has: deleted as Kafka's topic deletion would.
        logs.get_or_create("orphan", 0, None)
        answer = client.request(
            3,
            StopReplicaRequest(
                controller_epoch=cepoch,
                broker_epoch=bepoch,
                topic_states=[
                    StopReplicaTopicState(
                        topic_name="orphan",
                        partition_states=[
                            StopReplicaPartitionState(
                                partition_index=0, leader_epoch=-2, delete_partition=True
                            )
                        ],
                    )
                ],
            ),
        )
        assert errors(answer) == [("orphan", 0, ec.NONE)]
        assert logs.get("orphan", 0) is None


def test_update_metadata(cluster: Cluster, kazoo: KazooClient) -> None:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    cepoch, bepoch = epochs(kazoo)
    with client_of(cluster) as client:
        for version in range(0, 8):
            stale = client.request(version, UpdateMetadataRequest(controller_epoch=cepoch - 1))
            assert stale.error_code == ec.STALE_CONTROLLER_EPOCH
            ok = client.request(
                version, UpdateMetadataRequest(controller_epoch=cepoch, broker_epoch=bepoch)
            )
            assert ok.error_code == ec.NONE
            old = UpdateMetadataRequest(controller_epoch=cepoch, broker_epoch=bepoch - 1)
            expected = ec.STALE_BROKER_EPOCH if version >= 5 else ec.NONE
            assert client.request(version, old).error_code == expected


def test_envelope_closes_the_connection(cluster_factory: Any) -> None:
    cluster = cluster_factory(kafka_version=(3, 9))
    wait_until(lambda: cluster.engine.controller_id >= 0)
    with client_of(cluster) as client:
        _, data = client.frame(58, 0, EnvelopeRequest(request_data=b"x", client_host_address=b""))
        client.send_raw(data)
        assert client.is_closed_by_peer()
    with client_of(cluster) as client:  # the broker serves the next connection
        assert client.request(0, UpdateMetadataRequest(controller_epoch=0)).error_code in (
            ec.NONE,
            ec.STALE_CONTROLLER_EPOCH,
        )


def test_faults_and_capture_cover_the_keys(cluster: Cluster, kazoo: KazooClient) -> None:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    cluster.capture()
    cepoch, bepoch = epochs(kazoo)
    cluster.faults.push_error("UpdateMetadata", ec.NOT_CONTROLLER)
    cluster.faults.push_error("StopReplica", ec.KAFKA_STORAGE_ERROR)
    with client_of(cluster) as client:
        um = UpdateMetadataRequest(controller_epoch=cepoch, broker_epoch=bepoch)
        assert client.request(7, um).error_code == ec.NOT_CONTROLLER
        assert client.request(7, um).error_code == ec.NONE  # consumed
        sr = StopReplicaRequest(
            controller_epoch=cepoch,
            topics=[StopReplicaTopicV1(name="x", partition_indexes=[0])],
        )
        answer = client.request(1, sr)
        assert answer.error_code == ec.KAFKA_STORAGE_ERROR
        assert [e.error_code for e in answer.partition_errors] == [ec.KAFKA_STORAGE_ERROR]
    seen = cluster.requests(api="UpdateMetadata", broker_id=BROKER)
    assert [(r.api_key, r.version) for r in seen] == [(6, 7), (6, 7)]
    assert [(r.api_key, r.version) for r in cluster.requests(api="StopReplica")] == [(5, 1)]


def test_newer_broker_epoch_before_2_6(cluster_factory: Any, kazoo: KazooClient) -> None:
    # KAFKA-9839 (2.6): 2.2-2.5 threw IllegalStateException for a broker epoch above their own.
    cluster = cluster_factory(kafka_version=(2, 5))
    wait_until(lambda: cluster.engine.controller_id >= 0)
    cepoch, bepoch = epochs(kazoo)
    with client_of(cluster) as client:
        um = UpdateMetadataRequest(controller_epoch=cepoch, broker_epoch=bepoch + 1)
        assert client.request(6, um).error_code == ec.UNKNOWN_SERVER_ERROR
        um.broker_epoch = bepoch
        assert client.request(6, um).error_code == ec.NONE
        answer = client.request(4, lai(4, cepoch, bepoch + 1, [("t", 0, 1)]))
        assert answer.error_code == ec.UNKNOWN_SERVER_ERROR
        assert lai_errors(4, answer) == {("t", 0): ec.UNKNOWN_SERVER_ERROR}
        sr = StopReplicaRequest(
            controller_epoch=cepoch,
            broker_epoch=bepoch + 1,
            topics=[StopReplicaTopicV1(name="t", partition_indexes=[0])],
        )
        answer = client.request(2, sr)
        assert answer.error_code == ec.UNKNOWN_SERVER_ERROR
        assert [e.error_code for e in answer.partition_errors] == [ec.UNKNOWN_SERVER_ERROR]


def test_cluster_action_is_required(cluster_factory: Any, kazoo: KazooClient) -> None:
    # With an authorizer and no ACL, an anonymous sender lacks CLUSTER_ACTION (KafkaApis'
    # authorizeClusterOperation comes before every epoch check).
    authorizer = ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")
    cluster = cluster_factory(kafka_version=(3, 9), broker_configs=(authorizer,))
    wait_until(lambda: cluster.engine.controller_id >= 0)
    cepoch, bepoch = epochs(kazoo)
    denied = ec.CLUSTER_AUTHORIZATION_FAILED
    with client_of(cluster) as client:
        um = UpdateMetadataRequest(controller_epoch=cepoch, broker_epoch=bepoch)
        assert client.request(8, um).error_code == denied
        answer = client.request(7, lai(7, cepoch, bepoch, [("t", 0, 1)]))
        assert answer.error_code == denied
        assert set(lai_errors(7, answer).values()) == {denied}
        sr = StopReplicaRequest(
            controller_epoch=cepoch,
            topic_states=[
                StopReplicaTopicState(
                    topic_name="t", partition_states=[StopReplicaPartitionState(partition_index=0)]
                )
            ],
        )
        answer = client.request(4, sr)
        assert (answer.error_code, [e.error_code for e in answer.partition_errors]) == (
            denied,
            [denied],
        )
