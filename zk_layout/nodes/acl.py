"""ACL nodes of Kafka's ZooKeeper authorizer (``AclAuthorizer``/``ZkAclStore``).

* Literal patterns: ``/kafka-acl/<ResourceType>/<name>``; prefixed patterns:
  ``/kafka-acl-extended/prefixed/<ResourceType>/<name>``. Data
  ``{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read",
  "host":"*"}]}``. ``<ResourceType>`` is the camel-case name (``Topic``, ``Group``, ``Cluster``,
  ``TransactionalId``, ``DelegationToken``); the cluster resource is named ``kafka-cluster``.
  Empty data or bytes that are not JSON read as no ACLs (Kafka's ``AclEntry.fromBytes``).
* Change events, persistent-sequential ``acl_changes_<seq>``: under ``/kafka-acl-changes`` the
  plain UTF-8 string ``Topic:foo`` (literal patterns only); under ``/kafka-acl-extended-changes``
  ``{"version":1,"resourceType":"TOPIC","name":"foo","patternType":"PREFIXED"}`` (enum names,
  strict bean: unknown fields and versions > 1 are rejected).

``ResourcePattern.resource_type`` is always the camel-case (path) form; the extended change event
converts to and from the upper-case enum name.

Deliberately not here: authorization, ACL matching, or validating operation/permission names
(Kafka maps unknown ones to UNKNOWN rather than failing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.errors import ZnodeFormatError
from zkbroker.zk_layout.nodes.base import EmptyNode, NodeKind, SequenceMixin, ZNode, check_version
from zkbroker.zk_layout.release import Release

LITERAL: Final = "LITERAL"
PREFIXED: Final = "PREFIXED"
CLUSTER_RESOURCE_NAME: Final = "kafka-cluster"

# camel-case path name -> upper-case enum name (Kafka's ResourceType).
RESOURCE_TYPE_ENUM_NAMES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "Topic": "TOPIC",
        "Group": "GROUP",
        "Cluster": "CLUSTER",
        "TransactionalId": "TRANSACTIONAL_ID",
        "DelegationToken": "DELEGATION_TOKEN",
        "User": "USER",
    }
)
_RESOURCE_TYPE_BY_ENUM: Final[Mapping[str, str]] = MappingProxyType(
    {v: k for k, v in RESOURCE_TYPE_ENUM_NAMES.items()}
)
# Types whose /kafka-acl*/<Type> parents AclAuthorizer creates at start (2.8).
ACL_RESOURCE_TYPES: Final = ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken")

LITERAL_ACL_ROOT: Final = "/kafka-acl"
EXTENDED_ACL_ROOT: Final = "/kafka-acl-extended"
# The child-name prefix of a change event, under either change root.
_ACL_CHANGE_PREFIX: Final = "acl_changes_"


@dataclass(frozen=True, order=True)
class AclEntry:
    principal: str
    permission_type: str
    operation: str
    host: str


@dataclass(frozen=True)
class ResourcePattern:
    resource_type: str
    name: str
    pattern_type: str = LITERAL


def acl_store_root(pattern_type: str) -> str:
    """``/kafka-acl`` for LITERAL, ``/kafka-acl-extended/<pattern lower-case>`` otherwise."""
    if pattern_type == LITERAL:
        return LITERAL_ACL_ROOT
    return f"{EXTENDED_ACL_ROOT}/{pattern_type.lower()}"


def acl_persistent_paths() -> tuple[str, ...]:
    """What ``AclAuthorizer`` creates at start: each store root, its per-type children, and
    both change roots."""
    paths: list[str] = []
    for pattern in (LITERAL, PREFIXED):
        root = acl_store_root(pattern)
        paths.append(root)
        paths.extend(f"{root}/{rt}" for rt in ACL_RESOURCE_TYPES)
    paths.extend((LITERAL_ACL_CHANGES, EXTENDED_ACL_CHANGES))
    return tuple(paths)


class AclNode(ZNode[frozenset[AclEntry]]):
    FORMAT_VERSIONS = (1,)
    PATTERN = "/kafka-acl[-extended/<pattern>]/<ResourceType>/<name>"

    @staticmethod
    def path(resource_type: str, name: str, pattern_type: str = LITERAL) -> str:
        return f"{acl_store_root(pattern_type)}/{resource_type}/{name}"

    @staticmethod
    def for_resource(resource: ResourcePattern) -> str:
        return AclNode.path(resource.resource_type, resource.name, resource.pattern_type)

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 1

    @classmethod
    def encode(cls, value: frozenset[AclEntry], release: Release) -> bytes:
        return cj.dumps(
            {
                "version": 1,
                "acls": [
                    {
                        "principal": e.principal,
                        "permissionType": e.permission_type,
                        "operation": e.operation,
                        "host": e.host,
                    }
                    for e in sorted(value)
                ],
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> frozenset[AclEntry]:
        where = cls.PATTERN
        parsed = cj.try_parse(data)
        if parsed is cj.UNPARSEABLE:
            return frozenset()
        doc = cj.as_object(parsed, where, "the document")
        entries: set[AclEntry] = set()
        for raw in cj.get_list(doc, "acls", where):
            item = cj.as_object(raw, where, "an element of 'acls'")
            principal = cj.get_str(item, "principal", where)
            if ":" not in principal:
                raise ZnodeFormatError(where, f"principal {principal!r} is not <type>:<name>")
            entries.add(
                AclEntry(
                    principal=principal,
                    permission_type=cj.get_str(item, "permissionType", where),
                    operation=cj.get_str(item, "operation", where),
                    host=cj.get_str(item, "host", where),
                )
            )
        return frozenset(entries)


class LiteralAclChangesNode(EmptyNode, name="kafka-acl-changes"):
    """``/kafka-acl-changes``: change events of literal patterns."""


class ExtendedAclChangesNode(EmptyNode, name="kafka-acl-extended-changes"):
    """``/kafka-acl-extended-changes``: change events of the other patterns."""


LITERAL_ACL_CHANGES: Final = LiteralAclChangesNode.path()
EXTENDED_ACL_CHANGES: Final = ExtendedAclChangesNode.path()


class AclChangeNode(SequenceMixin, ZNode[ResourcePattern], parent=LiteralAclChangesNode):
    """``/kafka-acl-changes/acl_changes_<seq>``: ``<ResourceType>:<name>``, literal only."""

    FORMAT_VERSIONS = (0,)
    KIND = NodeKind.PERSISTENT_SEQUENTIAL
    PREFIX = _ACL_CHANGE_PREFIX

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 0

    @classmethod
    def encode(cls, value: ResourcePattern, release: Release) -> bytes:
        if value.pattern_type != LITERAL:
            raise ValueError("only literal resource patterns go to /kafka-acl-changes")
        return f"{value.resource_type}:{value.name}".encode()

    @classmethod
    def decode(cls, data: bytes) -> ResourcePattern:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ZnodeFormatError(cls.PATTERN, "not UTF-8 text") from None
        resource_type, sep, name = text.partition(":")
        if not sep or not resource_type:
            raise ZnodeFormatError(cls.PATTERN, f"expected ResourceType:ResourceName, got {text!r}")
        return ResourcePattern(resource_type, name, LITERAL)


_EXTENDED_KEYS: Final = frozenset({"version", "resourceType", "name", "patternType"})


class ExtendedAclChangeNode(SequenceMixin, ZNode[ResourcePattern], parent=ExtendedAclChangesNode):
    """``/kafka-acl-extended-changes/acl_changes_<seq>``: JSON change event for non-literal
    patterns."""

    FORMAT_VERSIONS = (1,)
    KIND = NodeKind.PERSISTENT_SEQUENTIAL
    PREFIX = _ACL_CHANGE_PREFIX

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 1

    @classmethod
    def encode(cls, value: ResourcePattern, release: Release) -> bytes:
        if value.pattern_type == LITERAL:
            raise ValueError("literal patterns go to /kafka-acl-changes, not the extended store")
        enum_name = RESOURCE_TYPE_ENUM_NAMES.get(value.resource_type)
        if enum_name is None:
            raise ValueError(f"unknown resource type {value.resource_type!r}")
        doc: dict[str, Any] = {
            "version": 1,
            "resourceType": enum_name,
            "name": value.name,
            "patternType": value.pattern_type,
        }
        return cj.dumps(doc)

    @classmethod
    def decode(cls, data: bytes) -> ResourcePattern:
        where = cls.PATTERN
        doc = cj.parse_object(data, where)
        unknown = sorted(set(doc) - _EXTENDED_KEYS)
        if unknown:
            raise ZnodeFormatError(where, f"unrecognized field(s) {unknown}")
        version = cj.get_int(doc, "version", where)
        check_version(where, version, cls.FORMAT_VERSIONS)
        enum_name = cj.get_str(doc, "resourceType", where)
        resource_type = _RESOURCE_TYPE_BY_ENUM.get(enum_name.upper())
        if resource_type is None:
            raise ZnodeFormatError(where, f"unknown resourceType {enum_name!r}")
        pattern_type = cj.get_str(doc, "patternType", where).upper()
        if pattern_type not in (LITERAL, PREFIXED):
            raise ZnodeFormatError(where, f"unsupported patternType {pattern_type!r}")
        return ResourcePattern(resource_type, cj.get_str(doc, "name", where), pattern_type)
