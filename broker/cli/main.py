"""The `zkbroker` command line (README, "The `zkbroker` command").

`zkbroker [run]` starts a cluster, prints its bootstrap servers and ZooKeeper connect string on
stdout (`key=value` lines; logs go to stderr) and on SIGINT/SIGTERM shuts down gracefully. Exit
codes: 0 after a clean shutdown, 2 for bad options (argparse's format), 1 when the cluster
cannot start. `broker stop|start|list`, `fault ...` (`zkbroker.broker.cli.fault_command`) and
`user add` (`zkbroker.broker.cli.user_command`) start nothing: one short-lived ZooKeeper
session each. `report` analyses captures on Spark (`zkbroker.broker.report`, the `report` extra).

Not here: Kafka's keys in `--broker-config-file` (`zkbroker.broker.cli.config_options`), what a
cluster does (`zkbroker.broker.engine.engine`), how a process applies a broker's desired state
(`zkbroker.broker.engine.broker_control`).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from zkbroker.broker.cli.arguments import (
    int_at_least,
    int_list,
    kafka_release,
    key_value,
    parsed_by,
    positive_seconds,
)
from zkbroker.broker.cli.config_options import (
    CONFIG_KEYS,
    KAFKA_OPTS_ENV,
    Entry,
    apply_config_keys,
    jaas_config_path,
    parse_listener,
    zookeeper_login,
)
from zkbroker.broker.cli.fault_command import add_fault_parser, run_fault_command
from zkbroker.broker.cli.properties_file import read_broker_config_file
from zkbroker.broker.cli.user_command import add_user_parser, run_user_command
from zkbroker.broker.engine.broker_control import BrokerStatus, list_brokers, request_broker_state
from zkbroker.broker.engine.engine import ClusterEngine
from zkbroker.broker.log import configure_logging, get_logger
from zkbroker.broker.protocol.releases import DEFAULT_RELEASE, RELEASES, release_name
from zkbroker.broker.report.options import add_report_arguments
from zkbroker.broker.rules.broker_config_catalog import broker_config_key
from zkbroker.broker.security.listener_config import protocol_map
from zkbroker.broker.settings import (
    DEFAULT_MAX_REQUEST_BYTES,
    Settings,
    check_broker_config,
    unused_configs_message,
)
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper, ZooKeeperError
from zkbroker.zk_layout import BrokerIdInUseError, BrokerState, ZkConnectionError, ZkStore
from zkbroker.zk_layout.store.client import ZkAuth

#: Digest credentials (user:password) of zkbroker's ZooKeeper sessions, kept off command lines.
ZOOKEEPER_DIGEST_ENV = "ZKBROKER_ZOOKEEPER_DIGEST"
#: How they log in (digest or sasl), for the commands that have no --zookeeper-auth.
ZOOKEEPER_AUTH_ENV = "ZKBROKER_ZOOKEEPER_AUTH"

#: What --authorizer sets (--broker-config entries come after it and win).
AUTHORIZER_CONFIG = ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")

# How long `zkbroker broker|fault ...` waits for a ZooKeeper connection at most.
_ZK_COMMAND_CONNECT_TIMEOUT_S = 10.0


_listener = parsed_by(parse_listener)
LOG_LEVELS = ("debug", "info", "warning", "error")
#: The attribute of a parsed namespace naming the parser of its subcommand, whose usage an
#: error found after parsing is printed with.
_COMMAND_PARSER = "command_parser"


_broker_id = int_at_least(0, "a broker id (an integer >= 0)")


def _add_broker_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    broker = sub.add_parser(
        "broker", help="stop, start or list brokers of a running cluster (through ZooKeeper)"
    )
    actions = broker.add_subparsers(dest="broker_command", required=True, metavar="ACTION")
    zk_help = "host:port[/chroot] of the cluster's ZooKeeper"
    for action, verb in (("stop", "stop"), ("start", "start again")):
        p = actions.add_parser(
            action, help=f"{verb} a broker (the zkbroker process running it applies this)"
        )
        p.set_defaults(**{_COMMAND_PARSER: p})
        p.add_argument("broker_id", type=_broker_id, metavar="ID", help="the broker id")
        p.add_argument("--zookeeper", required=True, help=zk_help)
        p.add_argument(
            "--timeout",
            type=positive_seconds,
            default=30.0,
            help="seconds to wait until the broker is stopped/registered again (30)",
        )
    listing = actions.add_parser(
        "list", help="broker ids with their registration and desired state"
    )
    listing.set_defaults(**{_COMMAND_PARSER: listing})
    listing.add_argument("--zookeeper", required=True, help=zk_help)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zkbroker",
        description="A Kafka mock broker and controller of a ZooKeeper-mode cluster, in Python: "
        "every API of a Kafka 3.9 ZooKeeper-mode broker (admin APIs, the data plane: produce, "
        "fetch, offsets; consumer groups, transactions, security: TLS, SASL, ACLs, quotas, "
        "delegation tokens), for releases 0.10.0 to 3.9, with the cluster's state in a real "
        "ZooKeeper in Kafka's own znode layout. Without a command: run.",
    )
    sub = parser.add_subparsers(dest="command")
    # Options that a --broker-config-file key can also set default to None ("not given"):
    # a file's value applies unless the command line gives another (settings_from_args).
    run = sub.add_parser(
        "run",
        help="start a cluster (the default command)",
        description="Start a cluster of Kafka brokers on a ZooKeeper and run until SIGINT/SIGTERM.",
    )
    run.set_defaults(**{_COMMAND_PARSER: run})
    ids = run.add_mutually_exclusive_group()
    ids.add_argument("--brokers", type=int, help="number of brokers, ids 0..N-1 (3)")
    ids.add_argument("--broker-ids", type=int_list, help="explicit broker ids, e.g. 1,2,3")
    run.add_argument("--host", help="address to listen on (127.0.0.1)")
    run.add_argument(
        "--advertised-host", help="host written to ZooKeeper and answered in Metadata (--host)"
    )
    run.add_argument("--port", type=int, help="port of the first broker; 0 = any free ports (9092)")
    run.add_argument(
        "--listener",
        type=_listener,
        action="append",
        metavar="NAME://HOST:PORT",
        help="a listener as Kafka's `listeners` names it (repeatable; instead of --host/--port), "
        "e.g. SASL_SSL://127.0.0.1:9092; broker i listens on PORT + i; its protocol comes from "
        "listener.security.protocol.map (the name itself by default); the first is the one "
        "bootstrap_servers prints",
    )
    run.add_argument(
        "--advertised-listener",
        type=_listener,
        action="append",
        metavar="NAME://HOST:PORT",
        help="Kafka's advertised.listeners, one listener each (repeatable): what /brokers/ids "
        "and Metadata give for it; broker i advertises PORT + i, or its bound port for 0; "
        "listeners not named are not advertised",
    )
    run.add_argument("--racks", help="comma-separated rack per broker, e.g. r1,r1,r2")
    run.add_argument(
        "--zookeeper",
        help="host:port[/chroot] of a running ZooKeeper; without it an embedded one is started",
    )
    run.add_argument(
        "--zookeeper-set-acl",
        action="store_true",
        help="Kafka's zookeeper.set.acl: znodes zkbroker creates are writable only by its "
        "ZooKeeper identity, credentials and tokens not world-readable (needs "
        "--zookeeper-digest)",
    )
    run.add_argument(
        "--zookeeper-digest",
        metavar="USER:PASSWORD",
        default=os.environ.get(ZOOKEEPER_DIGEST_ENV),
        help="digest credentials of zkbroker's ZooKeeper sessions (default: "
        f"${ZOOKEEPER_DIGEST_ENV}, which the broker/fault/user commands also use)",
    )
    run.add_argument(
        "--zookeeper-auth",
        choices=("digest", "sasl"),
        help="how --zookeeper-digest's credentials log in: digest (addauth; identity "
        "digest:USER:<hash>) or sasl (SASL DIGEST-MD5, checked by the server; identity "
        f"sasl:USER; the embedded ZooKeeper gets that user); default: ${ZOOKEEPER_AUTH_ENV} "
        "or digest",
    )
    run.add_argument(
        "--kafka-version",
        type=kafka_release,
        default=DEFAULT_RELEASE,
        help="Kafka release to emulate: "
        + ", ".join(release_name(r) for r in RELEASES)
        + f", or one of their patch releases such as 2.8.2 ({release_name(DEFAULT_RELEASE)})",
    )
    run.add_argument(
        "--max-request-bytes",
        type=int,
        help=f"largest request accepted, socket.request.max.bytes ({DEFAULT_MAX_REQUEST_BYTES})",
    )
    run.add_argument(
        "--auto-create-topics",
        action=argparse.BooleanOptionalAction,
        help="create topics a Metadata request names (auto.create.topics.enable; on)",
    )
    run.add_argument(
        "--delete-topic-enable",
        action=argparse.BooleanOptionalAction,
        help="allow DeleteTopics (delete.topic.enable; on)",
    )
    run.add_argument("--num-partitions", type=int, help="default partitions (num.partitions; 1)")
    run.add_argument(
        "--default-replication-factor",
        type=int,
        help="default replication factor (default.replication.factor; 1)",
    )
    run.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        type=key_value,
        help="a static broker config, as a server.properties line; repeatable "
        "(shown as STATIC_BROKER_CONFIG by DescribeConfigs)",
    )
    run.add_argument(
        "--broker-config-file",
        metavar="PATH",
        help="a Kafka server.properties as it is (java.util.Properties syntax): its entries "
        "apply like --broker-config entries, which win over it; broker.id, listeners, "
        "zookeeper.connect, log.dirs, ... set what their options set (a different value given "
        "on the command line is refused); keys the release does not know are warned about",
    )
    run.add_argument(
        "--jaas-config",
        metavar="FILE",
        help="Kafka's JAAS file (the JVM's java.security.auth.login.config; default: "
        f"-Djava.security.auth.login.config=FILE in ${KAFKA_OPTS_ENV}): KafkaServer and "
        "<listener>.KafkaServer sections give PLAIN users (PlainLoginModule user_NAME) and the "
        "brokers' own login (username/password), Client the ZooKeeper SASL login",
    )
    run.add_argument(
        "--authorizer",
        action="store_true",
        help="turn on Kafka's ZooKeeper ACL authorizer (authorizer.class.name="
        "kafka.security.authorizer.AclAuthorizer); super.users and "
        "allow.everyone.if.no.acl.found through --broker-config",
    )
    run.add_argument(
        "--zookeeper-session-timeout-ms",
        type=int,
        help="each broker's ZooKeeper session timeout (zookeeper.session.timeout.ms; 18000)",
    )
    run.add_argument(
        "--zookeeper-max-buffer-bytes",
        type=int,
        default=0xFFFFF,
        help="the ZooKeeper servers' jute.maxbuffer: larger writes are refused before they are "
        "sent (1048575)",
    )
    run.add_argument(
        "--broker-session-timeout-ms",
        type=int,
        help="how long a broker registered over the protocol (KIP-631) stays without a "
        "heartbeat (broker.session.timeout.ms; 9000)",
    )
    run.add_argument(
        "--replica-catchup-ms",
        type=int,
        help="time a new or returning replica takes to join the ISR; 0 = at once (default: "
        "300 ms plus the partition's bytes at 100 MiB/s)",
    )
    run.add_argument(
        "--auto-leader-rebalance",
        action=argparse.BooleanOptionalAction,
        help="move leadership back to preferred replicas (auto.leader.rebalance.enable; on)",
    )
    run.add_argument(
        "--leader-imbalance-check-interval-s",
        type=float,
        help="seconds between rebalance checks (leader.imbalance.check.interval.seconds; 300)",
    )
    run.add_argument(
        "--leader-imbalance-per-broker-percentage",
        type=int,
        help="imbalance above which a broker's leaders are moved back "
        "(leader.imbalance.per.broker.percentage; 10)",
    )
    run.add_argument(
        "--log-dir",
        metavar="DIR",
        help="keep partition logs on disk in Kafka's layout (<topic>-<partition>/*.log), across "
        "restarts and shared by every zkbroker process given the same directory (log.dirs; "
        "default: in memory)",
    )
    run.add_argument(
        "--capture",
        metavar="FILE.jsonl",
        help="append one JSON line per request answered (request capture) to this file",
    )
    run.add_argument(
        "--statsd",
        metavar="HOST:PORT",
        help="send StatsD metrics (UDP) to this address: request counts and latencies, "
        "connections, topics, partitions, controller epoch, injected faults",
    )
    run.add_argument(
        "--statsd-interval-s",
        type=positive_seconds,
        default=10.0,
        help="seconds between StatsD gauges (10)",
    )
    run.add_argument(
        "--log-level",
        type=str.lower,
        choices=LOG_LEVELS,
        default="info",
        help="debug, info, warning, error (info)",
    )
    run.add_argument("--log-format", choices=("console", "json"), default="console")
    _add_broker_parser(sub)
    add_fault_parser(sub)
    add_user_parser(sub)
    # Capture analytics on Spark (zkbroker.broker.report; PySpark is imported only when it runs).
    report = sub.add_parser("report", help="analyse request captures on Spark (zkbroker[report])")
    report.set_defaults(**{_COMMAND_PARSER: report})
    add_report_arguments(report)
    return parser


def _config_entries(args: argparse.Namespace) -> list[Entry]:
    """`--broker-config-file`'s entries (each checked as a `--broker-config` entry, the error
    naming the file and line), then `--authorizer`'s, then `--broker-config`'s: later wins."""
    entries: list[Entry] = []
    path = args.broker_config_file
    if path is not None:
        for name, value, line in read_broker_config_file(path):
            entry = Entry(name, value, f"--broker-config-file {path}, line {line}")
            if name in CONFIG_KEYS:  # checked where they are applied (config_options)
                entries.append(entry)
                continue
            try:
                check_broker_config(name, value, args.kafka_version)
            except ValueError as e:
                reason = str(e).removeprefix(f"--broker-config {name}: ")
                raise entry.refuse(reason.removeprefix("--broker-config: ")) from None
            entries.append(entry)
    if args.authorizer:
        entries.append(Entry(*AUTHORIZER_CONFIG, "--authorizer"))
    entries.extend(Entry(name, value, "--broker-config") for name, value in args.broker_config)
    return entries


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The Settings of `zkbroker run`: its options, with what the config file's (and
    `--broker-config`'s) option keys set where the command line says nothing; an option not
    given at all keeps Settings' default. ValueError with a one-line reason."""
    entries = _config_entries(args)
    # What the user wrote, before the file's keys fill options: a legacy `port` or
    # `advertised.host.name` line is its own key, not `listeners` / `advertised.listeners`.
    keys = {e.key for e in entries}
    configured = {
        key
        for key, typed in (
            ("listeners", args.listener or args.host is not None or args.port is not None),
            ("advertised.listeners", args.advertised_listener or args.advertised_host),
        )
        if typed or key in keys
    }
    args, broker_configs = apply_config_keys(args, entries, args.kafka_version)
    options: dict[str, Any] = {"configured_keys": frozenset(configured)}

    def given(field: str, value: Any) -> None:
        if value is not None:
            options[field] = value

    if args.broker_ids:
        options["broker_ids"] = tuple(args.broker_ids)
    elif args.brokers is not None:
        options["broker_ids"] = tuple(range(args.brokers))
    if args.racks:
        options["racks"] = tuple(r.strip() or None for r in args.racks.split(","))
    if args.listener:
        (name, host, port), *others = args.listener
        options.update(listener_name=name, host=host, port=port, extra_listeners=tuple(others))
    else:
        given("host", args.host)
        given("port", args.port)
    given("advertised_host", args.advertised_host)
    options["advertised_listeners"] = tuple(args.advertised_listener or ())
    for field in (
        "zookeeper",
        "max_request_bytes",
        "auto_create_topics",
        "delete_topic_enable",
        "num_partitions",
        "default_replication_factor",
        "replica_catchup_ms",
        "broker_session_timeout_ms",
        "auto_leader_rebalance",
        "leader_imbalance_check_interval_s",
        "leader_imbalance_per_broker_percentage",
        "zookeeper_max_buffer_bytes",
        "statsd",
        "statsd_interval_s",
        "log_dir",
    ):
        given(field, getattr(args, field))
    if args.zookeeper_session_timeout_ms is not None:
        options["zk_session_timeout_s"] = args.zookeeper_session_timeout_ms / 1000
    _check_listener_names(args, broker_configs)
    jaas = jaas_config_path(args)
    digest, scheme = args.zookeeper_digest, args.zookeeper_auth
    login = zookeeper_login(jaas) if digest is None else None
    if login is not None:
        # Kafka's ZooKeeper client logs in with the JAAS file's Client section, over SASL.
        digest, scheme = ":".join(login), scheme or "sasl"
    return Settings(
        **options,
        kafka_version=args.kafka_version,
        log_level=args.log_level,
        log_format=args.log_format,
        broker_configs=broker_configs,
        zookeeper_set_acl=args.zookeeper_set_acl,
        zookeeper_digest=digest,
        zookeeper_auth_scheme=scheme or os.environ.get(ZOOKEEPER_AUTH_ENV, "digest"),
        capture_path=args.capture,
        jaas_config=jaas,
    )


