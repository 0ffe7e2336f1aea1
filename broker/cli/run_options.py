"""`zkbroker run`'s options, in the groups `zkbroker run --help` shows them in: cluster,
listeners and security, ZooKeeper, storage, observability; two examples end the help.

Light on purpose, as `zkbroker.broker.cli.arguments` is: building and running this parser
imports nothing of the server, so a refused command line returns at once and starts nothing.
The defaults written in help texts are `Settings`' (a unit test holds them equal).

Options that a `--broker-config-file` key can also set default to None ("not given"): a file's
value applies unless the command line gives another (`zkbroker.broker.cli.main.settings_from_args`).

Not here: what the values mean once parsed (`settings_from_args`, `zkbroker.broker.settings`).
"""

from __future__ import annotations

import argparse
import os

from zkbroker.broker.cli.arguments import (
    DEFAULT_KAFKA_RELEASE,
    KAFKA_PATCH_RELEASES,
    int_list,
    kafka_release,
    key_value,
    parsed_by,
    positive_seconds,
    release_text,
)
from zkbroker.broker.cli.config_options import KAFKA_OPTS_ENV, parse_listener
from zkbroker.broker.log_formats import LOG_FORMATS

#: Digest credentials (user:password) of zkbroker's ZooKeeper sessions, kept off command lines.
ZOOKEEPER_DIGEST_ENV = "ZKBROKER_ZOOKEEPER_DIGEST"
#: How they log in (digest or sasl), for the commands that have no --zookeeper-auth.
ZOOKEEPER_AUTH_ENV = "ZKBROKER_ZOOKEEPER_AUTH"
LOG_LEVELS = ("debug", "info", "warning", "error")

RUN_HELP = "start a cluster (the default command)"
DESCRIPTION = """\
Start a cluster of Kafka brokers on a ZooKeeper and run until SIGINT/SIGTERM.

Everything given is checked first (the options, --broker-config-file, the JAAS file): a refused
command line exits with 2 before anything starts. Then the embedded ZooKeeper starts (without
--zookeeper), then the brokers; stdout gets bootstrap_servers=... and zookeeper=... lines."""
EPILOG = """\
examples:
  zkbroker run --brokers 3 --port 0
      three brokers on free ports and an embedded ZooKeeper; the bootstrap_servers= line
      names the ports

  zkbroker run --broker-config-file config/server.properties --kafka-version 2.8
      the broker Kafka's own server.properties describes (broker.id, listeners, log.dirs,
      zookeeper.connect: a ZooKeeper that runs already), emulating Kafka 2.8"""

_listener = parsed_by(parse_listener)
# Settings' defaults, as the help texts name them (tests/unit/test_command_line.py compares).
DEFAULT_MAX_REQUEST_BYTES_TEXT = "104857600"
DEFAULT_ZOOKEEPER_MAX_BUFFER_TEXT = "1048575"


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    """Every option of `zkbroker run`, each in its group."""
    cluster = run.add_argument_group("cluster", "the brokers, their release and their configs")
    _cluster_options(cluster)
    _controller_options(cluster)
    _listener_options(
        run.add_argument_group(
            "listeners and security", "where the brokers listen and whom they let in"
        )
    )
    _zookeeper_options(
        run.add_argument_group("ZooKeeper", "the cluster's ZooKeeper and how to log in to it")
    )
    _storage_options(run.add_argument_group("storage", "where partition logs are kept"))
    _observability_options(
        run.add_argument_group("observability", "logs, request capture and metrics")
    )


