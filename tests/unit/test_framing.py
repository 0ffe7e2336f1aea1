"""Kafka's framing rules as pure code (`zkbroker.broker.protocol.framing`): sizes, limits, and what
a broker does with an API key or version it does not serve."""

from __future__ import annotations

import pytest

from zkbroker.broker.protocol import decode_response, error_codes
from zkbroker.broker.protocol.framing import (
    Answer,
    Close,
    FrameRefused,
    frame_size,
    route,
    size_prefixed,
)
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsResponse
from zkbroker.broker.protocol.messages.headers import RequestHeader

RANGES = {18: (0, 3), 19: (0, 7)}


def _header(api_key: int, version: int) -> RequestHeader:
    return RequestHeader(
        api_key=api_key, api_version=version, correlation_id=41, client_id="framing-test"
    )


def test_frame_size_reads_a_signed_big_endian_prefix() -> None:
    assert frame_size(b"\x00\x00\x01\x00", 1024) == 256
    assert frame_size(b"\x00\x00\x00\x00", 1024) == 0
    assert frame_size((1024).to_bytes(4, "big"), 1024) == 1024


@pytest.mark.parametrize(
    ("prefix", "reason"),
    [
        (b"\xff\xff\xff\xff", "invalid request size -1"),
        ((1025).to_bytes(4, "big"), "request size 1025 larger than 1024 (max request bytes)"),
        (b"\x00\x00", "connection ended inside a size prefix"),
    ],
)
def test_frame_size_refuses_what_kafka_refuses(prefix: bytes, reason: str) -> None:
    with pytest.raises(FrameRefused) as refused:
        frame_size(prefix, 1024)
    assert refused.value.reason == reason


def test_frame_size_names_a_response_when_a_client_reads_one() -> None:
    with pytest.raises(FrameRefused) as refused:
        frame_size((2048).to_bytes(4, "big"), 1024, what="response")
    assert refused.value.reason == "response size 2048 larger than 1024 (max response bytes)"


def test_size_prefixed() -> None:
    assert size_prefixed(b"abc") == b"\x00\x00\x00\x03abc"
    assert size_prefixed(b"") == b"\x00\x00\x00\x00"


def test_route_serves_versions_in_range() -> None:
    assert route(_header(19, 0), RANGES, "3.9") is None
    assert route(_header(19, 7), RANGES, "3.9") is None


def test_route_closes_for_unserved_keys_and_versions() -> None:
    assert route(_header(0, 9), RANGES, "2.8") == Close(
        "api key 0 is not served by Kafka 2.8 emulation"
    )
    assert route(_header(19, 8), RANGES, "3.9") == Close(
        "CreateTopics v8 is not supported (supported 0-7)"
    )


def test_route_answers_an_unknown_api_versions_version_in_v0() -> None:
    # KIP-511: the broker answers in v0 with its own range, so the client can retry lower.
    decision = route(_header(18, 9), RANGES, "3.9")
    assert isinstance(decision, Answer) and decision.supported == (0, 3)
    correlation_id, response = decode_response(18, 0, decision.data)
    assert correlation_id == 41
    assert isinstance(response, ApiVersionsResponse)
    assert response.error_code == error_codes.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [(18, 0, 3)]
