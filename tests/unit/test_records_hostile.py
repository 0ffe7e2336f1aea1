"""Hostile bytes: decoding and validation answer an error code, never raise anything else."""

from __future__ import annotations

import struct
import zlib

import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zkbroker.broker.protocol.records import NewRecord, encode_batch, encode_message_set
from zkbroker.broker.rules.log_validation import (
    AppendError,
    LogConfig,
    ValidatedAppend,
    produce_request_errors,
    validate_append,
)

_RECORDS = [NewRecord(i, 1000 + i, b"k%d" % i, b"v" * (i * 30), ((b"h", b"x"),)) for i in range(5)]
SEEDS = [
    encode_batch(_RECORDS),
    encode_batch(_RECORDS, compression=1),
    encode_batch(_RECORDS, compression=3),
    encode_message_set(_RECORDS, magic=1),
    encode_message_set(_RECORDS, magic=0, compression=1),
    encode_message_set(_RECORDS, magic=1, compression=2),
]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        if not data:
            break
        position = draw(st.integers(0, len(data) - 1))
        data[position] = draw(st.integers(0, 255))
    cut = draw(st.integers(0, len(data)))
    return bytes(data[:cut]) if draw(st.booleans()) else bytes(data)


def _crc_fixed(data: bytes) -> bytes:
    """Fix each entry's checksum so mutations reach the record decoder past the CRC check."""
    out = bytearray(data)
    pos = 0
    while pos + 17 <= len(out):
        size = struct.unpack_from(">i", out, pos + 8)[0] + 12
        if size < 26 or pos + size > len(out):
            break
        if out[pos + 16] == 2 and size >= 61:
            crc = crc32c.crc32c(bytes(out[pos + 21 : pos + size]))
            struct.pack_into(">I", out, pos + 17, crc)
        elif out[pos + 16] in (0, 1):
            struct.pack_into(">I", out, pos + 12, zlib.crc32(bytes(out[pos + 16 : pos + size])))
        pos += size
    return bytes(out)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.booleans(), st.sampled_from([(2, 3), (3, 9)]), st.sampled_from([0, 1, 2]))
def test_mutated_payloads_get_an_answer(
    payload: bytes, fix_crc: bool, release: tuple[int, int], magic: int
) -> None:
    if fix_crc:
        payload = _crc_fixed(payload)
    config = LogConfig(compacted=magic == 1, record_magic=magic)
    result = validate_append(
        payload, topic_partition="t-0", next_offset=0, now_ms=2000, config=config, release=release
    )
    assert isinstance(result, ValidatedAppend | AppendError)
    for version in (2, 3, 7):
        error = produce_request_errors(version, payload)
        assert error is None or isinstance(error, AppendError)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_get_an_answer(payload: bytes) -> None:
    result = validate_append(
        payload, topic_partition="t-0", next_offset=0, now_ms=0, config=LogConfig()
    )
    assert isinstance(result, ValidatedAppend | AppendError)
