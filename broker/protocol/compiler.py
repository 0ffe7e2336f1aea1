"""Builds a specialised encoder and decoder for one (message, version) from its definitions.

It writes Python source for straight-line code (nested structs and arrays inlined, runs of
fixed-size fields packed or unpacked with one cached ``struct.Struct``), ``compile()``s it and
returns ``encoder(msg, out: bytearray) -> None`` (appends the body; ``+=`` on a bytearray beats
joining many pieces) or ``decoder(buf, pos) -> (msg, new_pos)``. The generated code is the fast
path: it checks only what memory safety needs and lets other malformed input fail with whatever
Python raises; ``zkbroker.broker.protocol.codec`` then asks ``checked`` for a precise
explanation. Decoders refuse and read exactly what Kafka's parser does (docs/kafka-behaviour.md
§0, "Parsing"), with one deliberate difference: a known tagged field must fit its declared
size, and reading goes on at the end of that size.

Not here: caching the compiled functions (``codec``), error messages, headers, knowledge of
specific APIs.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from typing import Any

from zkbroker.broker.protocol import primitives as p
from zkbroker.broker.protocol.schema import FIXED_TYPES, FieldDef, MessageDef, StructDef

Encoder = Callable[[Any, bytearray], None]
Decoder = Callable[[bytes, int], tuple[Any, int]]

_INDENT = "    "


class _Source:
    """Accumulates generated lines plus the globals they reference."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.globals: dict[str, Any] = {}
        self._ids: dict[int, str] = {}
        self._counter = 0

    def local(self, hint: str) -> str:
        self._counter += 1
        return f"{hint}{self._counter}"

    def ref(self, value: Any, hint: str) -> str:
        """A global name bound to ``value`` (one name per distinct object)."""
        key = id(value)
        name = self._ids.get(key)
        if name is None:
            self._counter += 1
            name = f"_{hint}{self._counter}"
            self._ids[key] = name
            self.globals[name] = value
        return name

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(_INDENT * depth + text)

    def build(self, func_name: str, filename: str) -> Any:
        code = compile("\n".join(self.lines) + "\n", filename, "exec")
        namespace = dict(self.globals)
        exec(code, namespace)
        return namespace[func_name]


def _check_layout(sd: StructDef) -> None:
    """Decoders build instances positionally, so the dataclass must match the definition."""
    names = [f.name for f in dataclasses.fields(sd.cls)]
    if names != [f.attr for f in sd.fields]:
        raise TypeError(f"{sd.cls.__name__}: dataclass fields {names} do not match definition")


# Segment packers cached per segment: the combinations of lengths seen in practice are few; the
# cap only guards against pathological inputs growing a cache without bound.
_SEGMENT_CACHE_LIMIT = 1024


class _SegmentPackers:
    """Builds (and caches) the Struct packer of a segment for one combination of lengths."""

    def __init__(self, cache: dict[Any, Callable[..., bytes]], template: tuple[Any, ...]) -> None:
        self.cache = cache
        self.template = template

    def __call__(self, key: int | tuple[int, ...]) -> Callable[..., bytes]:
        lengths = iter(key if isinstance(key, tuple) else (key,))
        parts = [">"]
        for piece in self.template:
            if isinstance(piece, str):
                parts.append(piece)
                continue
            kind, compact, char = piece
            n = max(next(lengths), 0)  # -1 (null) packs a prefix and no data
            prefix = "B" if compact else ("h" if kind == "string" else "i")
            parts.append(f"{prefix}{n}{char}")
        pack = struct.Struct("".join(parts)).pack
        if len(self.cache) < _SEGMENT_CACHE_LIMIT:
            self.cache[key] = pack
        return pack


def _split(sd: StructDef, version: int, flexible: bool) -> tuple[list[FieldDef], list[FieldDef]]:
    present = sd.fields_in(version)
    if not flexible:
        return list(present), []
    tagged = sorted((f for f in present if f.is_tagged_in(version)), key=lambda f: f.tag or 0)
    return [f for f in present if not f.is_tagged_in(version)], tagged


def _is_fixed(f: FieldDef) -> bool:
    return not f.is_array and f.type in FIXED_TYPES


# ---------------------------------------------------------------------------------------------
# Encoder


