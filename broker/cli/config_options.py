"""Kafka's own keys for what `zkbroker run` sets through options (`broker.id`, `listeners`,
`zookeeper.connect`, `log.dirs`, `broker.rack`, ...), from a `server.properties` or
`--broker-config` entries (README, "A Kafka `server.properties` as it is").

`apply_config_keys(args, entries)` takes the file's entries, then the command line's (the
latter win, as `kafka-server-start --override`), and returns the namespace with the options
those keys set plus the entries left as static broker configs. A command-line option that says
otherwise is refused naming both; a key the release does not know stays a config and is warned
about; an invalid value is refused with Kafka's ConfigDef message. Also here: the JAAS file
(`--jaas-config`, else `-Djava.security.auth.login.config=` in `$KAFKA_OPTS`) and its `Client`
section, the ZooKeeper SASL login.

Importing this module is light (`parse_listener` is an argument type of the parser): the
config catalog and the JAAS reader are imported where entries are checked.

Not here: the options themselves (`zkbroker.broker.cli.run_options`), the properties syntax
(`zkbroker.broker.cli.properties_file`), what Settings checks on its own.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zkbroker.zk_layout.release import Release

#: The environment variable Kafka's scripts hand to the JVM (kafka-run-class.sh).
KAFKA_OPTS_ENV = "KAFKA_OPTS"
_JAAS_PROPERTY = "-Djava.security.auth.login.config="
# Kafka's ZooKeeper client logs in with this JAAS section (zookeeper.sasl.clientconfig).
_ZOOKEEPER_CLIENT_SECTION = "Client"


@dataclass(frozen=True)
class Entry:
    """One KEY=VALUE and where it came from, for messages."""

    key: str
    value: str
    source: str  # "--broker-config-file PATH, line N" or "--broker-config"

    def refuse(self, reason: str) -> ValueError:
        return ValueError(f"{self.source}: {self.key}: {reason}")

    def conflict(self, option: str) -> ValueError:
        return ValueError(f"{self.source}: {self.key}={self.value} conflicts with {option}")


def parse_listener(text: str) -> tuple[str, str, int]:
    """`NAME://HOST:PORT` (Kafka's listener syntax; `[v6]` hosts, an empty host = all)."""
    name, sep, address = text.strip().partition("://")
    host, colon, port_text = address.rpartition(":")
    if not sep or not name or not colon or not port_text.isdigit():
        raise ValueError(f"expected NAME://HOST:PORT, got {text!r}")
    if not name.replace("_", "").isalnum():
        raise ValueError(f"invalid listener name {name!r}")
    return name.upper(), host.removeprefix("[").removesuffix("]") or "0.0.0.0", int(port_text)


def _listener_list(text: str) -> list[tuple[str, str, int]]:
    return [parse_listener(part) for part in text.split(",") if part.strip()]


def _bool(text: str) -> bool:
    return text.strip().lower() == "true"  # ConfigDef has validated it already


def _int(text: str) -> int:
    return int(text.strip())


# Keys with an option that takes the value as it is: key -> (dest, option, parse).
_SIMPLE: dict[str, tuple[str, str, Callable[[str], Any]]] = {
    "zookeeper.connect": ("zookeeper", "--zookeeper", str.strip),
    "num.partitions": ("num_partitions", "--num-partitions", _int),
    "default.replication.factor": (
        "default_replication_factor",
        "--default-replication-factor",
        _int,
    ),
    "auto.create.topics.enable": ("auto_create_topics", "--auto-create-topics", _bool),
    "delete.topic.enable": ("delete_topic_enable", "--delete-topic-enable", _bool),
    "socket.request.max.bytes": ("max_request_bytes", "--max-request-bytes", _int),
    "zookeeper.session.timeout.ms": (
        "zookeeper_session_timeout_ms",
        "--zookeeper-session-timeout-ms",
        _int,
    ),
    "broker.session.timeout.ms": (
        "broker_session_timeout_ms",
        "--broker-session-timeout-ms",
        _int,
    ),
    "auto.leader.rebalance.enable": ("auto_leader_rebalance", "--auto-leader-rebalance", _bool),
    "leader.imbalance.check.interval.seconds": (
        "leader_imbalance_check_interval_s",
        "--leader-imbalance-check-interval-s",
        lambda text: float(_int(text)),
    ),
    "leader.imbalance.per.broker.percentage": (
        "leader_imbalance_per_broker_percentage",
        "--leader-imbalance-per-broker-percentage",
        _int,
    ),
}
# Applied through options and also kept as static broker configs (they are no option's own
# key, so DescribeConfigs shows them as Kafka would).
_KEPT = frozenset({"port", "host.name", "advertised.host.name", "advertised.port"})
#: Every key applied through an option.
CONFIG_KEYS = frozenset(
    {
        *_SIMPLE,
        *_KEPT,
        "broker.id",
        "listeners",
        "advertised.listeners",
        "broker.rack",
        "log.dirs",
        "log.dir",
    }
)


def _option_text(dest: str, value: Any) -> str:
    """How the command line gave `value` to `dest`, for conflict messages."""
    flag = "--" + dest.replace("_", "-")
    if isinstance(value, bool):
        return flag if value else f"--no-{flag[2:]}"
    if isinstance(value, float) and value.is_integer():
        return f"{flag} {int(value)}"
    if isinstance(value, tuple):
        return f"{flag} {','.join(str(v) for v in value)}"
    return f"{flag} {value}"


class _Applier:
    def __init__(self, args: argparse.Namespace, release: Release) -> None:
        self.args = args
        self.release = release
        self.given: dict[str, Entry] = {}

    def known(self, key: str) -> bool:
        from zkbroker.broker.rules.broker_config_catalog import broker_config_key

        return broker_config_key(key, self.release) is not None

    def checked(self, entry: Entry) -> str:
        """The entry's value after ConfigDef's checks (Kafka refuses it at start)."""
        from zkbroker.broker.rules.broker_config_catalog import broker_config_key
        from zkbroker.broker.rules.config_def import InvalidConfig, validate_value

        key = broker_config_key(entry.key, self.release)
        if key is not None:
            try:
                validate_value(key, entry.value)
            except InvalidConfig as e:
                raise entry.refuse(e.message) from None
        return entry.value

    def set(self, dest: str, value: Any, entry: Entry, option: str | None = None) -> None:
        """`dest` = value unless the command line gave another value (a conflict)."""
        given = getattr(self.args, dest)
        if given is None:
            setattr(self.args, dest, value)
        elif given != value:
            raise entry.conflict(option or _option_text(dest, given))

    def apply(self) -> None:
        for key, (dest, _, parse) in _SIMPLE.items():
            entry = self.given.get(key)
            if entry is not None:
                self.set(dest, parse(self.checked(entry)), entry)
        self._broker_ids()
        self._listeners()
        self._advertised()
        self._log_dir()
        self._rack()

    def _broker_ids(self) -> None:
        entry = self.given.get("broker.id")
        if entry is None:
            return
        first = _int(self.checked(entry))
        if first < 0:  # Kafka generates an id from /brokers/seqid; zkbroker keeps its own
            return
        args = self.args
        if args.broker_ids is not None:
            if not args.broker_ids or args.broker_ids[0] != first:
                raise entry.conflict(_option_text("broker_ids", args.broker_ids))
        elif args.brokers is not None:
            args.broker_ids = tuple(range(first, first + args.brokers))
        else:
            args.broker_ids = (first,)  # the file describes one broker

    def _listeners(self) -> None:
        entry = self.given.get("listeners")
        if entry is None:
            # Before 3.0 KafkaConfig made `PLAINTEXT://host.name:port` without `listeners`.
            if self.args.listener is None:
                self._legacy_address(self.given.get("port"), self.given.get("host.name"))
            return
        try:
            listeners = _listener_list(self.checked(entry))
        except ValueError as e:
            raise entry.refuse(str(e)) from None
        if not listeners:
            return
        args = self.args
        if args.listener is not None:
            if list(args.listener) != listeners:
                raise entry.conflict(
                    " ".join(f"--listener {n}://{h}:{p}" for n, h, p in args.listener)
                )
            return
        _, first_host, first_port = listeners[0]
        if args.host is not None and args.host != first_host:
            raise entry.conflict(f"--host {args.host}")
        if args.port is not None and args.port != first_port:
            raise entry.conflict(f"--port {args.port}")
        args.listener = listeners

    def _legacy_address(self, port: Entry | None, host: Entry | None) -> None:
        if port is not None:
            self.set("port", _int(self.checked(port)), port)
        if host is not None:
            self.set("host", self.checked(host).strip() or "0.0.0.0", host)

    def _advertised(self) -> None:
        args = self.args
        entry = self.given.get("advertised.listeners")
        if entry is not None:
            try:
                advertised = _listener_list(self.checked(entry))
            except ValueError as e:
                raise entry.refuse(str(e)) from None
            if not advertised:
                return
            if args.advertised_host is not None:
                raise entry.conflict(f"--advertised-host {args.advertised_host}")
            if args.advertised_listener is not None and list(args.advertised_listener) != (
                advertised
            ):
                raise entry.conflict(
                    " ".join(
                        f"--advertised-listener {n}://{h}:{p}"
                        for n, h, p in args.advertised_listener
                    )
                )
            args.advertised_listener = advertised
            return
        host, port = self.given.get("advertised.host.name"), self.given.get("advertised.port")
        if port is not None and args.advertised_listener is None:
            # PLAINTEXT://advertised.host.name:advertised.port, each defaulting to the bound one.
            if args.advertised_host is not None:
                raise port.conflict(f"--advertised-host {args.advertised_host}")
            name = args.listener[0][0] if args.listener else "PLAINTEXT"
            bound_host = args.listener[0][1] if args.listener else (args.host or "127.0.0.1")
            adv_host = self.checked(host).strip() if host is not None else bound_host
            args.advertised_listener = [(name, adv_host, _int(self.checked(port)))]
        elif host is not None and args.advertised_listener is None:
            self.set("advertised_host", self.checked(host).strip(), host)

    def _log_dir(self) -> None:
        entry = self.given.get("log.dirs") or self.given.get("log.dir")
        if entry is None:
            return
        dirs = [d.strip() for d in self.checked(entry).split(",") if d.strip()]
        if len(dirs) > 1:
            raise entry.refuse(
                f"zkbroker keeps one log dir, {len(dirs)} are named (give one, as --log-dir)"
            )
        if not dirs:
            return
        given = self.args.log_dir
        if given is not None and os.path.abspath(given) != os.path.abspath(dirs[0]):
            raise entry.conflict(f"--log-dir {given}")
        self.args.log_dir = given or dirs[0]

    def _rack(self) -> None:
        entry = self.given.get("broker.rack")
        if entry is None:
            return
        rack = self.checked(entry).strip()
        args = self.args
        count = len(args.broker_ids) if args.broker_ids is not None else (args.brokers or 3)
        if args.racks is not None:
            if any(r.strip() != rack for r in args.racks.split(",")):
                raise entry.conflict(f"--racks {args.racks}")
            return
        args.racks = ",".join([rack] * count)


def apply_config_keys(
    args: argparse.Namespace, entries: Sequence[Entry], release: Release
) -> tuple[argparse.Namespace, tuple[tuple[str, str], ...]]:
    """`args` with what `entries`' option keys set (a copy), and the entries that stay
    static broker configs (the last of each key, in first-seen order); ValueError naming
    the entry and the option for a conflict or an invalid value."""
    applier = _Applier(argparse.Namespace(**vars(args)), release)
    configs: dict[str, str] = {}
    for entry in entries:
        if entry.key in CONFIG_KEYS and applier.known(entry.key):
            applier.given[entry.key] = entry
            if entry.key not in _KEPT:
                continue
        configs[entry.key] = entry.value
    applier.apply()
    return applier.args, tuple(configs.items())


def jaas_config_path(args: argparse.Namespace) -> str | None:
    """`--jaas-config`, else the JVM property in `$KAFKA_OPTS` (as Kafka's scripts run it)."""
    if args.jaas_config is not None:
        return str(args.jaas_config)
    try:
        words = shlex.split(os.environ.get(KAFKA_OPTS_ENV, ""))
    except ValueError:
        return None
    found = [w[len(_JAAS_PROPERTY) :] for w in words if w.startswith(_JAAS_PROPERTY)]
    return found[-1] if found else None  # the JVM keeps the last -D of a name


def zookeeper_login(jaas_path: str | None) -> tuple[str, str] | None:
    """(user, password) of the JAAS file's `Client` section (ZooKeeper's DigestLoginModule
    options), None without one."""
    if jaas_path is None:
        return None
    from zkbroker.broker.security.jaas import read_jaas_file

    section = read_jaas_file(jaas_path).sections.get(_ZOOKEEPER_CLIENT_SECTION, ())
    for _, _, options in section:
        user, password = options.get("username"), options.get("password")
        if user is not None and password is not None:
            return user, password
    return None
