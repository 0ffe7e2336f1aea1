"""A broker's producer ids: handed out one by one from blocks claimed in ZooKeeper.

Kafka's ZooKeeper-mode `ZkProducerIdManager` (docs/kafka-behaviour.md §1, §15): each broker
claims blocks of 1,000 ids through `/latest_producer_id_block` (`ZkStore.
claim_producer_id_block`, conditional on the znode's version, so two brokers never get the
same block), then gives out the ids of its block in order. Ids are unique cluster-wide and
never reused, across processes and restarts.

Deliberately not here: KRaft's AllocateProducerIds (the controller hands out blocks there),
and the prefetch of the next block Kafka 3.x does at 90% use: a claim is one ZooKeeper round
trip, taken by the InitProducerId that finds the block used up.
"""

from __future__ import annotations

import asyncio

from zkbroker.zk_layout import ZkStore
from zkbroker.zk_layout.nodes.cluster import ProducerIdBlock


class ProducerIdAllocator:
    def __init__(self, broker_id: int) -> None:
        self._broker_id = broker_id
        self._block: ProducerIdBlock | None = None
        self._next = 0
        self._lock = asyncio.Lock()

    async def next_id(self, store: ZkStore) -> int:
        async with self._lock:  # one claim at a time; the others take ids from it
            if self._block is None or self._next > self._block.block_end:
                self._block = await store.claim_producer_id_block(self._broker_id)
                self._next = self._block.block_start
            producer_id = self._next
            self._next += 1
            return producer_id
