"""AllocateProducerIds (3.0+) as a controller event: a block of producer ids for a broker.

Kafka's KafkaController.processAllocateProducerIds (3.0-3.9, ZooKeeper mode): the requesting
broker must be live with that broker epoch (the czxid of `/brokers/ids/<id>`, read here at the
time of the event rather than from a cached context), else BROKER_ID_NOT_REGISTERED or
STALE_BROKER_EPOCH; then ZkProducerIdManager.getNewProducerIdBlock claims the next block of
1,000 ids through `/latest_producer_id_block` (`ZkStore.claim_producer_id_block`, conditional
on the znode's version, the same claim InitProducerId makes, so blocks never overlap). Running
ids out (a block end past Long.MaxValue) is a KafkaException in Kafka, answered
UNKNOWN_SERVER_ERROR.

Deliberately not here: the broker side (a 3.x broker with IBP >= 3.0 asks the controller
through this RPC; zkbroker's brokers claim blocks directly, `zkbroker.broker.server.producer_ids`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.zk_layout import BrokerIdNode

if TYPE_CHECKING:
    from zkbroker.broker.controller.controller import Controller

_log = get_logger(__name__)


@dataclass(frozen=True)
class AllocatedBlock:
    error_code: int
    producer_id_start: int = 0
    producer_id_len: int = 0


async def allocate_producer_ids(
    controller: Controller, broker_id: int, broker_epoch: int
) -> AllocatedBlock:
    node = await controller.store.get(BrokerIdNode.path(broker_id))
    if node is None:
        _log.warning("controller.allocate_producer_ids_unknown_broker", broker=broker_id)
        return AllocatedBlock(error_codes.BROKER_ID_NOT_REGISTERED)
    if int(node[1].czxid) != broker_epoch:
        _log.warning(
            "controller.allocate_producer_ids_stale_epoch",
            broker=broker_id,
            broker_epoch=broker_epoch,
        )
        return AllocatedBlock(error_codes.STALE_BROKER_EPOCH)
    try:
        block = await controller.store.claim_producer_id_block(broker_id)
    except OverflowError:
        _log.error("controller.producer_ids_exhausted", broker=broker_id)
        return AllocatedBlock(error_codes.UNKNOWN_SERVER_ERROR)
    _log.info(
        "controller.producer_id_block_allocated",
        broker=broker_id,
        start=block.block_start,
        end=block.block_end,
    )
    return AllocatedBlock(
        error_codes.NONE, block.block_start, block.block_end - block.block_start + 1
    )
