"""JSON helpers shared by the znode classes: compact encoding and typed, strict field access.

Encoding is compact (``separators=(",", ":")``), UTF-8, non-ASCII written raw (as Jackson does),
and keeps the key order of the dict it is given; the znode classes build their dicts in the key
order of the examples in ``docs/kafka-behaviour.md`` §1 (Kafka's own order is unspecified).

Decoding mirrors what Kafka's ``kafka.utils.json`` accepts: integers must be JSON integers that fit
the Java type (``to[Int]`` rejects strings, floats and booleans), strings must be JSON strings, and
``NaN``/``Infinity`` are not JSON. Every failure becomes ``ZnodeFormatError(where, reason)``.

Deliberately not here: any knowledge of a particular znode (which keys are required, which
versions exist); and no leniency switches beyond ``try_parse`` — a class that must read garbage
as "empty" (as Kafka does for a few nodes) decides that itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from zkbroker.zk_layout.errors import ZnodeFormatError

INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1


class _Unparseable:
    """Marker returned by ``try_parse`` for bytes that are not JSON."""

    def __repr__(self) -> str:
        return "UNPARSEABLE"


UNPARSEABLE: Final = _Unparseable()


def dumps(value: Any) -> bytes:
    """Compact JSON as UTF-8 bytes."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
        "utf-8"
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _loads(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)


def parse(data: bytes | None, where: str) -> Any:
    """Parse JSON or raise ``ZnodeFormatError``."""
    if not data:
        raise ZnodeFormatError(where, "no data (expected JSON)")
    try:
        return _loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ZnodeFormatError(where, f"not JSON: {exc}") from None


def try_parse(data: bytes | None) -> Any:
    """Parse JSON, or return ``UNPARSEABLE`` (Kafka's ``Json.parseBytes`` returning None)."""
    if not data:
        return UNPARSEABLE
    try:
        return _loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return UNPARSEABLE


def parse_object(data: bytes | None, where: str) -> dict[str, Any]:
    """Parse JSON that must be an object."""
    value = parse(data, where)
    return as_object(value, where, "the document")


def as_object(value: Any, where: str, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ZnodeFormatError(where, f"{what} must be a JSON object, got {type_name(value)}")
    return value


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def check_int(value: Any, where: str, what: str, *, bits: int = 32) -> int:
    """``value`` must be a JSON integer in the signed ``bits``-bit range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZnodeFormatError(where, f"{what} must be an integer, got {type_name(value)}")
    lo, hi = (INT32_MIN, INT32_MAX) if bits == 32 else (INT64_MIN, INT64_MAX)
    if not lo <= value <= hi:
        raise ZnodeFormatError(where, f"{what} is out of range for a {bits}-bit integer: {value}")
    return value


def check_str(value: Any, where: str, what: str) -> str:
    if not isinstance(value, str):
        raise ZnodeFormatError(where, f"{what} must be a string, got {type_name(value)}")
    return value


def require(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise ZnodeFormatError(where, f"missing field {key!r}")
    return obj[key]


def get_int(obj: Mapping[str, Any], key: str, where: str, *, bits: int = 32) -> int:
    return check_int(require(obj, key, where), where, repr(key), bits=bits)


def get_opt_int(obj: Mapping[str, Any], key: str, where: str, default: int) -> int:
    """Optional integer field; absent or null gives ``default``."""
    value = obj.get(key)
    if value is None:
        return default
    return check_int(value, where, repr(key))


def get_str(obj: Mapping[str, Any], key: str, where: str) -> str:
    return check_str(require(obj, key, where), where, repr(key))


def get_opt_str(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    """Optional string field; absent or null gives None."""
    value = obj.get(key)
    if value is None:
        return None
    return check_str(value, where, repr(key))


def get_list(obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = require(obj, key, where)
    if not isinstance(value, list):
        raise ZnodeFormatError(where, f"{key!r} must be an array, got {type_name(value)}")
    return value


def get_object(obj: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    return as_object(require(obj, key, where), where, repr(key))


def int_list(value: Any, where: str, what: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ZnodeFormatError(where, f"{what} must be an array, got {type_name(value)}")
    return tuple(check_int(v, where, f"an element of {what}") for v in value)


def get_int_list(obj: Mapping[str, Any], key: str, where: str) -> tuple[int, ...]:
    return int_list(require(obj, key, where), where, repr(key))


def parse_decimal_int(text: str, where: str, what: str, *, bits: int = 32) -> int:
    """Java ``Integer.parseInt``/``Long.parseLong`` rules: optional sign, ASCII digits only."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        raise ZnodeFormatError(where, f"{what} is not a decimal integer: {text!r}")
    return check_int(int(text), where, what, bits=bits)


def lenient_timestamp(raw: Any) -> int:
    """Epoch-ms ``timestamp`` fields (a string in Kafka's JSON): Kafka never parses them, so
    anything that is not a decimal string or integer reads as -1 instead of failing."""
    if isinstance(raw, bool):
        return -1
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str):
        try:
            return parse_decimal_int(raw, "", "timestamp", bits=64)
        except ZnodeFormatError:
            return -1
    return -1
