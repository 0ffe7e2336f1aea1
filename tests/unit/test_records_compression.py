"""Kafka's framings of each codec, checked against kafka-python's codecs and the xxhash library."""

from __future__ import annotations

import gzip
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kc

from zkbroker.broker.protocol.records.compression import compress, decompress, xxh32
from zkbroker.broker.protocol.records.constants import CompressionType
from zkbroker.broker.protocol.records.errors import DecompressionError

DATA = b"kafka record payload " * 5000 + bytes(range(256)) * 300


def test_gzip_is_a_plain_gzip_stream() -> None:
    assert gzip.decompress(compress(CompressionType.GZIP, DATA, 2)) == DATA
    assert decompress(CompressionType.GZIP, gzip.compress(DATA), 2) == DATA


def test_snappy_xerial_framing() -> None:
    if not kc.has_snappy():
        pytest.skip("python-snappy missing")
    ours = compress(CompressionType.SNAPPY, DATA, 2)
    assert ours[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    assert kc.snappy_decode(ours) == DATA
    assert decompress(CompressionType.SNAPPY, kc.snappy_encode(DATA), 1) == DATA


def test_snappy_raw_block_is_accepted() -> None:
    if not kc.has_snappy():
        pytest.skip("python-snappy missing")
    raw = kc.snappy_encode(DATA, xerial_compatible=False)
    assert decompress(CompressionType.SNAPPY, raw, 2) == DATA


@pytest.mark.parametrize("magic", [1, 2])
def test_lz4_frame_with_independent_blocks(magic: int) -> None:
    lz4_frame = pytest.importorskip("lz4.frame")
    ours = compress(CompressionType.LZ4, DATA, magic)
    assert ours[4:6] == b"\x60\x40"  # version 1, independent blocks; 64 KiB blocks
    assert lz4_frame.decompress(ours) == DATA
    assert decompress(CompressionType.LZ4, kc.lz4_encode(DATA), magic) == DATA


def test_lz4_magic_0_uses_kafka_3160_broken_header_checksum() -> None:
    xxhash = pytest.importorskip("xxhash")
    ours = compress(CompressionType.LZ4, DATA, 0)
    assert ours[6] == (xxhash.xxh32_intdigest(ours[0:6]) >> 8) & 0xFF
    assert kc.lz4_decode_old_kafka(ours) == DATA
    assert decompress(CompressionType.LZ4, kc.lz4_encode_old_kafka(DATA), 0) == DATA


def test_zstd_frame() -> None:
    if not kc.has_zstd():
        pytest.skip("zstandard missing")
    assert kc.zstd_decode(compress(CompressionType.ZSTD, DATA, 2)) == DATA
    assert decompress(CompressionType.ZSTD, kc.zstd_encode(DATA), 2) == DATA


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_does_not_decompress(codec: int) -> None:
    with pytest.raises(DecompressionError) as info:
        decompress(CompressionType(codec), b"\x82SNAPPY\x00garbage-not-compressed", 2)
    assert info.value.code == -1  # UNKNOWN_SERVER_ERROR, as Kafka's KafkaException


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=70_000), st.sampled_from([1, 2, 3, 4]), st.sampled_from([0, 1, 2]))
def test_round_trip(data: bytes, codec: int, magic: int) -> None:
    kind = CompressionType(codec)
    assert decompress(kind, compress(kind, data, magic), magic) == data


@given(st.binary(max_size=64), st.integers(0, 0xFFFFFFFF))
def test_xxh32_matches_the_xxhash_library(data: bytes, seed: int) -> None:
    xxhash = pytest.importorskip("xxhash")
    assert xxh32(data, seed) == xxhash.xxh32_intdigest(data, seed)
