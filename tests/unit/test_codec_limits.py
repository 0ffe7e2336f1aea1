"""Parse-time limits exactly as Kafka's generated readers apply them (MessageDataGenerator's
`generateVariableLengthReader`, `ByteUtils.readUnsignedVarint`, issue 17 §4): both the compiled
fast path and the checked codec (which explains the failure) agree on every case."""

from __future__ import annotations

import struct

import pytest

from zkbroker.broker.protocol import CodecError, decode_message, encode_message
from zkbroker.broker.protocol import checked as checked_codec
from zkbroker.broker.protocol.codec import definition_of
from zkbroker.broker.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from zkbroker.broker.protocol.messages.delete_groups import DeleteGroupsRequest
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.protocol.primitives import (
    as_int32,
    encode_uvarint,
    read_compact_length,
    read_uvarint,
)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


MARKER = "M" * 200  # a compact string with a 2-byte length prefix, replaced below


def create_topics_v7_with_value(value_bytes: bytes) -> bytes:
    """A CreateTopics v7 body whose one config value is `value_bytes` (any length: built by
    hand, since zkbroker's encoder refuses strings over 32767 bytes as Kafka's writers do)."""
    body = encode_message(
        CreateTopicsRequest(
            topics=[
                CreatableTopic(
                    name="t",
                    num_partitions=1,
                    replication_factor=1,
                    configs=[CreatableTopicConfig(name="cleanup.policy", value=MARKER)],
                )
            ],
            timeout_ms=1000,
        ),
        7,
    )
    old = encode_uvarint(len(MARKER) + 1) + MARKER.encode()
    assert body.count(old) == 1
    return body.replace(old, encode_uvarint(len(value_bytes) + 1) + value_bytes)


def decode_both_ways(cls: type, version: int, data: bytes) -> object:
    """The compiled decoder's result, checked against the checked codec's."""
    fast, _ = decode_message(cls, version, data)
    definition = definition_of(cls)
    slow, _ = checked_codec.decode(
        definition, version, data, 0, checked_codec.context_for(definition, version)
    )
    assert fast == slow
    return fast


def test_compact_string_longer_than_32767_bytes_is_refused_with_kafkas_words() -> None:
    data = create_topics_v7_with_value(b"x" * 32768)
    with pytest.raises(CodecError) as info:
        decode_message(CreateTopicsRequest, 7, data)
    assert "string field topics[0].configs[0].value had invalid length 32768" in str(info.value)
    assert info.value.field == "topics[0].configs[0].value"


def test_compact_string_of_exactly_32767_bytes_is_read() -> None:
    body = decode_both_ways(CreateTopicsRequest, 7, create_topics_v7_with_value(b"x" * 32767))
    assert len(body.topics[0].configs[0].value) == 32767  # type: ignore[attr-defined]


def test_a_one_megabyte_value_is_refused_not_read() -> None:
    data = create_topics_v7_with_value(b"1" * 1_000_000)
    with pytest.raises(CodecError, match="had invalid length 1000000"):
        decode_message(CreateTopicsRequest, 7, data)


def test_compact_string_array_element_over_the_limit_is_refused() -> None:
    # DeleteGroups v2 is flexible: a compact array of compact strings.
    element = b"g" * 40000
    data = b"\x02" + encode_uvarint(len(element) + 1) + element + b"\x00"
    with pytest.raises(
        CodecError, match=r"string field groups_names\[0\] had invalid length 40000"
    ):
        decode_message(DeleteGroupsRequest, 2, data)


def test_array_count_larger_than_the_bytes_left() -> None:
    with pytest.raises(CodecError) as info:
        decode_message(MetadataRequest, 1, i32(5) + b"\x00\x01x")
    assert "Tried to allocate a collection of size 5, but there are only 3 bytes remaining." in str(
        info.value
    )


def test_negative_length_of_a_non_nullable_field_is_refused() -> None:
    with pytest.raises(CodecError, match="non-nullable field topics was serialized as null"):
        decode_message(MetadataRequest, 0, i32(-1))  # v0's topics are not nullable
    with pytest.raises(CodecError, match=r"non-nullable field topics\[0\]\.name was serialized"):
        decode_message(MetadataRequest, 1, i32(1) + i16(-7))


@pytest.mark.parametrize("length", [-1, -2, -1000])
def test_any_negative_length_of_a_nullable_field_is_null(length: int) -> None:
    # Kafka: `if (arrayLength < 0) this.topics = null`, not only -1.
    body = decode_both_ways(MetadataRequest, 1, i32(length))
    assert body.topics is None  # type: ignore[attr-defined]


def test_compact_lengths_are_java_ints() -> None:
    # ff ff ff ff 0f is 2**32 - 1 unsigned: Kafka's readUnsignedVarint makes it -1, so the
    # compact length is -2: null for a nullable field (Metadata v9's topics) ...
    body = decode_both_ways(MetadataRequest, 9, b"\xff\xff\xff\xff\x0f" + b"\x00" * 4)
    assert body.topics is None  # type: ignore[attr-defined]
    # ... and 0x80000000 - 1 overflows to Integer.MAX_VALUE: far more than the bytes left.
    with pytest.raises(CodecError, match="collection of size 2147483647"):
        decode_message(MetadataRequest, 9, b"\x80\x80\x80\x80\x08" + b"\x00" * 3)
    assert read_uvarint(b"\xff\xff\xff\xff\x0f", 0) == (-1, 5)
    assert read_compact_length(b"\x80\x80\x80\x80\x08", 0) == (2**31 - 1, 5)
    assert read_compact_length(b"\x00", 0) == (-1, 1)
    assert as_int32(2**32 + 5) == 5


def test_varint_longer_than_five_bytes_is_refused() -> None:
    with pytest.raises(CodecError, match="longer than 5 bytes"):
        decode_message(MetadataRequest, 9, b"\x80\x80\x80\x80\x80\x01" + b"\x00" * 4)


def test_invalid_utf8_is_replaced_as_java_does_not_refused() -> None:
    body = decode_both_ways(MetadataRequest, 1, i32(1) + i16(3) + b"a\xffb")
    assert body.topics[0].name == "a\ufffdb"  # type: ignore[attr-defined]


def test_negative_tagged_field_size_is_refused() -> None:
    # MetadataRequest v9: no topics, three bools, then one tagged field whose size is -1 as a
    # Java int.
    data = b"\x01" + b"\x00" * 3 + b"\x01" + b"\x05" + b"\xff\xff\xff\xff\x0f"
    with pytest.raises(CodecError, match="has size -1"):
        decode_message(MetadataRequest, 9, data)
