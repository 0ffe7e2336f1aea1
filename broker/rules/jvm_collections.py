"""Iteration order and rendering of the JVM collections whose order shows in Kafka's answers.

Kafka builds several error messages (and one validation order) by iterating a Java or Scala
hash collection, so reproducing the message means reproducing the order: `java_string_hash` /
`java_abs_hash` (`String.hashCode`, `Utils.abs`), `java_hashmap_order` (Java 8+ `HashMap` /
`HashSet`), `java_properties_order` (Java 9+ `Properties`, a `ConcurrentHashMap`), and the
`toString` of Scala 2.13's immutable `Set` (one, or two joined with `++`), `mutable.HashSet` and
`ArrayBuffer` (`scala_*_text`). Elements with equal hashes keep insertion order where the JVM
keeps it (a HashMap bin, a CHAMP collision node) and lose it where it does not (a resized
ConcurrentHashMap bin, its tree bins, `HashSet ++ HashSet`).

Not here: which collection a Kafka message uses (the callers know).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

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
    """Iteration order of a java.util.HashMap/HashSet filled with `names` in this order.

    A bin is a list in insertion order, and a resize keeps that order. Not modelled: a bin
    reaching 9 entries, which doubles a table under 64 bins and turns a bin into a tree
    otherwise (tree bins have an order of their own). Every caller's names are Kafka's own,
    a handful (entity types, log levels, a ConfigDef's keys), so no bin gets near that.
    """
    listed = list(dict.fromkeys(names))
    capacity = 16
    while len(listed) > capacity * 3 // 4:
        capacity *= 2
    return _bin_order(listed, capacity)


# java.util.concurrent.ConcurrentHashMap's constants.
_TREEIFY_THRESHOLD = 8
_UNTREEIFY_THRESHOLD = 6
_MIN_TREEIFY_CAPACITY = 64


def _table_size_for(c: int) -> int:
    """ConcurrentHashMap.tableSizeFor: the power of two at or above `c`."""
    size = 1
    while size < c:
        size <<= 1
    return size


class _ConcurrentHashMap:
    """The bins of a java.util.concurrent.ConcurrentHashMap filled by one thread.

    A list bin appends; a resize (`transfer`) keeps each bin's last run of nodes bound for the
    same half and puts the nodes before it in front of it in reverse order; a bin reaching 9
    nodes doubles a table under 64 bins (`tryPresize(n << 1)`, which overshoots) or turns into
    a tree bin, which puts new nodes first and keeps its order through a resize."""

    def __init__(self, initial_capacity: int) -> None:
        # ConcurrentHashMap(int): tableSizeFor(1 + initialCapacity / 0.75); Java 11's
        # formula (c + c/2 + 1) gives the same table for Properties' 8.
        n = _table_size_for(int(1.0 + initial_capacity / 0.75))
        self.bins: list[list[tuple[int, str]]] = [[] for _ in range(n)]
        self.trees: set[int] = set()
        self.size_ctl = n - (n >> 2)
        self.count = 0

    def put(self, name: str) -> None:
        """A key not in the map yet."""
        h = java_string_hash(name)
        spread = (h ^ (h >> 16)) & 0x7FFFFFFF
        i = spread & (len(self.bins) - 1)
        if i in self.trees:
            self.bins[i].insert(0, (spread, name))
        else:
            earlier = len(self.bins[i])
            self.bins[i].append((spread, name))
            if earlier >= _TREEIFY_THRESHOLD:
                self._treeify(i)
        self.count += 1
        while self.count >= self.size_ctl:
            self._transfer()

    def order(self) -> list[str]:
        return [name for b in self.bins for _, name in b]

    def _treeify(self, i: int) -> None:
        n = len(self.bins)
        if n < _MIN_TREEIFY_CAPACITY:
            size = n << 1
            wanted = _table_size_for(size + (size >> 1) + 1)
            while wanted > self.size_ctl:
                self._transfer()
        else:
            self.trees.add(i)

    def _transfer(self) -> None:
        n = len(self.bins)
        bins: list[list[tuple[int, str]]] = [[] for _ in range(2 * n)]
        trees: set[int] = set()
        for i, nodes in enumerate(self.bins):
            if not nodes:
                continue
            if i in self.trees:
                low = [e for e in nodes if not e[0] & n]
                high = [e for e in nodes if e[0] & n]
                trees.update(j for j, part in ((i, low), (i + n, high))
                             if len(part) > _UNTREEIFY_THRESHOLD)  # fmt: skip
            else:
                run_bit, last_run = nodes[0][0] & n, 0
                for k in range(1, len(nodes)):
                    if nodes[k][0] & n != run_bit:
                        run_bit, last_run = nodes[k][0] & n, k
                low = [] if run_bit else nodes[last_run:]
                high = nodes[last_run:] if run_bit else []
                for node in nodes[:last_run]:
                    (high if node[0] & n else low).insert(0, node)
            bins[i], bins[i + n] = low, high
        self.bins, self.trees = bins, trees
        self.size_ctl = (n << 1) - (n >> 1)


def java_properties_order(names: Iterable[str]) -> list[str]:
    """Iteration order of a java.util.Properties (Java 9+: a ConcurrentHashMap(8)) filled with
    `names` in this order."""
    table = _ConcurrentHashMap(8)
    for name in dict.fromkeys(names):
        table.put(name)
    return table.order()


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


# Scala 2.13's CHAMP trie (immutable.HashSet): 5 bits of the improved hash per level; past the
# 32 bits (shift 35), elements of equal hash share a HashCollisionSetNode. `improve` is a
# bijection, so equal improved hashes mean equal String.hashCode.
_HASH_CODE_LENGTH = 32
_BIT_PARTITION_SIZE = 5


class _Collision(Generic[T]):
    """A HashCollisionSetNode: its elements in its order (the first two as merged, then
    appended)."""

    def __init__(self, elements: list[T]) -> None:
        self.elements = elements


class _Bitmap(Generic[T]):
    """A BitmapIndexedSetNode: per 5-bit slot an element alone (with its improved hash) or a
    sub-node."""

    def __init__(self) -> None:
        self.data: dict[int, tuple[T, int]] = {}
        self.nodes: dict[int, _Bitmap[T] | _Collision[T]] = {}


def _slot(improved: int, shift: int) -> int:
    return (improved >> shift) & 31


def _champ_merge(
    first: tuple[T, int], second: tuple[T, int], shift: int
) -> _Bitmap[T] | _Collision[T]:
    """mergeTwoKeyValPairs: the node holding two elements that share a slot above `shift`."""
    if shift >= _HASH_CODE_LENGTH:
        return _Collision([first[0], second[0]])
    node: _Bitmap[T] = _Bitmap()
    a, b = _slot(first[1], shift), _slot(second[1], shift)
    if a != b:
        node.data[a], node.data[b] = first, second
    else:
        node.nodes[a] = _champ_merge(first, second, shift + _BIT_PARTITION_SIZE)
    return node


def _champ_add(node: _Bitmap[T] | _Collision[T], entry: tuple[T, int], shift: int) -> None:
    """`updated` (in place: every trie here is built for one answer)."""
    if isinstance(node, _Collision):
        if entry[0] not in node.elements:
            node.elements.append(entry[0])
        return
    slot = _slot(entry[1], shift)
    if slot in node.nodes:
        _champ_add(node.nodes[slot], entry, shift + _BIT_PARTITION_SIZE)
    elif slot not in node.data:
        node.data[slot] = entry
    elif node.data[slot][0] != entry[0]:
        # The element already there first.
        node.nodes[slot] = _champ_merge(node.data.pop(slot), entry, shift + _BIT_PARTITION_SIZE)


def _champ_concat(
    left: _Bitmap[T] | _Collision[T], right: _Bitmap[T] | _Collision[T], shift: int
) -> _Bitmap[T] | _Collision[T]:
    """SetNode.concat (`HashSet ++ HashSet`), slot by slot. Not insertion order everywhere: an
    element alone on the left goes into the right's sub-node, after the right's elements."""
    if isinstance(left, _Collision) and isinstance(right, _Collision):
        return _Collision(left.elements + [e for e in right.elements if e not in left.elements])
    if isinstance(left, _Collision) or isinstance(right, _Collision):
        # Both sides are at the same depth: below 32 bits neither is a collision node.
        raise ValueError("a collision node meets a bitmap node")
    deeper = shift + _BIT_PARTITION_SIZE
    out: _Bitmap[T] = _Bitmap()
    for slot in sorted({*left.data, *left.nodes, *right.data, *right.nodes}):
        left_data, right_data = left.data.get(slot), right.data.get(slot)
        left_node, right_node = left.nodes.get(slot), right.nodes.get(slot)
        if left_node is not None and right_node is not None:
            out.nodes[slot] = _champ_concat(left_node, right_node, deeper)
        elif left_data is not None and right_node is not None:
            _champ_add(right_node, left_data, deeper)
            out.nodes[slot] = right_node
        elif left_node is not None and right_data is not None:
            _champ_add(left_node, right_data, deeper)
            out.nodes[slot] = left_node
        elif left_data is not None and right_data is not None:
            if left_data[0] == right_data[0]:
                out.data[slot] = right_data
            else:
                out.nodes[slot] = _champ_merge(left_data, right_data, deeper)
        elif left_data is not None:
            out.data[slot] = left_data
        elif right_data is not None:
            out.data[slot] = right_data
        elif left_node is not None:
            out.nodes[slot] = left_node
        elif right_node is not None:
            out.nodes[slot] = right_node
    return out


def _champ_iter(node: _Bitmap[T] | _Collision[T]) -> Iterator[T]:
    """The CHAMP iterator: a node's elements alone (by slot), then its sub-nodes depth first
    (by slot); a collision node's elements in its order."""
    if isinstance(node, _Collision):
        yield from node.elements
        return
    for slot in sorted(node.data):
        yield node.data[slot][0]
    for slot in sorted(node.nodes):
        yield from _champ_iter(node.nodes[slot])


class _ScalaSet(Generic[T]):
    """A Scala 2.13 immutable.Set: Set1..Set4 in insertion order, then (Set4 + a fifth: an
    empty HashSet plus the five in order) a CHAMP trie."""

    def __init__(self, hash_code: Callable[[T], int], items: Iterable[T] = ()) -> None:
        self._hash_code = hash_code
        self._small: list[T] = []
        self._root: _Bitmap[T] | None = None
        for item in items:
            self.incl(item)

    def _entry(self, item: T) -> tuple[T, int]:
        return item, _scala_improve(to_int32(self._hash_code(item))) & 0xFFFFFFFF

    def incl(self, item: T) -> None:
        if self._root is not None:
            _champ_add(self._root, self._entry(item), 0)
        elif item not in self._small:
            self._small.append(item)
            if len(self._small) > 4:
                self._root = _Bitmap()
                for element in self._small:
                    _champ_add(self._root, self._entry(element), 0)
                self._small = []

    def concat(self, other: _ScalaSet[T]) -> None:
        """`self ++ other`: a trie merge when both are HashSets, else other's elements added
        one by one in its order (Set1..Set4's concat, and a HashSet's for a small `other`)."""
        if self._root is not None and other._root is not None:
            merged = _champ_concat(self._root, other._root, 0)
            if not isinstance(merged, _Bitmap):  # a root is at shift 0
                raise TypeError("the merged root is not a bitmap node")
            self._root = merged
        else:
            for item in other.elements():
                self.incl(item)

    def elements(self) -> list[T]:
        """In iteration order."""
        return list(self._small) if self._root is None else list(_champ_iter(self._root))

    def text(self, render: Callable[[T], str]) -> str:
        name = "Set" if self._root is None else "HashSet"
        return f"{name}(" + ", ".join(render(e) for e in self.elements()) + ")"


def scala_set_text(names: Iterable[str]) -> str:
    """toString of the immutable Set Scala 2.13 builds from `names` in this order."""
    return _ScalaSet(java_string_hash, names).text(str)


def scala_set_concat_text(left: Iterable[str], right: Iterable[str]) -> str:
    """toString of ``a ++ b``, the immutable Sets Scala 2.13 builds from `left` and from
    `right` (each in its order)."""
    joined = _ScalaSet(java_string_hash, left)
    joined.concat(_ScalaSet(java_string_hash, right))
    return joined.text(str)


def scala_int_set_text(values: Iterable[int]) -> str:
    """toString of the immutable Set Scala 2.13 builds from the ints `values` in this order
    (an Int's hash code is its value)."""
    return _ScalaSet(lambda v: v, values).text(str)


def scala_buffer_text(values: Iterable[int]) -> str:
    """toString of a Scala 2.13 ArrayBuffer of ints (what `asScala.map` of a request list gives)."""
    return "ArrayBuffer(" + ", ".join(map(str, values)) + ")"


def scala_mutable_hashset_text(names: Iterable[str]) -> str:
    """toString of a Scala 2.13 mutable.HashSet filled with `names` in this order: buckets by
    the spread String hash (16, doubled before an add would reach 3/4 of them), each bucket
    ordered by that hash (signed), equal hashes in insertion order (an add walks past them)."""

    def spread(s: str) -> int:
        h = to_int32(java_string_hash(s))
        return to_int32(h ^ ((h & 0xFFFFFFFF) >> 16))

    listed = list(dict.fromkeys(names))
    capacity = 16
    while len(listed) >= capacity * 3 // 4:
        capacity *= 2
    ordered = sorted(listed, key=lambda s: (spread(s) & (capacity - 1), spread(s)))
    return "HashSet(" + ", ".join(ordered) + ")"
