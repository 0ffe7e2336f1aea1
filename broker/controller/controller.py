"""Controller election and the controller task (Kafka's KafkaController, ZooKeeper mode;
behaviour: §10).

`ControllerElector` runs on every broker and elects through `/controller` (§10.1); the winner
starts the cluster's one `Controller`, which owns all controller state, applies named events
one at a time (Kafka's ControllerEventManager; timed to the debug log and StatsD) and fences
every write on `/controller_epoch`'s version. Handlers reach it through `call(name, fn)`. The
events live in `topics`, `partitions`, `reassignment` and `isr_change_notifications` beside this
module.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from kazoo.protocol.states import ZnodeStat

from zkbroker.broker.asyncutil import cancel_and_wait, gather_bounded
from zkbroker.broker.controller import isr_change_notifications
from zkbroker.broker.controller import partitions as controller_partitions
from zkbroker.broker.controller import reassignment as controller_reassignment
from zkbroker.broker.controller import topics as controller_topics
from zkbroker.broker.controller.broker_leases import BrokerLeases
from zkbroker.broker.controller.isr_change_notifications import IsrChangeNotifications
from zkbroker.broker.controller.topics import ControllerState
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.broker.rules.broker_config import BrokerConfig
from zkbroker.broker.settings import Settings
from zkbroker.zk_layout import (
    DEFAULT_ENTITY,
    ControllerInfo,
    ControllerMovedError,
    FeatureNode,
    FeatureState,
    PartitionState,
    TopicAssignment,
    ZkStore,
)
from zkbroker.zk_layout.nodes import (
    BrokerIdNode,
    BrokerIdsNode,
    ControllerNode,
    DeleteTopicsNode,
    IsrChangeNotificationsNode,
    PreferredReplicaElectionNode,
    ReassignPartitionsNode,
    TopicNode,
    TopicsNode,
)
from zkbroker.zk_layout.store import Watch

T = TypeVar("T")
EventFn = Callable[["Controller"], Awaitable[None]]
# (event name, seconds queued, seconds running, failed): told after every event.
EventObserver = Callable[[str, float, float, bool], None]
# (topic, partition) -> the bytes of its log in this process (0 when it has none).
_stdlib_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ControllerEvent:
    """One unit of controller work: a name for logs and metrics, the coroutine to run, and
    when it was queued."""

    name: str
    run: EventFn
    queued_at: float


@dataclass(frozen=True)
class ControllerContext:
    """Facts fixed for the lifetime of one controller incarnation."""

    broker_id: int
    epoch: int
    epoch_zk_version: int


class Controller:
    """The active controller: one task applying controller events in order."""

    def __init__(
        self,
        context: ControllerContext,
        store: ZkStore,
        settings: Settings,
        image: MetadataImage | None = None,
        event_observer: EventObserver | None = None,
    ) -> None:
        self.context = context
        self.store = store
        self.settings = settings
        # This process's metadata image: told directly what the controller writes, as
        # Kafka's controller sends UpdateMetadata; other processes learn it from ZooKeeper.
        self.image = image
        self.state = ControllerState()
        self._events: asyncio.Queue[ControllerEvent] = asyncio.Queue()
        self._event_observer = event_observer
        self._task: asyncio.Task[None] | None = None
        self._watches: dict[str, Watch] = {}
        self._log = get_logger(__name__).bind(
            broker_id=context.broker_id, controller_epoch=context.epoch
        )
        self.moved = asyncio.Event()
        # Set once failover has loaded the cluster's state (benchmarks and tests wait on it).
        self.loaded = asyncio.Event()
        self._calls: set[asyncio.Future[Any]] = set()
        self._rebalance: asyncio.Task[None] | None = None
        # czxid of the admin nodes last acted on: only a newly created node is a new request.
        self._seen_czxid: dict[str, int] = {}
        self._broker_config: tuple[int, BrokerConfig] | None = None
        # KIP-631 leases of brokers that joined over the protocol
        # (zkbroker.broker.controller.broker_leases).
        self.leases = BrokerLeases(self)
        # /isr_change_notification, written by leaders of releases before 2.7
        # (zkbroker.broker.controller.isr_change_notifications).
        self.isr_changes = IsrChangeNotifications(self)
        # Reassigning partitions whose state znode changed, with a refresh queued.
        self._isr_watch_pending: set[tuple[str, int]] = set()

    @property
    def release(self) -> tuple[int, ...]:
        return self.settings.kafka_version

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"controller-{self.context.broker_id}")
        self.submit("Startup", Controller._on_failover)
        self.submit("BrokerLeasesResume", lambda c: c.leases.resume())
        if self.image is not None:
            self.image.add_partition_listener(self._on_partition_image)

    def _on_partition_image(self, topic: str, partition: int) -> None:
        """Kafka's PartitionReassignmentIsrChangeHandler: a reassigning partition's state znode
        changed by someone else (its leader's ISR write before 2.7) is read again, which
        completes the reassignment once the targets are in the ISR."""
        tp = (topic, partition)
        if tp not in self.state.reassigning or tp in self._isr_watch_pending or self.image is None:
            return
        found = self.image.partition_state(topic, partition)
        known = self.state.partition_states.get(tp)
        if found is None or (known is not None and found[1] <= known[1]):
            return
        self._isr_watch_pending.add(tp)

        async def refresh(c: Controller) -> None:
            c._isr_watch_pending.discard(tp)
            await isr_change_notifications.refresh_partitions(c, [tp])

        self.submit("PartitionReassignmentIsrChange", refresh)

    def halt(self) -> int:
        """Stop at once, without awaiting anything (Kafka's onControllerResignation on Expire):
        no further event runs, the queued ones are dropped, the watches and timers are
        cancelled and pending `call`s fail with ControllerMovedError (NOT_CONTROLLER). The
        running event is cancelled at its next await. `stop()` then waits for the task.
        Returns how many queued events were dropped."""
        self.moved.set()
        if self.image is not None:
            self.image.remove_partition_listener(self._on_partition_image)
        for watch in self._watches.values():
            watch.cancel()
        self._watches.clear()
        self.leases.stop()
        if self._rebalance is not None:
            self._rebalance.cancel()
        dropped = 0
        while not self._events.empty():
            self._events.get_nowait()
            dropped += 1
        self._fail_calls()
        if self._task is not None:
            self._task.cancel()
        return dropped

    async def stop(self) -> None:
        """`halt()`, then wait for the controller task and the rebalance timer to end, at most
        `CANCEL_WAIT_S`: one still running then (an event that swallowed its cancellation) is
        logged as `tasks.did_not_end` and left behind, cancelled. The caller's own
        cancellation is raised (`cancel_and_wait`)."""
        self.halt()
        tasks = [t for t in (self._rebalance, self._task) if t is not None]
        await cancel_and_wait(tasks, what="controller", log=self._log)
        self._rebalance = None
        self._task = None

    def submit(self, name: str, run: EventFn) -> None:
        """Queue `run` as the controller event `name` (in order with all others)."""
        self._events.put_nowait(ControllerEvent(name, run, time.perf_counter()))

    async def call(self, name: str, fn: Callable[[Controller], Awaitable[T]]) -> T:
        """Run `fn` as the controller event `name` (in order with all others) and return its
        result."""
        if self.moved.is_set() or self._task is None:
            raise self._stopped()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._calls.add(future)
        future.add_done_callback(self._calls.discard)

        async def event(controller: Controller) -> None:
            if future.done():
                return
            try:
                result = await fn(controller)
            except BaseException as e:
                if not future.done():
                    future.set_exception(e)
                raise
            if not future.done():
                future.set_result(result)

        self.submit(name, event)
        return await future

    def _stopped(self) -> ControllerMovedError:
        return ControllerMovedError(self.context.epoch_zk_version, "the controller has stopped")

    def _fail_calls(self) -> None:
        for future in list(self._calls):
            if not future.done():
                future.set_exception(self._stopped())

    def enable_unclean_election(self, topic: str | None) -> None:
        """unclean.leader.election.enable turned on for `topic` (None: the broker default):
        elect its offline partitions again (Kafka's TopicUncleanLeaderElectionEnable)."""

        async def event(controller: Controller) -> None:
            offline = controller_partitions.offline_partitions(controller)
            if topic is not None:
                offline = [tp for tp in offline if tp[0] == topic]
            if offline:
                await controller_partitions.elect_offline(controller, offline)

        # Kafka's two event names: the broker default changed, or one topic's override.
        if topic is None:
            self.submit("UncleanLeaderElectionEnable", event)
        else:
            self.submit("TopicUncleanLeaderElectionEnable", event)

    def broker_config(self) -> BrokerConfig:
        """The controller broker's configuration (static settings + dynamic overrides),
        rebuilt only when the image's dynamic broker configs change."""
        version = self.image.broker_configs_version if self.image is not None else -1
        if self._broker_config is None or self._broker_config[0] != version:
            self._broker_config = (version, self._build_broker_config())
        return self._broker_config[1]

    def _build_broker_config(self) -> BrokerConfig:
        overrides = self.image.broker_configs if self.image is not None else {}
        broker_id = self.context.broker_id
        return BrokerConfig.build(
            broker_id,
            self.release,
            self.settings.static_broker_configs(broker_id, self.settings.port_of(broker_id), ""),
            overrides.get(DEFAULT_ENTITY, {}),
            overrides.get(str(broker_id), {}),
        )

    def publish(
        self,
        topic: str,
        record: controller_topics.TopicRecord,
        states: dict[int, tuple[PartitionState, int]],
    ) -> None:
        if self.image is None:
            return
        self.image.put_assignment(topic, record.assignment, record.zk_version)
        for partition, (partition_state, zk_version) in states.items():
            self.image.put_partition_state(topic, partition, partition_state, zk_version)

    def publish_deletion(self, topic: str) -> None:
        if self.image is not None:
            self.image.remove_topic(topic)

    def expect_topics(self, names: list[str]) -> None:
        """A handler of this broker is about to create these topics and will hand them over
        (`topics_created`); the watch path leaves them alone meanwhile. Runs on the loop,
        before the handler's writes are sent, so no watch event can come first."""
        self.state.expected_topics.update(names)

    def topics_created(self, created: dict[str, TopicAssignment], expected: list[str]) -> None:
        """The handler's writes are done: `created` znodes (data version 0) come online now,
        without re-reading what the handler wrote; the rest of `expected` (writes that
        failed) go back to the watch path."""
        self.submit(
            "TopicsCreated", lambda c: controller_topics.on_topics_created(c, created, expected)
        )

    async def _run(self) -> None:
        while not self.moved.is_set():
            event = await self._events.get()
            if self.moved.is_set():
                return  # halted while this event waited: it belongs to no controller now
            started = time.perf_counter()
            failed = False
            try:
                await event.run(self)
            except ControllerMovedError:
                self._log.warning("controller.moved", event_name=event.name)
                self.moved.set()
                self._fail_calls()
                return
            except Exception:
                # One failed event must not stop the controller; Kafka logs and goes on too.
                failed = True
                self._log.exception("controller.event_failed", event_name=event.name)
            finally:
                self._event_done(event, started, failed)

    def _event_done(self, event: ControllerEvent, started: float, failed: bool) -> None:
        ended = time.perf_counter()
        queued_s, run_s = started - event.queued_at, ended - started
        if _stdlib_log.isEnabledFor(logging.DEBUG):
            self._log.debug(
                "controller.event",
                event_name=event.name,
                queue_ms=round(queued_s * 1000, 3),
                duration_ms=round(run_s * 1000, 3),
                failed=failed,
            )
        if self._event_observer is not None:
            try:
                self._event_observer(event.name, queued_s, run_s, failed)
            except Exception:
                self._log.exception("controller.event_observer_failed", event_name=event.name)

    # ---- helpers for event code --------------------------------------------------------

    async def gather(self, *aws: Awaitable[T]) -> list[T]:
        """Run ZooKeeper reads/writes concurrently (pipelined), results in order; at most
        `GATHER_LIMIT` at once, so bringing 10,000 topics online does not run 10,000 first
        steps in one loop iteration (`zkbroker.broker.asyncutil.gather_bounded`)."""
        return await gather_bounded(aws)

    async def fenced_set(self, path: str, data: bytes, version: int) -> ZnodeStat:
        tx = self.store.fenced(self.context.epoch_zk_version)
        tx.set(path, data, version)
        (stat,) = await tx.commit()
        return cast(ZnodeStat, stat)

    def watch_topic(self, name: str) -> None:
        """Watch /brokers/topics/<name> for partition changes (Kafka's PartitionModifications)."""
        path = TopicNode.path(name)

        async def start() -> None:
            self._watches[path] = await self.store.watch_data(path, self.topic_watch(name))

        asyncio.get_running_loop().create_task(start())

    def topic_watch(self, name: str) -> Callable[[bytes | None, Any], None]:
        """The data-watch callback of /brokers/topics/<name>."""

        def on_data(data: bytes | None, stat: Any) -> None:
            record = self.state.topics.get(name)
            # Deliveries of the version already known (the first one, usually) change nothing.
            if data is not None and (record is None or stat.version > record.zk_version):
                version = stat.version
                self.submit(
                    "PartitionModifications",
                    lambda c: controller_topics.on_topic_modified(c, name, data, version),
                )

        return on_data

    def unwatch_topic(self, name: str) -> None:
        watch = self._watches.pop(TopicNode.path(name), None)
        if watch is not None:
            watch.cancel()

    def topic_watches_armed(self, names: list[str], watches: list[Watch]) -> None:
        for name, watch in zip(names, watches, strict=True):
            self._watches[TopicNode.path(name)] = watch

    def _watch_children(
        self, path: str, name: str, event: Callable[[Controller, list[str]], Awaitable[None]]
    ) -> Awaitable[Watch]:
        def on_children(children: list[str] | None) -> None:
            current = list(children or ())
            self.submit(name, lambda c: event(c, current))

        return self.store.watch_children(path, on_children)

    # ---- events ------------------------------------------------------------------------

    async def _enable_feature_versioning(self, release: tuple[int, ...]) -> None:
        """Kafka's enableFeatureVersioning (2.7+): `/feature` is created enabled when absent;
        an enabled node keeps its finalized features (UpdateFeatures' work survives a
        failover); a disabled one is enabled with none. Written only when it changes."""
        found = await self.store.get(FeatureNode.path())
        existing = None if found is None else found[0]
        wanted = FeatureState.for_release(release)
        current: FeatureState | None = None
        if existing is not None:
            try:
                current = FeatureNode.decode(existing)
            except ValueError as e:
                self._log.warning("controller.feature_node_unreadable", error=str(e))
            else:
                if current.enabled:
                    wanted = FeatureState(current.status, dict(current.features))
        data = FeatureNode.encode(wanted, release)
        # Kafka compares the decoded nodes (format version, status, features), not bytes.
        if current is not None and FeatureNode.decode(data) == current:
            return
        tx = self.store.fenced(self.context.epoch_zk_version)
        if existing is None:
            tx.create(FeatureNode.path(), data)
        else:
            tx.set(FeatureNode.path(), data)
        await tx.commit()

    async def _on_failover(self) -> None:
        """Kafka's onControllerFailover, as far as zkbroker has the pieces (§10.1 step 5)."""
        release = self.release
        if release >= (2, 7):
            await self._enable_feature_versioning(release)
        # Load brokers, topics and states before watching, so the watches' first deliveries
        # find them known; the watch events queue up behind this one.
        brokers = await self.store.get_children(BrokerIdsNode.path()) or []
        self.state.live_brokers = _broker_ids(brokers)
        topics = await self.store.get_children(TopicsNode.path()) or []
        for path, name, event in (
            (BrokerIdsNode.path(), "BrokerChange", Controller._on_brokers_changed),
            (TopicsNode.path(), "TopicChange", controller_topics.on_topics_changed),
            (DeleteTopicsNode.path(), "TopicDeletion", controller_topics.on_deletions_changed),
        ):
            self._watches[path] = await self._watch_children(path, name, event)
        # Notifications left from before are deleted unread: every state is loaded next.
        self._watches[IsrChangeNotificationsNode.path()] = await self.isr_changes.start()
        await controller_topics.load_topics(self, sorted(topics))
        await controller_partitions.elect_offline(
            self, controller_partitions.offline_partitions(self)
        )
        await controller_partitions.shrink_dead_followers(self)
        # The admin node's partitions start from its first delivery (queued behind this
        # event); the rest of the in-flight reassignments resume now.
        listed = await controller_reassignment.read_admin_node_partitions(self)
        await controller_reassignment.resume(self, skip=listed)
        for path, name, admin_event in (
            (
                ReassignPartitionsNode.path(),
                "ZkPartitionReassignment",
                controller_reassignment.on_admin_node,
            ),
            (
                PreferredReplicaElectionNode.path(),
                "ReplicaLeaderElection",
                controller_partitions.on_preferred_election_node,
            ),
        ):
            self._watches[path] = await self._watch_created(path, name, admin_event)
        if self.settings.auto_leader_rebalance:
            self._rebalance = asyncio.get_running_loop().create_task(self._rebalance_loop())
        self.loaded.set()
        self._log.info(
            "controller.failover_done",
            brokers=sorted(self.state.live_brokers),
            topics=len(self.state.topics),
        )

    def _watch_created(
        self, path: str, name: str, event: Callable[[Controller], Awaitable[None]]
    ) -> Awaitable[Watch]:
        """An event each time `path` is created anew (Kafka's handleCreation): data changes
        of the same node (the controller's own rewrites) are not new requests."""

        def on_exists(stat: Any) -> None:
            if stat is None or self._seen_czxid.get(path) == stat.czxid:
                return
            self._seen_czxid[path] = stat.czxid
            self.submit(name, event)

        return self.store.watch_exists(path, on_exists)

    async def _rebalance_loop(self) -> None:
        interval = self.settings.leader_imbalance_check_interval_s
        await asyncio.sleep(min(5.0, interval))
        while True:
            self.submit("AutoPreferredReplicaLeaderElection", controller_partitions.auto_rebalance)
            await asyncio.sleep(interval)

    async def _on_brokers_changed(self, children: list[str]) -> None:
        live = _broker_ids(children)
        added = live - self.state.live_brokers
        dead = self.state.live_brokers - live
        self.state.live_brokers = live
        if dead:
            self._log.info("controller.brokers_dead", brokers=sorted(dead))
            await controller_partitions.on_brokers_failed(self, dead)
        if added:
            # Kafka's onBrokerStartup: partitions still without a leader state can come online,
            # offline partitions are elected, reassignments waiting for the broker go on, its
            # replicas rejoin the ISRs, and deletions waiting for it can go on.
            self._log.info("controller.brokers_started", brokers=sorted(added))
            await controller_topics.initialize_new_partitions(self, sorted(self.state.topics))
            await controller_partitions.on_brokers_started(self, added)
            await controller_reassignment.resume_on_brokers(self, added)
            await controller_topics.try_topic_deletions(self)


def _broker_ids(children: list[str]) -> set[int]:
    return {b for b in (BrokerIdNode.broker_id_from_child(c) for c in children) if b is not None}


class ControllerElector:
    """Watches /controller for one broker and runs the election whenever it is vacant."""

    def __init__(
        self,
        broker_id: int,
        store: ZkStore,
        settings: Settings,
        image: MetadataImage | None = None,
        event_observer: EventObserver | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.store = store
        self.settings = settings
        self.image = image
        self.event_observer = event_observer
        self.controller: Controller | None = None
        self._lock = asyncio.Lock()
        self._stopped = False
        # Between a session expiry and the broker's new registration: no election.
        self._session_lost = False
        self._checks: set[asyncio.Task[None]] = set()
        self._log = get_logger(__name__).bind(broker_id=broker_id)

    @property
    def is_active(self) -> bool:
        return self.controller is not None and not self.controller.moved.is_set()

    async def start(self) -> None:
        await self.store.watch_data(ControllerNode.path(), self._on_controller_node)
        await self.check()

    async def stop(self) -> None:
        self._stopped = True
        stuck = await cancel_and_wait(list(self._checks), what="controller_election", log=self._log)
        if stuck:
            # A check that did not end (logged) may hold the lock for good: resign without it.
            await self._resign()
            return
        async with self._lock:
            await self._resign()

    def session_lost(self) -> None:
        """The ZooKeeper session expired (kazoo's LOST): resign at once, before any event or
        watch delivery of the new session runs, and hold elections until
        `session_renewed()` (Kafka's processExpire: onControllerResignation, then
        RegisterBrokerAndReelect). Synchronous, so nothing queued behind it on the loop
        finds the old controller still active."""
        self._session_lost = True
        controller = self.controller
        if controller is not None and not controller.moved.is_set():
            dropped = controller.halt()
            self._log.warning(
                "controller.resigning",
                reason="zookeeper session expired",
                controller_epoch=controller.context.epoch,
                dropped_events=dropped,
            )

    async def session_renewed(self) -> None:
        """The broker registered again on its new session: run the election anew (the winner,
        maybe this broker, starts with a new epoch)."""
        self._session_lost = False
        await self.check()

    def _on_controller_node(self, data: bytes | None, stat: object) -> None:
        if not self._stopped and not self._session_lost:
            task = asyncio.create_task(self.check())
            self._checks.add(task)
            task.add_done_callback(self._checks.discard)

    async def check(self) -> None:
        """Elect if /controller is vacant; resign if it names another broker."""
        async with self._lock:
            while True:
                if self._stopped or self._session_lost:
                    if self.controller is not None and self.controller.moved.is_set():
                        await self._resign()
                    return
                node = await self.store.get(ControllerNode.path())
                if node is not None:
                    break
                result = await self.store.elect_controller(
                    self.broker_id, self.settings.kafka_version
                )
                if result.won:
                    await self._become_controller(result.epoch, result.epoch_zk_version)
                    return
                if self.controller is not None:
                    await self._resign()
                if result.controller_id is not None:
                    return
                # Lost to a broker that has already resigned: /controller went from vacant to
                # vacant, which the watch (level-triggered) may never deliver. Elect again, as
                # Kafka's Reelect would on the deletion.
                self._log.info("controller.reelecting", reason="the election's winner left")
            try:
                current: ControllerInfo | None = ControllerNode.decode(node[0])
            except Exception:
                current = None
            if (current is None or current.broker_id != self.broker_id) and self.controller:
                await self._resign()

    async def _become_controller(self, epoch: int, epoch_zk_version: int) -> None:
        await self._resign()
        self._log.info("controller.elected", controller_epoch=epoch)
        context = ControllerContext(self.broker_id, epoch, epoch_zk_version)
        self.controller = Controller(
            context,
            self.store,
            self.settings,
            self.image,
            self.event_observer,
        )
        await self.controller.start()

    async def _resign(self) -> None:
        if self.controller is not None:
            self._log.info("controller.resigned", controller_epoch=self.controller.context.epoch)
            await self.controller.stop()
            self.controller = None
