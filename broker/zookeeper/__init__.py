"""A ZooKeeper server for a zkbroker process: the embedded launcher that runs Debian's (or
`$ZOOKEEPER_HOME`'s) ZooKeeper with Java, in a temporary or given data directory.

`embedded` is its face (`EmbeddedZooKeeper`); beside it `discovery` (finding Java and the
jars), `config_files` (zoo.cfg, JAAS, logging), `jvm_launch` (the command, the class-data
archive, one start), `supervision` (the watchdog, stopping the JVM), `data_dir_lock` (one server
per data directory), `network` (free ports, four-letter words) and `errors`.

Deliberately not here: talking to ZooKeeper (`zkbroker.zk_layout.store`).
"""
