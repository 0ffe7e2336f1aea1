"""The controller's side of `/isr_change_notification` (Kafka's IsrChangeNotificationHandler and
`processIsrChangeNotification`; docs/kafka-behaviour.md §1.9, §10.1 step 5, §10.3).

Partition leaders of releases before 2.7 change their ISR in the state znode themselves and
then name the partitions in `/isr_change_notification/isr_change_<seq>`. Kafka's controller of
every release consumes these (a 2.7+ leader writes none, but a broker of an older IBP may run in
the same cluster). While this broker is the active controller, one children watch queues the
controller event `IsrChangeNotification`, which reads the notifications, refreshes the leader
and ISR of the partitions they name from ZooKeeper into the controller's state (and publishes
them to this process's image, Kafka's UpdateMetadata), completes the reassignments of those
partitions whose targets are now all in the ISR (Kafka's `maybeCompleteReassignment`:
`reassignment.on_isr_changed`, as after AlterPartition), and deletes the notifications it read,
each delete fenced by the controller epoch. Failover deletes every notification there is,
unread: the controller loads every state next. Work is bounded: `MAX_NOTIFICATIONS_PER_PASS`
notifications per event (the rest in a later event, behind whatever else is queued), states
refreshed `REFRESH_CHUNK` at a time, decoding in slices (`zkbroker.broker.asyncutil.Pacer`).

Where zkbroker differs: Kafka drops the whole pass when one notification's JSON lacks
`partitions` (its decoder throws; the `finally` still deletes them all); here that notification
is logged and deleted, and the others are applied.

Not here: the leader's writes (`ZkStore.update_leader_and_isr`, `create_isr_change_notification`,
batched by `zkbroker.broker.replication.isr_propagation`), AlterPartition
(`zkbroker.broker.controller.alter_partition`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.controller import partitions as controller_partitions
from zkbroker.broker.controller import reassignment
from zkbroker.broker.log import get_logger
from zkbroker.zk_layout import (
    ControllerMovedError,
    IsrChangeNotificationNode,
    IsrChangeNotificationsNode,
    NoNodeError,
    ZnodeFormatError,
)
from zkbroker.zk_layout.store import Watch

if TYPE_CHECKING:
    from zkbroker.broker.controller.controller import Controller

TP = tuple[str, int]

#: Kafka's name of the controller event.
EVENT_NAME: Final = "IsrChangeNotification"
#: Notifications read, applied and deleted by one event.
MAX_NOTIFICATIONS_PER_PASS: Final = 1_000
#: Partition states read back from ZooKeeper per step.
REFRESH_CHUNK: Final = 1_000

_log = get_logger(__name__)


class IsrChangeNotifications:
    """The notifications of one controller incarnation: its watch and its events."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        # An event is queued and has not started: another delivery adds nothing to it (the
        # event reads the children when it runs).
        self._queued = False

    async def start(self) -> Watch:
        """Failover (run by the failover event): watch the children, then delete every
        notification there is (Kafka's `deleteIsrChangeNotifications`). The watch is the
        controller's to cancel when it stops."""
        watch = await self.controller.store.watch_children(
            IsrChangeNotificationsNode.path(), self._on_children
        )
        names = await self._children()
        while names:
            await self._delete(names[:MAX_NOTIFICATIONS_PER_PASS])
            names = names[MAX_NOTIFICATIONS_PER_PASS:]
        return watch

    def _on_children(self, children: list[str] | None) -> None:
        if children and not self._queued:
            self._submit()

    def _submit(self) -> None:
        self._queued = True
        self.controller.submit(EVENT_NAME, lambda c: self.process())

    async def process(self) -> None:
        """The event: one pass over at most `MAX_NOTIFICATIONS_PER_PASS` notifications, oldest
        first. The notifications read are deleted even when applying them failed, as in Kafka."""
        self._queued = False
        names = await self._children()
        batch = names[:MAX_NOTIFICATIONS_PER_PASS]
        if len(names) > len(batch) and not self._queued:
            self._submit()
        if not batch:
            return
        failure: Exception | None = None
        try:
            partitions = await self._read(batch)
            if partitions:
                await refresh_partitions(self.controller, partitions)
            _log.info(
                "controller.isr_change_notification",
                notifications=len(batch),
                partitions=len(partitions),
                sample=[f"{t}-{p}" for t, p in partitions[:20]],
            )
        except ControllerMovedError:
            raise
        except Exception as e:
            failure = e
        await self._delete(batch)
        if failure is not None:
            raise failure

    async def _children(self) -> list[str]:
        """The notifications' names, by sequence number (other children are not Kafka's)."""
        children = await self.controller.store.get_children(IsrChangeNotificationsNode.path())
        named = (c for c in children or () if IsrChangeNotificationNode.is_child_name(c))
        return sorted(named, key=IsrChangeNotificationNode.sequence_number)

    async def _read(self, names: list[str]) -> list[TP]:
        """The partitions the notifications name, each once, in the order first named. A
        notification gone meanwhile names none (Kafka skips NONODE)."""
        reads = await self.controller.store.get_many([_path(n) for n in names])
        pacer = Pacer()
        found: dict[TP, None] = {}
        for name, node in zip(names, reads, strict=True):
            if pacer.due():
                await pacer.pause()
            if node is None:
                continue
            try:
                named = IsrChangeNotificationNode.decode_at(
                    node[0], IsrChangeNotificationNode.sequence_number(name)
                )
            except ZnodeFormatError as e:
                _log.error("controller.isr_change_notification_unreadable", reason=str(e))
                continue
            found.update(dict.fromkeys((tp.topic, tp.partition) for tp in sorted(named)))
        return list(found)

    async def _delete(self, names: list[str]) -> None:
        """Each notification in its own fenced delete (Kafka's pipelined `DeleteRequest`s, each
        wrapped in the controller epoch check); one already gone is fine."""
        controller = self.controller

        async def delete(name: str) -> None:
            tx = controller.store.fenced(controller.context.epoch_zk_version)
            tx.delete(_path(name))
            with contextlib.suppress(NoNodeError):
                await tx.commit()

        await controller.gather(*(delete(n) for n in names))


def _path(name: str) -> str:
    return f"{IsrChangeNotificationNode.PARENT}/{name}"


async def refresh_partitions(controller: Controller, partitions: Iterable[TP]) -> list[TP]:
    """Kafka's `updateLeaderAndIsrCache` for `partitions` of topics the controller knows: their
    states read back from ZooKeeper into the controller's state and this process's image, then
    the reassignments among them that the new ISRs complete are completed. Returns the
    partitions refreshed."""
    state = controller.state
    known = [tp for tp in partitions if tp[0] in state.topics]
    for start in range(0, len(known), REFRESH_CHUNK):
        chunk = known[start : start + REFRESH_CHUNK]
        await controller_partitions.reload_states(controller, chunk)
        if controller.image is None:
            continue
        for topic, partition in chunk:
            current = state.partition_states.get((topic, partition))
            if current is not None:
                controller.image.put_partition_state(topic, partition, current[0], current[1])
    await reassignment.on_isr_changed(controller, known)
    return known
