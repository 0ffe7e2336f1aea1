"""Kafka's broker configs as data: every KafkaConfig key of every emulated release and the
dynamic-update rules of `DynamicBrokerConfig` (Kafka's behaviour: §4.1, §4.3).

One `BrokerConfigKey` per key variant (a release range), in 2.8's definition order;
`is_dynamic`, `read_only_in_describe`, listener-prefixed names, `broker_synonyms`, and
`validate_broker_configs`. Pure: no I/O. Not emulated: KafkaConfig's cross-key checks,
listener reconfiguration, SSL store loading, class loading beyond `LOADABLE_CLASSES`.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from zkbroker.broker.rules.config_catalog import (
    ConfigKey,
    ConfigType,
    ConfigValue,
    GzipLevel,
    InvalidConfig,
    Validator,
    ValidList,
    ValidString,
    at_least,
    between,
    config_error,
    java_double_str,
    java_trim,
    java_value_str,
    message_format_version_default,
    parse_value,
    validate_value,
    version_key_eras,
)
from zkbroker.broker.rules.jvm_collections import (
    java_hashmap_order,
    java_properties_order,
    scala_mutable_hashset_text,
    scala_set_concat_text,
    scala_set_text,
)
from zkbroker.zk_layout.release import Release, normalize_release


class DynamicScope(enum.Enum):
    """How AlterConfigs may change a broker key (DynamicBrokerConfig)."""

    READ_ONLY = "read-only"  # not in AllDynamicConfigs
    PER_BROKER = "per-broker"  # PerBrokerConfigs: only on /config/brokers/<id>
    CLUSTER_WIDE = "cluster-wide"  # per broker or at the cluster default <default>


@dataclass(frozen=True)
class BrokerConfigKey(ConfigKey):
    """One broker config as one range of releases defines it.

    `dynamic_only` marks the `DynamicConfig.Broker` quota keys that KafkaConfig does not define:
    they can be set dynamically but are neither listed by DescribeConfigs unless set nor part
    of `broker_config_keys`.
    """

    scope: DynamicScope = DynamicScope.READ_ONLY
    dynamic_only: bool = False


# --------------------------------------------------------------------------------------------
# Validators config_catalog does not have (ConfigDef's and Kafka's own classes)


@dataclass(frozen=True)
class CaseInsensitiveValidString:
    """ConfigDef.CaseInsensitiveValidString: the message lists the upper-cased options in the
    order of the java.util.HashSet that holds them."""

    options: tuple[str, ...]

    def __call__(self, name: str, value: ConfigValue) -> None:
        upper = [o.upper() for o in self.options]
        if not isinstance(value, str) or value.upper() not in upper:
            listed = ", ".join(java_hashmap_order(upper))
            raise config_error(
                name, java_value_str(value), f"String must be one of (case insensitive): {listed}"
            )


@dataclass(frozen=True)
class NonEmptyString:
    """ConfigDef.NonEmptyString (null passes)."""

    def __call__(self, name: str, value: ConfigValue) -> None:
        if value == "":
            raise config_error(name, "", "String must be non-empty")


@dataclass(frozen=True)
class NonNull:
    """ConfigDef.NonNullValidator; a string value is never null, so only defaults can fail."""

    def __call__(self, name: str, value: ConfigValue) -> None:
        return None


@dataclass(frozen=True)
class MinusOneOrPositive:
    """RemoteLogManagerConfig's thread-pool-size rule (3.9): -1 or at least 1."""

    def __call__(self, name: str, value: ConfigValue) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name}: an int was expected, got {value!r}")
        if value < -1 or value == 0:
            raise config_error(name, str(value), "Value can be -1 or greater than 0")


# --------------------------------------------------------------------------------------------
# Option lists and long defaults used by the table

_CLEANUP = ("compact", "delete")
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
_PROCESS_ROLES = ("broker", "controller")
_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_SSL_CLIENT_AUTH = ("required", "requested", "none")
_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_GROUP_TYPES_3_7 = ("consumer", "classic")
_GROUP_TYPES_3_8 = ("consumer", "classic", "unknown")
_GROUP_TYPES_3_9 = ("consumer", "classic", "share", "unknown")
_MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")

_LONG_MAX = "9223372036854775807"
_INT_MAX = "2147483647"
_LISTENER_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
_ASSIGNOR_PACKAGE = "org.apache.kafka.coordinator.group.assignor."
_RANGE_ASSIGNOR = _ASSIGNOR_PACKAGE + "RangeAssignor"
_ASSIGNORS = f"{_ASSIGNOR_PACKAGE}UniformAssignor,{_RANGE_ASSIGNOR}"
_TOPIC_BASED_RLMM = (
    "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"
)
_DEFAULT_PRINCIPAL_BUILDER = (
    "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
)
_OLD_PRINCIPAL_BUILDER = "org.apache.kafka.common.security.auth.DefaultPrincipalBuilder"

# Classes a stock broker can load for the dynamic CLASS keys (principal.builder.class,
# ssl.engine.factory.class); any other name fails ConfigDef.parseType.
LOADABLE_CLASSES: frozenset[str] = frozenset({
    _DEFAULT_PRINCIPAL_BUILDER,
    _OLD_PRINCIPAL_BUILDER,
    "org.apache.kafka.common.security.ssl.DefaultSslEngineFactory",
})  # fmt: skip

_B, _S, _I, _SH = ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.SHORT
_L, _D, _LI, _C = ConfigType.LONG, ConfigType.DOUBLE, ConfigType.LIST, ConfigType.CLASS
_P = ConfigType.PASSWORD
_PB, _CW = DynamicScope.PER_BROKER, DynamicScope.CLUSTER_WIDE


def _k(
    name: str,
    type_: ConfigType,
    default: str | None,
    validator: Validator | None = None,
    *,
    since: Release = (0, 10, 0),
    until: Release | None = None,
    scope: DynamicScope = DynamicScope.READ_ONLY,
    internal: bool = False,
    dynamic_only: bool = False,
) -> BrokerConfigKey:
    sensitive = type_ is ConfigType.PASSWORD
    return BrokerConfigKey(
        name=name,
        type=type_,
        default=None if sensitive else default,
        validator=validator,
        since=since,
        until=until,
        sensitive=sensitive,
        internal=internal,
        scope=scope,
        dynamic_only=dynamic_only,
    )


def _internal_until(
    public_since: Release,
    name: str,
    type_: ConfigType,
    default: str | None,
    validator: Validator | None = None,
    *,
    since: Release,
) -> list[BrokerConfigKey]:
    """A read-only key defined internal (settable, hidden from DescribeConfigs) from `since`
    and public from `public_since`: its two records."""
    return [
        _k(name, type_, default, validator, since=since, until=public_since, internal=True),
        _k(name, type_, default, validator, since=public_since),
    ]


# Latest metadata version of each 3.x release (MetadataVersion.latest up to 3.6,
# latestProduction from 3.7); before 3.0 the latest ApiVersion equals the message-format default.
_LATEST_IBP_3X: Mapping[Release, str] = {
    (3, 0): "3.0-IV1", (3, 1): "3.1-IV0", (3, 2): "3.2-IV0", (3, 3): "3.3-IV3",
    (3, 4): "3.4-IV0", (3, 5): "3.5-IV2", (3, 6): "3.6-IV2", (3, 7): "3.7-IV4",
    (3, 8): "3.8-IV0", (3, 9): "3.9-IV0",
}  # fmt: skip


