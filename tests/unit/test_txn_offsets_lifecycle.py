"""Pending transactional offsets against group deletion, OffsetDelete and offset expiry
(Kafka 3.9's ``GroupMetadata.hasOffsets`` / ``removeOffsets`` / ``removeExpiredOffsets`` and
``GroupCoordinator.handleDeleteGroups``, ``GroupMetadataManager.cleanupGroupMetadata``;
docs/kafka-behaviour.md §17):

* expiry removes committed offsets only; an Empty group with offsets pending in a transaction
  is not Dead (``hasOffsets`` counts them) and the commit still lands;
* DeleteGroups goes by state: an Empty group is deleted with its pending offsets, which the
  transaction's commit then does not bring back;
* OffsetDelete drops the partitions' pending offsets too, and the group stays (not Dead) until
  the transaction ends, as Kafka's emptied per-producer map still counts.
"""

from __future__ import annotations

from collections.abc import Sequence

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.rules.groups.classic_group import CommittedOffset, GroupState
from zkbroker.broker.rules.groups.config import CoordinatorRecord, GroupConfig
from zkbroker.broker.rules.groups.offsets_topic_codec import GroupKey, decode_key
from zkbroker.broker.rules.groups.state_machine import GroupStateMachine

NOW = 1_000
RETENTION = 60_000
TP, TP2 = ("t", 0), ("t", 1)
PID = 7


def _machine() -> tuple[GroupStateMachine, list[CoordinatorRecord]]:
    """A machine and the non-transactional records it wrote (tombstones among them)."""
    written: list[CoordinatorRecord] = []

    def write(_group: str, records: Sequence[CoordinatorRecord]) -> int:
        written.extend(records)
        return ec.NONE

    def write_txn(
        _group: str, _records: Sequence[CoordinatorRecord], _pid: int, _epoch: int
    ) -> int:
        return ec.NONE

    machine = GroupStateMachine(GroupConfig(offsets_retention_ms=RETENTION), (3, 9), write)
    machine.write_txn = write_txn
    return machine, written


def _offset(value: int) -> CommittedOffset:
    return CommittedOffset(value, -1, "", NOW, None)


def _commit_txn(machine: GroupStateMachine, offsets: dict[tuple[str, int], int]) -> None:
    codes = machine.commit_txn_offsets(
        "g", PID, 0, "", None, -1, {tp: _offset(v) for tp, v in offsets.items()}, NOW
    )
    assert set(codes.values()) == {ec.NONE}


def _end_txn(machine: GroupStateMachine, *, commit: bool, now: int) -> None:
    machine.complete_txn(PID, commit, lambda _g: True, now)


def _group_tombstones(written: list[CoordinatorRecord]) -> int:
    return sum(1 for key, value in written if value is None and decode_key(key) == GroupKey("g"))


def test_expiry_keeps_an_empty_group_with_only_pending_transactional_offsets() -> None:
    machine, written = _machine()
    _commit_txn(machine, {TP: 5})
    assert machine.expire_offsets(NOW + 10 * RETENTION) == 0
    group = machine.groups.get("g")
    assert group is not None and group.is_state(GroupState.EMPTY)
    assert _group_tombstones(written) == 0
    assert machine.unstable_offset("g", TP)
    _end_txn(machine, commit=True, now=NOW + 10 * RETENTION)
    assert machine.fetch_offsets("g", [TP])[TP] == _offset(5)


def test_expiry_removes_committed_offsets_but_not_pending_ones() -> None:
    machine, written = _machine()
    assert machine.commit_offsets("g", "", None, -1, {TP: _offset(1)}, NOW) == {TP: ec.NONE}
    _commit_txn(machine, {TP: 9, TP2: 4})
    now = NOW + RETENTION
    assert machine.expire_offsets(now) == 1
    assert machine.fetch_offsets("g", [TP])[TP] is None
    assert "g" in machine.groups and _group_tombstones(written) == 0
    assert machine.unstable_offset("g", TP) and machine.unstable_offset("g", TP2)
    _end_txn(machine, commit=True, now=now)
    assert machine.fetch_offsets("g", [TP, TP2]) == {TP: _offset(9), TP2: _offset(4)}


def test_delete_groups_deletes_an_empty_group_with_its_pending_offsets() -> None:
    machine, written = _machine()
    assert machine.commit_offsets("g", "", None, -1, {TP: _offset(1)}, NOW) == {TP: ec.NONE}
    _commit_txn(machine, {TP: 9, TP2: 4})
    assert machine.delete_groups(["g"], NOW) == {"g": ec.NONE}
    assert "g" not in machine.groups and _group_tombstones(written) == 1
    assert not machine.unstable_offset("g", TP2)
    # The marker finds no group holding them: nothing comes back.
    _end_txn(machine, commit=True, now=NOW + 1)
    assert machine.fetch_offsets("g", [TP, TP2]) == {TP: None, TP2: None}
    assert machine.delete_groups(["g"], NOW + 2) == {"g": ec.GROUP_ID_NOT_FOUND}


def test_offset_delete_drops_the_partitions_pending_offsets_and_keeps_the_group() -> None:
    machine, written = _machine()
    assert machine.commit_offsets("g", "", None, -1, {TP: _offset(1)}, NOW) == {TP: ec.NONE}
    _commit_txn(machine, {TP: 9})
    assert machine.delete_offsets("g", [TP], NOW) == (ec.NONE, {TP: ec.NONE})
    assert not machine.unstable_offset("g", TP)
    # Kafka's emptied per-producer map still counts in hasOffsets: not Dead yet.
    assert "g" in machine.groups and _group_tombstones(written) == 0
    _end_txn(machine, commit=True, now=NOW + 1)
    assert machine.fetch_offsets("g", [TP]) == {TP: None}
