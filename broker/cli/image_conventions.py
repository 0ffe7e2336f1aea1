"""The image's Confluent and Bitnami conventions (issue 44): a container environment written for
cp-kafka/cp-zookeeper 7.x or bitnami/kafka/bitnami/zookeeper 3.x in ZooKeeper mode, turned into
the configuration of one zkbroker broker or one ZooKeeper server, for the image's shims
(`python -m zkbroker.broker.cli.image_conventions detect | kafka | zookeeper | zk-ready`).

Unlike the real images, no KAFKA_* variable is dropped silently: one that becomes no property
gets a warning, unless it is an image switch honoured or accepted here (Bitnami's
ALLOW_PLAINTEXT_LISTENER, KAFKA_ENABLE_KRAFT=no, BITNAMI_DEBUG, KAFKA_HEAP_OPTS; cp's
KAFKA_CUB_ZK_TIMEOUT, the zk-ready timeout). Not emulated: KRaft, TLS to ZooKeeper, cp's
/etc/kafka/secrets files, Bitnami's generated SASL/TLS set-up, JVM and log4j options, cp 7.x's
template quirk (a missing comma leaks KAFKA_HEAP_OPTS as `heap.opts`).

Sources, rewritten: confluentinc/kafka-images 7.9.x (`configure`, the properties templates),
confluent-docker-utils (`dub.py`, `cub.py`), bitnami/containers (`libkafka.sh`, `kafka-env.sh`,
`libzookeeper.sh`, `zookeeper-env.sh`).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from zkbroker.broker.cli.arguments import kafka_release, positive_seconds, release_text
from zkbroker.broker.rules.broker_config_catalog import broker_config_key
from zkbroker.zk_layout.release import Release

Role = Literal["confluent-kafka", "bitnami-kafka", "confluent-zookeeper", "bitnami-zookeeper"]

CONFLUENT_LOG_DIRS = "/var/lib/kafka/data"
CONFLUENT_ZK_DATA_DIR = "/var/lib/zookeeper/data"
CONFLUENT_ZK_LOG_DIR = "/var/lib/zookeeper/log"
BITNAMI_LOG_DIRS = "/bitnami/kafka/data"
BITNAMI_ZK_DATA_DIR = "/bitnami/zookeeper/data"
BITNAMI_LISTENERS = "PLAINTEXT://:9092"  # Kafka's own default, which Bitnami leaves in place
#: broker.id when none is given (zkbroker needs one): Kafka's first generated id, 1000 + 1.
DEFAULT_BROKER_ID = "1001"
#: Four-letter words every ZooKeeper of the image answers: readiness checks send them.
READINESS_WORDS = ("ruok", "srvr")


def detect(env: Mapping[str, str]) -> Role | None:
    """The convention `env` follows, empty values ignored (cp-kafka declares
    KAFKA_ZOOKEEPER_CONNECT= and KAFKA_ADVERTISED_LISTENERS= empty by default):

    1. any KAFKA_CFG_* -> "bitnami-kafka";
    2. else KAFKA_ZOOKEEPER_CONNECT, KAFKA_ADVERTISED_LISTENERS, KAFKA_BROKER_ID or
       KAFKA_LISTENERS -> "confluent-kafka";
    3. else ZOOKEEPER_CLIENT_PORT or ZOOKEEPER_SECURE_CLIENT_PORT -> "confluent-zookeeper";
    4. else ALLOW_ANONYMOUS_LOGIN or any ZOO_* -> "bitnami-zookeeper";
    5. else None: the image's own ZKBROKER_* mode.
    """
    given = {name for name, value in env.items() if value}
    if any(name.startswith("KAFKA_CFG_") for name in given):
        return "bitnami-kafka"
    confluent = ("KAFKA_ZOOKEEPER_CONNECT", "KAFKA_ADVERTISED_LISTENERS", "KAFKA_BROKER_ID")
    if given & {*confluent, "KAFKA_LISTENERS"}:
        return "confluent-kafka"
    if given & {"ZOOKEEPER_CLIENT_PORT", "ZOOKEEPER_SECURE_CLIENT_PORT"}:
        return "confluent-zookeeper"
    if "ALLOW_ANONYMOUS_LOGIN" in given or any(name.startswith("ZOO_") for name in given):
        return "bitnami-zookeeper"
    return None


@dataclass(frozen=True)
class KafkaTranslation:
    """One broker: `properties` (server.properties pairs, core keys first, then by name),
    `run_args` (extra `zkbroker run` arguments), the ZooKeeper SASL login Bitnami's
    KAFKA_ZOOKEEPER_USER/PASSWORD give, and what to tell the user. Usable only without errors."""

    properties: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    zookeeper_login: tuple[str, str] | None = None
    run_args: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ZooKeeperTranslation:
    """One ZooKeeper server: zoo.cfg pairs, its myid (None: no file to write), its data
    directory, and what to tell the user. Usable only without errors."""

    properties: list[tuple[str, str]] = field(default_factory=list)
    myid: int | None = None
    data_dir: str = CONFLUENT_ZK_DATA_DIR
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _table(text: str) -> dict[str, str]:
    """A table written as `NAME=value` words."""
    return dict(word.split("=", 1) for word in text.split())


_NO_JVM = "zkbroker has no JVM"
_NO_JMX = "zkbroker has no JVM, so no JMX"
_NO_LOG4J = "zkbroker has no log4j (zkbroker run's --log-level sets its level)"
# Variables of Kafka's scripts and of the images that configure the JVM or log4j.
_JVM_KNOBS = {
    variable: {"jvm": _NO_JVM, "jmx": _NO_JMX, "log4j": _NO_LOG4J}[what]
    for variable, what in _table(
        """KAFKA_HEAP_OPTS=jvm KAFKA_JVM_PERFORMANCE_OPTS=jvm KAFKA_GC_LOG_OPTS=jvm KAFKA_DEBUG=jvm
        KAFKA_JMX_OPTS=jmx KAFKA_JMX_PORT=jmx KAFKA_JMX_HOSTNAME=jmx KAFKA_LOG4J_OPTS=log4j
        KAFKA_LOG4J_ROOT_LOGLEVEL=log4j KAFKA_LOG4J_LOGGERS=log4j
        KAFKA_TOOLS_LOG4J_LOGLEVEL=log4j"""
    ).items()
}
_JAAS_PROPERTY = "-Djava.security.auth.login.config="
_CORE_KEYS = ("broker.id", "zookeeper.connect", "listeners", "advertised.listeners", "log.dirs")


def _zookeeper_only(variable: str, instead: str) -> str:
    return (
        f"{variable} asks for KRaft mode, but this image emulates ZooKeeper-mode Kafka "
        f"brokers only; configure a ZooKeeper with {instead} instead"
    )


@dataclass
class _Draft:
    """A KafkaTranslation being built: each property remembers the variable that set it."""

    release: Release
    props: dict[str, tuple[str, str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    run_args: list[str] = field(default_factory=list)
    login: tuple[str, str] | None = None

    def warn(self, variable: str, reason: str) -> None:
        self.warnings.append(f"{variable}: {reason}")

    def not_a_config(self, variable: str, prop: str, reason: str = "") -> None:
        text = f"{prop} is not a broker config of Kafka {release_text(self.release)}; ignored"
        self.warn(variable, f"{text} ({reason})" if reason else text)

    def put(self, variable: str, prop: str, value: str) -> None:
        """Set `prop` unless the release does not know it (then one warning)."""
        if broker_config_key(prop, self.release) is None:
            self.not_a_config(variable, prop)
            return
        earlier = self.props.get(prop)
        if earlier is not None and earlier[1] != variable:
            self.warn(earlier[1], f"{prop} is also set by {variable}, which wins; ignored")
        self.props[prop] = (value, variable)

    def jaas(self, variable: str, value: str) -> None:
        """KAFKA_OPTS: its JAAS file becomes --jaas-config; other JVM options are warned of."""
        words = [word.replace('"', "").replace("'", "") for word in value.split()]
        files = [w.removeprefix(_JAAS_PROPERTY) for w in words if w.startswith(_JAAS_PROPERTY)]
        if not files:
            self.warn(variable, f"{_NO_JVM} (only a {_JAAS_PROPERTY}FILE is used); ignored")
            return
        self.run_args += ["--jaas-config", files[-1]]  # the JVM keeps the last -D of a name
        if len(files) < len(words):
            self.warn(variable, f"{_NO_JVM}: its options other than the JAAS file are ignored")

    def finish(self) -> KafkaTranslation:
        keys = [k for k in _CORE_KEYS if k in self.props]
        keys += sorted(k for k in self.props if k not in _CORE_KEYS)
        pairs = [(k, self.props[k][0]) for k in keys]
        return KafkaTranslation(pairs, self.warnings, self.errors, self.login, self.run_args)


def kafka_config(env: Mapping[str, str], role: Role, release: Release) -> KafkaTranslation:
    """The broker `env` describes in `role`'s convention, emulating `release`. A property the
    release does not know is not written: one warning names the variable and the property."""
    if role == "confluent-kafka":
        return _confluent_kafka(env, release)
    if role == "bitnami-kafka":
        return _bitnami_kafka(env, release)
    raise ValueError(f"not a Kafka role: {role!r}")


def clean_listeners(value: str) -> str:
    """A listener list without empty items (testcontainers-dotnet ends its list with a comma;
    Kafka's parseCsvList drops empty items too)."""
    return ",".join(item.strip() for item in value.split(",") if item.strip())


def bind_all(advertised: str) -> str:
    """cub's `listeners`: every advertised listener with its host replaced by 0.0.0.0."""
    bound = []
    for item in clean_listeners(advertised).split(","):
        name, sep, address = item.partition("://")
        _, colon, port = address.rpartition(":")
        bound.append(f"{name}://0.0.0.0:{port}" if sep and colon else item)
    return ",".join(bound)


# --- Confluent cp-kafka ---------------------------------------------------------------------
_SINGLE_UNDERSCORE = re.compile(r"(?<=[^_])_(?=[^_])")

#: The template's exclude list, as meant (7.x's missing comma merged two of its names).
CONFLUENT_EXCLUDED = _words(
    """KAFKA_VERSION KAFKA_HEAP_OPTS KAFKA_LOG4J_OPTS KAFKA_OPTS KAFKA_JMX_OPTS
    KAFKA_JVM_PERFORMANCE_OPTS KAFKA_GC_LOG_OPTS KAFKA_LOG4J_ROOT_LOGLEVEL KAFKA_LOG4J_LOGGERS
    KAFKA_TOOLS_LOG4J_LOGLEVEL KAFKA_ZOOKEEPER_CLIENT_CNXN_SOCKET"""
)
# configure refuses these, naming the old property.
_CONFLUENT_DEPRECATED = _table(
    "KAFKA_ADVERTISED_PORT=advertised.port KAFKA_ADVERTISED_HOST=advertised.host "
    "KAFKA_HOST=host KAFKA_PORT=port"
)
# Read by configure/ensure/launch, never properties here (the real image leaks them).
_CONFLUENT_OWN = {
    "KAFKA_DATA_DIRS": "the cp image's preflight check reads it; log.dirs is KAFKA_LOG_DIRS",
    "KAFKA_JMX_PORT": _NO_JMX,
    "KAFKA_JMX_HOSTNAME": _NO_JMX,
}
# Handled before the generic rule; KAFKA_CUB_ZK_TIMEOUT is `ensure`'s zk-ready timeout.
_CONFLUENT_CORE = _words(
    """KAFKA_BROKER_ID KAFKA_ZOOKEEPER_CONNECT KAFKA_ADVERTISED_LISTENERS KAFKA_LISTENERS
    KAFKA_LOG_DIRS KAFKA_PROCESS_ROLES KAFKA_CUB_ZK_TIMEOUT"""
) | set(_CONFLUENT_DEPRECATED)


def confluent_property_name(variable: str, prefix: str = "KAFKA_") -> str:
    """dub's env_to_props: the prefix stripped, lower case, a single `_` between two other
    characters -> `.`, then `___` -> `-`, then `__` -> `_`."""
    name = _SINGLE_UNDERSCORE.sub(".", variable.removeprefix(prefix).lower())
    return name.replace("___", "-").replace("__", "_")


def _confluent_kafka(env: Mapping[str, str], release: Release) -> KafkaTranslation:
    draft = _Draft(release)
    _confluent_checks(env, draft)
    advertised = clean_listeners(env.get("KAFKA_ADVERTISED_LISTENERS", ""))
    listeners = clean_listeners(env.get("KAFKA_LISTENERS", "")) or bind_all(advertised)
    core = (
        env.get("KAFKA_BROKER_ID") or DEFAULT_BROKER_ID,
        env.get("KAFKA_ZOOKEEPER_CONNECT", ""),
        listeners,
        advertised,
        env.get("KAFKA_LOG_DIRS") or CONFLUENT_LOG_DIRS,
    )
    for prop, value in zip(_CORE_KEYS, core, strict=True):
        if value:  # configure's `${VAR:-}` tests: an empty value is an absent one
            draft.put("KAFKA_" + prop.replace(".", "_").upper(), prop, value)
    for variable in sorted(env):
        if variable.startswith("KAFKA_") and variable not in _CONFLUENT_CORE:
            _confluent_variable(variable, env[variable], draft)
        elif variable.startswith("CONFLUENT_SUPPORT_"):  # the template's second mapping
            prop = confluent_property_name(variable, "CONFLUENT_SUPPORT_")
            draft.put(variable, f"confluent.support.{prop}", env[variable])
    return draft.finish()


def _confluent_checks(env: Mapping[str, str], draft: _Draft) -> None:
    """configure's checks, in its order (dub: an empty value is an absent one)."""
    if env.get("KAFKA_PROCESS_ROLES"):
        draft.errors.append(_zookeeper_only("KAFKA_PROCESS_ROLES", "KAFKA_ZOOKEEPER_CONNECT"))
    else:
        if not env.get("KAFKA_ZOOKEEPER_CONNECT"):
            draft.errors.append("KAFKA_ZOOKEEPER_CONNECT is required.")
        if not clean_listeners(env.get("KAFKA_ADVERTISED_LISTENERS", "")):
            draft.errors.append("KAFKA_ADVERTISED_LISTENERS is required.")
    for variable, name in _CONFLUENT_DEPRECATED.items():
        if env.get(variable):
            message = f"{name} is deprecated. Please use KAFKA_ADVERTISED_LISTENERS instead."
            draft.errors.append(message)
    sasl = re.search(r"SASL_.*://", env.get("KAFKA_ADVERTISED_LISTENERS", ""))
    if sasl and not env.get("KAFKA_OPTS"):
        draft.errors.append("KAFKA_OPTS is required.")


def _confluent_variable(variable: str, value: str, draft: _Draft) -> None:
    if variable == "KAFKA_OPTS":
        draft.jaas(variable, value)
    elif variable == "KAFKA_VERSION":
        emulated = release_text(draft.release)
        draft.warn(variable, f"names the cp image's Kafka; zkbroker emulates {emulated}; ignored")
    elif variable == "KAFKA_ZOOKEEPER_CLIENT_CNXN_SOCKET":  # the template's other_props
        draft.put(variable, "zookeeper.clientCnxnSocket", value)
    elif variable in CONFLUENT_EXCLUDED:
        draft.warn(variable, f"{_JVM_KNOBS[variable]}; ignored")
    elif variable in _CONFLUENT_OWN:
        draft.not_a_config(variable, confluent_property_name(variable), _CONFLUENT_OWN[variable])
    elif re.fullmatch(r"KAFKA_SSL_.*_(FILENAME|CREDENTIALS)|KAFKA_CONFLUENT_.*", variable):
        reason = "cp's /etc/kafka/secrets files are not read: set KAFKA_SSL_*_LOCATION/_PASSWORD"
        reason = "Confluent Server's" if variable.startswith("KAFKA_CONFLUENT_") else reason
        draft.not_a_config(variable, confluent_property_name(variable), reason)
    else:
        draft.put(variable, confluent_property_name(variable), value)


# --- Bitnami bitnami/kafka ------------------------------------------------------------------
#: kafka_create_alias_environment_variables: a set KAFKA_<S> is exported as KAFKA_CFG_<S>.
BITNAMI_ALIASES = _words(
    """ADVERTISED_LISTENERS BROKER_ID NODE_ID CONTROLLER_QUORUM_VOTERS PROCESS_ROLES
    DEFAULT_REPLICATION_FACTOR DELETE_TOPIC_ENABLE INTER_BROKER_LISTENER_NAME LISTENERS
    LISTENER_SECURITY_PROTOCOL_MAP LOG_DIRS LOG_FLUSH_INTERVAL_MESSAGES LOG_FLUSH_INTERVAL_MS
    LOG_MESSAGE_FORMAT_VERSION LOG_RETENTION_BYTES LOG_RETENTION_CHECK_INTERVALS_MS
    LOG_RETENTION_HOURS LOG_SEGMENT_BYTES MESSAGE_MAX_BYTES NUM_IO_THREADS NUM_NETWORK_THREADS
    NUM_PARTITIONS NUM_RECOVERY_THREADS_PER_DATA_DIR OFFSETS_TOPIC_REPLICATION_FACTOR
    SOCKET_RECEIVE_BUFFER_BYTES SOCKET_REQUEST_MAX_BYTES SOCKET_SEND_BUFFER_BYTES
    SSL_ENDPOINT_IDENTIFICATION_ALGORITHM TRANSACTION_STATE_LOG_MIN_ISR
    TRANSACTION_STATE_LOG_REPLICATION_FACTOR ZOOKEEPER_CONNECT ZOOKEEPER_CONNECTION_TIMEOUT_MS"""
)
#: The legacy names Bitnami exports as another KAFKA_CFG_* variable.
BITNAMI_RENAMES = _table(
    """KAFKA_LOGS_DIRS=KAFKA_CFG_LOG_DIRS KAFKA_SEGMENT_BYTES=KAFKA_CFG_LOG_SEGMENT_BYTES
    KAFKA_MAX_MESSAGE_BYTES=KAFKA_CFG_MESSAGE_MAX_BYTES
    KAFKA_ZOOKEEPER_CONNECT_TIMEOUT_MS=KAFKA_CFG_ZOOKEEPER_CONNECTION_TIMEOUT_MS
    KAFKA_AUTO_CREATE_TOPICS_ENABLE=KAFKA_CFG_AUTO_CREATE_TOPICS_ENABLE"""
)
# Bitnami's generated SASL/TLS set-up (JAAS files and key stores its scripts write).
_BITNAMI_SECURITY = re.compile(
    r"KAFKA_(CLIENT_|INTER_BROKER_|CONTROLLER_|BROKER_(USER|PASSWORD)|TLS_|CERTIFICATE_"
    r"|ZOOKEEPER_TLS_|ZOOKEEPER_BOOTSTRAP_SCRAM_USERS|KRAFT_CLUSTER_ID)"
)
# Accepted without a word: a default of Bitnami's scripts, KAFKA_ENABLE_KRAFT other than yes
# (ZooKeeper mode), the ZooKeeper login (_bitnami_zookeeper_login).
_BITNAMI_ACCEPTED = _words(
    """KAFKA_HEAP_OPTS KAFKA_ENABLE_KRAFT KAFKA_ZOOKEEPER_PROTOCOL KAFKA_ZOOKEEPER_USER
    KAFKA_ZOOKEEPER_PASSWORD"""
)
_BITNAMI_ZK_PROTOCOLS = ("PLAINTEXT", "SASL", "SSL", "SASL_SSL")
# The core keys with what Bitnami's scripts or Kafka's defaults give when no variable does.
_BITNAMI_DEFAULTS = (DEFAULT_BROKER_ID, "", BITNAMI_LISTENERS, "", BITNAMI_LOG_DIRS)


def bitnami_property_name(variable: str) -> str:
    """libkafka's rule: the KAFKA_CFG_ prefix stripped, every `_` -> `.`, lower case, then
    `sasl.ssl` -> `sasl_ssl`, `sasl.plaintext` -> `sasl_plaintext` and
    `zookeeper.clientcnxnsocket` -> `zookeeper.clientCnxnSocket` (no `__` escapes)."""
    key = variable.removeprefix("KAFKA_CFG_").replace("_", ".").lower()
    key = key.replace("sasl.ssl", "sasl_ssl").replace("sasl.plaintext", "sasl_plaintext")
    return "zookeeper.clientCnxnSocket" if key == "zookeeper.clientcnxnsocket" else key


def _is_yes(value: str) -> bool:
    return value.strip().lower() in ("yes", "true", "1")  # Bitnami's is_boolean_yes


def _bitnami_cfg(env: Mapping[str, str], draft: _Draft) -> dict[str, tuple[str, str]]:
    """Each KAFKA_CFG_* variable's (value, the variable that gave it). A legacy name that is
    set wins over the KAFKA_CFG_ form, as kafka_declare_alias_env exports it over it."""
    cfg = {v: (env[v], v) for v in sorted(env) if v.startswith("KAFKA_CFG_")}
    aliases = {f"KAFKA_{suffix}": f"KAFKA_CFG_{suffix}" for suffix in BITNAMI_ALIASES}
    for source, target in sorted({**aliases, **BITNAMI_RENAMES}.items()):
        if source in env:
            if target in cfg:
                draft.warn(target, f"{source} is set too and wins, as in Bitnami's; ignored")
            cfg[target] = (env[source], source)
    return cfg


def _bitnami_kafka(env: Mapping[str, str], release: Release) -> KafkaTranslation:
    draft = _Draft(release)
    cfg = _bitnami_cfg(env, draft)
    _bitnami_mode(env, cfg, draft)
    _bitnami_zookeeper_login(env, draft)
    given = {bitnami_property_name(target): value for target, value in cfg.items()}
    for prop, default in zip(_CORE_KEYS, _BITNAMI_DEFAULTS, strict=True):  # "" is absent
        value, variable = given.get(prop, ("", "KAFKA_CFG_" + prop.replace(".", "_").upper()))
        value = clean_listeners(value) if prop.endswith("listeners") else value
        if value or default:
            draft.put(variable, prop, value or default)
    for target, (value, variable) in sorted(cfg.items(), key=lambda item: item[1][1]):
        if bitnami_property_name(target) not in (*_CORE_KEYS, "process.roles"):
            draft.put(variable, bitnami_property_name(target), value)
    used = {variable for _, variable in cfg.values()} | set(cfg)
    for variable in sorted(env):
        if variable.startswith("KAFKA_") and variable not in used:
            _bitnami_variable(variable, env[variable], draft)
    return draft.finish()


def _bitnami_mode(
    env: Mapping[str, str], cfg: Mapping[str, tuple[str, str]], draft: _Draft
) -> None:
    """kafka_validate's mode checks, ZooKeeper mode the only one allowed."""
    roles, instead = cfg.get("KAFKA_CFG_PROCESS_ROLES", ("", "")), "KAFKA_CFG_ZOOKEEPER_CONNECT"
    if roles[0]:
        draft.errors.append(_zookeeper_only(roles[1], instead))
    elif _is_yes(env.get("KAFKA_ENABLE_KRAFT", "")):
        draft.errors.append(_zookeeper_only("KAFKA_ENABLE_KRAFT", instead))
    elif not cfg.get(instead, ("", ""))[0]:
        draft.errors.append(
            "neither ZooKeeper mode (KAFKA_CFG_ZOOKEEPER_CONNECT) nor KRaft mode "
            "(KAFKA_CFG_PROCESS_ROLES) is configured; this image needs KAFKA_CFG_ZOOKEEPER_CONNECT"
        )


def _bitnami_zookeeper_login(env: Mapping[str, str], draft: _Draft) -> None:
    """KAFKA_ZOOKEEPER_PROTOCOL: PLAINTEXT as is, SASL as zkbroker's SASL (DIGEST-MD5) login,
    as Bitnami's DigestLoginModule Client section logs in; TLS refused."""
    protocol = env.get("KAFKA_ZOOKEEPER_PROTOCOL") or "PLAINTEXT"
    user, password = env.get("KAFKA_ZOOKEEPER_USER", ""), env.get("KAFKA_ZOOKEEPER_PASSWORD", "")
    if protocol not in _BITNAMI_ZK_PROTOCOLS:
        allowed = ", ".join(_BITNAMI_ZK_PROTOCOLS)
        draft.errors.append(f"KAFKA_ZOOKEEPER_PROTOCOL must be one of {allowed}, not {protocol}")
    elif "SSL" in protocol:
        draft.errors.append(
            f"KAFKA_ZOOKEEPER_PROTOCOL={protocol}: TLS to ZooKeeper is not supported by this "
            "image; use PLAINTEXT or SASL"
        )
    elif protocol == "SASL" and (not user or not password):
        draft.errors.append("KAFKA_ZOOKEEPER_PROTOCOL=SASL needs KAFKA_ZOOKEEPER_USER/PASSWORD")
    elif protocol == "SASL" and (":" in user or "\n" in user + password):
        draft.errors.append("KAFKA_ZOOKEEPER_USER/PASSWORD: no ':' in the user, no line breaks")
    elif protocol == "SASL":
        draft.login = (user, password)
        draft.run_args += ["--zookeeper-digest", f"{user}:{password}", "--zookeeper-auth", "sasl"]
    else:
        for variable in ("KAFKA_ZOOKEEPER_USER", "KAFKA_ZOOKEEPER_PASSWORD"):
            if env.get(variable):
                draft.warn(variable, "used only with KAFKA_ZOOKEEPER_PROTOCOL=SASL; ignored")


def _bitnami_variable(variable: str, value: str, draft: _Draft) -> None:
    """A KAFKA_* variable that is neither KAFKA_CFG_* nor an alias."""
    if variable in _BITNAMI_ACCEPTED:
        return
    if variable == "KAFKA_OPTS":
        draft.jaas(variable, value)
    elif variable in _JVM_KNOBS:
        draft.warn(variable, f"{_JVM_KNOBS[variable]}; ignored")
    elif _BITNAMI_SECURITY.match(variable):
        reason = "Bitnami's generated SASL/TLS set-up is not emulated (set KAFKA_CFG_* and a"
        draft.warn(variable, f"{reason} JAAS file in KAFKA_OPTS); ignored")
    else:
        cfg = "KAFKA_CFG_" + variable.removeprefix("KAFKA_")
        known = broker_config_key(bitnami_property_name(cfg), draft.release) is not None
        hint = f" (the Bitnami image reads {cfg})" if known else ""
        draft.warn(variable, f"not a Bitnami variable{hint}; ignored")


# --- ZooKeeper ------------------------------------------------------------------------------
#: cp-zookeeper's fixed table (zookeeper.properties.template), without its TLS entries.
CONFLUENT_ZOOKEEPER_TABLE = {
    f"ZOOKEEPER_{suffix}": prop
    for suffix, prop in _table(
        """CLIENT_PORT=clientPort TICK_TIME=tickTime
        GLOBAL_OUTSTANDING_LIMIT=globalOutstandingLimit PRE_ALLOC_SIZE=preAllocSize
        SNAP_COUNT=snapCount TRACE_FILE=traceFile MAX_CLIENT_CNXNS=maxClientCnxns
        CLIENT_PORT_ADDRESS=clientPortAddress MIN_SESSION_TIMEOUT=minSessionTimeout
        MAX_SESSION_TIMEOUT=maxSessionTimeout FSYNC_WARNING_THRESHOLDMS=fsync.warningthresholdms
        AUTOPURGE_SNAP_RETAIN_COUNT=autopurge.snapRetainCount
        AUTOPURGE_PURGE_INTERVAL=autopurge.purgeInterval SYNC_ENABLED=syncEnabled
        ELECTION_ALG=electionAlg INIT_LIMIT=initLimit LEADER_SERVES=leaderServes
        SYNC_LIMIT=syncLimit CNX_TIMEOUT=cnxTimeout FORCE_SYNC=forceSync
        JUTE_MAX_BUFFER=jute.maxbuffer SKIP_ACL=skipACL
        QUORUM_LISTEN_ON_ALL_IPS=quorumListenOnAllIPs CLIENT_CNXN_SOCKET=clientCnxnSocket
        SERVER_CNXN_SOCKET=serverCnxnSocket SERVER_CNXN_FACTORY=serverCnxnFactory
        TCP_KEEP_ALIVE=tcpKeepAlive ADMIN_ENABLE_SERVER=admin.enableServer
        ADMIN_SERVER_ADDRESS=admin.serverAddress ADMIN_SERVER_PORT=admin.serverPort
        ADMIN_IDLE_TIMEOUT=admin.idleTimeout ADMIN_COMMAND_URL=admin.commandURL
        4LW_COMMANDS_WHITELIST=4lw.commands.whitelist"""
    ).items()
}
# Lists split on `;` into <key>.1, <key>.2, ...
_CONFLUENT_ZK_LISTS = _table(
    "ZOOKEEPER_SERVERS=server ZOOKEEPER_GROUPS=group ZOOKEEPER_WEIGHTS=weight"
)
_CONFLUENT_ZK_TLS = re.compile(r"ZOOKEEPER_(SSL_|X509_|AUTH_PROVIDER_|CLIENT_PORT_UNIFICATION)")

#: Bitnami's ZOO_* variables and their zoo.cfg keys.
BITNAMI_ZOOKEEPER_TABLE = _table(
    """ZOO_PORT_NUMBER=clientPort ZOO_TICK_TIME=tickTime ZOO_INIT_LIMIT=initLimit
    ZOO_SYNC_LIMIT=syncLimit ZOO_PRE_ALLOC_SIZE=preAllocSize ZOO_SNAPCOUNT=snapCount
    ZOO_MAX_CNXNS=maxCnxns ZOO_MAX_CLIENT_CNXNS=maxClientCnxns
    ZOO_AUTOPURGE_INTERVAL=autopurge.purgeInterval
    ZOO_AUTOPURGE_RETAIN_COUNT=autopurge.snapRetainCount
    ZOO_4LW_COMMANDS_WHITELIST=4lw.commands.whitelist ZOO_MAX_SESSION_TIMEOUT=maxSessionTimeout
    ZOO_ADMIN_SERVER_PORT_NUMBER=admin.serverPort ZOO_PEER_TYPE=peerType"""
)
#: zookeeper-env.sh's defaults of the table's variables that are always written.
BITNAMI_ZOOKEEPER_DEFAULTS = _table(
    """ZOO_PORT_NUMBER=2181 ZOO_TICK_TIME=2000 ZOO_INIT_LIMIT=10 ZOO_SYNC_LIMIT=5
    ZOO_MAX_CLIENT_CNXNS=60 ZOO_4LW_COMMANDS_WHITELIST=srvr,mntr ZOO_MAX_SESSION_TIMEOUT=40000"""
)
_BITNAMI_ZK_BOOLEANS = _table(
    """ZOO_RECONFIG_ENABLED=reconfigEnabled ZOO_LISTEN_ALLIPS_ENABLED=quorumListenOnAllIPs
    ZOO_ENABLE_ADMIN_SERVER=admin.enableServer"""
)
_BITNAMI_ZK_HANDLED = _words(
    """ZOO_SERVERS ZOO_SERVER_ID ZOO_DATA_DIR ZOO_DATA_LOG_DIR ZOO_ENABLE_AUTH
    ZOO_TLS_CLIENT_ENABLE ZOO_TLS_QUORUM_ENABLE"""
)
_BITNAMI_SERVER = re.compile(r"[^:]+:[^:]+:[^:]+(:(observer|participant))?")


def zookeeper_config(env: Mapping[str, str], role: Role) -> ZooKeeperTranslation:
    """The ZooKeeper server `env` describes in `role`'s convention. Always with a
    4lw.commands.whitelist holding at least ruok and srvr (readiness checks send them), and
    admin.enableServer=false unless given."""
    if role == "confluent-zookeeper":
        return _confluent_zookeeper(env)
    if role == "bitnami-zookeeper":
        return _bitnami_zookeeper(env)
    raise ValueError(f"not a ZooKeeper role: {role!r}")


def _server_id(variable: str, value: str, errors: list[str]) -> int | None:
    if value.strip().isdigit():
        return int(value)
    errors.append(f"{variable} must be a number, not {value!r}")
    return None


def _readiness(props: dict[str, str]) -> list[tuple[str, str]]:
    words = [w.strip() for w in props.get("4lw.commands.whitelist", "").split(",") if w.strip()]
    if "*" not in words:
        words += [w for w in READINESS_WORDS if w not in words]
        props["4lw.commands.whitelist"] = ", ".join(words)
    props.setdefault("admin.enableServer", "false")
    return list(props.items())


def _confluent_zookeeper(env: Mapping[str, str]) -> ZooKeeperTranslation:
    """cp-zookeeper's configure and template; an empty value is an absent one for dub's
    checks, a written one for the table (as the template writes it)."""
    errors: list[str] = []
    if not env.get("ZOOKEEPER_CLIENT_PORT") and not env.get("ZOOKEEPER_SECURE_CLIENT_PORT"):
        errors.append("one of (ZOOKEEPER_CLIENT_PORT,ZOOKEEPER_SECURE_CLIENT_PORT) is required.")
    if env.get("ZOOKEEPER_SECURE_CLIENT_PORT"):
        errors.append("ZOOKEEPER_SECURE_CLIENT_PORT: this image's ZooKeeper has no TLS clients")
    values = dict(env)
    if env.get("ZOOKEEPER_SERVERS"):
        if not env.get("ZOOKEEPER_SERVER_ID"):
            errors.append("ZOOKEEPER_SERVER_ID is required.")
        values.setdefault("ZOOKEEPER_INIT_LIMIT", "10")
        values.setdefault("ZOOKEEPER_SYNC_LIMIT", "5")
    server_id = env.get("ZOOKEEPER_SERVER_ID")
    myid = _server_id("ZOOKEEPER_SERVER_ID", server_id, errors) if server_id else None
    props = {"dataDir": CONFLUENT_ZK_DATA_DIR, "dataLogDir": CONFLUENT_ZK_LOG_DIR}
    props |= {p: values[v] for v, p in CONFLUENT_ZOOKEEPER_TABLE.items() if v in values}
    for variable, prefix in _CONFLUENT_ZK_LISTS.items():
        for index, item in enumerate(filter(None, env.get(variable, "").split(";")), 1):
            props[f"{prefix}.{index}"] = item
    known = {*CONFLUENT_ZOOKEEPER_TABLE, *_CONFLUENT_ZK_LISTS}
    known |= {"ZOOKEEPER_SERVER_ID", "ZOOKEEPER_SECURE_CLIENT_PORT"}
    warnings = []
    for variable in sorted(v for v in env if v.startswith("ZOOKEEPER_") and v not in known):
        reason = "not in cp-zookeeper's table of settings"
        if "LOG4J" in variable:
            reason = "this image does not configure ZooKeeper's log4j"
        if _CONFLUENT_ZK_TLS.match(variable):
            reason = "TLS and SASL are not supported by this image's ZooKeeper"
        warnings.append(f"{variable}: {reason}; ignored")
    return ZooKeeperTranslation(_readiness(props), myid, CONFLUENT_ZK_DATA_DIR, warnings, errors)


def _bitnami_servers(env: Mapping[str, str], port: str, errors: list[str]) -> dict[str, str]:
    """ZOO_SERVERS (split on `;`, `,` or blanks): server.N=host:port:port[:role];clientPort, N
    the 1-based position, or the id after `::` when the list uses that form. One entry is
    standalone mode: no server lines."""
    text = env.get("ZOO_SERVERS", "")
    entries = [entry for entry in re.split(r"[;,\s]+", text) if entry]
    servers: dict[str, str] = {}
    for index, entry in enumerate(entries, 1):
        address, _, server_id = entry.partition("::") if "::" in text else (entry, "", str(index))
        if _BITNAMI_SERVER.fullmatch(address) is None or not server_id.isdigit():
            form = "host:port:port[:observer|:participant]" + ("::id" if "::" in text else "")
            errors.append(f"ZOO_SERVERS: {entry!r} is not {form}")
        servers[f"server.{server_id}"] = f"{address};{port}"
    return servers if len(entries) > 1 else {}


def _bitnami_zookeeper(env: Mapping[str, str]) -> ZooKeeperTranslation:
    """bitnami/zookeeper's setup; an empty value is an absent one (its `${VAR:-default}`)."""
    errors: list[str] = []
    if _is_yes(env.get("ZOO_ENABLE_AUTH", "")):
        errors.append("ZOO_ENABLE_AUTH=yes: authentication is not supported by this image")
    elif not _is_yes(env.get("ALLOW_ANONYMOUS_LOGIN", "")):
        errors.append("set ALLOW_ANONYMOUS_LOGIN=yes: this image's ZooKeeper has no authentication")
    for variable in ("ZOO_TLS_CLIENT_ENABLE", "ZOO_TLS_QUORUM_ENABLE"):
        if _is_yes(env.get(variable, "")):
            errors.append(f"{variable}: TLS is not supported by this image's ZooKeeper")
    data_dir = env.get("ZOO_DATA_DIR") or BITNAMI_ZK_DATA_DIR
    props = {"dataDir": data_dir}
    if env.get("ZOO_DATA_LOG_DIR"):
        props["dataLogDir"] = env["ZOO_DATA_LOG_DIR"]
    for variable, prop in BITNAMI_ZOOKEEPER_TABLE.items():
        value = env.get(variable) or BITNAMI_ZOOKEEPER_DEFAULTS.get(variable)
        if value:
            props[prop] = value
    for variable, prop in _BITNAMI_ZK_BOOLEANS.items():
        if env.get(variable):
            props[prop] = "true" if _is_yes(env[variable]) else "false"
    props |= _bitnami_servers(env, props["clientPort"], errors)
    known = {*BITNAMI_ZOOKEEPER_TABLE, *_BITNAMI_ZK_BOOLEANS, *_BITNAMI_ZK_HANDLED}
    warnings = []
    for variable in sorted(env):
        if variable.startswith("ZOO_CFG_"):  # every `_` -> `.`, case kept
            props[variable.removeprefix("ZOO_CFG_").replace("_", ".")] = env[variable]
        elif variable.startswith("ZOO_") and variable not in known:
            warnings.append(f"{variable}: not a setting this image takes from Bitnami's; ignored")
    myid = _server_id("ZOO_SERVER_ID", env.get("ZOO_SERVER_ID") or "1", errors)
    return ZooKeeperTranslation(_readiness(props), myid, data_dir, warnings, errors)


# --- Java properties ------------------------------------------------------------------------
_CONTROL_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}


