"""What zkbroker gives other projects' test suites: the pytest plugin (`pytest_plugin`, the
`zk_cluster` and `zk_cluster_factory` fixtures), a ZooKeeper for tests (`zookeeper`: Docker
container, local install or `$ZKBROKER_TEST_ZOOKEEPER`), and a raw Kafka wire client (`wire`)
for requests no client library sends.

Built on the public face (`zkbroker.Cluster`); nothing here is used by the broker itself.
"""
