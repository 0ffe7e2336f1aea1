"""ZooKeeper's path rules (`zkbroker.zk_layout.paths`), as its Java client's PathUtils.validatePath
applies them before sending: the cases and messages are ZooKeeper's."""

from __future__ import annotations

import pytest

from zkbroker.zk_layout import InvalidPathError, check_path, invalid_path_reason


@pytest.mark.parametrize(
    "path",
    ["/", "/brokers/topics/t", "/a/.b", "/a/b.", "/a/...", "/a/..b", "/config/topics/x_y-z.1"],
)
def test_valid_paths(path: str) -> None:
    assert invalid_path_reason(path) is None
    assert check_path(path) == path


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "Path length must be > 0"),
        ("a", "Path must start with / character"),
        ("/brokers/topics/", "Path must not end with / character"),
        ("/a//b", "empty node name specified @3"),
        ("/brokers/topics/.", "relative paths not allowed @16"),
        ("/brokers/topics/..", "relative paths not allowed @17"),
        ("/a/./b", "relative paths not allowed @3"),
        ("/a/../b", "relative paths not allowed @4"),
        ("/a\0b", "null character not allowed @2"),
        ("/a\x01", "invalid character @2"),
        ("/a\x7f", "invalid character @2"),
        ("/a\x9f", "invalid character @2"),
        ("/a\ud800", "invalid character @2"),
        ("/a\ufff0", "invalid character @2"),
        # Beyond U+FFFF Java sees a surrogate pair, which is in the refused range.
        ("/a\U0001f600", "invalid character @2"),
    ],
)
def test_invalid_paths_with_zookeepers_reason(path: str, reason: str) -> None:
    assert invalid_path_reason(path) == reason
    with pytest.raises(InvalidPathError, match="caused by " + reason) as raised:
        check_path(path)
    assert raised.value.path == path
    assert isinstance(raised.value, ValueError)


def test_characters_just_outside_the_refused_ranges_pass() -> None:
    for c in ("\x20", "\x7e", "\xa0", "\ud7ff", "\uf900", "\uffef"):
        assert invalid_path_reason("/a" + c) is None, repr(c)