def _check_listener_names(
    args: argparse.Namespace, broker_configs: tuple[tuple[str, str], ...]
) -> None:
    """Kafka refuses a listener its listener.security.protocol.map does not name (the default
    map names the four protocols). `Settings` maps other names to PLAINTEXT for the Python
    API's convenience; the command takes Kafka's configuration, so it refuses as Kafka does."""
    map_key = "listener.security.protocol.map"
    configs = {n: v for n, v in broker_configs if n == map_key}
    if broker_config_key(map_key, args.kafka_version) is None:
        configs = {}  # before 0.10.2 (KIP-103) listener names were protocol names
    protocols = protocol_map(configs)
    for name, _, _ in [*(args.listener or ()), *(args.advertised_listener or ())]:
        if name not in protocols:
            # Kafka's text (EndPoint.createEndPoint / CoreUtils.listenerListToEndPoints).
            raise ValueError(f"No security protocol defined for listener {name}")


# The cyclic collector's defaults suit short scripts. A broker allocates hundreds of
# thousands of short-lived, acyclic objects per large request (decoded records, answer
# entries), and each generation-2 pass walks every long-lived object (the metadata image),
# holding the one loop every broker shares. Measured with a 46,000-partition Metadata
# answer: 430 ms with the defaults, 126 ms without the collector.
SERVER_GC_THRESHOLDS = (50_000, 50, 100)


