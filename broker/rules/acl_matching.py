"""ACL bindings, filters and the authorization decision of Kafka's `AclAuthorizer`, as pure code.

Codes are Kafka's enums, names the ones `SecurityUtils` writes into ZooKeeper (`Topic`, `Read`,
`Allow`). Filters follow `ResourcePatternFilter.matches` and `AccessControlEntryFilter.matches`.
`AclIndex.authorize` is `AclAuthorizer.authorizeAction` (super users, literal, wildcard and
prefixed ACLs, `allow.everyone.if.no.acl.found`, DENY first, the implied DESCRIBE and
DESCRIBE_CONFIGS; docs/kafka-behaviour.md §21); `explain` gives the decision's reason for the
audit log; `authorize_by_resource_type` is `authorizeByResourceType` (no implication).

Not here: ZooKeeper (`zkbroker.broker.security.authorizer`) and request handling.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

# org.apache.kafka.common.resource.ResourceType
RT_UNKNOWN, RT_ANY, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = range(8)
# org.apache.kafka.common.resource.PatternType
PT_UNKNOWN, PT_ANY, PT_MATCH, PT_LITERAL, PT_PREFIXED = range(5)
# org.apache.kafka.common.acl.AclOperation
OP_UNKNOWN, OP_ANY, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = range(9)
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
CREATE_TOKENS, DESCRIBE_TOKENS = 13, 14
# org.apache.kafka.common.acl.AclPermissionType
PERM_UNKNOWN, PERM_ANY, DENY, ALLOW = range(4)

WILDCARD_RESOURCE: Final = "*"
WILDCARD_HOST: Final = "*"
WILDCARD_PRINCIPAL: Final = "User:*"
CLUSTER_NAME: Final = "kafka-cluster"
#: Configs AclAuthorizer reads that are not KafkaConfig keys (a broker accepts them).
AUTHORIZER_ONLY_CONFIGS: Final = frozenset({"super.users", "allow.everyone.if.no.acl.found"})

RESOURCE_TYPE_NAMES: Final = {
    TOPIC: "Topic",
    GROUP: "Group",
    CLUSTER: "Cluster",
    TRANSACTIONAL_ID: "TransactionalId",
    DELEGATION_TOKEN: "DelegationToken",
    USER: "User",
}
RESOURCE_TYPE_CODES: Final = {v: k for k, v in RESOURCE_TYPE_NAMES.items()}
PATTERN_TYPE_NAMES: Final = {PT_LITERAL: "LITERAL", PT_PREFIXED: "PREFIXED"}
PATTERN_TYPE_CODES: Final = {v: k for k, v in PATTERN_TYPE_NAMES.items()}
OPERATION_NAMES: Final = {
    ALL: "All",
    READ: "Read",
    WRITE: "Write",
    CREATE: "Create",
    DELETE: "Delete",
    ALTER: "Alter",
    DESCRIBE: "Describe",
    CLUSTER_ACTION: "ClusterAction",
    DESCRIBE_CONFIGS: "DescribeConfigs",
    ALTER_CONFIGS: "AlterConfigs",
    IDEMPOTENT_WRITE: "IdempotentWrite",
    CREATE_TOKENS: "CreateTokens",
    DESCRIBE_TOKENS: "DescribeTokens",
}
# SecurityUtils.operation: case-insensitive, underscores ignored; unknown -> UNKNOWN.
_OPERATION_BY_KEY: Final = {v.lower(): k for k, v in OPERATION_NAMES.items()}
PERMISSION_NAMES: Final = {ALLOW: "Allow", DENY: "Deny"}
_PERMISSION_BY_KEY: Final = {v.lower(): k for k, v in PERMISSION_NAMES.items()}

# AclAuthorizer.allowAclExists: which ALLOW operations grant an operation.
_IMPLIED_BY: Final = {
    DESCRIBE: (DESCRIBE, READ, WRITE, DELETE, ALTER),
    DESCRIBE_CONFIGS: (DESCRIBE_CONFIGS, ALTER_CONFIGS),
}

# Bound on remembered decisions (one per principal, host, operation and resource).
_MAX_DECISIONS: Final = 200_000

# The operations each resource type supports (the authorized-operations bit fields).
SUPPORTED_OPERATIONS: Final = {
    TOPIC: (READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    GROUP: (READ, DESCRIBE, DELETE),
    CLUSTER: (
        CREATE,
        CLUSTER_ACTION,
        DESCRIBE_CONFIGS,
        ALTER_CONFIGS,
        IDEMPOTENT_WRITE,
        ALTER,
        DESCRIBE,
    ),
    TRANSACTIONAL_ID: (DESCRIBE, WRITE),
    DELEGATION_TOKEN: (DESCRIBE,),
    USER: (CREATE_TOKENS, DESCRIBE_TOKENS),
}


def operation_code(name: str) -> int:
    return _OPERATION_BY_KEY.get(name.replace("_", "").lower(), OP_UNKNOWN)


def permission_code(name: str) -> int:
    return _PERMISSION_BY_KEY.get(name.lower(), PERM_UNKNOWN)


@dataclass(frozen=True, order=True)
class Pattern:
    """A ResourcePattern: a concrete resource type, LITERAL or PREFIXED."""

    resource_type: int
    name: str
    pattern_type: int = PT_LITERAL


@dataclass(frozen=True, order=True)
class Entry:
    """An AccessControlEntry."""

    principal: str
    host: str
    operation: int
    permission: int


@dataclass(frozen=True)
class Binding:
    pattern: Pattern
    entry: Entry


@dataclass(frozen=True)
class BindingFilter:
    """An AclBindingFilter: None name/principal/host match anything."""

    resource_type: int
    name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def matches_pattern(self, p: Pattern) -> bool:
        if self.resource_type != RT_ANY and self.resource_type != p.resource_type:
            return False
        if self.pattern_type not in (PT_ANY, PT_MATCH) and self.pattern_type != p.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PT_ANY, p.pattern_type):
            return self.name == p.name
        if p.pattern_type == PT_LITERAL:
            return self.name == p.name or p.name == WILDCARD_RESOURCE
        return self.name.startswith(p.name)

    def matches_entry(self, e: Entry) -> bool:
        if self.principal is not None and self.principal != e.principal:
            return False
        if self.host is not None and self.host != e.host:
            return False
        if self.operation != OP_ANY and self.operation != e.operation:
            return False
        return self.permission == PERM_ANY or self.permission == e.permission

    def matches_at_most_one(self) -> bool:
        """ResourcePatternFilter.matchesAtMostOne."""
        return (
            self.resource_type not in (RT_ANY, RT_UNKNOWN)
            and self.name is not None
            and self.pattern_type not in (PT_MATCH, PT_UNKNOWN)
        )

    def exact_patterns(self) -> tuple[Pattern, ...]:
        """AclAuthorizer.filterToResources, for filters that match at most one resource."""
        assert self.name is not None
        if self.pattern_type == PT_ANY:
            return (
                Pattern(self.resource_type, self.name, PT_LITERAL),
                Pattern(self.resource_type, self.name, PT_PREFIXED),
            )
        return (Pattern(self.resource_type, self.name, self.pattern_type),)


def _sort_key(p: Pattern) -> tuple[int, int, _Reversed]:
    return (p.resource_type, p.pattern_type, _Reversed(p.name))


@dataclass(frozen=True)
class _Reversed:
    """AclAuthorizer.ResourceOrdering sorts names in reverse."""

    name: str

    def __lt__(self, other: _Reversed) -> bool:
        return self.name > other.name


@dataclass
class AclIndex:
    """AclAuthorizer's aclCache: pattern -> (entries, znode version), plus the look-ups a
    decision needs (by resource type and pattern type, then name) and a memo of decisions,
    dropped whenever an ACL changes (a Metadata of 10,000 topics decides 10,000 times)."""

    acls: dict[Pattern, frozenset[Entry]] = field(default_factory=dict)
    versions: dict[Pattern, int] = field(default_factory=dict)
    _by_kind: dict[tuple[int, int], dict[str, frozenset[Entry]]] = field(default_factory=dict)
    _longest_prefix: dict[int, int] = field(default_factory=dict)
    decisions: dict[tuple[str, str, int, int, str], bool] = field(default_factory=dict)

    def put(self, pattern: Pattern, entries: frozenset[Entry], version: int) -> None:
        names = self._by_kind.setdefault((pattern.resource_type, pattern.pattern_type), {})
        if entries:
            self.acls[pattern] = entries
            self.versions[pattern] = version
            names[pattern.name] = entries
        else:
            self.acls.pop(pattern, None)
            self.versions.pop(pattern, None)
            names.pop(pattern.name, None)
        if pattern.pattern_type == PT_PREFIXED:
            longest = self._longest_prefix.get(pattern.resource_type, -1)
            if entries:
                self._longest_prefix[pattern.resource_type] = max(longest, len(pattern.name))
            elif len(pattern.name) >= longest:  # only then can the longest have gone
                self._longest_prefix[pattern.resource_type] = max(map(len, names), default=-1)
        self.decisions.clear()

    def patterns(self) -> list[Pattern]:
        return sorted(self.acls, key=_sort_key)

    def bindings(self, flt: BindingFilter) -> Iterator[Binding]:
        """AclAuthorizer.acls(filter), in the cache's order."""
        for pattern in self.patterns():
            if flt.matches_pattern(pattern):
                for entry in sorted(self.acls[pattern]):
                    if flt.matches_entry(entry):
                        yield Binding(pattern, entry)

    def applicable(self, resource_type: int, name: str) -> list[frozenset[Entry]]:
        """matchingAcls: the literal name, the literal wildcard, every covering prefix."""
        found: list[frozenset[Entry]] = []
        literal = self._by_kind.get((resource_type, PT_LITERAL))
        if literal:
            for key in (WILDCARD_RESOURCE, name):
                entries = literal.get(key)
                if entries:
                    found.append(entries)
        prefixed = self._by_kind.get((resource_type, PT_PREFIXED))
        if prefixed:
            # One look-up per prefix length up to the longest stored prefix: linear in the
            # name, not in the number of ACLs.
            for end in range(min(len(name), self._longest_prefix.get(resource_type, -1)) + 1):
                entries = prefixed.get(name[:end])
                if entries:
                    found.append(entries)
        return found


