"""The metadata image: what this process knows of the cluster, as read from ZooKeeper.

One `MetadataImage` per process serves all of its brokers (Kafka keeps a metadata cache per
broker fed by UpdateMetadata; here every broker sees the same ZooKeeper). Handlers only read it
and may `wait_for` a state (how CreateTopics-style requests wait for results). A partition is
visible only once its state znode exists, as Kafka's cache learns of it from the UpdateMetadata
that follows the state write (docs/kafka-behaviour.md §10.2).

Partition records are immutable, but a topic's `partitions` mapping is updated in place (a new
`TopicImage` shares it), so an update costs O(1) whatever the topic's size; an assignment
delivered again at the version already applied changes nothing. Handlers read a topic's
partitions without awaiting in between, so they see one version of them.

Not here: ZooKeeper access (`metadata_watcher`), writes (they go to ZooKeeper and come back).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import cast

from zkbroker.broker.asyncutil import wait_for
from zkbroker.broker.image.topic_configs import TopicConfigCache
from zkbroker.broker.security.quotas import ClientQuotaConfigs
from zkbroker.zk_layout import BrokerInfo, PartitionState, TopicAssignment

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


@dataclass(frozen=True, slots=True)
class PartitionImage:
    """One partition as a client sees it: assignment joined with its leader state."""

    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @classmethod
    def of(
        cls,
        partition: int,
        replicas: tuple[int, ...] | list[int],
        state: PartitionState,
        assignment: TopicAssignment,
    ) -> PartitionImage:
        """The partition's assignment joined with its state znode."""
        return cls(
            partition=partition,
            replicas=tuple(replicas),
            isr=tuple(state.isr),
            leader=state.leader,
            leader_epoch=state.leader_epoch,
            adding=tuple(assignment.adding.get(partition, ())),
            removing=tuple(assignment.removing.get(partition, ())),
        )


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID | None
    # Every partition of the assignment, visible or not.
    assignment: Mapping[int, tuple[int, ...]]
    # Only partitions whose state znode has been read.
    partitions: Mapping[int, PartitionImage]

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    @property
    def visible(self) -> bool:
        return bool(self.partitions)

    @property
    def all_partitions_led(self) -> bool:
        """Every assigned partition has state with a leader (CreateTopics' completion test)."""
        return len(self.partitions) == len(self.assignment) and all(
            p.leader >= 0 for p in self.partitions.values()
        )


