"""Kafka's framing rules as pure code: the size prefix, the size limit, and what a broker does
with a request whose API key or version it does not serve (docs/kafka-behaviour.md §0).

`frame_size` refuses a negative size or one above `socket.request.max.bytes` (`FrameRefused`:
the connection closes). `route` answers None (served), `Close(reason)` (a key or version the
release does not serve; the reason is the listener's log line) or `Answer(data)`: ApiVersions
at an unknown version, answered in v0 with UNSUPPORTED_VERSION and the broker's range (KIP-511).
`size_prefixed` frames a response.

Not here: sockets (`zkbroker.broker.server.listener`), the handler table (the caller passes its
ranges), decoding bodies (`zkbroker.broker.protocol.request_codec`), TLS/SASL framing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages import API_SPECS
from zkbroker.broker.protocol.messages.api_versions import ApiVersion, ApiVersionsResponse
from zkbroker.broker.protocol.messages.headers import RequestHeader
from zkbroker.broker.protocol.request_codec import encode_response

SIZE_BYTES = 4


class FrameRefused(Exception):
    """The frame cannot be read: the connection closes; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Close:
    """Close the connection without an answer (what Kafka does), for `reason`."""

    reason: str


@dataclass(frozen=True)
class Answer:
    """Send `data` (without the size prefix) instead of dispatching; the connection goes on."""

    data: bytes
    supported: tuple[int, int]


def frame_size(prefix: bytes, max_bytes: int, what: str = "request") -> int:
    """The size a 4-byte prefix announces; `FrameRefused` when Kafka would not read it (a
    broker reading a request, or with `what="response"` a client reading an answer)."""
    if len(prefix) != SIZE_BYTES:
        raise FrameRefused("connection ended inside a size prefix")
    size = int.from_bytes(prefix, "big", signed=True)
    if size < 0:
        raise FrameRefused(f"invalid {what} size {size}")
    if size > max_bytes:
        raise FrameRefused(f"{what} size {size} larger than {max_bytes} (max {what} bytes)")
    return size


def size_prefixed(payload: bytes) -> bytes:
    """`payload` as a frame: its size as 4 big-endian bytes, then the payload."""
    return len(payload).to_bytes(SIZE_BYTES, "big") + payload


def api_name(api_key: int) -> str:
    spec = API_SPECS.get(api_key)
    return spec.name if spec is not None else f"api key {api_key}"


def route(
    header: RequestHeader, ranges: Mapping[int, tuple[int, int]], release_name: str
) -> Close | Answer | None:
    """What to do with a request of `header` when the broker serves `ranges` (api key ->
    (min, max)) as Kafka `release_name`: None to dispatch it, else `Close` or `Answer`."""
    bounds = ranges.get(header.api_key)
    if bounds is None:
        return Close(
            f"api key {header.api_key} is not served by Kafka {release_name} emulation"
        )
    low, high = bounds
    if low <= header.api_version <= high:
        return None
    if header.api_key == ApiKey.API_VERSIONS:
        return Answer(unsupported_api_versions(header, low, high), (low, high))
    return Close(
        f"{api_name(header.api_key)} v{header.api_version} is not supported "
        f"(supported {low}-{high})"
    )


def unsupported_api_versions(header: RequestHeader, low: int, high: int) -> bytes:
    """The v0 ApiVersions answer to a version the broker does not know (KIP-511): error
    UNSUPPORTED_VERSION and the broker's ApiVersions range, under the request's correlation
    id."""
    return encode_response(
        RequestHeader(
            api_key=int(ApiKey.API_VERSIONS),
            api_version=0,
            correlation_id=header.correlation_id,
            client_id=header.client_id,
        ),
        ApiVersionsResponse(
            error_code=error_codes.UNSUPPORTED_VERSION,
            api_keys=[
                ApiVersion(api_key=int(ApiKey.API_VERSIONS), min_version=low, max_version=high)
            ],
        ),
    )
