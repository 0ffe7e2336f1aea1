"""Client quota entities and keys as a ZooKeeper-mode broker validates them (KIP-546), as pure code.

Follows Kafka 3.9's `ZkAdminManager.describeClientQuotas` / `alterClientQuotas` /
`parseAndSanitizeQuotaEntity`, `DescribeClientQuotasRequest.filter` and the per-release quota
keys of `QuotaConfigs` / `DynamicConfig` (docs/kafka-behaviour.md §22): entity types and their
sanitized znode paths (`zkbroker.zk_layout.sanitizer`), keys and their ConfigDef types per
release, values written as Kafka writes them, and describe filters (`matches`, `strict`).

Not here: ZooKeeper I/O and host name resolution (the handlers), and the rate math of
throttling (`zkbroker.broker.rules.quota_rates`).
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.jvm_collections import java_hashmap_order
from zkbroker.zk_layout import DEFAULT_ENTITY, ConfigType, desanitize, sanitize

USER: Final = "user"
CLIENT_ID: Final = "client-id"
IP: Final = "ip"

PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"
CONTROLLER_MUTATION_RATE: Final = "controller_mutation_rate"
CONNECTION_CREATION_RATE: Final = "connection_creation_rate"

MATCH_EXACT: Final = 0
MATCH_DEFAULT: Final = 1
MATCH_ANY: Final = 2

Release = tuple[int, ...]


class QuotaError(Exception):
    """A Kafka exception that becomes an ApiError: its code and message (None for
    UNKNOWN_SERVER_ERROR, whose message Kafka never sends)."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _invalid(message: str) -> QuotaError:
    return QuotaError(error_codes.INVALID_REQUEST, message)


def client_quota_keys(release: Release) -> dict[str, str]:
    """Quota key -> ConfigDef type of `QuotaConfigs` client/user quotas."""
    keys = {
        PRODUCER_BYTE_RATE: "LONG",
        CONSUMER_BYTE_RATE: "LONG",
        REQUEST_PERCENTAGE: "DOUBLE",
    }
    if release >= (2, 7):
        keys[CONTROLLER_MUTATION_RATE] = "DOUBLE"
    return keys


def user_config_keys(release: Release) -> dict[str, str]:
    keys = client_quota_keys(release)
    if release >= (2, 7):
        keys.update({"SCRAM-SHA-256": "PASSWORD", "SCRAM-SHA-512": "PASSWORD"})
    return keys


def ip_config_keys(release: Release) -> dict[str, str]:
    return {CONNECTION_CREATION_RATE: "INT"} if release >= (2, 7) else {}


def ip_entity_supported(release: Release) -> bool:
    return release >= (2, 8)


def java_double_text(value: float) -> str:
    """Java's `Double.toString`: plain decimal in [1e-3, 1e7), else `d.dddE<exp>`, from the
    shortest digits that read back as the same double (what `repr` finds)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return f"{sign}0.0"
    exact = Decimal(repr(abs(value)))
    if Decimal("0.001") <= exact < Decimal(10_000_000):
        whole, _, fraction = format(exact, "f").partition(".")
        return f"{sign}{whole}.{fraction.rstrip('0') or '0'}"
    t = exact.normalize().as_tuple()
    digits = "".join(str(d) for d in t.digits)
    exponent = len(t.digits) + int(t.exponent) - 1
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def parse_java_double(text: str) -> float:
    """`String.toDouble` for what ZooKeeper holds (trimmed; Java's d/f suffixes allowed)."""
    stripped = text.strip()
    if stripped[-1:] in ("d", "D", "f", "F"):
        stripped = stripped[:-1]
    return float(stripped)


@dataclass(frozen=True)
class QuotaEntity:
    """A request's entity: entity type -> name (None: the default), as Kafka's HashMap."""

    entries: tuple[tuple[str, str | None], ...]

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str | None]]) -> QuotaEntity:
        as_map: dict[str, str | None] = {}
        for entity_type, name in pairs:
            as_map[entity_type] = name  # a repeated type: the last one wins, as in a HashMap
        return cls(tuple((t, as_map[t]) for t in java_hashmap_order(as_map)))

    def name_of(self, entity_type: str) -> str | None:
        return dict(self.entries)[entity_type]


