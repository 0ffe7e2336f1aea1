"""Whether Kafka accepts a dynamic broker config update: `validate_broker_configs`, Kafka's
``DynamicBrokerConfig.validateConfigs`` and the reconfigurables' value rules (Kafka's
behaviour: §4.1).

Pure: no I/O. Not emulated: KafkaConfig's cross-key checks, listener reconfiguration, SSL
store loading, class loading beyond `LOADABLE_CLASSES`. Not here: the keys and their lookups
(``broker_config_table``, ``broker_config_catalog``).
"""

from __future__ import annotations

from collections.abc import Mapping

from zkbroker.broker.rules.broker_config_catalog import (
    LISTENER_PREFIX,
    cluster_level_listener_configs,
    key_index,
    keys_of,
)
from zkbroker.broker.rules.broker_config_table import LOADABLE_CLASSES
from zkbroker.broker.rules.broker_config_types import DynamicScope
from zkbroker.broker.rules.config_def import (
    ConfigType,
    InvalidConfig,
    config_error,
    java_trim,
    parse_value,
    validate_value,
)
from zkbroker.broker.rules.jvm_collections import (
    java_properties_order,
    scala_mutable_hashset_text,
    scala_set_concat_text,
    scala_set_text,
)
from zkbroker.zk_layout.release import Release, normalize_release


def _security_configs(release: Release) -> tuple[str, ...]:
    """SslConfigs.RECONFIGURABLE_CONFIGS: settable only with a listener prefix."""
    keys = ["ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
            "ssl.key.password"]  # fmt: skip
    if release >= (2, 0):
        keys += ["ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password"]
    if release >= (2, 7):
        keys += ["ssl.keystore.certificate.chain", "ssl.keystore.key",
                 "ssl.truststore.certificates"]  # fmt: skip
    return tuple(keys)


def _thread_pool_configs(release: Release) -> tuple[str, ...]:
    """DynamicThreadPool.ReconfigurableConfigs (num.network.threads moved to the listener
    reconfigurables in 3.2, where it is validated per listener, not here)."""
    if release >= (3, 2):
        return ("num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
                "background.threads")  # fmt: skip
    return ("num.io.threads", "num.network.threads", "num.replica.fetchers",
            "num.recovery.threads.per.data.dir", "background.threads")  # fmt: skip


def _int_value(name: str, configs: Mapping[str, str], release: Release) -> int:
    key = key_index(release)[name]
    text = configs.get(name)
    value = parse_value(key, text if text is not None else key.default or "0")
    assert isinstance(value, int)
    return value


def _wrapped(message: str) -> InvalidConfig:
    """processReconfiguration's `new ConfigException("Invalid dynamic configuration", e)`,
    which is the (name, value) constructor: the cause's toString becomes the 'value'."""
    return config_error(
        "Invalid dynamic configuration",
        f"org.apache.kafka.common.config.ConfigException: {message}",
        None,
    )


# Approximations: no whole KafkaConfig is rebuilt, so its cross-key checks, listener
# reconfiguration, SSL/SASL channel checks, reporter/callback classes, the alter-config policy and
# the 3.x remote-log and producer-state reconfigurables are not emulated. Thread-pool and cleaner
# rules compare with `current`; a per-broker override hiding a new cluster default is ignored.
# 3.9 builds its dynamic ConfigDef from a Scala HashMap, so with several bad values it may name
# another one first than the 2.8 order used here.
def validate_broker_configs(
    configs: Mapping[str, str],
    release: Release,
    *,
    per_broker: bool,
    current: Mapping[str, str] | None = None,
    reconfiguration: bool = True,
) -> None:
    """Raise InvalidConfig if Kafka refuses to set `configs` dynamically (1.1+ rules).

    `configs` is the complete property set Kafka validates, in the order the handler put it
    into Kafka's `Properties` (AlterConfigs: the request entries without nulls; incremental:
    the stored overrides with the operations applied). `per_broker` is False for the cluster
    default (`<default>`, empty resource name). `current` holds the broker's effective values
    before the change (Kafka defaults for missing keys) for the thread-count rules;
    `reconfiguration=False` leaves those rules out, as a broker applying what ZooKeeper holds
    (`fromPersistentProps`) does.

    Checks, in Kafka's order; every failure is a ConfigException in Kafka
    (`config_exception=True`; AlterConfigs maps it to INVALID_REQUEST before 3.3, INVALID_CONFIG
    from 3.3); none of them raises InvalidConfigurationException:
    1. names of KafkaConfig that are not dynamic (internal ones too):
       "Cannot update these configs dynamically: Set(...)";
    2. SslConfigs.RECONFIGURABLE_CONFIGS without listener prefix: "These security configs can be
       dynamically updated only per-listener using the listener prefix: HashSet(...)";
    3. the values of the dynamic keys (listener prefixes stripped, so messages name the base
       key), parsed and validated in definition order: "Invalid value X for configuration Y: ...";
    4. at the cluster default, per-broker keys and listener overrides (except the cluster-level
       listener keys): "Cannot update these configs at default cluster level, broker id must be
       specified: Set(...)";
    5. thread counts (DynamicThreadPool, log.cleaner.threads) that change by more than a factor
       of two, wrapped as Kafka wraps reconfigurable failures: "Invalid value
       org.apache.kafka.common.config.ConfigException: ... for configuration Invalid dynamic
       configuration".
    Unknown (custom) names are accepted (customPropsAllowed = true) and so is any
    listener-prefixed name, even of a read-only base key.
    """
    r = normalize_release(release)
    names = java_properties_order(configs)
    _refuse_read_only(names, r)
    _refuse_unprefixed_security(configs, r)
    _validate_values(names, configs, r)
    if not per_broker:
        _refuse_per_broker_at_default(names, r)
    if reconfiguration:
        _validate_thread_counts(configs, r, current or {})


