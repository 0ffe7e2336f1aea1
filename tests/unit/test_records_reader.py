"""Splitting a produce payload into batches (Kafka's ByteBufferLogInputStream rules)."""

from __future__ import annotations

import re
import struct

import pytest

from zkbroker.broker.protocol.records import (
    CorruptRecordError,
    LegacyEntry,
    NewRecord,
    RecordBatchV2,
    encode_batch,
    encode_message_set,
    iter_batches,
    read_batches,
)

V2 = encode_batch([NewRecord(0, 1, b"k", b"v"), NewRecord(1, 2, None, b"w")])
V1 = encode_message_set([NewRecord(0, 1, b"k", b"v"), NewRecord(1, 2, None, b"w")], magic=1)


def test_batches_of_each_format_in_order() -> None:
    batches, valid = read_batches(V2 + V1)
    assert [type(b) for b in batches] == [RecordBatchV2, LegacyEntry, LegacyEntry]
    assert valid == len(V2) + len(V1)


@pytest.mark.parametrize("cut", [1, 11, 12, 16, 17, 60, len(V2) - 1])
def test_a_partial_trailing_batch_is_left_out(cut: int) -> None:
    batches, valid = read_batches(V2 + V2[:cut])
    assert len(batches) == 1 and valid == len(V2)


def test_empty_payload() -> None:
    assert read_batches(b"") == ([], 0)


def test_size_below_the_minimum_overhead() -> None:
    bad = struct.pack(">qi", 0, 13) + b"\x00" * 13
    message = "Record size 13 is less than the minimum record overhead (14)"
    with pytest.raises(CorruptRecordError, match=re.escape(message)):
        list(iter_batches(bad))


@pytest.mark.parametrize("magic", [3, -1])
def test_unknown_magic(magic: int) -> None:
    bad = bytearray(V2)
    bad[16] = magic & 0xFF
    with pytest.raises(CorruptRecordError, match=f"Invalid magic found in record: {magic}"):
        list(iter_batches(bytes(bad)))


def test_headers_are_parsed_lazily() -> None:
    # A batch whose records are garbage still yields its header; only records() fails.
    bad = bytearray(V2)
    bad[-3:] = b"\xff\xff\xff"
    (batch,) = iter_batches(bytes(bad))
    assert isinstance(batch, RecordBatchV2) and batch.records_count == 2
