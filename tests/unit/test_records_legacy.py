"""Legacy message sets, magic 0 and 1, against kafka-python's independent builder and reader."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.records_oracle import kp_legacy, kp_read_all, require_codec
from zkbroker.broker.protocol.records import (
    CompressionType,
    InvalidRecordError,
    LegacyEntry,
    NewRecord,
    TimestampType,
    encode_message_set,
    iter_batches,
)
from zkbroker.broker.protocol.records.legacy import encode_message

SPECS = [
    (1_700_000_000_000, None, b"", []),
    (1_700_000_000_005, b"k1", b"v" * 100, []),
    (1_699_999_999_000, b"", None, []),
    (1_700_000_000_003, b"k3" * 50, b"\x00\xff" * 5000, []),
]


def _records(data: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [
        (r.offset, r.timestamp, r.key, r.value) for b in iter_batches(data) for r in b.records()
    ]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [0, 1, 2, 3])
def test_decodes_kafka_python_message_sets(magic: int, codec: int) -> None:
    data = kp_legacy(SPECS, magic, codec)
    entries = list(iter_batches(data))
    assert all(isinstance(e, LegacyEntry) and e.is_valid() for e in entries)
    assert len(entries) == (4 if codec == 0 else 1)
    expected_ts = [ts if magic else -1 for ts, *_ in SPECS]
    assert _records(data) == [
        (i, expected_ts[i], key, value) for i, (_, key, value, _) in enumerate(SPECS)
    ]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [0, 1, 2, 3])
def test_kafka_python_reads_our_message_sets(magic: int, codec: int) -> None:
    require_codec(codec)
    new = [NewRecord(10 + i, ts, k, v) for i, (ts, k, v, _) in enumerate(SPECS)]
    data = encode_message_set(new, magic=magic, compression=CompressionType(codec))
    got = kp_read_all(data)
    assert [(r["offset"], r["timestamp"], r["key"], r["value"]) for r in got] == [
        (10 + i, ts if magic else None, k, v) for i, (ts, k, v, _) in enumerate(SPECS)
    ]


@pytest.mark.parametrize("magic", [0, 1])
def test_uncompressed_encoding_is_byte_identical_to_kafka_python(magic: int) -> None:
    new = [NewRecord(i, ts, k, v) for i, (ts, k, v, _) in enumerate(SPECS)]
    assert encode_message_set(new, magic=magic) == kp_legacy(SPECS, magic)


def test_message_crc_is_zlib_crc32_of_magic_to_end() -> None:
    data = encode_message(1, 5, 1234, b"k", b"v")
    offset, size, crc = struct.unpack_from(">qiI", data)
    assert (offset, size) == (5, len(data) - 12)
    assert crc == zlib.crc32(data[16:])


def test_v1_wrapper_offset_gives_absolute_inner_offsets() -> None:
    # A v1 wrapper carries the last absolute offset; inner offsets are relative.
    inner = encode_message(1, 0, 1, None, b"a") + encode_message(1, 1, 2, None, b"b")
    wrapper = encode_message(1, 41, 2, None, zlib_gzip(inner), 1)
    assert [r.offset for r in LegacyEntry(wrapper).records()] == [40, 41]


def test_v1_wrapper_offset_zero_keeps_inner_offsets() -> None:
    # Some librdkafka versions send 0 as the wrapper offset: Kafka keeps the inner ones.
    inner = encode_message(1, 0, 1, None, b"a") + encode_message(1, 1, 2, None, b"b")
    wrapper = encode_message(1, 0, 2, None, zlib_gzip(inner), 1)
    assert [r.offset for r in LegacyEntry(wrapper).records()] == [0, 1]


def test_v1_wrapper_offset_below_the_last_inner_offset() -> None:
    inner = encode_message(1, 0, 1, None, b"a") + encode_message(1, 5, 2, None, b"b")
    wrapper = encode_message(1, 3, 2, None, zlib_gzip(inner), 1)
    with pytest.raises(InvalidRecordError, match="wrapper offset '3' is less than the last inner"):
        LegacyEntry(wrapper).records()


def test_log_append_time_wrapper_gives_its_timestamp_to_inner_messages() -> None:
    inner = encode_message(1, 0, 1, None, b"a") + encode_message(1, 1, 2, None, b"b")
    wrapper = encode_message(1, 1, 777, None, zlib_gzip(inner), 1 | 0x08)
    records = LegacyEntry(wrapper).records()
    assert [(r.timestamp, r.timestamp_type) for r in records] == [
        (777, TimestampType.LOG_APPEND_TIME)
    ] * 2


def test_wrapper_with_null_value() -> None:
    with pytest.raises(InvalidRecordError, match="compressed record set with null value"):
        LegacyEntry(encode_message(1, 0, 1, None, None, 1)).records()


def test_wrapper_with_no_inner_messages() -> None:
    with pytest.raises(InvalidRecordError, match="with no inner records"):
        LegacyEntry(encode_message(1, 0, 1, None, zlib_gzip(b""), 1)).records()


def test_inner_magic_must_match_the_wrapper() -> None:
    wrapper = encode_message(1, 0, 1, None, zlib_gzip(encode_message(0, 0, 0, None, b"a")), 1)
    with pytest.raises(InvalidRecordError, match="magic 0 does not match wrapper magic 1"):
        LegacyEntry(wrapper).records()


def test_compressed_inner_message() -> None:
    inner = encode_message(1, 0, 1, None, b"a", 1)
    wrapper = encode_message(1, 0, 1, None, zlib_gzip(inner), 1)
    with pytest.raises(InvalidRecordError, match="Inner messages must not be compressed"):
        LegacyEntry(wrapper).records()


def test_corrupt_inner_crc_is_reported_on_the_record() -> None:
    inner = bytearray(encode_message(1, 0, 1, None, b"abc"))
    inner[-1] ^= 0xFF
    wrapper = encode_message(1, 0, 1, None, zlib_gzip(bytes(inner)), 1)
    entry = LegacyEntry(wrapper)
    assert entry.is_valid()  # the wrapper's own CRC is fine
    (record,) = entry.records()
    assert not record.crc_valid
    assert record.computed_crc == zlib.crc32(bytes(inner[16:]))


def test_with_offset_and_timestamp_rewrites_v1_and_its_crc() -> None:
    entry = LegacyEntry(encode_message(1, 0, 1000, b"k", b"v"))
    out = entry.with_offset_and_timestamp(55, (TimestampType.LOG_APPEND_TIME, 2000))
    offset, _, crc, magic, attributes, ts = struct.unpack_from(">qiIbbq", out)
    assert (offset, magic, attributes, ts) == (55, 1, 0x08, 2000)
    assert crc == zlib.crc32(out[16:])
    (record,) = kp_read_all(out)
    assert (record["offset"], record["timestamp"], record["timestamp_type"]) == (55, 2000, 1)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 1 << 42), st.none() | st.binary(max_size=30), st.binary()),
        min_size=1,
        max_size=10,
    ),
    st.sampled_from([0, 1]),
    st.sampled_from([0, 1]),
)
def test_round_trip(recs: list[tuple[int, bytes | None, bytes]], magic: int, codec: int) -> None:
    new = [NewRecord(i, ts, k, v) for i, (ts, k, v) in enumerate(recs)]
    data = encode_message_set(new, magic=magic, compression=CompressionType(codec))
    assert _records(data) == [(i, ts if magic else -1, k, v) for i, (ts, k, v) in enumerate(recs)]


def zlib_gzip(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=31)
    return compressor.compress(data) + compressor.flush()


def test_log_append_time_rewrite_keeps_a_negative_attributes_byte() -> None:
    # Attributes are Java's signed byte: 0xD0 (high bits set, no codec) reads as -48. Setting
    # LogAppendTime must write its bits back (0xD8), not fail on a negative value (found by
    # test_records_hostile's hypothesis run).
    entry = LegacyEntry(encode_message(1, 0, 1000, b"k", b"v", attributes=-48))
    out = entry.with_offset_and_timestamp(7, (TimestampType.LOG_APPEND_TIME, 2000))
    rewritten = LegacyEntry(out)
    assert out[17] == 0xD8
    assert (rewritten.offset, rewritten.timestamp, rewritten.is_valid()) == (7, 2000, True)
