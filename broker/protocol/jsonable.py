"""Turn a decoded (or to-be-encoded) message into a JSON-safe dict, e.g. for request capture.

Keys are the snake_case attribute names; every field of the class is included, whatever the
version. bytes become standard base64 text, UUIDs Kafka's URL-safe base64 text (as
``Uuid.toString()`` prints them), non-finite floats their ``repr`` text.

Deliberately not here: the reverse direction, and any version-specific view of a message.
"""

from __future__ import annotations

import base64
import math
import uuid
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

from zkbroker.broker.protocol.messages import MESSAGE_DEFS
from zkbroker.broker.protocol.schema import FieldDef, StructDef
from zkbroker.zk_layout.uuid_text import uuid_to_text

# Spec types whose Python values are JSON values already.
_NATIVE_TYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "string"})


def message_to_dict(msg: Any) -> dict[str, Any]:
    """A JSON-safe dict of ``msg`` (any generated message, struct or header instance)."""
    convert = message_converter(type(msg))
    if convert is None:
        raise TypeError(f"{type(msg).__name__} is not a generated Kafka message class")
    return convert(msg)


def message_converter(cls: type) -> Callable[[Any], dict[str, Any]] | None:
    """``message_to_dict`` for instances of ``cls``; None when it is not a generated class."""
    return _converters().get(cls)


@cache
def _converters() -> dict[type, Callable[[Any], dict[str, Any]]]:
    """Per generated message class, its converter.

    Built once as Python source per struct: a dict display reading each attribute, with no
    per-field dispatch at run time (a generic walk of the fields costs several times more,
    and request capture converts every request and response)."""
    structs: dict[StructDef, str] = {}
    sources: list[str] = []

    def name_of(sd: StructDef) -> str:
        if sd not in structs:
            structs[sd] = f"_c{len(structs)}"
            body = ", ".join(f"{f.attr!r}: {expression(f)}" for f in sd.fields)
            sources.append(f"def {structs[sd]}(o):\n    return {{{body}}}\n")
        return structs[sd]

    def expression(f: FieldDef) -> str:
        value = f"o.{f.attr}"
        if f.struct is not None:
            convert = name_of(f.struct)
        elif f.element_type in _NATIVE_TYPES:
            return f"None if {value} is None else list({value})" if f.is_array else value
        else:
            convert = "_uuid" if f.element_type == "uuid" else "_scalar"
        if f.is_array:
            return f"None if {value} is None else [{convert}(x) for x in {value}]"
        return f"None if {value} is None else {convert}({value})"

    for definition in MESSAGE_DEFS:
        name_of(definition.struct)
    namespace: dict[str, Any] = {"_scalar": _scalar, "_uuid": _uuid}
    exec("\n".join(sources), namespace)  # source built from our own definitions
    return {sd.cls: namespace[fn] for sd, fn in structs.items()}


def _scalar(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return uuid_to_text(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


@lru_cache(maxsize=4096)
def _uuid(value: uuid.UUID) -> str:
    # Topic ids repeat in nearly every answer: converted once each.
    return uuid_to_text(value)
