"""Scala renderings of int collections used in Kafka's reassignment messages."""

from __future__ import annotations

from zkbroker.broker.rules.jvm_collections import scala_buffer_text, scala_int_set_text


def test_small_sets_keep_insertion_order() -> None:
    assert scala_int_set_text([0, 1, 2]) == "Set(0, 1, 2)"
    assert scala_int_set_text([]) == "Set()"


def test_large_sets_are_hash_sets() -> None:
    text = scala_int_set_text(range(6))
    assert text.startswith("HashSet(") and sorted(text[8:-1].split(", ")) == list("012345")


def test_buffer() -> None:
    assert scala_buffer_text((1, 1)) == "ArrayBuffer(1, 1)"
