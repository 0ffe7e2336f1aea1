"""Asking a transaction coordinator in another process whether partitions are in a transaction.

KIP-890 part 1 (3.6+; docs/kafka-behaviour.md §17): when a transactional id's coordinator runs
in another zkbroker process, a partition leader asks it with AddPartitionsToTxn v4
``verify_only`` on its inter-broker listener, over its own connection (Kafka's
``AddPartitionsToTxnManager`` has a NetworkClient of its own, apart from the marker channel's).
The answers are the coordinator's codes per partition; a coordinator without an endpoint answers
COORDINATOR_NOT_AVAILABLE, an unreachable one NETWORK_EXCEPTION (a disconnect or timeout there),
a refused login its SASL error (UNKNOWN_SERVER_ERROR for TLS: ``Errors.forException``).

Not here: which broker coordinates the id and the shortcut to a coordinator of this process
(``zkbroker.broker.transactions.coordinator``), mapping the codes for the producer
(``zkbroker.broker.rules.transactions.verification``), the connection itself
(``zkbroker.broker.peers.client``).
"""

from __future__ import annotations

from typing import Any

from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.peers import client as peer_client
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from zkbroker.broker.rules.transactions.state import TopicPartition
from zkbroker.broker.security.inter_broker import InterBrokerSecurity

#: AddPartitionsToTxn's first version with ``verify_only``.
_VERIFY_VERSION = 4


class VerifySender:
    """One broker's channel for verification requests to other processes' coordinators."""

    def __init__(
        self, broker_id: int, image: MetadataImage, inter_broker: InterBrokerSecurity, log: Any
    ) -> None:
        self._image = image
        self._peers = peer_client.PeerClient(
            inter_broker, client_id=f"broker-{broker_id}-add-partitions-to-txn-sender"
        )
        self._log = log

    async def close(self) -> None:
        """Close the connections to other processes' coordinators."""
        await self._peers.close()

    async def verify(
        self,
        coordinator: int,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
    ) -> dict[TopicPartition, int]:
        """Ask broker `coordinator`; partition -> its code."""
        endpoint = self._peers.endpoint_of(self._image, coordinator)
        if endpoint is None:
            return dict.fromkeys(partitions, ec.COORDINATOR_NOT_AVAILABLE)
        request = _request(transactional_id, producer_id, producer_epoch, partitions)
        try:
            response = await self._peers.send(*endpoint, _VERIFY_VERSION, request)
        except peer_client.PeerAuthenticationFailed as e:
            self._log.error(
                "txn.verify_failed", coordinator=coordinator, error=e.error, message=str(e)
            )
            # Errors.forException: the SASL errors have codes; a TLS failure has none.
            code = getattr(ec, e.error, None)
            if not isinstance(code, int):
                code = ec.UNKNOWN_SERVER_ERROR
            return dict.fromkeys(partitions, code)
        except peer_client.PeerUnavailable as e:
            self._log.warning("txn.verify_unreachable", coordinator=coordinator, error=str(e))
            return dict.fromkeys(partitions, ec.NETWORK_EXCEPTION)
        return _answers(response, partitions)


def _request(
    transactional_id: str, producer_id: int, producer_epoch: int, partitions: list[TopicPartition]
) -> AddPartitionsToTxnRequest:
    by_topic: dict[str, list[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(index)
    return AddPartitionsToTxnRequest(
        transactions=[
            AddPartitionsToTxnTransaction(
                transactional_id=transactional_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                verify_only=True,
                topics=[AddPartitionsToTxnTopic(name=t, partitions=p) for t, p in by_topic.items()],
            )
        ]
    )


def _answers(
    response: AddPartitionsToTxnResponse, partitions: list[TopicPartition]
) -> dict[TopicPartition, int]:
    """The response's code of each partition asked about; a top-level error answers all, and a
    partition the answer leaves out is UNKNOWN_SERVER_ERROR."""
    if response.error_code != ec.NONE:
        return dict.fromkeys(partitions, response.error_code)
    answers: dict[TopicPartition, int] = {}
    for result in response.results_by_transaction:
        for topic_result in result.topic_results:
            for p in topic_result.results_by_partition:
                answers[(topic_result.name, p.partition_index)] = p.partition_error_code
    return {tp: answers.get(tp, ec.UNKNOWN_SERVER_ERROR) for tp in partitions}