def _refuse_read_only(names: list[str], release: Release) -> None:
    """Check 1: no name of a KafkaConfig key that is not dynamic (internal ones too)."""
    index = key_index(release)
    non_dynamic = [
        n for n in names
        if (k := index.get(n)) is not None and not k.dynamic_only
        and k.scope is DynamicScope.READ_ONLY
    ]  # fmt: skip
    if non_dynamic:
        raise InvalidConfig(
            f"Cannot update these configs dynamically: {scala_set_text(non_dynamic)}",
            config_exception=True,
        )


def _refuse_unprefixed_security(configs: Mapping[str, str], release: Release) -> None:
    """Check 2: no SslConfigs.RECONFIGURABLE_CONFIGS key without a listener prefix."""
    security = [n for n in _security_configs(release) if n in configs] if release >= (1, 1) else []
    if security:
        raise InvalidConfig(
            "These security configs can be dynamically updated only per-listener using the "
            f"listener prefix: {scala_mutable_hashset_text(security)}",
            config_exception=True,
        )


def _refuse_per_broker_at_default(names: list[str], release: Release) -> None:
    """Check 4, at the cluster default: no per-broker key and no listener override other than
    of the cluster-level listener keys."""
    index = key_index(release)
    cluster_level = cluster_level_listener_configs(release)
    # Kafka's perBrokerConfigs: `names.intersect(PerBrokerConfigs) ++ names.filter(
    # listener override)`, two Sets joined (their order differs from one Set's only for
    # names of equal hash).
    listed = [n for n in names if (k := index.get(n)) is not None
              and k.scope is DynamicScope.PER_BROKER]  # fmt: skip
    overrides = []
    for n in names:
        m = LISTENER_PREFIX.fullmatch(n)
        if m is not None and release >= (1, 1) and m.group(1) not in cluster_level:
            overrides.append(n)
    if listed or overrides:
        raise InvalidConfig(
            "Cannot update these configs at default cluster level, broker id must be "
            f"specified: {scala_set_concat_text(listed, overrides)}",
            config_exception=True,
        )


def _validate_values(names: list[str], configs: Mapping[str, str], release: Release) -> None:
    """DynamicConfig.Broker.validate: listener prefixes stripped (a later name wins), then
    ConfigDef.parse over the dynamic keys in definition order."""
    base_values: dict[str, str] = {}
    for n in names:
        m = LISTENER_PREFIX.fullmatch(n) if release >= (1, 1) else None
        base_values[m.group(1) if m else n] = configs[n]
    for key in keys_of(release):
        if key.scope is DynamicScope.READ_ONLY and not key.dynamic_only:
            continue
        text = base_values.get(key.name)
        if text is None:
            continue  # the default is used, and every dynamic default passes its validator
        if key.type is ConfigType.CLASS:
            if java_trim(text) not in LOADABLE_CLASSES:
                raise config_error(key.name, text, f"Class {text} could not be found.")
            continue
        validate_value(key, text)


def _validate_thread_counts(
    configs: Mapping[str, str], release: Release, current: Mapping[str, str]
) -> None:
    checks: list[tuple[str, bool]] = [(n, True) for n in _thread_pool_configs(release)]
    checks.append(("log.cleaner.threads", False))
    for name, pool in checks:
        if name not in configs or name not in key_index(release):
            continue
        new = _int_value(name, configs, release)
        old = _int_value(name, current, release)
        if new == old:
            continue
        if pool:
            prefix = f"Dynamic thread count update validation failed for {name}={new}"
            if new <= 0:
                raise _wrapped(f"{prefix}, value should be at least 1")
            if new < old // 2:
                raise _wrapped(f"{prefix}, value should be at least half the current value {old}")
            if new > old * 2:
                raise _wrapped(
                    f"{prefix}, value should not be greater than double the current value {old}"
                )
        else:
            if new < 1:
                raise _wrapped("Log cleaner threads should be at least 1")
            if new < old // 2:
                raise _wrapped(
                    f"Log cleaner threads cannot be reduced to less than half the current value "
                    f"{old}"
                )
            if new > old * 2:
                raise _wrapped(
                    "Log cleaner threads cannot be increased to more than double the current "
                    f"value {old}"
                )