def inter_broker_protocol_default(release: Release) -> str:
    """The `inter.broker.protocol.version` a broker of `release` reports by default."""
    r = normalize_release(release)
    if r < (3,):
        return message_format_version_default(r)
    known = [v for line, v in _LATEST_IBP_3X.items() if normalize_release(line) <= r]
    return known[-1]


def _ibp_keys(name: str) -> list[BrokerConfigKey]:
    """One record per release (`version_key_eras`; ApiVersionValidator, MetadataVersionValidator
    from 3.3)."""
    default = (
        inter_broker_protocol_default
        if name == "inter.broker.protocol.version"
        else message_format_version_default
    )
    return [
        _k(name, _S, default(since), validator, since=since, until=until)
        for since, until, validator in version_key_eras()
    ]


def _throttle_keys() -> list[BrokerConfigKey]:
    """DynamicConfig.Broker's quota keys (Long.MAX_VALUE default, at least 0)."""
    return [
        _k("leader.replication.throttled.rate", _L, _LONG_MAX, at_least(0), since=(0, 10, 1),
           scope=_CW, dynamic_only=True),
        _k("follower.replication.throttled.rate", _L, _LONG_MAX, at_least(0), since=(0, 10, 1),
           scope=_CW, dynamic_only=True),
        _k("replica.alter.log.dirs.io.max.bytes.per.second", _L, _LONG_MAX, at_least(0),
           since=(1, 1), scope=_CW, dynamic_only=True),
    ]  # fmt: skip


