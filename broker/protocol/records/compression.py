"""The compression codecs of Kafka's record formats, each with the framing Kafka uses.

- gzip: a plain gzip stream (Java's GZIPOutputStream).
- snappy: Kafka's Java client (``SnappyFactory``) writes the xerial ``SnappyOutputStream``
  framing for every magic, and so does kafka-python; xerial's reader also accepts a raw snappy
  block (its compatibility mode), which is what some clients send. We decode both and encode
  xerial framing with 32 KiB chunks, as Java does.
- lz4: an LZ4 frame with independent 64 KiB blocks and no checksums
  (``KafkaLZ4BlockOutputStream``). For magic 0 Kafka computed the frame's header checksum
  over the magic number too (KAFKA-3160) and ignores it when reading: we encode that broken
  checksum for magic 0 and do not check it when decoding magic 0.
- zstd: a zstd frame (KIP-110, magic 2 only as far as Produce is concerned).

Uses cramjam (snappy raw blocks, lz4 blocks and frames, zstd, gzip) for the heavy lifting.

Deliberately not here: which codec a request version may use
(``zkbroker.broker.rules.log_validation``) or compression levels (Kafka's defaults are used).
"""

from __future__ import annotations

import struct

import cramjam

from zkbroker.broker.protocol.records.constants import MAGIC_V0, CompressionType
from zkbroker.broker.protocol.records.errors import DecompressionError

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_BLOCK = 64 * 1024
# FLG: version 01, independent blocks, no block/content checksum, no content size.
_LZ4_FLG = 0x60
# BD: maximum block size 64 KiB.
_LZ4_BD = 0x40


def decompress(codec: CompressionType, data: bytes | memoryview, magic: int) -> bytes:
    """The uncompressed bytes of a batch's (or wrapper message's) payload."""
    try:
        if codec == CompressionType.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == CompressionType.SNAPPY:
            return _snappy_decode(bytes(data))
        if codec == CompressionType.LZ4:
            return _lz4_decode(bytes(data), magic)
        if codec == CompressionType.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except DecompressionError:
        raise
    except Exception as e:  # cramjam raises its own DecompressionError, struct raises error
        raise DecompressionError(f"Failed to decompress {codec.kafka_name} data: {e}") from e
    raise DecompressionError(f"Unknown compression type id {int(codec)}")


def compress(codec: CompressionType, data: bytes | memoryview, magic: int) -> bytes:
    """Compress a payload the way Kafka's Java producer frames it for ``magic``."""
    if codec == CompressionType.NONE:
        return bytes(data)
    if codec == CompressionType.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == CompressionType.SNAPPY:
        return _snappy_encode(bytes(data))
    if codec == CompressionType.LZ4:
        return _lz4_encode(bytes(data), broken_header_checksum=magic == MAGIC_V0)
    if codec == CompressionType.ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression type {codec}")


def _snappy_encode(data: bytes) -> bytes:
    out = [_XERIAL_HEADER]
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK]))
        out.append(struct.pack(">i", len(block)))
        out.append(block)
    return b"".join(out)


def _snappy_decode(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    pos = len(_XERIAL_HEADER)
    if len(data) < pos:
        raise DecompressionError("Truncated xerial snappy header")
    out = []
    while pos < len(data):
        if pos + 4 > len(data):
            raise DecompressionError("Truncated xerial snappy chunk length")
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise DecompressionError(f"Invalid xerial snappy chunk length {size}")
        out.append(bytes(cramjam.snappy.decompress_raw(data[pos : pos + size])))
        pos += size
    return b"".join(out)


def _lz4_encode(data: bytes, *, broken_header_checksum: bool) -> bytes:
    descriptor = bytes([_LZ4_FLG, _LZ4_BD])
    hashed = _LZ4_MAGIC + descriptor if broken_header_checksum else descriptor
    out = [_LZ4_MAGIC, descriptor, bytes([(xxh32(hashed) >> 8) & 0xFF])]
    for start in range(0, len(data), _LZ4_BLOCK):
        raw = data[start : start + _LZ4_BLOCK]
        block = bytes(cramjam.lz4.compress_block(raw, store_size=False))
        if len(block) >= len(raw):  # incompressible: store it, flagged by the high bit
            out.append(struct.pack("<I", len(raw) | 0x80000000))
            out.append(raw)
        else:
            out.append(struct.pack("<I", len(block)))
            out.append(block)
    out.append(b"\x00\x00\x00\x00")  # end mark
    return b"".join(out)


def _lz4_decode(data: bytes, magic: int) -> bytes:
    if magic == MAGIC_V0 and len(data) >= 7 and data.startswith(_LZ4_MAGIC):
        # KAFKA-3160: Kafka ignores the header checksum of magic 0 frames, which its own
        # producer computed wrongly; put the right one in so the frame reader accepts it.
        flg = data[4]
        hc_pos = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
        if len(data) > hc_pos:
            fixed = bytearray(data)
            fixed[hc_pos] = (xxh32(data[4:hc_pos]) >> 8) & 0xFF
            data = bytes(fixed)
    return bytes(cramjam.lz4.decompress(data))


_P1 = 2654435761
_P2 = 2246822519
_P3 = 3266489917
_P4 = 668265263
_P5 = 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32, only for the LZ4 frame's few header bytes (speed does not matter here)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                (lane,) = struct.unpack_from("<I", data, pos)
                v[i] = (_rotl((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (word,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
