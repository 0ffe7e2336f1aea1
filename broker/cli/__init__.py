"""The `zkbroker` command: `run` (start a cluster), `broker stop|start|list`,
`fault push|latency|drop|blackhole|list|clear`, `user add` and `report`.

The top layer: it parses arguments and calls the engine (`zkbroker.broker.engine`) or ZooKeeper; it
holds no behaviour of its own. Entry point: `zkbroker.broker.cli.launch:main` (also `python -m
zkbroker`). Parsing and checking a `run` import none of the server (`run_options`, `arguments`),
so a refused command line returns at once having started nothing; the embedded ZooKeeper's JVM
starts once the settings are built, and boots while the engine is imported.
"""
