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
from functools import cache
from typing import Any

from broker.protocol.messages import MESSAGE_DEFS
from broker.protocol.primitives import uuid_to_text
from broker.protocol.schema import FieldDef, StructDef


@cache
def _structs_by_class() -> dict[type, StructDef]:
    found: dict[type, StructDef] = {}

    def visit(sd: StructDef) -> None:
        found[sd.cls] = sd
        for f in sd.fields:
            if f.struct is not None and f.struct.cls not in found:
                visit(f.struct)

    for definition in MESSAGE_DEFS:
        visit(definition.struct)
    return found


def message_to_dict(msg: Any) -> dict[str, Any]:
    """A JSON-safe dict of ``msg`` (any generated message, struct or header instance)."""
    sd = _structs_by_class().get(type(msg))
    if sd is None:
        raise TypeError(f"{type(msg).__name__} is not a generated Kafka message class")
    return _struct(sd, msg)


def _struct(sd: StructDef, obj: Any) -> dict[str, Any]:
    return {f.attr: _value(f, getattr(obj, f.attr)) for f in sd.fields}


def _value(f: FieldDef, value: Any) -> Any:
    if value is None:
        return None
    if f.is_array:
        if f.struct is not None:
            return [_struct(f.struct, item) for item in value]
        return [_scalar(item) for item in value]
    if f.struct is not None:
        return _struct(f.struct, value)
    return _scalar(value)


def _scalar(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return uuid_to_text(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value
