"""Bad input and bad values: CodecError only, with a message naming api, version, field, offset.

Truncation at every byte of real frames, seeded random garbage and mutations of valid frames,
absurd lengths, and values that cannot be encoded.
"""

from __future__ import annotations

import contextlib
import random
import struct
import time
import uuid
from typing import Any

import pytest

from zkbroker.broker.protocol import (
    API_SPECS,
    CodecError,
    RequestHeader,
    decode_message,
    decode_request,
    decode_request_body,
    encode_message,
    encode_request,
)
from zkbroker.broker.protocol.messages.create_topics import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from zkbroker.broker.protocol.messages.delete_groups import DeleteGroupsRequest
from zkbroker.broker.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from zkbroker.broker.protocol.messages.offset_fetch import OffsetFetchRequest
from zkbroker.broker.protocol.samples import sample
from zkbroker.broker.protocol.schema import MessageDef


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def metadata_v12_frame() -> bytes:
    header = RequestHeader(api_key=3, api_version=12, correlation_id=1, client_id="c")
    topics = [MetadataRequestTopic(topic_id=uuid.UUID(int=i + 1), name=f"t{i}") for i in range(5)]
    return encode_request(header, MetadataRequest(topics=topics))


def create_topics_frame(version: int) -> bytes:
    topic = CreatableTopic(
        name="orders",
        num_partitions=-1,
        replication_factor=-1,
        assignments=[CreatableReplicaAssignment(0, [1, 2, 3]), CreatableReplicaAssignment(1, [2])],
        configs=[
            CreatableTopicConfig("cleanup.policy", "compact"),
            CreatableTopicConfig("x", None),
        ],
    )
    header = RequestHeader(api_key=19, api_version=version, correlation_id=9, client_id=None)
    return encode_request(header, CreateTopicsRequest(topics=[topic, topic], timeout_ms=5000))


FRAMES = {
    "metadata-v12": metadata_v12_frame(),
    "metadata-v0": encode_request(
        RequestHeader(3, 0, 1, "client"), MetadataRequest(topics=[MetadataRequestTopic(name="a")])
    ),
    "create-topics-v7": create_topics_frame(7),
    "create-topics-v4": create_topics_frame(4),
    "delete-groups-v2": encode_request(
        RequestHeader(42, 2, 3, "c"), DeleteGroupsRequest(groups_names=["g1", "g2"])
    ),
}


@pytest.mark.parametrize("name", sorted(FRAMES))
def test_truncation_at_every_byte_raises_codec_error(name: str) -> None:
    frame = FRAMES[name]
    decode_request(frame)  # the whole frame is fine
    for cut in range(len(frame)):
        with pytest.raises(CodecError) as info:
            decode_request(frame[:cut])
        assert info.value.offset is not None
        assert info.value.offset <= cut


def test_truncation_message_names_api_version_field_and_offset() -> None:
    frame = metadata_v12_frame()
    # header v2 is 12 bytes, the topic count 1, each topic 20 (uuid 16, name 1 + 2, tags 1):
    # topics[3] starts at 73, its name length at 89, its two name bytes at 90.
    with pytest.raises(CodecError) as info:
        decode_request(frame[:91])
    err = info.value
    assert str(err) == (
        "Metadata (key 3) v12 request: truncated at offset 90 reading topics[3].name "
        "(needs 2 bytes, 1 left)"
    )
    assert (err.api_key, err.api_version, err.field, err.offset) == (3, 12, "topics[3].name", 90)


def all_definitions() -> list[tuple[MessageDef, int]]:
    return [
        (definition, version)
        for spec in API_SPECS.values()
        for version in range(spec.min_version, spec.max_version + 1)
        for definition in (spec.request_def, spec.response_def)
    ]


def decode_or_codec_error(definition: MessageDef, version: int, data: bytes) -> None:
    with contextlib.suppress(CodecError):
        decode_message(definition.struct.cls, version, data)


def test_random_garbage_never_raises_anything_else() -> None:
    rng = random.Random(20241021)
    for definition, version in all_definitions():
        for _ in range(25):
            data = rng.randbytes(rng.randrange(0, 48))
            decode_or_codec_error(definition, version, data)


def test_mutated_valid_messages_never_raise_anything_else() -> None:
    rng = random.Random(7)
    for definition, version in all_definitions():
        valid = encode_message(sample(definition, version, "full"), version)
        for _ in range(20):
            data = bytearray(valid)
            for _ in range(rng.randrange(1, 4)):
                choice = rng.random()
                if choice < 0.6 and data:
                    data[rng.randrange(len(data))] = rng.randrange(256)
                elif choice < 0.8:
                    data.insert(rng.randrange(len(data) + 1), rng.choice((0x00, 0x7F, 0x80, 0xFF)))
                elif data:
                    del data[rng.randrange(len(data))]
            decode_or_codec_error(definition, version, bytes(data))


def test_random_frames_through_decode_request() -> None:
    rng = random.Random(99)
    keys = sorted(API_SPECS)
    for _ in range(3000):
        key = rng.choice([*keys, 999])
        header = i16(key) + i16(rng.randrange(-1, 15)) + i32(1)
        frame = header + rng.randbytes(rng.randrange(0, 40))
        with contextlib.suppress(CodecError):
            decode_request(frame)


