"""The `zkbroker` command line (README, "The `zkbroker` command").

`zkbroker [run]` starts a cluster, prints its bootstrap servers and ZooKeeper connect string on
stdout (`key=value` lines; logs go to stderr) and on SIGINT/SIGTERM shuts down gracefully. Exit
codes: 0 after a clean shutdown, 2 for bad options (argparse's format), 1 when the cluster
cannot start. `broker stop|start|list`, `fault ...` (`zkbroker.broker.cli.fault_command`) and
`user add` (`zkbroker.broker.cli.user_command`) start nothing: one short-lived ZooKeeper
session each. `report` analyses captures on Spark (`zkbroker.broker.report`, the `report` extra).

A `run` checks everything before it starts anything: parsing imports nothing of the server
(`zkbroker.broker.cli.run_options`), then `settings_from_args` reads the config and JAAS files
and builds the `Settings`, whose checks import the config catalog and the security settings.
Only then may the embedded ZooKeeper start (`start_zookeeper`, given by
`zkbroker.broker.cli.launch`), and the engine is imported while its JVM boots. A refused command
line exits 2 having started no JVM, opened no socket and made no directory. The other
subcommands' modules are imported only when one of them runs (`build_parser(command)`).

Not here: Kafka's keys in `--broker-config-file` (`zkbroker.broker.cli.config_options`), what a
cluster does (`zkbroker.broker.engine.engine`), how a process applies a broker's desired state
(`zkbroker.broker.engine.broker_control`).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from zkbroker.broker.cli.arguments import int_at_least, positive_seconds
from zkbroker.broker.cli.config_options import (
    CONFIG_KEYS,
    Entry,
    apply_config_keys,
    jaas_config_path,
    zookeeper_login,
)
from zkbroker.broker.cli.properties_file import read_broker_config_file
from zkbroker.broker.cli.run_options import (
    DESCRIPTION,
    EPILOG,
    RUN_HELP,
    ZOOKEEPER_AUTH_ENV,
    ZOOKEEPER_DIGEST_ENV,
    add_run_arguments,
)

if TYPE_CHECKING:
    from zkbroker.broker.engine.broker_control import BrokerStatus
    from zkbroker.broker.settings import Settings
    from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper
    from zkbroker.zk_layout import ZkStore

#: What --authorizer sets (--broker-config entries come after it and win).
AUTHORIZER_CONFIG = ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")

# How long `zkbroker broker|fault ...` waits for a ZooKeeper connection at most.
_ZK_COMMAND_CONNECT_TIMEOUT_S = 10.0

#: The attribute of a parsed namespace naming the parser of its subcommand, whose usage an
#: error found after parsing is printed with.
_COMMAND_PARSER = "command_parser"

#: The subcommands, as `zkbroker --help` lists them.
COMMANDS = {
    "run": RUN_HELP,
    "broker": "stop, start or list brokers of a running cluster (through ZooKeeper)",
    "fault": "inject errors, latency, drops, blackholes or replication faults (through ZooKeeper)",
    "user": "add SCRAM users in ZooKeeper (as kafka-configs did)",
    "report": "analyse request captures on Spark (zkbroker[report])",
}

_broker_id = int_at_least(0, "a broker id (an integer >= 0)")
StartZooKeeper = Callable[["Settings"], "EmbeddedZooKeeper | None"]


def _run_arguments(run: argparse.ArgumentParser) -> None:
    run.set_defaults(**{_COMMAND_PARSER: run})
    add_run_arguments(run)


def _broker_arguments(broker: argparse.ArgumentParser) -> None:
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


def _fault_arguments(fault: argparse.ArgumentParser) -> None:
    from zkbroker.broker.cli.fault_command import add_fault_arguments

    add_fault_arguments(fault)


def _user_arguments(user: argparse.ArgumentParser) -> None:
    from zkbroker.broker.cli.user_command import add_user_arguments

    add_user_arguments(user)


def _report_arguments(report: argparse.ArgumentParser) -> None:
    # Capture analytics on Spark (zkbroker.broker.report; PySpark is imported only when it runs).
    from zkbroker.broker.report.options import add_report_arguments

    report.set_defaults(**{_COMMAND_PARSER: report})
    add_report_arguments(report)


_ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "run": _run_arguments,
    "broker": _broker_arguments,
    "fault": _fault_arguments,
    "user": _user_arguments,
    "report": _report_arguments,
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command's parser, every subcommand built; with `command`, only that one gets its
    arguments (the others are listed by `zkbroker --help` but left empty, so their modules
    are not imported to parse this one)."""
    parser = argparse.ArgumentParser(
        prog="zkbroker",
        description="A Kafka mock broker and controller of a ZooKeeper-mode cluster, in Python: "
        "every API of a Kafka 3.9 ZooKeeper-mode broker (admin APIs, the data plane: produce, "
        "fetch, offsets; consumer groups, transactions, security: TLS, SASL, ACLs, quotas, "
        "delegation tokens), for releases 0.10.0 to 3.9, with the cluster's state in a real "
        "ZooKeeper in Kafka's own znode layout. Without a command: run.",
    )
    sub = parser.add_subparsers(dest="command")
    for name, help_text in COMMANDS.items():
        if name == "run":
            subparser = sub.add_parser(
                name,
                help=help_text,
                description=DESCRIPTION,
                epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter,
            )
        else:
            subparser = sub.add_parser(name, help=help_text)
        if command is None or command == name:
            _ARGUMENTS[name](subparser)
    return parser


