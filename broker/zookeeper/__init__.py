"""A ZooKeeper server for a zkbroker process: the embedded launcher (`embedded`) that runs
Debian's (or `$ZOOKEEPER_HOME`'s) ZooKeeper with Java in a temporary data directory.

Deliberately not here: talking to ZooKeeper (`zkbroker.zk_layout.store`).
"""
