"""The running brokers of this process, for the transaction coordinator's shortcuts.

Brokers of one ``Cluster`` in one process share one ``LogManager`` (``zkbroker.broker.storage``).
When a transaction's partition is led by such a broker, the coordinator hands it the marker directly
(``zkbroker.broker.transactions.markers.apply_marker``), and a KIP-890 verification goes straight to
the id's coordinator, instead of a round trip over TCP; the effect on the leader's log is the same.
Brokers register when they start and leave when they stop, so a stopped broker is reached (or
not) exactly as over the network.

One `LocalBrokers` belongs to the engine that runs the brokers (``zkbroker.broker.engine``) and is
handed to each of them; a broker started alone gets one of its own. There is no process-wide
registry: two clusters in one process never see each other's brokers.

Deliberately not here: which broker leads what (the metadata image), the marker itself.
"""

from __future__ import annotations

from typing import Any


class LocalBrokers:
    """Broker id -> running broker (a ``BrokerNode``) among the brokers of one engine."""

    def __init__(self) -> None:
        self._running: dict[int, Any] = {}

    def register(self, broker_id: int, broker: Any) -> None:
        self._running[broker_id] = broker

    def unregister(self, broker_id: int, broker: Any) -> None:
        # Only the registration it made: a restarted broker may have registered anew.
        if self._running.get(broker_id) is broker:
            del self._running[broker_id]

    def running(self, broker_id: int) -> Any | None:
        """The running broker `broker_id`, None when it is not one of these or is stopped."""
        return self._running.get(broker_id)
