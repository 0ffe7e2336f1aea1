"""Request/response header versions: which one each api/version uses, and their decoding."""

from __future__ import annotations

import struct

import pytest

from zkbroker.broker.protocol import (
    CodecError,
    RequestHeader,
    decode_request,
    decode_request_body,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)
from zkbroker.broker.protocol.headers import request_header_version, response_header_version
from zkbroker.broker.protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
)
from zkbroker.broker.protocol.messages.metadata import MetadataRequest, MetadataResponse


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


@pytest.mark.parametrize(
    ("api_key", "api_version", "expected"),
    [
        (3, 0, 1),
        (3, 8, 1),
        (3, 9, 2),
        (3, 12, 2),
        (3, 13, 2),  # above the max: still judged by "flexible from 9"
        (18, 2, 1),
        (18, 3, 2),
        (18, 9, 2),
        (19, 4, 1),
        (19, 5, 2),
        (60, 0, 2),  # DescribeCluster is flexible from v0
        (63, 0, 2),
        (999, 5, 1),  # unknown api key
        (-1, 0, 1),
        (3, -1, 1),
    ],
)
def test_request_header_version(api_key: int, api_version: int, expected: int) -> None:
    assert request_header_version(api_key, api_version) == expected


@pytest.mark.parametrize(
    ("api_key", "api_version", "expected"),
    [
        (18, 0, 0),
        (18, 3, 0),  # ApiVersions: always v0
        (18, 4, 0),
        (3, 8, 0),
        (3, 9, 1),
        (60, 0, 1),
        (32, 3, 0),
        (32, 4, 1),
    ],
)
def test_response_header_version(api_key: int, api_version: int, expected: int) -> None:
    assert response_header_version(api_key, api_version) == expected


def test_api_versions_request_above_max_is_parsed_with_header_v2() -> None:
    frame = (
        i16(18)
        + i16(9)
        + i32(123)
        + i16(3)
        + b"cli"
        + b"\x00"  # header v2 tagged fields
        + b"\x05hello\x00"  # whatever a future v9 body looks like
    )
    header, offset = decode_request_header(frame)
    assert header == RequestHeader(api_key=18, api_version=9, correlation_id=123, client_id="cli")
    assert offset == 14
    with pytest.raises(CodecError) as info:
        decode_request_body(header, frame, offset)
    assert info.value.api_key == 18
    assert info.value.api_version == 9
    assert "ApiVersions" in str(info.value)
    assert "v9" in str(info.value)


def test_api_versions_v3_request_round_trip_uses_header_v2() -> None:
    header = RequestHeader(api_key=18, api_version=3, correlation_id=1, client_id="c")
    body = ApiVersionsRequest(client_software_name="zk", client_software_version="1.0")
    frame = encode_request(header, body)
    assert frame[:12] == i16(18) + i16(3) + i32(1) + i16(1) + b"c" + b"\x00"
    assert decode_request(frame) == (header, body)


def test_unknown_api_key_uses_header_v1() -> None:
    frame = i16(999) + i16(0) + i32(5) + i16(-1) + b"\xaa\xbb"
    header, offset = decode_request_header(frame)
    assert header == RequestHeader(api_key=999, api_version=0, correlation_id=5, client_id=None)
    assert offset == 10
    with pytest.raises(CodecError, match="unknown api key 999"):
        decode_request_body(header, frame, offset)


def test_null_client_id_and_unknown_header_tags() -> None:
    # header v2: null client id (legacy -1), then one unknown tagged field (tag 7, 2 bytes)
    frame = i16(3) + i16(12) + i32(77) + i16(-1) + b"\x01\x07\x02\xde\xad"
    header, offset = decode_request_header(frame)
    assert header == RequestHeader(api_key=3, api_version=12, correlation_id=77, client_id=None)
    assert offset == len(frame)


def test_request_header_never_raises_anything_but_codec_error() -> None:
    for frame in (b"", b"\x00", b"\x00\x03\x00", b"\x00\x03\x00\x09", b"\x00\x03\x00\x09\x00\x00"):
        with pytest.raises(CodecError):
            decode_request_header(frame)
    with pytest.raises(CodecError) as info:
        decode_request_header(i16(3) + i16(9) + i32(1) + i16(10) + b"abc")
    assert info.value.field == "client_id"
    assert info.value.offset == 10
    assert "truncated" in str(info.value)


def test_header_buffers_of_any_bytes_type() -> None:
    frame = i16(3) + i16(1) + i32(2) + i16(1) + b"x"
    for buf in (frame, bytearray(frame), memoryview(frame)):
        assert decode_request_header(buf)[0].client_id == "x"


def test_response_headers_on_the_wire() -> None:
    flexible = RequestHeader(api_key=3, api_version=9, correlation_id=0x01020304, client_id="x")
    assert encode_response(flexible, MetadataResponse()).startswith(b"\x01\x02\x03\x04\x00")
    legacy = RequestHeader(api_key=3, api_version=8, correlation_id=0x01020304, client_id="x")
    data = encode_response(legacy, MetadataResponse(throttle_time_ms=0x05060708))
    assert data.startswith(b"\x01\x02\x03\x04\x05\x06\x07\x08")
    api_versions = RequestHeader(api_key=18, api_version=4, correlation_id=1, client_id="x")
    data = encode_response(api_versions, ApiVersionsResponse(error_code=35))
    assert data.startswith(i32(1) + i16(35))


def test_encode_response_checks_the_body_type() -> None:
    header = RequestHeader(api_key=3, api_version=9, correlation_id=1, client_id="x")
    with pytest.raises(CodecError, match="expected MetadataResponse"):
        encode_response(header, MetadataRequest())
    bad = RequestHeader(api_key=3, api_version=9, correlation_id=2**40, client_id="x")
    with pytest.raises(CodecError, match="correlation"):
        encode_response(bad, MetadataResponse())


def test_client_side_api_versions_fallback_to_v0() -> None:
    # A broker that does not support v4 answers in the v0 format; clients parse it as v0.
    v0_answer = i32(8) + i16(35) + i32(1) + i16(18) + i16(0) + i16(3)
    correlation, body = decode_response(18, 4, v0_answer)
    assert correlation == 8
    assert body == ApiVersionsResponse(error_code=35, api_keys=[ApiVersion(18, 0, 3)])
    with pytest.raises(CodecError):
        decode_response(3, 4, i32(8) + b"\x00")  # no such fallback for other APIs


def test_encode_request_sends_any_pairing_for_tests() -> None:
    # Key 999 is no Kafka API: header v1, the body encoded by its own class.
    header = RequestHeader(api_key=999, api_version=3, correlation_id=1, client_id="c")
    frame = encode_request(header, ApiVersionsRequest(client_software_name="n"))
    assert frame == i16(999) + i16(3) + i32(1) + i16(1) + b"c" + b"\x02n\x01\x00"
    with pytest.raises(CodecError, match="unknown api key 999"):
        decode_request(frame)
