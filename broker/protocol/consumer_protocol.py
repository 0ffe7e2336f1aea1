"""Kafka's ConsumerProtocol byte formats, as DescribeGroups carries them for protocol type
``consumer``: a member's Subscription (``member_metadata``) and Assignment
(``member_assignment``), version 0, which every consumer and admin client reads.

* Subscription v0: int16 version, int32 count + topics as int16-length strings, user data as
  int32-length bytes (-1 = null).
* Assignment v0: int16 version, int32 count + (topic string, int32 count + int32 partitions),
  user data as for Subscription.

Deliberately not here: later versions (owned partitions, generation, rack), which group members
negotiate among themselves and which the ZooKeeper registry has no data for.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

VERSION = 0


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _user_data(data: bytes | None) -> bytes:
    return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data


def encode_subscription(topics: Iterable[str], user_data: bytes | None = None) -> bytes:
    names = sorted(set(topics))
    body = b"".join(_string(t) for t in names)
    return struct.pack(">hi", VERSION, len(names)) + body + _user_data(user_data)


def encode_assignment(
    partitions: Mapping[str, Iterable[int]], user_data: bytes | None = None
) -> bytes:
    out = [struct.pack(">hi", VERSION, len(partitions))]
    for topic in sorted(partitions):
        numbers = sorted(partitions[topic])
        out.append(_string(topic) + struct.pack(f">i{len(numbers)}i", len(numbers), *numbers))
    out.append(_user_data(user_data))
    return b"".join(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(value)

    def string(self) -> str:
        size = self.take(">h")
        text = self.data[self.pos : self.pos + size].decode()
        self.pos += size
        return text

    def user_data(self) -> bytes | None:
        size = self.take(">i")
        if size < 0:
            return None
        raw = self.data[self.pos : self.pos + size]
        self.pos += size
        return raw


def decode_subscription(data: bytes) -> tuple[int, list[str], bytes | None]:
    """(version, topics, user data); for tests and tools (reads the v0 fields of any version)."""
    r = _Reader(data)
    version = r.take(">h")
    topics = [r.string() for _ in range(r.take(">i"))]
    return version, topics, r.user_data()


def decode_assignment(data: bytes) -> tuple[int, dict[str, list[int]], bytes | None]:
    """(version, topic -> partitions, user data); the counterpart of ``encode_assignment``."""
    r = _Reader(data)
    version = r.take(">h")
    partitions: dict[str, list[int]] = {}
    for _ in range(r.take(">i")):
        topic = r.string()
        partitions[topic] = [r.take(">i") for _ in range(r.take(">i"))]
    return version, partitions, r.user_data()