@dataclass(frozen=True)
class AuthorizerConfig:
    super_users: frozenset[str] = frozenset()
    allow_if_no_acls: bool = False


def parse_super_users(value: str) -> frozenset[str]:
    """``super.users``: ``;``-separated principals (SecurityUtils.parseKafkaPrincipal)."""
    users = set()
    for part in value.split(";"):
        part = part.strip()
        if not part:
            continue
        if ":" not in part:
            raise ValueError(
                "expected a string in format principalType:principalName but got " + part
            )
        users.add(part)
    return frozenset(users)


def _matching(
    groups: list[frozenset[Entry]],
    operations: tuple[int, ...],
    principal: str,
    host: str,
    perm: int,
) -> bool:
    return _first_matching(groups, operations, principal, host, perm) is not None


def authorize(
    index: AclIndex,
    config: AuthorizerConfig,
    principal: str,
    host: str,
    operation: int,
    resource_type: int,
    name: str,
) -> bool:
    """AclAuthorizer.authorizeAction for a LITERAL resource."""
    if principal in config.super_users:
        return True
    key = (principal, host, operation, resource_type, name)
    decided = index.decisions.get(key)
    if decided is not None:
        return decided
    groups = index.applicable(resource_type, name)
    if not groups:
        decided = config.allow_if_no_acls
    elif _matching(groups, (operation,), principal, host, DENY):
        decided = False
    else:
        implied = _IMPLIED_BY.get(operation, (operation,))
        decided = _matching(groups, implied, principal, host, ALLOW)
    if len(index.decisions) >= _MAX_DECISIONS:
        index.decisions.clear()
    index.decisions[key] = decided
    return decided