def tune_collector_for_a_server() -> None:
    """Done by `zkbroker run` only, which owns its process; `Cluster` inside a user's process
    leaves their collector alone. What start-up built (the codec, the image) is frozen out of
    the collector's passes; young generations are collected less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVER_GC_THRESHOLDS)


async def run_until_signalled(
    settings: Settings, *, early_zookeeper: EmbeddedZooKeeper | None = None
) -> int:
    log = get_logger(__name__)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    cluster = ClusterEngine(settings, embedded_zookeeper=early_zookeeper)
    try:
        await cluster.start()
    except (ZooKeeperError, BrokerIdInUseError, ZkConnectionError, OSError) as e:
        log.error("cluster.start_failed", reason=str(e))
        print(f"zkbroker: {e}", file=sys.stderr)
        return 1
    print(f"bootstrap_servers={cluster.bootstrap_servers}", flush=True)
    print(f"zookeeper={cluster.zookeeper_connect}", flush=True)
    tune_collector_for_a_server()
    try:
        await stop.wait()
    finally:
        log.info("zkbroker.stopping")
        await cluster.stop()
    return 0


def _status_line(status: BrokerStatus) -> str:
    desired = "-" if status.desired is None else str(status.desired)
    return (
        f"broker {status.broker_id}: registered={'yes' if status.registered else 'no'} "
        f"desired={desired} zkbroker={'yes' if status.owned else 'no'}"
    )


async def run_broker_command(store: ZkStore, args: argparse.Namespace) -> int:
    """`zkbroker broker stop|start|list` on `store`; returns the exit code."""
    if args.broker_command == "list":
        for status in await list_brokers(store):
            print(_status_line(status), flush=True)
        return 0
    broker_id: int = args.broker_id
    stopping = args.broker_command == "stop"
    state = BrokerState.STOPPED if stopping else BrokerState.RUNNING
    done = "stopped" if stopping else "started"
    if await request_broker_state(store, broker_id, state, args.timeout):
        print(f"broker {broker_id} {done}", flush=True)
        return 0
    print(
        f"zkbroker: broker {broker_id} was not {done} within {args.timeout:g}s: no zkbroker "
        f"process applied the request (is a zkbroker process running broker {broker_id} "
        f"on {args.zookeeper}?); /zkbroker/brokers/{broker_id} keeps the desired state "
        f"{state.value!r}",
        file=sys.stderr,
    )
    return 1


async def run_zookeeper_command(
    args: argparse.Namespace,
    command: Callable[[ZkStore, argparse.Namespace], Awaitable[int]],
) -> int:
    """Run `zkbroker broker|fault ...` on one short-lived ZooKeeper session, closed before
    returning; exit code 1 when ZooKeeper cannot be reached."""
    timeout = min(getattr(args, "timeout", 30.0), _ZK_COMMAND_CONNECT_TIMEOUT_S)
    try:
        # Kafka's tools run secured (secure ACLs on what they create) when they have
        # credentials; zkbroker's take them from the environment.
        digest = os.environ.get(ZOOKEEPER_DIGEST_ENV)
        scheme = os.environ.get(ZOOKEEPER_AUTH_ENV, "digest")
        auth = None if digest is None else ZkAuth.parse(digest, scheme=scheme)
        store = await ZkStore.connect(args.zookeeper, timeout=timeout, auth=auth)
    except (ZkConnectionError, ValueError) as e:
        print(f"zkbroker: {e}", file=sys.stderr)
        return 1
    try:
        return await command(store, args)
    except ZkConnectionError as e:
        print(f"zkbroker: {e}", file=sys.stderr)
        return 1
    finally:
        await store.close()


def main(
    argv: Sequence[str] | None = None, *, early_zookeeper: EmbeddedZooKeeper | None = None
) -> int:
    """The command; `early_zookeeper` is the embedded ZooKeeper `zkbroker.broker.cli.launch`
    began to start for a `run` (the cluster takes it over or stops it)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0].startswith("-") and args_list[0] not in ("-h", "--help")):
        args_list.insert(0, "run")
    parser = build_parser()
    args = parser.parse_args(args_list)
    if args.command is None:
        parser.print_help()
        return 2
    # Errors found after parsing: argparse's own format with the subcommand's usage.
    command_parser: argparse.ArgumentParser = getattr(args, _COMMAND_PARSER, parser)
    if args.command == "report":
        from zkbroker.broker.report.job import run_cli
        from zkbroker.broker.report.options import options_from_args

        try:
            report_options = options_from_args(args)
        except ValueError as e:
            command_parser.error(_one_line(e))
        return run_cli(report_options)
    if args.command in ("broker", "fault", "user"):
        # Only warnings (kazoo's connection trouble) on stderr; stdout carries the answer.
        configure_logging("warning", "console")
        command = {
            "broker": run_broker_command,
            "fault": run_fault_command,
            "user": run_user_command,
        }[args.command]
        return asyncio.run(run_zookeeper_command(args, command))
    try:
        settings = settings_from_args(args)
    except ValueError as e:
        command_parser.error(_one_line(e))
    configure_logging(settings.log_level, settings.log_format)  # type: ignore[arg-type]
    log = get_logger(__name__)
    for message in unused_configs_message(settings.unknown_broker_configs, settings.kafka_version):
        # AbstractConfig.logUnused: Kafka keeps such keys (DescribeConfigs lists them) and starts.
        log.warning("config.unused", message=message)
    return asyncio.run(run_until_signalled(settings, early_zookeeper=early_zookeeper))


def _one_line(error: Exception) -> str:
    """An error's text on one line (argparse prints it after `prog: error: `)."""
    return " ".join(str(error).split())