# KafkaConfig.configDef, extracted at every release tag from 0.10.0.0 to 3.9.0-rc3 (up to 3.8
# KafkaConfig.scala; for 3.9 the Java ConfigDefs AbstractKafkaConfig merges), not interpolated.
# Kafka's documentation strings are not copied. `default` is what DescribeConfigs shows on Kafka's
# defaults (ConfigDef.convertToString), None for null defaults and for every PASSWORD key.
# JVM-decided defaults assume Java 11+ (ssl.protocol TLSv1.3; Java 8 brokers say TLSv1.2).
# controller.quorum.* validators are None: the keys are not dynamic, so they never run here.
BROKER_CONFIG_KEYS: tuple[BrokerConfigKey, ...] = (
    *_throttle_keys(),
    _k("zookeeper.connect", _S, None),
    _k("zookeeper.session.timeout.ms", _I, "6000", until=(2, 5)),
    _k("zookeeper.session.timeout.ms", _I, "18000", since=(2, 5)),
    _k("zookeeper.connection.timeout.ms", _I, None),
    _k("zookeeper.sync.time.ms", _I, "2000", until=(3, 2)),
    _k("zookeeper.set.acl", _B, "false"),
    _k("zookeeper.max.in.flight.requests", _I, "10", at_least(1), since=(1, 1)),
    _k("zookeeper.ssl.client.enable", _B, "false", since=(2, 5)),
    _k("zookeeper.clientCnxnSocket", _S, None, since=(2, 5)),
    _k("zookeeper.ssl.keystore.location", _S, None, since=(2, 5)),
    _k("zookeeper.ssl.keystore.password", _P, None, since=(2, 5)),
    _k("zookeeper.ssl.keystore.type", _S, None, since=(2, 5)),
    _k("zookeeper.ssl.truststore.location", _S, None, since=(2, 5)),
    _k("zookeeper.ssl.truststore.password", _P, None, since=(2, 5)),
    _k("zookeeper.ssl.truststore.type", _S, None, since=(2, 5)),
    _k("zookeeper.ssl.protocol", _S, "TLSv1.2", since=(2, 5)),
    _k("zookeeper.ssl.enabled.protocols", _LI, None, since=(2, 5)),
    _k("zookeeper.ssl.cipher.suites", _LI, None, since=(2, 5)),
    _k("zookeeper.ssl.endpoint.identification.algorithm", _S, "HTTPS", since=(2, 5)),
    _k("zookeeper.ssl.crl.enable", _B, "false", since=(2, 5)),
    _k("zookeeper.ssl.ocsp.enable", _B, "false", since=(2, 5)),
    _k("broker.id.generation.enable", _B, "true"),
    _k("reserved.broker.max.id", _I, "1000", at_least(0)),
    _k("broker.id", _I, "-1"),
    _k("message.max.bytes", _I, "1000012", at_least(0), until=(1, 1)),
    _k("message.max.bytes", _I, "1000012", at_least(0), since=(1, 1), until=(2, 5), scope=_CW),
    _k("message.max.bytes", _I, "1048588", at_least(0), since=(2, 5), scope=_CW),
    _k("num.network.threads", _I, "3", at_least(1), until=(1, 1)),
    _k("num.network.threads", _I, "3", at_least(1), since=(1, 1), scope=_CW),
    _k("num.io.threads", _I, "8", at_least(1), until=(1, 1)),
    _k("num.io.threads", _I, "8", at_least(1), since=(1, 1), scope=_CW),
    _k("num.replica.alter.log.dirs.threads", _I, None, since=(1, 1)),
    _k("background.threads", _I, "10", at_least(1), until=(1, 1)),
    _k("background.threads", _I, "10", at_least(1), since=(1, 1), scope=_CW),
    _k("queued.max.requests", _I, "500", at_least(1)),
    _k("queued.max.request.bytes", _L, "-1", since=(1, 0)),
    _k("request.timeout.ms", _I, "30000"),
    _k("socket.connection.setup.timeout.ms", _L, "10000", since=(2, 7)),
    _k("socket.connection.setup.timeout.max.ms", _L, "127000", since=(2, 7), until=(2, 8)),
    _k("socket.connection.setup.timeout.max.ms", _L, "30000", since=(2, 8)),
    *_internal_until((3, 0), "process.roles", _LI, "", ValidList(_PROCESS_ROLES), since=(2, 8)),
    *_internal_until((3, 0), "node.id", _I, "-1", since=(2, 8)),
    *_internal_until((3, 0), "initial.broker.registration.timeout.ms", _I, "60000", since=(2, 8)),
    *_internal_until((3, 0), "broker.heartbeat.interval.ms", _I, "2000", since=(2, 8)),
    *_internal_until((3, 0), "broker.session.timeout.ms", _I, "9000", since=(2, 8)),
    *_internal_until((3, 0), "metadata.log.dir", _S, None, since=(2, 8)),
    *_internal_until((3, 0), "controller.listener.names", _S, None, since=(2, 8)),
    *_internal_until((3, 0), "sasl.mechanism.controller.protocol", _S, "GSSAPI", since=(2, 8)),
    _k("authorizer.class.name", _S, "", until=(3, 3)),
    _k("authorizer.class.name", _S, "", NonNull(), since=(3, 3)),
    _k("port", _I, "9092", until=(3, 0)),
    _k("host.name", _S, "", until=(3, 0)),
    _k("listeners", _S, None, until=(1, 1)),
    _k("listeners", _S, None, since=(1, 1), until=(3, 0), scope=_PB),
    _k("listeners", _S, "PLAINTEXT://:9092", since=(3, 0), scope=_PB),
    _k("advertised.host.name", _S, None, until=(3, 0)),
    _k("advertised.port", _I, None, until=(3, 0)),
    _k("advertised.listeners", _S, None, until=(1, 1)),
    _k("advertised.listeners", _S, None, since=(1, 1), scope=_PB),
    _k("listener.security.protocol.map", _S, _LISTENER_MAP, since=(0, 10, 2), until=(1, 1)),
    _k("listener.security.protocol.map", _S, _LISTENER_MAP, since=(1, 1), scope=_PB),
    _k("control.plane.listener.name", _S, None, since=(2, 2)),
    _k("socket.send.buffer.bytes", _I, "102400"),
    _k("socket.receive.buffer.bytes", _I, "102400"),
    _k("socket.request.max.bytes", _I, "104857600", at_least(1)),
    _k("max.connections.per.ip", _I, _INT_MAX, at_least(1), until=(2, 0)),
    _k("max.connections.per.ip", _I, _INT_MAX, at_least(0), since=(2, 0), until=(2, 3)),
    _k("max.connections.per.ip", _I, _INT_MAX, at_least(0), since=(2, 3), scope=_CW),
    _k("max.connections.per.ip.overrides", _S, "", until=(2, 3)),
    _k("max.connections.per.ip.overrides", _S, "", since=(2, 3), scope=_CW),
    _k("max.connections", _I, _INT_MAX, at_least(0), since=(2, 3), scope=_CW),
    _k("max.connection.creation.rate", _I, _INT_MAX, at_least(0), since=(2, 7), scope=_CW),
    _k("connections.max.idle.ms", _L, "600000"),
    _k("connection.failed.authentication.delay.ms", _I, "100", at_least(0), since=(2, 1)),
    _k("broker.rack", _S, None),
    _k("num.partitions", _I, "1", at_least(1)),
    _k("log.dir", _S, "/tmp/kafka-logs"),
    _k("log.dirs", _S, None),
    _k("log.segment.bytes", _I, "1073741824", at_least(14), until=(1, 1)),
    _k("log.segment.bytes", _I, "1073741824", at_least(14), since=(1, 1), scope=_CW),
    _k("log.roll.ms", _L, None, until=(1, 1)),
    _k("log.roll.ms", _L, None, since=(1, 1), scope=_CW),
    _k("log.roll.hours", _I, "168", at_least(1)),
    _k("log.roll.jitter.ms", _L, None, until=(1, 1)),
    _k("log.roll.jitter.ms", _L, None, since=(1, 1), scope=_CW),
    _k("log.roll.jitter.hours", _I, "0", at_least(0)),
    _k("log.retention.ms", _L, None, until=(1, 1)),
    _k("log.retention.ms", _L, None, since=(1, 1), scope=_CW),
    _k("log.retention.minutes", _I, None),
    _k("log.retention.hours", _I, "168"),
    _k("log.retention.bytes", _L, "-1", until=(1, 1)),
    _k("log.retention.bytes", _L, "-1", since=(1, 1), scope=_CW),
    _k("log.retention.check.interval.ms", _L, "300000", at_least(1)),
    _k("log.cleanup.policy", _S, "delete", ValidString(_CLEANUP), until=(0, 10, 1)),
    _k("log.cleanup.policy", _LI, "delete", ValidList(_CLEANUP), since=(0, 10, 1), until=(1, 1)),
    _k("log.cleanup.policy", _LI, "delete", ValidList(_CLEANUP), since=(1, 1), scope=_CW),
    _k("log.cleaner.threads", _I, "1", at_least(0), until=(1, 1)),
    _k("log.cleaner.threads", _I, "1", at_least(0), since=(1, 1), scope=_CW),
    _k("log.cleaner.io.max.bytes.per.second", _D, java_double_str(1.7976931348623157e+308),
       until=(1, 1)),
    _k("log.cleaner.io.max.bytes.per.second", _D, java_double_str(1.7976931348623157e+308),
       since=(1, 1), scope=_CW),
    _k("log.cleaner.dedupe.buffer.size", _L, "134217728", until=(1, 1)),
    _k("log.cleaner.dedupe.buffer.size", _L, "134217728", since=(1, 1), scope=_CW),
    _k("log.cleaner.io.buffer.size", _I, "524288", at_least(0), until=(1, 1)),
    _k("log.cleaner.io.buffer.size", _I, "524288", at_least(0), since=(1, 1), scope=_CW),
    _k("log.cleaner.io.buffer.load.factor", _D, java_double_str(0.9), until=(1, 1)),
    _k("log.cleaner.io.buffer.load.factor", _D, java_double_str(0.9), since=(1, 1), scope=_CW),
    _k("log.cleaner.backoff.ms", _L, "15000", at_least(0), until=(1, 1)),
    _k("log.cleaner.backoff.ms", _L, "15000", at_least(0), since=(1, 1), scope=_CW),
    _k("log.cleaner.min.cleanable.ratio", _D, java_double_str(0.5), until=(1, 1)),
    _k("log.cleaner.min.cleanable.ratio", _D, java_double_str(0.5), since=(1, 1), until=(3, 3),
       scope=_CW),
    _k("log.cleaner.min.cleanable.ratio", _D, java_double_str(0.5), between(0, 1), since=(3, 3),
       scope=_CW),
    _k("log.cleaner.enable", _B, "true"),
    _k("log.cleaner.delete.retention.ms", _L, "86400000", until=(1, 1)),
    _k("log.cleaner.delete.retention.ms", _L, "86400000", since=(1, 1), until=(3, 3), scope=_CW),
    _k("log.cleaner.delete.retention.ms", _L, "86400000", at_least(0), since=(3, 3), scope=_CW),
    _k("log.cleaner.min.compaction.lag.ms", _L, "0", since=(0, 10, 1), until=(1, 1)),
    _k("log.cleaner.min.compaction.lag.ms", _L, "0", since=(1, 1), until=(3, 3), scope=_CW),
    _k("log.cleaner.min.compaction.lag.ms", _L, "0", at_least(0), since=(3, 3), scope=_CW),
    _k("log.cleaner.max.compaction.lag.ms", _L, _LONG_MAX, since=(2, 3), until=(3, 3), scope=_CW),
    _k("log.cleaner.max.compaction.lag.ms", _L, _LONG_MAX, at_least(1), since=(3, 3), scope=_CW),
    _k("log.index.size.max.bytes", _I, "10485760", at_least(4), until=(1, 1)),
    _k("log.index.size.max.bytes", _I, "10485760", at_least(4), since=(1, 1), scope=_CW),
    _k("log.index.interval.bytes", _I, "4096", at_least(0), until=(1, 1)),
    _k("log.index.interval.bytes", _I, "4096", at_least(0), since=(1, 1), scope=_CW),
    _k("log.flush.interval.messages", _L, _LONG_MAX, at_least(1), until=(1, 1)),
    _k("log.flush.interval.messages", _L, _LONG_MAX, at_least(1), since=(1, 1), scope=_CW),
    _k("log.segment.delete.delay.ms", _L, "60000", at_least(0), until=(1, 1)),
    _k("log.segment.delete.delay.ms", _L, "60000", at_least(0), since=(1, 1), scope=_CW),
    _k("log.flush.scheduler.interval.ms", _L, _LONG_MAX),
    _k("log.flush.interval.ms", _L, None, until=(1, 1)),
    _k("log.flush.interval.ms", _L, None, since=(1, 1), scope=_CW),
    _k("log.flush.offset.checkpoint.interval.ms", _I, "60000", at_least(0)),
    _k("log.flush.start.offset.checkpoint.interval.ms", _I, "60000", at_least(0),
       since=(0, 11, 0)),
    _k("log.preallocate", _B, "false", until=(1, 1)),
    _k("log.preallocate", _B, "false", since=(1, 1), scope=_CW),
    _k("num.recovery.threads.per.data.dir", _I, "1", at_least(1), until=(1, 1)),
    _k("num.recovery.threads.per.data.dir", _I, "1", at_least(1), since=(1, 1), scope=_CW),
    _k("auto.create.topics.enable", _B, "true"),
    _k("min.insync.replicas", _I, "1", at_least(1), until=(1, 1)),
    _k("min.insync.replicas", _I, "1", at_least(1), since=(1, 1), scope=_CW),
    *_ibp_keys("log.message.format.version"),
    _k("log.message.timestamp.type", _S, "CreateTime", ValidString(_TIMESTAMP_TYPES),
       until=(1, 1)),
    _k("log.message.timestamp.type", _S, "CreateTime", ValidString(_TIMESTAMP_TYPES),
       since=(1, 1), scope=_CW),
    _k("log.message.timestamp.difference.max.ms", _L, _LONG_MAX, at_least(0), until=(0, 11, 0)),
    _k("log.message.timestamp.difference.max.ms", _L, _LONG_MAX, since=(0, 11, 0), until=(1, 1)),
    _k("log.message.timestamp.difference.max.ms", _L, _LONG_MAX, since=(1, 1), until=(3, 3),
       scope=_CW),
    _k("log.message.timestamp.difference.max.ms", _L, _LONG_MAX, at_least(0), since=(3, 3),
       scope=_CW),
    _k("create.topic.policy.class.name", _C, None, since=(0, 10, 2)),
    _k("alter.config.policy.class.name", _C, None, since=(0, 11, 0)),
    _k("log.message.downconversion.enable", _B, "true", since=(2, 0), scope=_CW),
    _k("controller.socket.timeout.ms", _I, "30000"),
    _k("default.replication.factor", _I, "1"),
    _k("replica.lag.time.max.ms", _L, "10000", until=(2, 5)),
    _k("replica.lag.time.max.ms", _L, "30000", since=(2, 5)),
    _k("replica.socket.timeout.ms", _I, "30000"),
    _k("replica.socket.receive.buffer.bytes", _I, "65536"),
    _k("replica.fetch.max.bytes", _I, "1048576", until=(0, 10, 1)),
    _k("replica.fetch.max.bytes", _I, "1048576", at_least(0), since=(0, 10, 1)),
    _k("replica.fetch.wait.max.ms", _I, "500"),
    _k("replica.fetch.backoff.ms", _I, "1000", at_least(0)),
    _k("replica.fetch.min.bytes", _I, "1"),
    _k("replica.fetch.response.max.bytes", _I, "10485760", at_least(0), since=(0, 10, 1)),
    _k("num.replica.fetchers", _I, "1", until=(1, 1)),
    _k("num.replica.fetchers", _I, "1", since=(1, 1), scope=_CW),
    _k("replica.high.watermark.checkpoint.interval.ms", _L, "5000"),
    _k("fetch.purgatory.purge.interval.requests", _I, "1000"),
    _k("producer.purgatory.purge.interval.requests", _I, "1000"),
    _k("delete.records.purgatory.purge.interval.requests", _I, "1", since=(0, 11, 0)),
    _k("auto.leader.rebalance.enable", _B, "true"),
    _k("leader.imbalance.per.broker.percentage", _I, "10"),
    _k("leader.imbalance.check.interval.seconds", _L, "300", until=(3, 2)),
    _k("leader.imbalance.check.interval.seconds", _L, "300", at_least(1), since=(3, 2)),
    _k("unclean.leader.election.enable", _B, "true", until=(0, 11, 0)),
    _k("unclean.leader.election.enable", _B, "false", since=(0, 11, 0), until=(1, 1)),
    _k("unclean.leader.election.enable", _B, "false", since=(1, 1), scope=_CW),
    _k("security.inter.broker.protocol", _S, "PLAINTEXT", until=(3, 3)),
    _k("security.inter.broker.protocol", _S, "PLAINTEXT", ValidString(_SECURITY_PROTOCOLS),
       since=(3, 3)),
    *_ibp_keys("inter.broker.protocol.version"),
    _k("inter.broker.listener.name", _S, None, since=(0, 10, 2)),
    _k("replica.selector.class", _S, None, since=(2, 4)),
    _k("controlled.shutdown.max.retries", _I, "3"),
    _k("controlled.shutdown.retry.backoff.ms", _L, "5000"),
    _k("controlled.shutdown.enable", _B, "true"),
    _k("group.min.session.timeout.ms", _I, "6000"),
    _k("group.max.session.timeout.ms", _I, "300000", until=(2, 3)),
    _k("group.max.session.timeout.ms", _I, "1800000", since=(2, 3)),
    _k("group.initial.rebalance.delay.ms", _I, "3000", since=(0, 11, 0)),
    _k("group.max.size", _I, _INT_MAX, at_least(1), since=(2, 2)),
    _k("offset.metadata.max.bytes", _I, "4096"),
    _k("offsets.load.buffer.size", _I, "5242880", at_least(1)),
    _k("offsets.topic.replication.factor", _SH, "3", at_least(1)),
    _k("offsets.topic.num.partitions", _I, "50", at_least(1)),
    _k("offsets.topic.segment.bytes", _I, "104857600", at_least(1)),
    _k("offsets.topic.compression.codec", _I, "0"),
    _k("offsets.retention.minutes", _I, "1440", at_least(1), until=(2, 0)),
    _k("offsets.retention.minutes", _I, "10080", at_least(1), since=(2, 0)),
    _k("offsets.retention.check.interval.ms", _L, "600000", at_least(1)),
    _k("offsets.commit.timeout.ms", _I, "5000", at_least(1)),
    _k("offsets.commit.required.acks", _SH, "-1"),
    _k("delete.topic.enable", _B, "false", until=(1, 0)),
    _k("delete.topic.enable", _B, "true", since=(1, 0)),
    _k("compression.type", _S, "producer", until=(1, 1)),
    _k("compression.type", _S, "producer", since=(1, 1), until=(3, 3), scope=_CW),
    _k("compression.type", _S, "producer", ValidString(_COMPRESSION), since=(3, 3), scope=_CW),
    _k("transactional.id.expiration.ms", _I, "604800000", at_least(1), since=(0, 11, 0)),
    _k("transaction.max.timeout.ms", _I, "900000", at_least(1), since=(0, 11, 0)),
    _k("transaction.state.log.min.isr", _I, "2", at_least(1), since=(0, 11, 0)),
    _k("transaction.state.log.load.buffer.size", _I, "5242880", at_least(1), since=(0, 11, 0)),
    _k("transaction.state.log.replication.factor", _SH, "3", at_least(1), since=(0, 11, 0)),
    _k("transaction.state.log.num.partitions", _I, "50", at_least(1), since=(0, 11, 0)),
    _k("transaction.state.log.segment.bytes", _I, "104857600", at_least(1), since=(0, 11, 0)),
    _k("transaction.abort.timed.out.transaction.cleanup.interval.ms", _I, "60000", at_least(1),
       since=(0, 11, 0), until=(2, 5)),
    _k("transaction.abort.timed.out.transaction.cleanup.interval.ms", _I, "10000", at_least(1),
       since=(2, 5)),
    _k("transaction.remove.expired.transaction.cleanup.interval.ms", _I, "3600000", at_least(1),
       since=(0, 11, 0)),
    _k("max.incremental.fetch.session.cache.slots", _I, "1000", at_least(0), since=(1, 1)),
    _k("fetch.max.bytes", _I, "57671680", at_least(1024), since=(2, 5)),
    _k("metrics.num.samples", _I, "2", at_least(1)),
    _k("metrics.sample.window.ms", _L, "30000", at_least(1)),
    _k("metric.reporters", _LI, "", until=(1, 1)),
    _k("metric.reporters", _LI, "", since=(1, 1), scope=_CW),
    _k("metrics.recording.level", _S, "INFO", since=(0, 10, 2)),
    _k("kafka.metrics.reporters", _LI, "", since=(2, 1)),
    _k("kafka.metrics.polling.interval.secs", _I, "10", at_least(1), since=(2, 1)),
    _k("quota.producer.default", _L, _LONG_MAX, at_least(1), until=(3, 0)),
    _k("quota.consumer.default", _L, _LONG_MAX, at_least(1), until=(3, 0)),
    _k("quota.window.num", _I, "11", at_least(1)),
    _k("replication.quota.window.num", _I, "11", at_least(1), since=(0, 10, 1)),
    _k("alter.log.dirs.replication.quota.window.num", _I, "11", at_least(1), since=(1, 1)),
    _k("controller.quota.window.num", _I, "11", at_least(1), since=(2, 7)),
    _k("quota.window.size.seconds", _I, "1", at_least(1)),
    _k("replication.quota.window.size.seconds", _I, "1", at_least(1), since=(0, 10, 1)),
    _k("alter.log.dirs.replication.quota.window.size.seconds", _I, "1", at_least(1), since=(1, 1)),
    _k("controller.quota.window.size.seconds", _I, "1", at_least(1), since=(2, 7)),
    _k("client.quota.callback.class", _C, None, since=(2, 0)),
    _k("connections.max.reauth.ms", _L, "0", since=(2, 2)),
    _k("security.providers", _S, None, since=(2, 4)),
    _k("principal.builder.class", _C, _OLD_PRINCIPAL_BUILDER, until=(1, 0)),
    _k("principal.builder.class", _C, None, since=(1, 0), until=(1, 1)),
    _k("principal.builder.class", _C, None, since=(1, 1), until=(3, 0), scope=_PB),
    _k("principal.builder.class", _C, _DEFAULT_PRINCIPAL_BUILDER, since=(3, 0), scope=_PB),
    _k("ssl.protocol", _S, "TLS", until=(1, 1)),
    _k("ssl.protocol", _S, "TLS", since=(1, 1), until=(2, 5), scope=_PB),
    _k("ssl.protocol", _S, "TLSv1.2", since=(2, 5), until=(2, 6), scope=_PB),
    _k("ssl.protocol", _S, "TLSv1.3", since=(2, 6), scope=_PB),
    _k("ssl.provider", _S, None, until=(1, 1)),
    _k("ssl.provider", _S, None, since=(1, 1), scope=_PB),
    _k("ssl.enabled.protocols", _LI, "TLSv1.2,TLSv1.1,TLSv1", until=(1, 1)),
    _k("ssl.enabled.protocols", _LI, "TLSv1.2,TLSv1.1,TLSv1", since=(1, 1), until=(2, 5),
       scope=_PB),
    _k("ssl.enabled.protocols", _LI, "TLSv1.2", since=(2, 5), until=(2, 6), scope=_PB),
    _k("ssl.enabled.protocols", _LI, "TLSv1.2,TLSv1.3", since=(2, 6), scope=_PB),
    _k("ssl.keystore.type", _S, "JKS", until=(1, 1)),
    _k("ssl.keystore.type", _S, "JKS", since=(1, 1), scope=_PB),
    _k("ssl.keystore.location", _S, None, until=(1, 1)),
    _k("ssl.keystore.location", _S, None, since=(1, 1), scope=_PB),
    _k("ssl.keystore.password", _P, None, until=(1, 1)),
    _k("ssl.keystore.password", _P, None, since=(1, 1), scope=_PB),
    _k("ssl.key.password", _P, None, until=(1, 1)),
    _k("ssl.key.password", _P, None, since=(1, 1), scope=_PB),
    _k("ssl.keystore.key", _P, None, since=(2, 7), scope=_PB),
    _k("ssl.keystore.certificate.chain", _P, None, since=(2, 7), scope=_PB),
    _k("ssl.truststore.type", _S, "JKS", until=(1, 1)),
    _k("ssl.truststore.type", _S, "JKS", since=(1, 1), scope=_PB),
    _k("ssl.truststore.location", _S, None, until=(1, 1)),
    _k("ssl.truststore.location", _S, None, since=(1, 1), scope=_PB),
    _k("ssl.truststore.password", _P, None, until=(1, 1)),
    _k("ssl.truststore.password", _P, None, since=(1, 1), scope=_PB),
    _k("ssl.truststore.certificates", _P, None, since=(2, 7), scope=_PB),
    _k("ssl.keymanager.algorithm", _S, "SunX509", until=(1, 1)),
    _k("ssl.keymanager.algorithm", _S, "SunX509", since=(1, 1), scope=_PB),
    _k("ssl.trustmanager.algorithm", _S, "PKIX", until=(1, 1)),
    _k("ssl.trustmanager.algorithm", _S, "PKIX", since=(1, 1), scope=_PB),
    _k("ssl.endpoint.identification.algorithm", _S, None, until=(1, 1)),
    _k("ssl.endpoint.identification.algorithm", _S, None, since=(1, 1), until=(2, 0), scope=_PB),
    _k("ssl.endpoint.identification.algorithm", _S, "https", since=(2, 0), scope=_PB),
    _k("ssl.secure.random.implementation", _S, None, since=(0, 10, 1), until=(1, 1)),
    _k("ssl.secure.random.implementation", _S, None, since=(1, 1), scope=_PB),
    _k("ssl.client.auth", _S, "none", ValidString(_SSL_CLIENT_AUTH), until=(1, 1)),
    _k("ssl.client.auth", _S, "none", ValidString(_SSL_CLIENT_AUTH), since=(1, 1), scope=_PB),
    _k("ssl.cipher.suites", _LI, None, until=(1, 1)),
    _k("ssl.cipher.suites", _LI, "", since=(1, 1), scope=_PB),
    _k("ssl.principal.mapping.rules", _LI, "DEFAULT", since=(2, 2), until=(2, 4)),
    _k("ssl.principal.mapping.rules", _S, "DEFAULT", since=(2, 4)),
    _k("ssl.engine.factory.class", _C, None, since=(2, 6), scope=_PB),
    _k("sasl.mechanism.inter.broker.protocol", _S, "GSSAPI", until=(1, 1)),
    _k("sasl.mechanism.inter.broker.protocol", _S, "GSSAPI", since=(1, 1), scope=_PB),
    _k("sasl.jaas.config", _P, None, since=(1, 1), scope=_PB),
    _k("sasl.enabled.mechanisms", _LI, "GSSAPI", until=(1, 1)),
    _k("sasl.enabled.mechanisms", _LI, "GSSAPI", since=(1, 1), scope=_PB),
    _k("sasl.server.callback.handler.class", _C, None, since=(2, 0)),
    _k("sasl.client.callback.handler.class", _C, None, since=(2, 0)),
    _k("sasl.login.class", _C, None, since=(2, 0)),
    _k("sasl.login.callback.handler.class", _C, None, since=(2, 0)),
    _k("sasl.kerberos.service.name", _S, None, until=(1, 1)),
    _k("sasl.kerberos.service.name", _S, None, since=(1, 1), scope=_PB),
    _k("sasl.kerberos.kinit.cmd", _S, "/usr/bin/kinit", until=(1, 1)),
    _k("sasl.kerberos.kinit.cmd", _S, "/usr/bin/kinit", since=(1, 1), scope=_PB),
    _k("sasl.kerberos.ticket.renew.window.factor", _D, java_double_str(0.8), until=(1, 1)),
    _k("sasl.kerberos.ticket.renew.window.factor", _D, java_double_str(0.8), since=(1, 1),
       scope=_PB),
    _k("sasl.kerberos.ticket.renew.jitter", _D, java_double_str(0.05), until=(1, 1)),
    _k("sasl.kerberos.ticket.renew.jitter", _D, java_double_str(0.05), since=(1, 1), scope=_PB),
    _k("sasl.kerberos.min.time.before.relogin", _L, "60000", until=(1, 1)),
    _k("sasl.kerberos.min.time.before.relogin", _L, "60000", since=(1, 1), scope=_PB),
    _k("sasl.kerberos.principal.to.local.rules", _LI, "DEFAULT", until=(1, 1)),
    _k("sasl.kerberos.principal.to.local.rules", _LI, "DEFAULT", since=(1, 1), scope=_PB),
    _k("sasl.login.refresh.window.factor", _D, java_double_str(0.8), since=(2, 0), scope=_PB),
    _k("sasl.login.refresh.window.jitter", _D, java_double_str(0.05), since=(2, 0), scope=_PB),
    _k("sasl.login.refresh.min.period.seconds", _SH, "60", since=(2, 0), scope=_PB),
    _k("sasl.login.refresh.buffer.seconds", _SH, "300", since=(2, 0), scope=_PB),
    _k("delegation.token.master.key", _P, None, since=(1, 1)),
    _k("delegation.token.secret.key", _P, None, since=(2, 8)),
    _k("delegation.token.max.lifetime.ms", _L, "604800000", at_least(1), since=(1, 1)),
    _k("delegation.token.expiry.time.ms", _L, "86400000", at_least(1), since=(1, 1)),
    _k("delegation.token.expiry.check.interval.ms", _L, "3600000", at_least(1), since=(1, 1)),
    _k("password.encoder.secret", _P, None, since=(1, 1)),
    _k("password.encoder.old.secret", _P, None, since=(1, 1)),
    _k("password.encoder.keyfactory.algorithm", _S, None, since=(1, 1)),
    _k("password.encoder.cipher.algorithm", _S, "AES/CBC/PKCS5Padding", since=(1, 1)),
    _k("password.encoder.key.length", _I, "128", at_least(8), since=(1, 1)),
    _k("password.encoder.iterations", _I, "4096", at_least(1024), since=(1, 1)),
    *_internal_until((3, 0), "controller.quorum.voters", _LI, "", since=(2, 8)),
    *_internal_until((3, 0), "controller.quorum.election.timeout.ms", _I, "1000", since=(2, 8)),
    *_internal_until((3, 0), "controller.quorum.fetch.timeout.ms", _I, "2000", since=(2, 8)),
    *_internal_until((3, 0), "controller.quorum.election.backoff.max.ms", _I, "1000", since=(2, 8)),
    *_internal_until((3, 0), "controller.quorum.append.linger.ms", _I, "25", since=(2, 8)),
    *_internal_until((3, 0), "controller.quorum.request.timeout.ms", _I, "2000", since=(2, 8)),
    *_internal_until((3, 0), "controller.quorum.retry.backoff.ms", _I, "20", since=(2, 8)),
    _k("metadata.log.max.record.bytes.between.snapshots", _L, "20971520", at_least(1),
       since=(3, 0)),
    _k("metadata.log.segment.bytes", _I, "1073741824", at_least(12), since=(3, 0)),
    _k("metadata.log.segment.min.bytes", _I, "8388608", at_least(12), since=(3, 0), internal=True),
    _k("metadata.log.segment.ms", _L, "604800000", since=(3, 0)),
    _k("metadata.max.retention.bytes", _L, "-1", since=(3, 0), until=(3, 4)),
    _k("metadata.max.retention.bytes", _L, "104857600", since=(3, 4)),
    _k("metadata.max.retention.ms", _L, "604800000", since=(3, 0)),
    *_internal_until((3, 6), "remote.log.storage.system.enable", _B, "false", since=(3, 0)),
    _k("remote.log.storage.manager.impl.prefix", _S, None, NonEmptyString(), since=(3, 0),
       until=(3, 6), internal=True),
    _k("remote.log.storage.manager.impl.prefix", _S, "rsm.config.", NonEmptyString(),
       since=(3, 6)),
    _k("remote.log.metadata.manager.impl.prefix", _S, None, NonEmptyString(), since=(3, 0),
       until=(3, 6), internal=True),
    _k("remote.log.metadata.manager.impl.prefix", _S, "rlmm.config.", NonEmptyString(),
       since=(3, 6)),
    *_internal_until((3, 6), "remote.log.storage.manager.class.name", _S, None, NonEmptyString(),
       since=(3, 0)),
    _k("remote.log.storage.manager.class.path", _S, None, NonEmptyString(), since=(3, 0),
       until=(3, 6), internal=True),
    _k("remote.log.storage.manager.class.path", _S, None, since=(3, 6)),
    _k("remote.log.metadata.manager.class.name", _S, None, NonEmptyString(), since=(3, 0),
       until=(3, 6), internal=True),
    _k("remote.log.metadata.manager.class.name", _S, _TOPIC_BASED_RLMM, NonEmptyString(),
       since=(3, 6)),
    _k("remote.log.metadata.manager.class.path", _S, None, NonEmptyString(), since=(3, 0),
       until=(3, 6), internal=True),
    _k("remote.log.metadata.manager.class.path", _S, None, since=(3, 6)),
    *_internal_until((3, 6), "remote.log.metadata.manager.listener.name", _S, None,
       NonEmptyString(), since=(3, 0)),
    _k("remote.log.index.file.cache.total.size.bytes", _L, "1073741824", at_least(1),
       since=(3, 0), until=(3, 7), internal=True),
    _k("remote.log.index.file.cache.total.size.bytes", _L, "1073741824", at_least(1),
       since=(3, 7), scope=_CW),
    *_internal_until((3, 6), "remote.log.manager.thread.pool.size", _I, "10", at_least(1),
       since=(3, 0)),
    *_internal_until((3, 6), "remote.log.manager.task.interval.ms", _L, "30000", at_least(1),
       since=(3, 0)),
    _k("remote.log.manager.task.retry.backoff.ms", _L, "500", at_least(1), since=(3, 0),
       internal=True),
    _k("remote.log.manager.task.retry.backoff.max.ms", _L, "30000", at_least(1), since=(3, 0),
       internal=True),
    _k("remote.log.manager.task.retry.jitter", _D, java_double_str(0.2), between(0, 0.5),
       since=(3, 0), internal=True),
    *_internal_until((3, 6), "remote.log.reader.threads", _I, "10", at_least(1), since=(3, 0)),
    *_internal_until((3, 6), "remote.log.reader.max.pending.tasks", _I, "100", at_least(1),
       since=(3, 0)),
    _k("sasl.login.connect.timeout.ms", _I, None, since=(3, 1)),
    _k("sasl.login.read.timeout.ms", _I, None, since=(3, 1)),
    _k("sasl.login.retry.backoff.max.ms", _L, "10000", since=(3, 1)),
    _k("sasl.login.retry.backoff.ms", _L, "100", since=(3, 1)),
    _k("sasl.oauthbearer.scope.claim.name", _S, "scope", since=(3, 1)),
    _k("sasl.oauthbearer.sub.claim.name", _S, "sub", since=(3, 1)),
    _k("sasl.oauthbearer.token.endpoint.url", _S, None, since=(3, 1)),
    _k("sasl.oauthbearer.jwks.endpoint.url", _S, None, since=(3, 1)),
    _k("sasl.oauthbearer.jwks.endpoint.refresh.ms", _L, "3600000", since=(3, 1)),
    _k("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", _L, "100", since=(3, 1)),
    _k("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", _L, "10000", since=(3, 1)),
    _k("sasl.oauthbearer.clock.skew.seconds", _I, "30", since=(3, 1)),
    _k("sasl.oauthbearer.expected.audience", _LI, None, since=(3, 1)),
    _k("sasl.oauthbearer.expected.issuer", _S, None, since=(3, 1)),
    _k("socket.listen.backlog.size", _I, "50", at_least(1), since=(3, 2)),
    _k("metadata.max.idle.interval.ms", _I, "500", at_least(0), since=(3, 3)),
    _k("early.start.listeners", _S, None, since=(3, 3)),
    _k("sasl.server.max.receive.size", _I, "524288", since=(3, 3)),
    _k("metadata.log.max.snapshot.interval.ms", _L, "3600000", at_least(0), since=(3, 4)),
    _k("zookeeper.metadata.migration.enable", _B, "false", since=(3, 4)),
    _k("producer.id.expiration.ms", _I, "86400000", at_least(1), since=(3, 4), scope=_CW),
    _k("producer.id.expiration.check.interval.ms", _I, "600000", at_least(1), since=(3, 4),
       internal=True),
    _k("auto.include.jmx.reporter", _B, "true", since=(3, 4)),
    _k("server.max.startup.time.ms", _L, _LONG_MAX, at_least(0), since=(3, 5), internal=True),
    _k("group.coordinator.new.enable", _B, "false", since=(3, 5), internal=True),
    *_internal_until((3, 7), "group.coordinator.threads", _I, "1", at_least(1), since=(3, 5)),
    *_internal_until((3, 7), "group.consumer.session.timeout.ms", _I, "45000", at_least(1),
       since=(3, 5)),
    *_internal_until((3, 7), "group.consumer.min.session.timeout.ms", _I, "45000", at_least(1),
       since=(3, 5)),
    *_internal_until((3, 7), "group.consumer.max.session.timeout.ms", _I, "60000", at_least(1),
       since=(3, 5)),
    *_internal_until((3, 7), "group.consumer.heartbeat.interval.ms", _I, "5000", at_least(1),
       since=(3, 5)),
    *_internal_until((3, 7), "group.consumer.min.heartbeat.interval.ms", _I, "5000", at_least(1),
       since=(3, 5)),
    *_internal_until((3, 7), "group.consumer.max.heartbeat.interval.ms", _I, "15000", at_least(1),
       since=(3, 5)),
    *_internal_until((3, 7), "group.consumer.max.size", _I, _INT_MAX, at_least(1), since=(3, 5)),
    _k("group.consumer.assignors", _LI, "", since=(3, 5), until=(3, 6), internal=True),
    _k("group.consumer.assignors", _LI, _RANGE_ASSIGNOR, since=(3, 6), until=(3, 7),
       internal=True),
    _k("group.consumer.assignors", _LI, _ASSIGNORS, since=(3, 7)),
    _k("unstable.api.versions.enable", _B, "false", since=(3, 5), internal=True),
    _k("log.message.timestamp.before.max.ms", _L, _LONG_MAX, at_least(0), since=(3, 6), scope=_CW),
    _k("log.message.timestamp.after.max.ms", _L, _LONG_MAX, at_least(0), since=(3, 6), scope=_CW),
    _k("transaction.partition.verification.enable", _B, "true", since=(3, 6), scope=_CW),
    _k("remote.log.metadata.custom.metadata.max.bytes", _I, "128", at_least(0), since=(3, 6)),
    _k("log.local.retention.ms", _L, "-2", at_least(-2), since=(3, 6), scope=_CW),
    _k("log.local.retention.bytes", _L, "-2", at_least(-2), since=(3, 6), scope=_CW),
    _k("eligible.leader.replicas.enable", _B, "false", since=(3, 7)),
    _k("zookeeper.metadata.migration.min.batch.size", _I, "200", at_least(1), since=(3, 7),
       internal=True),
    _k("group.coordinator.rebalance.protocols", _LI, "classic", ValidList(_GROUP_TYPES_3_7),
       since=(3, 7), until=(3, 8)),
    _k("group.coordinator.rebalance.protocols", _LI, "classic", ValidList(_GROUP_TYPES_3_8),
       since=(3, 8), until=(3, 9)),
    _k("group.coordinator.rebalance.protocols", _LI, "classic", ValidList(_GROUP_TYPES_3_9),
       since=(3, 9)),
    _k("telemetry.max.bytes", _I, "1048576", at_least(1), since=(3, 7)),
    _k("ssl.allow.dn.changes", _B, "false", since=(3, 7)),
    _k("ssl.allow.san.changes", _B, "false", since=(3, 7)),
    _k("unstable.metadata.versions.enable", _B, "false", since=(3, 7), until=(3, 8),
       internal=True),
    _k("log.initial.task.delay.ms", _L, "30000", at_least(0), since=(3, 8), internal=True),
    _k("log.dir.failure.timeout.ms", _L, "30000", at_least(1), since=(3, 8)),
    _k("group.coordinator.append.linger.ms", _I, "10", at_least(0), since=(3, 8)),
    _k("group.consumer.migration.policy", _S, "disabled",
       CaseInsensitiveValidString(_MIGRATION_POLICIES), since=(3, 8), until=(3, 9)),
    _k("group.consumer.migration.policy", _S, "disabled",
       CaseInsensitiveValidString(_MIGRATION_POLICIES), since=(3, 9), internal=True),
    _k("compression.gzip.level", _I, "-1", GzipLevel(), since=(3, 8), scope=_CW),
    _k("compression.lz4.level", _I, "9", between(1, 17), since=(3, 8), scope=_CW),
    _k("compression.zstd.level", _I, "3", between(-131072, 22), since=(3, 8), scope=_CW),
    _k("max.request.partition.size.limit", _I, "2000", at_least(1), since=(3, 8)),
    *_internal_until((3, 9), "controller.quorum.bootstrap.servers", _LI, "", since=(3, 8)),
    _k("unstable.feature.versions.enable", _B, "false", since=(3, 8), internal=True),
    _k("remote.log.manager.copier.thread.pool.size", _I, "10", at_least(1), since=(3, 8),
       until=(3, 9), internal=True),
    _k("remote.log.manager.copier.thread.pool.size", _I, "-1", MinusOneOrPositive(), since=(3, 9)),
    _k("remote.log.manager.expiration.thread.pool.size", _I, "10", at_least(1), since=(3, 8),
       until=(3, 9), internal=True),
    _k("remote.log.manager.expiration.thread.pool.size", _I, "-1", MinusOneOrPositive(),
       since=(3, 9)),
    _k("remote.log.manager.copy.max.bytes.per.second", _L, _LONG_MAX, at_least(1), since=(3, 8),
       scope=_CW),
    _k("remote.log.manager.copy.quota.window.num", _I, "11", at_least(1), since=(3, 8)),
    _k("remote.log.manager.copy.quota.window.size.seconds", _I, "1", at_least(1), since=(3, 8)),
    _k("remote.log.manager.fetch.max.bytes.per.second", _L, _LONG_MAX, at_least(1), since=(3, 8),
       scope=_CW),
    _k("remote.log.manager.fetch.quota.window.num", _I, "11", at_least(1), since=(3, 8)),
    _k("remote.log.manager.fetch.quota.window.size.seconds", _I, "1", at_least(1), since=(3, 8)),
    _k("remote.fetch.max.wait.ms", _I, "500", at_least(1), since=(3, 8), scope=_CW),
    _k("unclean.leader.election.interval.ms", _L, "300000", at_least(1), since=(3, 9),
       internal=True),
    _k("group.share.session.timeout.ms", _I, "45000", at_least(1), since=(3, 9)),
    _k("group.share.min.session.timeout.ms", _I, "45000", at_least(1), since=(3, 9)),
    _k("group.share.max.session.timeout.ms", _I, "60000", at_least(1), since=(3, 9)),
    _k("group.share.heartbeat.interval.ms", _I, "5000", at_least(1), since=(3, 9)),
    _k("group.share.min.heartbeat.interval.ms", _I, "5000", at_least(1), since=(3, 9)),
    _k("group.share.max.heartbeat.interval.ms", _I, "15000", at_least(1), since=(3, 9)),
    _k("group.share.max.size", _SH, "200", between(10, 1000), since=(3, 9)),
    _k("group.share.enable", _B, "false", since=(3, 9), internal=True),
    _k("group.share.delivery.count.limit", _I, "5", between(2, 10), since=(3, 9)),
    _k("group.share.record.lock.duration.ms", _I, "30000", between(1000, 60000), since=(3, 9)),
    _k("group.share.min.record.lock.duration.ms", _I, "15000", between(1000, 30000), since=(3, 9)),
    _k("group.share.max.record.lock.duration.ms", _I, "60000", between(30000, 3600000),
       since=(3, 9)),
    _k("group.share.max.groups", _SH, "10", between(1, 100), since=(3, 9)),
    _k("group.share.partition.max.record.locks", _I, "200", between(100, 10000), since=(3, 9)),
)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Lookups


