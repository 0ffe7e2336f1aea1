"""Automatic replica placement, as Kafka's `AdminUtils.assignReplicasToBrokers` does it.

`assign_replicas(brokers, n, rf)` returns `{partition_id: [broker ids]}`, the preferred leader
first, as Kafka 2.8's Scala `AdminUtils` and its 3.7 Java port (docs/kafka-behaviour.md §2.3):
Kafka's checks with its codes and words (`AssignmentError`), round-robin leaders with a growing
follower shift, and the rack-alternated list when every broker has a rack. `fixed_start_index
>= 0` fixes the start index and first shift (CreatePartitions relies on it,
`create_partitions_start`); otherwise both are drawn from `rng`.

Not here: any I/O (the caller passes the brokers, sorted by id), rack-awareness modes, checks of
a manual assignment (the handlers).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from zkbroker.broker.protocol import error_codes

MIXED_RACKS_REASON = "Not all brokers have rack information for replica rack aware assignment."

# One generator for the process, as Kafka's AdminUtils has one `Random`: seeding a fresh one
# per call reads os.urandom, a system call that costs a GIL hand-off (10,000 topics -> 10,000).
_RNG = random.Random()


@dataclass(frozen=True)
class BrokerPlacement:
    """One live broker as the assignment sees it: its id and its rack, if it has one."""

    broker_id: int
    rack: str | None = None


class AssignmentError(Exception):
    """An assignment Kafka would refuse.

    ``error_code`` and ``message`` are what goes into the response. ``message`` is None when
    Kafka answers without one (mixed racks); ``str(error)`` then still gives the reason, for
    logs.
    """

    def __init__(self, error_code: int, message: str | None, reason: str | None = None) -> None:
        super().__init__(reason if reason is not None else message)
        self.error_code = error_code
        self.message = message


def replica_index(first: int, shift: int, j: int, n: int) -> int:
    """Index in a list of ``n`` brokers of follower ``j`` of a partition led from ``first``.

    The offset from the leader is ``1 + (shift + j) mod (n - 1)``, so the result is never
    ``first``, and ``n - 1`` consecutive values of ``j`` reach every other index once.
    Needs ``n >= 2``.
    """
    return (first + 1 + (shift + j) % (n - 1)) % n


def rack_alternated_list(brokers: Sequence[BrokerPlacement]) -> list[int]:
    """Broker ids taking one broker from each rack in turn.

    Racks are visited in sorted name order and each rack gives its brokers in ascending id
    order; a rack with none left is skipped. Every broker must have a rack. Example:
    {0: r1, 1: r3, 2: r3, 3: r2, 4: r2, 5: r1} gives [0, 3, 1, 5, 4, 2].
    """
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in _rack_map(brokers).items():
        by_rack.setdefault(rack, []).append(broker_id)
    queues: list[Iterator[int]] = [iter(sorted(by_rack[rack])) for rack in sorted(by_rack)]
    total = sum(len(ids) for ids in by_rack.values())
    result: list[int] = []
    position = 0
    while len(result) < total:
        taken = next(queues[position], None)
        if taken is not None:
            result.append(taken)
        position = (position + 1) % len(queues)
    return result


def create_partitions_start(
    brokers_sorted_ids: Sequence[int], partition0_first_replica: int
) -> int:
    """The ``fixed_start_index`` CreatePartitions passes when it places new partitions itself.

    It is the position, in the registered broker ids sorted ascending, of the first id at or
    above partition 0's first replica, or 0 when there is none (Kafka's
    ``max(0, indexWhere(_.id >= head))`` in ``AdminZkClient.createNewPartitionsAssignment``).
    The position is taken in the order given, which must be the order later passed to
    ``assign_replicas``. In rack-aware mode Kafka uses this same number as an index into the
    rack-alternated list; that quirk is kept.
    """
    for position, broker_id in enumerate(brokers_sorted_ids):
        if broker_id >= partition0_first_replica:
            return position
    return 0


def assign_replicas(
    brokers: Sequence[BrokerPlacement],
    num_partitions: int,
    replication_factor: int,
    *,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Place ``num_partitions`` partitions of ``replication_factor`` replicas on ``brokers``.

    Keys run from ``max(0, start_partition_id)`` upwards. Raises ``AssignmentError`` as
    described in the module docstring. ``rng`` is only used when ``fixed_start_index < 0``;
    without one the module's generator is used.
    """
    return dict(
        plan_replicas(
            brokers,
            num_partitions,
            replication_factor,
            fixed_start_index=fixed_start_index,
            start_partition_id=start_partition_id,
            rng=rng,
        )
    )


