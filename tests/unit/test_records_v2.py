"""Record batch v2 (KIP-98) against kafka-python's independent builder and reader."""

from __future__ import annotations

import re
import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.records_oracle import kp_read_all, kp_v2_batch, require_codec
from zkbroker.broker.protocol.records import (
    CompressionType,
    InvalidRecordError,
    NewRecord,
    RecordBatchV2,
    TimestampType,
    encode_batch,
)
from zkbroker.broker.protocol.records.errors import CorruptRecordError

CODECS = [0, 1, 2, 3, 4]

SPECS = [
    (1_700_000_000_000, None, b"", []),
    (1_700_000_000_005, b"k1", b"v" * 100, [("h1", b"x"), ("h2", None)]),
    (1_699_999_999_000, b"", None, [("", b"")]),
    (1_700_000_000_003, b"k3" * 50, b"\x00\xff" * 5000, []),
]


def _header_fields(data: bytes) -> tuple[int, ...]:
    # Independent of the code under test: the KIP-98 header layout, read with struct.
    return struct.unpack_from(">qiibIhiqqqhii", data, 0)


@pytest.mark.parametrize("codec", CODECS)
def test_decodes_kafka_python_batches(codec: int) -> None:
    data = kp_v2_batch(SPECS, codec, producer_id=7, producer_epoch=2, base_sequence=40)
    batch = RecordBatchV2(data)
    assert batch.is_valid()
    assert batch.compression == CompressionType(codec)
    assert (batch.base_offset, batch.last_offset_delta, batch.records_count) == (0, 3, 4)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 2, 40)
    assert batch.base_timestamp == 1_700_000_000_000
    assert batch.max_timestamp == 1_700_000_000_005
    records = batch.records()
    assert [(r.offset, r.timestamp, r.key, r.value) for r in records] == [
        (i, ts, key, value) for i, (ts, key, value, _) in enumerate(SPECS)
    ]
    assert [r.headers for r in records] == [
        tuple((k.encode(), v) for k, v in headers) for *_, headers in SPECS
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_our_batches(codec: int) -> None:
    require_codec(codec)
    new = [
        NewRecord(i, ts, key, value, tuple((k.encode(), v) for k, v in headers))
        for i, (ts, key, value, headers) in enumerate(SPECS)
    ]
    data = encode_batch(
        new,
        compression=CompressionType(codec),
        producer_id=9,
        producer_epoch=1,
        base_sequence=5,
        transactional=True,
    )
    fields = _header_fields(data)
    assert fields[1] == len(data) - 12  # batch length
    assert fields[4] == crc32c.crc32c(data[21:])
    assert fields[5] == codec | 0x10  # codec and the transactional bit
    assert kp_read_all(data) == [
        {
            "offset": i,
            "timestamp": ts,
            "timestamp_type": 0,
            "key": key,
            "value": value,
            "headers": headers,
        }
        for i, (ts, key, value, headers) in enumerate(SPECS)
    ]


def test_uncompressed_encoding_is_byte_identical_to_kafka_python() -> None:
    theirs = kp_v2_batch(SPECS)
    ours = encode_batch(
        [
            NewRecord(i, ts, key, value, tuple((k.encode(), v) for k, v in headers))
            for i, (ts, key, value, headers) in enumerate(SPECS)
        ],
        partition_leader_epoch=0,  # kafka-python writes 0 where Kafka's builder writes -1
    )
    assert ours == theirs


def test_log_append_time_batch_reads_the_max_timestamp_for_every_record() -> None:
    data = encode_batch(
        [NewRecord(0, 10, None, b"a"), NewRecord(1, 20, None, b"b")],
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=99,
    )
    assert _header_fields(data)[5] & 0x08
    assert [r.timestamp for r in RecordBatchV2(data).records()] == [99, 99]
    assert [r["timestamp"] for r in kp_read_all(data)] == [99, 99]


keys = st.one_of(st.none(), st.binary(max_size=40))
headers = st.lists(st.tuples(st.binary(max_size=10), keys), max_size=3).map(tuple)
records = st.lists(
    st.tuples(st.integers(-(1 << 40), 1 << 42), keys, keys, headers), min_size=1, max_size=20
)


@settings(max_examples=60, deadline=None)
@given(records, st.sampled_from([0, 1, 4]), st.integers(0, 1 << 40))
def test_encode_decode_round_trip(
    recs: list[tuple[int, bytes | None, bytes | None, tuple[tuple[bytes, bytes | None], ...]]],
    codec: int,
    base_offset: int,
) -> None:
    new = [NewRecord(base_offset + i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(recs)]
    batch = RecordBatchV2(encode_batch(new, base_offset=base_offset, compression=codec))
    assert batch.is_valid()
    assert batch.max_timestamp == max(ts for ts, *_ in recs)
    got = batch.records()
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (n.offset, n.timestamp, n.key, n.value, n.headers) for n in new
    ]


# -- header rewrite --------------------------------------------------------------------------


def test_with_header_keeps_the_crc_when_only_offset_and_epoch_change() -> None:
    data = kp_v2_batch(SPECS)
    out = RecordBatchV2(data).with_header(
        base_offset=1000,
        partition_leader_epoch=7,
        max_timestamp=(TimestampType.CREATE_TIME, 1_700_000_000_005),
    )
    before, after = _header_fields(data), _header_fields(out)
    assert after[0] == 1000 and after[2] == 7
    assert after[4] == before[4]  # CRC untouched: offset and epoch are outside it
    assert out[61:] == data[61:]
    assert [r["offset"] for r in kp_read_all(out)] == [1000, 1001, 1002, 1003]


def test_with_header_for_log_append_time_sets_the_bit_and_recomputes_the_crc() -> None:
    data = kp_v2_batch(SPECS, 1)
    out = RecordBatchV2(data).with_header(max_timestamp=(TimestampType.LOG_APPEND_TIME, 12345))
    fields = _header_fields(out)
    assert fields[5] == 0x01 | 0x08
    assert fields[8] == 12345
    assert fields[4] == crc32c.crc32c(out[21:])
    assert out[61:] == data[61:]  # the compressed records are not touched
    assert {r["timestamp"] for r in kp_read_all(out)} == {12345}


# -- malformed batches -----------------------------------------------------------------------


def _uncompressed(records_bytes: bytes, count: int, last_offset_delta: int = 0) -> bytes:
    """A v2 batch around hand-written record bytes, with a correct CRC."""
    header = bytearray(
        struct.pack(
            ">qiibIhiqqqhii",
            0,
            49 + len(records_bytes),
            -1,
            2,
            0,
            0,
            last_offset_delta,
            1000,
            1000,
            -1,
            -1,
            -1,
            count,
        )
    )
    body = bytes(header) + records_bytes
    crc = crc32c.crc32c(body[21:])
    return body[:17] + struct.pack(">I", crc) + body[21:]


# One record: length 7 (zig-zag 14), attributes 0, timestamp delta 0, offset delta 0,
# key -1 (zig-zag 1), value length 1 (zig-zag 2) "x", no headers.
ONE = bytes([14, 0, 0, 0, 1, 2]) + b"x" + bytes([0])


def test_hand_written_batch_reads() -> None:
    (record,) = RecordBatchV2(_uncompressed(ONE, 1)).records()
    assert (record.key, record.value, record.headers, record.size_in_bytes) == (None, b"x", (), 8)


def test_flipped_byte_fails_the_crc() -> None:
    data = bytearray(kp_v2_batch(SPECS))
    data[-1] ^= 0x01
    assert not RecordBatchV2(bytes(data)).is_valid()


def test_too_short_batch_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="smaller than the minimum allowed overhead 61"):
        RecordBatchV2(kp_v2_batch(SPECS)[:60])