def _escape(text: str, *, key: bool) -> str:
    """Properties.store's escapes: `\\`, separators, comment marks, control characters; blanks
    everywhere in a key but only the leading one in a value; every character outside printable
    ASCII as \\uXXXX (UTF-16 units, as Java's strings hold them)."""
    out: list[str] = []
    for i, char in enumerate(text):
        code = ord(char)
        if char == " ":
            out.append("\\ " if key or i == 0 else " ")
        elif char in "\\=:#!":
            out.append("\\" + char)
        elif char in _CONTROL_ESCAPES:
            out.append(_CONTROL_ESCAPES[char])
        elif code > 0xFFFF:
            high, low = divmod(code - 0x10000, 0x400)
            out.append(f"\\u{0xD800 + high:04X}\\u{0xDC00 + low:04X}")
        elif code < 0x20 or code > 0x7E:
            out.append(f"\\u{code:04X}")
        else:
            out.append(char)
    return "".join(out)


def render_properties(pairs: Sequence[tuple[str, str]]) -> str:
    """`key=value` lines in order, escaped so that java.util.Properties.load (and zkbroker's
    `--broker-config-file` reader) reads the pairs back; pure ASCII."""
    return "".join(f"{_escape(k, key=True)}={_escape(v, key=False)}\n" for k, v in pairs)


