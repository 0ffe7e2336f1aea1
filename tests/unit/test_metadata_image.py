"""The metadata image's rules, without ZooKeeper (pure)."""

from __future__ import annotations

import asyncio
import uuid

from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.zk_layout import PartitionState, TopicAssignment

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


def _rebuilt(image: MetadataImage, name: str) -> MetadataImage:
    """A fresh image holding `image`'s assignment and states of `name`, built from scratch."""
    fresh = MetadataImage()
    fresh.put_assignment(name, image._assignments[name])
    for partition, partition_state in image._states[name].items():
        fresh.put_partition_state(name, partition, partition_state)
    return fresh


def test_an_assignment_change_updates_only_what_it_touches() -> None:
    image = MetadataImage()
    image.put_assignment("t", assignment(), zk_version=0)
    image.put_partition_state("t", 0, state(0), 0)
    image.put_partition_state("t", 1, state(1), 0)
    kept = image.topics["t"].partitions[1]
    # Partition 0 moves (replicas and adding), partition 2 is new, partition 1 stays.
    grown = TopicAssignment(
        partitions={0: (2, 0, 1), 1: (1, 0), 2: (2, 1)},
        adding={0: (2,)},
        removing={},
        topic_id=TOPIC_ID,
    )
    image.put_assignment("t", grown, zk_version=1)
    topic = image.topics["t"]
    assert topic.partitions[1] is kept  # untouched partitions are not rebuilt
    assert topic.partitions[0].replicas == (2, 0, 1) and topic.partitions[0].adding == (2,)
    assert 2 not in topic.partitions and dict(topic.assignment) == grown.partitions
    assert topic == _rebuilt(image, "t").topics["t"]
    # Shrinking drops the partitions (and their states) the new assignment lacks.
    image.put_assignment("t", assignment(), zk_version=2)
    assert sorted(image.topics["t"].partitions) == [0, 1]
    assert image.topics["t"].partitions[0].replicas == (0, 1)
    assert image.topics["t"].partitions[0].adding == ()
    assert image.topics["t"] == _rebuilt(image, "t").topics["t"]


def test_an_assignment_already_applied_changes_nothing() -> None:
    image = MetadataImage()
    image.put_assignment("t", assignment(), zk_version=3)
    image.put_partition_state("t", 0, state(0), 0)
    topic, version = image.topics["t"], image.version
    # The controller published version 3; the watch delivers it again (decoded anew).
    image.put_assignment("t", assignment(), zk_version=3)
    image.put_assignment("t", assignment(), zk_version=2)  # and an older one
    assert image.topics["t"] is topic and image.version == version


def test_an_absent_state_read_after_the_published_state_is_stale() -> None:
    """Regression (CI, stop 47): the watcher's first read of a new partition's state znode,
    sent before the controller created it, arrived after the controller had published the
    state; the image dropped the partition and a Produce got UNKNOWN_TOPIC_OR_PARTITION."""
    image = MetadataImage()
    image.put_assignment("t", assignment(), zk_version=0)
    image.put_partition_state("t", 0, state(0), 0)
    image.put_partition_state("t", 0, None)
    assert image.topics["t"].partitions[0].leader == 0
    # Before any state is known, an absent read leaves the partition unled, as before.
    image.put_partition_state("t", 1, None)
    assert 1 not in image.topics["t"].partitions


def test_a_topic_created_again_under_its_name_is_a_new_topic() -> None:
    """Deleted and created again between two children reads: the new topic's znode versions
    start at 0 again and must not lose to the old topic's."""
    image = MetadataImage()
    image.put_assignment("t", assignment(), zk_version=4)
    image.put_partition_state("t", 0, state(0), 7)
    new_id = uuid.UUID("0f3b8b0e-54c4-4a1f-9d0e-7a4a8c3e2b11")
    image.put_assignment(
        "t", TopicAssignment(partitions={0: (1,)}, adding={}, removing={}, topic_id=new_id), 0
    )
    assert image.topic_by_id(TOPIC_ID) is None
    assert not image.topics["t"].visible  # the old topic's state is gone with it
    image.put_partition_state("t", 0, state(1), 0)
    assert image.topics["t"].partitions[0].leader == 1
    assert image.topic_by_id(new_id) is not None
