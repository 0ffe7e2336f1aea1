"""Kafka wire primitives: struct formats, unsigned varints, packers for primitive arrays.

These are the building blocks the compiled encoders/decoders (``compiler``) and the checked
reference codec (``checked``) share, so both agree on every byte.

Kafka's Uuid text form is ``zkbroker.zk_layout.uuid_text`` (the bottom layer: znodes print it too).

Deliberately not here: anything that knows about message fields or versions, and any error
reporting. Fast-path helpers raise ``WireFault`` (or let ``IndexError``/``struct.error`` escape);
the callers turn those into ``CodecError`` with a field path.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

# Kafka's strings are limited to Short.MAX_VALUE bytes, compact or not: its generated readers
# refuse a longer one ("string field X had invalid length N", MessageDataGenerator).
MAX_STRING_BYTES = 0x7FFF

# Struct format characters. bool encodes with "B" rather than "?" so that None (or any non-int)
# is rejected instead of being silently written as false; it decodes with "?" because Kafka
# reads any non-zero byte as true.
ENCODE_FORMATS = {
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "int64": "q",
    "float64": "d",
    "bool": "B",
    "uuid": "16s",
}
DECODE_FORMATS = {**ENCODE_FORMATS, "bool": "?"}
SIZES = {
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "int64": 8,
    "float64": 8,
    "bool": 1,
    "uuid": 16,
}
INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")

# One-byte varints, so the common case of a short length is a tuple index, not a call.
SMALL_UVARINT: tuple[bytes, ...] = tuple(bytes((i,)) for i in range(128))

# Arrays shorter than this are packed with one precomputed Struct that includes the length.
SMALL_ARRAY = 127


class WireFault(Exception):
    """Raised by the fast path on malformed input; the caller re-reads to explain it."""


def encode_uvarint(value: int) -> bytes:
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    if value < 0x80:
        return SMALL_UVARINT[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def compact_length(length: int) -> bytes:
    """The compact length prefix (length + 1) of a string, bytes or array."""
    return encode_uvarint(length + 1)


def compact_string_length(length: int) -> bytes:
    if length > MAX_STRING_BYTES:
        raise ValueError(f"string of {length} bytes is longer than {MAX_STRING_BYTES}")
    return encode_uvarint(length + 1)


def as_int32(value: int) -> int:
    """``value``'s low 32 bits as a Java ``int``: what Kafka's readers hold after overflow."""
    return ((value + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read an unsigned varint of at most 5 bytes, as Kafka's ``readUnsignedVarint`` does: a
    longer one is refused, and the value is a Java ``int`` (bits past the 32nd are dropped and
    values from 2**31 up come out negative, e.g. ``ff ff ff ff 0f`` is -1)."""
    value = 0
    shift = 0
    for i in range(5):
        byte = buf[pos + i]  # IndexError on truncation, by design
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (as_int32(value) if i == 4 else value), pos + i + 1
        shift += 7
    raise WireFault("varint is longer than 5 bytes")


def read_compact_length(buf: bytes, pos: int) -> tuple[int, int]:
    """Kafka's ``readUnsignedVarint() - 1`` in ``int`` arithmetic: a compact length or count,
    -1 (or any negative value) meaning null."""
    value, pos = read_uvarint(buf, pos)
    return as_int32(value - 1), pos


@cache
def array_packers(type_name: str, compact: bool) -> tuple[Callable[..., bytes], ...]:
    """``packers[n](prefix, *values)`` packs an n-element array of a fixed-size type, prefix
    included (compact: one byte n+1; legacy: int32 n), for n < SMALL_ARRAY."""
    fmt = ENCODE_FORMATS[type_name]
    prefix = "B" if compact else "i"
    return tuple(struct.Struct(f">{prefix}{n}{fmt}").pack for n in range(SMALL_ARRAY))


def pack_array(type_name: str, compact: bool, values: Sequence[Any]) -> bytes:
    """Slow path of ``array_packers`` for long arrays."""
    n = len(values)
    head = compact_length(n) if compact else INT32.pack(n)
    return head + struct.pack(f">{n}{ENCODE_FORMATS[type_name]}", *values)


@cache
def array_unpackers(type_name: str) -> tuple[Callable[[bytes, int], tuple[Any, ...]], ...]:
    """``unpackers[n](buf, pos)`` reads n elements of a fixed-size type, for n < SMALL_ARRAY."""
    fmt = DECODE_FORMATS[type_name]
    return tuple(struct.Struct(f">{n}{fmt}").unpack_from for n in range(SMALL_ARRAY))


def unpack_array(type_name: str, count: int, buf: bytes, pos: int) -> tuple[Any, ...]:
    """Slow path of ``array_unpackers`` for long arrays (count already bounded by the caller)."""
    return struct.unpack_from(f">{count}{DECODE_FORMATS[type_name]}", buf, pos)


def uuid_from_bytes(raw: bytes) -> uuid.UUID:
    return uuid.UUID(bytes=raw)
