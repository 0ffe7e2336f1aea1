"""Idempotent producer checks (`zkbroker.broker.rules.producer_state`) against Kafka's rules."""

from __future__ import annotations

import pytest

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.producer_state import (
    INT32_MAX,
    ProducerBatch,
    ProducerStateTable,
    last_sequence,
)
from zkbroker.zk_layout.release import Release

TP = "t-0"


def batch(pid: int, epoch: int, first: int, count: int, offset: int) -> ProducerBatch:
    return ProducerBatch(
        producer_id=pid,
        epoch=epoch,
        first_seq=first,
        last_seq=last_sequence(first, count - 1),
        first_offset=offset,
        last_offset=offset + count - 1,
        max_timestamp=1000 + offset,
    )


def test_a_new_producer_is_accepted_at_any_sequence() -> None:
    table = ProducerStateTable()
    assert table.check(batch(7, 0, 0, 3, 0), TP) is None
    # KIP-360: state lost to retention must not fail a live producer.
    assert table.check(batch(8, 0, 42, 3, 0), TP) is None


def test_the_sequence_must_continue_within_an_epoch() -> None:
    table = ProducerStateTable()
    table.observe(batch(7, 0, 0, 3, 0))
    assert table.check(batch(7, 0, 3, 2, 3), TP) is None
    gap = table.check(batch(7, 0, 5, 1, 3), TP)
    assert gap is not None and gap.code == error_codes.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert gap.message == (
        "Out of order sequence number for producer 7 at offset 3 in partition t-0: 5 "
        "(incoming seq. number), 2 (current end sequence number)"
    )


def test_an_older_epoch_is_refused_and_a_new_one_starts_at_zero() -> None:
    table = ProducerStateTable()
    table.observe(batch(7, 3, 0, 1, 0))
    old = table.check(batch(7, 2, 1, 1, 1), TP)
    assert old is not None and old.code == error_codes.INVALID_PRODUCER_EPOCH
    assert "is 2, which is smaller than the last seen epoch 3" in old.message
    assert table.check(batch(7, 4, 0, 1, 1), TP) is None
    bumped = table.check(batch(7, 4, 9, 1, 1), TP)
    assert bumped is not None and bumped.code == error_codes.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_duplicates_are_found_among_the_last_five_batches() -> None:
    table = ProducerStateTable()
    for i in range(6):
        table.observe(batch(7, 0, i * 2, 2, 10 + i * 2))
    again = table.duplicate(batch(7, 0, 10, 2, 99))
    assert again is not None and again.first_offset == 20
    assert table.duplicate(batch(7, 0, 0, 2, 99)) is None  # the sixth-newest was dropped
    assert table.duplicate(batch(7, 1, 10, 2, 99)) is None  # another epoch


def test_sequences_wrap_after_int32_max() -> None:
    assert last_sequence(INT32_MAX - 1, 3) == 1
    table = ProducerStateTable()
    table.observe(batch(7, 0, INT32_MAX - 1, 2, 0))
    assert table.check(batch(7, 0, 0, 1, 2), TP) is None


@pytest.mark.parametrize("release", [(2, 4), (2, 8), (3, 9)])
def test_from_2_4_a_moved_log_start_keeps_every_producer(release: Release) -> None:
    """KAFKA-7190: ``truncateHead`` / ``onLogStartOffsetIncremented`` drop no producer."""
    table = ProducerStateTable(release)
    table.observe(batch(7, 0, 0, 6, 0))  # sequences 0-5 at offsets 0-5
    table.observe_marker(7, 0, 6, 2_000)  # its COMMIT marker
    assert table.truncate_below(7) == []
    assert set(table.entries) == {7}
    assert table.check(batch(7, 0, 6, 1, 7), TP) is None  # the sequence goes on
    assert table.synced_to == 7


@pytest.mark.parametrize("release", [(1, 0), (2, 0), (2, 3)])
def test_before_2_4_producers_whose_last_data_is_below_the_start_go(release: Release) -> None:
    table = ProducerStateTable(release)
    table.observe(batch(7, 0, 0, 6, 0))  # 0-5
    table.observe_marker(7, 0, 6, 2_000)  # a marker does not keep it (lastDataOffset)
    table.observe(batch(8, 0, 0, 2, 7))  # 7-8
    table.observe(batch(9, 0, 0, 1, 9))  # 9
    table.observe_marker(9, 1, 10, 2_000)  # a new epoch: only the marker is left
    assert sorted(table.truncate_below(6)) == [7, 9]
    assert set(table.entries) == {8}
    # A kept producer keeps every batch, the ones below the start too.
    assert table.duplicate(batch(8, 0, 0, 2, 99)) is not None
    assert table.truncate_below(6) == []  # only a rise of the log start acts


def test_0_11_keeps_a_producer_whose_marker_is_at_the_start() -> None:
    table = ProducerStateTable((0, 11, 0))
    table.observe(batch(7, 0, 0, 6, 0))
    table.observe_marker(7, 0, 6, 2_000)
    assert table.truncate_below(6) == []
    assert table.check(batch(7, 0, 6, 1, 7), TP) is None
    assert table.truncate_below(7) == [7]


@pytest.mark.parametrize(
    ("release", "code"),
    [
        ((0, 11, 0), error_codes.OUT_OF_ORDER_SEQUENCE_NUMBER),
        ((1, 0), error_codes.UNKNOWN_PRODUCER_ID),
        ((2, 3), error_codes.UNKNOWN_PRODUCER_ID),
        ((2, 4), error_codes.UNKNOWN_PRODUCER_ID),
        ((2, 5), None),
        ((3, 9), None),
    ],
)
def test_an_unknown_producers_first_sequence_per_release(
    release: Release, code: int | None
) -> None:
    table = ProducerStateTable(release)
    assert table.check(batch(7, 0, 0, 1, 0), TP) is None  # sequence 0: always
    problem = table.check(batch(7, 0, 6, 1, 0), TP)
    assert (problem and problem.code) == code


@pytest.mark.parametrize(
    ("release", "code"),
    [
        ((2, 0), error_codes.OUT_OF_ORDER_SEQUENCE_NUMBER),
        ((2, 1), error_codes.UNKNOWN_PRODUCER_ID),
        ((2, 4), error_codes.UNKNOWN_PRODUCER_ID),
        ((2, 5), error_codes.OUT_OF_ORDER_SEQUENCE_NUMBER),
        ((3, 9), error_codes.OUT_OF_ORDER_SEQUENCE_NUMBER),
    ],
)
def test_a_known_epoch_without_a_sequence_per_release(release: Release, code: int) -> None:
    table = ProducerStateTable(release)
    table.observe_marker(7, 1, 0, 1_000)  # the coordinator bumped the epoch: no batch yet
    assert table.check(batch(7, 1, 0, 1, 1), TP) is None
    problem = table.check(batch(7, 1, 3, 1, 1), TP)
    assert problem is not None and problem.code == code
