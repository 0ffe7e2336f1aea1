"""Whole requests and responses: header plus body, as they travel inside a size-prefixed frame.

The broker side uses ``decode_request`` (or ``decode_request_header`` + ``decode_request_body``)
and ``encode_response``; tests acting as a client use ``encode_request`` and ``decode_response``.
All of them raise only ``CodecError``.

Deliberately not here: the 4-byte size prefix and socket handling
(``zkbroker.broker.server.listener``), and deciding what to answer to an unsupported version (the
handlers do; for ApiVersions Kafka replies in the v0 format, which a caller gets by passing a header
with ``api_version=0``).
"""

from __future__ import annotations

import struct
from typing import Any

from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.codec import (
    Buffer,
    as_bytes,
    decode_with,
    encode_message,
    encode_with_prefix,
)
from zkbroker.broker.protocol.errors import CodecError
from zkbroker.broker.protocol.headers import (
    decode_header_bytes,
    request_header_version,
    response_header_version,
)
from zkbroker.broker.protocol.messages import API_SPECS
from zkbroker.broker.protocol.messages.headers import RESPONSE_HEADER, RequestHeader
from zkbroker.broker.protocol.schema import ApiSpec

_INT32 = struct.Struct(">i")


def _spec(api_key: int) -> ApiSpec:
    spec = API_SPECS.get(api_key)
    if spec is None:
        raise CodecError(f"unknown api key {api_key}", api_key=api_key)
    return spec


def decode_request_body(header: RequestHeader, buf: Buffer, offset: int) -> Any:
    """Decode the body of the request ``header`` describes, starting at ``offset``.

    Bytes after the body are ignored, as Kafka does.
    """
    spec = _spec(header.api_key)
    body, _ = decode_with(spec.request_def, header.api_version, as_bytes(buf), offset)
    return body


def decode_request(buf: Buffer) -> tuple[RequestHeader, Any]:
    """Decode a whole request frame (without its size prefix) into (header, body)."""
    data = as_bytes(buf)
    header, offset = decode_header_bytes(data)
    return header, decode_request_body(header, data, offset)


def _correlation(header: Any, version: int) -> bytes:
    try:
        head = _INT32.pack(header.correlation_id)
    except (struct.error, AttributeError, TypeError) as exc:
        raise CodecError(f"bad correlation id: {exc}") from None
    return head + b"\x00" if version >= 1 else head


def _check_body(spec: ApiSpec, body: Any, expected: type, kind: str) -> None:
    if body.__class__ is not expected:
        raise CodecError(
            f"{spec.name} (key {spec.key}) {kind}: body is a {type(body).__name__}, "
            f"expected {expected.__name__}",
            api_key=spec.key,
        )


def encode_response(header: RequestHeader, body: Any) -> bytes:
    """Response header + body for the request ``header`` (no size prefix).

    The body is encoded at ``header.api_version``; the header is v1 for flexible versions, v0
    otherwise and always v0 for ApiVersions.
    """
    spec = _spec(header.api_key)
    _check_body(spec, body, spec.response_type, "response")
    return encode_with_prefix(response_head(header), body, header.api_version)


def response_head(header: RequestHeader) -> bytes:
    """The response header `encode_response` puts before the body: what differs between two
    answers to the same request body (the correlation id)."""
    return _correlation(header, response_header_version(header.api_key, header.api_version))


def encode_request(header: RequestHeader, body: Any) -> bytes:
    """Request header + body (no size prefix), as a client sends it.

    The body is encoded by its own class at ``header.api_version``, even when it does not belong
    to ``header.api_key``: tests use that to send frames for keys zkbroker does not know.
    """
    head = encode_message(header, request_header_version(header.api_key, header.api_version))
    return encode_with_prefix(head, body, header.api_version)


def decode_response(api_key: int, api_version: int, buf: Buffer) -> tuple[int, Any]:
    """Decode a response frame (no size prefix) into (correlation id, body).

    Like Kafka's clients (``ApiVersionsResponse.parse``), an ApiVersions response that does not
    parse at the requested version is parsed again as v0: that is how a broker answers a
    version it does not support (error 35 in the v0 format).
    """
    spec = _spec(api_key)
    data = as_bytes(buf)
    header_version = response_header_version(api_key, api_version)
    header, offset = decode_with(RESPONSE_HEADER, header_version, data, 0)
    try:
        body, _ = decode_with(spec.response_def, api_version, data, offset)
    except CodecError:
        if api_key != ApiKey.API_VERSIONS or api_version == 0:
            raise
        body, _ = decode_with(spec.response_def, 0, data, offset)
    return header.correlation_id, body
