"""Kafka's zig-zag varints and varlongs (protobuf encoding), as record batch v2 uses them.

Follows Kafka's ``ByteUtils.readVarint``/``readVarlong``/``writeVarint`` (KIP-98). A varint
longer than 5 bytes (varlong: 10) is an error, as in Kafka.

Deliberately not here: unsigned varints of the flexible request versions (the codec has
those in ``zkbroker.broker.protocol.primitives``).
"""

from __future__ import annotations


class VarintError(ValueError):
    """A varint is too long or runs past the end of the buffer."""


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zig-zag int32 at ``pos``; return (value, position after it)."""
    try:
        b = buf[pos]
        if b < 0x80:  # the common one-byte case, without the loop
            return (b >> 1) ^ -(b & 1), pos + 1
        raw = b & 0x7F
        shift = 7
        pos += 1
        while True:
            b = buf[pos]
            pos += 1
            raw |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if shift > 28:
                raise VarintError(
                    "Varint is too long, the most significant bit in the 5th byte is set"
                )
    except IndexError:
        raise VarintError("varint runs past the end of the buffer") from None
    raw &= 0xFFFFFFFF  # Java's int arithmetic drops the bits beyond 32
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zig-zag int64 at ``pos``; return (value, position after it)."""
    try:
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        raw = b & 0x7F
        shift = 7
        pos += 1
        while True:
            b = buf[pos]
            pos += 1
            raw |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if shift > 63:
                raise VarintError(
                    "Varlong is too long, most significant bit in the 10th byte is set"
                )
    except IndexError:
        raise VarintError("varlong runs past the end of the buffer") from None
    raw &= 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def encode_varint(value: int) -> bytes:
    """Zig-zag encode a signed int32."""
    return _encode_unsigned(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def encode_varlong(value: int) -> bytes:
    """Zig-zag encode a signed int64."""
    return _encode_unsigned(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


_SMALL = [bytes([i]) for i in range(128)]


def _encode_unsigned(raw: int) -> bytes:
    if raw < 0x80:
        return _SMALL[raw]
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)
