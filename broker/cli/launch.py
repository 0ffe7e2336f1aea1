"""The `zkbroker` command's entry point (also `python -m zkbroker`).

A `run` whose options cannot concern ZooKeeper (`EARLY_OPTIONS`) will start an embedded one
with the default options: its JVM is started here, before the rest of zkbroker is imported, so
the JVM's start and Python's imports overlap; the cluster takes it over, or stops it when the
settings want another one. `ZKBROKER_EARLY_ZOOKEEPER=off` turns this off. Everything else goes
straight to `zkbroker.broker.cli.main`.

Not here: the options themselves (`zkbroker.broker.cli.main`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper

EARLY_ENV = "ZKBROKER_EARLY_ZOOKEEPER"
# Options of `zkbroker run` that say nothing about ZooKeeper, with a value and without. Any
# other one (--zookeeper, --log-dir, --zookeeper-*, --jaas-config, --broker-config[-file],
# --help, an abbreviation) leaves the start to `main`, after parsing.
EARLY_OPTIONS = frozenset(
    {
        "--brokers",
        "--broker-ids",
        "--host",
        "--port",
        "--listener",
        "--advertised-host",
        "--advertised-listener",
        "--racks",
        "--kafka-version",
        "--max-request-bytes",
        "--num-partitions",
        "--default-replication-factor",
        "--zookeeper-session-timeout-ms",
        "--broker-session-timeout-ms",
        "--replica-catchup-ms",
        "--leader-imbalance-check-interval-s",
        "--leader-imbalance-per-broker-percentage",
        "--capture",
        "--statsd",
        "--statsd-interval-s",
        "--log-level",
        "--log-format",
    }
)
EARLY_FLAGS = frozenset(
    {
        "--auto-create-topics",
        "--no-auto-create-topics",
        "--delete-topic-enable",
        "--no-delete-topic-enable",
        "--auto-leader-rebalance",
        "--no-auto-leader-rebalance",
        "--authorizer",
    }
)
# What can give the embedded server SASL users (`--zookeeper-auth sasl` takes its credentials
# from these, a JAAS file's Client section from KAFKA_OPTS).
_ZOOKEEPER_ENV = ("ZKBROKER_ZOOKEEPER_DIGEST", "ZKBROKER_ZOOKEEPER_AUTH", "KAFKA_OPTS")
_LOG_LEVELS = ("debug", "info", "warning", "error")
_LOG_FORMATS = ("console", "json")
# Settings.zookeeper_max_buffer_bytes' default (the server's jute.maxbuffer); importing
# Settings here would cost the very imports this module runs ahead of.
_JUTE_MAX_BUFFER = 0xFFFFF


def early_run(args: Sequence[str], env: Mapping[str, str]) -> tuple[str, str] | None:
    """(log level, log format) of a `run` whose embedded ZooKeeper may start before its options
    are parsed; None for anything else."""
    if env.get(EARLY_ENV, "").strip().lower() == "off" or any(env.get(k) for k in _ZOOKEEPER_ENV):
        return None
    rest = list(args)
    if rest and rest[0] == "run":
        rest.pop(0)
    elif rest and not rest[0].startswith("-"):
        return None  # another command
    level, fmt = "info", "console"
    while rest:
        token = rest.pop(0)
        name, has_value, value = token.partition("=")
        if name in EARLY_FLAGS and not has_value:
            continue
        if name not in EARLY_OPTIONS:
            return None
        if not has_value:
            if not rest:
                return None
            value = rest.pop(0)
        if name == "--log-level":
            level = value.lower()
        elif name == "--log-format":
            fmt = value
    if level not in _LOG_LEVELS or fmt not in _LOG_FORMATS:
        return None  # main's parser says what is wrong
    return level, fmt


def start_early(args: Sequence[str], env: Mapping[str, str]) -> EmbeddedZooKeeper | None:
    """The embedded ZooKeeper of `args`, starting in the background, or None."""
    logging_options = early_run(args, env)
    if logging_options is None:
        return None
    level, fmt = logging_options
    from zkbroker.broker.log import configure_logging
    from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper

    # What main configures too, a moment later: the server's own start events are logged.
    configure_logging(level, "json" if fmt == "json" else "console")
    zookeeper = EmbeddedZooKeeper(max_buffer_bytes=_JUTE_MAX_BUFFER)
    zookeeper.start_soon()
    return zookeeper


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    early = start_early(args, os.environ)
    from zkbroker.broker.cli.main import main as cli_main

    return cli_main(args, early_zookeeper=early)
