"""A consumer group registered the ZooKeeper (0.8 consumer) way, seen through today's group APIs.

    python examples/zookeeper_registry_group.py

It starts a 1-broker cluster in this process (an embedded ZooKeeper, free ports), writes group
`g1` under `/consumers` in Kafka's old layout with kazoo (a member's registration, the owner of
`topic1`-0 and its committed offset), then lists and describes the group and reads its offset
with confluent-kafka's AdminClient. Against a running cluster, write the same znodes to its
ZooKeeper. The layout and how zkbroker serves it: docs/kafka-behaviour.md §1.11 and §16.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from zkbroker import Cluster


def main() -> int:
    with Cluster(brokers=1, port=0) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("topic1", 1, 1)])["topic1"].result()

        zk = KazooClient(cluster.zookeeper_connect)
        zk.start()
        zk.create(
            "/consumers/g1/ids/c1",
            b'{"version":1,"pattern":"static","subscription":{"topic1":1}}',
            makepath=True,
        )
        zk.create("/consumers/g1/owners/topic1/0", b"c1-0", makepath=True)
        zk.create("/consumers/g1/offsets/topic1/0", b"42", makepath=True)

        for listing in admin.list_consumer_groups().result().valid:
            print("group", listing.group_id, listing.state)  # g1 ConsumerGroupState.STABLE
        group = admin.describe_consumer_groups(["g1"])["g1"].result()
        for member in group.members:  # c1, assigned topic1-0
            print("member", member.member_id, member.assignment.topic_partitions)
        offsets = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions("g1", [TopicPartition("topic1", 0)])]
        )["g1"].result()
        print("offsets", offsets.topic_partitions)  # topic1-0 at 42

        zk.stop()
        del admin  # before the brokers stop, so librdkafka has nothing to complain about
    return 0


if __name__ == "__main__":
    sys.exit(main())
