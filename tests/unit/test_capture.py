"""Request capture without a broker: JSON conversion, the line schema, the in-memory view and
the background file writer."""

from __future__ import annotations

import asyncio
import base64
import enum
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.json_schema import validate
from zkbroker.broker.hooks.capture import (
    CAPTURE_LINE_SCHEMA,
    RequestCapture,
    record_to_json,
    record_to_line,
    to_jsonable,
)
from zkbroker.broker.protocol import RequestHeader
from zkbroker.broker.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from zkbroker.broker.protocol.messages.describe_groups import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from zkbroker.broker.server.hooks import Intervention, RequestCall, RequestRecord
from zkbroker.handlers.context import ConnectionInfo
from zkbroker.zk_layout.uuid_text import uuid_to_text


class Colour(enum.Enum):
    RED = 1


@dataclass
class Inner:
    raw: bytes
    ident: uuid.UUID


@dataclass
class Outer:
    inner: Inner
    pair: tuple[int, int]
    tags: dict[int, str] = field(default_factory=dict)
    colour: Colour = Colour.RED
    ratio: float = float("inf")


def _record(
    request: Any,
    response: Any,
    *,
    api: str = "CreateTopics",
    api_key: int = 19,
    version: int = 7,
    client_id: str | None = "cid",
    broker_id: int = 0,
    intervention: Intervention | None = None,
    codes: list[int] | None = None,
) -> RequestRecord:
    conn = ConnectionInfo("0-1", "127.0.0.1:5000", "PLAINTEXT", "kafka-python", "3.0.12")
    header = RequestHeader(
        api_key=api_key, api_version=version, correlation_id=42, client_id=client_id
    )
    call = RequestCall(broker_id, conn, header, api, request)
    return RequestRecord(call, response, codes or [], 1_700_000_000.5, 1234, intervention)


def _create_topics() -> RequestRecord:
    topic_id = uuid.UUID("12345678-1234-5678-1234-567812345678")
    return _record(
        CreateTopicsRequest(
            topics=[CreatableTopic(name="t", num_partitions=3, replication_factor=1)],
            timeout_ms=500,
            validate_only=True,
        ),
        CreateTopicsResponse(topics=[CreatableTopicResult(name="t", topic_id=topic_id)]),
    )


def test_to_jsonable_plain_values() -> None:
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    value = Outer(Inner(b"\x00\xffab", ident), (1, 2), {3: "x"})
    assert to_jsonable(value) == {
        "inner": {"raw": base64.b64encode(b"\x00\xffab").decode(), "ident": str(ident)},
        "pair": [1, 2],
        "tags": {"3": "x"},
        "colour": 1,
        "ratio": "inf",
    }
    assert to_jsonable(None) is None
    assert to_jsonable(True) is True
    assert to_jsonable(bytearray(b"hi")) == "aGk="
    assert to_jsonable(frozenset({1})) == [1]
    assert to_jsonable(Path("/x")) == "/x"
    json.dumps(to_jsonable(value), allow_nan=False)


