"""Kafka's JSON message specs read into models: what scripts/generate_messages.py renders.

`load_spec` reads one spec file (they carry ``//`` comments); `build_message` turns a request,
response or header spec into a `MessageModel` of `StructModel`s and `FieldModel`s, with
attributes in snake_case and class names handed out by a `ClassNamer`. Kafka's generator rules
are followed where the model needs them (a JSON boolean default reads as "true"/"false").

Not here: rendering Python (scripts/generate_messages.py, which imports this module after
putting the repo root on sys.path), the specs' text (never copied).
"""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkbroker.broker.protocol.schema import FIXED_TYPES, PRIMITIVE_TYPES, Versions

# The public RequestHeader (used across zkbroker) names these two fields differently.
ATTR_RENAMES = {
    ("RequestHeader", "RequestApiKey"): "api_key",
    ("RequestHeader", "RequestApiVersion"): "api_version",
}


class SpecError(Exception):
    """The spec files cannot be turned into definitions."""


# --------------------------------------------------------------------------------------------
# Reading specs


def load_spec(path: Path) -> dict[str, Any]:
    """Parse one spec file; they carry ``//`` line comments, which JSON does not allow."""
    text = path.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
    try:
        data = json.loads("\n".join(lines))
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path.name}: {exc}") from exc
    if not isinstance(data, dict):
        raise SpecError(f"{path.name}: not a JSON object")
    return data


def snake_case(name: str) -> str:
    """``ThrottleTimeMs`` -> ``throttle_time_ms``, ``TopicID`` -> ``topic_id``."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    return text + "_" if keyword.iskeyword(text) else text


def module_name(api_name: str) -> str:
    return snake_case(api_name)


# --------------------------------------------------------------------------------------------
# Model


@dataclass
class FieldModel:
    name: str
    attr: str
    type: str
    versions: Versions
    nullable: Versions
    tag: int | None
    tagged: Versions
    flexible: Versions | None
    default_text: str | None
    struct: StructModel | None = None

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.type.startswith("[]") else self.type

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def null_default(self) -> bool:
        return self.default_text == "null"

    @property
    def may_be_none(self) -> bool:
        return not self.nullable.empty or self.null_default


@dataclass
class StructModel:
    spec_name: str
    class_name: str
    owner: str  # "MetadataResponse.Topics", for the docstring
    versions: Versions
    fields: list[FieldModel] = field(default_factory=list)


@dataclass
class MessageModel:
    name: str
    kind: str
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    listeners: tuple[str, ...]
    deprecated_versions: Versions
    struct: StructModel


class ClassNamer:
    """Hands out class names within one module, disambiguating clashes deterministically."""

    # The first struct met (request before response, fields in spec order, depth first) keeps
    # the spec's name; a later, different struct of that name becomes <MessageName><StructName>,
    # then gets a numeric suffix. The Kafka 3.9 specs in scope have no such clash.

    def __init__(self) -> None:
        self.owners: dict[str, object] = {}

    def claim(self, wanted: str, identity: object, message_name: str) -> str:
        for name, owner in self.owners.items():
            if owner is identity:
                return name
        candidates = [wanted, f"{message_name}{wanted}"]
        for candidate in candidates:
            if candidate not in self.owners:
                self.owners[candidate] = identity
                return candidate
        n = 2
        while f"{candidates[1]}{n}" in self.owners:
            n += 1
        self.owners[f"{candidates[1]}{n}"] = identity
        return f"{candidates[1]}{n}"


def parse_versions(raw: Any, where: str) -> Versions:
    if not isinstance(raw, str):
        raise SpecError(f"{where}: versions must be a string, got {raw!r}")
    try:
        return Versions.parse(raw)
    except ValueError as exc:
        raise SpecError(f"{where}: bad versions {raw!r}") from exc


def build_message(spec: dict[str, Any], namer: ClassNamer) -> MessageModel:
    name = spec["name"]
    kind = spec["type"]
    common = {s["name"]: s for s in spec.get("commonStructs", [])}
    common_models: dict[str, StructModel] = {}
    flexible = parse_versions(spec["flexibleVersions"], name)

    def build_fields(raw_fields: list[dict[str, Any]], owner: str) -> list[FieldModel]:
        out: list[FieldModel] = []
        seen: set[str] = set()
        for raw in raw_fields:
            out.append(build_field(raw, owner))
            if out[-1].attr in seen:
                raise SpecError(f"{owner}: two fields map to attribute {out[-1].attr}")
            seen.add(out[-1].attr)
        return out

    def build_field(raw: dict[str, Any], owner: str) -> FieldModel:
        fname = raw["name"]
        where = f"{owner}.{fname}"
        ftype = raw["type"]
        tag = raw.get("tag")
        model = FieldModel(
            name=fname,
            attr=ATTR_RENAMES.get((name, fname), snake_case(fname)),
            type=ftype,
            versions=parse_versions(raw["versions"], where),
            nullable=parse_versions(raw.get("nullableVersions", "none"), where),
            tag=None if tag is None else int(tag),
            tagged=parse_versions(raw.get("taggedVersions", "none"), where),
            flexible=(
                parse_versions(raw["flexibleVersions"], where)
                if "flexibleVersions" in raw
                else None
            ),
            default_text=None if "default" not in raw else _default_text(raw["default"]),
        )
        if (model.tag is None) != model.tagged.empty:
            raise SpecError(f"{where}: tag and taggedVersions must come together")
        elem = model.element_type
        if elem in PRIMITIVE_TYPES:
            if "fields" in raw:
                raise SpecError(f"{where}: primitive type with fields")
            if elem in FIXED_TYPES and not model.is_array and not model.nullable.empty:
                raise SpecError(f"{where}: {elem} cannot be nullable")
            return model
        if not elem[:1].isupper():
            raise SpecError(f"{where}: unknown type {ftype!r}")
        # A struct: inline fields, or one of the file's common structs.
        if "fields" in raw:
            struct = StructModel(
                spec_name=elem,
                class_name=namer.claim(elem, raw, name),
                owner=where,
                versions=model.versions,
            )
            struct.fields = build_fields(raw["fields"], f"{owner}.{fname}[]")
        elif elem in common:
            if elem not in common_models:
                raw_struct = common[elem]
                struct = StructModel(
                    spec_name=elem,
                    class_name=namer.claim(elem, raw_struct, name),
                    owner=f"{name} common struct",
                    versions=parse_versions(raw_struct.get("versions", "0+"), where),
                )
                common_models[elem] = struct
                struct.fields = build_fields(raw_struct["fields"], f"{name}.{elem}")
            struct = common_models[elem]
        else:
            raise SpecError(f"{where}: struct type {elem!r} is neither inline nor common")
        model.struct = struct
        return model

    top = StructModel(
        spec_name=name, class_name=namer.claim(name, spec, name), owner=name, versions=Versions(0)
    )
    top.fields = build_fields(spec["fields"], name)
    return MessageModel(
        name=name,
        kind=kind,
        api_key=spec.get("apiKey"),
        valid_versions=parse_versions(spec["validVersions"], name),
        flexible_versions=flexible,
        listeners=tuple(spec.get("listeners", ())),
        deprecated_versions=parse_versions(spec.get("deprecatedVersions", "none"), name),
        struct=top,
    )


def _default_text(value: Any) -> str:
    """A field's default as Kafka's generator reads it: Jackson turns a JSON boolean into
    "true"/"false" (UpdateFeaturesRequest's ValidateOnly is written `"default": false`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
