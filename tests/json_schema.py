"""A tiny JSON Schema validator for the tests: the subset
`zkbroker.broker.hooks.capture.CAPTURE_LINE_SCHEMA` uses (type, required, properties,
additionalProperties, items, enum, minimum, and the date-time format), so the project needs no
jsonschema dependency.

`validate(instance, schema)` returns the list of problems, each as "path: what"; empty when
the instance is valid. Keywords outside that subset are refused, so a schema can never
silently use one this validator would ignore.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}
_KNOWN = {
    "$schema",
    "title",
    "type",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "enum",
    "minimum",
    "format",
}


def _is(value: Any, type_name: str) -> bool:
    if type_name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[type_name])


def validate(instance: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    unknown = set(schema) - _KNOWN
    if unknown:
        raise ValueError(f"{path}: unsupported schema keywords {sorted(unknown)}")
    problems: list[str] = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(instance, t) for t in types):
            return [f"{path}: {instance!r} is not of type {types}"]
    if "enum" in schema and instance not in schema["enum"]:
        problems.append(f"{path}: {instance!r} is not one of {schema['enum']}")
    if "minimum" in schema and _is(instance, "number") and instance < schema["minimum"]:
        problems.append(f"{path}: {instance!r} is below {schema['minimum']}")
    if schema.get("format") == "date-time" and isinstance(instance, str):
        try:
            parsed = datetime.fromisoformat(instance)
        except ValueError:
            problems.append(f"{path}: {instance!r} is not an ISO-8601 date-time")
        else:
            if parsed.tzinfo is None:
                problems.append(f"{path}: {instance!r} has no time zone")
    if isinstance(instance, dict):
        for name in schema.get("required", []):
            if name not in instance:
                problems.append(f"{path}: {name!r} is required")
        properties = schema.get("properties", {})
        for name, value in instance.items():
            if name in properties:
                problems += validate(value, properties[name], f"{path}.{name}")
            elif schema.get("additionalProperties") is False:
                problems.append(f"{path}: {name!r} is not allowed")
    if isinstance(instance, list) and "items" in schema:
        for i, item in enumerate(instance):
            problems += validate(item, schema["items"], f"{path}[{i}]")
    return problems
