"""The engine under `zkbroker.Cluster`: this process's brokers on one ZooKeeper
(`engine.ClusterEngine`), the background event loop that serves blocking callers
(`thread.EngineThread`), and stop/start of brokers through `/zkbroker/brokers/<id>`
(`broker_control`).

Internal: users hold `zkbroker.Cluster` (`zkbroker.broker.cluster`), which wraps these classes.
"""
