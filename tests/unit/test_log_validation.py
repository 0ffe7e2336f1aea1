"""Kafka's produce-path validation and offset assignment (``zkbroker.broker.rules.log_validation``).

Batches come from kafka-python's builders (or are forged with struct), and every expected
value is computed here from the KIP-98/KIP-32 layouts and Kafka's LogValidator messages,
never by the code under test.
"""

from __future__ import annotations

import struct
import zlib

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.records_oracle import kp_legacy, kp_read_all, kp_v2_batch
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.records import (
    CompressionType,
    NewRecord,
    TimestampType,
    encode_batch,
    iter_batches,
)
from zkbroker.broker.protocol.records.legacy import encode_message
from zkbroker.broker.rules.log_validation import (
    LONG_MAX,
    AppendError,
    LogConfig,
    ProducerBatchInfo,
    RecordError,
    ValidatedAppend,
    produce_request_errors,
    topic_record_magic,
    validate_append,
)

NOW = 1_700_000_000_000
TP = "t-0"
SPECS = [
    (NOW - 10, b"a", b"1", []),
    (NOW - 5, b"b", b"2", [("h", b"x")]),
    (NOW - 7, b"c", b"3", []),
    (NOW - 8, b"d", b"4", []),
]
# kafka-python leaves a batch uncompressed when compression would not shrink it: these do.
BIG = [(ts, key, value * 2000, headers) for ts, key, value, headers in SPECS]


def _specs(codec: int) -> list[tuple[int, bytes, bytes, list[tuple[str, bytes]]]]:
    return BIG if codec else SPECS  # type: ignore[return-value]


def _append(payload: bytes, config: LogConfig | None = None, **kwargs: object) -> object:
    args: dict[str, object] = {
        "topic_partition": TP,
        "next_offset": 100,
        "now_ms": NOW,
        "config": config or LogConfig(),
        "partition_leader_epoch": 3,
    }
    args.update(kwargs)
    return validate_append(payload, **args)  # type: ignore[arg-type]


def _ok(payload: bytes, config: LogConfig | None = None, **kwargs: object) -> ValidatedAppend:
    result = _append(payload, config, **kwargs)
    assert isinstance(result, ValidatedAppend), result
    return result


def _err(payload: bytes, config: LogConfig | None = None, **kwargs: object) -> AppendError:
    result = _append(payload, config, **kwargs)
    assert isinstance(result, AppendError), result
    return result


def _v2_header(data: bytes) -> tuple[int, ...]:
    return struct.unpack_from(">qiibIhiqqqhii", data, 0)


