"""In-flight reassignments with zkbroker's default catch-up (docs/kafka-behaviour.md §7,
§10.4): right after AlterPartitionReassignments a client lists the move, as against Kafka,
and it completes a few hundred milliseconds later; `replica_catchup_ms=0` keeps moves
instant for tests that want speed."""

from __future__ import annotations

import time
from collections.abc import Callable

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from tests.integration.helpers import wait_until
from zkbroker import Cluster


def _moved(cluster: Cluster) -> tuple[KafkaAdminClient, dict[TopicPartition, dict[str, list[int]]]]:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    admin.create_topics([NewTopic("moving", replica_assignments={0: [0, 1]})])
    wait_until(lambda: "moving" in admin.list_topics(), timeout=20)
    result = admin.alter_partition_reassignments({TopicPartition("moving", 0): [2, 1]})
    assert result == {TopicPartition("moving", 0): None}
    return admin, admin.list_partition_reassignments()


def test_default_catch_up_shows_the_move_in_flight(
    cluster_factory: Callable[..., Cluster],
) -> None:
    # None: zkbroker's default (the suite's fixture makes moves instant otherwise).
    cluster = cluster_factory(replica_catchup_ms=None)
    admin, listed = _moved(cluster)
    started = time.monotonic()
    try:
        assert listed == {
            TopicPartition("moving", 0): {
                "replicas": [2, 1, 0],
                "adding_replicas": [2],
                "removing_replicas": [0],
            }
        }
        wait_until(lambda: not admin.list_partition_reassignments(), timeout=10)
        # An empty partition: the 300 ms floor, not much more.
        assert time.monotonic() - started < 5
    finally:
        admin.close()


def test_zero_catch_up_completes_at_once(cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(replica_catchup_ms=0)
    admin, listed = _moved(cluster)
    try:
        assert listed == {}
    finally:
        admin.close()
