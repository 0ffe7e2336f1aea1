"""A response list rendered as it is read, so a large answer holds its sources only.

Metadata's answers (`zkbroker.handlers.metadata`: unknown names, the partitions of a topic) are
built item by item while the response is encoded, instead of as one response object per item
(docs/kafka-behaviour.md §8 for what Metadata answers).

Not here: what an item renders to (the handler passes `render`), encoding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, SupportsIndex, TypeVar, cast, overload

T = TypeVar("T")


class RenderedList(list[T]):
    """A list of an answer's items held as their raw sources and rendered each time the list
    is read: the answer to a million unknown names, or a topic of tens of thousands of
    partitions, then holds no response object per item. Each item is built while the answer is
    encoded and freed at once, so the answer neither doubles the memory of the request it
    answers nor feeds the cyclic collector hundreds of thousands of objects that live through
    the request (whose full passes would stall every client of the process).

    Everything that reads answers (the encoder, capture, metrics, fault hooks) iterates,
    indexes or takes the length, which all go through `render`, as do `in`, `copy()`, `+`,
    copy/deepcopy/pickle (which give a plain list). The methods that would change or search
    the raw storage (`sort()`, `index()`, `count()`, `extend()`, ...) are not used on
    answers. The sources must not change once added (the encoder may read them in a worker
    thread): the image's partitions are immutable, replaced on every change."""

    __slots__ = ("_render",)

    def __init__(self, render: Callable[[Any], T]) -> None:
        super().__init__()
        self._render = render

    def add_source(self, source: object) -> None:
        """Add an item as its source; `render(source)` is the item every read sees."""
        list.append(self, cast(T, source))

    def __iter__(self) -> Iterator[T]:
        return map(self._render, list.__iter__(self))

    def __reversed__(self) -> Iterator[T]:
        return map(self._render, list.__reversed__(self))

    @overload
    def __getitem__(self, index: SupportsIndex) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: SupportsIndex | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._render(e) for e in list.__getitem__(self, index)]
        return self._render(list.__getitem__(self, index))

    def __contains__(self, item: object) -> bool:
        return any(item == e for e in self)

    def copy(self) -> list[T]:
        return list(self)

    def __add__(self, other: list[T]) -> list[T]:  # type: ignore[override]
        return [*self, *other]

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        # copy, deepcopy and pickle get a plain list of the rendered items.
        return (list, (list(self),))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, list):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # lists are unhashable

    def __repr__(self) -> str:
        return repr(list(self))
