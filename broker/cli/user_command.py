"""`zkbroker user add NAME --password PW [--mechanism M]... [--iterations N] --zookeeper CONNECT`:
a SCRAM user written to ZooKeeper before (or while) a cluster runs, as Kafka's
`kafka-configs --zookeeper Z --alter --add-config 'SCRAM-SHA-256=[iterations=4096,password=PW]'
--entity-type users --entity-name NAME` did (`zkbroker.broker.security.scram_users`): the credential
in `/config/users/<NAME>` and a `/config/changes` notification, so running brokers apply it at
once. Prints one line (`user alice: SCRAM-SHA-256, SCRAM-SHA-512`); exit 1 when ZooKeeper
cannot be reached, 2 for bad options.

Deliberately not here: deleting users and describing them (use DescribeUserScramCredentials
through any admin client, or kafka-configs), PLAIN users (they live in the JAAS config).
"""

from __future__ import annotations

import argparse

from zkbroker.broker.cli.arguments import (
    DEFAULT_KAFKA_RELEASE,
    int_between,
    kafka_release,
    release_text,
)
from zkbroker.broker.security.scram import MAX_ITERATIONS, MECHANISM_TYPES, MIN_ITERATIONS
from zkbroker.broker.security.scram_users import add_scram_user
from zkbroker.zk_layout import ZkStore


def add_user_arguments(user: argparse.ArgumentParser) -> None:
    """`zkbroker user add` and its options (`user` itself is made by
    `zkbroker.broker.cli.main.build_parser`)."""
    actions = user.add_subparsers(dest="user_command", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="set a user's SCRAM credentials")
    add.set_defaults(command_parser=add)  # errors found after parsing show its usage
    add.add_argument("name", metavar="NAME", help="the user name")
    add.add_argument("--password", required=True, help="the user's password")
    add.add_argument(
        "--mechanism",
        action="append",
        choices=sorted(MECHANISM_TYPES),
        help="SCRAM mechanism (repeatable; default both SCRAM-SHA-256 and SCRAM-SHA-512)",
    )
    add.add_argument(
        "--iterations",
        type=int_between(
            MIN_ITERATIONS, MAX_ITERATIONS, f"iterations between {MIN_ITERATIONS} and 16384"
        ),
        default=MIN_ITERATIONS,
        help=f"PBKDF2 iterations, {MIN_ITERATIONS}..{MAX_ITERATIONS} ({MIN_ITERATIONS})",
    )
    add.add_argument(
        "--kafka-version",
        type=kafka_release,
        default=DEFAULT_KAFKA_RELEASE,
        help="the release whose notification format is written "
        f"({release_text(DEFAULT_KAFKA_RELEASE)})",
    )
    add.add_argument(
        "--zookeeper", required=True, help="host:port[/chroot] of the cluster's ZooKeeper"
    )


async def run_user_command(store: ZkStore, args: argparse.Namespace) -> int:
    mechanisms = args.mechanism or sorted(MECHANISM_TYPES)
    await add_scram_user(
        store,
        args.name,
        dict.fromkeys(mechanisms, args.password),
        args.kafka_version,
        args.iterations,
    )
    print(f"user {args.name}: {', '.join(mechanisms)}", flush=True)
    return 0
