"""The `zkbroker` command: `run` (start a cluster), `broker stop|start|list` and
`fault push|latency|drop|blackhole|list|clear`.

The top layer: it parses arguments and calls the engine (`zkbroker.broker.engine`) or ZooKeeper; it
holds no behaviour of its own. Entry point: `zkbroker.broker.cli.launch:main` (also `python -m
zkbroker`), which may start the embedded ZooKeeper's JVM before the heavy imports of `main`.
"""