class _EncoderWriter:
    def __init__(self, src: _Source, version: int, flexible: bool) -> None:
        self.src = src
        self.version = version
        self.flexible = flexible
        self.small = src.ref(p.SMALL_UVARINT, "SV")

    def struct(self, sd: StructDef, obj: str, out: str, depth: int) -> None:
        untagged, tagged = _split(sd, self.version, self.flexible)
        segment: list[FieldDef] = []
        for f in untagged:
            if self.packable(f):
                segment.append(f)
                continue
            if segment:
                self.segment(segment, obj, out, depth, end_tag=False)
                segment = []
            value = self.src.local("v")
            self.src.emit(depth, f"{value} = {obj}.{f.attr}")
            self.value(f, value, out, depth, f.is_compact_in(self.version, self.flexible))
        end_tag = self.flexible and not tagged
        if segment:
            self.segment(segment, obj, out, depth, end_tag)
        elif end_tag:
            self.src.emit(depth, f'{out} += b"\\x00"')  # an empty tagged-field section
        if tagged:
            self.tagged_section(tagged, obj, out, depth)

    @staticmethod
    def packable(f: FieldDef) -> bool:
        """Fields one struct.Struct can pack: fixed-size scalars, strings, short arrays of
        fixed-size numbers (whose formats depend on their lengths, see ``segment``)."""
        if f.is_array:
            return f.struct is None and f.element_type in FIXED_TYPES and f.element_type != "uuid"
        return f.type in FIXED_TYPES or f.type == "string"

    def segment(
        self, fields: list[FieldDef], obj: str, out: str, depth: int, end_tag: bool
    ) -> None:
        """Pack consecutive packable fields with one call.

        Strings and arrays make the format depend on their lengths, so the generated code
        computes the lengths, and if all are short (< 127: a one-byte compact prefix) fetches
        the Struct for that combination from a cache (building it on first sight); otherwise it
        falls back to field-by-field code.
        """
        src = self.src
        template: list[str | tuple[str, bool, str]] = []
        args: list[str] = []
        lengths: list[str] = []
        for f in fields:
            if _is_fixed(f):
                template.append(p.ENCODE_FORMATS[f.type])
                args.append(f"{obj}.{f.attr}.bytes" if f.type == "uuid" else f"{obj}.{f.attr}")
                continue
            piece, size, data = self.sized(f, obj, depth)
            template.append(piece)
            lengths.append(size)
            compact = piece[1]
            args += [f"{size} + 1" if compact else size, data]
        if end_tag:
            template.append("x")  # the empty tagged-field section is a single zero byte
        if not lengths:
            layout = struct.Struct(">" + "".join(str(t) for t in template))
            src.emit(depth, f"{out} += {src.ref(layout.pack, 'P')}({', '.join(args)})")
            return
        cache: dict[Any, Callable[..., bytes]] = {}
        packer = src.local("pk")
        key = lengths[0] if len(lengths) == 1 else f"({', '.join(lengths)})"
        src.emit(depth, f"if {' and '.join(f'{n} < {p.SMALL_ARRAY}' for n in lengths)}:")
        src.emit(depth + 1, f"{packer} = {src.ref(cache, 'K')}.get({key})")
        src.emit(depth + 1, f"if {packer} is None:")
        maker = src.ref(_SegmentPackers(cache, tuple(template)), "mk")
        src.emit(depth + 2, f"{packer} = {maker}({key})")
        src.emit(depth + 1, f"{out} += {packer}({', '.join(args)})")
        src.emit(depth, "else:")
        self.fields_one_by_one(fields, obj, out, depth + 1, end_tag)

    def sized(self, f: FieldDef, obj: str, depth: int) -> tuple[tuple[str, bool, str], str, str]:
        """Emit the code that reads a string or array field of a segment and its length; its
        piece of the segment's template, the length's local and the packed data's expression
        (a null packs as a -1, legacy, or 0, compact, length and no data)."""
        src = self.src
        compact = f.is_compact_in(self.version, self.flexible)
        nullable = self.version in f.nullable
        value = src.local("v")
        size = src.local("n")
        src.emit(depth, f"{value} = {obj}.{f.attr}")
        if f.is_array:
            if nullable:
                src.emit(depth, f"if {value} is None:")
                src.emit(depth + 1, f"{size} = -1")
                src.emit(depth + 1, f"{value} = ()")
                src.emit(depth, "else:")
                src.emit(depth + 1, f"{size} = len({value})")
            else:
                src.emit(depth, f"{size} = len({value})")
            return ("array", compact, p.ENCODE_FORMATS[f.element_type]), size, f"*{value}"
        data = src.local("s")
        if nullable:
            src.emit(depth, f"if {value} is None:")
            src.emit(depth + 1, f"{size} = -1")
            src.emit(depth + 1, f'{data} = b""')
            src.emit(depth, "else:")
            src.emit(depth + 1, f"{data} = {value}.encode()")
            src.emit(depth + 1, f"{size} = len({data})")
        else:
            src.emit(depth, f"{data} = {value}.encode()")
            src.emit(depth, f"{size} = len({data})")
        return ("string", compact, "s"), size, data

    def fields_one_by_one(
        self, fields: list[FieldDef], obj: str, out: str, depth: int, end_tag: bool
    ) -> None:
        """The general path: runs of fixed fields packed together, everything else alone."""
        src = self.src
        fmt: list[str] = []
        args: list[str] = []

        def flush() -> None:
            if fmt:
                packer = src.ref(struct.Struct(">" + "".join(fmt)).pack, "P")
                src.emit(depth, f"{out} += {packer}({', '.join(args)})")
                fmt.clear()
                args.clear()

        for f in fields:
            if _is_fixed(f):
                fmt.append(p.ENCODE_FORMATS[f.type])
                args.append(f"{obj}.{f.attr}.bytes" if f.type == "uuid" else f"{obj}.{f.attr}")
                continue
            flush()
            value = src.local("v")
            src.emit(depth, f"{value} = {obj}.{f.attr}")
            self.value(f, value, out, depth, f.is_compact_in(self.version, self.flexible))
        if end_tag:
            if fmt:
                fmt.append("x")
            else:
                src.emit(depth, f'{out} += b"\\x00"')
        flush()

    def tagged_section(self, tagged: list[FieldDef], obj: str, out: str, depth: int) -> None:
        src = self.src
        entries = src.local("tg")
        src.emit(depth, f"{entries} = []")
        uvarint = src.ref(p.encode_uvarint, "uv")
        for f in tagged:
            value = src.local("v")
            src.emit(depth, f"{value} = {obj}.{f.attr}")
            src.emit(depth, f"if {self.differs_from_default(f, value)}:")
            sub = src.local("o")
            data = src.local("b")
            src.emit(depth + 1, f"{sub} = bytearray()")
            self.value(f, value, sub, depth + 1, True)
            src.emit(depth + 1, f"{data} = bytes({sub})")
            tag = src.ref(p.encode_uvarint(f.tag or 0), "T")
            src.emit(depth + 1, f"{entries}.append({tag} + {uvarint}(len({data})) + {data})")
        entry = src.local("t")
        src.emit(depth, f"{out} += {self.small}[len({entries})]")
        src.emit(depth, f"for {entry} in {entries}:")
        src.emit(depth + 1, f"{out} += {entry}")

    def differs_from_default(self, f: FieldDef, value: str) -> str:
        if f.is_array:
            if f.default is None:
                return f"{value} is not None"
            return f"{value} is None or len({value}) != 0"
        if f.struct is not None:
            if f.default is None:
                return f"{value} is not None"
            return f"{value} != {self.src.ref(f.struct.cls(), 'D')}"
        if f.default is None:
            return f"{value} is not None"
        return f"{value} != {self.src.ref(f.default, 'D')}"

    def prefix(self, count: str, compact: bool) -> str:
        """Expression for the length prefix of a ``count``-element array or bytes value."""
        if compact:
            slow = self.src.ref(p.compact_length, "cl")
            return f"{self.small}[{count} + 1] if {count} < 127 else {slow}({count})"
        return f"{self.src.ref(p.INT32.pack, 'I32')}({count})"

    def value(self, f: FieldDef, value: str, out: str, depth: int, compact: bool) -> None:
        """Encode one field's value (held in local ``value``), whatever its type."""
        src = self.src
        nullable = self.version in f.nullable
        if nullable:
            if f.is_array or f.type in ("string", "bytes", "records"):
                null = b"\x00" if compact else (b"\xff\xff" if f.type == "string" else b"\xff" * 4)
            else:
                null = b"\xff"  # a nullable struct: int8 -1
            src.emit(depth, f"if {value} is None:")
            src.emit(depth + 1, f"{out} += {null!r}")
            src.emit(depth, "else:")
            depth += 1
        if f.is_array:
            self.array(f, value, out, depth, compact)
        elif f.struct is not None:
            if nullable:
                src.emit(depth, f'{out} += b"\\x01"')
            self.struct(f.struct, value, out, depth)
        else:
            self.scalar(f.type, value, out, depth, compact)

    def scalar(self, type_name: str, value: str, out: str, depth: int, compact: bool) -> None:
        src = self.src
        if type_name == "uuid":
            src.emit(depth, f"{out} += {value}.bytes")
        elif type_name in FIXED_TYPES:
            packer = src.ref(struct.Struct(">" + p.ENCODE_FORMATS[type_name]).pack, "P")
            src.emit(depth, f"{out} += {packer}({value})")
        elif type_name == "string":
            data = src.local("s")
            size = src.local("n")
            src.emit(depth, f"{data} = {value}.encode()")
            src.emit(depth, f"{size} = len({data})")
            if compact:
                slow = src.ref(p.compact_string_length, "csl")
                head = f"{self.small}[{size} + 1] if {size} < 127 else {slow}({size})"
                src.emit(depth, f"{out} += {head}")
            else:
                src.emit(depth, f"{out} += {src.ref(p.INT16.pack, 'I16')}({size})")
            src.emit(depth, f"{out} += {data}")
        else:  # bytes, records
            size = src.local("n")
            src.emit(depth, f"{size} = len({value})")
            src.emit(depth, f"{out} += {self.prefix(size, compact)}")
            src.emit(depth, f"{out} += {value}")

    def array(self, f: FieldDef, value: str, out: str, depth: int, compact: bool) -> None:
        src = self.src
        elem = f.element_type
        count = src.local("n")
        src.emit(depth, f"{count} = len({value})")
        if elem in FIXED_TYPES and elem != "uuid":
            table = src.ref(p.array_packers(elem, compact), "AP")
            slow = src.ref(p.pack_array, "pa")
            head = f"{count} + 1" if compact else count
            src.emit(
                depth,
                f"{out} += {table}[{count}]({head}, *{value}) if {count} < {p.SMALL_ARRAY} "
                f"else {slow}({elem!r}, {compact}, {value})",
            )
            return
        src.emit(depth, f"{out} += {self.prefix(count, compact)}")
        item = src.local("e")
        src.emit(depth, f"for {item} in {value}:")
        if f.struct is not None:
            self.struct(f.struct, item, out, depth + 1)
        else:
            self.scalar(elem, item, out, depth + 1, compact)


