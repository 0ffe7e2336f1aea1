"""DeleteGroups against offsets pending in a transaction, with real clients (Kafka 3.9's
``GroupCoordinator.handleDeleteGroups``: an Empty group is deleted whatever offsets its
transactions hold pending, and they go with it; docs/kafka-behaviour.md §17).

A transactional producer sends a group's offsets (the group is Empty: no member joined), the
group is deleted before the transaction commits, and after the commit the group has no offsets:
the marker found no group to complete them in.
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.helpers import wait_visible
from zkbroker import Cluster

CONFIGS = (("transaction.state.log.num.partitions", "1"), ("offsets.topic.num.partitions", "1"))


def test_delete_groups_drops_offsets_pending_in_a_transaction(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(broker_configs=CONFIGS, kafka_version="3.9")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("src", 1, 3)])["src"].result(timeout=30)
    wait_visible(cluster, "src")
    group = "doomed"
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
        }
    )
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "t1"})
    producer.init_transactions(30)
    try:
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            [TopicPartition("src", 0, 17)], consumer.consumer_group_metadata(), 30
        )
        # Empty (no member) with offsets pending: DeleteGroups goes by state and deletes it.
        admin.delete_consumer_groups([group])[group].result(30)
        producer.commit_transaction(30)
        got = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [TopicPartition("src", 0)])]
        )[group].result(30)
        assert got.topic_partitions[0].offset < 0  # no committed offset
    finally:
        consumer.close()
