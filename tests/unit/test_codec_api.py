"""The public surface of zkbroker.broker.protocol: names, the API table, classes, dicts, error
codes."""

from __future__ import annotations

import dataclasses
import json
import uuid

import pytest

import zkbroker.broker.protocol as protocol
from zkbroker.broker.protocol import (
    API_SPECS,
    ApiSpec,
    RequestHeader,
    decode_message,
    decode_request,
    decode_request_body,
    decode_request_header,
    encode_message,
    encode_request,
    error_codes,
    message_to_dict,
)
from zkbroker.broker.protocol.messages.describe_configs import (
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
)
from zkbroker.broker.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from zkbroker.broker.protocol.messages.offset_commit import OffsetCommitRequest
from zkbroker.zk_layout.uuid_text import uuid_from_text, uuid_to_text


def test_public_names() -> None:
    for name in (
        "CodecError",
        "RequestHeader",
        "ApiSpec",
        "API_SPECS",
        "decode_request_header",
        "decode_request_body",
        "decode_request",
        "encode_response",
        "encode_request",
        "decode_response",
        "encode_message",
        "decode_message",
        "message_to_dict",
        "error_codes",
    ):
        assert hasattr(protocol, name), name


def test_api_spec() -> None:
    spec = API_SPECS[3]
    assert isinstance(spec, ApiSpec)
    assert (spec.key, spec.name) == (3, "Metadata")
    assert spec.request_type is MetadataRequest
    assert spec.response_type is MetadataResponse
    assert (spec.min_version, spec.max_version, spec.first_flexible_version) == (0, 12, 9)
    assert not spec.is_flexible(8)
    assert spec.is_flexible(9)
    assert spec.is_flexible(40)
    assert API_SPECS[60].is_flexible(0)
    for key, spec in API_SPECS.items():
        assert key == spec.request_type.API_KEY
        assert key == spec.response_type.API_KEY
        assert spec.request_type.IS_REQUEST is True
        assert spec.response_type.IS_REQUEST is False


def test_generated_classes_are_slotted_dataclasses_with_spec_defaults() -> None:
    assert dataclasses.is_dataclass(MetadataResponse)
    assert hasattr(MetadataResponsePartition, "__slots__")
    response = MetadataResponse()
    assert response.controller_id == -1
    assert response.cluster_id is None
    assert response.cluster_authorized_operations == -(2**31)
    assert MetadataRequest().allow_auto_topic_creation is True
    assert MetadataResponseBroker().rack is None
    assert MetadataResponseTopic().topic_id == uuid.UUID(int=0)
    assert MetadataResponse().topics is not MetadataResponse().topics  # fresh lists
    assert OffsetCommitRequest().generation_id_or_member_epoch == -1
    names = {f.name for f in dataclasses.fields(MetadataResponsePartition)}
    assert {"isr_nodes", "leader_epoch", "offline_replicas"} <= names
    assert "throttle_time_ms" in {f.name for f in dataclasses.fields(MetadataResponse)}


def test_any_buffer_type_decodes() -> None:
    header = RequestHeader(api_key=3, api_version=12, correlation_id=3, client_id="c")
    frame = encode_request(header, MetadataRequest(topics=None))
    for buf in (frame, bytearray(frame), memoryview(frame)):
        decoded_header, offset = decode_request_header(buf)
        assert decoded_header == header
        assert decode_request_body(decoded_header, buf, offset) == MetadataRequest(topics=None)
        assert decode_request(buf)[0] == header
    body = encode_message(MetadataRequest(topics=None), 12)
    assert decode_message(MetadataRequest, 12, memoryview(body))[1] == len(body)


def test_message_to_dict_is_json_safe() -> None:
    topic_id = uuid.UUID(int=1)
    msg = MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=1, host="h", port=9092)],
        cluster_id="c",
        topics=[
            MetadataResponseTopic(
                name="t",
                topic_id=topic_id,
                partitions=[MetadataResponsePartition(replica_nodes=[1], isr_nodes=[1])],
            )
        ],
    )
    data = message_to_dict(msg)
    json.dumps(data)
    assert data["cluster_id"] == "c"
    assert data["brokers"] == [{"node_id": 1, "host": "h", "port": 9092, "rack": None}]
    assert data["topics"][0]["topic_id"] == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert data["topics"][0]["partitions"][0]["isr_nodes"] == [1]
    assert data["throttle_time_ms"] == 0
    assert message_to_dict(RequestHeader(18, 3, 1, None)) == {
        "api_key": 18,
        "api_version": 3,
        "correlation_id": 1,
        "client_id": None,
    }
    with pytest.raises(TypeError):
        message_to_dict(object())


def test_message_to_dict_bytes_are_base64() -> None:
    from zkbroker.broker.protocol.messages.describe_groups import DescribedGroupMember

    member = DescribedGroupMember(member_metadata=b"\x00\x01\xff", member_assignment=b"")
    data = message_to_dict(member)
    assert data["member_metadata"] == "AAH/"
    assert data["member_assignment"] == ""


def test_uuid_text_round_trip() -> None:
    value = uuid.UUID("d9c2d1f0-8a3b-4c5d-9e6f-0123456789ab")
    text = uuid_to_text(value)
    assert len(text) == 22 and "=" not in text
    assert uuid_from_text(text) == value


def test_nested_struct_names_follow_the_spec() -> None:
    response = DescribeConfigsResponse(
        results=[
            DescribeConfigsResult(
                resource_name="t", configs=[DescribeConfigsResourceResult(name="a", value="b")]
            )
        ]
    )
    decoded, _ = decode_message(DescribeConfigsResponse, 4, encode_message(response, 4))
    assert decoded == response


def test_error_codes() -> None:
    assert error_codes.NONE == 0
    assert error_codes.UNKNOWN_SERVER_ERROR == -1
    assert error_codes.NOT_CONTROLLER == 41
    assert error_codes.TOPIC_ALREADY_EXISTS == 36
    assert error_codes.UNKNOWN_TOPIC_ID == 100
    assert error_codes.POSITION_OUT_OF_RANGE == 99
    assert error_codes.STALE_MEMBER_EPOCH == 113
    assert error_codes.VOTER_NOT_FOUND == 127
    assert sorted(error_codes.NAMES) == list(range(-1, 128))
    assert error_codes.NAMES[41] == "NOT_CONTROLLER"
    assert all(getattr(error_codes, name) == code for code, name in error_codes.NAMES.items())
    assert set(error_codes.DEFAULT_MESSAGES) <= set(error_codes.NAMES)
    assert error_codes.DEFAULT_MESSAGES[error_codes.NOT_CONTROLLER] == (
        "This is not the correct controller for this cluster."
    )
    assert error_codes.name_of(500) == "UNKNOWN_CODE_500"
