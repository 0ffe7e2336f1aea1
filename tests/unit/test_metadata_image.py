"""The metadata image's rules, without ZooKeeper (pure)."""

from __future__ import annotations

import asyncio
import uuid

from broker.image.metadata_image import MetadataImage
from zk_layout import PartitionState, TopicAssignment

TOPIC_ID = uuid.UUID("a7ddb4bc-2aea-4242-a958-16cd1b68f566")


def assignment(**kwargs: object) -> TopicAssignment:
    return TopicAssignment(
        partitions={0: (0, 1), 1: (1, 0)}, adding={}, removing={}, topic_id=TOPIC_ID, **kwargs
    )


def state(leader: int) -> PartitionState:
    return PartitionState(leader=leader, leader_epoch=0, isr=(0, 1), controller_epoch=1)


def test_topic_is_visible_once_a_partition_state_exists() -> None:
    image = MetadataImage()
    image.put_assignment("t", assignment())
    assert not image.topics["t"].visible and image.visible_topics() == []
    image.put_partition_state("t", 0, state(0))
    topic = image.topics["t"]
    assert topic.visible and not topic.all_partitions_led
    assert list(topic.partitions) == [0]
    image.put_partition_state("t", 1, state(1))
    assert image.topics["t"].all_partitions_led
    image.put_partition_state("t", 1, state(-1))
    assert not image.topics["t"].all_partitions_led


def test_topics_being_deleted_are_not_listed() -> None:
    image = MetadataImage()
    image.put_assignment("t", assignment())
    image.put_partition_state("t", 0, state(0))
    image.set_topics_being_deleted(frozenset({"t"}))
    assert image.visible_topics() == []


def test_topic_id_index_follows_assignment_changes() -> None:
    image = MetadataImage()
    image.put_assignment("t", assignment())
    found = image.topic_by_id(TOPIC_ID)
    assert found is not None and found.name == "t"
    image.remove_topic("t")
    assert image.topic_by_id(TOPIC_ID) is None
    # State for a topic the image no longer knows is ignored.
    image.put_partition_state("t", 0, state(0))
    assert "t" not in image.topics


def test_wait_for_wakes_on_change_and_times_out() -> None:
    async def scenario() -> tuple[bool, bool]:
        image = MetadataImage()
        waiter = asyncio.create_task(image.wait_for(lambda i: i.controller_id == 2, 5))
        await asyncio.sleep(0)
        image.set_controller(1)
        image.set_controller(2)
        reached = await waiter
        timed_out = await image.wait_for(lambda i: i.controller_id == 9, 0.05)
        return reached, timed_out

    assert asyncio.run(scenario()) == (True, False)
