"""Iteration orders of the JVM collections Kafka's messages show, where hashes collide: Scala
2.13's immutable Set (CHAMP) and mutable.HashSet, Java's HashMap and Properties.

The expected Scala orders are worked out by hand from Scala 2.13's HashSet.scala (improved
hashes and their 5-bit slots are listed where used); the Java ones are also checked against a
real JVM's HashMap and Properties when a JDK is installed.
"""

from __future__ import annotations

import random
import shutil
import string
import subprocess
from pathlib import Path

import pytest

from zkbroker.broker.rules.jvm_collections import (
    java_hashmap_order,
    java_properties_order,
    java_string_hash,
    scala_int_set_text,
    scala_mutable_hashset_text,
    scala_set_concat_text,
    scala_set_text,
)

# "Aa" and "BB" have the same String.hashCode (65*31 + 97 = 66*31 + 66 = 2112), and so has
# any string made of the same number of "Aa"/"BB" pairs.
PAIRS_2 = ["AaAa", "AaBB", "BBAa", "BBBB"]


def test_the_names_collide() -> None:
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert len({java_string_hash(n) for n in PAIRS_2}) == 1
    # A shared prefix keeps equal-length suffixes colliding.
    assert java_string_hash("listener.name.x.Aa") == java_string_hash("listener.name.x.BB")


def test_full_collisions_share_one_node_in_insertion_order() -> None:
    # improve(hashCode) and its 5-bit slots, root first (shift 0, 5, ..., 30):
    #   BB, Aa            0xfe8c436a  10 27 16 24  8 31 3
    #   a                 0xfff7296a  10 11 10 14 31 31 3
    #   b                 0xfff70f52  18 ...
    #   c                 0xfff6ed39  25 ...
    #   BBBB, AaAa, AaBB  0xe3d57315  21 24 28 10 29 17 3
    # The root holds b (18) and c (25) alone; slot 10 a sub-node where a is alone (11) and
    # BB, Aa share 27, and every slot below, until the 32 bits are used up: one
    # HashCollisionSetNode, in insertion order (BB came first). Slot 21 holds the other three
    # down to their collision node the same way. Iteration: a node's lone elements by slot,
    # then its sub-nodes by slot, depth first.
    names = ["BB", "a", "Aa", "b", "BBBB", "c", "AaAa", "AaBB"]
    assert scala_set_text(names) == "HashSet(b, c, a, BB, Aa, BBBB, AaAa, AaBB)"


def test_only_colliding_names() -> None:
    # Eight names of one hash: a chain of single sub-nodes down to one collision node that
    # lists them as added (a repeated one is no new element).
    names = [a + b + c for a in ("BB", "Aa") for b in ("Aa", "BB") for c in ("BB", "Aa")]
    assert len({java_string_hash(n) for n in names}) == 1
    assert scala_set_text([*names, names[0]]) == f"HashSet({', '.join(names)})"


def test_small_sets_list_collisions_as_added() -> None:
    # Set1..Set4 are no hash sets at all.
    assert scala_set_text(["BB", "Aa"]) == "Set(BB, Aa)"
    assert scala_set_text(PAIRS_2[::-1]) == "Set(BBBB, BBAa, AaBB, AaAa)"


def test_two_sets_joined_put_a_lone_left_element_after_the_right_ones() -> None:
    # HashSet ++ HashSet merges the tries slot by slot (BitmapIndexedSetNode.concat). Slots
    # at the root: Aa 10, b 18, c 25, d 31, e 0 (left); BB 10, a 10, f 8, g 19, h 25 (right).
    # Slot 10: Aa alone on the left, a sub-node on the right ({11: a, 27: BB}): the right's
    # node gets Aa added (`updated`), and at 27 Aa joins BB: [BB, Aa]. Slot 25: c and h, both
    # alone, are merged left first (c at 9, h at 25 one level down).
    left, right = ["Aa", "b", "c", "d", "e"], ["BB", "a", "f", "g", "h"]
    assert scala_set_concat_text(left, right) == "HashSet(e, f, b, g, d, a, BB, Aa, c, h)"
    # One Set built from both lists keeps Aa first.
    assert scala_set_text(left + right) == "HashSet(e, f, b, g, d, a, Aa, BB, c, h)"


def test_joining_a_small_set_adds_its_elements_in_order() -> None:
    assert scala_set_concat_text(["Aa"], ["BB", "x"]) == "Set(Aa, BB, x)"
    assert scala_set_concat_text([], ["BB", "Aa"]) == "Set(BB, Aa)"
    # A HashSet ++ Set1: BB is added to the trie, where Aa is alone at 10: merged after it.
    # Root slots: e 0, Aa 10, b 18, c 25, d 31.
    assert scala_set_concat_text(["b", "c", "d", "e", "Aa"], ["BB"]) == (
        "HashSet(e, b, c, d, Aa, BB)"
    )
    # A Set4 ++ a HashSet: the right's elements in its iteration order, one by one.
    assert scala_set_concat_text(["Aa", "b", "c", "d"], ["e", "f", "g", "h", "BB"]) == (
        scala_set_text(["Aa", "b", "c", "d", "e", "f", "BB", "g", "h"])
    )


