"""The log4j loggers of one emulated broker: what BROKER_LOGGER resources describe and alter.

Kafka's behaviour is in docs/kafka-behaviour.md §4.2 and §4.3 (KIP-412). The loggers are those
of Kafka's stock `config/log4j.properties` (3.x adds `org.apache.kafka.controller`) plus the
class loggers of the broker parts a ZooKeeper-mode admin request goes through. Levels live as
long as the broker object and never change zkbroker's own (process-wide) Python logging, except
that `kafka.authorizer.logger`'s level decides which audit lines are written
(`zkbroker.handlers.support.authorization`). `check_op` raises `LoggerOpError` with the code and
message of the release's generation (2.4-3.1 ZkAdminManager, 3.2-3.6 ConfigAdminManager, 3.7+
RuntimeLoggerManager).

Not here: the resource-name checks (the config handlers own them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.jvm_collections import java_hashmap_order
from zkbroker.zk_layout.release import Release, normalize_release, release_at_least

ROOT = "root"

# Kafka's LogLevelConfig.VALID_LOG_LEVELS, a HashSet filled in this order; releases before
# 3.7 list them in its iteration order in the error message (3.7+ sorts them).
_VALID_LEVELS_HASH_ORDER = tuple(
    java_hashmap_order(("FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"))
)
VALID_LEVELS = frozenset(_VALID_LEVELS_HASH_ORDER)

_STOCK_LEVELS: dict[str, str] = {
    "org.apache.zookeeper": "INFO",
    "kafka": "INFO",
    "org.apache.kafka": "INFO",
    "kafka.request.logger": "WARN",
    "kafka.network.RequestChannel$": "WARN",
    "kafka.controller": "TRACE",
    "kafka.log.LogCleaner": "INFO",
    "state.change.logger": "INFO",
    "kafka.authorizer.logger": "INFO",
}

# Class loggers without a level of their own (they inherit), present in every ZK-mode broker.
_CLASS_LOGGERS = (
    "kafka.server.KafkaServer",
    "kafka.server.KafkaApis",
    "kafka.server.KafkaConfig",
    "kafka.server.ReplicaManager",
    "kafka.server.DynamicConfigManager",
    "kafka.server.DynamicBrokerConfig",
    "kafka.network.SocketServer",
    "kafka.network.Processor",
    "kafka.controller.KafkaController",
    "kafka.controller.ZkPartitionStateMachine",
    "kafka.controller.ZkReplicaStateMachine",
    "kafka.controller.TopicDeletionManager",
    "kafka.zk.KafkaZkClient",
    "kafka.zk.AdminZkClient",
    "kafka.zookeeper.ZooKeeperClient",
    "kafka.common.ZkNodeChangeNotificationListener",
    "kafka.log.LogManager",
    "kafka.coordinator.group.GroupCoordinator",
    "kafka.coordinator.transaction.TransactionCoordinator",
    "org.apache.kafka.clients.NetworkClient",
    "org.apache.zookeeper.ZooKeeper",
    "org.apache.zookeeper.ClientCnxn",
)


class LoggerOpError(Exception):
    def __init__(self, code: int, message: str, *, config_exception: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # A ConfigException in 2.4-3.1: the handler prefixes the resource and answers 42.
        self.config_exception = config_exception


def _stock_levels(release: Release) -> dict[str, str | None]:
    levels: dict[str, str | None] = {ROOT: "INFO", **_STOCK_LEVELS}
    if release_at_least(release, (3, 0)):
        levels["org.apache.kafka.controller"] = "INFO"
    for name in _CLASS_LOGGERS:
        levels.setdefault(name, None)
    return levels


@dataclass
class BrokerLoggers:
    """Logger name -> its own level (None: inherits). Mutable: one per broker."""

    release: Release
    levels: dict[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.levels:
            self.levels = _stock_levels(self.release)

    def effective(self, name: str) -> str:
        level = self.levels.get(name)
        while level is None and name != ROOT:
            cut = name.rfind(".")
            name = name[:cut] if cut > 0 else ROOT
            level = self.levels.get(name)
        return level or "INFO"

    def describe(self) -> dict[str, str]:
        """Every logger with its effective level, by name."""
        return {name: self.effective(name) for name in sorted(self.levels)}

    def exists(self, name: str) -> bool:
        return name in self.levels

    def check_op(self, op: int, name: str, value: str | None) -> None:
        """Kafka's validateLogLevelConfigs for one operation (0 SET, 1 DELETE, 2 APPEND,
        3 SUBTRACT)."""
        r = normalize_release(self.release)
        config_code = error_codes.INVALID_CONFIG
        if op in (0, 1) and not self.exists(name):
            message = f"Logger {name} does not exist!"
            if r < (3, 2):
                raise LoggerOpError(error_codes.INVALID_REQUEST, message, config_exception=True)
            raise LoggerOpError(config_code, message)
        if op == 0:
            if value not in VALID_LEVELS:
                order = sorted(VALID_LEVELS) if r >= (3, 7) else _VALID_LEVELS_HASH_ORDER
                message = (
                    f"Cannot set the log level of {name} to {value} as it is not a supported "
                    f"log level. Valid log levels are {', '.join(order)}"
                )
                if r < (3, 2):
                    raise LoggerOpError(error_codes.INVALID_REQUEST, message, config_exception=True)
                raise LoggerOpError(config_code, message)
        elif op == 1:
            if name == ROOT:
                raise LoggerOpError(
                    error_codes.INVALID_REQUEST,
                    f"Removing the log level of the {ROOT} logger is not allowed",
                )
        elif op in (2, 3):
            word = "APPEND" if op == 2 else "SUBTRACT"
            raise LoggerOpError(
                error_codes.INVALID_REQUEST,
                f"{word} operation is not allowed for the BROKER_LOGGER resource",
            )
        elif r >= (3, 2):
            raise LoggerOpError(
                error_codes.INVALID_REQUEST,
                f"Unknown operation type {op} is not allowed for the BROKER_LOGGER resource",
            )
        else:
            # 2.8 matches on a null OpType: a scala.MatchError, UNKNOWN_SERVER_ERROR.
            raise LoggerOpError(error_codes.UNKNOWN_SERVER_ERROR, "")

    def apply(self, op: int, name: str, value: str | None) -> None:
        """Apply a checked operation (Log4jController.logLevel / unsetLogLevel)."""
        if op == 0 and value is not None and value.strip():
            self.levels[name] = value.upper()
        elif op == 1 and name != ROOT:
            self.levels[name] = None
