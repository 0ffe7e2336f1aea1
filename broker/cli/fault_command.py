"""`zkbroker fault ...`: add, list and clear fault entries of a cluster through its ZooKeeper.

    zkbroker fault push API ERROR [--count N | --until-cleared] [--skip N] [--broker ID]
                        [--topic T] [--partition P] [--delay-ms MS] --zookeeper CONNECT
    zkbroker fault latency|drop|blackhole ... | clear [ID] | list --zookeeper CONNECT
    zkbroker fault pause-replication --broker ID [--topic T] [--partition P] --zookeeper CONNECT
    zkbroker fault slow-replication --broker ID --delay-ms MS [--topic T] [--partition P] ...
    zkbroker fault cut-inter-broker --broker ID --zookeeper CONNECT

API is a key or a name, ERROR a code or a Kafka error name. One short-lived ZooKeeper session;
one line per fault added or listed, or `cleared N`; exit 1 when ZooKeeper cannot be reached.
The kinds and options are in the README, "Fault injection".

Not here: what faults do (`zkbroker.broker.hooks.faults`), the ZooKeeper session's opening,
closing and reporting (`zkbroker.broker.cli.main`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from zkbroker.broker.cli.arguments import int_at_least, parsed_by
from zkbroker.zk_layout.nodes.zkbroker import FaultEntry, FaultKind

if TYPE_CHECKING:
    from zkbroker.zk_layout import ZkStore

# The fault modules import the broker's request path: only a `fault` command that runs needs
# them, never building the `zkbroker` parser (every command's start).


def api_key_of(text: str) -> int:
    """An API key given by number or name (`zkbroker.broker.hooks.faults.api_key_of`)."""
    from zkbroker.broker.hooks.faults import api_key_of as parse

    return parse(text)


def error_code_of(text: str) -> int:
    """An error code given by number or name (`zkbroker.broker.hooks.faults.error_code_of`)."""
    from zkbroker.broker.hooks.faults import error_code_of as parse

    return parse(text)


_api = parsed_by(api_key_of)
_error = parsed_by(error_code_of)
_non_negative = int_at_least(0)
_positive = int_at_least(1)


def add_fault_arguments(fault: argparse.ArgumentParser) -> None:
    """The actions of `zkbroker fault` and their options (`fault` itself is made by
    `zkbroker.broker.cli.main.build_parser`)."""
    actions = fault.add_subparsers(dest="fault_command", required=True, metavar="ACTION")
    zk_help = "host:port[/chroot] of the cluster's ZooKeeper"

    def scoped(p: argparse.ArgumentParser, *, api_option: bool) -> None:
        if api_option:
            p.add_argument("--api", type=_api, help="API key or name (default: every API)")
        p.add_argument("--broker", type=_non_negative, help="only this broker id")
        p.add_argument("--zookeeper", required=True, help=zk_help)

    push = actions.add_parser("push", help="answer the next matching requests with an error")
    push.add_argument("api", type=_api, metavar="API", help="API key or name, e.g. CreateTopics")
    push.add_argument("error_code", type=_error, metavar="ERROR", help="error code or name")
    counts = push.add_mutually_exclusive_group()
    counts.add_argument("--count", type=_positive, default=1, help="requests to fail (1)")
    counts.add_argument("--until-cleared", action="store_true", help="fail every one until cleared")
    skip_help = "let this many matching requests pass first (0): 2 = fail the third"
    push.add_argument("--skip", type=_non_negative, default=0, help=skip_help)
    push.add_argument("--topic", help="only requests naming this topic")
    push.add_argument("--partition", type=_non_negative, help="only requests naming it")
    push.add_argument("--delay-ms", type=_non_negative, default=0, help="answer this late (0)")
    scoped(push, api_option=False)

    latency = actions.add_parser("latency", help="delay matching requests until cleared")
    latency.add_argument("delay_ms", type=_non_negative, metavar="DELAY_MS")
    scoped(latency, api_option=True)

    drop = actions.add_parser("drop", help="close the connection of the next matching request")
    drop.add_argument("api", type=_api, metavar="API", help="API key or name")
    drop.add_argument("--count", type=_positive, default=1, help="requests to drop (1)")
    drop.add_argument("--skip", type=_non_negative, default=0, help=skip_help)
    scoped(drop, api_option=False)

    blackhole = actions.add_parser("blackhole", help="answer nothing until cleared")
    scoped(blackhole, api_option=True)

    _add_replication_actions(actions, zk_help)

    clear = actions.add_parser("clear", help="delete one fault (by id) or all of them")
    clear.add_argument("fault_id", type=_non_negative, nargs="?", metavar="ID")
    clear.add_argument("--zookeeper", required=True, help=zk_help)

    listing = actions.add_parser("list", help="the fault entries, lowest id first")
    listing.add_argument("--zookeeper", required=True, help=zk_help)
    for action in actions.choices.values():
        action.set_defaults(command_parser=action)  # errors found after parsing show its usage


def _add_replication_actions(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], zk_help: str
) -> None:
    """`pause-replication`, `slow-replication`, `cut-inter-broker`: faults between brokers."""
    pause = actions.add_parser(
        "pause-replication",
        help="the follower broker fetches nothing (for a topic or partition) until cleared",
        description="Follower --broker sends no fetch for the matching partitions (every one "
        "without --topic/--partition): its log stops growing and after replica.lag.time.max.ms "
        "its leaders shrink it out of the ISR.",
    )
    slow = actions.add_parser(
        "slow-replication",
        help="each fetch round of the follower broker waits --delay-ms until cleared",
        description="Each fetch round of follower --broker for the matching partitions "
        "waits --delay-ms first (replication lag).",
    )
    slow.add_argument("--delay-ms", type=_non_negative, required=True, help="wait per round")
    for p in (pause, slow):
        p.add_argument("--broker", type=_non_negative, required=True, help="the follower's id")
        p.add_argument("--topic", help="only this topic's partitions")
        p.add_argument("--partition", type=_non_negative, help="only this partition")
        p.add_argument("--zookeeper", required=True, help=zk_help)
    cut = actions.add_parser(
        "cut-inter-broker",
        help="the broker neither fetches nor is fetched from, and its ISR writes fail",
        description="Broker --broker can neither fetch from any leader nor be fetched from by "
        "any follower, and its AlterPartition (ISR) writes fail; its ZooKeeper session stays, "
        "so the controller still sees it alive: a network partition between brokers only.",
    )
    cut.add_argument("--broker", type=_non_negative, required=True, help="the broker's id")
    cut.add_argument("--zookeeper", required=True, help=zk_help)


def entry_from_args(args: argparse.Namespace) -> FaultEntry:
    """The fault entry an adding action (`push`, `latency`, ..., `cut-inter-broker`) describes."""
    from zkbroker.broker.hooks.replication_faults import (
        cut_inter_broker_entry,
        pause_replication_entry,
        slow_replication_entry,
    )

    command: str = args.fault_command
    if command == "pause-replication":
        return pause_replication_entry(args.broker, args.topic, args.partition)
    if command == "slow-replication":
        return slow_replication_entry(args.broker, args.delay_ms, args.topic, args.partition)
    if command == "cut-inter-broker":
        return cut_inter_broker_entry(args.broker)
    if command == "push":
        return FaultEntry(
            kind=FaultKind.ERROR,
            api=args.api,
            broker=args.broker,
            topic=args.topic,
            partition=args.partition,
            error_code=args.error_code,
            delay_ms=args.delay_ms,
            count=None if args.until_cleared else args.count,
            skip=args.skip,
        )
    if command == "latency":
        return FaultEntry(
            kind=FaultKind.LATENCY, api=args.api, broker=args.broker, delay_ms=args.delay_ms
        )
    if command == "drop":
        return FaultEntry(
            kind=FaultKind.DROP,
            api=args.api,
            broker=args.broker,
            count=args.count,
            skip=args.skip,
        )
    if command == "blackhole":
        return FaultEntry(kind=FaultKind.BLACKHOLE, api=args.api, broker=args.broker)
    raise ValueError(f"not a fault-adding command: {command!r}")


async def run_fault_command(store: ZkStore, args: argparse.Namespace) -> int:
    from zkbroker.broker.hooks.faults import Fault, add_fault, clear_faults, list_faults

    """`zkbroker fault ...` on `store`; returns the exit code."""
    command: str = args.fault_command
    if command == "list":
        for fault in await list_faults(store):
            print(fault.describe(), flush=True)
    elif command == "clear":
        removed = await clear_faults(store, args.fault_id)
        print(f"cleared {removed}", flush=True)
    else:
        entry = entry_from_args(args)
        fault_id = await add_fault(store, entry)
        print(Fault(fault_id, entry).describe(), flush=True)
    return 0
