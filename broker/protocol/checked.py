"""A slow, fully checked, interpretive codec that explains failures precisely.

The compiled fast path (``compiler``) does not track where it is. When it fails, ``codec`` runs
the same message through this module, which walks the definitions field by field, checks every
read and every value, and raises ``CodecError`` naming the message, the field path
(``topics[3].name``) and the byte offset. It implements exactly the same wire rules, so tests
also use it as an oracle for the compiled code.

Deliberately not here: speed (it is only used on failures and in tests) and caching.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any

from zkbroker.broker.protocol import primitives as p
from zkbroker.broker.protocol.errors import CodecError
from zkbroker.broker.protocol.schema import FIXED_TYPES, FieldDef, MessageDef, StructDef


@dataclass(frozen=True, slots=True)
class Context:
    """What a CodecError says about the message: ``Metadata v12 request``, key, version."""

    label: str
    api_key: int | None
    api_version: int | None


def context_for(msg: MessageDef, version: int) -> Context:
    if msg.kind == "header":
        return Context(f"{msg.name} v{version}", None, None)
    label = f"{msg.api_name} (key {msg.api_key}) v{version} {msg.kind}"
    return Context(label, msg.api_key, version)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# ---------------------------------------------------------------------------------------------
# Decoding


class _Reader:
    def __init__(self, ctx: Context, buf: bytes, pos: int, version: int, flexible: bool) -> None:
        self.ctx = ctx
        self.buf = buf
        self.pos = pos
        self.end = len(buf)
        self.version = version
        self.flexible = flexible

    def error(self, problem: str, path: str, offset: int) -> CodecError:
        return CodecError(
            f"{self.ctx.label}: {problem} at offset {offset} reading {path or 'the body'}",
            api_key=self.ctx.api_key,
            api_version=self.ctx.api_version,
            field=path,
            offset=offset,
        )

    def take(self, size: int, path: str) -> bytes:
        left = self.end - self.pos
        if size > left:
            raise CodecError(
                f"{self.ctx.label}: truncated at offset {self.pos} reading {path} "
                f"(needs {size} bytes, {max(left, 0)} left)",
                api_key=self.ctx.api_key,
                api_version=self.ctx.api_version,
                field=path,
                offset=self.pos,
            )
        data = self.buf[self.pos : self.pos + size]
        self.pos += size
        return data

    def uvarint(self, path: str) -> int:
        """Kafka's ``readUnsignedVarint``: at most 5 bytes, the value a Java int."""
        start = self.pos
        value = 0
        for i in range(5):
            byte = self.take(1, path)[0]
            value |= (byte & 0x7F) << (7 * i)
            if byte < 0x80:
                return p.as_int32(value)
        raise self.error("unsigned varint longer than 5 bytes", path, start)

    def fixed(self, type_name: str, path: str) -> Any:
        raw = self.take(p.SIZES[type_name], path)
        if type_name == "uuid":
            return uuid.UUID(bytes=raw)
        return struct.unpack(">" + p.DECODE_FORMATS[type_name], raw)[0]

    def length(self, compact: bool, width: str, path: str) -> int:
        if compact:
            return p.as_int32(self.uvarint(path) - 1)
        return int(self.fixed(width, path))

    def nullable_length(self, f: FieldDef, n: int, path: str, start: int) -> bool:
        """True if the value is null (any negative length, as Kafka reads it); raise if the
        field is not nullable in this version."""
        if n >= 0:
            return False
        if self.version in f.nullable:
            return True
        raise self.error(
            f"non-nullable field {path} was serialized as null (length {n}, "
            f"not nullable in v{self.version})",
            path,
            start,
        )

    def string_length(self, n: int, path: str, start: int) -> None:
        if n > p.MAX_STRING_BYTES:
            raise self.error(f"string field {path} had invalid length {n}", path, start)

    def text(self, n: int, path: str) -> str:
        # Java's new String(bytes, UTF_8), in Kafka's readString, replaces what is not UTF-8.
        return self.take(n, path).decode("utf-8", "replace")

    def struct(self, sd: StructDef, path: str) -> Any:
        values: dict[str, Any] = {}
        tagged: dict[int, FieldDef] = {}
        for f in sd.fields_in(self.version):
            if self.flexible and f.is_tagged_in(self.version):
                tagged[f.tag or 0] = f
                continue
            compact = f.is_compact_in(self.version, self.flexible)
            values[f.attr] = self.value(f, _join(path, f.attr), compact)
        if self.flexible:
            self.tagged_section(tagged, values, path)
        kwargs = {f.attr: values[f.attr] if f.attr in values else _default(f) for f in sd.fields}
        return sd.cls(**kwargs)

    def tagged_section(
        self, tagged: dict[int, FieldDef], values: dict[str, Any], path: str
    ) -> None:
        where = _join(path, "<tagged fields>")
        start = self.pos
        count = self.uvarint(where)
        if count > self.end - self.pos:
            raise self.error(f"tagged field count {count} exceeds the bytes left", where, start)
        for _ in range(count):
            tag_start = self.pos
            tag = self.uvarint(where)
            size = self.uvarint(where)
            if size < 0:
                raise self.error(f"tagged field {tag} has size {size}", where, tag_start)
            stop = self.pos + size
            f = tagged.get(tag)
            if f is None:
                self.take(size, f"{where}[tag {tag}]")
                continue
            field_path = _join(path, f.attr)
            if stop > self.end:
                self.take(size, field_path)  # raises the truncation error
            values[f.attr] = self.value(f, field_path, True)
            if self.pos > stop:
                raise self.error(
                    f"tagged field {tag} is longer than its declared {size} bytes",
                    field_path,
                    tag_start,
                )
            self.pos = stop

    def value(self, f: FieldDef, path: str, compact: bool) -> Any:
        if f.is_array:
            start = self.pos
            n = self.length(compact, "int32", path)
            if self.nullable_length(f, n, path, start):
                return None
            left = self.end - self.pos
            if n > left:
                raise self.error(
                    f"Tried to allocate a collection of size {n}, but there are only {left} "
                    "bytes remaining.",
                    path,
                    start,
                )
            return [self.element(f, f"{path}[{i}]", compact) for i in range(n)]
        if f.struct is not None:
            if self.version in f.nullable and self.fixed("int8", path) < 0:
                return None
            return self.struct(f.struct, path)
        if f.type in FIXED_TYPES:
            return self.fixed(f.type, path)
        start = self.pos
        n = self.length(compact, "int16" if f.type == "string" else "int32", path)
        if self.nullable_length(f, n, path, start):
            return None
        if f.type != "string":
            return self.take(n, path)
        self.string_length(n, path, start)
        return self.text(n, path)

    def element(self, f: FieldDef, path: str, compact: bool) -> Any:
        if f.struct is not None:
            return self.struct(f.struct, path)
        elem = f.element_type
        if elem in FIXED_TYPES:
            return self.fixed(elem, path)
        start = self.pos
        n = self.length(compact, "int16" if elem == "string" else "int32", path)
        if n < 0:
            raise self.error(
                f"non-nullable field {path} was serialized as null (length {n})", path, start
            )
        if elem != "string":
            return self.take(n, path)
        self.string_length(n, path, start)
        return self.text(n, path)


