"""Pure tests of zk_layout's helpers (releases, JSON, uuid text, sanitizer, sequence names) and of
the contract every znode class follows."""

from __future__ import annotations

import contextlib
import json
import uuid
from typing import Any

import pytest

from zkbroker.zk_layout import (
    ALL_NODE_CLASSES,
    METADATA_TOPIC_ID,
    PERSISTENT_ZK_PATHS,
    ZERO_UUID,
    ConfigChangeNotificationNode,
    EmptyNode,
    IsrChangeNotificationNode,
    NodeKind,
    SequenceMixin,
    ZnodeFormatError,
    desanitize,
    normalize_release,
    random_uuid,
    release_at_least,
    release_name,
    sanitize,
    uuid_from_text,
    uuid_to_text,
)
from zkbroker.zk_layout import codec_json as cj

RELEASES = [
    (0, 8, 2),
    (0, 9),
    (0, 10),
    (0, 10, 1),
    (0, 10, 2),
    (1, 0),
    (2, 3),
    (2, 4),
    (2, 7),
    (2, 8),
    (3, 2),
    (3, 3),
    (3, 4),
    (3, 9),
]


# --- releases -------------------------------------------------------------------------------


def test_release_comparisons_ignore_trailing_zeros() -> None:
    assert normalize_release((2, 8, 0)) == (2, 8)
    assert normalize_release((0,)) == (0,)
    assert release_at_least((2, 8), (2, 8, 0))
    assert release_at_least((2, 8, 0), (2, 8))
    assert release_at_least((0, 10, 1), (0, 10))
    assert not release_at_least((0, 10), (0, 10, 1))
    assert not release_at_least((2, 7, 9), (2, 8))
    # Which version strings name a release is the protocol layer's (tests/unit/test_releases.py).
    assert release_name((0, 10, 1)) == "0.10.1" and release_name((2, 8)) == "2.8"


# --- JSON helpers ---------------------------------------------------------------------------


def test_dumps_is_compact_utf8_and_keeps_order() -> None:
    assert cj.dumps({"b": 1, "a": [1, 2], "c": "é"}) == '{"b":1,"a":[1,2],"c":"é"}'.encode()


@pytest.mark.parametrize("data", [b"", b"{", b"\xff\xfe", b"NaN", b'{"a":Infinity}'])
def test_parse_rejects_non_json(data: bytes) -> None:
    with pytest.raises(ZnodeFormatError):
        cj.parse(data, "/x")
    assert cj.try_parse(data) is cj.UNPARSEABLE


@pytest.mark.parametrize(
    ("value", "ok"),
    [(1, True), (-(2**31), True), (2**31, False), (True, False), (1.0, False), ("1", False)],
)
def test_check_int_is_strict_like_kafka(value: Any, ok: bool) -> None:
    if ok:
        assert cj.check_int(value, "/x", "v") == value
    else:
        with pytest.raises(ZnodeFormatError):
            cj.check_int(value, "/x", "v")


@pytest.mark.parametrize("text", ["", "+", "1 ", " 1", "1.0", "٣", "0x1"])
def test_parse_decimal_int_rejects(text: str) -> None:
    with pytest.raises(ZnodeFormatError):
        cj.parse_decimal_int(text, "/x", "n")


def test_parse_decimal_int_accepts_sign() -> None:
    assert cj.parse_decimal_int("-1", "/x", "n") == -1
    assert cj.parse_decimal_int("+7", "/x", "n") == 7


def test_znode_format_error_carries_where_and_reason() -> None:
    err = ZnodeFormatError("/brokers/ids/1", "missing field 'version'")
    assert err.where == "/brokers/ids/1"
    assert err.reason == "missing field 'version'"
    assert "/brokers/ids/1" in str(err)
    assert isinstance(err, ValueError)


# --- uuid text ------------------------------------------------------------------------------


def test_uuid_text_known_values() -> None:
    assert uuid_to_text(ZERO_UUID) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuid_to_text(METADATA_TOPIC_ID) == "AAAAAAAAAAAAAAAAAAAAAQ"
    u = uuid.UUID("a77b74bc-2aea-4242-a958-16cd1b68f566")
    assert uuid_to_text(u) == "p3t0vCrqQkKpWBbNG2j1Zg"
    assert uuid_from_text("p3t0vCrqQkKpWBbNG2j1Zg") == u
    # Java's URL decoder accepts the padded form too.
    assert uuid_from_text("p3t0vCrqQkKpWBbNG2j1Zg==") == u


