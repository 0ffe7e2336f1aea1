"""Iteration order and rendering of the JVM collections whose order shows in Kafka's answers.

Kafka builds several error messages (and one validation order) by iterating a Java or Scala
hash collection, so reproducing the message means reproducing the order: `java_string_hash` /
`java_abs_hash` (`String.hashCode`, `Utils.abs`), `java_hashmap_order` (Java 8+ `HashMap` /
`HashSet`), `java_properties_order` (Java 9+ `Properties`), and the `toString` of Scala 2.13's
immutable `Set`, `mutable.HashSet` and `ArrayBuffer` (`scala_*_text`). Colliding elements keep
insertion order within a bin (trees only form past 8 collisions, beyond Kafka's sizes).

Not here: which collection a Kafka message uses (the callers know).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def java_string_hash(text: str) -> int:
    """String.hashCode as an unsigned 32-bit value."""
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def _bin_order(names: list[str], capacity: int) -> list[str]:
    def bucket(s: str) -> int:
        h = java_string_hash(s)
        return (h ^ (h >> 16)) & (capacity - 1)

    return [s for _, s in sorted(enumerate(names), key=lambda p: (bucket(p[1]), p[0]))]


def java_hashmap_order(names: Iterable[str]) -> list[str]:
    """Iteration order of a java.util.HashMap/HashSet filled with `names` in this order."""
    listed = list(dict.fromkeys(names))
    capacity = 16
    while len(listed) > capacity * 3 // 4:
        capacity *= 2
    return _bin_order(listed, capacity)


def java_properties_order(names: Iterable[str]) -> list[str]:
    """Iteration order of a java.util.Properties (Java 9+) filled with `names` in this order."""
    listed = list(dict.fromkeys(names))
    capacity = 16
    while len(listed) >= capacity * 3 // 4:
        capacity *= 2
    return _bin_order(listed, capacity)


def to_int32(v: int) -> int:
    """`v` as a Java int (two's complement, 32 bits)."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def java_abs_hash(text: str) -> int:
    """Kafka's ``Utils.abs(text.hashCode)`` (Integer.MIN_VALUE maps to 0)."""
    signed = to_int32(java_string_hash(text))
    return 0 if signed == -(1 << 31) else abs(signed)


def _scala_improve(hcode: int) -> int:
    """scala.collection.Hashing.improve, as 32-bit arithmetic."""
    h = to_int32(hcode + ~to_int32(hcode << 9))
    h = to_int32(h ^ ((h & 0xFFFFFFFF) >> 14))
    h = to_int32(h + to_int32(h << 4))
    return to_int32(h ^ ((h & 0xFFFFFFFF) >> 10))


def _champ_order(items: list[T], hash_code: Callable[[T], int], shift: int = 0) -> list[T]:
    """Iteration order of Scala 2.13's immutable.HashSet (CHAMP trie): a node lists the elements
    alone in their 5-bit slot first (by slot), then its sub-nodes depth first (by slot)."""
    slots: dict[int, list[T]] = {}
    for item in items:
        improved = _scala_improve(to_int32(hash_code(item))) & 0xFFFFFFFF
        slots.setdefault((improved >> shift) & 31, []).append(item)
    alone = [v[0] for _, v in sorted(slots.items()) if len(v) == 1]
    nested = [
        e
        for _, v in sorted(slots.items())
        if len(v) > 1
        for e in _champ_order(v, hash_code, shift + 5)
    ]
    return alone + nested


def scala_set_text(names: Iterable[str]) -> str:
    """toString of the immutable Set Scala 2.13 builds from `names` in this order."""
    distinct = list(dict.fromkeys(names))
    if len(distinct) <= 4:
        return "Set(" + ", ".join(distinct) + ")"
    return "HashSet(" + ", ".join(_champ_order(distinct, java_string_hash)) + ")"


def scala_int_set_text(values: Iterable[int]) -> str:
    """toString of the immutable Set Scala 2.13 builds from the ints `values` in this order
    (an Int's hash code is its value)."""
    distinct = list(dict.fromkeys(values))
    if len(distinct) <= 4:
        return "Set(" + ", ".join(map(str, distinct)) + ")"
    return "HashSet(" + ", ".join(map(str, _champ_order(distinct, lambda v: v))) + ")"


def scala_buffer_text(values: Iterable[int]) -> str:
    """toString of a Scala 2.13 ArrayBuffer of ints (what `asScala.map` of a request list gives)."""
    return "ArrayBuffer(" + ", ".join(map(str, values)) + ")"


def scala_mutable_hashset_text(names: Iterable[str]) -> str:
    """toString of a Scala 2.13 mutable.HashSet: 16 buckets by the spread String hash, each
    bucket ordered by that hash (signed)."""

    def spread(s: str) -> int:
        h = to_int32(java_string_hash(s))
        return to_int32(h ^ ((h & 0xFFFFFFFF) >> 16))

    ordered = sorted(dict.fromkeys(names), key=lambda s: (spread(s) & 15, spread(s)))
    return "HashSet(" + ", ".join(ordered) + ")"
