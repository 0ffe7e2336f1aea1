"""What a handler sees of the broker that received a request.

`RequestContext` bundles the decoded header, the receiving broker (through the small
`BrokerView` protocol, so handlers depend on an interface, not on the server package),
and the connection the request came in on.

Deliberately not here: the handler table (`zkbroker.handlers.registry`) and any I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from zkbroker.broker.protocol import RequestHeader
from zkbroker.broker.rules.client_software import registered_software

if TYPE_CHECKING:
    from zkbroker.broker.controller.controller import Controller
    from zkbroker.broker.groups.coordinator import GroupCoordinator
    from zkbroker.broker.image.metadata_image import MetadataImage
    from zkbroker.broker.replication.replica_manager import ReplicaManager
    from zkbroker.broker.rules.broker_config import BrokerConfig
    from zkbroker.broker.rules.broker_loggers import BrokerLoggers
    from zkbroker.broker.rules.fetch_sessions import FetchSessionCache
    from zkbroker.broker.security.authorizer import AclAuthorizer
    from zkbroker.broker.security.delegation_tokens import DelegationTokenManager
    from zkbroker.broker.settings import Settings
    from zkbroker.broker.storage import LogManager
    from zkbroker.broker.transactions.coordinator import TransactionCoordinator
    from zkbroker.zk_layout.store import ZkStore


class AdvertisedApis(Protocol):
    """The API versions the receiving broker advertises (`zkbroker.handlers.registry.ApiTable`)."""

    @property
    def ranges(self) -> Mapping[int, tuple[int, int]]: ...


class BrokerView(Protocol):
    """The receiving broker, as handlers use it."""

    @property
    def broker_id(self) -> int: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def image(self) -> MetadataImage: ...

    @property
    def api_table(self) -> AdvertisedApis: ...

    @property
    def store(self) -> ZkStore: ...

    @property
    def is_controller(self) -> bool: ...

    @property
    def controller(self) -> Controller | None:
        """The active controller when this broker holds it, for handlers that feed it."""
        ...

    @property
    def auto_create_in_flight(self) -> set[str]:
        """Topics this broker is auto-creating right now (Kafka's inflightTopics)."""
        ...

    @property
    def broker_config(self) -> BrokerConfig:
        """This broker's static and dynamic configuration, as it applies them now."""
        ...

    @property
    def broker_loggers(self) -> BrokerLoggers:
        """This broker's log4j logger levels (BROKER_LOGGER resources)."""
        ...

    @property
    def logs(self) -> LogManager:
        """This broker's partition logs, one per replica it hosts (`zkbroker.broker.storage`)."""
        ...

    @property
    def replica_manager(self) -> ReplicaManager:
        """This broker's replicas: leadership, followers, the high watermark, acks=all."""
        ...

    @property
    def fetch_sessions(self) -> FetchSessionCache:
        """This broker's incremental fetch sessions (KIP-227)."""
        ...

    @property
    def group_coordinator(self) -> GroupCoordinator:
        """This broker's classic group coordinator (`zkbroker.broker.groups.coordinator`)."""
        ...

    @property
    def transaction_coordinator(self) -> TransactionCoordinator:
        """This broker's transaction coordinator (`zkbroker.broker.transactions.coordinator`)."""
        ...

    async def next_producer_id(self) -> int:
        """A producer id no other producer of the cluster got (ZooKeeper-claimed blocks)."""
        ...

    @property
    def delegation_tokens(self) -> DelegationTokenManager | None:
        """This broker's delegation token manager; None while the broker is not started."""
        ...

    @property
    def authorizer(self) -> AclAuthorizer | None:
        """This broker's ACL authorizer; None when no authorizer is configured."""
        ...


@dataclass(frozen=True)
class NoResponse:
    """A request Kafka does not answer: Produce with acks=0. With `close_reason`, the
    connection is closed instead, as Kafka does when such a request failed."""

    close_reason: str | None = None


@dataclass
class ConnectionInfo:
    """Per-connection facts a handler may read or record."""

    connection_id: str
    peer: str
    listener_name: str
    # Learnt from ApiVersions v3+ (KIP-511); None until the client says.
    client_software_name: str | None = None
    client_software_version: str | None = None
    # The authenticated principal (`User:ANONYMOUS` on PLAINTEXT, a certificate's on SSL,
    # `User:<name>` after SASL) and whether it logged in with a delegation token (SCRAM
    # `tokenauth=true`): Kafka's KafkaPrincipal.tokenAuthenticated.
    principal: str = "User:ANONYMOUS"
    token_authenticated: bool = False
    # Kafka's names for this connection (zkbroker.broker.rules.request_description): the network
    # processor its Acceptor would have chosen and SocketServer's `local-remote-index` id.
    processor: int = 0
    kafka_connection_id: str = ""

    def record_software(self, version: int, name: str, software_version: str) -> None:
        """Record the client software a valid ApiVersions v3+ request names (KIP-511; Kafka's
        network layer does it for every such request, before it is handled)."""
        software = registered_software(version, name, software_version)
        if software is not None:
            self.client_software_name, self.client_software_version = software


@dataclass
class RequestContext:
    header: RequestHeader
    broker: BrokerView
    connection: ConnectionInfo
    # The request's bytes after its size prefix (what Kafka's request buffer holds).
    size: int = 0

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def image(self) -> MetadataImage:
        return self.broker.image

    @property
    def release(self) -> tuple[int, ...]:
        return self.broker.settings.kafka_version
