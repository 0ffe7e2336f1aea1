"""Tagged fields (KIP-482): written only when not default, read when present, unknown skipped."""

from __future__ import annotations

import struct
import uuid

import pytest

from zkbroker.broker.protocol import CodecError, decode_message, encode_message
from zkbroker.broker.protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
)
from zkbroker.broker.protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from zkbroker.broker.protocol.messages.create_topics import (
    CreatableTopicResult,
    CreateTopicsResponse,
)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


API_VERSIONS_V3_PLAIN = i16(0) + b"\x02" + i16(3) + i16(0) + i16(12) + b"\x00" + i32(0) + b"\x00"


def test_tagged_fields_at_default_are_not_written() -> None:
    msg = ApiVersionsResponse(api_keys=[ApiVersion(3, 0, 12)], finalized_features_epoch=-1)
    assert encode_message(msg, 3) == API_VERSIONS_V3_PLAIN


def test_tagged_fields_written_in_tag_order() -> None:
    msg = ApiVersionsResponse(
        api_keys=[ApiVersion(3, 0, 12)],
        supported_features=[SupportedFeatureKey("metadata.version", 1, 21)],
        finalized_features_epoch=7,
        finalized_features=[FinalizedFeatureKey("metadata.version", 21, 1)],
        zk_migration_ready=True,
    )
    feature = b"\x11metadata.version"
    tag0 = b"\x02" + feature + i16(1) + i16(21) + b"\x00"
    tag2 = b"\x02" + feature + i16(21) + i16(1) + b"\x00"
    expected = API_VERSIONS_V3_PLAIN[:-1] + (
        b"\x04"
        + b"\x00"
        + bytes([len(tag0)])
        + tag0
        + b"\x01\x08"
        + i64(7)
        + b"\x02"
        + bytes([len(tag2)])
        + tag2
        + b"\x03\x01\x01"
    )
    assert encode_message(msg, 3) == expected
    assert decode_message(ApiVersionsResponse, 3, expected) == (msg, len(expected))


def test_known_tag_is_read_when_present() -> None:
    data = API_VERSIONS_V3_PLAIN[:-1] + b"\x01" + b"\x01\x08" + i64(42)
    msg, end = decode_message(ApiVersionsResponse, 3, data)
    assert msg.finalized_features_epoch == 42
    assert end == len(data)


def test_unknown_tags_are_skipped_at_every_level() -> None:
    unknown = b"\x09\x03abc"  # tag 9, 3 bytes
    big_unknown = b"\xc8\x01" + b"\x82\x01" + b"z" * 130  # tag 200, 130 bytes: varints
    data = (
        i16(0)
        + b"\x02"
        + i16(3)
        + i16(0)
        + i16(12)
        + b"\x02"
        + unknown
        + big_unknown  # nested struct
        + i32(0)
        + b"\x03"
        + b"\x01\x08"
        + i64(5)
        + unknown
        + big_unknown  # top level, mixed with known
    )
    msg, end = decode_message(ApiVersionsResponse, 3, data)
    assert msg == ApiVersionsResponse(api_keys=[ApiVersion(3, 0, 12)], finalized_features_epoch=5)
    assert end == len(data)


def test_nested_tagged_field() -> None:
    result = CreatableTopicResult(name="t", topic_config_error_code=0, num_partitions=3)
    data = encode_message(CreateTopicsResponse(topics=[result]), 5)
    assert data.endswith(b"\x00\x00")  # topic tags and body tags both empty
    result.topic_config_error_code = 40
    data = encode_message(CreateTopicsResponse(topics=[result]), 5)
    assert b"\x01\x00\x02" + i16(40) + b"\x00" in data  # one tag: 0, size 2, INVALID_CONFIG
    assert decode_message(CreateTopicsResponse, 5, data)[0].topics[0] == result


def test_tagged_uuid_array_in_broker_heartbeat_v1() -> None:
    dirs = [uuid.UUID(int=1), uuid.UUID(int=2)]
    msg = BrokerHeartbeatRequest(broker_id=1, broker_epoch=2, offline_log_dirs=dirs)
    data = encode_message(msg, 1)
    assert data.endswith(b"\x01\x00\x21\x03" + dirs[0].bytes + dirs[1].bytes)
    assert decode_message(BrokerHeartbeatRequest, 1, data)[0] == msg
    # v0 has no such field: dropped on encode, default on decode
    v0, _ = decode_message(BrokerHeartbeatRequest, 0, encode_message(msg, 0))
    assert v0.offline_log_dirs == []


def test_tagged_field_longer_than_declared_is_an_error() -> None:
    data = API_VERSIONS_V3_PLAIN[:-1] + b"\x01" + b"\x01\x04" + i64(42)
    with pytest.raises(CodecError) as info:
        decode_message(ApiVersionsResponse, 3, data)
    assert info.value.field == "finalized_features_epoch"


def test_tagged_field_shorter_than_declared_is_skipped_to_its_end() -> None:
    data = API_VERSIONS_V3_PLAIN[:-1] + b"\x01" + b"\x03\x03" + b"\x01\xff\xff"
    msg, end = decode_message(ApiVersionsResponse, 3, data)
    assert msg.zk_migration_ready is True
    assert end == len(data)
