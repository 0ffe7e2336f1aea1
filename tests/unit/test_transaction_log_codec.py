"""``__transaction_state`` records against bytes built by hand from Kafka 3.9's
TransactionLogKey.json / TransactionLogValue.json (docs/kafka-behaviour.md §17)."""

from __future__ import annotations

import struct

import pytest

from zkbroker.broker.rules.transactions.state import TxnState, TxnTransit
from zkbroker.broker.transactions import loading
from zkbroker.broker.transactions import transaction_log_codec as rec


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


ONGOING = rec.TxnLogValue(
    producer_id=1000,
    producer_epoch=2,
    timeout_ms=60000,
    state_id=1,
    partitions=frozenset({("b", 3), ("a", 1), ("a", 0)}),
    last_update_timestamp=200,
    start_timestamp=100,
)
HEAD = i64(1000) + i16(2) + i32(60000) + b"\x01"
TAIL = i64(200) + i64(100)

# v0: int16 string lengths, int32 array counts, topics sorted, partitions sorted.
ONGOING_V0 = (
    i16(0)
    + HEAD
    + i32(2)
    + i16(1) + b"a" + i32(2) + i32(0) + i32(1)
    + i16(1) + b"b" + i32(1) + i32(3)
    + TAIL
)  # fmt: skip
# v1: compact (length + 1) strings and arrays, an empty tag section after each struct.
ONGOING_V1 = (
    i16(1)
    + HEAD
    + b"\x03"
    + b"\x02a" + b"\x03" + i32(0) + i32(1) + b"\x00"
    + b"\x02b" + b"\x02" + i32(3) + b"\x00"
    + TAIL
    + b"\x00"
)  # fmt: skip
EMPTY = rec.TxnLogValue(7, 0, 1000, 0, None, 5, -1)
EMPTY_V0 = i16(0) + i64(7) + i16(0) + i32(1000) + b"\x00" + i32(-1) + i64(5) + i64(-1)
EMPTY_V1 = i16(1) + i64(7) + i16(0) + i32(1000) + b"\x00" + b"\x00" + i64(5) + i64(-1) + b"\x00"


def test_key_is_version_0_and_the_id() -> None:
    assert rec.encode_key("txn-1") == i16(0) + i16(5) + b"txn-1"
    assert rec.decode_key(i16(0) + i16(5) + b"txn-1") == "txn-1"


def test_other_key_versions_are_not_transaction_keys() -> None:
    assert rec.decode_key(i16(1) + i16(1) + b"x") is None


@pytest.mark.parametrize(
    ("value", "version", "raw"),
    [
        (ONGOING, 0, ONGOING_V0),
        (ONGOING, 1, ONGOING_V1),
        (EMPTY, 0, EMPTY_V0),
        (EMPTY, 1, EMPTY_V1),
    ],
    ids=["ongoing-v0", "ongoing-v1", "empty-v0", "empty-v1"],
)
def test_value_bytes(value: rec.TxnLogValue, version: int, raw: bytes) -> None:
    assert rec.encode_value(value, version) == raw
    assert rec.decode_value(raw) == value


def test_written_version_is_0() -> None:
    assert rec.encode_value(ONGOING) == ONGOING_V0


@pytest.mark.parametrize(
    ("release", "transaction_version", "version"),
    [((3, 9), 0, 0), ((3, 9), 1, 1), ((3, 9), 2, 1), ((3, 8), 1, 0), ((2, 8), 0, 0)],
)
def test_value_version(release: tuple[int, ...], transaction_version: int, version: int) -> None:
    # TransactionStateManager.usesFlexibleRecords (3.9); v0 only before.
    assert rec.value_version(release, transaction_version) == version


def test_empty_partition_list_is_not_null() -> None:
    value = rec.TxnLogValue(1, 0, 10, 4, frozenset(), 1, 1)
    raw = rec.encode_value(value)
    assert raw[2 + 8 + 2 + 4 + 1 :][:4] == i32(0)
    assert rec.decode_value(raw) == value


def test_tombstone_is_none() -> None:
    assert rec.decode_value(None) is None


