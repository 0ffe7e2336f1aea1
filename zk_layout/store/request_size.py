"""The request-size guard: ZooKeeper closes the connection of a client whose request packet
exceeds its ``jute.maxbuffer`` (0xfffff bytes by default), which looks like a connection loss
with the outcome unknown. Writes whose estimated packet exceeds the limit are refused before
sending with ``RequestTooLargeError``: nothing was written.

Deliberately not here: sending anything; the estimate is an upper bound, not jute's encoding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from zkbroker.zk_layout.errors import ZkOperationError

#: ZooKeeper's default ``jute.maxbuffer`` (0xfffff): the server drops the connection of a
#: client that sends a longer request packet, and a client refuses a longer reply.
DEFAULT_MAX_BUFFER_BYTES: Final = 0xFFFFF
# Bytes of a request packet besides its ops' paths and data: length prefix, request header,
# multi header and trailer (generous).
_PACKET_OVERHEAD: Final = 64
# Bytes of one op besides its path and data: op header, string/buffer lengths, version,
# flags and the (open) ACL list (generous).
_OP_OVERHEAD: Final = 64


class RequestTooLargeError(ZkOperationError):
    """A write was not sent because its request packet would exceed the server's
    ``jute.maxbuffer`` (the server would close the connection instead of answering).
    Nothing was written. ``size`` is the estimated packet size, ``limit`` the limit."""

    def __init__(self, message: str, *, op: str, path: str | None, size: int, limit: int) -> None:
        super().__init__(message, op=op, path=path)
        self.size = size
        self.limit = limit


def request_bytes(ops: Sequence[tuple[str, bytes | None]]) -> int:
    """Estimated size of a request packet carrying ``(full path, data)`` ops (an upper bound
    of what ZooKeeper's ``jute.maxbuffer`` is compared with)."""
    return _PACKET_OVERHEAD + sum(
        _OP_OVERHEAD + len(path.encode("utf-8")) + (len(data) if data else 0) for path, data in ops
    )


def check_request_size(
    op: str, path: str | None, ops: Sequence[tuple[str, bytes | None]], limit: int
) -> None:
    """Raise ``RequestTooLargeError`` if a request carrying ``ops`` would exceed ``limit``."""
    size = request_bytes(ops)
    if size > limit:
        where = f"{op} {path}" if path else op
        raise RequestTooLargeError(
            f"{where}: a request of about {size} bytes exceeds ZooKeeper's jute.maxbuffer "
            f"of {limit} bytes; nothing was written",
            op=op,
            path=path,
            size=size,
            limit=limit,
        )
