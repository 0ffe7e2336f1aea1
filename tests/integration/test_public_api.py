"""zkbroker's public `Cluster` in both modes, driven by real clients."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as CfNewTopic
from kafka.admin import KafkaAdminClient, NewTopic

from tests.integration.helpers import wait_until
from zkbroker import BrokerHandle, Cluster
from zkbroker.broker.protocol import error_codes as ec


def test_blocking_mode(zk_connect: str) -> None:
    with Cluster(brokers=3, port=0, zookeeper=zk_connect, kafka_version="3.9") as cluster:
        assert sorted(cluster.brokers) == [0, 1, 2]
        assert isinstance(cluster.brokers[1], BrokerHandle)
        wait_until(lambda: cluster.controller_id >= 0)
        assert cluster.zookeeper_connect == zk_connect
        assert cluster.metrics is None  # no statsd option
        cluster.capture()
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            admin.create_topics([NewTopic("api-topic", 1, 1)], validate_only=True)
        finally:
            admin.close()
        (sent,) = cluster.requests(api="CreateTopics")
        assert sent.request.validate_only is True
        cluster.faults.push_error("CreateTopics", ec.POLICY_VIOLATION)
        cf = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        future = cf.create_topics([CfNewTopic("api-topic", 1, 1)])["api-topic"]
        with pytest.raises(Exception) as failure:
            future.result(timeout=20)
        assert failure.value.args[0].code() == ec.POLICY_VIOLATION
        port = cluster.brokers[2].port
        cluster.brokers[2].stop()
        assert not cluster.brokers[2].running
        assert str(port) not in cluster.bootstrap_servers
        cluster.brokers[2].start()
        assert cluster.brokers[2].port == port and cluster.brokers[2].running
        with pytest.raises(RuntimeError, match="async with"):
            asyncio.run(cluster.brokers[0].astop())


async def test_asyncio_mode(zk_connect: str) -> None:
    async with Cluster(broker_ids=(4, 5), port=0, zookeeper=zk_connect) as cluster:
        admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        await admin.start()
        try:
            await cluster.faults.push_error("CreateTopics", "TOPIC_ALREADY_EXISTS")
            response = await admin.create_topics([AioNewTopic("aio-topic", 1, 1)])
            assert response.topic_errors[0][1] == ec.TOPIC_ALREADY_EXISTS
        finally:
            await admin.close()
        await cluster.brokers[5].arestart()
        assert cluster.brokers[5].running
        with pytest.raises(RuntimeError, match="with Cluster"):
            cluster.brokers[4].stop()


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="brokers or broker_ids"):
        Cluster(brokers=2, broker_ids=(1, 2))
    with pytest.raises(RuntimeError, match="not started"):
        _ = Cluster(port=0).bootstrap_servers