def test_truncated_records_premature_eof() -> None:
    with pytest.raises(InvalidRecordError, match="premature EOF reached"):
        RecordBatchV2(_uncompressed(ONE, 2, 1)).records()


def test_record_longer_than_the_batch() -> None:
    message = (
        "Invalid record size: expected 7 bytes in record payload, but instead the buffer has "
        "only 5 remaining bytes."
    )
    with pytest.raises(InvalidRecordError, match=re.escape(message)):
        RecordBatchV2(_uncompressed(ONE[:-2], 1)).records()


def test_bytes_left_after_the_last_record() -> None:
    with pytest.raises(InvalidRecordError, match="records still remaining in file"):
        RecordBatchV2(_uncompressed(ONE + ONE, 1)).records()


def test_negative_record_count() -> None:
    with pytest.raises(InvalidRecordError, match="Found invalid record count -1 in magic v2"):
        RecordBatchV2(_uncompressed(ONE, -1)).records()


def test_bad_varint_inside_a_record() -> None:
    # The timestamp delta varlong never ends inside the record.
    bad = bytes([16, 0]) + b"\xff" * 7
    with pytest.raises(InvalidRecordError, match="Found invalid record structure"):
        RecordBatchV2(_uncompressed(bad, 1)).records()


def test_negative_header_key_size() -> None:
    bad = bytes([14, 0, 0, 0, 1, 1, 2, 3])  # null key and value, 1 header, key size -2
    with pytest.raises(InvalidRecordError, match="Invalid negative header key size -2"):
        RecordBatchV2(_uncompressed(bad, 1)).records()


def test_negative_header_count() -> None:
    bad = bytes([12, 0, 0, 0, 1, 1, 1])
    with pytest.raises(InvalidRecordError, match="Found invalid number of record headers -1"):
        RecordBatchV2(_uncompressed(bad, 1)).records()


def test_key_longer_than_the_record() -> None:
    bad = bytes([12, 0, 0, 0, 40, 1, 0])  # key size 20
    with pytest.raises(InvalidRecordError, match="Found invalid record structure"):
        RecordBatchV2(_uncompressed(bad, 1)).records()


def test_record_size_not_matching_its_content() -> None:
    # Declared 10 bytes; the fields (null key and value, no headers) end after 6.
    bad = bytes([20, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0])
    message = "Invalid record size: expected to read 10 bytes in record payload, but instead read 6"
    with pytest.raises(InvalidRecordError, match=re.escape(message)):
        RecordBatchV2(_uncompressed(bad, 1)).records()