# --- zk-ready -------------------------------------------------------------------------------
def zookeeper_hosts(connect: str) -> list[tuple[str, int]]:
    """The servers of `host:port[,host:port][/chroot]` (port 2181 when absent, IPv6 hosts in
    brackets); ValueError for an empty or malformed string."""
    servers = []
    for item in filter(None, (part.strip() for part in connect.split("/", 1)[0].split(","))):
        if item.startswith("["):
            host, _, rest = item[1:].partition("]")
            port = rest.removeprefix(":") or "2181"
        else:
            host, colon, port = item.rpartition(":")
            host, port = (host, port) if colon else (item, "2181")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"not a ZooKeeper connect string: {connect!r}")
        servers.append((host, int(port)))
    if not servers:
        raise ValueError(f"not a ZooKeeper connect string: {connect!r}")
    return servers


def _answers(host: str, port: int, timeout_s: float) -> bool:
    """Whether the server answers `ruok`: `imok`, or closing with or without a not-whitelisted
    notice (four-letter words off: the accepted connection is all there is to see)."""
    answer = b""
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except OSError:  # refused, unreachable, unresolved, or not accepted in time
        return False
    with sock:
        try:
            sock.sendall(b"ruok")
            sock.shutdown(socket.SHUT_WR)
            while len(answer) < 4096 and (chunk := sock.recv(1024)):
                answer += chunk
        except TimeoutError:
            return False
        except OSError:  # reset: closed before reading the word
            return True
    return answer.strip() in (b"imok", b"") or b"whitelist" in answer