# ---------------------------------------------------------------------------------------------
# Decoder


class _DecoderWriter:
    def __init__(self, src: _Source, version: int, flexible: bool) -> None:
        self.src = src
        self.version = version
        self.flexible = flexible
        self.fault = src.ref(p.WireFault, "Fault")
        self.uvarint = src.ref(p.read_uvarint, "ruv")
        self.compact_length = src.ref(p.read_compact_length, "rcl")

    def default_expr(self, f: FieldDef) -> str:
        if f.is_array:
            return "None" if f.default is None else "[]"
        if f.struct is not None:
            return "None" if f.default is None else f"{self.src.ref(f.struct.cls, 'C')}()"
        if f.default is None or isinstance(f.default, bool | int | str | bytes):
            return repr(f.default)
        return self.src.ref(f.default, "D")

    def struct(self, sd: StructDef, target: str, depth: int) -> None:
        src = self.src
        untagged, tagged = _split(sd, self.version, self.flexible)
        values: dict[str, str] = {}
        fmt: list[str] = []
        names: list[str] = []
        uuids: list[str] = []

        def flush() -> None:
            if not fmt:
                return
            layout = struct.Struct(">" + "".join(fmt))
            unpack = src.ref(layout.unpack_from, "U")
            lhs = ", ".join(names) + ("," if len(names) == 1 else "")
            src.emit(depth, f"{lhs} = {unpack}(buf, pos)")
            src.emit(depth, f"pos += {layout.size}")
            for name in uuids:
                src.emit(depth, f"{name} = {src.ref(p.uuid_from_bytes, 'uuid')}({name})")
            fmt.clear()
            names.clear()
            uuids.clear()

        for f in untagged:
            var = src.local("f")
            values[f.attr] = var
            if _is_fixed(f):
                fmt.append(p.DECODE_FORMATS[f.type])
                names.append(var)
                if f.type == "uuid":
                    uuids.append(var)
                continue
            flush()
            self.value(f, var, depth, f.is_compact_in(self.version, self.flexible))
        flush()
        if self.flexible:
            for f in tagged:
                var = src.local("f")
                values[f.attr] = var
                src.emit(depth, f"{var} = {self.default_expr(f)}")
            self.tagged_section(tagged, values, depth)
        cls = src.ref(sd.cls, "C")
        args = ", ".join(values.get(f.attr) or self.default_expr(f) for f in sd.fields)
        src.emit(depth, f"{target} = {cls}({args})")

    def tagged_section(self, tagged: list[FieldDef], values: dict[str, str], depth: int) -> None:
        src = self.src
        count = src.local("nt")
        src.emit(depth, f"{count} = buf[pos]")
        src.emit(depth, f"if {count} == 0:")
        src.emit(depth + 1, "pos += 1")
        src.emit(depth, "else:")
        d = depth + 1
        tag = src.local("tag")
        size = src.local("sz")
        stop = src.local("stop")
        # A count above the bytes left cannot be read (every entry takes two bytes). Stricter
        # than Kafka, which reads a known tag's value without looking at its declared size:
        # here the value must fit its size, and the reader goes on at the size's end.
        src.emit(d, f"{count}, pos = {self.uvarint}(buf, pos)")
        src.emit(d, f"if {count} > end - pos:")
        src.emit(d + 1, f"raise {self.fault}")
        src.emit(d, f"for _ in range({count}):")
        d += 1
        src.emit(d, f"{tag}, pos = {self.uvarint}(buf, pos)")
        src.emit(d, f"{size}, pos = {self.uvarint}(buf, pos)")
        src.emit(d, f"{stop} = pos + {size}")
        src.emit(d, f"if {size} < 0 or {stop} > end:")
        src.emit(d + 1, f"raise {self.fault}")
        keyword = "if"
        for f in tagged:
            src.emit(d, f"{keyword} {tag} == {f.tag}:")
            self.value(f, values[f.attr], d + 1, True)
            src.emit(d + 1, f"if pos > {stop}:")
            src.emit(d + 2, f"raise {self.fault}")
            keyword = "elif"
        src.emit(d, f"pos = {stop}")

    def count(self, var: str, depth: int, compact: bool, width: str) -> None:
        """Read a length/count prefix into ``var`` (-1 means null)."""
        src = self.src
        if compact:
            src.emit(depth, f"{var} = buf[pos]")
            src.emit(depth, f"if {var} < 128:")
            src.emit(depth + 1, "pos += 1")
            src.emit(depth + 1, f"{var} -= 1")
            src.emit(depth, "else:")
            src.emit(depth + 1, f"{var}, pos = {self.compact_length}(buf, pos)")
        else:
            layout = p.INT16 if width == "int16" else p.INT32
            src.emit(depth, f"{var} = {src.ref(layout.unpack_from, 'U')}(buf, pos)[0]")
            src.emit(depth, f"pos += {layout.size}")

    def null_or_fault(self, f: FieldDef, count: str, target: str, depth: int) -> None:
        """Emit the branch for a negative length: null if allowed, else a fault. Kafka reads
        any negative length of a nullable field as null, not only -1."""
        src = self.src
        src.emit(depth, f"if {count} < 0:")
        if self.version in f.nullable:
            src.emit(depth + 1, f"{target} = None")
        else:
            src.emit(depth + 1, f"raise {self.fault}")
        src.emit(depth, "else:")

    def value(self, f: FieldDef, target: str, depth: int, compact: bool) -> None:
        src = self.src
        if f.is_array:
            count = src.local("n")
            self.count(count, depth, compact, "int32")
            self.null_or_fault(f, count, target, depth)
            self.array(f, count, target, depth + 1, compact)
        elif f.struct is not None:
            if self.version in f.nullable:
                src.emit(depth, "pos += 1")
                src.emit(depth, "if buf[pos - 1] >= 128:")  # int8 < 0: null
                src.emit(depth + 1, f"{target} = None")
                src.emit(depth, "else:")
                depth += 1
            self.struct(f.struct, target, depth)
        elif f.type in ("string", "bytes", "records"):
            count = src.local("n")
            self.count(count, depth, compact, "int16" if f.type == "string" else "int32")
            self.null_or_fault(f, count, target, depth)
            self.variable(f.type, count, target, depth + 1, compact)
        else:
            self.fixed(f.type, target, depth)

    def fixed(self, type_name: str, target: str, depth: int) -> None:
        src = self.src
        layout = struct.Struct(">" + p.DECODE_FORMATS[type_name])
        src.emit(depth, f"{target} = {src.ref(layout.unpack_from, 'U')}(buf, pos)[0]")
        src.emit(depth, f"pos += {layout.size}")
        if type_name == "uuid":
            src.emit(depth, f"{target} = {src.ref(p.uuid_from_bytes, 'uuid')}({target})")

    def variable(self, type_name: str, count: str, target: str, depth: int, compact: bool) -> None:
        """Read ``count`` bytes as a string or bytes value (count already non-negative).

        A compact string longer than 32767 bytes is refused, as Kafka's readers do (a legacy
        int16 length cannot say more). Invalid UTF-8 becomes U+FFFD, as Java's ``new
        String(bytes, UTF_8)`` in Kafka's ``readString`` makes it: Kafka does not refuse it.
        """
        src = self.src
        if type_name == "string" and compact:
            src.emit(depth, f"if {count} > {p.MAX_STRING_BYTES}:")
            src.emit(depth + 1, f"raise {self.fault}")
        stop = src.local("stop")
        src.emit(depth, f"{stop} = pos + {count}")
        src.emit(depth, f"if {stop} > end:")
        src.emit(depth + 1, f"raise {self.fault}")
        if type_name == "string":
            src.emit(depth, f"{target} = buf[pos:{stop}].decode('utf-8', 'replace')")
        else:
            src.emit(depth, f"{target} = buf[pos:{stop}]")
        src.emit(depth, f"pos = {stop}")

    def array(self, f: FieldDef, count: str, target: str, depth: int, compact: bool) -> None:
        src = self.src
        elem = f.element_type
        # Every element takes at least one byte, so a count above the bytes left is garbage;
        # checking first keeps a hostile count from driving a huge loop or allocation.
        src.emit(depth, f"if {count} > end - pos:")
        src.emit(depth + 1, f"raise {self.fault}")
        if elem in FIXED_TYPES and elem != "uuid":
            table = src.ref(p.array_unpackers(elem), "AU")
            slow = src.ref(p.unpack_array, "ua")
            src.emit(
                depth,
                f"{target} = list({table}[{count}](buf, pos) if {count} < {p.SMALL_ARRAY} "
                f"else {slow}({elem!r}, {count}, buf, pos))",
            )
            src.emit(depth, f"pos += {count} * {p.SIZES[elem]}")
            return
        add = src.local("ap")
        item = src.local("e")
        src.emit(depth, f"{target} = []")
        src.emit(depth, f"{add} = {target}.append")
        src.emit(depth, f"for _ in range({count}):")
        if f.struct is not None:
            self.struct(f.struct, item, depth + 1)
        elif elem in FIXED_TYPES:
            self.fixed(elem, item, depth + 1)
        else:
            size = src.local("n")
            self.count(size, depth + 1, compact, "int16" if elem == "string" else "int32")
            src.emit(depth + 1, f"if {size} < 0:")
            src.emit(depth + 2, f"raise {self.fault}")
            self.variable(elem, size, item, depth + 1, compact)
        src.emit(depth + 1, f"{add}({item})")


