"""Settings of a zkbroker process: what the command line and the Python API configure.

One frozen dataclass, validated on construction, shared read-only by every broker of the
process. Parsing the command line lives in `zkbroker.broker.cli.main`; this module only knows
values.

`broker_configs` are server.properties entries as Kafka takes them: a key the emulated release
does not know is kept (DescribeConfigs lists it as Kafka lists any original, 1.1+) but used by
nothing; `unknown_broker_configs` names them and `unused_configs_message` is Kafka's warning
(`AbstractConfig.logUnused`), which the command logs. Keys with a field of their own
(`OWN_OPTIONS`) are refused here; the command line maps them to those fields
(`zkbroker.broker.cli.config_options`).

Importing this module is light, and the checks that need no catalog come first: the config
catalog, the release table and the security modules are imported where they are used, so the
`zkbroker` command refuses a bad broker id or rack count at once (before anything starts).

Deliberately not here: Kafka's full server.properties (only the knobs zkbroker emulates
exist), per-broker overrides other than racks, and anything that changes at run time.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from zkbroker.broker.log_formats import LOG_FORMATS
from zkbroker.broker.rules.acl_matching import AUTHORIZER_ONLY_CONFIGS, parse_super_users
from zkbroker.broker.security.jaas import JaasFile, read_jaas_file

if TYPE_CHECKING:
    from zkbroker.broker.security.inter_broker import InterBrokerSecurity
    from zkbroker.broker.security.listener_config import ListenerSecurity
    from zkbroker.zk_layout.release import Release
    from zkbroker.zk_layout.store.auth import ZkAuth

# Kafka's socket.request.max.bytes default.
DEFAULT_MAX_REQUEST_BYTES = 104_857_600
#: The embedded ZooKeeper's data directory inside a log dir (a name no partition directory
#: can have).
EMBEDDED_ZOOKEEPER_DIR: Final = "zookeeper"
DEFAULT_LISTENER = "PLAINTEXT"


def _default_release() -> Release:
    from zkbroker.broker.protocol.releases import DEFAULT_RELEASE

    return DEFAULT_RELEASE


@dataclass(frozen=True)
class Settings:
    """Everything a zkbroker process is configured with."""

    broker_ids: tuple[int, ...] = (0, 1, 2)
    host: str = "127.0.0.1"
    # The host written into /brokers/ids and answered in Metadata; defaults to `host`.
    advertised_host: str | None = None
    # Port of the first broker; broker i listens on port + i. 0 = any free port for each.
    port: int = 9092
    racks: tuple[str | None, ...] = ()
    # host:port[,host:port][/chroot] of an existing ensemble; None = start an embedded one.
    zookeeper: str | None = None
    # Default: `zkbroker.broker.protocol.releases.DEFAULT_RELEASE` (3.9).
    kafka_version: Release = field(default_factory=_default_release)
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    listener_name: str = DEFAULT_LISTENER
    # Further listeners of every broker besides `listener_name` on host:port, as Kafka's
    # `listeners` lists them: (name, host, port of the first broker; broker i listens on
    # port + i; 0 = free ports). Each gets its protocol from listener.security.protocol.map.
    extra_listeners: tuple[tuple[str, str, int], ...] = ()
    # Kafka's advertised.listeners, per listener: (name, host, port of the first broker; broker
    # i advertises port + i; 0 = the port it bound). Given, it replaces the default (each
    # listener at `advertised_host` or its host) and only the listeners named are advertised.
    advertised_listeners: tuple[tuple[str, str, int], ...] = ()
    zk_session_timeout_s: float = 18.0
    # The ZooKeeper servers' jute.maxbuffer (ZooKeeper's default 0xfffff): a write whose
    # request would exceed it is refused before it is sent (a topic of too many partitions
    # gets INVALID_PARTITIONS), since the server would drop the connection instead.
    zookeeper_max_buffer_bytes: int = 0xFFFFF
    # Kafka's zookeeper.set.acl: the znodes zkbroker creates get Kafka's secure ACLs
    # (`zkbroker.zk_layout.nodes.secure_paths`); needs `zookeeper_digest`, "user:password", the
    # digest credentials every ZooKeeper session of zkbroker authenticates with.
    zookeeper_set_acl: bool = False
    zookeeper_digest: str | None = field(default=None, repr=False)
    # How those credentials log in: "digest" (addauth) or "sasl" (SASL DIGEST-MD5, checked by
    # the server; the embedded ZooKeeper is then started with that one SASL user).
    zookeeper_auth_scheme: str = "digest"
    # Kafka's broker.session.timeout.ms: how long a KIP-631 lease lasts without a heartbeat.
    broker_session_timeout_ms: int = 9000
    # Kafka's delete.topic.enable, auto.create.topics.enable, num.partitions and
    # default.replication.factor.
    delete_topic_enable: bool = True
    auto_create_topics: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    # Further static broker configs, as lines of server.properties would give them
    # (`--broker-config k=v`); they show as STATIC_BROKER_CONFIG in DescribeConfigs.
    broker_configs: tuple[tuple[str, str], ...] = ()
    # Which of `listeners` and `advertised.listeners` the user set (an option, a properties
    # file, a `Cluster(...)` keyword): only those are server.properties lines; an unset one is
    # described as Kafka describes an unset key. None (a Settings built directly): a key counts
    # as set when its fields differ from their defaults.
    configured_keys: frozenset[str] | None = None
    # Age after which /config/changes notifications are purged (Kafka: 15 minutes).
    config_change_expiration_ms: int = 15 * 60 * 1000
    # Kafka's auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds and
    # leader.imbalance.per.broker.percentage.
    auto_leader_rebalance: bool = True
    leader_imbalance_check_interval_s: float = 300.0
    leader_imbalance_per_broker_percentage: int = 10
    # `--log-dir DIR` (Kafka's log.dirs): partition logs on disk in Kafka's layout, kept across
    # restarts and shared by every process given the same directory; None keeps them in memory.
    # Its absolute path is each broker's static `log.dirs` and the one log dir DescribeLogDirs
    # names (`zkbroker.handlers.support.log_dirs`).
    log_dir: str | None = None
    # `--capture FILE.jsonl`: append one JSON line per request answered
    # (`zkbroker.broker.hooks.capture`).
    capture_path: str | None = None
    # `--statsd host:port`: send StatsD metrics there (`zkbroker.broker.hooks.metrics`); gauges
    # every `statsd_interval_s` seconds.
    statsd: str | None = None
    statsd_interval_s: float = 10.0
    # Kafka's JAAS file (the JVM's -Djava.security.auth.login.config): the brokers' SASL server
    # sections (`KafkaServer`, `<listener>.KafkaServer`) give PLAIN users and the brokers' own
    # login where no sasl.jaas.config config does (`zkbroker.broker.security.jaas`).
    jaas_config: str | None = None
    log_level: str = "info"
    log_format: str = "console"

    def __post_init__(self) -> None:
        self._check_brokers()
        self._check_values()
        _check_broker_configs(self.broker_configs, self.kafka_version)
        if self.secure_zookeeper_acls and self.zookeeper_digest is None:
            # Kafka: "zookeeper.set.acl is true, but ... the verification of the JAAS login
            # file failed" (a SecurityException at start).
            raise ValueError(
                "zookeeper.set.acl is true, but no ZooKeeper credentials were given "
                "(--zookeeper-digest USER:PASSWORD)"
            )
        _ = self.zookeeper_auth  # validates the digest's form
        _ = self.jaas_file  # read and parsed once, at start, as the JVM reads it
        if self.log_dir is not None and any(n == "log.dirs" for n, _ in self.broker_configs):
            # The one log dir is --log-dir's; a second value would disagree with where the
            # logs are (DescribeConfigs against DescribeLogDirs).
            raise ValueError("--broker-config log.dirs: use --log-dir instead")
        if self.log_dir is not None:
            _check_log_dir(self.log_dir)
        _check_admission_configs(self.known_broker_configs, self.max_request_bytes)
        _check_listeners(self)
        # The checks above need no release table (the catalog takes any release), so a bad
        # value is refused before the table (the codec's package) is imported.
        from zkbroker.broker.protocol.releases import RELEASES

        if self.kafka_version not in RELEASES:
            raise ValueError(f"unknown Kafka release {self.kafka_version!r}")
        self._check_security()

    def _check_brokers(self) -> None:
        """The broker ids, their racks and the room their ports need."""
        if not self.broker_ids:
            raise ValueError("at least one broker id is needed")
        if len(set(self.broker_ids)) != len(self.broker_ids):
            raise ValueError(f"broker ids must be distinct, got {list(self.broker_ids)}")
        if any(b < 0 for b in self.broker_ids):
            raise ValueError(f"broker ids must be >= 0, got {list(self.broker_ids)}")
        if self.racks and len(self.racks) != len(self.broker_ids):
            raise ValueError(
                f"--racks names {len(self.racks)} racks for {len(self.broker_ids)} brokers; "
                "give one rack per broker"
            )
        if not 0 <= self.port <= 65535 or (
            self.port and self.port + len(self.broker_ids) - 1 > 65535
        ):
            raise ValueError(f"port {self.port} leaves no room for {len(self.broker_ids)} brokers")

    def _check_values(self) -> None:
        """The numeric and named options, each on its own."""
        if self.num_partitions < 1 or self.default_replication_factor < 1:
            raise ValueError("--num-partitions and --default-replication-factor must be >= 1")
        if self.max_request_bytes <= 0:
            raise ValueError("--max-request-bytes must be positive")
        if self.zookeeper_max_buffer_bytes < 4096:
            raise ValueError("--zookeeper-max-buffer-bytes must be at least 4096")
        if self.zk_session_timeout_s <= 0:
            raise ValueError("--zookeeper-session-timeout-ms must be positive")
        if self.broker_session_timeout_ms <= 0:
            raise ValueError("--broker-session-timeout-ms must be positive")
        if self.leader_imbalance_check_interval_s <= 0:
            raise ValueError("--leader-imbalance-check-interval-s must be positive")
        if not 0 <= self.leader_imbalance_per_broker_percentage <= 100:
            raise ValueError("--leader-imbalance-per-broker-percentage must be within 0..100")
        if self.log_format not in LOG_FORMATS:
            raise ValueError(f"--log-format is one of {', '.join(LOG_FORMATS)}")
        if self.statsd is not None:
            parse_address(self.statsd)
        if self.statsd_interval_s <= 0:
            raise ValueError("--statsd-interval-s must be positive")

    def _check_security(self) -> None:
        """Kafka refuses to start with a listener it cannot secure: so does zkbroker, with the
        reason (a missing keystore, an unsupported mechanism, a bad mapping rule)."""
        from zkbroker.broker.security.tls import server_context

        for name, _, _ in self.listeners:
            security = self.security_of(name)
            if security.tls:
                server_context(security.configs)
        # ... and with an inter-broker client it cannot build: a TLS client context, or a
        # SASL login (mechanism among the listener's, the broker's username and password).
        self.inter_broker_security()

    @cached_property
    def jaas_file(self) -> JaasFile | None:
        """The parsed `jaas_config` file (JaasError, a ValueError, when it is unreadable)."""
        return None if self.jaas_config is None else read_jaas_file(self.jaas_config)

    @property
    def known_broker_configs(self) -> dict[str, str]:
        """`broker_configs` a broker of the emulated release reads: KafkaConfig's keys and the
        authorizer's (`unknown_broker_configs` are left out: Kafka uses them for nothing)."""
        return {
            name: value for name, value in self.broker_configs if _known(name, self.kafka_version)
        }

    @property
    def unknown_broker_configs(self) -> tuple[str, ...]:
        """Keys of `broker_configs` the emulated release does not know, sorted."""
        return tuple(
            sorted({n for n, _ in self.broker_configs if not _known(n, self.kafka_version)})
        )

    @property
    def listeners(self) -> tuple[tuple[str, str, int], ...]:
        """Every listener of a broker, (name, host, first broker's port), the first one first:
        the one `bootstrap_servers` names and the inter-broker listener by default."""
        return ((self.listener_name, self.host, self.port), *self.extra_listeners)

    def _protocol_map_default(self) -> str | None:
        """The map written when listeners have names other than protocols and none is given:
        each such listener PLAINTEXT (zkbroker's behaviour before security existed)."""
        from zkbroker.broker.security.listener_config import PROTOCOLS

        names = [name for name, _, _ in self.listeners]
        if all(n in PROTOCOLS for n in names):
            return None
        return ",".join(f"{n}:{n if n in PROTOCOLS else 'PLAINTEXT'}" for n in names)

    def security_of(self, listener: str) -> ListenerSecurity:
        """The security of a listener (`listener.security.protocol.map`, `sasl.*`, `ssl.*`
        from `--broker-config`); ValueError when Kafka would not start with it."""
        from zkbroker.broker.security.listener_config import listener_security

        configs = self.known_broker_configs
        default_map = self._protocol_map_default()
        if default_map is not None and "listener.security.protocol.map" not in configs:
            configs["listener.security.protocol.map"] = default_map
        return listener_security(configs, listener, self.kafka_version, self.jaas_file)

    @property
    def inter_broker_listener(self) -> str:
        """The listener brokers reach each other on (`zkbroker.broker.security.inter_broker`)."""
        from zkbroker.broker.security.inter_broker import inter_broker_listener_name

        return inter_broker_listener_name(self.known_broker_configs, self.listener_name)

    def inter_broker_security(self) -> InterBrokerSecurity:
        """How a broker dials its peers' inter-broker listener; ValueError when Kafka would
        not start with it."""
        from zkbroker.broker.security.inter_broker import inter_broker_security

        return inter_broker_security(
            self.security_of(self.inter_broker_listener), self.kafka_version
        )

    @property
    def listener_security(self) -> ListenerSecurity:
        """The first listener's security (`security_of`)."""
        return self.security_of(self.listener_name)

    @property
    def secure_zookeeper_acls(self) -> bool:
        """Kafka's zookeeper.set.acl: `--zookeeper-set-acl`, or the key itself in
        `--broker-config` / `--broker-config-file` (a server.properties carries it)."""
        configured = self.known_broker_configs.get("zookeeper.set.acl", "false")
        return self.zookeeper_set_acl or configured.strip().lower() == "true"

    @property
    def zookeeper_auth(self) -> ZkAuth | None:
        """The credentials of zkbroker's ZooKeeper sessions, None without `zookeeper_digest`."""
        if self.zookeeper_digest is None:
            return None
        from zkbroker.zk_layout.store.auth import ZkAuth

        return ZkAuth.parse(
            self.zookeeper_digest,
            set_acl=self.secure_zookeeper_acls,
            scheme=self.zookeeper_auth_scheme,
        )

    def embedded_zookeeper_options(self) -> dict[str, Any]:
        """The `EmbeddedZooKeeper` options of these settings: the command starts its server
        early with them and the cluster takes over a server made with the same ones."""
        auth = self.zookeeper_auth
        # SASL to ZooKeeper: the embedded server knows zkbroker's one user.
        sasl = auth is not None and auth.scheme == "sasl"
        return {
            # With a log dir the cluster is kept beside the logs (None: a temporary directory).
            "data_dir": None
            if self.log_dir is None
            else Path(self.log_dir) / EMBEDDED_ZOOKEEPER_DIR,
            "max_buffer_bytes": self.zookeeper_max_buffer_bytes,
            "sasl_users": {auth.user: auth.password} if auth is not None and sasl else None,
        }

    @cached_property
    def release_name(self) -> str:
        """`kafka_version` as Kafka names it ("2.8"); read per request by the server."""
        from zkbroker.zk_layout.release import release_name

        return release_name(self.kafka_version)

    @property
    def queued_max_request_bytes(self) -> int:
        """Kafka's queued.max.request.bytes: `--broker-config` or zkbroker's default, equal to
        socket.request.max.bytes (Kafka's -1 is unbounded; the brokers of a zkbroker process
        share one Python heap, see the README's Limits)."""
        value = self.known_broker_configs.get("queued.max.request.bytes")
        return self.max_request_bytes if value is None else int(value.strip())

    @property
    def public_host(self) -> str:
        return self.advertised_host or self.host

    def rack_of(self, broker_id: int) -> str | None:
        if not self.racks:
            return None
        return self.racks[self.broker_ids.index(broker_id)]

    def static_broker_configs(
        self,
        broker_id: int,
        port: int,
        zookeeper_connect: str,
        ports: dict[str, int] | None = None,
    ) -> dict[str, str]:
        """What this broker's server.properties would hold: the settings Kafka requires or
        zkbroker sets away from Kafka's default, then `--broker-config` entries. `port` is the
        first listener's, `ports` the others' (by name) when they are bound already."""
        from zkbroker.broker.rules.broker_config_catalog import broker_config_key

        # broker.id and zookeeper.connect are always lines of a ZooKeeper-mode broker's
        # server.properties: Kafka refuses to start without zookeeper.connect, and only a
        # configured broker.id gives ids such as 0 (a generated one starts above 1000).
        configs = {"broker.id": str(broker_id), "zookeeper.connect": zookeeper_connect}
        configs.update(self._listener_configs(broker_id, port, ports))
        rack = self.rack_of(broker_id)
        if rack is not None:
            configs["broker.rack"] = rack
        configs.update(self._changed_defaults())
        # --log-dir is the broker's log.dirs, as an absolute path: DescribeLogDirs names the
        # dir so, and AlterReplicaLogDirs accepts only that exact text (Kafka compares a
        # request's path with each configured dir's absolute path).
        if self.log_dir is not None:
            configs["log.dirs"] = os.path.abspath(self.log_dir)
        # zkbroker bounds the bytes of requests being read (Kafka's default -1 is unbounded).
        if broker_config_key("queued.max.request.bytes", self.kafka_version) is not None:
            configs["queued.max.request.bytes"] = str(self.max_request_bytes)
        if self.zookeeper_set_acl:
            configs["zookeeper.set.acl"] = "true"
        configs.update(self.broker_configs)
        return configs

    def _listener_configs(
        self, broker_id: int, port: int, ports: dict[str, int] | None
    ) -> dict[str, str]:
        """The listener lines of `static_broker_configs`: `listeners` and
        `advertised.listeners` when the user set them, the default protocol map, and the
        inter-broker listener when it is not PLAINTEXT."""
        listener = self.listener_name
        bound = {listener: port, **(ports or {})}
        addresses = [
            (name, host, bound.get(name, self.port_of(broker_id, name)))
            for name, host, _ in self.listeners
        ]
        advertised = (
            self.advertised_endpoints(broker_id, {n: p for n, _, p in addresses})
            if self.advertised_listeners
            else [(n, self.advertised_host or h, p) for n, h, p in addresses]
        )
        configs: dict[str, str] = {}
        if self.sets_key("listeners"):
            configs["listeners"] = ",".join(f"{n}://{_host_text(h)}:{p}" for n, h, p in addresses)
        if self.sets_key("advertised.listeners"):
            configs["advertised.listeners"] = ",".join(
                f"{n}://{_host_text(h)}:{p}" for n, h, p in advertised
            )
        default_map = self._protocol_map_default()
        if default_map is not None:
            # Kafka's default map names only the protocols (overridden by --broker-config).
            configs["listener.security.protocol.map"] = default_map
        if listener != DEFAULT_LISTENER and "security.inter.broker.protocol" not in dict(
            self.broker_configs
        ):  # Kafka refuses both keys together
            configs["inter.broker.listener.name"] = listener
        return configs

    def _changed_defaults(self) -> dict[str, str]:
        """The options whose value differs from Kafka's default for the emulated release, in
        `static_broker_configs`' order."""
        from zkbroker.broker.rules.broker_config_catalog import broker_config_key

        brokers = len(self.broker_ids)
        configs: dict[str, str] = {}
        for name, value, default in (
            ("num.partitions", str(self.num_partitions), "1"),
            ("default.replication.factor", str(self.default_replication_factor), "1"),
            # Kafka's own config/server.properties sets 1 for its one-broker quickstart; with
            # the default 3 a cluster of fewer brokers never creates __consumer_offsets.
            ("offsets.topic.replication.factor", str(min(3, brokers)), "3"),
            ("auto.create.topics.enable", str(self.auto_create_topics).lower(), "true"),
            ("delete.topic.enable", str(self.delete_topic_enable).lower(), "true"),
            ("socket.request.max.bytes", str(self.max_request_bytes), "104857600"),
            ("auto.leader.rebalance.enable", str(self.auto_leader_rebalance).lower(), "true"),
            (
                "leader.imbalance.check.interval.seconds",
                _whole(self.leader_imbalance_check_interval_s),
                "300",
            ),
            (
                "leader.imbalance.per.broker.percentage",
                str(self.leader_imbalance_per_broker_percentage),
                "10",
            ),
        ):
            if value != default:
                configs[name] = value
        # The same for __transaction_state (0.11+), with its min.isr as the quickstart sets it.
        for key, wanted, kafka_default in (
            ("transaction.state.log.replication.factor", min(3, brokers), 3),
            ("transaction.state.log.min.isr", min(2, brokers), 2),
        ):
            if wanted != kafka_default and broker_config_key(key, self.kafka_version) is not None:
                configs[key] = str(wanted)
        # Kafka's default went from 6000 to 18000 in 2.5 (KIP-537); zkbroker uses 18000.
        # broker.session.timeout.ms exists from 2.8 (KIP-631; internal in 2.8).
        for key, value in (
            ("zookeeper.session.timeout.ms", str(round(self.zk_session_timeout_s * 1000))),
            ("broker.session.timeout.ms", str(self.broker_session_timeout_ms)),
        ):
            known = broker_config_key(key, self.kafka_version)
            if known is not None and known.default != value:
                configs[key] = value
        return configs

    def sets_key(self, key: str) -> bool:
        """Whether the user set `listeners` / `advertised.listeners` (`configured_keys`)."""
        if self.configured_keys is not None:
            return key in self.configured_keys
        defaults = {f.name: f.default for f in fields(self)}
        names: tuple[str, ...] = ("advertised_host", "advertised_listeners")
        if key == "listeners":
            names = ("host", "port", "listener_name", "extra_listeners")
        return any(getattr(self, n) != defaults[n] for n in names)

    def advertised_endpoints(
        self, broker_id: int, bound: dict[str, int]
    ) -> list[tuple[str, str, int]]:
        """(listener, host, port) a broker registers in /brokers/ids, in `listeners` order:
        `advertised_listeners` when given (only those), else every listener at
        `advertised_host` (or the first listener's public host) and its bound port."""
        if not self.advertised_listeners:
            return [
                (name, self.public_host if i == 0 else (self.advertised_host or host), bound[name])
                for i, (name, host, _) in enumerate(self.listeners)
            ]
        index = self.broker_ids.index(broker_id)
        given = {name: (host, port) for name, host, port in self.advertised_listeners}
        return [
            (name, given[name][0], bound[name] if given[name][1] == 0 else given[name][1] + index)
            for name, _, _ in self.listeners
            if name in given
        ]

    def port_of(self, broker_id: int, listener: str | None = None) -> int:
        """The port `broker_id` binds for a listener (the first one by default)."""
        first = self.port
        if listener is not None and listener != self.listener_name:
            first = next(p for n, _, p in self.extra_listeners if n == listener)
        if first == 0:
            return 0
        return first + self.broker_ids.index(broker_id)