def plan_replicas(
    brokers: Sequence[BrokerPlacement],
    num_partitions: int,
    replication_factor: int,
    *,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> Iterator[tuple[int, list[int]]]:
    """``assign_replicas`` in two steps: Kafka's checks run now (``AssignmentError`` is raised
    by this call, not by the iteration), and the returned iterator yields ``(partition,
    replicas)`` lazily, so a caller can run the checks in Kafka's order, refuse what cannot
    be stored, and only then spend work that grows with ``num_partitions``, in slices. The
    start index and shift are drawn by this call too."""
    if num_partitions <= 0:
        raise AssignmentError(
            error_codes.INVALID_PARTITIONS, "Number of partitions must be larger than 0."
        )
    if replication_factor <= 0:
        raise AssignmentError(
            error_codes.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
        )
    if replication_factor > len(brokers):
        raise AssignmentError(
            error_codes.INVALID_REPLICATION_FACTOR,
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}.",
        )
    with_rack = sum(1 for broker in brokers if broker.rack is not None)
    if with_rack == 0:
        ids = [broker.broker_id for broker in brokers]
        leaders = _leaders(len(ids), num_partitions, fixed_start_index, start_partition_id, rng)
        return _assign_rack_unaware(ids, replication_factor, leaders)
    if with_rack < len(brokers):
        raise AssignmentError(error_codes.UNKNOWN_SERVER_ERROR, None, MIXED_RACKS_REASON)
    leaders = _leaders(len(brokers), num_partitions, fixed_start_index, start_partition_id, rng)
    return _assign_rack_aware(brokers, replication_factor, leaders)


def replica_map_min_bytes(
    num_partitions: int, replication_factor: int, broker_ids: Sequence[int], first_id: int = 0
) -> int:
    """A lower bound of the compact JSON ``{"0":[1,2],"1":[2,0],...}`` of such a placement
    (partitions ``first_id`` .. ``first_id + num_partitions - 1``), computed without placing
    anything: every replica is counted with the shortest broker id's digits. Lets a caller
    refuse a placement whose znode cannot fit ZooKeeper's ``jute.maxbuffer`` before building
    it (``num_partitions`` may be 2**31 - 1)."""
    if num_partitions <= 0 or replication_factor <= 0 or not broker_ids:
        return 0
    shortest = min(len(str(b)) for b in broker_ids)
    # Per partition: the key's quotes, ':', '[', ']', ',' and the commas between replicas.
    per_partition = 6 + replication_factor * shortest + (replication_factor - 1)
    return per_partition * num_partitions + digits_sum(first_id, first_id + num_partitions) + 1


def digits_sum(low: int, high: int) -> int:
    """The number of decimal digits of all integers in ``range(low, high)`` (``low >= 0``),
    in O(digits)."""
    total = 0
    width, start = 1, 0
    while start < high:
        end = start * 10 if start else 10
        lo, hi = max(low, start), min(high, end)
        if lo < hi:
            total += (hi - lo) * width
        width, start = width + 1, end
    return total


def _rack_map(brokers: Sequence[BrokerPlacement]) -> dict[int, str]:
    racks: dict[int, str] = {}
    for broker in brokers:
        if broker.rack is None:
            raise ValueError(f"broker {broker.broker_id} has no rack")
        racks[broker.broker_id] = broker.rack
    return racks


def _start_and_shift(fixed_start_index: int, n: int, rng: random.Random | None) -> tuple[int, int]:
    if fixed_start_index >= 0:
        return fixed_start_index, fixed_start_index
    source = rng if rng is not None else _RNG
    start = source.randrange(n)
    shift = source.randrange(n)
    return start, shift


def _leaders(
    n: int,
    num_partitions: int,
    fixed_start_index: int,
    start_partition_id: int,
    rng: random.Random | None,
) -> Iterator[tuple[int, int, int]]:
    """`(partition id, leader index, shift)` of each partition: leaders go round-robin from
    the start index over `n` brokers, the shift grows by one after every full round. The
    start index and shift are drawn now; the iterator is lazy."""
    start, shift = _start_and_shift(fixed_start_index, n, rng)
    return _leader_rounds(n, num_partitions, max(0, start_partition_id), start, shift)


def _leader_rounds(
    n: int, num_partitions: int, first_id: int, start: int, shift: int
) -> Iterator[tuple[int, int, int]]:
    for partition in range(first_id, first_id + num_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        yield partition, (partition + start) % n, shift


def _assign_rack_unaware(
    ids: list[int], replication_factor: int, leaders: Iterator[tuple[int, int, int]]
) -> Iterator[tuple[int, list[int]]]:
    n = len(ids)
    for partition, first, shift in leaders:
        replicas = [ids[first]]
        replicas.extend(
            ids[replica_index(first, shift, j, n)] for j in range(replication_factor - 1)
        )
        yield partition, replicas


def _assign_rack_aware(
    brokers: Sequence[BrokerPlacement],
    replication_factor: int,
    leaders: Iterator[tuple[int, int, int]],
) -> Iterator[tuple[int, list[int]]]:
    rack_of = _rack_map(brokers)
    rack_count = len(set(rack_of.values()))
    ordered = rack_alternated_list(brokers)
    n = len(ordered)
    for partition, first, shift in leaders:
        leader = ordered[first]
        replicas = [leader]
        racks_used = {rack_of[leader]}
        brokers_used = {leader}
        candidate = 0
        for _ in range(replication_factor - 1):
            while True:
                broker_id = ordered[replica_index(first, shift * rack_count, candidate, n)]
                candidate += 1
                rack = rack_of[broker_id]
                rack_ok = rack not in racks_used or len(racks_used) == rack_count
                broker_ok = broker_id not in brokers_used or len(brokers_used) == n
                if rack_ok and broker_ok:
                    replicas.append(broker_id)
                    racks_used.add(rack)
                    brokers_used.add(broker_id)
                    break
        yield partition, replicas
