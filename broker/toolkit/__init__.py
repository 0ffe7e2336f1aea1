"""What zkbroker gives other projects' test suites: the pytest plugin (`pytest_plugin`, the
`zk_cluster` and `zk_cluster_factory` fixtures), a ZooKeeper for tests (`zookeeper`: Docker
container, local install or `$ZKBROKER_TEST_ZOOKEEPER`), a raw Kafka wire client (`wire`)
for requests no client library sends, and `container`: `ZkBrokerContainer`, the image as a
testcontainers container for tests that want the cluster in Docker.

Built on the public face (`zkbroker.Cluster`); nothing here is used by the broker itself.
"""