def _cluster_options(group: argparse._ArgumentGroup) -> None:
    ids = group.add_mutually_exclusive_group()
    ids.add_argument("--brokers", type=int, metavar="N", help="number of brokers, ids 0..N-1 (3)")
    ids.add_argument(
        "--broker-ids", type=int_list, metavar="IDS", help="explicit broker ids, e.g. 1,2,3"
    )
    group.add_argument(
        "--racks", metavar="RACKS", help="comma-separated rack per broker, e.g. r1,r1,r2"
    )
    group.add_argument(
        "--kafka-version",
        type=kafka_release,
        default=DEFAULT_KAFKA_RELEASE,
        metavar="RELEASE",
        help="Kafka release to emulate: "
        + ", ".join(release_text(line) for line in KAFKA_PATCH_RELEASES)
        + ", or one of their patch releases such as 2.8.2 "
        + f"({release_text(DEFAULT_KAFKA_RELEASE)})",
    )
    group.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        type=key_value,
        help="a static broker config, as a server.properties line; repeatable "
        "(shown as STATIC_BROKER_CONFIG by DescribeConfigs)",
    )
    group.add_argument(
        "--broker-config-file",
        metavar="PATH",
        help="a Kafka server.properties as it is (java.util.Properties syntax): its entries "
        "apply like --broker-config entries, which win over it; broker.id, listeners, "
        "zookeeper.connect, log.dirs, ... set what their options set (a different value given "
        "on the command line is refused); keys the release does not know are warned about",
    )
    group.add_argument(
        "--auto-create-topics",
        action=argparse.BooleanOptionalAction,
        help="create topics a Metadata request names (auto.create.topics.enable; on)",
    )
    group.add_argument(
        "--delete-topic-enable",
        action=argparse.BooleanOptionalAction,
        help="allow DeleteTopics (delete.topic.enable; on)",
    )
    group.add_argument(
        "--num-partitions", metavar="N", type=int, help="default partitions (num.partitions; 1)"
    )
    group.add_argument(
        "--default-replication-factor",
        metavar="N",
        type=int,
        help="default replication factor (default.replication.factor; 1)",
    )


def _controller_options(group: argparse._ArgumentGroup) -> None:
    """The cluster group's controller and broker-lease knobs."""
    group.add_argument(
        "--auto-leader-rebalance",
        action=argparse.BooleanOptionalAction,
        help="move leadership back to preferred replicas (auto.leader.rebalance.enable; on)",
    )
    group.add_argument(
        "--leader-imbalance-check-interval-s",
        metavar="SECONDS",
        type=float,
        help="seconds between rebalance checks (leader.imbalance.check.interval.seconds; 300)",
    )
    group.add_argument(
        "--leader-imbalance-per-broker-percentage",
        metavar="PERCENT",
        type=int,
        help="imbalance above which a broker's leaders are moved back "
        "(leader.imbalance.per.broker.percentage; 10)",
    )
    group.add_argument(
        "--broker-session-timeout-ms",
        metavar="MS",
        type=int,
        help="how long a broker registered over the protocol (KIP-631) stays without a "
        "heartbeat (broker.session.timeout.ms; 9000)",
    )


