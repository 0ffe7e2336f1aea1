"""`MemoryStore` (chunks, small appends gathered) behaves as one growing bytearray would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from zkbroker.broker.storage.segment import MemoryStore

_SIZES = st.sampled_from([0, 1, 17, 4000, MemoryStore.GATHER_LIMIT - 1, MemoryStore.GATHER_LIMIT])
_op = st.one_of(
    st.tuples(st.just("write"), _SIZES, st.integers(0, 255)),
    st.tuples(st.just("read"), st.integers(0, 1 << 18), st.integers(0, 1 << 18)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 18), st.just(0)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_op, max_size=40))
def test_memory_store_matches_a_bytearray(ops: list[tuple[str, int, int]]) -> None:
    store = MemoryStore()
    model = bytearray()
    for op, a, b in ops:
        if op == "write":
            data = bytes([b]) * a
            store.write(data)
            model += data
        elif op == "read":
            assert store.read(a, b) == bytes(model[a : a + b])
        elif a <= len(model):  # truncation only ever shortens
            store.truncate(a)
            del model[a:]
        assert store.size_on_store() == len(model)
    assert store.read(0, len(model) + 1) == bytes(model)


def test_a_large_append_is_kept_without_a_copy() -> None:
    store = MemoryStore()
    batch = b"x" * (1 << 20)
    store.write(batch)
    assert store._chunks[0] is batch  # the bytes object as it arrived


def test_small_appends_share_a_chunk() -> None:
    store = MemoryStore()
    for _ in range(100):
        store.write(b"y" * 100)
    assert len(store._chunks) == 1
    assert store.read(50, 100) == b"y" * 100
