"""The `zkbroker` command's entry point (also `python -m zkbroker`).

A `run` checks everything it was given and builds its Settings before it starts anything
(`zkbroker.broker.cli.main`): a refused command line exits 2 with no JVM started, no socket
opened, no directory made. Then, when the settings want an embedded ZooKeeper,
`start_zookeeper_early` starts its JVM in the background with the options the cluster would
give it, and the rest of zkbroker (the engine, the server, the handlers) is imported while the
JVM boots; the cluster takes that server over. `ZKBROKER_EARLY_ZOOKEEPER=off` leaves the start
to the cluster, after those imports.

Not here: the options themselves (`zkbroker.broker.cli.run_options`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from zkbroker.broker.cli.main import main as cli_main

if TYPE_CHECKING:
    from zkbroker.broker.settings import Settings
    from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper

EARLY_ENV = "ZKBROKER_EARLY_ZOOKEEPER"


def start_zookeeper_early(
    settings: Settings, env: Mapping[str, str] | None = None
) -> EmbeddedZooKeeper | None:
    """The embedded ZooKeeper of `settings`, starting in the background; None with
    `--zookeeper` or `ZKBROKER_EARLY_ZOOKEEPER=off`. Called once the Settings are built."""
    env = os.environ if env is None else env
    if settings.zookeeper is not None or env.get(EARLY_ENV, "").strip().lower() == "off":
        return None
    from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper

    zookeeper = EmbeddedZooKeeper(**settings.embedded_zookeeper_options())
    zookeeper.start_soon()
    return zookeeper


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    return cli_main(args, start_zookeeper=start_zookeeper_early)
