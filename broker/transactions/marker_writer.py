"""Writing a transaction's COMMIT or ABORT marker to every partition it touched.

Kafka's ``TransactionMarkerChannelManager`` (docs/kafka-behaviour.md §17): markers go to each
partition's current leader; a partition without a leader, or whose leader answers a retriable
error (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, ...), is retried
with backoff until it is written; a partition whose topic was deleted is dropped (Kafka removes
it from the pending markers); UNSUPPORTED_FOR_MESSAGE_FORMAT / UNSUPPORTED_VERSION drop it with
an error logged, as Kafka's ``TransactionMarkerRequestCompletionHandler`` does. The writing
stops when the coordinator lost the transaction's partition (``still_owner``): the next
coordinator writes the markers again from the log.

A leader running in this process (the engine's ``LocalBrokers``) gets the marker through
``zkbroker.broker.transactions.markers.apply_marker``; any other leader gets a WriteTxnMarkers
request on its inter-broker listener, with that listener's TLS and SASL
(``zkbroker.broker.peers.client``: one authenticated connection per leader, reused). A
leader that refuses this broker's TLS handshake or SASL login gets ``txn.marker_failed`` logged with
the error and the marker is retried, as Kafka's InterBrokerSendThread logs an authentication error
and re-queues the markers.

Deliberately not here: the transaction's state (``zkbroker.broker.transactions.coordinator``), what
a leader does with a marker (``zkbroker.broker.transactions.markers``,
``zkbroker.handlers.write_txn_markers``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.broker.peers import client as peer_client
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from zkbroker.broker.rules.transactions.state import TopicPartition
from zkbroker.broker.storage import LogManager
from zkbroker.broker.transactions.local_brokers import LocalBrokers
from zkbroker.broker.transactions.markers import apply_marker
from zkbroker.zk_layout.release import Release, release_at_least

_BACKOFF_S = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
# Kafka's completion handler: partitions with these are retried.
RETRIABLE = frozenset(
    {
        ec.UNKNOWN_TOPIC_OR_PARTITION,
        ec.NOT_LEADER_OR_FOLLOWER,
        ec.NOT_ENOUGH_REPLICAS,
        ec.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ec.REQUEST_TIMED_OUT,
        ec.KAFKA_STORAGE_ERROR,
        ec.COORDINATOR_NOT_AVAILABLE,
        ec.NOT_COORDINATOR,
        ec.COORDINATOR_LOAD_IN_PROGRESS,
        ec.LEADER_NOT_AVAILABLE,
    }
)
DROPPED = frozenset({ec.UNSUPPORTED_FOR_MESSAGE_FORMAT, ec.UNSUPPORTED_VERSION})

_log = get_logger(__name__)


class MarkerWriter:
    def __init__(
        self,
        broker_id: int,
        image: MetadataImage,
        logs: LogManager,
        release: Release,
        peers: peer_client.PeerClient,
        local: LocalBrokers,
    ) -> None:
        self._broker_id = broker_id
        self._local = local
        self._image = image
        self._logs = logs
        self._release = release
        self._peers = peers
        self._log = _log.bind(broker_id=broker_id)

    async def close(self) -> None:
        """Close the connections to other processes' leaders."""
        await self._peers.close()

    async def write(
        self,
        partitions: Iterable[TopicPartition],
        *,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        still_owner: Callable[[], bool],
    ) -> None:
        """Write the marker to every partition (concurrently), each until done or dropped."""
        await asyncio.gather(
            *(
                self._one(tp, producer_id, producer_epoch, coordinator_epoch, commit, still_owner)
                for tp in partitions
            )
        )

    async def _one(
        self,
        tp: TopicPartition,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        still_owner: Callable[[], bool],
    ) -> None:
        attempt = 0
        while still_owner():
            topic, partition = tp
            image_topic = self._image.topics.get(topic)
            if image_topic is None or topic in self._image.topics_being_deleted:
                self._log.info(
                    "txn.marker_dropped", topic=topic, partition=partition, reason="topic deleted"
                )
                return
            state = image_topic.partitions.get(partition)
            leader = -1 if state is None else state.leader
            error = ec.LEADER_NOT_AVAILABLE
            if leader >= 0:
                error = await self._send(
                    leader, tp, producer_id, producer_epoch, coordinator_epoch, commit
                )
            if error == ec.NONE:
                return
            if error in DROPPED:
                self._log.error(
                    "txn.marker_dropped", topic=topic, partition=partition, error=ec.name_of(error)
                )
                return
            if error not in RETRIABLE:
                self._log.error(
                    "txn.marker_failed", topic=topic, partition=partition, error=ec.name_of(error)
                )
            await asyncio.sleep(_BACKOFF_S[min(attempt, len(_BACKOFF_S) - 1)])
            attempt += 1

    async def _send(
        self,
        leader: int,
        tp: TopicPartition,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
    ) -> int:
        topic, partition = tp
        target = self._local.running(leader)
        if target is not None:
            return await apply_marker(
                target,
                topic,
                partition,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                coordinator_epoch=coordinator_epoch,
                commit=commit,
            )
        endpoint = self._peers.endpoint_of(self._image, leader)
        if endpoint is None:
            return ec.LEADER_NOT_AVAILABLE
        request = WriteTxnMarkersRequest(
            markers=[
                WritableTxnMarker(
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    transaction_result=commit,
                    topics=[WritableTxnMarkerTopic(name=topic, partition_indexes=[partition])],
                    coordinator_epoch=coordinator_epoch,
                )
            ]
        )
        # v1 (flexible) since 2.8 (KIP-590's flexible versions); before, v0.
        version = 1 if release_at_least(self._release, (2, 8)) else 0
        try:
            response = await self._peers.send(*endpoint, version, request)
        except peer_client.PeerAuthenticationFailed as e:
            self._log.error(
                "txn.marker_failed",
                topic=topic,
                partition=partition,
                leader=leader,
                error=e.error,
                message=str(e),
            )
            return ec.REQUEST_TIMED_OUT  # retried: the credentials may be fixed meanwhile
        except peer_client.PeerUnavailable as e:
            self._log.warning("txn.marker_unreachable", leader=leader, error=str(e))
            return ec.REQUEST_TIMED_OUT
        for marker in response.markers:
            for topic_result in marker.topics:
                for p in topic_result.partitions:
                    if (topic_result.name, p.partition_index) == tp:
                        return int(p.error_code)
        return ec.UNKNOWN_SERVER_ERROR
