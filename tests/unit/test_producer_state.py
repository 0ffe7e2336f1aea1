"""Idempotent producer checks (`zkbroker.broker.rules.producer_state`) against Kafka's rules."""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.producer_state import (
    INT32_MAX,
    ProducerBatch,
    ProducerStateTable,
    last_sequence,
)

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


def test_state_below_the_log_start_is_forgotten() -> None:
    table = ProducerStateTable()
    table.observe(batch(7, 0, 0, 1, 0))
    table.observe(batch(8, 0, 0, 1, 5))
    table.truncate_below(3)
    assert set(table.entries) == {8}
    assert table.synced_to == 6