def test_uuid_text_round_trips_and_is_url_safe() -> None:
    for _ in range(500):
        u = uuid.uuid4()
        text = uuid_to_text(u)
        assert len(text) == 22
        assert "+" not in text and "/" not in text and "=" not in text
        assert uuid_from_text(text) == u


@pytest.mark.parametrize(
    "text",
    ["", "short", "p3t0vCrqQkKpWBbNG2j1Z", "p3t0vCrqQkKpWBbNG2j1Z+", "p3t0vCrqQkKpWBbNG2j1Zg="],
)
def test_uuid_from_text_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        uuid_from_text(text)


def test_random_uuid_rules() -> None:
    for _ in range(2000):
        u = random_uuid()
        assert u not in (ZERO_UUID, METADATA_TOPIC_ID)
        assert not uuid_to_text(u).startswith("-")


# --- sanitizer ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "sanitized"),
    [
        ("alice", "alice"),
        ("user 1", "user%201"),
        ("a*b", "a%2Ab"),
        ("a+b", "a%2Bb"),
        ("CN=x,O=y", "CN%3Dx%2CO%3Dy"),
        ("a.b-c_d", "a.b-c_d"),
        ("~/é", "%7E%2F%C3%A9"),
        ("<default>", "%3Cdefault%3E"),
    ],
)
def test_sanitize_matches_java(name: str, sanitized: str) -> None:
    assert sanitize(name) == sanitized
    assert desanitize(sanitized) == name


def test_desanitize_plus_is_space_and_bad_escapes_fail() -> None:
    assert desanitize("a+b") == "a b"
    for bad in ("%", "%2", "%zz", "%C3"):
        with pytest.raises(ValueError):
            desanitize(bad)


# --- sequence naming ------------------------------------------------------------------------


def test_sequence_names() -> None:
    node = ConfigChangeNotificationNode
    assert node.create_path() == "/config/changes/config_change_"
    assert node.path(42) == "/config/changes/config_change_0000000042"
    assert node.sequence_number("config_change_0000000042") == 42
    assert node.sequence_number("/config/changes/config_change_0000000007") == 7
    assert node.is_child_name("config_change_0000000001")
    assert not node.is_child_name("isr_change_0000000001")
    with pytest.raises(ValueError):
        node.sequence_number("config_change_x")
    assert IsrChangeNotificationNode.create_path() == "/isr_change_notification/isr_change_"


# --- the contract of every class ------------------------------------------------------------


@pytest.mark.parametrize("node", ALL_NODE_CLASSES, ids=lambda c: c.__name__)
def test_every_class_declares_versions_and_writes_one_it_reads(node: Any) -> None:
    assert node.FORMAT_VERSIONS, node
    assert isinstance(node.KIND, NodeKind)
    assert node.PATTERN.startswith("/")
    for release in RELEASES:
        assert node.written_version(release) in node.FORMAT_VERSIONS
    if issubclass(node, SequenceMixin):
        assert node.KIND is NodeKind.PERSISTENT_SEQUENTIAL


@pytest.mark.parametrize(
    "node", [c for c in ALL_NODE_CLASSES if issubclass(c, EmptyNode)], ids=lambda c: c.__name__
)
def test_empty_nodes(node: Any) -> None:
    assert node.encode(None, (2, 8)) == b""
    assert node.decode(b"") is None
    assert node.decode(b"anything") is None


def test_persistent_paths_are_kafkas() -> None:
    assert PERSISTENT_ZK_PATHS == (
        "/consumers",
        "/brokers/ids",
        "/brokers/topics",
        "/config/changes",
        "/admin/delete_topics",
        "/brokers/seqid",
        "/isr_change_notification",
        "/latest_producer_id_block",
        "/log_dir_event_notification",
        "/config/topics",
        "/config/clients",
        "/config/users",
        "/config/brokers",
        "/config/ips",
    )


def test_decoders_never_leak_other_exceptions() -> None:
    """Throw junk at every decoder: only ZnodeFormatError (or a lenient result) may come out."""
    junk = [
        b"",
        b"null",
        b"[]",
        b'"x"',
        b"1",
        b"{}",
        b"\xff",
        b'{"version":"x"}',
        b'{"version":1,"partitions":"x"}',
        b'{"version":1,"partitions":{"a":[1]}}',
        b'{"version":1,"partitions":[1]}',
        b'{"version":1,"acls":[{}]}',
        b'{"version":5,"jmx_port":1,"endpoints":["bad"]}',
        json.dumps({"version": 1, "status": 1, "features": {"f": 1}}).encode(),
    ]
    for node in ALL_NODE_CLASSES:
        for data in junk:
            with contextlib.suppress(ZnodeFormatError):
                node.decode(data)
