"""Keeps the process's `MetadataImage` current from ZooKeeper watches.

Watched through the process's one session: `/brokers/ids` and each registration, `/controller`,
`/cluster/id`, `/feature`, `/brokers/topics` and each assignment, each assigned partition's
`state` (watched before it exists), `/admin/delete_topics` (topics being deleted are hidden).
A new topic's config overrides are read into `TopicConfigCache`, as Kafka loads them with the
topic's logs. Data that does not decode is logged and treated as absent (Kafka's readers skip
it). Per-partition watches start `STATE_WATCH_BATCH` at a time from one task, so a topic grown by
tens of thousands of partitions does not start them in one loop iteration (a late start misses
nothing: its first read delivers the state). A watch ends when its parent no longer lists it.

Not here: writes to ZooKeeper and decisions (the controller's).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

from zkbroker.broker.asyncutil import Pacer, cancel_and_wait
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.zk_layout import ZkStore, ZnodeFormatError
from zkbroker.zk_layout.nodes import (
    BrokerIdNode,
    BrokerIdsNode,
    ClusterIdNode,
    ControllerNode,
    DeleteTopicsNode,
    FeatureNode,
    PartitionStateNode,
    TopicNode,
    TopicsNode,
)
from zkbroker.zk_layout.store import Watch

T = TypeVar("T", covariant=True)

#: Partition-state watches being started at once (each start is a ZooKeeper round trip).
STATE_WATCH_BATCH = 256


class _Decoder(Protocol[T]):
    @classmethod
    def decode_at(cls, data: bytes, *path_args: Any) -> T: ...


class MetadataWatcher:
    def __init__(
        self,
        store: ZkStore,
        image: MetadataImage,
        on_topic_removed: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.image = image
        # Told the name of each topic whose znode went away (its partition logs go with it).
        self._on_topic_removed = on_topic_removed
        self._watches: dict[str, Watch] = {}
        self._starting: set[asyncio.Task[None]] = set()
        self._brokers: set[int] = set()
        self._topics: set[str] = set()
        self._partitions: dict[str, set[int]] = {}
        # Partition-state watches still to start, in order, and the one task starting them.
        self._to_watch: collections.deque[tuple[str, int]] = collections.deque()
        self._state_starter: asyncio.Task[None] | None = None
        self._log = get_logger(__name__)

    async def start(self) -> None:
        await asyncio.gather(
            self._watch_data(ClusterIdNode.path(), self._on_cluster_id),
            self._watch_data(ControllerNode.path(), self._on_controller),
            self._watch_data(FeatureNode.path(), self._on_feature),
            self._watch_children(BrokerIdsNode.path(), self._on_broker_ids),
            self._watch_children(TopicsNode.path(), self._on_topics),
            self._watch_children(DeleteTopicsNode.path(), self._on_delete_topics),
        )

    async def stop(self) -> None:
        """Cancel the watches being started, waiting for them at most `CANCEL_WAIT_S`
        (`cancel_and_wait`: one that does not end is logged), then every watch, even when the
        caller is cancelled meanwhile (its cancellation is raised)."""
        try:
            await cancel_and_wait(list(self._starting), what="metadata_watcher", log=self._log)
        finally:
            for watch in self._watches.values():
                watch.cancel()
            self._watches.clear()

    # ---- cluster-wide nodes ------------------------------------------------------------

    def _on_cluster_id(self, data: bytes | None, stat: object) -> None:
        self.image.set_cluster_id(self._decode(ClusterIdNode, data, ClusterIdNode.path()))

    def _on_controller(self, data: bytes | None, stat: object) -> None:
        info = self._decode(ControllerNode, data, ControllerNode.path())
        self.image.set_controller(info.broker_id if info is not None else -1)

    def _on_feature(self, data: bytes | None, stat: Any) -> None:
        feature = self._decode(FeatureNode, data, FeatureNode.path())
        if feature is None or not feature.enabled:
            self.image.set_finalized_features(-1, {})
            return
        # KIP-584: the finalized features' epoch is the /feature znode's data version.
        self.image.set_finalized_features(
            stat.version,
            {
                name: (level.min_version_level or 1, level.max_version_level)
                for name, level in feature.features.items()
            },
        )

    # ---- brokers -----------------------------------------------------------------------

    def _on_broker_ids(self, children: list[str] | None) -> None:
        ids = {
            b
            for b in (BrokerIdNode.broker_id_from_child(c) for c in children or ())
            if b is not None
        }
        for gone in self._brokers - ids:
            self._cancel(BrokerIdNode.path(gone))
            self.image.remove_broker(gone)
        for new in sorted(ids - self._brokers):
            self._spawn(self._watch_data(BrokerIdNode.path(new), self._broker_callback(new)))
        self._brokers = ids

    def _broker_callback(self, broker_id: int) -> Callable[[bytes | None, object], None]:
        def on_data(data: bytes | None, stat: object) -> None:
            info = self._decode(BrokerIdNode, data, BrokerIdNode.path(broker_id), broker_id)
            if info is None:
                self.image.remove_broker(broker_id)
            else:
                self.image.put_broker(info)

        return on_data

    # ---- topics ------------------------------------------------------------------------

    def _on_topics(self, children: list[str] | None) -> None:
        names = set(children or ())
        for gone in self._topics - names:
            self._cancel(TopicNode.path(gone))
            for partition in self._partitions.pop(gone, set()):
                self._cancel(PartitionStateNode.path(gone, partition))
            self.image.remove_topic(gone)
            if self._on_topic_removed is not None:
                try:
                    self._on_topic_removed(gone)
                except Exception:
                    self._log.exception("topic_removed.callback_failed", topic=gone)
        new = sorted(names - self._topics)
        self._topics = names
        for name in new:
            self._partitions[name] = set()
            self._spawn(self._watch_topic(name))

    async def _watch_topic(self, name: str) -> None:
        await self._watch_data(TopicNode.path(name), self._topic_callback(name))
        if name in self._topics:
            # A Kafka broker reads a topic's config when it creates the partition's log
            # (LogManager, on LeaderAndIsr), before any Produce reaches it; reading it as the
            # topic appears keeps that ZooKeeper round trip off the first Produce and Fetch.
            await self.image.topic_configs.overrides(name)

    def _topic_callback(self, name: str) -> Callable[[bytes | None, Any], None]:
        def on_data(data: bytes | None, stat: Any) -> None:
            if name not in self._topics:
                return
            assignment = self._decode(TopicNode, data, TopicNode.path(name), name)
            if assignment is None:
                return
            self.image.put_assignment(name, assignment, stat.version)
            watched = self._partitions.setdefault(name, set())
            new = sorted(assignment.partitions.keys() - watched)
            if new:
                watched.update(new)
                self._to_watch.extend((name, partition) for partition in new)
                if self._state_starter is None:
                    self._state_starter = asyncio.get_running_loop().create_task(
                        self._start_state_watches()
                    )
                    self._starting.add(self._state_starter)
                    self._state_starter.add_done_callback(self._started)

        return on_data

    async def _start_state_watches(self) -> None:
        """Start the queued partition-state watches, `STATE_WATCH_BATCH` at a time: a topic
        grown to 46,335 partitions must not start 46,335 watches (a task, a ZooKeeper read
        and a callback each) in one loop iteration. A watch starting late misses nothing: its
        first read delivers the state as it is then."""
        pacer = Pacer()
        try:
            while self._to_watch:
                batch: list[Coroutine[Any, Any, None]] = []
                while self._to_watch and len(batch) < STATE_WATCH_BATCH:
                    name, partition = self._to_watch.popleft()
                    if partition in self._partitions.get(name, ()):  # else: the topic went
                        batch.append(self._watch_state(name, partition))
                    if pacer.due():
                        await pacer.pause()
                results = await asyncio.gather(*batch, return_exceptions=True)
                for result in results:
                    if isinstance(result, Exception):
                        self._log.warning("watch.failed", reason=repr(result))
        finally:
            self._state_starter = None

    async def _watch_state(self, name: str, partition: int) -> None:
        path = PartitionStateNode.path(name, partition)
        watch = await self.store.watch_data(path, self._state_callback(name, partition))
        if path in self._watches or partition not in self._partitions.get(name, ()):
            watch.cancel()  # the topic went (or went and came back) while this one started
        else:
            self._watches[path] = watch

    def _state_callback(self, name: str, partition: int) -> Callable[[bytes | None, Any], None]:
        path = PartitionStateNode.path(name, partition)

        def on_data(data: bytes | None, stat: Any) -> None:
            state = self._decode(PartitionStateNode, data, path, name, partition)
            version = stat.version if stat is not None else -1
            self.image.put_partition_state(name, partition, state, version)

        return on_data

    def _on_delete_topics(self, children: list[str] | None) -> None:
        self.image.set_topics_being_deleted(frozenset(children or ()))

    # ---- helpers -----------------------------------------------------------------------

    async def _watch_data(self, path: str, callback: Callable[[bytes | None, Any], None]) -> None:
        self._watches[path] = await self.store.watch_data(path, callback)

    async def _watch_children(
        self, path: str, callback: Callable[[list[str] | None], None]
    ) -> None:
        self._watches[path] = await self.store.watch_children(path, callback)

    def _spawn(self, start: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(start)
        self._starting.add(task)
        task.add_done_callback(self._started)

    def _started(self, task: asyncio.Task[None]) -> None:
        self._starting.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._log.warning("watch.failed", reason=repr(task.exception()))

    def _cancel(self, path: str) -> None:
        watch = self._watches.pop(path, None)
        if watch is not None:
            watch.cancel()

    def _decode(
        self, node_cls: type[_Decoder[T]], data: bytes | None, where: str, *path_args: Any
    ) -> T | None:
        """The decoded node, or None when absent or undecodable (logged with `where`)."""
        if data is None:
            return None
        try:
            return node_cls.decode_at(data, *path_args)
        except ZnodeFormatError as e:
            self._log.warning("znode.undecodable", path=where, reason=str(e))
            return None
