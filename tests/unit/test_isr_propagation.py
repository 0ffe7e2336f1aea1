"""A pre-2.7 leader's batch of ISR changes (`zkbroker.broker.replication.isr_propagation`):
Kafka's ReplicaManager.maybePropagateIsrChanges timing, 5 s of quiet or 60 s since the last
notification, strict comparisons, clocks starting with the batch."""

from __future__ import annotations

from zkbroker.broker.replication.isr_propagation import (
    ISR_CHANGE_PROPAGATION_BLACK_OUT_MS,
    ISR_CHANGE_PROPAGATION_CHECK_INTERVAL_MS,
    ISR_CHANGE_PROPAGATION_INTERVAL_MS,
    IsrChangeBatch,
)

T0 = 1_000_000


def test_kafkas_constants() -> None:
    assert (
        ISR_CHANGE_PROPAGATION_CHECK_INTERVAL_MS,
        ISR_CHANGE_PROPAGATION_BLACK_OUT_MS,
        ISR_CHANGE_PROPAGATION_INTERVAL_MS,
    ) == (2_500, 5_000, 60_000)


def test_nothing_recorded_is_never_due() -> None:
    batch = IsrChangeBatch(T0)
    assert batch.due(T0) is None
    assert batch.due(T0 + 10 * ISR_CHANGE_PROPAGATION_INTERVAL_MS) is None


def test_a_change_goes_after_five_quiet_seconds_strictly() -> None:
    batch = IsrChangeBatch(T0)
    batch.record(("t", 1), T0 + 100)
    batch.record(("t", 0), T0 + 200)
    batch.record(("t", 1), T0 + 300)
    assert len(batch) == 2
    assert batch.due(T0 + 300 + 2_500) is None
    assert batch.due(T0 + 300 + 5_000) is None  # Kafka's `<`: exactly 5 s is not yet
    assert batch.due(T0 + 300 + 5_001) == [("t", 0), ("t", 1)]
    assert len(batch) == 0
    assert batch.due(T0 + 20_000) is None


def test_a_busy_leader_still_sends_every_sixty_seconds() -> None:
    batch = IsrChangeBatch(T0)
    # A change every second: never 5 s of quiet.
    sent: list[tuple[int, list[tuple[str, int]]]] = []
    for second in range(1, 130):
        now = T0 + second * 1_000
        batch.record(("busy", second % 3), now)
        due = batch.due(now)
        if due is not None:
            sent.append((second, due))
    # The clock of the last notification starts with the batch: first after 60 s (strictly),
    # then 60 s after that one.
    assert [s for s, _ in sent] == [61, 122]
    assert sent[0][1] == [("busy", 0), ("busy", 1), ("busy", 2)]


def test_a_notification_not_written_is_put_back() -> None:
    batch = IsrChangeBatch(T0)
    batch.record(("a", 0), T0 + 1)
    due = batch.due(T0 + 70_000)  # overdue: 60 s since the batch started
    assert due == [("a", 0)]
    batch.put_back(due)
    batch.record(("b", 0), T0 + 70_001)
    # The last propagation is back at T0: still overdue, so both go at the next check.
    assert batch.due(T0 + 70_002) == [("a", 0), ("b", 0)]
    # Written this time: the next busy batch waits 60 s from here.
    batch.record(("c", 0), T0 + 70_003)
    assert batch.due(T0 + 74_000) is None
