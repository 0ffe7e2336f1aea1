"""Transactional offsets in the group state machine (Kafka's GroupMetadata pending
transactional offset commits and GroupMetadataManager.handleTxnCompletion, docs/kafka-behaviour.md
§17): pending until the marker, materialized by a commit, dropped by an abort, the same after a
reload from the records written, and the KIP-447 member checks.
"""

from __future__ import annotations

from collections.abc import Sequence

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.rules.groups.classic_group import CommittedOffset
from zkbroker.broker.rules.groups.config import CoordinatorRecord, GroupConfig
from zkbroker.broker.rules.groups.state_machine import GroupStateMachine

NOW = 1_000
TP = ("t", 0)


def _machine() -> tuple[GroupStateMachine, list[tuple[int, CoordinatorRecord]]]:
    """A machine and the (producer id, record) pairs it wrote transactionally."""
    written: list[tuple[int, CoordinatorRecord]] = []

    def write(_group: str, _records: Sequence[CoordinatorRecord]) -> int:
        return ec.NONE

    def write_txn(
        _group: str, records: Sequence[CoordinatorRecord], producer_id: int, _epoch: int
    ) -> int:
        written.extend((producer_id, r) for r in records)
        return ec.NONE

    machine = GroupStateMachine(GroupConfig(), (3, 9), write)
    machine.write_txn = write_txn
    return machine, written


def _offset(value: int) -> CommittedOffset:
    return CommittedOffset(value, -1, "", NOW, None)


def _commit(
    machine: GroupStateMachine,
    producer_id: int,
    value: int,
    *,
    member: str = "",
    generation: int = -1,
) -> int:
    codes = machine.commit_txn_offsets(
        "g", producer_id, 0, member, None, generation, {TP: _offset(value)}, NOW
    )
    return codes[TP]


def _everywhere(_group: str) -> bool:
    return True


def test_pending_until_commit() -> None:
    machine, _ = _machine()
    assert _commit(machine, 7, 42) == ec.NONE
    assert machine.unstable_offset("g", TP)
    assert machine.fetch_offsets("g", [TP]) == {TP: None}
    assert machine.complete_txn(7, True, _everywhere, NOW) == ["g"]
    assert not machine.unstable_offset("g", TP)
    assert machine.fetch_offsets("g", [TP])[TP] == _offset(42)


def test_abort_drops_and_the_empty_group_goes() -> None:
    machine, _ = _machine()
    assert _commit(machine, 7, 42) == ec.NONE
    machine.complete_txn(7, False, _everywhere, NOW)
    assert machine.fetch_offsets("g", [TP]) == {TP: None}
    assert machine.group("g") is None


def test_marker_of_another_partition_leaves_the_offsets_pending() -> None:
    machine, _ = _machine()
    _commit(machine, 7, 42)
    assert machine.complete_txn(7, True, lambda _g: False, NOW) == []
    assert machine.unstable_offset("g", TP)


def test_member_checks_apply_only_when_named() -> None:
    machine, _ = _machine()
    assert _commit(machine, 7, 1, member="m-1") == ec.UNKNOWN_MEMBER_ID
    assert _commit(machine, 7, 1, generation=3) == ec.ILLEGAL_GENERATION
    assert machine.group("g") is None  # nothing stored, nothing kept
    assert _commit(machine, 7, 1, generation=0) == ec.NONE  # an Empty group's generation


def test_reload_replays_pending_and_completed_transactions() -> None:
    machine, written = _machine()
    _commit(machine, 7, 42)
    _commit(machine, 8, 50)
    replayed, _ = _machine()
    for producer_id, (key, value) in written:
        replayed.replay(key, value, NOW, producer_id)
    assert replayed.unstable_offset("g", TP)
    # Producer 7's marker (a commit) replayed; producer 8's transaction is still open.
    replayed.complete_txn(7, True, _everywhere, NOW)
    assert replayed.fetch_offsets("g", [TP])[TP] == _offset(42)
    assert replayed.unstable_offset("g", TP)
    replayed.complete_txn(8, False, _everywhere, NOW)
    assert replayed.fetch_offsets("g", [TP])[TP] == _offset(42)
    assert not replayed.unstable_offset("g", TP)
