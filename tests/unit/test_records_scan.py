"""The quick record walk (`scan_records`) against the full decoder it stands in for.

The walk may decline (``None``) where the decoder succeeds (records with headers), but where
it answers it must agree with the decoder exactly: same count, same extremes, same first
record with the largest timestamp, same null keys; and it must decline whatever the decoder
refuses. Validation's answers with the walk must equal its answers without it.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from zkbroker.broker.protocol.records import (
    InvalidRecordError,
    NewRecord,
    RecordBatchV2,
    encode_batch,
    read_batches,
)
from zkbroker.broker.protocol.records.batch_v2 import decode_records
from zkbroker.broker.protocol.records.scan import scan_records
from zkbroker.broker.rules import log_validation
from zkbroker.broker.rules.log_validation import LogConfig, validate_append

_record = st.builds(
    NewRecord,
    offset=st.just(0),
    timestamp=st.integers(-5, 1 << 42),
    key=st.none() | st.binary(max_size=300),
    value=st.none() | st.binary(max_size=9000),
    headers=st.just(())
    | st.lists(st.tuples(st.binary(max_size=3), st.none()), max_size=2).map(tuple),
)


def _batch(records: list[NewRecord]) -> RecordBatchV2:
    numbered = [NewRecord(i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)]
    batch = read_batches(encode_batch(numbered))[0][0]
    assert isinstance(batch, RecordBatchV2)
    return batch


def _agrees(body: bytes, count: int) -> None:
    scan = scan_records(body, count)
    try:
        records = decode_records(body, count, 0, 0, None)
    except InvalidRecordError:
        assert scan is None
        return
    if scan is None:
        assert count <= 0 or any(r.headers for r in records)
        return
    stamps = [r.timestamp for r in records]
    assert scan.count == len(records) == count
    assert scan.min_timestamp_delta == min(stamps)
    assert scan.max_timestamp_delta == max(stamps)
    assert scan.index_of_max == stamps.index(max(stamps))
    assert scan.any_null_key == any(r.key is None for r in records)


@settings(max_examples=300, deadline=None)
@given(st.lists(_record, min_size=1, max_size=20))
def test_scan_agrees_with_the_decoder_on_well_formed_records(records: list[NewRecord]) -> None:
    batch = _batch(records)
    _agrees(bytes(batch.records_body()), batch.records_count)


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(_record, min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(-1, 3),
    st.integers(0, 40),
)
def test_scan_declines_whatever_the_decoder_refuses(
    records: list[NewRecord], edits: list[tuple[int, int]], count_change: int, cut: int
) -> None:
    batch = _batch(records)
    body = bytearray(batch.records_body())
    for position, value in edits:
        body[position % len(body)] = value
    if cut:
        del body[-cut:]
    _agrees(bytes(body), batch.records_count + count_change)


def test_a_record_with_headers_is_left_to_the_decoder() -> None:
    batch = _batch([NewRecord(0, 5, b"k", b"v", ((b"h", b"x"),))])
    assert scan_records(batch.records_body(), 1) is None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_record, min_size=1, max_size=8),
    st.booleans(),
    st.sampled_from([1 << 62, 3_600_000, 10]),
    st.integers(0, 1 << 42),
)
def test_validation_answers_the_same_with_and_without_the_walk(
    records: list[NewRecord], compacted: bool, bound: int, now: int
) -> None:
    batch = encode_batch(
        [NewRecord(i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)]
    )
    config = LogConfig(
        compacted=compacted, timestamp_before_max_ms=bound, timestamp_after_max_ms=bound
    )

    def run() -> object:
        return validate_append(
            batch,
            topic_partition="t-0",
            next_offset=7,
            now_ms=now,
            config=config,
            partition_leader_epoch=3,
            release=(3, 9),
        )

    with_walk = run()
    original = log_validation.scan_records
    log_validation.scan_records = lambda body, count: None  # type: ignore[assignment]
    try:
        without = run()
    finally:
        log_validation.scan_records = original  # type: ignore[assignment]
    assert with_walk == without


def test_a_record_longer_than_its_fields_is_refused_by_both() -> None:
    # One record whose declared length covers a stray byte after its (empty) header list.
    body = bytearray(_batch([NewRecord(0, 5, b"k", b"v")]).records_body())
    assert body[0] < 0x80  # a one-byte length (zig-zag): make it one longer
    body[0] += 2
    body.append(0)
    _agrees(bytes(body), 1)
    assert scan_records(bytes(body), 1) is None


def _same_layout(count: int, key: bytes | None, value_size: int, stamps: list[int]) -> bytes:
    """A producer's batch: ``count`` records of one size, numbered 0, 1, 2, ..."""
    records = [
        NewRecord(i, stamps[i % len(stamps)], key, bytes([i % 251]) * value_size)
        for i in range(count)
    ]
    return bytes(_batch(records).records_body())


_runs = st.tuples(
    st.integers(1, 300),
    st.none() | st.binary(min_size=0, max_size=70),
    st.sampled_from([0, 1, 60, 63, 64, 200, 1000, 8190, 8200]),
    st.lists(st.integers(-70, 70), min_size=1, max_size=5),
)


@settings(max_examples=300, deadline=None)
@given(_runs)
def test_runs_of_one_layout_agree_with_the_decoder(run: tuple) -> None:
    count, key, value_size, stamps = run
    _agrees(_same_layout(count, key, value_size, stamps), count)


@settings(max_examples=1500, deadline=None)
@given(
    _runs,
    st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), min_size=1, max_size=3),
    st.integers(-1, 1),
    st.integers(0, 3),
)
def test_runs_of_one_layout_decline_whatever_the_decoder_refuses(
    run: tuple, edits: list[tuple[int, int]], count_change: int, cut: int
) -> None:
    count, key, value_size, stamps = run
    body = bytearray(_same_layout(count, key, value_size, stamps))
    for position, value in edits:
        body[position % len(body)] = value
    if cut:
        del body[-cut:]
    _agrees(bytes(body), count + count_change)


def test_a_record_deep_in_a_run_that_differs_is_read_as_the_decoder_reads_it() -> None:
    body = _same_layout(500, None, 1000, [3, 0, 5])
    size = len(body) // 500  # records 64-499 are one byte longer (two-byte offset deltas)
    assert scan_records(memoryview(body), 500) == scan_records(body, 500)
    _agrees(body, 500)
    late = 64 * size + 300 * (size + 1)  # the first byte of record 364
    early = 10 * size  # the first byte of record 10, in the run of one-byte offset deltas
    # Every field byte (lengths, attributes, deltas, the header count) of a record inside each
    # run, set to values that keep, end or continue a varint.
    for record_at, record_size in ((early, size), (late, size + 1)):
        for at in (*range(8), record_size - 1):
            for value in (0x00, 0x01, 0x02, 0x7F, 0x80, 0x81, 0xFF):
                edited = bytearray(body)
                edited[record_at + at] = value
                _agrees(bytes(edited), 500)
    # A larger timestamp delta late in the batch is its maximum, at its index.
    edited = bytearray(body)
    edited[late + 3] = 100  # zig-zag 50
    scan = scan_records(bytes(edited), 500)
    assert scan is not None and (scan.max_timestamp_delta, scan.index_of_max) == (50, 364)
