"""The record of one broker config (`BrokerConfigKey`, with the `DynamicScope` AlterConfigs
may change it in) and the ConfigDef validators only broker configs use.

Follows Kafka's ``KafkaConfig`` and ``DynamicBrokerConfig`` (Kafka's behaviour: §4.1, §4.3).
Not here: the keys of each release (``broker_config_table``), the value engine broker and
topic configs share (``config_def``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from zkbroker.broker.rules.config_def import ConfigKey, ConfigValue, config_error, java_value_str
from zkbroker.broker.rules.jvm_collections import java_hashmap_order


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
# Validators config_def does not have (ConfigDef's and Kafka's own classes)


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