def _default(f: FieldDef) -> Any:
    if f.is_array:
        return None if f.default is None else []
    if f.struct is not None:
        return None if f.default is None else f.struct.cls()
    return f.default


def decode(msg: MessageDef, version: int, buf: bytes, offset: int, ctx: Context) -> tuple[Any, int]:
    """Decode like the compiled decoder, raising CodecError with path and offset on failure."""
    reader = _Reader(ctx, buf, offset, version, version in msg.flexible_versions)
    result = reader.struct(msg.struct, "")
    return result, reader.pos


# ---------------------------------------------------------------------------------------------
# Encoding


class _Writer:
    def __init__(self, ctx: Context, version: int, flexible: bool) -> None:
        self.ctx = ctx
        self.version = version
        self.flexible = flexible
        self.out: list[bytes] = []

    def error(self, problem: str, path: str) -> CodecError:
        return CodecError(
            f"{self.ctx.label}: cannot encode {path or 'the body'}: {problem}",
            api_key=self.ctx.api_key,
            api_version=self.ctx.api_version,
            field=path,
        )

    def struct(self, sd: StructDef, obj: Any, path: str) -> None:
        if not isinstance(obj, sd.cls):
            raise self.error(f"expected {sd.cls.__name__}, got {type(obj).__name__}", path)
        tagged: list[FieldDef] = []
        for f in sd.fields_in(self.version):
            if self.flexible and f.is_tagged_in(self.version):
                tagged.append(f)
                continue
            compact = f.is_compact_in(self.version, self.flexible)
            self.value(f, getattr(obj, f.attr), _join(path, f.attr), compact)
        if not self.flexible:
            return
        entries: list[bytes] = []
        for f in sorted(tagged, key=lambda f: f.tag or 0):
            value = getattr(obj, f.attr)
            if not _differs_from_default(f, value):
                continue
            outer = self.out
            self.out = []
            self.value(f, value, _join(path, f.attr), True)
            data = b"".join(self.out)
            self.out = outer
            entries.append(p.encode_uvarint(f.tag or 0) + p.encode_uvarint(len(data)) + data)
        self.out.append(p.encode_uvarint(len(entries)))
        self.out.extend(entries)

    def value(self, f: FieldDef, value: Any, path: str, compact: bool) -> None:
        if value is None:
            if self.version not in f.nullable:
                raise self.error(f"None is not allowed (not nullable in v{self.version})", path)
            if f.is_array or f.type in ("string", "bytes", "records"):
                width = 2 if f.type == "string" else 4
                self.out.append(b"\x00" if compact else b"\xff" * width)
            else:
                self.out.append(b"\xff")
            return
        if f.is_array:
            if not isinstance(value, list | tuple):
                raise self.error(f"expected a list, got {type(value).__name__}", path)
            self.out.append(p.compact_length(len(value)) if compact else p.INT32.pack(len(value)))
            for i, item in enumerate(value):
                item_path = f"{path}[{i}]"
                if item is None:
                    raise self.error("None is not allowed as an array element", item_path)
                if f.struct is not None:
                    self.struct(f.struct, item, item_path)
                else:
                    self.scalar(f.element_type, item, item_path, compact)
        elif f.struct is not None:
            if self.version in f.nullable:
                self.out.append(b"\x01")
            self.struct(f.struct, value, path)
        else:
            self.scalar(f.type, value, path, compact)

    def scalar(self, type_name: str, value: Any, path: str, compact: bool) -> None:
        if type_name in p.INT_RANGES:
            low, high = p.INT_RANGES[type_name]
            if not isinstance(value, int):
                raise self.error(f"expected int, got {type(value).__name__}", path)
            if not low <= value <= high:
                raise self.error(f"{value} does not fit in {type_name}", path)
            self.out.append(struct.pack(">" + p.ENCODE_FORMATS[type_name], value))
        elif type_name == "bool":
            if not isinstance(value, int) or not 0 <= value <= 255:
                raise self.error(f"expected bool, got {value!r}", path)
            self.out.append(b"\x01" if value else b"\x00")
        elif type_name == "float64":
            if not isinstance(value, int | float):
                raise self.error(f"expected float, got {type(value).__name__}", path)
            self.out.append(struct.pack(">d", value))
        elif type_name == "uuid":
            if not isinstance(value, uuid.UUID):
                raise self.error(f"expected uuid.UUID, got {type(value).__name__}", path)
            self.out.append(value.bytes)
        elif type_name == "string":
            if not isinstance(value, str):
                raise self.error(f"expected str, got {type(value).__name__}", path)
            try:
                data = value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise self.error(f"not encodable as UTF-8 ({exc.reason})", path) from None
            if len(data) > p.MAX_STRING_BYTES:
                raise self.error(f"string of {len(data)} bytes exceeds 32767", path)
            self.out.append(p.compact_length(len(data)) if compact else p.INT16.pack(len(data)))
            self.out.append(data)
        else:
            if not isinstance(value, bytes | bytearray | memoryview):
                raise self.error(f"expected bytes, got {type(value).__name__}", path)
            data = bytes(value)
            if len(data) > 0x7FFFFFFF:
                raise self.error("bytes value too long", path)
            self.out.append(p.compact_length(len(data)) if compact else p.INT32.pack(len(data)))
            self.out.append(data)


def _differs_from_default(f: FieldDef, value: Any) -> bool:
    """Tagged fields are written only when they differ from their default (KIP-482)."""
    if f.is_array:
        return value is not None if f.default is None else (value is None or len(value) != 0)
    if f.struct is not None:
        return value is not None if f.default is None else bool(value != f.struct.cls())
    if f.default is None:
        return value is not None
    return bool(value != f.default)


def encode(msg: MessageDef, version: int, obj: Any, ctx: Context) -> bytes:
    """Encode with full checks, raising CodecError naming the offending field."""
    writer = _Writer(ctx, version, version in msg.flexible_versions)
    writer.struct(msg.struct, obj, "")
    return b"".join(writer.out)
