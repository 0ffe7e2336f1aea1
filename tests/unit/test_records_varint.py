"""Zig-zag varints of record batch v2 (``zkbroker.broker.protocol.records.varint``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkbroker.broker.protocol.records.varint import (
    VarintError,
    encode_varint,
    encode_varlong,
    read_varint,
    read_varlong,
)

# Protocol Buffers' documented zig-zag examples, then the int32 and int64 extremes.
VARINTS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-2, "03"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (300, "d804"),
    (2147483647, "feffffff0f"),
    (-2147483648, "ffffffff0f"),
]


@pytest.mark.parametrize(("value", "hex_bytes"), VARINTS)
def test_varint_known_encodings(value: int, hex_bytes: str) -> None:
    assert encode_varint(value).hex() == hex_bytes
    assert read_varint(bytes.fromhex(hex_bytes), 0) == (value, len(hex_bytes) // 2)


def test_varlong_extremes() -> None:
    assert encode_varlong(-(1 << 63)).hex() == "ff" * 9 + "01"
    assert encode_varlong((1 << 63) - 1).hex() == "fe" + "ff" * 8 + "01"
    assert read_varlong(bytes.fromhex("ff" * 9 + "01"), 0) == (-(1 << 63), 10)


@given(st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1), st.binary(max_size=3))
def test_varint_round_trip(value: int, prefix: bytes) -> None:
    data = prefix + encode_varint(value) + b"\x99"
    assert read_varint(data, len(prefix)) == (value, len(data) - 1)


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
def test_varlong_round_trip(value: int) -> None:
    data = encode_varlong(value)
    assert read_varlong(data, 0) == (value, len(data))


def test_a_sixth_varint_byte_is_an_error() -> None:
    with pytest.raises(VarintError, match="Varint is too long"):
        read_varint(b"\x80\x80\x80\x80\x80\x01", 0)


def test_an_eleventh_varlong_byte_is_an_error() -> None:
    with pytest.raises(VarintError, match="Varlong is too long"):
        read_varlong(b"\x80" * 10 + b"\x01", 0)


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff"])
def test_truncated_varints_are_errors(data: bytes) -> None:
    with pytest.raises(VarintError):
        read_varint(data, 0)
    with pytest.raises(VarintError):
        read_varlong(data, 0)
