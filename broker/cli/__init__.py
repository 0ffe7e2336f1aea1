"""The `zkbroker` command: `run` (start a cluster), `broker stop|start|list` and
`fault push|latency|drop|blackhole|list|clear`.

The top layer: it parses arguments and calls the engine (`broker.engine`) or ZooKeeper; it
holds no behaviour of its own. Entry point: `broker.cli.main:main` (also `python -m broker.cli`).
"""
