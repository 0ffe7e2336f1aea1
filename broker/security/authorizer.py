"""Kafka's ZooKeeper ACL authorizer (``kafka.security.authorizer.AclAuthorizer``, 3.9;
docs/kafka-behaviour.md §21).

On when ``authorizer.class.name`` names it (or the pre-2.4 ``SimpleAclAuthorizer``).
``configure`` creates the ACL roots, follows both change roots with one
``zkbroker.zk_layout.store.ChangeNotificationListener`` each (a failed notification is logged
as ``authorizer.notification_failed`` and passed over) and loads every ACL into the cache.
Writes are versioned and retried on conflict, then notified. ``decide`` with an ``Audit`` logs
``authorizer.audit`` on ``kafka.authorizer.logger`` (§21, "The audit log"); whether a call is
logged is the caller's ``Audit`` (``zkbroker.handlers.support.authorization``).

Not here: matching and the decision (``zkbroker.broker.rules.acl_matching``), the request-level
rules (``handlers/*_acls.py``), an ``authorizer.zookeeper.url`` of its own, TRACE lines.
"""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from zkbroker.broker.log import ROOT_LOGGER, get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules import acl_matching as m
from zkbroker.zk_layout import BadVersionError, NodeExistsError, NoNodeError, ZnodeFormatError
from zkbroker.zk_layout.nodes.acl import (
    EXTENDED_ACL_CHANGES,
    LITERAL_ACL_CHANGES,
    AclChangeNode,
    AclEntry,
    AclNode,
    ExtendedAclChangeNode,
    ResourcePattern,
    acl_persistent_paths,
    acl_store_root,
)
from zkbroker.zk_layout.release import Release
from zkbroker.zk_layout.store import ChangeNotificationListener, Purge, ZkStore

log = get_logger(__name__)
#: Kafka's audit logger (AclAuthorizer.authorizerLogger): the name its level has in
#: DescribeConfigs and IncrementalAlterConfigs of BROKER_LOGGER.
AUDIT_LOGGER = "kafka.authorizer.logger"
#: The `logging` logger the audit lines go to, beside zkbroker's other events.
AUDIT_LOG = f"{ROOT_LOGGER}.{AUDIT_LOGGER}"

AUTHORIZER_CLASSES = frozenset(
    {"kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer"}
)
SUPER_USERS = "super.users"
ALLOW_EVERYONE = "allow.everyone.if.no.acl.found"
MAX_UPDATE_RETRIES = 10
_Change = Callable[[frozenset[m.Entry]], frozenset[m.Entry]]
_ANY_RELEASE: Release = (3, 9)  # the ACL znode formats never changed


def authorizer_configured(configs: Mapping[str, str]) -> bool:
    return configs.get("authorizer.class.name", "").strip() in AUTHORIZER_CLASSES


def config_from(configs: Mapping[str, str]) -> m.AuthorizerConfig:
    return m.AuthorizerConfig(
        super_users=m.parse_super_users(configs.get(SUPER_USERS, "")),
        allow_if_no_acls=configs.get(ALLOW_EVERYONE, "false").strip().lower() == "true",
    )


@dataclass(frozen=True)
class Audit:
    """How one request's decisions are audited: Kafka's ApiKeys name of the request and which
    results are logged (the Action's flags, already narrowed by the log levels)."""

    request: str
    allowed: bool
    denied: bool


# SecurityUtils.resourceTypeName for the audit line of authorizeByResourceType's pattern.
_NONE_RESOURCE = "UNKNOWN:NONE"


def _acl_text(e: m.Entry) -> str:
    """AclEntry.toString: ``User:alice has ALLOW permission for operations: READ from hosts: *``."""
    permission = m.PERMISSION_NAMES.get(e.permission, "UNKNOWN").upper()
    operation = _ENUM_NAMES.get(e.operation, "UNKNOWN")
    return (
        f"{e.principal} has {permission} permission for operations: {operation} "
        f"from hosts: {e.host}"
    )


# AclOperation's enum names, as AclEntry.toString prints them.
_ENUM_NAMES = {
    op: "".join("_" + c if c.isupper() and i else c for i, c in enumerate(name)).upper()
    for op, name in m.OPERATION_NAMES.items()
}


@dataclass(frozen=True)
class Outcome:
    """One result: Kafka's error code and message (None on success)."""

    error_code: int = error_codes.NONE
    error_message: str | None = None