def test_unknown_tagged_fields_are_skipped() -> None:
    # Kafka 4.0 adds tagged producer ids to v1: a 3.9-era reader skips them.
    tagged = ONGOING_V1[:-1] + b"\x01" + b"\x00" + b"\x08" + i64(42)
    assert rec.decode_value(tagged) == ONGOING


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (i16(2) + ONGOING_V0[2:], "Unknown version 2 from the transaction log message value"),
        (ONGOING_V0[:-1], "shorter"),
        (ONGOING_V0 + b"\x00", "left after"),
        (i16(0) + i64(1) + i16(0) + i32(1) + b"\x01" + i32(1) + i16(-1), "null"),
    ],
    ids=["version", "truncated", "trailing", "null-topic"],
)
def test_bad_values(raw: bytes, message: str) -> None:
    with pytest.raises(rec.TxnRecordFormatError, match=message):
        rec.decode_value(raw)


def test_encode_rejects_unknown_version() -> None:
    with pytest.raises(ValueError):
        rec.encode_value(ONGOING, 2)


def transit(state: TxnState, partitions: frozenset[tuple[str, int]]) -> TxnTransit:
    return TxnTransit(9, 8, 3, -1, 500, state, partitions, 10, 20)


def test_value_of_a_transit() -> None:
    ongoing = rec.value_of(transit(TxnState.ONGOING, frozenset({("t", 0)})))
    assert ongoing == rec.TxnLogValue(9, 3, 500, 1, frozenset({("t", 0)}), 20, 10)
    assert rec.value_of(transit(TxnState.EMPTY, frozenset())).partitions is None
    with pytest.raises(ValueError):
        rec.value_of(transit(TxnState.EMPTY, frozenset({("t", 0)})))


def test_metadata_of_a_value() -> None:
    meta = rec.metadata_of("tid", rec.decode_value(ONGOING_V0) or EMPTY)
    assert (meta.producer_id, meta.producer_epoch, meta.timeout_ms) == (1000, 2, 60000)
    assert meta.state is TxnState.ONGOING
    assert meta.partitions == {("a", 0), ("a", 1), ("b", 3)}
    assert (meta.start_timestamp, meta.last_update_timestamp) == (100, 200)
    # Not stored in v0: a loaded id has no previous producer id or epoch.
    assert (meta.last_producer_id, meta.last_producer_epoch) == (-1, -1)
    assert meta.pending_state is None


def test_metadata_of_an_empty_value_ignores_partitions() -> None:
    value = rec.TxnLogValue(1, 0, 10, 0, frozenset({("t", 0)}), 1, -1)
    assert rec.metadata_of("tid", value).partitions == set()


# ---- loading a partition (TransactionStateManager.loadTransactionMetadata) ----------------


def entry(tid: str, value: rec.TxnLogValue | None) -> tuple[bytes, bytes | None]:
    return rec.encode_key(tid), None if value is None else rec.encode_value(value)


def test_replay_keeps_the_last_value_and_drops_tombstones() -> None:
    later = rec.TxnLogValue(1000, 3, 60000, 2, frozenset({("a", 0)}), 300, 100)
    loaded = loading.replay(
        [
            entry("one", ONGOING),
            entry("two", EMPTY),
            (i16(9) + b"future", b"ignored"),  # unknown key version: skipped
            entry("one", later),
            entry("two", None),  # tombstone
        ]
    )
    assert list(loaded) == ["one"]
    assert loaded["one"].state is TxnState.PREPARE_COMMIT
    assert loaded["one"].producer_epoch == 3
    assert [m.transactional_id for m in loading.owing_markers(loaded)] == ["one"]


def test_replay_stops_at_an_unreadable_record() -> None:
    loaded = loading.replay([entry("one", EMPTY), (None, b"x"), entry("two", EMPTY)])
    assert list(loaded) == ["one"]
    loaded = loading.replay(
        [entry("one", EMPTY), (rec.encode_key("bad"), i16(5)), entry("two", EMPTY)]
    )
    assert list(loaded) == ["one"]
