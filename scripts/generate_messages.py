#!/usr/bin/env python3
"""Generate ``broker/protocol/messages/`` from Kafka's JSON message specs.

Usage (from the repo root)::

    .venv/bin/python scripts/generate_messages.py [SPEC_DIR] [--out DIR] [--check]

SPEC_DIR defaults to ``../shared/kafka-message-specs`` (relative to the repo root) and holds
Kafka 3.9's ``<Name>Request.json``/``<Name>Response.json`` files plus the two header files. For
each API key of zkbroker's release history (``zkbroker.broker.protocol.releases``) it finds the
spec whose ``apiKey`` it is and writes one module (``metadata.py`` for ``Metadata``) holding
the dataclasses and their ``FieldDef``/``StructDef``/``MessageDef`` definitions; ``headers.py``
holds the request/response headers and ``__init__.py`` the ``API_SPECS`` table. Output is
deterministic, so rerunning on the same specs gives identical files (a test checks that).
``--check`` compares instead of writing and exits 1 on a difference. It also writes
``broker/protocol/api_keys.py`` (the ``ApiKey`` enum and one row per key: Kafka's ``ApiKeys``
flags, listeners, message module, first emulated release) and
``broker/protocol/removed_in_4.py`` (KIP-896: every zkBroker request's ``deprecatedVersions``
and what Kafka 4.0 removed of them, for the capture report).

Naming rules:

* classes: the struct name the spec gives (``MetadataResponseTopic``). If a name is used by two
  different structs within one API (request + response), the first one met keeps it (request
  before response, fields in spec order, depth first) and later ones become
  ``<MessageName><StructName>`` (``ListGroupsResponseTopic``), then get a numeric suffix if that
  is taken too. The Kafka 3.9 specs in scope have no such clash today.
* attributes: snake_case of the spec field name (``IsrNodes`` -> ``isr_nodes``, ``TopicID`` ->
  ``topic_id``), a trailing ``_`` for Python keywords. The request header is the exception:
  ``RequestApiKey``/``RequestApiVersion`` become ``api_key``/``api_version``, the names the
  rest of zkbroker uses.

What it deliberately does not do: copy the specs' text (the ``about`` strings, comments, license
header) into the project, or generate any encode/decode code
(``zkbroker.broker.protocol.compiler`` builds that at run time from the definitions).
"""

from __future__ import annotations

import argparse
import difflib
import json
import keyword
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from zkbroker.broker.protocol.releases import (  # noqa: E402
    API_VERSION_RANGES,
    RELEASES,
)
from zkbroker.broker.protocol.schema import (  # noqa: E402  (needs the sys.path entry above)
    FIXED_TYPES,
    MAX_VERSION,
    PRIMITIVE_TYPES,
    Versions,
)

DEFAULT_SPEC_DIR = REPO_ROOT.parent / "shared" / "kafka-message-specs"
DEFAULT_OUT_DIR = REPO_ROOT / "broker" / "protocol" / "messages"

# The APIs to generate are the keys of zkbroker's release history
# (`zkbroker.broker.protocol.releases`): adding a key there and rerunning this script writes its
# message module and its row of `broker/protocol/api_keys.py`.

# What Kafka's `ApiKeys` enum carries beside the JSON specs (its constructor arguments in
# clients/.../protocol/ApiKeys.java; unlisted APIs take its defaults, false and false).
CLUSTER_ACTIONS: frozenset[str] = frozenset(
    {
        "LeaderAndIsr",
        "StopReplica",
        "UpdateMetadata",
        "ControlledShutdown",
        "WriteTxnMarkers",
        "AlterPartition",
        "UpdateFeatures",
        "Envelope",
        "BrokerRegistration",
        "BrokerHeartbeat",
        "AllocateProducerIds",
    }
)
FORWARDABLE: frozenset[str] = frozenset(
    {
        "CreateTopics",
        "DeleteTopics",
        "CreateAcls",
        "DeleteAcls",
        "AlterConfigs",
        "CreatePartitions",
        "CreateDelegationToken",
        "RenewDelegationToken",
        "ExpireDelegationToken",
        "ElectLeaders",
        "IncrementalAlterConfigs",
        "AlterPartitionReassignments",
        "ListPartitionReassignments",
        "AlterClientQuotas",
        "AlterUserScramCredentials",
        "UpdateFeatures",
        "AllocateProducerIds",
    }
)
# The request quota's exemptions (KafkaApis answers these with sendResponseExemptThrottle): the
# cluster actions, except UpdateFeatures and Envelope (throttled like any admin request; an
# Envelope's enveloped request is what counts), plus what a client needs before it can be
# throttled at all.
QUOTA_EXEMPT_BEYOND_CLUSTER_ACTIONS: frozenset[str] = frozenset(
    {"ApiVersions", "SaslHandshake", "SaslAuthenticate"}
)
THROTTLED_CLUSTER_ACTIONS: frozenset[str] = frozenset({"UpdateFeatures", "Envelope"})