def _first_matching(
    groups: list[frozenset[Entry]],
    operations: tuple[int, ...],
    principal: str,
    host: str,
    perm: int,
) -> Entry | None:
    for entries in groups:
        for e in entries:
            if (
                e.permission == perm
                and (e.principal == principal or e.principal == WILDCARD_PRINCIPAL)
                and (e.operation in operations or e.operation == ALL)
                and (e.host == WILDCARD_HOST or e.host == host)
            ):
                return e
    return None


# Why a decision went the way it did (the audit log's `reason`).
SUPER_USER, NO_ACLS_FOUND, DENY_ACL, ALLOW_ACL, NO_MATCHING_ALLOW = (
    "super_user",
    "no_acls_found",
    "deny_acl",
    "allow_acl",
    "no_matching_allow_acl",
)


def explain(
    index: AclIndex,
    config: AuthorizerConfig,
    principal: str,
    host: str,
    operation: int,
    resource_type: int,
    name: str,
) -> tuple[bool, str, Entry | None]:
    """`authorize` with what decided it, for the audit log (AclAuthorizer's debug lines: "is a
    super user", "No acl found for resource", "... based on acl = ..."): the decision, one of
    the reasons above and the entry that matched. Not memoized: only audited decisions ask."""
    if principal in config.super_users:
        return True, SUPER_USER, None
    groups = index.applicable(resource_type, name)
    if not groups:
        return config.allow_if_no_acls, NO_ACLS_FOUND, None
    deny = _first_matching(groups, (operation,), principal, host, DENY)
    if deny is not None:
        return False, DENY_ACL, deny
    implied = _IMPLIED_BY.get(operation, (operation,))
    allow = _first_matching(groups, implied, principal, host, ALLOW)
    if allow is not None:
        return True, ALLOW_ACL, allow
    return False, NO_MATCHING_ALLOW, None


