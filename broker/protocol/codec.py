"""Body-level encode/decode entry points: pick the compiled function, explain its failures.

``encode_message``/``decode_message`` work on a message body (or a header) at a given version.
They fetch the compiled encoder/decoder for (class, version) from a cache, compiling it on first
use, and run it. If the fast path raises anything at all, the same input goes through the
``checked`` codec, whose ``CodecError`` names the field path and offset; nothing else escapes.

Deliberately not here: header-version rules and request/response framing (``headers``,
``request_codec``), and the wire logic itself (``compiler``, ``checked``).
"""

from __future__ import annotations

from typing import Any

from zkbroker.broker.protocol import checked
from zkbroker.broker.protocol.compiler import Decoder, Encoder, build_decoder, build_encoder
from zkbroker.broker.protocol.errors import CodecError
from zkbroker.broker.protocol.messages import MESSAGE_DEFS
from zkbroker.broker.protocol.schema import MessageDef

Buffer = bytes | bytearray | memoryview

_DEFS_BY_CLASS: dict[type, MessageDef] = {d.struct.cls: d for d in MESSAGE_DEFS}

# The only mutable module state: compiled functions, keyed by (message class, version).
_ENCODERS: dict[tuple[type, int], Encoder] = {}
_DECODERS: dict[tuple[type, int], Decoder] = {}


def definition_of(cls: type) -> MessageDef:
    """The MessageDef of a generated message (or header) class."""
    definition = _DEFS_BY_CLASS.get(cls)
    if definition is None:
        raise CodecError(f"{getattr(cls, '__name__', cls)!s} is not a Kafka message class")
    return definition


def as_bytes(buf: Any) -> bytes:
    """Decoders index and slice ``bytes``; other buffers are copied once, up front."""
    if type(buf) is bytes:
        return buf
    if isinstance(buf, bytes | bytearray | memoryview):
        return bytes(buf)
    raise CodecError(f"expected a bytes-like buffer, got {type(buf).__name__}")


def _check_version(definition: MessageDef, version: int) -> None:
    if not isinstance(version, int) or version not in definition.valid_versions:
        ctx = checked.context_for(definition, version)
        raise CodecError(
            f"{ctx.label}: version not defined in Kafka 3.9 "
            f"(valid versions {definition.valid_versions})",
            api_key=definition.api_key,
            api_version=version if isinstance(version, int) else None,
        )


def _encoder(cls: type, version: int) -> Encoder:
    definition = definition_of(cls)
    _check_version(definition, version)
    fn = build_encoder(definition, version)
    _ENCODERS[(cls, version)] = fn
    return fn


def _decoder(definition: MessageDef, version: int) -> Decoder:
    _check_version(definition, version)
    fn = build_decoder(definition, version)
    _DECODERS[(definition.struct.cls, version)] = fn
    return fn


def encode_with_prefix(prefix: bytes, msg: Any, version: int) -> bytes:
    """``prefix`` followed by ``msg`` encoded at ``version``."""
    cls = msg.__class__
    fn = _ENCODERS.get((cls, version))
    if fn is None:
        fn = _encoder(cls, version)
    out = bytearray(prefix)
    try:
        fn(msg, out)
    except Exception as exc:
        raise _explain_encode(cls, version, msg, exc) from exc
    return bytes(out)


def encode_message(msg: Any, version: int) -> bytes:
    """Encode a message body (no header) at ``version``; fields absent there are dropped."""
    return encode_with_prefix(b"", msg, version)


def decode_with(
    definition: MessageDef,
    version: int,
    data: bytes,
    offset: int,
    ctx: checked.Context | None = None,
) -> tuple[Any, int]:
    """Decode ``definition`` at ``version`` from ``data[offset:]``; returns (msg, new offset)."""
    fn = _DECODERS.get((definition.struct.cls, version))
    if fn is None:
        fn = _decoder(definition, version)
    if not 0 <= offset <= len(data):
        raise CodecError(f"offset {offset} is outside the {len(data)}-byte buffer", offset=offset)
    try:
        return fn(data, offset)
    except Exception as exc:
        raise _explain_decode(definition, version, data, offset, ctx, exc) from None


def decode_message(cls: type, version: int, buf: Buffer, offset: int = 0) -> tuple[Any, int]:
    """Decode a body of message class ``cls`` at ``version``; returns (msg, new offset).

    Bytes after the body are left alone (Kafka ignores them too).
    """
    return decode_with(definition_of(cls), version, as_bytes(buf), offset)


def _explain_encode(cls: type, version: int, msg: Any, exc: Exception) -> CodecError:
    definition = definition_of(cls)
    ctx = checked.context_for(definition, version)
    try:
        checked.encode(definition, version, msg, ctx)
    except CodecError as err:
        return err
    except Exception as other:  # the checker itself must not leak anything either
        exc = other
    return CodecError(
        f"{ctx.label}: cannot encode: {type(exc).__name__}: {exc}",
        api_key=ctx.api_key,
        api_version=ctx.api_version,
    )


def _explain_decode(
    definition: MessageDef,
    version: int,
    data: bytes,
    offset: int,
    ctx: checked.Context | None,
    exc: Exception,
) -> CodecError:
    ctx = ctx or checked.context_for(definition, version)
    try:
        checked.decode(definition, version, data, offset, ctx)
    except CodecError as err:
        return err
    except Exception as other:
        exc = other
    return CodecError(
        f"{ctx.label}: cannot decode: {type(exc).__name__}: {exc}",
        api_key=ctx.api_key,
        api_version=ctx.api_version,
    )