def _listener_options(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--host", metavar="HOST", help="address to listen on (127.0.0.1)")
    group.add_argument(
        "--port", type=int, help="port of the first broker; 0 = any free ports (9092)"
    )
    group.add_argument(
        "--advertised-host",
        metavar="HOST",
        help="host written to ZooKeeper and answered in Metadata (--host)",
    )
    group.add_argument(
        "--listener",
        type=_listener,
        action="append",
        metavar="NAME://HOST:PORT",
        help="a listener as Kafka's `listeners` names it (repeatable; instead of --host/--port), "
        "e.g. SASL_SSL://127.0.0.1:9092; broker i listens on PORT + i; its protocol comes from "
        "listener.security.protocol.map (the name itself by default); the first is the one "
        "bootstrap_servers prints",
    )
    group.add_argument(
        "--advertised-listener",
        type=_listener,
        action="append",
        metavar="NAME://HOST:PORT",
        help="Kafka's advertised.listeners, one listener each (repeatable): what /brokers/ids "
        "and Metadata give for it; broker i advertises PORT + i, or its bound port for 0; "
        "listeners not named are not advertised",
    )
    group.add_argument(
        "--max-request-bytes",
        metavar="BYTES",
        type=int,
        help="largest request accepted, socket.request.max.bytes "
        f"({DEFAULT_MAX_REQUEST_BYTES_TEXT})",
    )
    group.add_argument(
        "--jaas-config",
        metavar="FILE",
        help="Kafka's JAAS file (the JVM's java.security.auth.login.config; default: "
        f"-Djava.security.auth.login.config=FILE in ${KAFKA_OPTS_ENV}): KafkaServer and "
        "<listener>.KafkaServer sections give PLAIN users (PlainLoginModule user_NAME) and the "
        "brokers' own login (username/password), Client the ZooKeeper SASL login",
    )
    group.add_argument(
        "--authorizer",
        action="store_true",
        help="turn on Kafka's ZooKeeper ACL authorizer (authorizer.class.name="
        "kafka.security.authorizer.AclAuthorizer); super.users and "
        "allow.everyone.if.no.acl.found through --broker-config",
    )


def _zookeeper_options(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--zookeeper",
        metavar="HOST:PORT[/CHROOT]",
        help="a running ZooKeeper; without it an embedded one is started",
    )
    group.add_argument(
        "--zookeeper-set-acl",
        action="store_true",
        help="Kafka's zookeeper.set.acl: znodes zkbroker creates are writable only by its "
        "ZooKeeper identity, credentials and tokens not world-readable (needs "
        "--zookeeper-digest)",
    )
    group.add_argument(
        "--zookeeper-digest",
        metavar="USER:PASSWORD",
        default=os.environ.get(ZOOKEEPER_DIGEST_ENV),
        help="digest credentials of zkbroker's ZooKeeper sessions (default: "
        f"${ZOOKEEPER_DIGEST_ENV}, which the broker/fault/user commands also use)",
    )
    group.add_argument(
        "--zookeeper-auth",
        choices=("digest", "sasl"),
        help="how --zookeeper-digest's credentials log in: digest (addauth; identity "
        "digest:USER:<hash>) or sasl (SASL DIGEST-MD5, checked by the server; identity "
        f"sasl:USER; the embedded ZooKeeper gets that user); default: ${ZOOKEEPER_AUTH_ENV} "
        "or digest",
    )
    group.add_argument(
        "--zookeeper-session-timeout-ms",
        metavar="MS",
        type=int,
        help="each broker's ZooKeeper session timeout (zookeeper.session.timeout.ms; 18000)",
    )
    group.add_argument(
        "--zookeeper-max-buffer-bytes",
        metavar="BYTES",
        type=int,
        help="the ZooKeeper servers' jute.maxbuffer: larger writes are refused before they are "
        f"sent ({DEFAULT_ZOOKEEPER_MAX_BUFFER_TEXT})",
    )


def _storage_options(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--log-dir",
        metavar="DIR",
        help="keep partition logs on disk in Kafka's layout (<topic>-<partition>/*.log; with "
        "several brokers, each in DIR/broker-<id>), across restarts (log.dirs; default: in "
        "memory); with the embedded ZooKeeper the cluster is kept in DIR/zookeeper",
    )


def _observability_options(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--log-level",
        type=str.lower,
        choices=LOG_LEVELS,
        default="info",
        help="debug, info, warning, error (info); debug logs every request",
    )
    group.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="console",
        help="console lines, json: one JSON object per line, or kafka: Kafka's log4j lines "
        "`[time] LEVEL message (logger)` with KafkaServer's `[KafkaServer id=N] started` "
        "(console); logs go to stderr",
    )
    group.add_argument(
        "--capture",
        metavar="FILE.jsonl",
        help="append one JSON line per request answered (request capture) to this file",
    )
    group.add_argument(
        "--statsd",
        metavar="HOST:PORT",
        help="send StatsD metrics (UDP) to this address: request counts and latencies, "
        "connections, topics, partitions, controller epoch, injected faults",
    )
    group.add_argument(
        "--statsd-interval-s",
        metavar="SECONDS",
        type=positive_seconds,
        default=10.0,
        help="seconds between StatsD gauges (10)",
    )
