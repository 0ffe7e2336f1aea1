"""Kafka's broker configs by release and name: `broker_config_keys`, `broker_config_key`
(listener-prefixed names included), `broker_synonyms`, `is_dynamic` and
`read_only_in_describe` (Kafka's behaviour: §4.1, §4.3).

Lookups over `BROKER_CONFIG_KEYS` (``broker_config_table``) with the rules of ``KafkaConfig``
and ``DynamicBrokerConfig``. Pure: no I/O. Not here: the table itself, validating dynamic
updates (``broker_config_validation``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from functools import cache

from zkbroker.broker.rules.broker_config_table import BROKER_CONFIG_KEYS
from zkbroker.broker.rules.broker_config_types import BrokerConfigKey, DynamicScope
from zkbroker.zk_layout.release import Release, normalize_release


@cache
def keys_of(release: Release) -> tuple[BrokerConfigKey, ...]:
    """Every record that applies to `release`, in definition order (dynamic-only ones first)."""
    return tuple(k for k in BROKER_CONFIG_KEYS if k.applies_to(release))


@cache
def key_index(release: Release) -> Mapping[str, BrokerConfigKey]:
    return {k.name: k for k in keys_of(release)}


@cache
def _sorted_keys(release: Release, include_internal: bool) -> tuple[BrokerConfigKey, ...]:
    keys = [
        k for k in keys_of(release) if not k.dynamic_only and (include_internal or not k.internal)
    ]
    return tuple(sorted(keys, key=lambda k: k.name))


def broker_config_keys(
    release: Release, *, include_internal: bool = False
) -> dict[str, BrokerConfigKey]:
    """KafkaConfig's keys in `release`, ordered by name. Internal keys (ConfigDef
    defineInternal, hidden by DescribeConfigs) only with `include_internal`; the dynamic-only
    quota keys never (DescribeConfigs lists them only when they are set)."""
    return {k.name: k for k in _sorted_keys(normalize_release(release), include_internal)}


# ListenerConfigRegex `listener\.name\.[^.]*\.(.*)`: Java's `.` stops at any line terminator.
LISTENER_PREFIX = re.compile(r"listener\.name\.[^.]*\.([^\n\r\u0085\u2028\u2029]*)")

# ListenerMechanismConfigs: listener overrides of these are written
# listener.name.<listener>.<mechanism>.<key>.
_MECHANISM_CONFIGS_1_1 = ("sasl.jaas.config",)
_MECHANISM_CONFIGS_2_7 = (
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.server.callback.handler.class",
    "connections.max.reauth.ms",
)


def _mechanism_configs(release: Release) -> tuple[str, ...]:
    return _MECHANISM_CONFIGS_2_7 if release >= (2, 7) else _MECHANISM_CONFIGS_1_1


def _listener_base(name: str, release: Release) -> str | None:
    """The key a listener-prefixed name stands for (brokerConfigSynonyms' second entry)."""
    m = LISTENER_PREFIX.fullmatch(name)
    if m is None:
        return None
    base = m.group(1)
    for mechanism in _mechanism_configs(release):
        if base.endswith(mechanism):
            return mechanism
    return base


# Listener configs that stay cluster-wide with a listener prefix (ClusterLevelListenerConfigs).
def cluster_level_listener_configs(release: Release) -> frozenset[str]:
    if release >= (3, 2):
        return frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})
    if release >= (2, 7):
        return frozenset({"max.connections", "max.connection.creation.rate"})
    if release >= (2, 3):
        return frozenset({"max.connections"})
    return frozenset()


def broker_config_key(name: str, release: Release) -> BrokerConfigKey | None:
    """The key `name` in `release` (internal and dynamic-only keys included), or None.

    A listener-prefixed name `listener.name.<l>.<key>` (1.1+) resolves as KafkaConfig.configType
    does, through its base key (`<key>`, or the SASL mechanism key for
    `listener.name.<l>.<mechanism>.sasl.jaas.config` and friends): the record keeps the type,
    validator and sensitivity of the base key but carries the prefixed name, no default (nothing
    defines one) and the scope DynamicBrokerConfig gives every listener override: PER_BROKER,
    except the ClusterLevelListenerConfigs (max.connections, max.connection.creation.rate, and
    num.network.threads from 3.2), which stay CLUSTER_WIDE.
    """
    r = normalize_release(release)
    index = key_index(r)
    key = index.get(name)
    if key is not None or r < (1, 1):
        return key
    base_name = _listener_base(name, r)
    base = None if base_name is None else index.get(base_name)
    if base is None or base_name is None:
        return None
    cluster = base_name in cluster_level_listener_configs(r)
    return dataclasses.replace(
        base,
        name=name,
        default=None,
        scope=DynamicScope.CLUSTER_WIDE if cluster else DynamicScope.PER_BROKER,
    )


def broker_synonyms(
    name: str, release: Release = (2, 8), *, match_listener_override: bool = True
) -> list[str]:
    """DynamicBrokerConfig.brokerConfigSynonyms (same rules 1.1-3.9), in Kafka's order.

    ConfigHelper (DescribeConfigs) calls it with `matchListenerOverride = true`, which is the
    default here: a listener-prefixed name gives [name, base key]. KafkaConfig.configType uses
    the same. With False a prefixed name is its own only synonym.
    """
    match name:
        case "log.roll.ms" | "log.roll.hours":
            return ["log.roll.ms", "log.roll.hours"]
        case "log.roll.jitter.ms" | "log.roll.jitter.hours":
            return ["log.roll.jitter.ms", "log.roll.jitter.hours"]
        case "log.flush.interval.ms":  # log.flush.scheduler.interval.ms is its default
            return ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]
        case "log.retention.ms" | "log.retention.minutes" | "log.retention.hours":
            return ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]
    if match_listener_override:
        base = _listener_base(name, normalize_release(release))
        if base is not None:
            return [name, base]
    return [name]


def is_dynamic(name: str, release: Release) -> bool:
    """True if AlterConfigs may set `name` on a broker of `release` (1.1+): a key of
    AllDynamicConfigs, a dynamic-only quota key, or a listener override of a dynamic key.

    Note that Kafka accepts *any* listener-prefixed name and any unknown (custom) name without
    complaint (see `validate_broker_configs`); this answers whether the key is dynamic.
    """
    r = normalize_release(release)
    key = key_index(r).get(name)
    if key is None and r >= (1, 1):  # a listener override is as dynamic as its base key
        base = _listener_base(name, r)
        key = None if base is None else key_index(r).get(base)
    return key is not None and key.scope is not DynamicScope.READ_ONLY


def read_only_in_describe(name: str, release: Release) -> bool:
    """DescribeConfigs' `read_only` for a broker entry: `!AllDynamicConfigs.contains(name)` on
    the exact name, so listener-prefixed names, the dynamic-only quota keys and unknown names
    are all reported read-only."""
    key = key_index(normalize_release(release)).get(name)
    return key is None or key.dynamic_only or key.scope is DynamicScope.READ_ONLY