def authorized_operations_bits(
    index: AclIndex,
    config: AuthorizerConfig,
    principal: str,
    host: str,
    resource_type: int,
    name: str,
) -> int:
    """Utils.to32BitField of the supported operations the principal may do on the resource."""
    bits = 0
    for op in SUPPORTED_OPERATIONS.get(resource_type, ()):
        if authorize(index, config, principal, host, op, resource_type, name):
            bits |= 1 << op
    return bits


def _entry_matches(e: Entry, principal: str, host: str, operation: int, perm: int) -> bool:
    """AclAuthorizer.matchingResources' keys: (principal or User:*, host or *, op or ALL)."""
    return (
        e.permission == perm
        and (e.principal == principal or e.principal == WILDCARD_PRINCIPAL)
        and (e.host == host or e.host == WILDCARD_HOST)
        and (e.operation == operation or e.operation == ALL)
    )


def authorize_by_resource_type(
    index: AclIndex,
    config: AuthorizerConfig,
    principal: str,
    host: str,
    operation: int,
    resource_type: int,
) -> bool:
    """AclAuthorizer.authorizeByResourceType: may the principal do `operation` on at least one
    resource of the type? A literal ``*`` DENY refuses; ``allow.everyone.if.no.acl.found``
    then allows; else an ALLOW (literal or prefixed) not dominated by a DENY is needed."""
    if principal in config.super_users:
        return True
    names: dict[tuple[int, int], set[str]] = {
        (perm, pt): set() for perm in (ALLOW, DENY) for pt in (PT_LITERAL, PT_PREFIXED)
    }
    for pattern, entries in index.acls.items():
        if pattern.resource_type != resource_type:
            continue
        for perm in (ALLOW, DENY):
            if any(_entry_matches(e, principal, host, operation, perm) for e in entries):
                names[(perm, pattern.pattern_type)].add(pattern.name)
    deny_literals, deny_prefixes = names[(DENY, PT_LITERAL)], names[(DENY, PT_PREFIXED)]
    if WILDCARD_RESOURCE in deny_literals:
        return False
    if config.allow_if_no_acls:
        return True
    allow_literals, allow_prefixes = names[(ALLOW, PT_LITERAL)], names[(ALLOW, PT_PREFIXED)]

    def dominated(name: str) -> bool:  # hasDominantPrefixedDeny: a non-empty deny prefix
        return any(name[:end] in deny_prefixes for end in range(1, len(name) + 1))

    return any(not dominated(p) for p in allow_prefixes) or any(
        lit == WILDCARD_RESOURCE or (lit not in deny_literals and not dominated(lit))
        for lit in allow_literals
    )