@dataclass
class MetadataImage:
    """Mutable holder of the current cluster view; mutated only by the metadata watcher."""

    cluster_id: str | None = None
    controller_id: int = -1
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicImage] = field(default_factory=dict)
    topics_being_deleted: frozenset[str] = frozenset()
    # From /feature when feature versioning is enabled there (KIP-584); -1 = unknown.
    finalized_features_epoch: int = -1
    finalized_features: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Dynamic broker configs as last read from /config/brokers/<entity> ("<default>" or an
    # id), unvalidated: each broker applies Kafka's dynamic-config rules to its own view.
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    broker_configs_version: int = 0
    # Topic overrides as the data plane applies them (read on demand, dropped on change).
    topic_configs: TopicConfigCache = field(default_factory=TopicConfigCache, repr=False)
    # Client quota values per user/client entity (zkbroker.broker.image.config_watcher keeps them).
    client_quotas: ClientQuotaConfigs = field(default_factory=ClientQuotaConfigs, repr=False)
    version: int = 0
    _assignments: dict[str, TopicAssignment] = field(default_factory=dict, repr=False)
    _names_by_id: dict[uuid.UUID, str] = field(default_factory=dict, repr=False)
    _states: dict[str, dict[int, PartitionState]] = field(default_factory=dict, repr=False)
    # ZooKeeper data versions of what the image holds, so an older delivery (a watch that
    # lags the controller's direct update) never overwrites a newer one.
    _assignment_versions: dict[str, int] = field(default_factory=dict, repr=False)
    _state_versions: dict[tuple[str, int], int] = field(default_factory=dict, repr=False)
    _changed: asyncio.Event | None = field(default=None, repr=False)
    _next_change: asyncio.Future[None] | None = field(default=None, repr=False)
    # Told (topic, partition) of every partition whose image changed or went: the replica
    # managers' LeaderAndIsr (Kafka's brokers learn leadership per partition).
    _partition_listeners: list[Callable[[str, int], None]] = field(default_factory=list, repr=False)

    # ---- reads -------------------------------------------------------------------------

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicImage | None:
        name = self._names_by_id.get(topic_id)
        return self.topics.get(name) if name is not None else None

    def listed_topic(self, name: str) -> TopicImage | None:
        """The topic as clients see it: None until it has leader state, or once deleting."""
        topic = self.topics.get(name)
        if topic is None or not topic.visible or name in self.topics_being_deleted:
            return None
        return topic

    def visible_topics(self) -> list[TopicImage]:
        """Topics a Metadata request for all topics lists, in name order."""
        return [t for name, t in sorted(self.topics.items()) if self.listed_topic(name)]

    def is_alive(self, broker_id: int) -> bool:
        return broker_id in self.brokers

    async def wait_for(self, predicate: Callable[[MetadataImage], bool], timeout: float) -> bool:
        """Wait until `predicate(self)` holds; False if `timeout` seconds pass first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate(self):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            event = self._event()
            try:
                await wait_for(event.wait(), remaining)
            except TimeoutError:
                return predicate(self)
        return True

    def next_change(self) -> asyncio.Future[None]:
        """A future that is done at the image's next change. Every caller until then gets the
        same one: give it to `asyncio.wait` (which never cancels what it waits for), never
        await or cancel it directly."""
        future = self._next_change
        if future is None or future.done():
            future = self._next_change = asyncio.get_running_loop().create_future()
        return future

    def add_partition_listener(self, listener: Callable[[str, int], None]) -> None:
        """Call `listener(topic, partition)` after each change of a partition's image (its
        state, replicas, or its going with its topic), on the loop, without awaiting."""
        self._partition_listeners.append(listener)

    def remove_partition_listener(self, listener: Callable[[str, int], None]) -> None:
        if listener in self._partition_listeners:
            self._partition_listeners.remove(listener)

    def partition_state(self, name: str, partition: int) -> tuple[PartitionState, int] | None:
        """The partition's state znode as last read, with its version (-1 when unknown)."""
        state = self._states.get(name, {}).get(partition)
        if state is None:
            return None
        return state, self._state_versions.get((name, partition), -1)

    def _partitions_changed(self, name: str, partitions: Iterable[int]) -> None:
        for listener in list(self._partition_listeners):
            for p in partitions:
                listener(name, p)

    # ---- writes (the metadata watcher only) ----------------------------------------------

    def set_cluster_id(self, cluster_id: str | None) -> None:
        self.cluster_id = cluster_id
        self._bump()

    def set_controller(self, controller_id: int) -> None:
        self.controller_id = controller_id
        self._bump()

    def set_finalized_features(self, epoch: int, features: dict[str, tuple[int, int]]) -> None:
        self.finalized_features_epoch = epoch
        self.finalized_features = features
        self._bump()

    def set_broker_config(self, entity: str, configs: Mapping[str, str]) -> None:
        if self.broker_configs.get(entity, {}) == configs:
            return
        if configs:
            self.broker_configs[entity] = dict(configs)
        else:
            self.broker_configs.pop(entity, None)
        self.broker_configs_version += 1
        self._bump()

    def put_broker(self, info: BrokerInfo) -> None:
        self.brokers[info.broker_id] = info
        self._bump()

    def remove_broker(self, broker_id: int) -> None:
        if self.brokers.pop(broker_id, None) is not None:
            self._bump()

    def set_topics_being_deleted(self, names: frozenset[str]) -> None:
        self.topics_being_deleted = names
        self._bump()

    def put_assignment(self, name: str, assignment: TopicAssignment, zk_version: int = -1) -> None:
        previous = self._assignments.get(name)
        if (
            previous is not None
            and assignment.topic_id is not None
            and previous.topic_id not in (None, assignment.topic_id)
        ):
            # Deleted and created again while the children watch saw no gap: a new topic, whose
            # znode versions start again at 0, so the old topic's versions must not outrank it.
            self.remove_topic(name)
        if zk_version >= 0:
            known = self._assignment_versions.get(name, -1)
            if zk_version < known:
                return
            if zk_version == known and name in self.topics:
                return  # already applied (published by the controller, then watched)
            self._assignment_versions[name] = zk_version
        previous = self._assignments.get(name)
        if previous is not None and previous.topic_id is not None:
            self._names_by_id.pop(previous.topic_id, None)
        if assignment.topic_id is not None:
            self._names_by_id[assignment.topic_id] = name
        self._assignments[name] = assignment
        states = self._states.setdefault(name, {})
        for stale in states.keys() - assignment.partitions.keys():
            del states[stale]
        if previous is None or name not in self.topics:
            self._rebuild(name)
        else:
            self._update_topic(name, previous, assignment)

    def remove_topic(self, name: str) -> None:
        self.topic_configs.invalidate(name)
        self._assignment_versions.pop(name, None)
        for key in [k for k in self._state_versions if k[0] == name]:
            del self._state_versions[key]
        removed = self._assignments.pop(name, None)
        if removed is not None and removed.topic_id is not None:
            self._names_by_id.pop(removed.topic_id, None)
        if removed is not None:
            self._partitions_changed(name, list(removed.partitions))
        self._states.pop(name, None)
        if self.topics.pop(name, None) is not None:
            self._bump()

    def put_partition_state(
        self, name: str, partition: int, state: PartitionState | None, zk_version: int = -1
    ) -> None:
        if name not in self._assignments:
            return
        key = (name, partition)
        states = self._states.setdefault(name, {})
        if state is None:
            if key in self._state_versions:
                # A state znode goes only with its topic (`remove_topic`), so an absent read of
                # one whose state is known is stale: a watch's first read, sent before the
                # controller created the znode and delivered after it published the state.
                return
            states.pop(partition, None)
        else:
            if zk_version >= 0:
                if zk_version < self._state_versions.get(key, -1):
                    return
                if zk_version == self._state_versions.get(key) and partition in states:
                    return  # already applied (published by the controller, then watched)
                self._state_versions[key] = zk_version
            states[partition] = state
        self._put_partition(name, partition)

    # ---- internals ---------------------------------------------------------------------

    def _put_partition(self, name: str, partition: int) -> None:
        """Apply one partition's state to its topic's image in O(1): a topic of 20,000
        partitions gets 20,000 state updates, and rebuilding the whole topic for each one
        stalled the loop for minutes. The partitions mapping is updated in place (readers run
        on the same loop and never hold it across an await)."""
        topic = self.topics.get(name)
        replicas = self._assignments[name].partitions.get(partition)
        if topic is None or replicas is None:
            self._rebuild(name)
            return
        partitions = cast(dict[int, PartitionImage], topic.partitions)
        state = self._states.get(name, {}).get(partition)
        if state is None:
            partitions.pop(partition, None)
        else:
            assignment = self._assignments[name]
            partitions[partition] = PartitionImage.of(partition, replicas, state, assignment)
        self._bump()
        self._partitions_changed(name, (partition,))

    def _update_topic(
        self, name: str, previous: TopicAssignment, assignment: TopicAssignment
    ) -> None:
        """Apply a new assignment to the topic's image, rebuilding only the partitions whose
        replicas, adding or removing replicas changed (growing a topic to 46,335 partitions
        must not rebuild 46,335 partition images per change). The comparisons run on dict
        views, in C; the partitions mapping is updated in place, as in `_put_partition`."""
        topic = self.topics[name]
        changed = {p for p, _ in assignment.partitions.items() - previous.partitions.items()}
        for table, before in (
            (assignment.adding, previous.adding),
            (assignment.removing, previous.removing),
        ):
            changed.update(p for p, _ in table.items() ^ before.items())
        partitions = cast(dict[int, PartitionImage], topic.partitions)
        gone = partitions.keys() - assignment.partitions.keys()
        for p in gone:
            del partitions[p]
        changed |= gone
        states = self._states.get(name, {})
        for p in sorted(changed):
            replicas = assignment.partitions.get(p)
            state = states.get(p)
            if replicas is None or state is None:
                partitions.pop(p, None)
                continue
            partitions[p] = PartitionImage.of(p, replicas, state, assignment)
        self.topics[name] = TopicImage(
            name=name,
            topic_id=assignment.topic_id,
            assignment=dict(assignment.partitions),
            partitions=partitions,
        )
        self._bump()
        self._partitions_changed(name, sorted(changed))

    def _rebuild(self, name: str) -> None:
        assignment = self._assignments[name]
        states = self._states.get(name, {})
        partitions: dict[int, PartitionImage] = {}
        for p, replicas in sorted(assignment.partitions.items()):
            state = states.get(p)
            if state is None:
                continue
            partitions[p] = PartitionImage.of(p, replicas, state, assignment)
        self.topics[name] = TopicImage(
            name=name,
            topic_id=assignment.topic_id,
            assignment={p: tuple(r) for p, r in assignment.partitions.items()},
            partitions=partitions,
        )
        self._bump()
        self._partitions_changed(name, list(assignment.partitions))

    def _event(self) -> asyncio.Event:
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def _bump(self) -> None:
        self.version += 1
        future, self._next_change = self._next_change, None
        if future is not None and not future.done():
            future.set_result(None)
        if self._changed is not None:
            # Wake every waiter once; each re-checks its predicate and waits on a new event.
            self._changed.set()
            self._changed = None