@cache
def _keys_of(release: Release) -> tuple[BrokerConfigKey, ...]:
    """Every record that applies to `release`, in definition order (dynamic-only ones first)."""
    return tuple(k for k in BROKER_CONFIG_KEYS if k.applies_to(release))


@cache
def _index(release: Release) -> Mapping[str, BrokerConfigKey]:
    return {k.name: k for k in _keys_of(release)}


@cache
def _sorted_keys(release: Release, include_internal: bool) -> tuple[BrokerConfigKey, ...]:
    keys = [
        k for k in _keys_of(release) if not k.dynamic_only and (include_internal or not k.internal)
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
_LISTENER_PREFIX = re.compile(r"listener\.name\.[^.]*\.([^\n\r\u0085\u2028\u2029]*)")

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
    m = _LISTENER_PREFIX.fullmatch(name)
    if m is None:
        return None
    base = m.group(1)
    for mechanism in _mechanism_configs(release):
        if base.endswith(mechanism):
            return mechanism
    return base


# Listener configs that stay cluster-wide with a listener prefix (ClusterLevelListenerConfigs).
def _cluster_level_listener_configs(release: Release) -> frozenset[str]:
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
    index = _index(r)
    key = index.get(name)
    if key is not None or r < (1, 1):
        return key
    base_name = _listener_base(name, r)
    base = None if base_name is None else index.get(base_name)
    if base is None or base_name is None:
        return None
    cluster = base_name in _cluster_level_listener_configs(r)
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
    key = _index(r).get(name)
    if key is None and r >= (1, 1):  # a listener override is as dynamic as its base key
        base = _listener_base(name, r)
        key = None if base is None else _index(r).get(base)
    return key is not None and key.scope is not DynamicScope.READ_ONLY


def read_only_in_describe(name: str, release: Release) -> bool:
    """DescribeConfigs' `read_only` for a broker entry: `!AllDynamicConfigs.contains(name)` on
    the exact name, so listener-prefixed names, the dynamic-only quota keys and unknown names
    are all reported read-only."""
    key = _index(normalize_release(release)).get(name)
    return key is None or key.dynamic_only or key.scope is DynamicScope.READ_ONLY


# --------------------------------------------------------------------------------------------
# DynamicBrokerConfig.validateConfigs and the reconfigurables' value rules


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
    key = _index(release)[name]
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
    index = _index(r)
    names = java_properties_order(configs)

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

    security = [n for n in _security_configs(r) if n in configs] if r >= (1, 1) else []
    if security:
        raise InvalidConfig(
            "These security configs can be dynamically updated only per-listener using the "
            f"listener prefix: {scala_mutable_hashset_text(security)}",
            config_exception=True,
        )

    _validate_values(names, configs, r)

    if not per_broker:
        cluster_level = _cluster_level_listener_configs(r)
        # Kafka's perBrokerConfigs: `names.intersect(PerBrokerConfigs) ++ names.filter(
        # listener override)`, two Sets joined (their order differs from one Set's only for
        # names of equal hash).
        listed = [n for n in names if (k := index.get(n)) is not None
                  and k.scope is DynamicScope.PER_BROKER]  # fmt: skip
        overrides = []
        for n in names:
            m = _LISTENER_PREFIX.fullmatch(n)
            if m is not None and r >= (1, 1) and m.group(1) not in cluster_level:
                overrides.append(n)
        if listed or overrides:
            raise InvalidConfig(
                "Cannot update these configs at default cluster level, broker id must be "
                f"specified: {scala_set_concat_text(listed, overrides)}",
                config_exception=True,
            )

    if reconfiguration:
        _validate_thread_counts(configs, r, current or {})


def _validate_values(names: list[str], configs: Mapping[str, str], release: Release) -> None:
    """DynamicConfig.Broker.validate: listener prefixes stripped (a later name wins), then
    ConfigDef.parse over the dynamic keys in definition order."""
    base_values: dict[str, str] = {}
    for n in names:
        m = _LISTENER_PREFIX.fullmatch(n) if release >= (1, 1) else None
        base_values[m.group(1) if m else n] = configs[n]
    for key in _keys_of(release):
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
        if name not in configs or name not in _index(release):
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