@pytest.mark.parametrize(
    ("cls", "version", "body"),
    [
        (MetadataRequest, 0, i32(2**31 - 1) + b"\x00" * 16),  # struct array
        (DeleteGroupsRequest, 0, i32(2**31 - 1) + b"\x00" * 16),  # string array
        (  # int32 array inside a struct array
            OffsetFetchRequest,
            0,
            i16(1) + b"g" + i32(1) + i16(1) + b"t" + i32(2**31 - 1) + b"\x00" * 8,
        ),
        (MetadataRequest, 9, b"\xff\xff\xff\xff\x07" + b"\x00" * 15),  # compact count 2**31 - 2
        (MetadataRequest, 9, b"\xff\xff\xff\xff\xff\x01" + b"\x00" * 14),  # varint too long
        (MetadataRequest, 0, i32(1) + i16(32767) + b"a"),  # string longer than the frame
    ],
)
def test_absurd_lengths_fail_fast(cls: type, version: int, body: bytes) -> None:
    start = time.perf_counter()
    with pytest.raises(CodecError):
        decode_message(cls, version, body)
    assert time.perf_counter() - start < 0.5


def test_absurd_array_message() -> None:
    with pytest.raises(CodecError) as info:
        decode_message(MetadataRequest, 0, i32(2**31 - 1) + b"\x00" * 16)
    assert "Tried to allocate a collection of size 2147483647, but there are only 16" in str(
        info.value
    )
    assert info.value.field == "topics"
    assert info.value.offset == 0


def test_bad_utf8_and_bad_lengths() -> None:
    # As Kafka's readers: invalid UTF-8 becomes U+FFFD, any negative length of a nullable field
    # is null, a null where none is allowed is refused (tests/unit/test_codec_limits.py has more).
    body, _ = decode_message(MetadataRequest, 0, i32(1) + i16(2) + b"\xff\xfe")
    assert body.topics[0].name == "\ufffd\ufffd"
    with pytest.raises(CodecError, match=r"non-nullable field topics\[0\]\.name") as info:
        decode_message(MetadataRequest, 0, i32(1) + i16(-1))
    assert info.value.field == "topics[0].name"
    assert decode_message(MetadataRequest, 1, i32(-2))[0].topics is None


def test_unknown_version_and_api() -> None:
    with pytest.raises(CodecError, match="v13") as info:
        decode_message(MetadataRequest, 13, b"")
    assert (info.value.api_key, info.value.api_version) == (3, 13)
    with pytest.raises(CodecError):
        encode_message(MetadataRequest(), -1)
    with pytest.raises(CodecError):
        encode_message(object(), 0)
    with pytest.raises(CodecError):
        decode_message(dict, 0, b"")
    header = RequestHeader(api_key=3, api_version=99, correlation_id=1, client_id="x")
    with pytest.raises(CodecError):
        decode_request_body(header, b"", 0)


def test_trailing_bytes_after_the_body_are_ignored() -> None:
    frame = FRAMES["metadata-v12"]
    assert decode_request(frame + b"\x01\x02\x03") == decode_request(frame)


def response_with(**partition: Any) -> MetadataResponse:
    return MetadataResponse(
        topics=[
            MetadataResponseTopic(name="ok", partitions=[MetadataResponsePartition()]),
            MetadataResponseTopic(name="bad", partitions=[MetadataResponsePartition(**partition)]),
        ]
    )


@pytest.mark.parametrize(
    ("msg", "version", "field", "fragment"),
    [
        (response_with(leader_id=None), 12, "topics[1].partitions[0].leader_id", "not nullable"),
        (response_with(leader_id="1"), 12, "topics[1].partitions[0].leader_id", "expected int"),
        (response_with(error_code=70000), 12, "topics[1].partitions[0].error_code", "int16"),
        (response_with(isr_nodes=[1, None]), 12, "topics[1].partitions[0].isr_nodes[1]", "None"),
        (response_with(replica_nodes=None), 3, "topics[1].partitions[0].replica_nodes", "None"),
        (MetadataResponse(topics=[MetadataResponseTopic(name=None)]), 11, "topics[0].name", "v11"),
        (
            MetadataResponse(topics=[{"name": "x"}]),  # type: ignore[list-item]
            12,
            "topics[0]",
            "expected MetadataResponseTopic",
        ),
        (MetadataResponse(topics=[None]), 12, "topics[0]", "None"),  # type: ignore[list-item]
        (MetadataResponse(cluster_id=b"x"), 12, "cluster_id", "expected str"),  # type: ignore[arg-type]
        (MetadataResponse(cluster_id="\ud800"), 12, "cluster_id", "UTF-8"),
        (MetadataResponse(cluster_id="x" * 40000), 12, "cluster_id", "32767"),
        (MetadataResponse(cluster_id="x" * 40000), 5, "cluster_id", "32767"),
        (
            MetadataResponse(topics=[MetadataResponseTopic(topic_id="x")]),  # type: ignore[arg-type]
            12,
            "topics[0].topic_id",
            "UUID",
        ),
        (MetadataRequest(topics=[MetadataRequestTopic(name=None)]), 9, "topics[0].name", "None"),
        (
            MetadataRequest(allow_auto_topic_creation=None),  # type: ignore[arg-type]
            9,
            "allow_auto_topic_creation",
            "nullable",
        ),
    ],
)
def test_encode_errors_name_the_field(msg: Any, version: int, field: str, fragment: str) -> None:
    with pytest.raises(CodecError) as info:
        encode_message(msg, version)
    err = info.value
    assert err.field == field, str(err)
    assert fragment in str(err)
    assert err.api_key == 3
    assert err.api_version == version
    assert err.offset is None
    assert str(err).startswith(f"Metadata (key 3) v{version} ")


def test_nullable_name_is_fine_where_nullable() -> None:
    msg = MetadataResponse(topics=[MetadataResponseTopic(name=None)])
    assert decode_message(MetadataResponse, 12, encode_message(msg, 12))[0] == msg
