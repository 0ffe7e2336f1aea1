"""A leader's ISR change, written the way the emulated release writes it.

From 2.7 the leader asks the controller (AlterIsr, AlterPartition from 3.2: Kafka's
``AlterPartitionManager``) over the inter-broker listener, at the newest version the release
serves, and the controller's answer is the committed state. Before 2.7 the leader writes the
partition-state znode itself, conditional on the version it knows, and records the partition
for a batched ``/isr_change_notification`` (``zkbroker.broker.replication.isr_propagation``;
written by the replica manager's timer). docs/kafka-behaviour.md §24.

Not here: deciding the new ISR (`zkbroker.broker.replication.replica_state`), applying the
outcome (the replica manager), the controller's side.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.broker.peers.client import PeerClient, PeerUnavailable
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerState,
    PartitionData,
    TopicData,
)
from zkbroker.broker.protocol.releases import advertised_range
from zkbroker.broker.replication.isr_propagation import IsrChangeBatch
from zkbroker.zk_layout import PartitionState, ZkStore
from zkbroker.zk_layout.release import Release

_log = get_logger(__name__)

#: AlterIsr, then AlterPartition: the leader asks the controller (KIP-497).
ALTER_ISR_SINCE: Release = (2, 7)
_TOPIC_IDS_VERSION = 2
_BROKER_EPOCHS_VERSION = 3
_ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class IsrWrite:
    """One partition's proposed ISR, with the state it changes."""

    topic: str
    partition: int
    topic_id: uuid.UUID | None
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    controller_epoch: int
    leader_recovery_state: int = 0


@dataclass(frozen=True, slots=True)
class IsrWritten:
    """The committed outcome: the ISR and the state znode's new version."""

    isr: tuple[int, ...]
    partition_epoch: int


class IsrWriter:
    """One leader broker's ISR writes."""

    def __init__(
        self,
        broker_id: int,
        release: Release,
        image: MetadataImage,
        store: Callable[[], ZkStore],
        broker_epoch: Callable[[], int],
        peers: PeerClient,
        now_ms: int,
    ) -> None:
        self._broker_id = broker_id
        self._release = release
        self._image = image
        self._store = store
        self._broker_epoch = broker_epoch
        self._peers = peers
        #: Partitions changed by this leader's own znode writes (before 2.7).
        self.changes = IsrChangeBatch(now_ms)
        self._log = _log.bind(broker_id=broker_id)

    @property
    def writes_znodes(self) -> bool:
        return self._release < ALTER_ISR_SINCE

    async def write(self, change: IsrWrite, now_ms: int) -> IsrWritten | None:
        """Write `change`; None when it was refused (a newer state, another controller, an
        unreachable controller): the leader keeps its committed ISR and tries again later."""
        if self.writes_znodes:
            return await self._write_znode(change, now_ms)
        return await self._alter_partition(change)

    async def _write_znode(self, change: IsrWrite, now_ms: int) -> IsrWritten | None:
        state = PartitionState(
            leader=change.leader,
            leader_epoch=change.leader_epoch,
            isr=change.isr,
            controller_epoch=change.controller_epoch,
            leader_recovery_state=change.leader_recovery_state,
        )
        version = await self._store().update_leader_and_isr(
            change.topic, change.partition, state, change.partition_epoch
        )
        if version is None:
            self._log.info(
                "replica.isr_write_refused",
                topic=change.topic,
                partition=change.partition,
                isr=list(change.isr),
                reason="the state znode moved on",
            )
            return None
        self.changes.record((change.topic, change.partition), now_ms)
        return IsrWritten(change.isr, version)

    async def propagate(self, now_ms: int) -> None:
        """``maybePropagateIsrChanges``: one notification for the batch when it is due."""
        due = self.changes.due(now_ms)
        if not due:
            return
        try:
            await self._store().create_isr_change_notification(due)
        except Exception:
            self.changes.put_back(due)
            raise

    async def _alter_partition(self, change: IsrWrite) -> IsrWritten | None:
        served = advertised_range(self._release, ApiKey.ALTER_PARTITION)
        endpoint = self._peers.endpoint_of(self._image, self._image.controller_id)
        if served is None or endpoint is None:
            return None
        version = served[1]
        data = PartitionData(
            partition_index=change.partition,
            leader_epoch=change.leader_epoch,
            leader_recovery_state=change.leader_recovery_state,
            partition_epoch=change.partition_epoch,
        )
        if version >= _BROKER_EPOCHS_VERSION:
            data.new_isr_with_epochs = [BrokerState(broker_id=b) for b in change.isr]
        else:
            data.new_isr = list(change.isr)
        topic = TopicData(partitions=[data])
        if version >= _TOPIC_IDS_VERSION:
            topic.topic_id = change.topic_id or _ZERO_UUID
        else:
            topic.topic_name = change.topic
        request = AlterPartitionRequest(
            broker_id=self._broker_id, broker_epoch=self._broker_epoch(), topics=[topic]
        )
        try:
            response = await self._peers.send(*endpoint, version, request)
        except PeerUnavailable as e:
            self._log.info("replica.isr_write_failed", topic=change.topic, reason=str(e))
            return None
        assert isinstance(response, AlterPartitionResponse)
        return self._outcome(change, response)

    def _outcome(self, change: IsrWrite, response: AlterPartitionResponse) -> IsrWritten | None:
        code = response.error_code
        answer = None
        if code == error_codes.NONE and response.topics and response.topics[0].partitions:
            answer = response.topics[0].partitions[0]
            code = answer.error_code
        if code != error_codes.NONE or answer is None:
            self._log.info(
                "replica.isr_write_refused",
                topic=change.topic,
                partition=change.partition,
                isr=list(change.isr),
                error=error_codes.name_of(code),
            )
            return None
        return IsrWritten(tuple(answer.isr), answer.partition_epoch)