def test_int_sets_of_any_size() -> None:
    # An Int's hash is itself and `improve` is a bijection: distinct ints never share a node.
    text = scala_int_set_text(range(2000))
    assert text.startswith("HashSet(") and len(text[8:-1].split(", ")) == 2000


def test_mutable_hashset_keeps_equal_hashes_in_insertion_order() -> None:
    # Bucket = (h ^ h >>> 16) & 15: BB and Aa (2112) in 0, x (120) in 8; within a bucket by
    # hash, an equal one after those already there.
    assert scala_mutable_hashset_text(["BB", "x", "Aa"]) == "HashSet(BB, Aa, x)"
    assert scala_mutable_hashset_text(["Aa", "x", "BB"]) == "HashSet(Aa, BB, x)"


def test_mutable_hashset_doubles_before_three_quarters() -> None:
    # Eleven names fit 16 buckets; the twelfth add doubles them first. a = 97 and q = 113
    # share bucket 1 of 16 (a first: smaller hash) but not of 32 (1 and 17).
    eleven = ["q", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]
    assert scala_mutable_hashset_text(eleven) == "HashSet(a, q, b, c, d, e, f, g, h, i, j)"
    twelve = [*eleven, "k"]
    assert scala_mutable_hashset_text(twelve) == "HashSet(a, b, c, d, e, f, g, h, i, j, k, q)"


def test_hashmap_keeps_equal_hashes_in_insertion_order() -> None:
    assert java_hashmap_order(["BB", "x", "Aa"]) == ["BB", "Aa", "x"]


def test_properties_resize_reverses_the_front_of_a_bin() -> None:
    # Properties is a ConcurrentHashMap of 16 bins. Bin 1 gets A (65), Q (81), q (113), a (97)
    # in that order; the twelfth put doubles the table, splitting bin 1 by the hash bit 16:
    # A, a stay, Q, q move to 17. The transfer keeps the last run of one half ([a]) and puts
    # each node before it in front of its half: A before a, and q before Q.
    names = ["A", "Q", "q", "a", "b", "c", "d", "e", "f", "g", "h", "i"]
    expected = ["A", "a", "b", "c", "d", "e", "f", "g", "h", "i", "q", "Q"]
    assert java_properties_order(names) == expected
    # Eleven names: no resize, insertion order within bin 1.
    assert java_properties_order(names[:11]) == ["A", "Q", "q", "a", *names[4:11]]


_ORDER_JAVA = """
import java.io.*;
import java.util.*;

public class Order {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        for (String line; (line = in.readLine()) != null; ) {
            Properties properties = new Properties();
            HashMap<String, String> map = new HashMap<>();
            for (String name : line.split("\\t")) {
                properties.setProperty(name, "");
                map.put(name, "");
            }
            StringJoiner out = new StringJoiner("\\t");
            for (Object name : properties.keySet()) out.add((String) name);
            System.out.println(out + "|" + String.join("\\t", map.keySet()));
        }
    }
}
"""


def _cases() -> tuple[list[list[str]], list[str]]:
    """Names in request-like numbers (HashMap and Properties), and a hostile set
    (Properties only: a HashMap bin of 9 is not modelled)."""
    rng = random.Random(41)
    letters = string.ascii_letters + "."
    cases = [["A", "Q", "q", "a", "b", "c", "d", "e", "f", "g", "h", "i"]]
    for _ in range(150):
        size = rng.randint(1, 70)
        names = {"".join(rng.choices(letters, k=rng.randint(1, 12))): None for _ in range(size)}
        cases.append(list(names))
    # Full collisions: 16 names in one bin (a table of 16 grows to 128 on the ninth, then the
    # bin becomes a tree), among others.
    pairs = [""]
    for _ in range(4):
        pairs = [p + q for p in pairs for q in ("Aa", "BB")]
    return cases, ["p." + p for p in pairs] + [f"n{i}" for i in range(40)]


def test_java_orders_are_the_jvms(tmp_path: Path) -> None:
    java, javac = shutil.which("java"), shutil.which("javac")
    if java is None or javac is None:
        pytest.skip("no JDK (java and javac) to compare with")
    (tmp_path / "Order.java").write_text(_ORDER_JAVA, encoding="utf-8")
    subprocess.run([javac, "-d", str(tmp_path), str(tmp_path / "Order.java")], check=True)
    cases, hostile = _cases()
    lines = subprocess.run(
        [java, "-cp", str(tmp_path), "Order"],
        input="".join("\t".join(c) + "\n" for c in (*cases, hostile)),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()
    assert len(lines) == len(cases) + 1
    for names, line in zip(cases, lines, strict=False):
        properties, _, hashmap = line.partition("|")
        assert java_properties_order(names) == properties.split("\t"), names
        assert java_hashmap_order(names) == hashmap.split("\t"), names
    assert java_properties_order(hostile) == lines[-1].partition("|")[0].split("\t")
