"""AllocateProducerIds (KIP-730, 3.0+) over TCP against a real ZooKeeper: the controller checks
the broker id and epoch (the czxid of `/brokers/ids/<id>`) and really claims the next block of
`/latest_producer_id_block`, which InitProducerId then never hands out. Wire requests: no
client library sends this broker-to-controller RPC."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until
from tests.integration.test_controller import controller_client, other_client
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.allocate_producer_ids import AllocateProducerIdsRequest
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.protocol.messages.init_producer_id import InitProducerIdRequest
from zkbroker.broker.toolkit.wire import WireClient


def allocate(client: WireClient, broker_id: int, epoch: int) -> tuple[int, int, int]:
    answer = client.request(0, AllocateProducerIdsRequest(broker_id=broker_id, broker_epoch=epoch))
    return answer.error_code, answer.producer_id_start, answer.producer_id_len


def epoch_of(kazoo: KazooClient, broker_id: int) -> int:
    return int(kazoo.get(f"/brokers/ids/{broker_id}")[1].czxid)


def advertised(client: WireClient) -> dict[int, tuple[int, int]]:
    answer = client.request(0, ApiVersionsRequest())
    return {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}


def test_the_controller_allocates_real_blocks_on_3_9(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    cluster = cluster_factory(broker_ids=(0, 1), kafka_version=(3, 9))
    wait_until(lambda: cluster.engine.controller_id >= 0)
    wait_until(lambda: kazoo.exists("/brokers/ids/0") and kazoo.exists("/brokers/ids/1"))
    with controller_client(cluster) as client:
        assert advertised(client)[67] == (0, 0)
        code, start, length = allocate(client, 1, epoch_of(kazoo, 1))
        assert (code, length) == (ec.NONE, 1000)
        doc = json.loads(kazoo.get("/latest_producer_id_block")[0])
        assert doc == {
            "version": 1,
            "broker": 1,
            "block_start": str(start),
            "block_end": str(start + 999),
        }
        # The next block follows it.
        assert allocate(client, 0, epoch_of(kazoo, 0)) == (ec.NONE, start + 1000, 1000)
        # Errors: an epoch other than the czxid, an unknown broker.
        assert allocate(client, 1, epoch_of(kazoo, 1) + 1) == (ec.STALE_BROKER_EPOCH, 0, 0)
        assert allocate(client, 1, -1) == (ec.STALE_BROKER_EPOCH, 0, 0)
        assert allocate(client, 9, 0) == (ec.BROKER_ID_NOT_REGISTERED, 0, 0)
        # InitProducerId never hands out an id of the blocks taken.
        init = client.request(4, InitProducerIdRequest(transactional_id=None))
        assert init.error_code == ec.NONE
        assert not start <= init.producer_id < start + 2000
    with other_client(cluster) as client:
        assert allocate(client, 1, epoch_of(kazoo, 1)) == (ec.NOT_CONTROLLER, 0, 0)


@pytest.mark.kafka_version("2.8")
def test_not_advertised_before_3_0(cluster: Cluster) -> None:
    wait_until(lambda: cluster.engine.controller_id >= 0)
    with controller_client(cluster) as client:
        assert 67 not in advertised(client)