HEADER_SPECS = ("RequestHeader", "ResponseHeader")

# The public RequestHeader (used across zkbroker) names these two fields differently.
ATTR_RENAMES = {
    ("RequestHeader", "RequestApiKey"): "api_key",
    ("RequestHeader", "RequestApiVersion"): "api_version",
}

GENERATED_MARKER = "Generated by scripts/generate_messages.py"
LINE_LIMIT = 100

PY_TYPES = {
    "int8": "int",
    "int16": "int",
    "uint16": "int",
    "int32": "int",
    "int64": "int",
    "float64": "float",
    "bool": "bool",
    "string": "str",
    "bytes": "bytes",
    "records": "bytes",
    "uuid": "UUID",
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


# --------------------------------------------------------------------------------------------
# Defaults and annotations


def parse_int_default(text: str, where: str) -> int:
    try:
        negative = text.startswith("-")
        body = text[1:] if negative else text
        value = int(body[2:], 16) if body.lower().startswith("0x") else int(body)
    except ValueError as exc:
        raise SpecError(f"{where}: bad integer default {text!r}") from exc
    return -value if negative else value


def default_source(f: FieldModel, where: str) -> str:
    """Python source for the default (FieldDef form: arrays/structs use ``()`` for empty)."""
    text = f.default_text
    elem = f.element_type
    if f.is_array or elem not in PRIMITIVE_TYPES:
        if text == "null":
            return "None"
        if text not in (None, ""):
            raise SpecError(f"{where}: unsupported default {text!r} for {f.type}")
        return "()"
    if elem in ("int8", "int16", "uint16", "int32", "int64"):
        return repr(parse_int_default(text, where)) if text else "0"
    if elem == "float64":
        return repr(float(text)) if text else "0.0"
    if elem == "bool":
        if text in (None, "", "false"):
            return "False"
        if text == "true":
            return "True"
        raise SpecError(f"{where}: bad bool default {text!r}")
    if elem == "string":
        if text == "null":
            return "None"
        return json.dumps(text or "")
    if elem in ("bytes", "records"):
        if text == "null":
            return "None"
        if text:
            raise SpecError(f"{where}: unsupported default {text!r} for bytes")
        return 'b""'
    if elem == "uuid":
        if text:
            raise SpecError(f"{where}: unsupported default {text!r} for uuid")
        return "_ZERO_UUID"
    raise SpecError(f"{where}: no default rule for {f.type}")


def annotation(f: FieldModel) -> str:
    elem = f.element_type
    base = PY_TYPES[elem] if elem in PRIMITIVE_TYPES else f.struct.class_name  # type: ignore[union-attr]
    text = f"list[{base}]" if f.is_array else base
    return f"{text} | None" if f.may_be_none else text


def dataclass_line(f: FieldModel, where: str) -> str:
    ann = annotation(f)
    default = default_source(f, where)
    if default == "()":
        factory = "list" if f.is_array else f.struct.class_name  # type: ignore[union-attr]
        line = f"{f.attr}: {ann} = _field(default_factory={factory})"
        if len(line) + 4 > LINE_LIMIT:  # 4: the class body's indent
            line = f"{f.attr}: {ann} = _field(\n        default_factory={factory}\n    )"
        return line
    return f"{f.attr}: {ann} = {default}"


# --------------------------------------------------------------------------------------------
# Rendering


def versions_source(v: Versions) -> str:
    if v.empty:
        return "_NONE"
    if v.high == MAX_VERSION:
        return f"_V({v.low})"
    return f"_V({v.low}, {v.high})"


def call_source(func: str, args: list[str], indent: int, trailing: str = ",") -> list[str]:
    """``func(a, b)`` on one line if it fits, else one argument per line."""
    pad = " " * indent
    one_line = f"{pad}{func}({', '.join(args)}){trailing}"
    if len(one_line) <= LINE_LIMIT:
        return [one_line]
    lines = [f"{pad}{func}("]
    lines += [f"{pad}    {arg}," for arg in args]
    lines.append(f"{pad}){trailing}")
    return lines


def iter_structs(struct: StructModel) -> list[StructModel]:
    """Nested structs in post-order (children before parents), each once."""
    out: list[StructModel] = []

    def visit(s: StructModel) -> None:
        for f in s.fields:
            if f.struct is not None:
                visit(f.struct)
        if all(s is not o for o in out):
            out.append(s)

    visit(struct)
    return out


def def_var(struct: StructModel) -> str:
    return f"_{snake_case(struct.class_name).upper()}"


def render_class(struct: StructModel, message: MessageModel | None) -> list[str]:
    lines = ["", "", "@dataclass(slots=True)", f"class {struct.class_name}:"]
    if message is not None:
        if message.kind == "header":
            summary = f"Kafka {message.name}."
            detail = f"versions {message.valid_versions}"
        else:
            api = message.struct.spec_name.removesuffix("Request").removesuffix("Response")
            summary = f"{api} {message.kind}, api key {message.api_key}."
            detail = f"versions {message.valid_versions}, flexible {message.flexible_versions}"
    else:
        summary = f"One element of ``{struct.owner}``."
        detail = f"versions {struct.versions}"
    lines += docstring_lines(summary, detail, 4)
    lines.append("")
    if message is not None and message.kind != "header":
        lines.append(f"    API_KEY: ClassVar[int] = {message.api_key}")
        lines.append(f"    IS_REQUEST: ClassVar[bool] = {message.kind == 'request'}")
        if struct.fields:
            lines.append("")
    for f in struct.fields:
        lines.append(f"    {dataclass_line(f, struct.owner + '.' + f.name)}")
    if message is None and not struct.fields:
        lines.pop()  # the blank line after the docstring
    return lines


def docstring_lines(summary: str, detail: str, indent: int) -> list[str]:
    """A one-line docstring if it fits, else a summary line plus a wrapped detail paragraph."""
    pad = " " * indent
    one_line = f"{summary.removesuffix('.')} ({detail})."
    if len(pad) + len(one_line) + 6 <= LINE_LIMIT:
        return [f'{pad}"""{one_line}"""']
    lines = [f'{pad}"""{summary}', ""]
    wrapped = textwrap.wrap(detail.capitalize() + ".", LINE_LIMIT - indent)
    lines += [f"{pad}{line}" for line in wrapped]
    return [*lines, f'{pad}"""']


def field_def_args(f: FieldModel, where: str) -> list[str]:
    args = [json.dumps(f.name), json.dumps(f.attr), json.dumps(f.type), versions_source(f.versions)]
    if not f.nullable.empty:
        args.append(f"nullable={versions_source(f.nullable)}")
    if f.tag is not None:
        args.append(f"tag={f.tag}")
        args.append(f"tagged={versions_source(f.tagged)}")
    if f.flexible is not None:
        args.append(f"flexible={versions_source(f.flexible)}")
    default = default_source(f, where)
    if default != "None":
        args.append(f"default={default}")
    if f.struct is not None:
        args.append(f"struct={def_var(f.struct)}")
    return args


def render_struct_def(struct: StructModel, indent: int, var: str | None) -> list[str]:
    pad = " " * indent
    head = f"{pad}{var} = _StructDef(" if var else f"{pad}struct=_StructDef("
    lines = [head, f"{pad}    {json.dumps(struct.spec_name)},", f"{pad}    {struct.class_name},"]
    single = []
    if len(struct.fields) == 1:
        only = struct.fields[0]
        single = call_source("(_F", field_def_args(only, f"{struct.owner}.{only.name}"), indent + 4)
        single[-1] = single[-1].removesuffix(",") + ",),"
    if not struct.fields:
        lines.append(f"{pad}    (),")
    elif len(single) == 1:
        lines += single
    else:
        lines.append(f"{pad}    (")
        for f in struct.fields:
            lines += call_source("_F", field_def_args(f, f"{struct.owner}.{f.name}"), indent + 8)
        lines.append(f"{pad}    ),")
    lines.append(f"{pad})" if var else f"{pad}),")
    return lines


def render_message_def(message: MessageModel, var: str) -> list[str]:
    lines = [
        "",
        f"{var} = _MessageDef(",
        f"    name={json.dumps(message.name)},",
        f"    kind={json.dumps(message.kind)},",
        f"    api_key={message.api_key!r},",
        f"    valid_versions={versions_source(message.valid_versions)},",
        f"    flexible_versions={versions_source(message.flexible_versions)},",
    ]
    lines += render_struct_def(message.struct, 4, None)
    if message.listeners:
        listeners = ", ".join(json.dumps(x) for x in message.listeners)
        if len(message.listeners) == 1:
            listeners += ","
        lines.append(f"    listeners=({listeners}),")
    if not message.deprecated_versions.empty:
        lines.append(f"    deprecated_versions={versions_source(message.deprecated_versions)},")
    lines.append(")")
    return lines


def render_module(docstring: str, messages: list[tuple[MessageModel, str]]) -> str:
    uses_uuid = False
    uses_zero_uuid = False
    uses_field = False
    uses_classvar = any(m.kind != "header" for m, _ in messages)
    all_structs: list[StructModel] = []
    for message, _ in messages:
        for s in iter_structs(message.struct):
            all_structs.append(s)
            for f in s.fields:
                uses_uuid |= f.element_type == "uuid"
                uses_zero_uuid |= default_source(f, f.name) == "_ZERO_UUID"
                uses_field |= default_source(f, f.name) == "()"
    body: list[str] = []
    for message, _ in messages:
        for s in iter_structs(message.struct):
            body += render_class(s, message if s is message.struct else None)
    body.append("")
    body.append("")
    body.append(
        "# Wire definitions (compiled into encoders/decoders by zkbroker.broker.protocol.compiler)."
    )
    for message, var in messages:
        for s in iter_structs(message.struct):
            if s is not message.struct:
                body.append("")
                body += render_struct_def(s, 0, def_var(s))
        body += render_message_def(message, var)

    paragraphs = [textwrap.fill(p, LINE_LIMIT - 4) for p in docstring.strip().split("\n\n")]
    head = ['"""' + "\n\n".join(paragraphs) + '\n"""', ""]
    head += ["from __future__ import annotations", ""]
    head.append("from dataclasses import dataclass")
    if uses_field:
        head.append("from dataclasses import field as _field")
    if uses_classvar:
        head.append("from typing import ClassVar")
    if uses_uuid:
        head.append("from uuid import UUID")
    head.append("")
    head += [
        "from zkbroker.broker.protocol.schema import NO_VERSIONS as _NONE",
        "from zkbroker.broker.protocol.schema import FieldDef as _F",
        "from zkbroker.broker.protocol.schema import MessageDef as _MessageDef",
        "from zkbroker.broker.protocol.schema import StructDef as _StructDef",
        "from zkbroker.broker.protocol.schema import Versions as _V",
    ]
    if uses_zero_uuid:
        head.append("from zkbroker.zk_layout.uuid_text import ZERO_UUID as _ZERO_UUID")
    text = "\n".join(head + body) + "\n"
    if "_NONE" not in "\n".join(body):
        unused = "from zkbroker.broker.protocol.schema import NO_VERSIONS as _NONE\n"
        text = text.replace(unused, "")
    return text


def api_docstring(api: str, request: MessageModel, response: MessageModel) -> str:
    return (
        f"{api} (api key {request.api_key}): message classes and wire definitions, versions "
        f"{request.valid_versions}.\n\n"
        f"{GENERATED_MARKER} from Kafka 3.9's {request.name}.json and\n"
        f"{response.name}.json. Do not edit by hand: change the generator and rerun it.\n\n"
        "Holds data only (dataclasses plus their FieldDef/StructDef/MessageDef definitions); it\n"
        "deliberately contains no wire code: zkbroker.broker.protocol.compiler builds the\n"
        "encoders and decoders from these definitions at first use.\n"
    )


def render_index(modules: list[tuple[str, MessageModel]]) -> str:
    ordered = sorted(modules, key=lambda item: item[1].api_key or 0)
    names = sorted([mod for mod, _ in modules] + ["headers"])
    lines = [
        '"""Index of the generated message modules: the API_SPECS table and every MessageDef.',
        "",
        f"{GENERATED_MARKER}; do not edit by hand. Importing this package",
        "imports every message module (they are data only and import quickly). Deliberately no",
        "lookups or codec logic here: see zkbroker.broker.protocol.codec.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from zkbroker.broker.protocol.messages import (",
    ]
    lines += [f"    {name}," for name in names]
    lines += [
        ")",
        "from zkbroker.broker.protocol.schema import ApiSpec, MessageDef",
        "",
        "API_SPECS: dict[int, ApiSpec] = {",
    ]
    for mod, req in ordered:
        lines += call_source(
            f"{req.api_key}: ApiSpec.from_defs", [f"{mod}.REQUEST", f"{mod}.RESPONSE"], 4
        )
    lines += [
        "}",
        "",
        "MESSAGE_DEFS: tuple[MessageDef, ...] = (",
        "    headers.REQUEST_HEADER,",
        "    headers.RESPONSE_HEADER,",
    ]
    for mod, _ in ordered:
        lines.append(f"    {mod}.REQUEST,")
        lines.append(f"    {mod}.RESPONSE,")
    lines.append(")")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# KIP-896: the request versions Kafka 3.9 deprecated and Kafka 4.0 removed, for every API key

# The module written beside the messages package (not inside it: `write` prunes that folder).
REMOVED_MODULE = REPO_ROOT / "broker" / "protocol" / "removed_in_4.py"
# Deprecated versions Kafka 4.x still serves (the top of each deprecated range), so 4.0
# removed only the versions below them. The 3.9 specs cannot say so: the specs folder's
# README does for Metadata v0-3 ("Kafka 4.0 removed the versions listed as deprecated above,
# except Metadata v0-3"), Kafka 4.x's own request specs (kafka-python 3.0 ships 4.3's) for the
# others; tests/report/test_removed_in_4.py checks every entry against those specs.
KEPT_IN_4_0: dict[str, Versions] = {
    "Metadata": Versions(0, 3),
    "FindCoordinator": Versions(0, 0),
    "DeleteGroups": Versions(0, 0),
    "JoinGroup": Versions(0, 1),
    "SaslHandshake": Versions(0, 0),
    "Produce": Versions(3, 6),
}


def deprecated_requests(spec_dir: Path) -> list[tuple[int, str, Versions]]:
    """(api key, API name, deprecated versions) of every zkBroker request spec that has some."""
    found: list[tuple[int, str, Versions]] = []
    for path in sorted(spec_dir.glob("*Request.json")):
        spec = load_spec(path)
        if spec.get("type") != "request" or "zkBroker" not in spec.get("listeners", ()):
            continue
        name = spec["name"].removesuffix("Request")
        deprecated = parse_versions(spec.get("deprecatedVersions", "none"), spec["name"])
        if not deprecated.empty:
            found.append((int(spec["apiKey"]), name, deprecated))
    return sorted(found)


def render_removed_module(spec_dir: Path) -> str:
    entries = deprecated_requests(spec_dir)

    def table(var: str, comment: str, rows: list[tuple[int, str, Versions]]) -> list[str]:
        lines = [f"# {text}" for text in textwrap.wrap(comment, LINE_LIMIT - 2)]
        lines.append(f"{var}: dict[int, tuple[str, int, int]] = {{")
        lines += [f'    {key}: ("{name}", {v.low}, {v.high}),' for key, name, v in rows]
        return [*lines, "}", ""]

    lines = [
        '"""KIP-896: the request versions Kafka 3.9 deprecated and those Kafka 4.0 removed.',
        "",
        f"{GENERATED_MARKER} from the `deprecatedVersions` of Kafka 3.9's",
        "*Request.json files whose listeners include zkBroker. Do not edit by hand: change the",
        "generator and rerun it. Each table maps an api key to (API name, first version, last",
        "version), an inclusive range. Data only: the capture report (zkbroker.broker.report)",
        "turns it into Spark expressions. Deliberately not here: the APIs Kafka 4.0 dropped whole",
        "with ZooKeeper mode (LeaderAndIsr, StopReplica, UpdateMetadata: inter-broker, never sent",
        "by clients).",
        "REMOVED_IN_4_0 is the deprecation minus what Kafka 4.x still serves (the generator's",
        "KEPT_IN_4_0; tests/report/test_removed_in_4.py checks it against Kafka 4.x's specs).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    lines += table("DEPRECATED_IN_3_9", "Every deprecated range of the 3.9 specs.", entries)
    removed = []
    for key, name, deprecated in entries:
        kept = KEPT_IN_4_0.get(name)
        if kept is None:
            removed.append((key, name, deprecated))
        elif kept.high != deprecated.high:
            raise SpecError(f"{name}: KEPT_IN_4_0 must keep the top of {deprecated}")
        elif kept.low > deprecated.low:
            removed.append((key, name, Versions(deprecated.low, kept.low - 1)))
    lines += table(
        "REMOVED_IN_4_0",
        "The ranges Kafka 4.0 removed: the above but what 4.x still serves ("
        + ", ".join(f"{n} v{v}" for n, v in sorted(KEPT_IN_4_0.items()))
        + ").",
        removed,
    )
    return "\n".join(lines).rstrip("\n") + "\n"


# --------------------------------------------------------------------------------------------
# The API key table: broker/protocol/api_keys.py

API_KEYS_MODULE = REPO_ROOT / "broker" / "protocol" / "api_keys.py"


def first_releases() -> dict[int, tuple[int, ...]]:
    """api key -> the first emulated release that advertises it, for every key of the
    release history (``zkbroker.broker.protocol.releases``)."""
    first: dict[int, tuple[int, ...]] = {}
    for release in RELEASES:
        for key in API_VERSION_RANGES[release]:
            first.setdefault(key, release)
    return dict(sorted(first.items()))


def served_apis(spec_dir: Path) -> dict[int, tuple[str, dict[str, Any]]]:
    """api key -> (API name, request spec) for every key of the release history, in key
    order; a key without a request spec is an error."""
    requests: dict[int, dict[str, Any]] = {}
    for path in sorted(spec_dir.glob("*Request.json")):
        spec = load_spec(path)
        if spec.get("type") == "request" and isinstance(spec.get("apiKey"), int):
            requests[spec["apiKey"]] = spec
    missing = [key for key in first_releases() if key not in requests]
    if missing:
        raise SpecError(f"no *Request.json for api keys {missing} of the release history")
    return {
        key: (requests[key]["name"].removesuffix("Request"), requests[key])
        for key in first_releases()
    }


def enum_member(api_name: str) -> str:
    """Kafka's ``ApiKeys`` constant: ``OffsetForLeaderEpoch`` -> ``OFFSET_FOR_LEADER_EPOCH``."""
    return snake_case(api_name).rstrip("_").upper()


def render_api_keys_module(spec_dir: Path) -> str:
    apis = served_apis(spec_dir)
    since = first_releases()
    lines = [
        '"""zkbroker\'s API keys: Kafka\'s ``ApiKeys`` enum and one row of facts per key.',
        "",
        f"{GENERATED_MARKER} from Kafka 3.9's *Request.json files (name, key,",
        "listeners), the generator's copy of Kafka's ApiKeys flags (clusterAction, forwardable)",
        "and request-quota exemptions, and the release history of",
        "zkbroker.broker.protocol.releases (which keys zkbroker emulates, and the first emulated",
        "release advertising each). Do not edit by hand: add the key's history to releases.py and",
        "rerun the generator.",
        "",
        "Data only. The message classes are in ``zkbroker.broker.protocol.messages.<module>``",
        "(``ApiKeyInfo.messages()``); the ZooKeeper-trouble family of each key is zkbroker's own",
        "(``zkbroker.handlers.support.zk_trouble``), keyed by this enum.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import importlib",
        "from collections.abc import Mapping",
        "from dataclasses import dataclass",
        "from enum import IntEnum",
        "from types import MappingProxyType, ModuleType",
        "",
        "from zkbroker.zk_layout.release import Release",
        "",
        '_MESSAGES = "zkbroker.broker.protocol.messages"',
        "",
        "",
        "class ApiKey(IntEnum):",
        '    """The API keys zkbroker emulates, named as Kafka\'s ``ApiKeys`` constants."""',
        "",
    ]
    lines += [f"    {enum_member(name)} = {key}" for key, (name, _) in apis.items()]
    lines += [
        "",
        "    @property",
        "    def info(self) -> ApiKeyInfo:",
        "        return API_KEYS[self]",
        "",
        "",
        "@dataclass(frozen=True)",
        "class ApiKeyInfo:",
        '    """One key\'s row: what Kafka\'s ``ApiKeys`` carries and what zkbroker needs."""',
        "",
        "    key: ApiKey",
        "    name: str  # Kafka's ApiKeys.name, the spec's name without Request",
        "    module: str  # zkbroker.broker.protocol.messages.<module>",
        "    first_release: Release  # the first emulated release that advertises the key",
        "    listeners: frozenset[str]  # the request spec's zkBroker / broker / controller",
        "    cluster_action: bool = False  # ApiKeys.clusterAction",
        "    forwardable: bool = False  # ApiKeys.forwardable",
        "    quota_exempt: bool = False  # never throttled by the request quota",
        "",
        "    @property",
        "    def request_name(self) -> str:",
        '        return f"{self.name}Request"',
        "",
        "    @property",
        "    def response_name(self) -> str:",
        '        return f"{self.name}Response"',
        "",
        "    def messages(self) -> ModuleType:",
        '        """The generated module holding the request and response classes."""',
        '        return importlib.import_module(f"{_MESSAGES}.{self.module}")',
        "",
        "",
        "API_KEYS: Mapping[ApiKey, ApiKeyInfo] = MappingProxyType(",
        "    {",
    ]
    for key, (name, spec) in apis.items():
        member = f"ApiKey.{enum_member(name)}"
        listeners = sorted(spec.get("listeners", ()))
        args = [
            member,
            json.dumps(name),
            json.dumps(module_name(name)),
            repr(since[key]),
            "frozenset({" + ", ".join(json.dumps(x) for x in listeners) + "})",
        ]
        cluster = name in CLUSTER_ACTIONS
        if cluster:
            args.append("cluster_action=True")
        if name in FORWARDABLE:
            args.append("forwardable=True")
        exempt = (cluster and name not in THROTTLED_CLUSTER_ACTIONS) or (
            name in QUOTA_EXEMPT_BEYOND_CLUSTER_ACTIONS
        )
        if exempt:
            args.append("quota_exempt=True")
        lines += call_source(f"{member}: ApiKeyInfo", args, 8)
    lines += ["    }", ")", ""]
    unknown = (CLUSTER_ACTIONS | FORWARDABLE | QUOTA_EXEMPT_BEYOND_CLUSTER_ACTIONS) - {
        name for name, _ in apis.values()
    }
    if unknown:
        raise SpecError(f"flags for APIs outside the release history: {sorted(unknown)}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Driver


def generate(spec_dir: Path, api_names: tuple[str, ...] | None = None) -> dict[str, str]:
    """Return {file name: content} for the whole messages package (by default, every API of
    the release history)."""
    if api_names is None:
        api_names = tuple(name for name, _ in served_apis(spec_dir).values())
    files: dict[str, str] = {}
    index: list[tuple[str, MessageModel]] = []
    for api in api_names:
        namer = ClassNamer()
        request = build_message(load_spec(spec_dir / f"{api}Request.json"), namer)
        response = build_message(load_spec(spec_dir / f"{api}Response.json"), namer)
        if request.kind != "request" or response.kind != "response":
            raise SpecError(f"{api}: unexpected message types {request.kind}/{response.kind}")
        if request.api_key != response.api_key or request.api_key is None:
            raise SpecError(f"{api}: request and response api keys differ")
        mod = module_name(api)
        files[f"{mod}.py"] = render_module(
            api_docstring(api, request, response), [(request, "REQUEST"), (response, "RESPONSE")]
        )
        index.append((mod, request))
    namer = ClassNamer()
    req_header = build_message(load_spec(spec_dir / "RequestHeader.json"), namer)
    resp_header = build_message(load_spec(spec_dir / "ResponseHeader.json"), namer)
    files["headers.py"] = render_module(
        "Request and response headers: classes and wire definitions.\n\n"
        f"{GENERATED_MARKER} from Kafka 3.9's RequestHeader.json and\n"
        "ResponseHeader.json. Do not edit by hand. RequestApiKey/RequestApiVersion are named\n"
        "api_key/api_version here. Which header version a message uses is not in the specs; see\n"
        "zkbroker.broker.protocol.headers. Data only, no wire code.\n",
        [(req_header, "REQUEST_HEADER"), (resp_header, "RESPONSE_HEADER")],
    )
    files["__init__.py"] = render_index(index)
    return files


def write(files: dict[str, str], out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in sorted(out_dir.glob("*.py")):
        if stale.name not in files and GENERATED_MARKER in stale.read_text(encoding="utf-8"):
            stale.unlink()
    for name, content in sorted(files.items()):
        path = out_dir / name
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")


def check(files: dict[str, str], out_dir: Path) -> list[str]:
    problems: list[str] = []
    for name, content in sorted(files.items()):
        path = out_dir / name
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != content:
            diff = difflib.unified_diff(
                current.splitlines(), content.splitlines(), str(path), "generated", lineterm=""
            )
            problems.append("\n".join(list(diff)[:40]))
    return problems


def _default_text(value: Any) -> str:
    """A field's default as Kafka's generator reads it: Jackson turns a JSON boolean into
    "true"/"false" (UpdateFeaturesRequest's ValidateOnly is written `"default": false`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec_dir", nargs="?", type=Path, default=DEFAULT_SPEC_DIR)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT_DIR)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    spec_dir: Path = args.spec_dir
    if not spec_dir.is_dir():
        print(f"spec directory not found: {spec_dir}", file=sys.stderr)
        return 2
    try:
        files = generate(spec_dir)
        removed = render_removed_module(spec_dir)
        api_keys = render_api_keys_module(spec_dir)
    except (SpecError, KeyError, OSError) as exc:
        print(f"cannot generate: {exc}", file=sys.stderr)
        return 2
    if args.check:
        problems = check(files, args.out)
        current = REMOVED_MODULE.read_text(encoding="utf-8") if REMOVED_MODULE.exists() else ""
        if current != removed:
            problems.append(f"{REMOVED_MODULE} differs from the specs' deprecatedVersions")
        current = API_KEYS_MODULE.read_text(encoding="utf-8") if API_KEYS_MODULE.exists() else ""
        if current != api_keys:
            problems.append(f"{API_KEYS_MODULE} differs from the specs and the release history")
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    write(files, args.out)
    print(f"wrote {len(files)} files to {args.out}")
    if not REMOVED_MODULE.exists() or REMOVED_MODULE.read_text(encoding="utf-8") != removed:
        REMOVED_MODULE.write_text(removed, encoding="utf-8")
    print(f"wrote {REMOVED_MODULE}")
    if not API_KEYS_MODULE.exists() or API_KEYS_MODULE.read_text(encoding="utf-8") != api_keys:
        API_KEYS_MODULE.write_text(api_keys, encoding="utf-8")
    print(f"wrote {API_KEYS_MODULE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
