"""Round trips for every API, every version Kafka 3.9 defines, request and response.

For each (api, version, direction) a populated instance is built from the definitions by
``zkbroker.broker.protocol.samples`` (every field present at that version gets a non-default value;
variants add nulls, empty values and long values that need multi-byte varints and the codec's
slow paths), encoded, decoded and compared. The compiled codec is also checked against the
interpretive ``checked`` codec, which implements the same wire rules without code generation.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from zkbroker.broker.protocol import API_SPECS, checked, decode_message, encode_message
from zkbroker.broker.protocol.compiler import build_decoder, build_encoder
from zkbroker.broker.protocol.messages.headers import REQUEST_HEADER, RESPONSE_HEADER
from zkbroker.broker.protocol.samples import VARIANTS, sample
from zkbroker.broker.protocol.schema import FieldDef, MessageDef, StructDef, Versions


def cases() -> list[Any]:
    out = []
    for _key, spec in sorted(API_SPECS.items()):
        for version in range(spec.min_version, spec.max_version + 1):
            for definition in (spec.request_def, spec.response_def):
                out.append(pytest.param(definition, version, id=f"{definition.name}-v{version}"))
    for definition in (REQUEST_HEADER, RESPONSE_HEADER):
        valid = definition.valid_versions
        for version in range(valid.low, valid.high + 1):
            out.append(pytest.param(definition, version, id=f"{definition.name}-v{version}"))
    return out


@pytest.mark.parametrize(("definition", "version"), cases())
@pytest.mark.parametrize("variant", VARIANTS)
def test_round_trip(definition: MessageDef, version: int, variant: str) -> None:
    original = sample(definition, version, variant)
    data = encode_message(original, version)
    decoded, end = decode_message(definition.struct.cls, version, data)
    assert end == len(data)
    assert decoded == original

    # Same bytes and same objects as the independent, interpretive implementation.
    ctx = checked.context_for(definition, version)
    assert checked.encode(definition, version, original, ctx) == data
    assert checked.decode(definition, version, data, 0, ctx) == (decoded, end)


@pytest.mark.parametrize(("definition", "version"), cases())
def test_decode_at_offset_ignores_surroundings(definition: MessageDef, version: int) -> None:
    original = sample(definition, version, "full")
    data = encode_message(original, version)
    decoded, end = decode_message(definition.struct.cls, version, b"\xee" * 5 + data + b"junk", 5)
    assert decoded == original
    assert end == 5 + len(data)


def test_fields_absent_from_a_version_are_dropped() -> None:
    from zkbroker.broker.protocol.messages.metadata import MetadataResponse, MetadataResponseTopic

    full = MetadataResponse(
        throttle_time_ms=5,
        cluster_id="c",
        controller_id=2,
        topics=[MetadataResponseTopic(name="t", topic_id=uuid.uuid4(), is_internal=True)],
    )
    decoded, _ = decode_message(MetadataResponse, 0, encode_message(full, 0))
    # v0 has none of these: they come back as defaults.
    assert decoded.throttle_time_ms == 0
    assert decoded.cluster_id is None
    assert decoded.controller_id == -1
    assert decoded.topics[0].topic_id == uuid.UUID(int=0)
    assert decoded.topics[0].is_internal is False
    assert decoded.topics[0].name == "t"


def test_int_ranges_at_the_edges() -> None:
    from zkbroker.broker.protocol.messages.describe_configs import DescribeConfigsResponse

    for throttle in (-(2**31), 2**31 - 1, 0, -1):
        msg = DescribeConfigsResponse(throttle_time_ms=throttle)
        for version in range(5):
            data = encode_message(msg, version)
            assert decode_message(DescribeConfigsResponse, version, data)[0] == msg


# A made-up message exercising what the Kafka 3.9 specs in scope do not use (float64, records,
# plain and nullable struct fields, tagged structs, arrays of strings/uuids/bools), so the
# compiler is ready for specs added later.


@dataclass(slots=True)
class _Inner:
    x: int = 0
    label: str | None = None


@dataclass(slots=True)
class _Synthetic:
    ratio: float = 0.0
    inner: _Inner = field(default_factory=_Inner)
    maybe: _Inner | None = None
    blob: bytes | None = None
    names: list[str] = field(default_factory=list)
    ids: list[uuid.UUID] = field(default_factory=list)
    flags: list[bool] | None = field(default_factory=list)
    port: int = 0
    extra: _Inner | None = None


_INNER = StructDef(
    "Inner",
    _Inner,
    (
        FieldDef("X", "x", "int64", Versions(0), default=0),
        FieldDef("Label", "label", "string", Versions(0), nullable=Versions(0)),
    ),
)
_SYNTHETIC = MessageDef(
    name="SyntheticRequest",
    kind="request",
    api_key=999,
    valid_versions=Versions(0, 1),
    flexible_versions=Versions(1),
    struct=StructDef(
        "SyntheticRequest",
        _Synthetic,
        (
            FieldDef("Ratio", "ratio", "float64", Versions(0), default=0.0),
            FieldDef("Inner", "inner", "Inner", Versions(0), default=(), struct=_INNER),
            FieldDef("Maybe", "maybe", "Inner", Versions(0), nullable=Versions(0), struct=_INNER),
            FieldDef("Blob", "blob", "records", Versions(0), nullable=Versions(0)),
            FieldDef("Names", "names", "[]string", Versions(0), default=()),
            FieldDef("Ids", "ids", "[]uuid", Versions(0), default=()),
            FieldDef("Flags", "flags", "[]bool", Versions(0), nullable=Versions(0), default=()),
            FieldDef("Port", "port", "uint16", Versions(0), default=0),
            FieldDef(
                "Extra",
                "extra",
                "Inner",
                Versions(1),
                tag=0,
                tagged=Versions(1),
                struct=_INNER,
            ),
        ),
    ),
)


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("nulls", [False, True])
def test_synthetic_features(version: int, nulls: bool) -> None:
    msg = _Synthetic(
        ratio=-2.5,
        inner=_Inner(1 << 40, None if nulls else "é"),
        maybe=None if nulls else _Inner(-3, "m"),
        blob=None if nulls else b"\x00\x01" * 200,
        names=["a", "bé", "c" * 300],
        ids=[uuid.UUID(int=5), uuid.UUID(int=6)],
        flags=None if nulls else [True, False, True],
        port=65535,
        extra=_Inner(7, "t") if version == 1 else None,
    )
    encode = build_encoder(_SYNTHETIC, version)
    decode = build_decoder(_SYNTHETIC, version)
    out = bytearray()
    encode(msg, out)
    data = bytes(out)
    assert decode(data, 0) == (msg, len(data))
    ctx = checked.context_for(_SYNTHETIC, version)
    assert checked.encode(_SYNTHETIC, version, msg, ctx) == data
    assert checked.decode(_SYNTHETIC, version, data, 0, ctx) == (msg, len(data))
    # A nullable struct is an int8 marker (-1 null, 1 present) before its fields.
    # ratio (8) + inner.x (8) + inner.label (legacy: 2 + len; compact: 1 + len, then the
    # inner struct's empty tag section): 18 bytes with a null label, 20 with "é".
    marker_at = 18 if nulls else 20
    assert data[marker_at] == (0xFF if nulls else 0x01)