@dataclass(frozen=True)
class EntityTarget:
    """Where an entity's quotas live: `/config/<config_type>/<path_name>`."""

    config_type: str
    path_name: str
    keys: Mapping[str, str]
    ip: str | None = None  # the IP or host name to check, when the entity is an IP


def _sanitized(name: str | None) -> str:
    return DEFAULT_ENTITY if name is None else sanitize(name)


def entity_target(entity: QuotaEntity, release: Release) -> EntityTarget:
    """Kafka's `parseAndSanitizeQuotaEntity` and the entity match of `alterEntityQuotas`."""
    if not entity.entries:
        raise _invalid("Invalid empty client quota entity")
    user = client = ip = None
    known = (USER, CLIENT_ID, IP) if ip_entity_supported(release) else (USER, CLIENT_ID)
    for entity_type, name in entity.entries:
        if entity_type not in known:
            raise _invalid(f"Unhandled client quota entity type: {entity_type}")
        if entity_type == USER:
            user = _sanitized(name)
        elif entity_type == CLIENT_ID:
            client = _sanitized(name)
        else:
            ip = _sanitized(name)
        if name is not None and not name:
            raise _invalid(f"Empty {entity_type} not supported")
    if ip is not None:
        if user is not None or client is not None:
            raise _invalid(
                "Invalid quota entity combination, IP entity should not be used with "
                "user/client ID entity."
            )
        return EntityTarget(ConfigType.IPS, ip, ip_config_keys(release), ip=ip)
    if user is not None and client is not None:
        return EntityTarget(ConfigType.USERS, f"{user}/clients/{client}", user_config_keys(release))
    if user is not None:
        return EntityTarget(ConfigType.USERS, user, user_config_keys(release))
    if client is not None:
        return EntityTarget(ConfigType.CLIENTS, client, client_quota_keys(release))
    raise _invalid("Invalid client quota entity")


def is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def invalid_ip(ip: str) -> QuotaError:
    return _invalid(f"{ip} is not a valid IP or resolvable host.")


@dataclass(frozen=True)
class QuotaOp:
    key: str
    value: float
    remove: bool


def apply_ops(
    props: Mapping[str, str], ops: Sequence[QuotaOp], keys: Mapping[str, str]
) -> dict[str, str]:
    """The entity's new properties after Kafka's `alterEntityQuotas` ops, in order."""
    out = dict(props)
    for op in ops:
        if op.remove:
            out.pop(op.key, None)
            continue
        key_type = keys.get(op.key)
        if key_type is None:
            raise _invalid(f"Invalid configuration key {op.key}")
        if key_type == "DOUBLE":
            out[op.key] = java_double_text(op.value)
        elif key_type in ("LONG", "INT"):
            epsilon = 1e-6
            whole = _java_narrow(op.value + epsilon, key_type)
            if abs(float(whole) - op.value) > epsilon:
                raise _invalid(f"Configuration {op.key} must be a {key_type} value")
            out[op.key] = str(whole)
        else:
            raise QuotaError(error_codes.UNKNOWN_SERVER_ERROR, None)  # IllegalStateException
    return out


def _java_narrow(value: float, key_type: str) -> int:
    """Scala's Double.toLong / toInt: truncation, NaN -> 0, saturating at the type's bounds."""
    if math.isnan(value):
        return 0
    bits = 63 if key_type == "LONG" else 31
    low, high = -(2**bits), 2**bits - 1
    if math.isinf(value):
        return high if value > 0 else low
    return max(low, min(high, int(value)))


@dataclass(frozen=True)
class FilterComponent:
    entity_type: str
    match_type: int
    match: str | None

    @property
    def wanted(self) -> tuple[bool, str | None]:
        """(any name, else the exact name with None for the default)."""
        if self.match_type == MATCH_ANY:
            return True, None
        return False, self.match if self.match_type == MATCH_EXACT else None


