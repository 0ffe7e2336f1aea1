"""When a pre-2.7 partition leader tells the controller about its ISR changes: the batch of
changed partitions and Kafka's timing rules, as pure code (docs/kafka-behaviour.md §1.9, §10.3).

Before Kafka 2.7 (no AlterIsr) a leader writes its partition's state znode itself and records
the partition (``ReplicaManager.recordIsrChange``, from 2.7 ``ZkIsrManager``); a task checks
every 2.5 s (``maybePropagateIsrChanges``) and writes one
``/isr_change_notification/isr_change_<seq>`` naming every recorded partition when there are
some and either none was recorded for 5 s or the last notification is over 60 s old. Both clocks
start when the batch is created, as Kafka's start with the replica manager.

Not here: the clock and the periodic task (the replica manager's), the ZooKeeper writes
(``ZkStore.update_leader_and_isr``, ``ZkStore.create_isr_change_notification``), the controller's
side (``zkbroker.broker.controller.isr_change_notifications``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

TP = tuple[str, int]

#: How often the leader looks at its batch (2.6: the "isr-change-propagation" task's period;
#: 2.7+: ``IsrChangePropagationConfig.checkIntervalMs``).
ISR_CHANGE_PROPAGATION_CHECK_INTERVAL_MS: Final = 2_500
#: A batch goes once no change came for this long (2.6: ``ReplicaManager
#: .IsrChangePropagationBlackOut``; 2.7+: ``lingerMs``).
ISR_CHANGE_PROPAGATION_BLACK_OUT_MS: Final = 5_000
#: ... or once the last notification is this old, however busy the ISRs (2.6:
#: ``ReplicaManager.IsrChangePropagationInterval``; 2.7+: ``maxDelayMs``).
ISR_CHANGE_PROPAGATION_INTERVAL_MS: Final = 60_000


class IsrChangeBatch:
    """The partitions whose ISR this leader changed since its last notification."""

    __slots__ = ("_changed", "_last_change_ms", "_last_propagation_ms", "_previous_propagation_ms")

    def __init__(self, now_ms: int) -> None:
        self._changed: set[TP] = set()
        self._last_change_ms = now_ms
        self._last_propagation_ms = now_ms
        self._previous_propagation_ms = now_ms

    def __len__(self) -> int:
        return len(self._changed)

    def record(self, tp: TP, now_ms: int) -> None:
        """The leader wrote a new ISR for `tp` (only a write that succeeded is recorded)."""
        self._changed.add(tp)
        self._last_change_ms = now_ms

    def due(self, now_ms: int) -> list[TP] | None:
        """The partitions to name in one notification now (sorted), taken out of the batch; None
        while there is nothing to send or the batch should wait. Kafka's comparisons are
        strict: a change exactly 5 s ago still holds the batch back."""
        if not self._changed:
            return None
        quiet = self._last_change_ms + ISR_CHANGE_PROPAGATION_BLACK_OUT_MS < now_ms
        overdue = self._last_propagation_ms + ISR_CHANGE_PROPAGATION_INTERVAL_MS < now_ms
        if not (quiet or overdue):
            return None
        taken = sorted(self._changed)
        self._changed.clear()
        self._previous_propagation_ms = self._last_propagation_ms
        self._last_propagation_ms = now_ms
        return taken

    def put_back(self, partitions: Iterable[TP]) -> None:
        """The notification `due` gave could not be written: its partitions wait for the next
        check, with the last propagation time as it was (Kafka clears its set and moves that
        time only once the znode is written)."""
        self._changed.update(partitions)
        self._last_propagation_ms = self._previous_propagation_ms