def _forge(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    """Change one v2 header field and fix the CRC-32C, as a misbehaving client would."""
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


# -- ProduceRequest.validateRecords ------------------------------------------------------------


def test_produce_v3_needs_a_batch() -> None:
    error = produce_request_errors(3, b"")
    assert error == AppendError(
        error_codes.INVALID_RECORD,
        "Produce requests with version 3 must have at least one record batch per partition",
    )


def test_produce_v3_needs_magic_2() -> None:
    error = produce_request_errors(5, kp_legacy(SPECS, 1))
    assert error is not None and error.code == error_codes.INVALID_RECORD
    assert error.message == (
        "Produce requests with version 5 are only allowed to contain record batches with "
        "magic version 2"
    )


def test_produce_v3_takes_exactly_one_batch() -> None:
    batch = kp_v2_batch(SPECS)
    error = produce_request_errors(9, batch + batch)
    assert error is not None and error.message == (
        "Produce requests with version 9 are only allowed to contain exactly one record batch "
        "per partition"
    )


def test_zstd_needs_produce_v7() -> None:
    batch = kp_v2_batch(BIG, 4)
    assert _v2_header(batch)[5] == 4
    error = produce_request_errors(6, batch)
    assert error == AppendError(
        error_codes.UNSUPPORTED_COMPRESSION_TYPE,
        "Produce requests with version 6 are not allowed to use ZStandard compression",
    )
    assert produce_request_errors(7, batch) is None


def test_produce_v2_is_not_checked() -> None:
    assert produce_request_errors(2, kp_legacy(SPECS, 1) + kp_legacy(SPECS, 1)) is None


# -- analyzeAndValidateRecords -------------------------------------------------------------------


def test_v2_base_offset_must_be_zero() -> None:
    batch = bytearray(kp_v2_batch(SPECS))
    struct.pack_into(">q", batch, 0, 5)  # outside the CRC
    error = _err(bytes(batch))
    assert error.code == error_codes.INVALID_RECORD
    assert error.message == (
        "The baseOffset of the record batch in the append to t-0 should be 0, but it is 5"
    )
    assert error.wire_message is None  # only record errors carry a message on the wire


def test_max_message_bytes_is_per_batch_including_log_overhead() -> None:
    batch = kp_v2_batch(SPECS)
    assert isinstance(_append(batch, LogConfig(max_message_bytes=len(batch))), ValidatedAppend)
    error = _err(batch, LogConfig(max_message_bytes=len(batch) - 1))
    assert error.code == error_codes.MESSAGE_TOO_LARGE
    assert error.message == (
        f"The record batch size in the append to t-0 is {len(batch)} bytes which exceeds the "
        f"maximum configured value of {len(batch) - 1}."
    )


def test_corrupt_crc() -> None:
    batch = bytearray(kp_v2_batch(SPECS))
    batch[-1] ^= 0xFF
    stored_crc = struct.unpack_from(">I", batch, 17)[0]
    error = _err(bytes(batch))
    assert error.code == error_codes.CORRUPT_MESSAGE
    assert error.message == f"Record is corrupt (stored crc = {stored_crc}) in topic partition t-0."


def test_corrupt_legacy_crc() -> None:
    message = bytearray(kp_legacy(SPECS[:1], 1))
    message[-1] ^= 0xFF
    assert _err(bytes(message)).code == error_codes.CORRUPT_MESSAGE


def test_partial_trailing_batch_is_trimmed() -> None:
    batch = kp_v2_batch(SPECS)
    result = _ok(batch + batch[:30])
    assert result.record_count == 4
    assert len(result.records) == len(batch)


def test_empty_payload_appends_nothing() -> None:
    result = _ok(b"")
    assert (result.base_offset, result.record_count, result.records) == (-1, 0, b"")


def test_segment_bytes_gives_record_list_too_large() -> None:
    batch = kp_v2_batch(SPECS)
    error = _err(batch, LogConfig(segment_bytes=len(batch) - 1))
    assert error.code == error_codes.RECORD_LIST_TOO_LARGE
    assert error.message == (
        f"Message batch size is {len(batch)} bytes in append to partition t-0 which exceeds "
        f"the maximum configured segment size of {len(batch) - 1}."
    )


# -- in-place offset assignment (v2) -------------------------------------------------------------


@pytest.mark.parametrize("codec", [0, 1, 3])
def test_v2_offsets_assigned_in_place(codec: int) -> None:
    batch = kp_v2_batch(_specs(codec), codec)
    assert _v2_header(batch)[5] == codec
    result = _ok(batch)
    assert (result.base_offset, result.last_offset, result.record_count) == (100, 103, 4)
    assert result.max_timestamp == NOW - 5
    assert result.offset_of_max_timestamp == 101
    assert result.log_append_time == -1
    assert not result.converted
    # Stored as sent: only the base offset and the leader epoch differ (outside the CRC).
    expected = bytearray(batch)
    struct.pack_into(">q", expected, 0, 100)
    struct.pack_into(">i", expected, 12, 3)
    assert result.records == bytes(expected)
    assert [r["offset"] for r in kp_read_all(result.records)] == [100, 101, 102, 103]


def test_v2_client_max_timestamp_is_replaced_by_the_records_max() -> None:
    batch = _forge(kp_v2_batch(SPECS), 35, ">q", NOW + 1_000_000)
    result = _ok(batch)
    header = _v2_header(result.records)
    assert header[8] == NOW - 5
    assert header[4] == crc32c.crc32c(result.records[21:])


@pytest.mark.parametrize("codec", [0, 2])
def test_log_append_time_rewrites_max_timestamp_and_crc(codec: int) -> None:
    batch = kp_v2_batch(_specs(codec), codec)
    result = _ok(batch, LogConfig(timestamp_type=TimestampType.LOG_APPEND_TIME))
    header = _v2_header(result.records)
    assert header[5] == codec | 0x08
    assert header[8] == NOW
    assert header[4] == crc32c.crc32c(result.records[21:])
    assert result.records[61:] == batch[61:]
    assert result.max_timestamp == NOW and result.log_append_time == NOW
    # Uncompressed: the last offset; compressed in place: the first (Kafka's LogValidator).
    assert result.offset_of_max_timestamp == (103 if codec == 0 else 100)
    assert {r["timestamp"] for r in kp_read_all(result.records)} == {NOW}


def test_idempotent_fields_pass_through_for_the_producer_state_step() -> None:
    batch = kp_v2_batch(SPECS, producer_id=4000, producer_epoch=2, base_sequence=17)
    result = _ok(batch)
    assert result.producer == (ProducerBatchInfo(4000, 2, 17, 100, 103, 4, False),)
    assert _v2_header(result.records)[9:12] == (4000, 2, 17)


# -- batch rules --------------------------------------------------------------------------------


def test_more_than_one_v2_batch() -> None:
    batch = kp_v2_batch(SPECS)
    error = _err(batch + batch)
    assert (error.code, error.message) == (
        error_codes.INVALID_RECORD,
        "Compressed outer record has more than one batch",
    )


def test_inconsistent_offset_range_and_count() -> None:
    error = _err(_forge(kp_v2_batch(SPECS), 23, ">i", 5))
    assert error.message == (
        "Inconsistent batch offset range [0, 5] and count of records 4 in topic partition t-0"
    )


def test_invalid_offset_range() -> None:
    error = _err(_forge(kp_v2_batch(SPECS), 23, ">i", -1))
    assert error.message == "Batch has an invalid offset range: [0, -1] in topic partition t-0"


def test_invalid_count() -> None:
    error = _err(_forge(_forge(kp_v2_batch(SPECS), 57, ">i", 0), 23, ">i", 2))
    assert error.message == "Invalid reported count for record batch: 0 in topic partition t-0"


def test_control_batches_from_clients() -> None:
    batch = encode_batch([NewRecord(0, NOW, b"\x00\x00\x00\x00", b"")], control=True)
    error = _err(batch)
    assert error.code == error_codes.INVALID_RECORD
    assert error.message == (
        "Clients are not allowed to write control records in topic partition t-0"
    )


def test_producer_id_without_sequence() -> None:
    batch = encode_batch([NewRecord(0, NOW, b"k", b"v")], producer_id=12, producer_epoch=0)
    error = _err(batch)
    assert error.message == (
        "Invalid sequence number -1 in record batch with producerId 12 in topic partition t-0"
    )


@pytest.mark.parametrize(
    ("transactional", "message"),
    [
        (True, "Transactional records cannot be used with magic version 1"),
        (False, "Idempotent records cannot be used with magic version 1"),
    ],
)
def test_producer_ids_need_a_v2_topic(transactional: bool, message: str) -> None:
    batch = encode_batch(
        [NewRecord(0, NOW, b"k", b"v")],
        producer_id=12,
        producer_epoch=0,
        base_sequence=0,
        transactional=transactional,
    )
    error = _err(batch, LogConfig(record_magic=1))
    assert (error.code, error.message) == (error_codes.UNSUPPORTED_FOR_MESSAGE_FORMAT, message)


def test_zstd_before_ibp_2_1() -> None:
    error = _err(kp_v2_batch(BIG, 4), release=(2, 0))
    assert error == AppendError(
        error_codes.UNSUPPORTED_COMPRESSION_TYPE,
        "Produce requests to inter.broker.protocol.version < 2.1 broker are not allowed to use "
        "ZStandard compression",
    )


def test_malformed_records_are_invalid_record_without_a_wire_message() -> None:
    batch = bytearray(encode_batch([NewRecord(0, NOW, b"k", b"v")]))
    struct.pack_into(">i", batch, 57, 2)  # count 2, one record present
    struct.pack_into(">i", batch, 23, 1)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    error = _err(bytes(batch))
    assert (error.code, error.message, error.wire_message) == (
        error_codes.INVALID_RECORD,
        "Incorrect declared batch size, premature EOF reached",
        None,
    )
    assert _err(bytes(batch), release=(2, 3)).code == error_codes.CORRUPT_MESSAGE


# -- record rules (KIP-467 record errors) ---------------------------------------------------


def test_timestamp_too_old_and_too_new() -> None:
    specs = [
        (NOW - 2000, b"a", b"1", []),
        (NOW, b"b", b"2", []),
        (NOW + 3000, b"c", b"3", []),
    ]
    config = LogConfig(timestamp_before_max_ms=1000, timestamp_after_max_ms=2000)
    error = _err(kp_v2_batch(specs), config)
    window = f"[{NOW - 1000}, {NOW + 2000}]"
    assert error.code == error_codes.INVALID_TIMESTAMP
    assert error.record_errors == (
        RecordError(
            0,
            f"Timestamp {NOW - 2000} of message with offset 0 is out of range. The timestamp "
            f"should be within {window}",
        ),
        RecordError(
            2,
            f"Timestamp {NOW + 3000} of message with offset 2 is out of range. The timestamp "
            f"should be within {window}",
        ),
    )
    assert error.wire_message == "One or more records have been rejected due to invalid timestamp"


def test_timestamp_window_bounds_print_with_java_long_overflow() -> None:
    config = LogConfig(timestamp_before_max_ms=1000, timestamp_after_max_ms=LONG_MAX)
    error = _err(kp_v2_batch([(NOW - 2000, b"a", b"1", [])]), config)
    high = NOW + LONG_MAX - (1 << 64)
    assert error.record_errors[0].message is not None
    assert error.record_errors[0].message.endswith(f"[{NOW - 1000}, {high}]")


def test_timestamp_difference_before_3_6_bounds_both_sides() -> None:
    config = LogConfig.with_timestamp_difference(500)
    assert (config.timestamp_before_max_ms, config.timestamp_after_max_ms) == (500, 500)
    assert _err(kp_v2_batch([(NOW + 501, b"a", b"1", [])]), config).code == 32


def test_no_timestamp_is_not_checked() -> None:
    config = LogConfig(timestamp_before_max_ms=0, timestamp_after_max_ms=0)
    assert isinstance(_append(kp_v2_batch([(-1, b"a", b"1", [])]), config), ValidatedAppend)


def test_log_append_time_from_a_producer() -> None:
    batch = encode_batch(
        [NewRecord(0, 5, b"k", b"v")],
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=-1,
    )
    error = _err(batch)
    assert error.code == error_codes.INVALID_TIMESTAMP
    assert error.record_errors == (
        RecordError(
            0,
            "Invalid timestamp type in message DefaultRecord(offset=0, timestamp=-1, "
            "key=1 bytes, value=1 bytes). Producer should not set timestamp type to "
            "LogAppendTime.",
        ),
    )


def test_compacted_topic_needs_keys() -> None:
    specs = [(NOW, None, b"1", []), (NOW, b"k", b"2", []), (NOW, None, b"3", [])] + [
        (NOW, None, b"x", [])
    ] * 2
    error = _err(kp_v2_batch(specs), LogConfig(compacted=True))
    message = "Compacted topic cannot accept message without key in topic partition t-0"
    assert error.code == error_codes.INVALID_RECORD
    assert [e.batch_index for e in error.record_errors] == [0, 2, 3, 4]
    assert error.wire_message == (
        "One or more records have been rejected due to 4 record errors in total, and only "
        f"showing the first three errors at most: [RecordError(batchIndex=0, message='{message}'), "
        f"RecordError(batchIndex=2, message='{message}'), "
        f"RecordError(batchIndex=3, message='{message}')]"
    )


def test_any_timestamp_error_makes_the_batch_invalid_timestamp() -> None:
    specs = [(NOW, None, b"1", []), (NOW + 10_000, b"k", b"2", [])]
    config = LogConfig(compacted=True, timestamp_after_max_ms=1)
    error = _err(kp_v2_batch(specs), config)
    assert error.code == error_codes.INVALID_TIMESTAMP
    assert [e.batch_index for e in error.record_errors] == [0, 1]


def test_before_kip_467_the_first_bad_record_fails_as_corrupt_message() -> None:
    specs = [(NOW, b"k", b"1", []), (NOW, None, b"2", [])]
    error = _err(kp_v2_batch(specs), LogConfig(compacted=True), release=(2, 3))
    assert error.code == error_codes.CORRUPT_MESSAGE
    assert error.record_errors == () and error.wire_message is None


# -- conversion and recompression ------------------------------------------------------------------


def test_topic_compression_type_recompresses() -> None:
    batch = kp_v2_batch(BIG, 3, producer_id=9, producer_epoch=1, base_sequence=0)
    assert _v2_header(batch)[5] == 3
    result = _ok(batch, LogConfig(compression_type="gzip"))
    assert result.converted
    header = _v2_header(result.records)
    assert header[0] == 100 and header[5] & 0x07 == 1 and header[2] == 3
    assert header[9:12] == (9, 1, 0)
    records = kp_read_all(result.records)
    assert [(r["offset"], r["timestamp"], r["key"]) for r in records] == [
        (100 + i, ts, key) for i, (ts, key, *_) in enumerate(SPECS)
    ]
    assert records[1]["headers"] == [("h", b"x")]
    assert records[3]["value"] == b"4" * 2000
    assert (result.max_timestamp, result.offset_of_max_timestamp) == (NOW - 5, 101)


def test_uncompressed_target_may_make_a_batch_too_large() -> None:
    batch = kp_v2_batch([(NOW, b"k", b"\x00" * 50_000, [])], 1)
    error = _err(batch, LogConfig(compression_type="uncompressed", max_message_bytes=10_000))
    assert error.code == error_codes.MESSAGE_TOO_LARGE
    assert error.message.startswith("Message batch size is ")
    assert error.message.endswith(
        "bytes in append to partition t-0 which exceeds the maximum configured size of 10000."
    )


@pytest.mark.parametrize("codec", [0, 1])
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_messages_are_up_converted_to_v2(magic: int, codec: int) -> None:
    result = _ok(kp_legacy(_specs(codec), magic, codec))
    assert result.converted
    header = _v2_header(result.records)
    assert (header[0], header[3], header[5] & 0x07, header[12]) == (100, 2, codec, 4)
    records = kp_read_all(result.records)
    expected_ts = [ts if magic else -1 for ts, *_ in SPECS]
    assert [(r["offset"], r["timestamp"], r["key"]) for r in records] == [
        (100 + i, expected_ts[i], key) for i, (_, key, *_) in enumerate(SPECS)
    ]
    assert result.max_timestamp == (NOW - 5 if magic else -1)


def test_v1_uncompressed_in_place_on_a_v1_topic() -> None:
    data = kp_legacy(SPECS, 1)
    result = _ok(data, LogConfig(record_magic=1))
    assert not result.converted
    records = kp_read_all(result.records)
    assert [(r["offset"], r["timestamp"]) for r in records] == [
        (100 + i, ts) for i, (ts, *_) in enumerate(SPECS)
    ]
    # Only the offsets changed: every message's size, CRC and CRC-covered part are as sent.
    stored = list(iter_batches(result.records))
    sent = list(iter_batches(data))
    assert [bytes(b.buffer[8:]) for b in stored] == [bytes(b.buffer[8:]) for b in sent]
    assert (result.max_timestamp, result.offset_of_max_timestamp) == (NOW - 5, 101)


def test_v1_log_append_time_in_place_rewrites_each_message() -> None:
    result = _ok(
        kp_legacy(SPECS, 1),
        LogConfig(record_magic=1, timestamp_type=TimestampType.LOG_APPEND_TIME),
    )
    records = kp_read_all(result.records)
    assert {(r["timestamp"], r["timestamp_type"]) for r in records} == {(NOW, 1)}
    assert (result.max_timestamp, result.offset_of_max_timestamp) == (NOW, 100)


def test_v1_compressed_in_place_sets_the_wrapper_offset_and_max_timestamp() -> None:
    data = kp_legacy(BIG, 1, 1)
    # kafka-python writes wrapper offset 0 and timestamp 0 (as some librdkafka versions did)
    assert struct.unpack_from(">qiIbbq", data)[::5] == (0, 0)
    result = _ok(data, LogConfig(record_magic=1))
    assert not result.converted
    offset, _, crc, _, attributes, timestamp = struct.unpack_from(">qiIbbq", result.records)
    assert (offset, attributes, timestamp) == (103, 1, NOW - 5)
    assert crc == zlib.crc32(result.records[16:])
    assert result.records[34:] == data[34:]  # key and compressed value as sent
    assert [r["offset"] for r in kp_read_all(result.records)] == [100, 101, 102, 103]


def test_v0_compressed_is_rebuilt() -> None:
    result = _ok(kp_legacy(BIG, 0, 1), LogConfig(record_magic=0))
    assert result.converted
    assert [r["offset"] for r in kp_read_all(result.records)] == [100, 101, 102, 103]


def test_legacy_inner_crc_is_checked() -> None:
    inner = bytearray(encode_message(1, 0, NOW, b"k", b"v"))
    inner[-1] ^= 0xFF
    compressor = zlib.compressobj(wbits=31)
    value = compressor.compress(bytes(inner)) + compressor.flush()
    wrapper = encode_message(1, 0, NOW, None, value, 1)
    error = _err(wrapper)
    assert error.code == error_codes.CORRUPT_MESSAGE
    stored = struct.unpack_from(">I", inner, 12)[0]
    assert error.message == (
        f"Record is corrupt (stored crc = {stored}, computed crc = {zlib.crc32(bytes(inner[16:]))})"
    )


def test_legacy_compacted_record_error_prints_kafkas_record() -> None:
    data = kp_legacy([(NOW, None, b"v", [])], 1)
    error = _err(data, LogConfig(compacted=True))
    assert error.record_errors == (
        RecordError(0, "Compacted topic cannot accept message without key in topic partition t-0"),
    )


def test_compressed_v2_with_unchanged_codec_is_never_rebuilt() -> None:
    data = kp_v2_batch(BIG, CompressionType.SNAPPY)
    assert _v2_header(data)[5] == 2
    result = _ok(data)
    assert not result.converted and result.records[61:] == data[61:]


def test_before_kip_467_batch_rules_are_corrupt_message_too() -> None:
    batch = encode_batch([NewRecord(0, NOW, b"k", b"v")], control=True)
    assert _err(batch, release=(2, 3)).code == error_codes.CORRUPT_MESSAGE
    assert _err(batch, release=(2, 4)).code == error_codes.INVALID_RECORD
    error = produce_request_errors(3, kp_legacy(SPECS, 1), release=(2, 0))
    assert error is not None and error.code == error_codes.CORRUPT_MESSAGE


def test_v0_messages_have_no_timestamps_to_check() -> None:
    config = LogConfig(timestamp_before_max_ms=0, timestamp_after_max_ms=0, record_magic=0)
    result = _ok(kp_legacy(SPECS, 0), config)
    assert (result.max_timestamp, result.offset_of_max_timestamp) == (-1, -1)
    assert [r["offset"] for r in kp_read_all(result.records)] == [100, 101, 102, 103]


def test_mixed_magic_batches() -> None:
    error = _err(kp_legacy(SPECS[:1], 1) + kp_legacy(SPECS[:1], 0))
    assert error.code == error_codes.INVALID_RECORD
    assert error.message == (
        "Batch magic 0 is not the same as the first batch's magic byte 1 in topic partition t-0"
    )


def test_undecompressable_batch_is_unknown_server_error() -> None:
    # Kafka wraps the codec's IOException in a KafkaException: not an ApiException.
    batch = bytearray(encode_batch([NewRecord(0, NOW, b"k", b"v" * 100)]))
    struct.pack_into(">h", batch, 21, 1)  # claim gzip for uncompressed bytes
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    error = _err(bytes(batch))
    assert error.code == error_codes.UNKNOWN_SERVER_ERROR and error.wire_message is None


def test_unknown_codec_bits_are_unknown_server_error() -> None:
    # Kafka's CompressionType.forId throws IllegalArgumentException, not an ApiException.
    batch = bytearray(encode_batch([NewRecord(0, NOW, b"k", b"v")]))
    struct.pack_into(">h", batch, 21, 5)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    error = _err(bytes(batch))
    assert (error.code, error.message) == (
        error_codes.UNKNOWN_SERVER_ERROR,
        "Unknown compression type id: 5",
    )


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(-(1 << 62), 1 << 62) | st.just(-1), min_size=1, max_size=8),
    st.integers(0, 1 << 40) | st.just(LONG_MAX),
    st.integers(0, 1 << 40) | st.just(LONG_MAX),
    st.booleans(),
)
def test_timestamp_rule_matches_kafkas_formula(
    timestamps: list[int], before: int, after: int, log_append_batch: bool
) -> None:
    batch = encode_batch(
        [NewRecord(i, ts, b"k", b"v") for i, ts in enumerate(timestamps)],
        timestamp_type=TimestampType.LOG_APPEND_TIME
        if log_append_batch
        else (TimestampType.CREATE_TIME),
        log_append_time=timestamps[0],
    )
    # What the records read as: a LogAppendTime batch gives every record its max timestamp.
    seen = [timestamps[0]] * len(timestamps) if log_append_batch else timestamps
    config = LogConfig(timestamp_before_max_ms=before, timestamp_after_max_ms=after)
    result = _append(batch, config)
    bad = [
        i
        for i, ts in enumerate(seen)
        if (ts != -1 and (NOW - ts > before or ts - NOW > after)) or (ts == -1 and log_append_batch)
    ]
    if bad:
        assert isinstance(result, AppendError)
        assert result.code == error_codes.INVALID_TIMESTAMP
        assert [e.batch_index for e in result.record_errors] == bad
    else:
        assert isinstance(result, ValidatedAppend)


@pytest.mark.parametrize(
    ("release", "version", "magic"),
    [
        ((0, 10, 0), None, 1),
        ((0, 10, 2), None, 1),
        ((0, 11, 0), None, 2),
        ((2, 8), None, 2),
        ((2, 8), "0.10.2-IV0", 1),
        ((2, 8), "0.9.0", 0),
        ((2, 8), "0.11.0", 2),
        ((3, 0), "0.10.2", 2),  # KIP-724: ignored from 3.0 on
        ((3, 9), "0.9.0", 2),
    ],
)
def test_topic_record_magic(release: tuple[int, ...], version: str | None, magic: int) -> None:
    assert topic_record_magic(release, version) == magic
