"""Which strings ZooKeeper accepts as znode paths, checked before a request is sent.

ZooKeeper's Java client validates every path it is given (``PathUtils.validatePath``, in
``zookeeper-server/src/main/java/org/apache/zookeeper/common/PathUtils.java``) and throws
``IllegalArgumentException`` without contacting the server. Kafka builds paths from names
clients send (``/brokers/topics/<topic>``, ``/config/topics/<topic>``, ``/consumers/<group>``),
so a topic named ``"."`` or ``""`` reaches that check inside a per-resource ``try`` of
``ZkAdminManager`` and is answered UNKNOWN_SERVER_ERROR for that resource alone
(``ApiError.fromThrowable``), while the rest of the request goes on. kazoo checks only some of
these rules, and by raising ``ValueError`` from deep inside a call; ``invalid_path_reason``
and ``check_path`` give zkbroker ZooKeeper's rules and messages up front.

Deliberately not here: Kafka's own name rules (legal topic names,
``zkbroker.broker.rules.topic_names``) and the sanitizing of config entity names
(``zkbroker.zk_layout.sanitizer``).
"""

from __future__ import annotations

from zkbroker.zk_layout.errors import InvalidPathError


def _invalid_char(c: str) -> bool:
    # Java compares UTF-16 code units: characters beyond U+FFFF are surrogate pairs, which
    # fall in the refused range U+D800-U+F8FF.
    o = ord(c)
    return (
        0x00 < o <= 0x1F
        or 0x7F <= o <= 0x9F
        or 0xD800 <= o <= 0xF8FF
        or 0xFFF0 <= o <= 0xFFFF
        or o > 0xFFFF
    )


def invalid_path_reason(path: str) -> str | None:
    """ZooKeeper's reason for refusing ``path`` (its own words), or None when it is valid."""
    if not path:
        return "Path length must be > 0"
    if path[0] != "/":
        return "Path must start with / character"
    if len(path) == 1:
        return None
    if path[-1] == "/":
        return "Path must not end with / character"
    last = "/"
    for i in range(1, len(path)):
        c = path[i]
        if c == "\0":
            return f"null character not allowed @{i}"
        if c == "/" and last == "/":
            return f"empty node name specified @{i}"
        segment_ends = i + 1 == len(path) or path[i + 1] == "/"
        if c == "." and last == "." and path[i - 2] == "/" and segment_ends:
            return f"relative paths not allowed @{i}"
        if c == "." and last == "/" and segment_ends:
            return f"relative paths not allowed @{i}"
        if _invalid_char(c):
            return f"invalid character @{i}"
        last = c
    return None


def check_path(path: str) -> str:
    """``path`` itself when ZooKeeper accepts it, else ``InvalidPathError`` with ZooKeeper's
    message (``Invalid path string "<path>" caused by <reason>``)."""
    reason = invalid_path_reason(path)
    if reason is not None:
        raise InvalidPathError(f'Invalid path string "{path}" caused by {reason}', path=path)
    return path
