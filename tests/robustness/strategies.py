"""Hypothesis strategies that build valid-shaped requests from the message definitions.

`request_strategy(api_key, version)` walks the generated `MessageDef` of the API's request
(`zkbroker.broker.protocol.messages`): every field present at `version`, with its type (int8..int64
within range, uint16, float64, bool, uuid, string, bytes, records), nullability (None where
the version allows it), arrays (of scalars or structs, null where nullable) and tagged
fields (plain fields of the dataclass; the codec writes the non-default ones in the tagged
section). Whatever it draws encodes at `version`, so the broker must answer it.

Values are biased towards what breaks parsers and handlers (boundaries, -1, 0, empty, the
cluster's own topic and group names) but kept out of the known issue-17 hazards that are
being fixed now: partition counts and replication factors stay small (the huge ones have
their strict xfails in `test_known_bugs.py`), timeouts stay under a second (a legitimate
wait would otherwise hold the connection), strings stay far below 32,767 bytes.

Deliberately not here: sending, checking, and invalid encodings (`frames` mutates bytes).
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from tests.robustness.frames import FUZZ_GROUP, FUZZ_TOPIC
from zkbroker.broker.protocol import API_SPECS
from zkbroker.broker.protocol.primitives import INT_RANGES
from zkbroker.broker.protocol.schema import FieldDef, StructDef

_NAMES = st.one_of(
    st.text(max_size=16),
    st.sampled_from([FUZZ_TOPIC, FUZZ_GROUP, "fuzz-new", "", ".", "..", "a" * 249, "a" * 250]),
    st.from_regex(r"[a-zA-Z0-9._-]{1,12}", fullmatch=True),
)
_NAME_ATTRS = frozenset(
    {
        "name",
        "topic",
        "topic_name",
        "resource_name",
        "group_id",
        "group",
        "groups",
        "key",
        "topics",
        "topic_names",
        "groups_names",
        "coordinator_keys",
        "member_id",
    }
)
_SMALL_COUNT = st.one_of(st.integers(-3, 12), st.sampled_from([-1, 0]))
# Fields whose large values are known issue-17 hazards or legitimate long waits.
_INT_OVERRIDES: dict[str, Any] = {
    "num_partitions": _SMALL_COUNT,
    "replication_factor": _SMALL_COUNT,
    "count": _SMALL_COUNT,
    "timeout_ms": st.integers(-1, 500),
    "rebalance_timeout_ms": st.integers(-1, 500),
}


def _int(type_name: str) -> st.SearchStrategy[int]:
    low, high = INT_RANGES[type_name]
    edges = sorted({low, high, max(low, -1), 0, 1, min(high, 0x7FFF), low + 1, high - 1})
    return st.one_of(
        st.integers(max(low, -2), min(high, 16)), st.sampled_from(edges), st.integers(low, high)
    )


def _scalar(type_name: str, attr: str) -> st.SearchStrategy[Any]:
    if type_name in INT_RANGES:
        override = _INT_OVERRIDES.get(attr)
        return override if override is not None else _int(type_name)
    if type_name == "bool":
        return st.booleans()
    if type_name == "float64":
        return st.floats(allow_nan=True, allow_infinity=True)
    if type_name == "uuid":
        return st.one_of(st.just(uuid.UUID(int=0)), st.uuids())
    if type_name == "string":
        return _NAMES if attr in _NAME_ATTRS else st.text(max_size=24)
    if type_name in ("bytes", "records"):
        return st.binary(max_size=48)
    raise ValueError(f"no strategy for type {type_name}")


def _field(f: FieldDef, version: int, depth: int) -> st.SearchStrategy[Any]:
    if f.is_array:
        if f.struct is not None:
            element = _struct(f.struct, version, depth + 1)
        else:
            element = _scalar(f.element_type, f.attr)
        value: st.SearchStrategy[Any] = st.lists(element, max_size=3 if depth < 2 else 2)
    elif f.struct is not None:
        value = _struct(f.struct, version, depth + 1)
    else:
        value = _scalar(f.type, f.attr)
    if version in f.nullable:
        value = st.one_of(st.none(), value)
    return value


def _struct(sd: StructDef, version: int, depth: int = 0) -> st.SearchStrategy[Any]:
    return st.builds(sd.cls, **{f.attr: _field(f, version, depth) for f in sd.fields_in(version)})


def request_strategy(api_key: int, version: int) -> st.SearchStrategy[Any]:
    """Requests of `api_key` that encode at `version`."""
    return _struct(API_SPECS[api_key].request_def.struct, version)
