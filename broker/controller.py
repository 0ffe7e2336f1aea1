"""Controller election and the controller task (Kafka's KafkaController, ZooKeeper mode).

Every broker runs a `ControllerElector`: it watches `/controller` and, whenever that node is
absent, runs Kafka's election (semantics §10.1): the winner creates the ephemeral
`/controller` and bumps `/controller_epoch` in one multi. The winner starts the one
`Controller` of the cluster; a broker that sees `/controller` name someone else (or loses
its ZooKeeper session) resigns at once and writes nothing more.

The `Controller` owns all controller state and is the only writer of controller znodes.
It applies events one at a time from its queue (Kafka's ControllerEventManager), and every
write it makes is fenced by a multi whose first op checks `/controller_epoch`'s version
(`ZkStore.fenced`); a ControllerMovedError means another controller took over, so it stops.

On failover it does what Kafka's onControllerFailover does that zkbroker can observe:
releases 2.7+ write `/feature` (KIP-584: enabled, no finalized features, in the format the
release writes); older releases had no such node and write nothing.

Deliberately not here (yet): topic/partition state machines, reassignment, elections of
partition leaders and topic deletion; they arrive as further controller events.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from broker.settings import Settings
from zk_layout import ControllerInfo, ControllerMovedError, FeatureNode, FeatureState, ZkStore
from zk_layout.nodes import ControllerNode

ControllerEvent = Callable[["Controller"], Awaitable[None]]


@dataclass(frozen=True)
class ControllerContext:
    """Facts fixed for the lifetime of one controller incarnation."""

    broker_id: int
    epoch: int
    epoch_zk_version: int


class Controller:
    """The active controller: one task applying controller events in order."""

    def __init__(self, context: ControllerContext, store: ZkStore, settings: Settings) -> None:
        self.context = context
        self.store = store
        self.settings = settings
        self._events: asyncio.Queue[ControllerEvent] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._log = structlog.get_logger(__name__).bind(
            broker_id=context.broker_id, controller_epoch=context.epoch
        )
        self.moved = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"controller-{self.context.broker_id}")
        self.submit(Controller._on_failover)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def submit(self, event: ControllerEvent) -> None:
        self._events.put_nowait(event)

    async def _run(self) -> None:
        while True:
            event = await self._events.get()
            try:
                await event(self)
            except ControllerMovedError:
                self._log.warning("controller.moved")
                self.moved.set()
                return
            except Exception:
                # One failed event must not stop the controller; Kafka logs and goes on too.
                self._log.exception(
                    "controller.event_failed", event=getattr(event, "__name__", "?")
                )

    async def _on_failover(self) -> None:
        release = self.settings.kafka_version
        if release >= (2, 7):
            data = FeatureNode.encode(FeatureState.for_release(release), release)
            existing = await self.store.get(FeatureNode.path())
            tx = self.store.fenced(self.context.epoch_zk_version)
            if existing is None:
                tx.create(FeatureNode.path(), data)
            else:
                tx.set(FeatureNode.path(), data)
            await tx.commit()
        self._log.info("controller.failover_done")


class ControllerElector:
    """Watches /controller for one broker and runs the election whenever it is vacant."""

    def __init__(self, broker_id: int, store: ZkStore, settings: Settings) -> None:
        self.broker_id = broker_id
        self.store = store
        self.settings = settings
        self.controller: Controller | None = None
        self._lock = asyncio.Lock()
        self._stopped = False
        self._checks: set[asyncio.Task[None]] = set()
        self._log = structlog.get_logger(__name__).bind(broker_id=broker_id)

    @property
    def is_active(self) -> bool:
        return self.controller is not None and not self.controller.moved.is_set()

    async def start(self) -> None:
        await self.store.watch_data(ControllerNode.path(), self._on_controller_node)
        await self.check()

    async def stop(self) -> None:
        self._stopped = True
        for task in list(self._checks):
            task.cancel()
        async with self._lock:
            await self._resign()

    def _on_controller_node(self, data: bytes | None, stat: object) -> None:
        if not self._stopped:
            task = asyncio.create_task(self.check())
            self._checks.add(task)
            task.add_done_callback(self._checks.discard)

    async def check(self) -> None:
        """Elect if /controller is vacant; resign if it names another broker."""
        async with self._lock:
            if self._stopped:
                return
            node = await self.store.get(ControllerNode.path())
            if node is None:
                result = await self.store.elect_controller(
                    self.broker_id, self.settings.kafka_version
                )
                if result.won:
                    await self._become_controller(result.epoch, result.epoch_zk_version)
                elif self.controller is not None:
                    await self._resign()
                return
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
        self.controller = Controller(context, self.store, self.settings)
        await self.controller.start()

    async def _resign(self) -> None:
        if self.controller is not None:
            self._log.info("controller.resigned", controller_epoch=self.controller.context.epoch)
            await self.controller.stop()
            self.controller = None