def _encoder_source(msg: MessageDef, version: int) -> _Source:
    src = _Source()
    src.emit(0, "def encode(msg, out):")
    flexible = version in msg.flexible_versions
    _EncoderWriter(src, version, flexible).struct(msg.struct, "msg", "out", 1)
    src.emit(1, "return None")  # keeps the body valid when a version has no fields at all
    return src


def _decoder_source(msg: MessageDef, version: int) -> _Source:
    src = _Source()
    src.emit(0, "def decode(buf, pos):")
    src.emit(1, "end = len(buf)")
    flexible = version in msg.flexible_versions
    _DecoderWriter(src, version, flexible).struct(msg.struct, "result", 1)
    src.emit(1, "return result, pos")
    return src


def build_encoder(msg: MessageDef, version: int) -> Encoder:
    """Compile the encoder of ``msg`` at ``version`` (the caller checks the version is valid)."""
    _check_all_layouts(msg.struct)
    fn: Encoder = _encoder_source(msg, version).build("encode", f"<encode {msg.name} v{version}>")
    return fn


def build_decoder(msg: MessageDef, version: int) -> Decoder:
    """Compile the decoder of ``msg`` at ``version`` (the caller checks the version is valid)."""
    _check_all_layouts(msg.struct)
    fn: Decoder = _decoder_source(msg, version).build("decode", f"<decode {msg.name} v{version}>")
    return fn


def _check_all_layouts(sd: StructDef) -> None:
    _check_layout(sd)
    for f in sd.fields:
        if f.struct is not None:
            _check_all_layouts(f.struct)
