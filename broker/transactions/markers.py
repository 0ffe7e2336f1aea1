"""A partition leader's side of a transaction marker: WriteTxnMarkers' append.

Kafka 3.9's ``KafkaApis.handleWriteTxnMarkersRequest`` / ``ReplicaManager.appendRecords`` with
``AppendOrigin.COORDINATOR`` (docs/kafka-behaviour.md §17): a partition this broker does not
know or does not host, or whose topic is being deleted, is UNKNOWN_TOPIC_OR_PARTITION, one it
does not lead NOT_LEADER_OR_FOLLOWER; otherwise a COMMIT or ABORT control batch is appended
at the log end under the partition's append lock, stamped with the leader epoch, through
``zkbroker.broker.storage.transactions.append_end_txn_marker``. The log's
``ProducerAppendInfo.appendEndTxnMarker`` checks answer INVALID_PRODUCER_EPOCH (an epoch older
than the log's for the producer) and TRANSACTION_COORDINATOR_FENCED (a zombie coordinator); the
marker completes the producer's ongoing transaction in the partition (last stable offset,
aborted index). A marker written to a ``__consumer_offsets`` partition then completes the group
coordinator's pending transactional offsets of that partition's groups (commit: materialized,
abort: dropped; ``GroupCoordinator.scheduleHandleTxnCompletion``).

Deliberately not here: the message-format check (every log here is magic 2) and the
sender's CLUSTER_ACTION authorization (``zkbroker.handlers.write_txn_markers``' caller's concern).
"""

from __future__ import annotations

import time
from typing import Protocol

from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.replication.replica_manager import ReplicaManager
from zkbroker.broker.storage import LogManager
from zkbroker.broker.storage.transactions import TxnAppendError, append_end_txn_marker

_log = get_logger(__name__)


OFFSETS_TOPIC = "__consumer_offsets"
#: How long a marker's append waits for the ISR (Kafka: the broker's request.timeout.ms).
MARKER_ACKS_TIMEOUT_MS = 30_000


class PendingOffsetsOwner(Protocol):
    """The group coordinator's side (``zkbroker.broker.groups.coordinator.GroupCoordinator``)."""

    def complete_txn(self, partition: int, producer_id: int, commit: bool) -> None: ...


class MarkerTarget(Protocol):
    """What applying a marker needs of the leader (a ``BrokerNode``)."""

    @property
    def broker_id(self) -> int: ...

    @property
    def image(self) -> MetadataImage: ...

    @property
    def logs(self) -> LogManager: ...

    @property
    def group_coordinator(self) -> PendingOffsetsOwner: ...

    @property
    def replica_manager(self) -> ReplicaManager: ...


async def apply_marker(
    target: MarkerTarget,
    topic: str,
    partition: int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
) -> int:
    """Append the marker if `target` leads the partition; the error code otherwise."""
    image_topic = target.image.topics.get(topic)
    state = None if image_topic is None else image_topic.partitions.get(partition)
    if image_topic is None or state is None or topic in target.image.topics_being_deleted:
        # A topic being deleted: StopReplica with delete took the partition out.
        return ec.UNKNOWN_TOPIC_OR_PARTITION
    if target.broker_id not in state.replicas:
        # Not hosted here (ReplicaManager.onlinePartition is empty): Kafka skips the marker.
        return ec.UNKNOWN_TOPIC_OR_PARTITION
    if state.leader != target.broker_id:
        return ec.NOT_LEADER_OR_FOLLOWER
    log = target.logs.get_or_create(topic, partition, image_topic.topic_id)
    now = int(time.time() * 1000)
    with log.append_lock():
        outcome = append_end_txn_marker(
            log,
            commit=commit,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            leader_epoch=state.leader_epoch,
            now_ms=now,
        )
    if isinstance(outcome, TxnAppendError):
        _log.info(
            "transaction marker refused",
            topic=topic,
            partition=partition,
            producer_id=producer_id,
            error=outcome.message,
        )
        return outcome.code
    if topic == OFFSETS_TOPIC:
        target.group_coordinator.complete_txn(partition, producer_id, commit)
    # Kafka appends markers with acks=-1: the answer waits until the ISR has the marker, so
    # a read_committed consumer can read past the transaction once it is answered (§24).
    codes = await target.replica_manager.wait_for_acks(
        {(topic, partition): log.log_end_offset}, MARKER_ACKS_TIMEOUT_MS
    )
    return codes[(topic, partition)]
