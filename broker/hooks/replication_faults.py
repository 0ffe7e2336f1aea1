"""The replication faults: pause-replication, slow-replication, cut-inter-broker.

Entries of these kinds live in ZooKeeper beside the request faults (`FaultNode`, the same ids,
`fault list` and `fault clear`) and are cached by the same `FaultInjector`, which hands every
new set of entries to its `ReplicationFaults`. That object answers the replication layer's
questions (the `ReplicationFaultView` protocol of `zkbroker.broker.replication.fault_view`) from
tables built once per change, so a question costs a few dict lookups; the replica manager gets
it as a value (the replication layer sits below this one and imports nothing of it). This
module also builds the entries, for the toolkit and the CLI alike. The kinds are zkbroker's
test tooling, not Kafka behaviour; what they cause is Kafka's (docs/kafka-behaviour.md §24:
an unfetched follower leaves the ISR after ``replica.lag.time.max.ms``). The README,
"Fault injection", describes them.

Not here: acting on the answers (the fetcher and the ISR writer of `zkbroker.broker.replication`),
request faults (`zkbroker.broker.hooks.faults`), checking an entry
(`FaultEntry.replication_problem`).
"""

from __future__ import annotations

from collections.abc import Iterable

from zkbroker.zk_layout.nodes.zkbroker import FaultEntry, FaultKind

__all__ = [
    "ReplicationFaults",
    "cut_inter_broker_entry",
    "pause_replication_entry",
    "slow_replication_entry",
]

#: What an entry is scoped to: (topic, partition), None meaning any.
_Scope = tuple[str | None, int | None]


def _scopes_of(topic: str, partition: int) -> tuple[_Scope, ...]:
    """The scopes an entry matching `topic`-`partition` can have."""
    return ((None, None), (topic, None), (None, partition), (topic, partition))


def pause_replication_entry(
    broker: int, topic: str | None = None, partition: int | None = None
) -> FaultEntry:
    """Follower `broker` fetches none of the matching partitions (all of them when neither
    `topic` nor `partition` is given; `partition` alone: that partition of every topic)."""
    return _checked(
        FaultEntry(
            kind=FaultKind.PAUSE_REPLICATION, broker=broker, topic=topic, partition=partition
        )
    )


def slow_replication_entry(
    broker: int, delay_ms: int, topic: str | None = None, partition: int | None = None
) -> FaultEntry:
    """Each fetch round of follower `broker` for the matching partitions waits `delay_ms`."""
    if delay_ms < 0:
        raise ValueError(f"delay_ms must be >= 0, got {delay_ms}")
    return _checked(
        FaultEntry(
            kind=FaultKind.SLOW_REPLICATION,
            broker=broker,
            topic=topic,
            partition=partition,
            delay_ms=delay_ms,
        )
    )


def cut_inter_broker_entry(broker: int) -> FaultEntry:
    """Broker `broker` neither fetches nor is fetched from, and its ISR writes fail."""
    return _checked(FaultEntry(kind=FaultKind.CUT_INTER_BROKER, broker=broker))


def _checked(entry: FaultEntry) -> FaultEntry:
    problem = entry.replication_problem()
    if problem is not None:
        raise ValueError(problem)
    if entry.broker is not None and entry.broker < 0:
        raise ValueError(f"a broker id is >= 0, got {entry.broker}")
    return entry


class ReplicationFaults:
    """The replication faults of the cached entries (a `ReplicationFaultView`)."""

    def __init__(self) -> None:
        # Each table is replaced whole by `update`, never changed in place: a reader between
        # two assignments sees an old or a new table, each consistent.
        self._paused: dict[int, frozenset[_Scope]] = {}
        self._delays_s: dict[int, dict[_Scope, float]] = {}
        self._cut: frozenset[int] = frozenset()

    def update(self, entries: Iterable[FaultEntry]) -> None:
        """Rebuild the tables from every entry now cached (other kinds are ignored)."""
        paused: dict[int, set[_Scope]] = {}
        delays: dict[int, dict[_Scope, float]] = {}
        cut: set[int] = set()
        for entry in entries:
            broker = entry.broker
            if broker is None or not entry.kind.on_replication:
                continue  # a request fault (a replication one without a broker never decodes)
            scope = (entry.topic, entry.partition)
            if entry.kind is FaultKind.PAUSE_REPLICATION:
                paused.setdefault(broker, set()).add(scope)
            elif entry.kind is FaultKind.SLOW_REPLICATION:
                by_scope = delays.setdefault(broker, {})
                by_scope[scope] = max(by_scope.get(scope, 0.0), entry.delay_ms / 1000)
            elif entry.kind is FaultKind.CUT_INTER_BROKER:
                cut.add(broker)
        self._paused = {b: frozenset(s) for b, s in paused.items()}
        self._delays_s = delays
        self._cut = frozenset(cut)

    def fetch_paused(self, follower: int, topic: str, partition: int) -> bool:
        scopes = self._paused.get(follower)
        return scopes is not None and not scopes.isdisjoint(_scopes_of(topic, partition))

    def fetch_delay_s(self, follower: int, topic: str, partition: int) -> float:
        delays = self._delays_s.get(follower)
        if delays is None:
            return 0.0
        return max(delays.get(scope, 0.0) for scope in _scopes_of(topic, partition))

    def inter_broker_cut(self, broker: int) -> bool:
        return broker in self._cut
