"""Encoded bytes checked against frames written out by hand from Kafka's wire rules.

Each expected value below is assembled field by field (int16/int32 big-endian, legacy strings
with an int16 length, compact strings/arrays with an unsigned-varint length + 1, one zero byte
for an empty tagged-field section), independently of the codec.
"""

from __future__ import annotations

import struct
import uuid

from zkbroker.broker.protocol import (
    RequestHeader,
    decode_message,
    decode_request,
    decode_response,
    encode_message,
    encode_request,
    encode_response,
)
from zkbroker.broker.protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
)
from zkbroker.broker.protocol.messages.describe_cluster import (
    DescribeClusterBroker,
    DescribeClusterResponse,
)
from zkbroker.broker.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def legacy_str(s: str) -> bytes:
    return i16(len(s.encode())) + s.encode()


def compact_str(s: str) -> bytes:
    data = s.encode()
    assert len(data) + 1 < 128
    return bytes([len(data) + 1]) + data


def test_api_versions_v0_request_frame() -> None:
    header = RequestHeader(api_key=18, api_version=0, correlation_id=1, client_id="kafka")
    expected = i16(18) + i16(0) + i32(1) + legacy_str("kafka")  # header v1, empty body
    assert expected == bytes.fromhex("0012 0000 00000001 0005 6b61666b61")
    assert encode_request(header, ApiVersionsRequest()) == expected
    assert decode_request(expected) == (header, ApiVersionsRequest())


def test_metadata_v0_request_body() -> None:
    msg = MetadataRequest(topics=[MetadataRequestTopic(name="a"), MetadataRequestTopic(name="bc")])
    expected = i32(2) + legacy_str("a") + legacy_str("bc")
    assert encode_message(msg, 0) == expected
    assert decode_message(MetadataRequest, 0, expected) == (msg, len(expected))


def test_metadata_v1_request_null_topics_means_all_topics() -> None:
    assert encode_message(MetadataRequest(topics=None), 1) == i32(-1)
    assert encode_message(MetadataRequest(topics=None, allow_auto_topic_creation=False), 9) == (
        b"\x00" + b"\x00" + b"\x00" + b"\x00" + b"\x00"
    )


def test_metadata_v9_flexible_request_frame() -> None:
    header = RequestHeader(api_key=3, api_version=9, correlation_id=7, client_id="cli")
    body = MetadataRequest(
        topics=[MetadataRequestTopic(name="a"), MetadataRequestTopic(name="bc")],
        allow_auto_topic_creation=True,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=True,
    )
    expected_header = (
        i16(3)
        + i16(9)
        + i32(7)
        + legacy_str("cli")  # ClientId stays a legacy string in v2
        + b"\x00"  # header v2: empty tagged fields
    )
    expected_body = (
        b"\x03"  # compact array: 2 topics + 1
        + compact_str("a")
        + b"\x00"  # name, then the topic's empty tagged fields
        + compact_str("bc")
        + b"\x00"
        + b"\x01"  # allow_auto_topic_creation
        + b"\x00"  # include_cluster_authorized_operations (v8-10)
        + b"\x01"  # include_topic_authorized_operations
        + b"\x00"  # body tagged fields
    )
    frame = encode_request(header, body)
    assert frame == expected_header + expected_body
    assert frame.hex() == "00030009000000070003636c6900" + "030261000362630001000100"
    assert decode_request(frame) == (header, body)


def test_compact_lengths_above_127_use_two_varint_bytes() -> None:
    name = "t" * 200
    msg = MetadataRequest(topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=False)
    data = encode_message(msg, 9)
    assert data[:4] == b"\x02" + bytes([201 & 0x7F | 0x80, 201 >> 7]) + b"t"
    partition = MetadataResponsePartition(replica_nodes=list(range(130)))
    response = MetadataResponse(topics=[MetadataResponseTopic(name="x", partitions=[partition])])
    encoded = encode_message(response, 12)
    # 131 = 0x83 0x01 as an unsigned varint, followed by the 130 big-endian int32s
    assert b"\x83\x01" + b"".join(i32(i) for i in range(130)) in encoded
    assert decode_message(MetadataResponse, 12, encoded)[0] == response


def test_uuid_is_sixteen_raw_bytes() -> None:
    topic_id = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    msg = MetadataRequest(topics=[MetadataRequestTopic(topic_id=topic_id, name=None)])
    expected = (
        b"\x02"
        + topic_id.bytes
        + b"\x00"
        + b"\x00"  # one topic: id, null name, tags
        + b"\x01"  # allow_auto_topic_creation (default true)
        + b"\x00"  # include_topic_authorized_operations (v12 has no cluster flag)
        + b"\x00"
    )
    assert encode_message(msg, 12) == expected
    assert decode_message(MetadataRequest, 12, expected)[0] == msg


def test_api_versions_v3_response_uses_header_v0() -> None:
    header = RequestHeader(api_key=18, api_version=3, correlation_id=42, client_id="c")
    body = ApiVersionsResponse(error_code=0, api_keys=[ApiVersion(18, 0, 4)], throttle_time_ms=0)
    expected = (
        i32(42)  # response header v0: no tagged fields even though v3 is flexible
        + i16(0)
        + b"\x02"
        + i16(18)
        + i16(0)
        + i16(4)
        + b"\x00"
        + i32(0)
        + b"\x00"
    )
    assert encode_response(header, body) == expected
    assert decode_response(18, 3, expected) == (42, body)


def test_describe_cluster_v0_response_uses_header_v1() -> None:
    header = RequestHeader(api_key=60, api_version=0, correlation_id=9, client_id=None)
    body = DescribeClusterResponse(
        error_message=None,
        cluster_id="c1",
        controller_id=1,
        brokers=[DescribeClusterBroker(broker_id=1, host="h", port=9092, rack=None)],
    )
    expected = (
        i32(9)
        + b"\x00"  # response header v1
        + i32(0)  # throttle_time_ms
        + i16(0)  # error_code
        + b"\x00"  # error_message: compact null
        + compact_str("c1")
        + i32(1)
        + b"\x02"
        + i32(1)
        + compact_str("h")
        + i32(9092)
        + b"\x00"
        + b"\x00"
        + i32(-(2**31))  # cluster_authorized_operations default
        + b"\x00"
    )
    assert encode_response(header, body) == expected
    assert decode_response(60, 0, expected) == (9, body)


def test_metadata_v1_response_legacy_encoding() -> None:
    header = RequestHeader(api_key=3, api_version=1, correlation_id=5, client_id="x")
    body = MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=0, host="b0", port=9092, rack=None)],
        controller_id=0,
        topics=[
            MetadataResponseTopic(
                error_code=0,
                name="t",
                is_internal=False,
                partitions=[
                    MetadataResponsePartition(
                        error_code=0,
                        partition_index=0,
                        leader_id=0,
                        replica_nodes=[0],
                        isr_nodes=[0],
                    )
                ],
            )
        ],
    )
    expected = (
        i32(5)  # response header v0
        + i32(1)
        + i32(0)
        + legacy_str("b0")
        + i32(9092)
        + i16(-1)  # rack: legacy null
        + i32(0)  # controller_id
        + i32(1)
        + i16(0)
        + legacy_str("t")
        + b"\x00"
        + i32(1)
        + i16(0)
        + i32(0)
        + i32(0)
        + i32(1)
        + i32(0)
        + i32(1)
        + i32(0)
    )
    assert encode_response(header, body) == expected
    assert decode_response(3, 1, expected) == (5, body)
