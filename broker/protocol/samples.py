"""Deterministic, fully populated example messages built from the definitions.

``sample(definition, version, variant)`` fills every field present at ``version`` with a
non-default value, recursively. Variants: ``full`` (plain values), ``nulls`` (None wherever the
version allows it), ``empty`` (empty arrays and strings), ``long`` (values big enough to need
multi-byte varint lengths and extreme integers). The codec tests use it for round trips and
fuzzing; handler tests may use it as a starting point.

Deliberately not used by the server, and not random: the same call gives the same message.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from zkbroker.broker.protocol.primitives import INT_RANGES
from zkbroker.broker.protocol.schema import FieldDef, MessageDef, StructDef

VARIANTS = ("full", "nulls", "empty", "long")


class _Builder:
    def __init__(self, version: int, variant: str) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
        self.version = version
        self.variant = variant
        self.counter = itertools.count(1)

    def struct(self, sd: StructDef) -> Any:
        return sd.cls(**{f.attr: self.value(f) for f in sd.fields_in(self.version)})

    def value(self, f: FieldDef) -> Any:
        if self.variant == "nulls" and self.version in f.nullable:
            return None
        if f.is_array:
            if self.variant == "empty":
                return []
            count = 130 if self.variant == "long" and f.struct is None else 2
            return [self.element(f) for _ in range(count)]
        if f.struct is not None:
            return self.struct(f.struct)
        return self.scalar(f.type, f.default)

    def element(self, f: FieldDef) -> Any:
        if f.struct is not None:
            return self.struct(f.struct)
        return self.scalar(f.element_type, None)

    def scalar(self, type_name: str, default: Any) -> Any:
        n = next(self.counter)
        if type_name in INT_RANGES:
            low, high = INT_RANGES[type_name]
            value = (n * 7919) % 100 + 1
            if self.variant == "long":
                value = high - n if n % 2 else max(low, -high) + n
                if not low <= value <= high:  # an int8 after many fields (AlterPartition)
                    value = high if n % 2 else max(low, -high)
            return value + 1 if value == default else value
        if type_name == "bool":
            return not default
        if type_name == "float64":
            return n + 0.25
        if type_name == "uuid":
            return uuid.UUID(int=(n * 0x9E3779B97F4A7C15) % (1 << 128) or 1)
        if type_name == "string":
            if self.variant == "empty":
                return "" if default != "" else "x"
            if self.variant == "long":
                return f"long-{n}-" + "é" * 100  # over 200 bytes: two-byte varint lengths
            return f"s{n}-ü"
        if type_name in ("bytes", "records"):
            return bytes([n % 256]) * (300 if self.variant == "long" else 3)
        raise ValueError(f"no sample value for type {type_name}")


def sample(definition: MessageDef, version: int, variant: str = "full") -> Any:
    """A populated instance of ``definition``'s class for ``version``."""
    return _Builder(version, variant).struct(definition.struct)