# Kafka configs that have their own zkbroker option (or that zkbroker sets itself).
OWN_OPTIONS = {
    "broker.id": "--broker-ids",
    "listeners": "--listener (or --host/--port)",
    "advertised.listeners": "--advertised-listener (or --advertised-host)",
    "zookeeper.connect": "--zookeeper",
    "broker.rack": "--racks",
    "num.partitions": "--num-partitions",
    "default.replication.factor": "--default-replication-factor",
    "auto.create.topics.enable": "--auto-create-topics",
    "delete.topic.enable": "--delete-topic-enable",
    "socket.request.max.bytes": "--max-request-bytes",
    "zookeeper.session.timeout.ms": "--zookeeper-session-timeout-ms",
    "broker.session.timeout.ms": "--broker-session-timeout-ms",
    "auto.leader.rebalance.enable": "--auto-leader-rebalance",
    "leader.imbalance.check.interval.seconds": "--leader-imbalance-check-interval-s",
    "leader.imbalance.per.broker.percentage": "--leader-imbalance-per-broker-percentage",
}


def _host_text(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _check_listeners(settings: Settings) -> None:
    """Kafka's listener checks (KafkaConfig / CoreUtils.listenerListToEndPoints): distinct
    names, ports that fit, an inter-broker listener that exists; plus zkbroker's own: the port
    ranges of two listeners (port + broker index) must not overlap."""
    names = [n for n, _, _ in settings.listeners]
    for name in names:
        if not name or not name.replace("_", "").isalnum() or name != name.upper():
            raise ValueError(
                f"invalid listener name {name!r} (Kafka's listener names are upper case)"
            )
    if len(set(names)) != len(names):
        raise ValueError(
            "requirement failed: Each listener must have a different name, listeners: "
            + ",".join(f"{n}://{h}:{p}" for n, h, p in settings.listeners)
        )
    count = len(settings.broker_ids)
    ranges: list[tuple[str, int, int]] = []
    for name, _, port in settings.extra_listeners:
        if not 0 <= port <= 65535 or (port and port + count - 1 > 65535):
            raise ValueError(f"listener {name}: port {port} leaves no room for {count} brokers")
    for name, _, port in settings.listeners:
        if port:
            for other, low, high in ranges:
                if low <= port + count - 1 and port <= high:
                    raise ValueError(
                        f"listeners {other} and {name} would share ports (broker i listens on "
                        "port + i): give them ports at least the number of brokers apart"
                    )
            ranges.append((name, port, port + count - 1))
    known = settings.known_broker_configs
    inter = known.get("inter.broker.listener.name")
    if inter is None and "security.inter.broker.protocol" in known:
        inter = settings.inter_broker_listener  # the listener named after the protocol
    if inter is not None and inter.strip().upper() not in names:
        raise ValueError(
            "requirement failed: inter.broker.listener.name must be a listener name defined in "
            "advertised.listeners. The valid options based on currently configured listeners "
            f"are {','.join(names)}"
        )
    if settings.advertised_listeners:
        _check_advertised_listeners(settings, names, inter)


def _check_advertised_listeners(settings: Settings, names: list[str], inter: str | None) -> None:
    """KafkaConfig.validateValues on advertised.listeners (Kafka 3.9's messages)."""
    if settings.advertised_host is not None:
        raise ValueError("give --advertised-host or --advertised-listener, not both")
    advertised = [n for n, _, _ in settings.advertised_listeners]
    if len(set(advertised)) != len(advertised):
        raise ValueError(
            "requirement failed: Each listener must have a different name, listeners: "
            + ",".join(f"{n}://{h}:{p}" for n, h, p in settings.advertised_listeners)
        )
    for name, host, port in settings.advertised_listeners:
        if host == "0.0.0.0":
            raise ValueError(
                "requirement failed: advertised.listeners cannot use the nonroutable "
                "meta-address 0.0.0.0. Use a routable IP address."
            )
        if not 0 <= port <= 65535:
            raise ValueError(f"advertised listener {name}: invalid port {port}")
    inter_name = inter.strip().upper() if inter is not None else settings.listener_name
    if inter_name not in advertised:
        raise ValueError(
            "requirement failed: inter.broker.listener.name must be a listener name defined in "
            "advertised.listeners. The valid options based on currently configured listeners "
            f"are {','.join(advertised)}"
        )
    if not set(advertised) <= set(names):
        raise ValueError(
            "requirement failed: advertised.listeners listener names must be equal to or a "
            "subset of the ones defined in listeners. Found "
            f"{','.join(advertised)}. The valid options based on the current configuration "
            f"are {','.join(names)}"
        )


def _whole(seconds: float) -> str:
    """A LONG config's text; sub-second intervals (for tests) show as their ceiling."""
    return str(max(1, int(-(-seconds // 1))))


def _known(name: str, release: Release) -> bool:
    if name in AUTHORIZER_ONLY_CONFIGS:
        return True
    from zkbroker.broker.rules.broker_config_catalog import broker_config_key

    return broker_config_key(name, release) is not None


def unused_configs_message(names: Iterable[str], release: Release) -> list[str]:
    """Kafka's AbstractConfig.logUnused warning for supplied keys it does not know: one line
    per key before 3.2, one line naming them all (a Java Set's text) since KAFKA-13689."""
    keys = sorted(set(names))
    if not keys:
        return []
    if release >= (3, 2):
        return [f"These configurations '[{', '.join(keys)}]' were supplied but are not used yet."]
    return [f"The configuration '{k}' was supplied but isn't a known config." for k in keys]


def check_broker_config(name: str, value: str, release: Release) -> None:
    """One `--broker-config` entry's checks (ValueError with the reason), for other sources
    of entries such as `--broker-config-file`."""
    _check_broker_configs(((name, value),), release)


def _check_broker_configs(configs: tuple[tuple[str, str], ...], release: Release) -> None:
    """Refuse what a Kafka broker would refuse to start with (an invalid value of a key it
    knows), and keys with a field of their own; keys the release does not know are kept, as
    Kafka keeps them, and warned about by the command."""
    for name, value in configs:
        if name in AUTHORIZER_ONLY_CONFIGS:  # AclAuthorizer's own keys, not KafkaConfig's
            if name == "super.users":
                parse_super_users(value)  # AclAuthorizer.configure fails on a bad principal
            continue
        from zkbroker.broker.rules.broker_config_catalog import broker_config_key
        from zkbroker.broker.rules.config_def import InvalidConfig, validate_value

        key = broker_config_key(name, release)
        if key is None:
            continue  # unknown to the release: used by nothing (unknown_broker_configs)
        if name in OWN_OPTIONS:
            raise ValueError(f"--broker-config {name}: use {OWN_OPTIONS[name]} instead")
        try:
            validate_value(key, value)
        except InvalidConfig as e:
            raise ValueError(f"--broker-config: {e.message}") from None


def _check_admission_configs(configs: dict[str, str], max_request_bytes: int) -> None:
    """KafkaConfig.validateValues' rules on the admission configs
    (zkbroker.broker.server.admission)."""
    queued = int(configs.get("queued.max.request.bytes", str(max_request_bytes)).strip())
    if 0 < queued < max_request_bytes:
        raise ValueError(
            "requirement failed: queued.max.request.bytes must be larger or equal to "
            "socket.request.max.bytes"
        )
    idle = int(configs.get("connections.max.idle.ms", "600000").strip())
    delay = int(configs.get("connection.failed.authentication.delay.ms", "100").strip())
    if idle >= 0 and delay >= idle:
        raise ValueError(
            f"requirement failed: connection.failed.authentication.delay.ms={delay} should "
            f"always be less than connections.max.idle.ms={idle} to prevent failed "
            "authentication responses from timing out"
        )
    overrides = configs.get("max.connections.per.ip.overrides", "").strip()
    for entry in overrides.split(",") if overrides else ():
        host, _, count = entry.strip().rpartition(":")
        if not host.strip() or not count.strip().lstrip("-").isdigit():
            raise ValueError(
                "Error parsing configuration property 'max.connections.per.ip.overrides': "
                f"{entry.strip()!r} is not host:count"
            )
    if configs.get("max.connections.per.ip", "").strip() == "0" and not overrides:
        raise ValueError(
            "requirement failed: max.connections.per.ip can be set to zero only if "
            "max.connections.per.ip.overrides property is set."
        )


def parse_address(text: str) -> tuple[str, int]:
    """`host:port` (or `[v6]:port`) of a StatsD server; ValueError when it is not one."""
    host, sep, port_text = text.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not sep or not host or not 0 < port <= 65535:
        raise ValueError(f"--statsd expects host:port, got {text!r}")
    return host, port


def _check_log_dir(log_dir: str) -> None:
    """Refuse a log dir that cannot be one, without creating it: Kafka's LogManager refuses
    a path that is not a readable directory at start ("... is not a readable log
    directory."), and one whose nearest existing ancestor is not a writable directory
    cannot be made."""
    path = Path(os.path.abspath(log_dir))
    if path.exists():
        if not path.is_dir() or not os.access(path, os.R_OK | os.W_OK | os.X_OK):
            raise ValueError(f"--log-dir: {path} is not a readable log directory.")
        return
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(
            f"--log-dir: {path} cannot be created ({parent} is not a writable directory)"
        )