def _zk_pattern(p: m.Pattern) -> ResourcePattern:
    return ResourcePattern(
        m.RESOURCE_TYPE_NAMES[p.resource_type], p.name, m.PATTERN_TYPE_NAMES[p.pattern_type]
    )


def _entry_to_zk(e: m.Entry) -> AclEntry:
    return AclEntry(
        principal=e.principal,
        permission_type=m.PERMISSION_NAMES[e.permission],
        operation=m.OPERATION_NAMES[e.operation],
        host=e.host,
    )


def _entry_from_zk(e: AclEntry) -> m.Entry:
    return m.Entry(
        e.principal, e.host, m.operation_code(e.operation), m.permission_code(e.permission_type)
    )


class AclAuthorizer:
    """One broker's authorizer over its ZooKeeper session."""

    def __init__(
        self,
        store: ZkStore,
        config: m.AuthorizerConfig,
        *,
        extended_acl_support: bool = True,
        broker_id: int = -1,
    ) -> None:
        self._store = store
        self.config = config
        self._extended = extended_acl_support
        self.index = m.AclIndex()
        self._lock = asyncio.Lock()
        self._log = log.bind(broker_id=broker_id)
        self._audit_log = get_logger(AUDIT_LOG).bind(broker_id=broker_id)
        self._listeners: list[ChangeNotificationListener] = []

    # ---- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        for path in acl_persistent_paths():
            # Before 2.0 (no extended ACL support) only the literal store exists.
            if self._extended or not path.startswith(("/kafka-acl-extended", EXTENDED_ACL_CHANGES)):
                await self._store.ensure_path(path)
        # Listeners first, then the cache, so no change falls between (AclAuthorizer.configure).
        roots = (
            (LITERAL_ACL_CHANGES, EXTENDED_ACL_CHANGES)
            if self._extended
            else (LITERAL_ACL_CHANGES,)
        )
        for root in roots:
            node = AclChangeNode if root == LITERAL_ACL_CHANGES else ExtendedAclChangeNode
            listener = ChangeNotificationListener.of(
                self._store,
                node,
                functools.partial(self._process_change, node),
                log=self._log,
                failed_event="authorizer.notification_failed",
                skip_failed=True,
                purge=Purge.WHEN_PROCESSED,
            )
            self._listeners.append(listener)
            await listener.start()
        async with self._lock:
            await self._load_all()
        self._log.info("authorizer.loaded", resources=len(self.index.acls))

    async def stop(self) -> None:
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            await listener.stop()

    # ---- decisions ----------------------------------------------------------------------------

    def authorize(
        self, principal: str, host: str, operation: int, resource_type: int, name: str
    ) -> bool:
        return m.authorize(self.index, self.config, principal, host, operation, resource_type, name)

    def decide(
        self,
        principal: str,
        host: str,
        operation: int,
        resource_type: int,
        name: str,
        audit: Audit,
        ref_count: int = 1,
    ) -> bool:
        """authorizeAction with Kafka's audit line (logAuditMessage) when `audit` asks for it."""
        allowed = m.authorize(
            self.index, self.config, principal, host, operation, resource_type, name
        )
        if audit.allowed if allowed else audit.denied:
            self._audit(principal, host, operation, resource_type, name, audit, ref_count)
        return allowed

    def _audit(
        self,
        principal: str,
        host: str,
        operation: int,
        resource_type: int,
        name: str,
        audit: Audit,
        ref_count: int,
    ) -> None:
        allowed, reason, entry = m.explain(
            self.index, self.config, principal, host, operation, resource_type, name
        )
        fields: dict[str, object] = {
            "principal": principal,
            "result": "Allowed" if allowed else "Denied",
            "operation": m.OPERATION_NAMES.get(operation, str(operation)),
            "host": host,
            "resource": f"{m.RESOURCE_TYPE_NAMES.get(resource_type, 'Unknown')}:LITERAL:{name}",
            "request": audit.request,
            "resource_ref_count": ref_count,
            "reason": reason,
        }
        if entry is not None:
            fields["acl"] = _acl_text(entry)
        if allowed:
            self._audit_log.debug("authorizer.audit", **fields)
        else:
            self._audit_log.info("authorizer.audit", **fields)

    def audit_by_resource_type(
        self,
        principal: str,
        host: str,
        operation: int,
        resource_type: int,
        allowed: bool,
        audit: Audit,
    ) -> None:
        """authorizeByResourceType's audit line: its action names the pattern
        ``<Type>:UNKNOWN:NONE``; a super user is allowed without one."""
        if principal in self.config.super_users or not (audit.allowed if allowed else audit.denied):
            return
        fields: dict[str, object] = {
            "principal": principal,
            "result": "Allowed" if allowed else "Denied",
            "operation": m.OPERATION_NAMES.get(operation, str(operation)),
            "host": host,
            "resource": f"{m.RESOURCE_TYPE_NAMES.get(resource_type, 'Unknown')}:{_NONE_RESOURCE}",
            "request": audit.request,
            "resource_ref_count": 0,
        }
        if allowed:
            self._audit_log.debug("authorizer.audit", **fields)
        else:
            self._audit_log.info("authorizer.audit", **fields)

    def authorized_operations(
        self, principal: str, host: str, resource_type: int, name: str
    ) -> int:
        return m.authorized_operations_bits(
            self.index, self.config, principal, host, resource_type, name
        )

    def describe(self, flt: m.BindingFilter) -> list[m.Binding]:
        return list(self.index.bindings(flt))

    # ---- ZooKeeper ----------------------------------------------------------------------------

    async def _read(self, pattern: m.Pattern) -> tuple[frozenset[m.Entry], int]:
        """getVersionedAclsForResource: the entries and znode version (-1 when absent)."""
        got = await self._store.get(AclNode.for_resource(_zk_pattern(pattern)))
        if got is None:
            return frozenset(), -1
        try:
            entries = AclNode.decode(got[0] or b"")
        except ZnodeFormatError as e:
            self._log.error("authorizer.unreadable_acls", pattern=str(pattern), reason=str(e))
            entries = frozenset()
        return frozenset(_entry_from_zk(e) for e in entries), got[1].version

    async def _load_all(self) -> None:
        for pattern_type in (m.PT_LITERAL, m.PT_PREFIXED):
            root = acl_store_root(m.PATTERN_TYPE_NAMES[pattern_type])
            for type_name in await self._store.get_children(root) or []:
                resource_type = m.RESOURCE_TYPE_CODES.get(type_name)
                if resource_type is None:
                    self._log.warning("authorizer.unknown_resource_type", type=type_name)
                    continue
                for name in await self._store.get_children(f"{root}/{type_name}") or []:
                    pattern = m.Pattern(resource_type, name, pattern_type)
                    entries, version = await self._read(pattern)
                    self.index.put(pattern, entries, version)

    async def _notify(self, pattern: m.Pattern) -> None:
        zk = _zk_pattern(pattern)
        if pattern.pattern_type == m.PT_LITERAL:
            path, data = AclChangeNode.create_path(), AclChangeNode.encode(zk, _ANY_RELEASE)
        else:
            path = ExtendedAclChangeNode.create_path()
            data = ExtendedAclChangeNode.encode(zk, _ANY_RELEASE)
        await self._store.create(path, data, sequence=True, makepath=True)

    async def _update(self, pattern: m.Pattern, change: _Change) -> bool:
        """updateResourceAcls: versioned read-modify-write; True when the ACLs changed."""
        if pattern in self.index.acls:
            current = self.index.acls[pattern]
            version = self.index.versions[pattern]
        else:
            current, version = await self._read(pattern)
        path = AclNode.for_resource(_zk_pattern(pattern))
        for attempt in range(MAX_UPDATE_RETRIES + 1):
            new = change(current)
            try:
                if new:
                    data = AclNode.encode(frozenset(_entry_to_zk(e) for e in new), _ANY_RELEASE)
                    if version >= 0:
                        stat = await self._store.set(path, data, version)
                        new_version = stat.version
                    else:
                        await self._store.create(path, data, makepath=True)
                        new_version = 0
                else:
                    if version >= 0:
                        await self._store.delete(path, version)
                    new_version = -1
                break
            except (BadVersionError, NodeExistsError, NoNodeError):
                if attempt == MAX_UPDATE_RETRIES:
                    raise RuntimeError(
                        f"Failed to update ACLs for {pattern} after trying a maximum of "
                        f"{MAX_UPDATE_RETRIES} times"
                    ) from None
                await asyncio.sleep((100 + random.randrange(50)) / 1000)
                current, version = await self._read(pattern)
        self.index.put(pattern, new, new_version)
        if new != current:
            await self._notify(pattern)
            return True
        return False

    # ---- the API operations -----------------------------------------------------------------

    async def create(self, bindings: Sequence[m.Binding]) -> list[Outcome]:
        """AclAuthorizer.createAcls: one outcome per binding, in order."""
        results: list[Outcome | None] = [None] * len(bindings)
        groups: dict[m.Pattern, list[int]] = {}
        for i, b in enumerate(bindings):
            # Kafka: UnsupportedVersion (no prefixed ACLs before IBP 2.0) or an invalid
            # binding, both wrapped in InvalidRequestException("Failed to create ACL").
            old_ibp = not self._extended and b.pattern.pattern_type == m.PT_PREFIXED
            if old_ibp or _is_unknown(b) or "/" in b.pattern.name:
                results[i] = Outcome(error_codes.INVALID_REQUEST, "Failed to create ACL")
            else:
                groups.setdefault(b.pattern, []).append(i)
        async with self._lock:
            for pattern, indexes in groups.items():
                added = frozenset(bindings[i].entry for i in indexes)
                try:
                    await self._update(pattern, added.union)
                    outcome = Outcome()
                except Exception as e:  # Kafka: apiException(e) -> UNKNOWN_SERVER_ERROR
                    self._log.error("authorizer.create_failed", pattern=str(pattern), error=repr(e))
                    outcome = Outcome(error_codes.UNKNOWN_SERVER_ERROR, None)
                for i in indexes:
                    results[i] = outcome
        return [r if r is not None else Outcome() for r in results]

    async def delete(
        self, filters: Sequence[m.BindingFilter]
    ) -> list[list[tuple[m.Binding, Outcome]]]:
        """AclAuthorizer.deleteAcls: per filter, the bindings it deleted."""
        deleted: dict[m.Binding, int] = {}
        failed: dict[m.Binding, Outcome] = {}
        async with self._lock:
            resources = list(self.index.patterns())
            for f in filters:
                if f.matches_at_most_one():
                    resources.extend(p for p in f.exact_patterns() if p not in resources)
            for pattern in resources:
                matching = [(f, i) for i, f in enumerate(filters) if f.matches_pattern(pattern)]
                if not matching:
                    continue
                being_deleted: dict[m.Binding, int] = {}

                def remove(
                    cur: frozenset[m.Entry],
                    pattern: m.Pattern = pattern,
                    matching: list[tuple[m.BindingFilter, int]] = matching,
                    being_deleted: dict[m.Binding, int] = being_deleted,
                ) -> frozenset[m.Entry]:
                    gone = set()
                    for entry in cur:
                        for f, i in matching:
                            if f.matches_entry(entry):
                                binding = m.Binding(pattern, entry)
                                deleted.setdefault(binding, i)
                                being_deleted.setdefault(binding, i)
                                gone.add(entry)
                                break
                    return cur - gone

                try:
                    await self._update(pattern, remove)
                except Exception as e:
                    self._log.error("authorizer.delete_failed", pattern=str(pattern), error=repr(e))
                    for binding in being_deleted:
                        failed.setdefault(binding, Outcome(error_codes.UNKNOWN_SERVER_ERROR))
        out: list[list[tuple[m.Binding, Outcome]]] = [[] for _ in filters]
        for binding, i in deleted.items():
            out[i].append((binding, failed.get(binding, Outcome())))
        return out

    # ---- change notifications ---------------------------------------------------------------

    async def _process_change(
        self, node: type[AclChangeNode] | type[ExtendedAclChangeNode], path: str, data: bytes
    ) -> None:
        """AclChangedNotificationHandler: re-read the one resource the notification names."""
        zk = node.decode(data or b"")
        pattern = m.Pattern(
            m.RESOURCE_TYPE_CODES[zk.resource_type],
            zk.name,
            m.PATTERN_TYPE_CODES[zk.pattern_type],
        )
        async with self._lock:
            entries, version = await self._read(pattern)
            self.index.put(pattern, entries, version)
        self._log.info(
            "authorizer.acl_change_processed",
            pattern=str(pattern),
            acls=len(entries),
            zk_version=version,
        )


def _is_unknown(b: m.Binding) -> bool:
    """AclBinding.isUnknown: an element Kafka did not recognise (a code outside its enums)."""
    return (
        b.pattern.resource_type not in m.RESOURCE_TYPE_NAMES
        or b.pattern.pattern_type not in m.PATTERN_TYPE_NAMES
        or b.entry.operation not in m.OPERATION_NAMES
        or b.entry.permission not in m.PERMISSION_NAMES
    )