def _config_entries(args: argparse.Namespace) -> list[Entry]:
    """`--broker-config-file`'s entries (each checked as a `--broker-config` entry, the error
    naming the file and line), then `--authorizer`'s, then `--broker-config`'s: later wins."""
    entries: list[Entry] = []
    path = args.broker_config_file
    if path is not None:
        read = read_broker_config_file(path)
        from zkbroker.broker.settings import check_broker_config

        for name, value, line in read:
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
    given at all keeps Settings' default. ValueError with a one-line reason. Reads files (the
    config file, the JAAS file, TLS key stores) and creates nothing."""
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
    options = _given_options(args)
    _check_listener_names(args, broker_configs)
    jaas = jaas_config_path(args)
    digest, scheme = args.zookeeper_digest, args.zookeeper_auth
    login = zookeeper_login(jaas) if digest is None else None
    if login is not None:
        # Kafka's ZooKeeper client logs in with the JAAS file's Client section, over SASL.
        digest, scheme = ":".join(login), scheme or "sasl"
    from zkbroker.broker.settings import Settings

    return Settings(
        **options,
        configured_keys=frozenset(configured),
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


#: Settings fields taken from the option of the same name when it is given.
_SAME_NAME_FIELDS = (
    "zookeeper",
    "max_request_bytes",
    "auto_create_topics",
    "delete_topic_enable",
    "num_partitions",
    "default_replication_factor",
    "broker_session_timeout_ms",
    "auto_leader_rebalance",
    "leader_imbalance_check_interval_s",
    "leader_imbalance_per_broker_percentage",
    "zookeeper_max_buffer_bytes",
    "statsd",
    "statsd_interval_s",
    "log_dir",
)


def _given_options(args: argparse.Namespace) -> dict[str, Any]:
    """The Settings fields the options (config keys applied) give; the rest keep defaults."""
    options: dict[str, Any] = {
        field: getattr(args, field)
        for field in _SAME_NAME_FIELDS
        if getattr(args, field) is not None
    }
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
        options.update(
            {f: getattr(args, f) for f in ("host", "port") if getattr(args, f) is not None}
        )
    if args.advertised_host is not None:
        options["advertised_host"] = args.advertised_host
    options["advertised_listeners"] = tuple(args.advertised_listener or ())
    if args.zookeeper_session_timeout_ms is not None:
        options["zk_session_timeout_s"] = args.zookeeper_session_timeout_ms / 1000
    return options


def _check_listener_names(
    args: argparse.Namespace, broker_configs: tuple[tuple[str, str], ...]
) -> None:
    """Kafka refuses a listener its listener.security.protocol.map does not name (the default
    map names the four protocols). `Settings` maps other names to PLAINTEXT for the Python
    API's convenience; the command takes Kafka's configuration, so it refuses as Kafka does."""
    names = [name for name, _, _ in [*(args.listener or ()), *(args.advertised_listener or ())]]
    if not names:
        return
    from zkbroker.broker.security.listener_config import protocol_map

    map_key = "listener.security.protocol.map"
    configs = {n: v for n, v in broker_configs if n == map_key}
    if configs:
        from zkbroker.broker.rules.broker_config_catalog import broker_config_key

        if broker_config_key(map_key, args.kafka_version) is None:
            configs = {}  # before 0.10.2 (KIP-103) listener names were protocol names
    protocols = protocol_map(configs)
    for name in names:
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
    """Start the cluster (the engine is imported here, while an early ZooKeeper's JVM boots),
    print its addresses, run until SIGINT/SIGTERM; the exit code."""
    import asyncio
    import signal

    from zkbroker.broker.engine.engine import ClusterEngine
    from zkbroker.broker.log import get_logger
    from zkbroker.broker.zookeeper.errors import ZooKeeperError
    from zkbroker.zk_layout import BrokerIdInUseError, ZkConnectionError

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
    from zkbroker.broker.engine.broker_control import list_brokers, request_broker_state
    from zkbroker.zk_layout import BrokerState

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
    from zkbroker.zk_layout import ZkConnectionError, ZkStore
    from zkbroker.zk_layout.store.auth import ZkAuth

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


def _zookeeper_subcommand(args: argparse.Namespace) -> int:
    """`zkbroker broker|fault|user ...`."""
    import asyncio

    from zkbroker.broker.log import configure_logging

    # Only warnings (kazoo's connection trouble) on stderr; stdout carries the answer.
    configure_logging("warning", "console")
    command: Callable[[ZkStore, argparse.Namespace], Awaitable[int]]
    if args.command == "fault":
        from zkbroker.broker.cli.fault_command import run_fault_command as command
    elif args.command == "user":
        from zkbroker.broker.cli.user_command import run_user_command as command
    else:
        command = run_broker_command
    return asyncio.run(run_zookeeper_command(args, command))


def _report(args: argparse.Namespace, command_parser: argparse.ArgumentParser) -> int:
    from zkbroker.broker.report.job import run_cli
    from zkbroker.broker.report.options import options_from_args

    try:
        report_options = options_from_args(args)
    except ValueError as e:
        command_parser.error(_one_line(e))
    return run_cli(report_options)


def _run(settings: Settings, start_zookeeper: StartZooKeeper | None) -> int:
    """`zkbroker run` once its Settings are built: logging, the unused-config warnings, the
    early ZooKeeper (if `start_zookeeper` starts one), then the cluster."""
    import asyncio

    from zkbroker.broker.log import configure_logging, get_logger
    from zkbroker.broker.settings import unused_configs_message

    configure_logging(settings.log_level, settings.log_format)  # type: ignore[arg-type]
    log = get_logger(__name__)
    for message in unused_configs_message(settings.unknown_broker_configs, settings.kafka_version):
        # AbstractConfig.logUnused: Kafka keeps such keys (DescribeConfigs lists them) and starts.
        log.warning("config.unused", message=message)
    early = None if start_zookeeper is None else start_zookeeper(settings)
    return asyncio.run(run_until_signalled(settings, early_zookeeper=early))


def main(
    argv: Sequence[str] | None = None, *, start_zookeeper: StartZooKeeper | None = None
) -> int:
    """The command. `start_zookeeper` (`zkbroker.broker.cli.launch` gives it) may start a
    `run`'s embedded ZooKeeper once its Settings are built, so the JVM boots while the engine
    is imported; the cluster takes that server over."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0].startswith("-") and args_list[0] not in ("-h", "--help")):
        args_list.insert(0, "run")
    parser = build_parser(args_list[0])
    args, unknown = parser.parse_known_args(args_list)
    if args.command is None:
        parser.print_help()
        return 2
    # Errors found after parsing: argparse's own format with the subcommand's usage.
    command_parser: argparse.ArgumentParser = getattr(args, _COMMAND_PARSER, parser)
    if unknown:
        command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "report":
        return _report(args, command_parser)
    if args.command in ("broker", "fault", "user"):
        return _zookeeper_subcommand(args)
    try:
        settings = settings_from_args(args)
    except ValueError as e:
        command_parser.error(_one_line(e))
    return _run(settings, start_zookeeper)


def _one_line(error: Exception) -> str:
    """An error's text on one line (argparse prints it after `prog: error: `)."""
    return " ".join(str(error).split())