def check_filter(components: Sequence[FilterComponent], release: Release) -> None:
    """`DescribeClientQuotasRequest.filter` and the checks of `describeClientQuotas`."""
    seen: set[str] = set()
    types = (USER, CLIENT_ID, IP) if ip_entity_supported(release) else (USER, CLIENT_ID)
    for c in components:
        if c.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY):
            raise QuotaError(error_codes.UNKNOWN_SERVER_ERROR, None)  # IllegalArgumentException
        if c.match_type == MATCH_EXACT and c.match is None:
            raise QuotaError(error_codes.UNKNOWN_SERVER_ERROR, None)  # NullPointerException
        if c.entity_type in types:
            if c.entity_type in seen:
                label = "client" if c.entity_type == CLIENT_ID else c.entity_type
                raise _invalid(f"Duplicate {label} filter component entity type")
            seen.add(c.entity_type)
        elif not c.entity_type:
            raise _invalid("Unexpected empty filter component entity type")
        else:
            raise QuotaError(
                error_codes.UNSUPPORTED_VERSION,
                f"Custom entity type '{c.entity_type}' not supported",
            )
    if IP in seen and (USER in seen or CLIENT_ID in seen):
        raise _invalid(
            "Invalid entity filter component combination, IP filter component should not be "
            "used with user or clientId filter component."
        )


@dataclass(frozen=True)
class StoredEntity:
    """One entity node read from ZooKeeper: its unsanitized names (None: `<default>`; absent
    type: not part of the entity) and its properties."""

    user: tuple[str | None] | None
    client: tuple[str | None] | None
    ip: tuple[str | None] | None
    props: Mapping[str, str]


def stored_name(path_name: str) -> tuple[str | None]:
    return (None,) if path_name == DEFAULT_ENTITY else (desanitize(path_name),)


def _matches(
    component: FilterComponent | None, name: tuple[str | None] | None, strict: bool
) -> bool:
    if component is None:
        return name is None or not strict
    if name is None:
        return False
    any_name, exact = component.wanted
    return any_name or name[0] == exact


def describe(
    components: Sequence[FilterComponent],
    strict: bool,
    stored: Iterable[StoredEntity],
    release: Release,
) -> list[tuple[list[tuple[str, str | None]], list[tuple[str, float]]]]:
    """The entities (type/name pairs in Kafka's HashMap order) and quota values a filter
    selects, after `check_filter`; entities with no quota key are left out, as Kafka does."""
    by_type = {c.entity_type: c for c in components}
    user_c, client_c, ip_c = by_type.get(USER), by_type.get(CLIENT_ID), by_type.get(IP)
    quota_keys = set(client_quota_keys(release))
    ip_keys = set(ip_config_keys(release))
    out: list[tuple[list[tuple[str, str | None]], list[tuple[str, float]]]] = []
    for s in stored:
        if s.ip is not None:
            if user_c is not None or client_c is not None:
                continue
            if not _matches(ip_c, s.ip, strict):
                continue
            keys = ip_keys
            pairs: list[tuple[str, str | None]] = [(IP, s.ip[0])]
        else:
            if ip_c is not None:
                continue
            if not (_matches(user_c, s.user, strict) and _matches(client_c, s.client, strict)):
                continue
            keys = quota_keys
            as_map: dict[str, str | None] = {}
            if s.user is not None:
                as_map[USER] = s.user[0]
            if s.client is not None:
                as_map[CLIENT_ID] = s.client[0]
            pairs = [(t, as_map[t]) for t in java_hashmap_order(as_map)]
        values = [(k, v) for k, v in s.props.items() if k in keys]
        if values:
            try:
                parsed = [(k, parse_java_double(v)) for k, v in values]
            except ValueError as e:
                raise QuotaError(error_codes.UNKNOWN_SERVER_ERROR, None) from e
            out.append((pairs, parsed))
    return out