def test_to_jsonable_generated_messages_use_kafka_text() -> None:
    record = _create_topics()
    response = to_jsonable(record.response)
    (topic,) = response["topics"]
    # Kafka's Uuid.toString(), as kafka-topics.sh prints topic ids.
    assert topic["topic_id"] == uuid_to_text(record.response.topics[0].topic_id)
    assert to_jsonable(record.call.request) == {
        "topics": [
            {
                "name": "t",
                "num_partitions": 3,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout_ms": 500,
        "validate_only": True,
    }


def test_bytes_fields_are_base64() -> None:
    member = DescribedGroupMember(member_id="m", member_metadata=b"\x00\x01meta")
    record = _record(
        DescribeGroupsRequest(groups=["g"]),
        DescribeGroupsResponse(groups=[DescribedGroup(group_id="g", members=[member])]),
        api="DescribeGroups",
        api_key=15,
        version=5,
    )
    line = json.loads(record_to_line(record))
    (got,) = line["response"]["groups"][0]["members"]
    assert base64.b64decode(got["member_metadata"]) == b"\x00\x01meta"
    assert got["member_assignment"] == ""


def test_line_matches_schema_and_fields() -> None:
    record = _create_topics()
    text = record_to_line(record)
    assert text.endswith("\n") and text.count("\n") == 1
    line = json.loads(text)
    assert validate(line, CAPTURE_LINE_SCHEMA) == []
    assert line["time"] == "2023-11-14T22:13:20.500000Z"
    assert {k: line[k] for k in ("broker_id", "connection_id", "client_id")} == {
        "broker_id": 0,
        "connection_id": "0-1",
        "client_id": "cid",
    }
    assert (line["client_software_name"], line["client_software_version"]) == (
        "kafka-python",
        "3.0.12",
    )
    assert (line["api"], line["api_key"], line["api_version"]) == ("CreateTopics", 19, 7)
    assert (line["correlation_id"], line["latency_us"], line["intervention"]) == (42, 1234, None)


@pytest.mark.parametrize(
    ("intervention", "kind"),
    [
        (Intervention(drop=True, source="fault:1"), "drop"),
        (Intervention(error_code=44, source="fault:2"), "error"),
        (Intervention(hold=asyncio.Event(), source="fault:3"), "hold"),
        (Intervention(delay_s=0.5, source="fault:4"), "delay"),
        (Intervention(source="fault:5"), "none"),
    ],
)
def test_intervention_kinds(intervention: Intervention, kind: str) -> None:
    response = None if intervention.drop else CreateTopicsResponse()
    record = _record(CreateTopicsRequest(), response, intervention=intervention, codes=[44])
    line = record_to_json(record)
    assert validate(line, CAPTURE_LINE_SCHEMA) == []
    assert line["intervention"]["source"] == intervention.source
    assert line["intervention"]["kind"] == kind
    assert line["intervention"]["error_code"] == intervention.error_code
    assert line["error_codes"] == [44]


def test_validator_reports_problems() -> None:
    line = record_to_json(_create_topics())
    line["api_version"] = "7"
    line["extra"] = 1
    del line["client_id"]
    line["time"] = "yesterday"
    line["intervention"] = {"source": "x", "kind": "explode", "delay_s": -1, "error_code": None}
    problems = validate(line, CAPTURE_LINE_SCHEMA)
    assert len(problems) == 6, problems
    with pytest.raises(ValueError, match="unsupported"):
        validate(1, {"pattern": "x"})


def test_in_memory_view_filters_and_is_bounded() -> None:
    capture = RequestCapture(max_records=3)
    for version, client in ((5, "a"), (6, "b"), (7, "a"), (7, "b")):
        capture.observe(_record(CreateTopicsRequest(), None, version=version, client_id=client))
    capture.observe(_record(None, None, api="Metadata", api_key=3, version=12, broker_id=2))
    # Bounded: the first record is forgotten.
    assert [r.version for r in capture.requests()] == [7, 7, 12]
    assert [r.client_id for r in capture.requests(api="CreateTopics")] == ["a", "b"]
    assert [r.version for r in capture.requests(client_id="a")] == [7]
    assert [r.api for r in capture.requests(broker_id=2)] == ["Metadata"]
    assert capture.requests(version=6) == []
    found = capture.requests(api="CreateTopics", client_id="b", version=7)
    assert len(found) == 1 and found[0].as_json()["client_id"] == "b"
    capture.clear()
    assert capture.requests() == []
    with pytest.raises(ValueError):
        RequestCapture(max_records=0)


def test_file_writer_appends_lines_in_background(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"earlier": "line"}\n')

    async def scenario() -> None:
        capture = RequestCapture(str(path))
        capture.open()
        capture.open()  # idempotent
        for i in range(50):
            capture.observe(_record(CreateTopicsRequest(timeout_ms=i), CreateTopicsResponse()))
        # observe() only queues: nothing is converted on the request path.
        assert capture.lines_written == 0
        await capture.flushed()
        assert capture.lines_written == 50
        capture.observe(_record(CreateTopicsRequest(timeout_ms=50), None))
        await capture.aclose()
        await capture.aclose()  # idempotent
        assert capture.lines_written == 51
        # After closing, records are still kept in memory, and nothing is written.
        capture.observe(_record(CreateTopicsRequest(timeout_ms=51), None))
        assert len(capture.requests()) == 52

    asyncio.run(scenario())
    lines = path.read_text().splitlines()
    assert lines[0] == '{"earlier": "line"}'
    parsed = [json.loads(line) for line in lines[1:]]
    assert [p["request"]["timeout_ms"] for p in parsed] == list(range(51))
    assert all(validate(p, CAPTURE_LINE_SCHEMA) == [] for p in parsed)
    assert parsed[-1]["response"] is None


def _plain_walk(value: Any) -> Any:
    """The generic field-by-field conversion the compiled converters stand in for."""
    import base64
    import dataclasses
    import math
    import uuid

    from zkbroker.zk_layout.uuid_text import uuid_to_text

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain_walk(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [_plain_walk(v) for v in value]
    if isinstance(value, uuid.UUID):
        return uuid_to_text(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def test_compiled_converters_match_a_plain_walk() -> None:
    from zkbroker.broker.protocol.messages import MESSAGE_DEFS
    from zkbroker.broker.protocol.samples import VARIANTS, sample

    checked = 0
    for definition in MESSAGE_DEFS:
        versions = definition.valid_versions
        for version in range(versions.low, versions.high + 1):
            for variant in VARIANTS:
                message = sample(definition, version, variant)
                assert to_jsonable(message) == _plain_walk(message), definition.name
                checked += 1
    assert checked > 100


def test_cli_capture_option() -> None:
    from zkbroker.broker.cli.main import build_parser, settings_from_args

    args = build_parser().parse_args(["run", "--capture", "requests.jsonl"])
    assert settings_from_args(args).capture_path == "requests.jsonl"
    args = build_parser().parse_args(["run"])
    assert settings_from_args(args).capture_path is None
