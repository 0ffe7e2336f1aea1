"""Data types that describe Kafka messages: version ranges, fields, structs, messages, APIs.

The generated modules under ``zkbroker.broker.protocol.messages`` are written in terms of these
types and ``zkbroker.broker.protocol.compiler`` turns them into encoders and decoders.

Deliberately not here: any wire logic (see ``primitives``/``compiler``), any JSON parsing of the
Kafka specs (that is the generator's job, at build time, never at run time) and the per-release
version tables (``releases``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Kafka's open-ended version ranges ("3+") run up to Short.MAX_VALUE.
MAX_VERSION = 0x7FFF

FIXED_TYPES = frozenset({"int8", "int16", "uint16", "int32", "int64", "float64", "bool", "uuid"})
VARIABLE_TYPES = frozenset({"string", "bytes", "records"})
PRIMITIVE_TYPES = FIXED_TYPES | VARIABLE_TYPES


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; ``low > high`` means "no versions" (Kafka's ``none``)."""

    low: int
    high: int = MAX_VERSION

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        return self.low > self.high

    @classmethod
    def parse(cls, text: str) -> Versions:
        """Parse Kafka's notation: ``none``, ``3``, ``3+`` or ``3-7``."""
        text = text.strip()
        if text == "none":
            return NO_VERSIONS
        if text.endswith("+"):
            return cls(int(text[:-1]))
        if "-" in text:
            low, high = text.split("-", 1)
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high == MAX_VERSION:
            return f"{self.low}+"
        if self.low == self.high:
            return str(self.low)
        return f"{self.low}-{self.high}"


NO_VERSIONS = Versions(0, -1)


@dataclass(frozen=True, slots=True)
class FieldDef:
    """One field of a struct, as the spec defines it.

    ``type`` is the spec's type string (``int32``, ``string``, ``[]int32``, ``[]SomeStruct``,
    ``SomeStruct``); ``struct`` is set when the (element) type is a struct. ``default`` is the
    Python default: a scalar, ``None`` for a null default, ``()`` for an empty array (the
    dataclass itself uses a fresh list).
    """

    name: str
    attr: str
    type: str
    versions: Versions
    nullable: Versions = NO_VERSIONS
    tag: int | None = None
    tagged: Versions = NO_VERSIONS
    flexible: Versions | None = None
    default: Any = None
    struct: StructDef | None = None

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        """The type of one element for arrays, otherwise the type itself."""
        return self.type[2:] if self.type.startswith("[]") else self.type

    def is_tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged

    def is_compact_in(self, version: int, message_flexible: bool) -> bool:
        """Whether strings/bytes/arrays use the compact (varint) form at this version."""
        if self.flexible is not None:
            return version in self.flexible
        return message_flexible


@dataclass(frozen=True, slots=True)
class StructDef:
    """A struct (or a whole message body): its name in the spec, its dataclass, its fields."""

    name: str
    cls: type[Any]
    fields: tuple[FieldDef, ...]

    def fields_in(self, version: int) -> tuple[FieldDef, ...]:
        return tuple(f for f in self.fields if version in f.versions)


@dataclass(frozen=True, slots=True)
class MessageDef:
    """A request, response or header definition (one spec file)."""

    name: str
    kind: str  # "request", "response" or "header"
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    struct: StructDef
    listeners: tuple[str, ...] = ()
    deprecated_versions: Versions = NO_VERSIONS

    @property
    def api_name(self) -> str:
        """``Metadata`` for ``MetadataRequest``; headers keep their own name."""
        for suffix in ("Request", "Response"):
            if self.kind != "header" and self.name.endswith(suffix):
                return self.name[: -len(suffix)]
        return self.name


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One API key: its request/response classes and the versions Kafka 3.9 defines."""

    key: int
    name: str
    request_type: type[Any]
    response_type: type[Any]
    min_version: int
    max_version: int
    first_flexible_version: int | None
    request_def: MessageDef
    response_def: MessageDef

    def is_flexible(self, version: int) -> bool:
        first = self.first_flexible_version
        return first is not None and version >= first

    @classmethod
    def from_defs(cls, request: MessageDef, response: MessageDef) -> ApiSpec:
        if request.api_key is None or request.api_key != response.api_key:
            raise ValueError(f"{request.name}/{response.name}: api keys do not match")
        flexible = request.flexible_versions
        return cls(
            key=request.api_key,
            name=request.api_name,
            request_type=request.struct.cls,
            response_type=response.struct.cls,
            min_version=request.valid_versions.low,
            max_version=request.valid_versions.high,
            first_flexible_version=None if flexible.empty else flexible.low,
            request_def=request,
            response_def=response,
        )