def zookeeper_ready(connect: str, timeout_s: float, *, interval_s: float = 0.25) -> bool:
    """Whether a server of `connect` answers within `timeout_s`, tried every `interval_s`
    (cub zk-ready's job, done with the `ruok` four-letter word instead of a session)."""
    servers = zookeeper_hosts(connect)
    deadline = time.monotonic() + timeout_s
    while True:
        for host, port in servers:
            remaining = deadline - time.monotonic()
            if remaining > 0 and _answers(host, port, min(remaining, 2.0)):
                return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(interval_s, remaining))


# --- the command ----------------------------------------------------------------------------
def _report(warnings: Sequence[str], errors: Sequence[str]) -> int:
    for warning in warnings:
        print(f"zkbroker: warning: {warning}", file=sys.stderr)
    for error in errors:
        print(f"zkbroker: error: {error}", file=sys.stderr)
    return 1 if errors else 0


def _write(path: Path, text: str) -> list[str]:
    """Write `text` (ASCII: render_properties escapes the rest); the errors."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="latin-1")
    except OSError as e:
        return [f"cannot write {path}: {e.strerror or e}"]
    return []


def _kafka_command(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    role: Role = "bitnami-kafka" if detect(env) == "bitnami-kafka" else "confluent-kafka"
    result = kafka_config(env, role, args.release)
    errors = list(result.errors)
    if not errors:
        header = f"# zkbroker: from the {role} environment, Kafka {release_text(args.release)}\n"
        errors = _write(Path(args.out), header + render_properties(result.properties))
    if _report(result.warnings, errors):
        return 1
    print("".join(f"{arg}\n" for arg in result.run_args), end="")
    return 0


def _zookeeper_command(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    bitnami = detect(env) == "bitnami-zookeeper"
    role: Role = "bitnami-zookeeper" if bitnami else "confluent-zookeeper"
    result = zookeeper_config(env, role)
    errors = list(result.errors)
    if not errors:
        header = f"# zkbroker: from the {role} environment\n"
        errors = _write(Path(args.out), header + render_properties(result.properties))
    if not errors and result.myid is not None:
        errors = _write(Path(result.data_dir, "myid"), f"{result.myid}\n")
    return _report(result.warnings, errors)


def _zk_ready_command(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    try:
        if zookeeper_ready(args.connect, args.timeout_s):
            return 0
    except ValueError as e:
        return _report([], [str(e)])
    late = f"ZooKeeper at {args.connect} did not answer within {args.timeout_s:g} s"
    return _report([], [late])


def _detect_command(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    print(detect(env) or "")
    return 0


def build_parser(env: Mapping[str, str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m zkbroker.broker.cli.image_conventions",
        description="A container's Confluent or Bitnami environment, translated for zkbroker.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    detect_parser = sub.add_parser("detect", help="print the convention the environment follows")
    detect_parser.set_defaults(handler=_detect_command)
    kafka = sub.add_parser("kafka", help="write the broker's server.properties")
    kafka.add_argument("--out", required=True, metavar="FILE")
    release = env.get("ZKBROKER_KAFKA_VERSION") or "3.9"  # parsed as `--kafka-version`
    kafka.add_argument("--release", type=kafka_release, default=release, metavar="RELEASE")
    kafka.set_defaults(handler=_kafka_command)
    zookeeper = sub.add_parser("zookeeper", help="write the ZooKeeper's zoo.cfg and myid")
    zookeeper.add_argument("--out", required=True, metavar="FILE")
    zookeeper.set_defaults(handler=_zookeeper_command)
    ready = sub.add_parser("zk-ready", help="wait until a ZooKeeper answers ruok")
    ready.add_argument("connect", metavar="CONNECT", help="host:port[,host:port][/chroot]")
    ready.add_argument("timeout_s", metavar="TIMEOUT_S", type=positive_seconds)
    ready.set_defaults(handler=_zk_ready_command)
    return parser


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """The command (`env`: os.environ by default); its exit code (2: a refused command line)."""
    env = os.environ if env is None else env
    try:
        args = build_parser(env).parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    handler: Callable[[argparse.Namespace, Mapping[str, str]], int] = args.handler
    return handler(args, env)


if __name__ == "__main__":
    sys.exit(main())
