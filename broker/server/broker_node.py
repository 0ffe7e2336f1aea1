"""One broker of the cluster: its listeners, its own ZooKeeper session, its registration.

As in Kafka, each broker has its own session: its ephemeral `/brokers/ids/<id>` and, when it
wins, `/controller` live and die with it, so stopping a broker looks to the rest of the cluster
exactly like a Kafka broker stopping. Start order follows `KafkaServer.startup` (session,
listeners bound, registration, controller elector); on session expiry the controller it held
resigns at once and it registers and runs the election again on the new session (docs/kafka-
behaviour.md §10.1). A restart keeps the id and the first bound port, with a new session and
broker epoch. Each listener gets its own server and endpoint; SCRAM listeners share the
broker's credential cache (`zkbroker.broker.security.credential_cache`), TLS contexts are
rebuilt at every start.

Not here: request handling (`zkbroker.broker.server.listener`, `handlers`), cluster-wide set-up
such as top-level paths and the cluster id (`zkbroker.broker.engine.engine`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os

from zkbroker.broker.controller.controller import Controller, ControllerElector, EventObserver
from zkbroker.broker.groups.coordinator import GroupCoordinator
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.broker.peers.client import PeerClient
from zkbroker.broker.replication.fault_view import ReplicationFaultView
from zkbroker.broker.replication.local_source import LeaderView
from zkbroker.broker.replication.replica_config import ReplicaConfig
from zkbroker.broker.replication.replica_manager import ReplicaManager
from zkbroker.broker.rules.broker_config import BrokerConfig
from zkbroker.broker.rules.broker_loggers import BrokerLoggers
from zkbroker.broker.rules.fetch_sessions import FetchSessionCache
from zkbroker.broker.rules.groups.config import group_config
from zkbroker.broker.security import oauthbearer_jwks
from zkbroker.broker.security.authorizer import AclAuthorizer, authorizer_configured, config_from
from zkbroker.broker.security.credential_cache import CredentialCache
from zkbroker.broker.security.delegation_tokens import DelegationTokenManager, TokenConfig
from zkbroker.broker.security.oauthbearer import JwksOptions
from zkbroker.broker.security.quotas import QuotaManagerSlot
from zkbroker.broker.security.tls import server_context
from zkbroker.broker.server.hooks import HookChain
from zkbroker.broker.server.listener import BrokerServer
from zkbroker.broker.server.producer_ids import ProducerIdAllocator
from zkbroker.broker.settings import Settings
from zkbroker.broker.storage import LogManager
from zkbroker.broker.transactions.config import txn_config
from zkbroker.broker.transactions.coordinator import TransactionCoordinator
from zkbroker.broker.transactions.local_brokers import LocalBrokers
from zkbroker.handlers.registry import ApiTable, api_table
from zkbroker.zk_layout import DEFAULT_ENTITY, BrokerInfo, Endpoint, ZkStore
from zkbroker.zk_layout.store import SessionState


class BrokerNode:
    """Implements `zkbroker.handlers.context.BrokerView` for the broker's requests."""

    def __init__(
        self,
        broker_id: int,
        settings: Settings,
        image: MetadataImage,
        hooks: HookChain | None = None,
        controller_events: EventObserver | None = None,
        logs: LogManager | None = None,
        local_brokers: LocalBrokers | None = None,
        local_replicas: dict[int, LeaderView] | None = None,
        replication_faults: ReplicationFaultView | None = None,
    ) -> None:
        self._hooks = hooks
        # This broker's own partition logs, one per replica it hosts.
        self._logs = logs if logs is not None else LogManager(None, release=settings.kafka_version)
        # The brokers of the process sharing those logs (the engine's), for the transaction
        # coordinator's direct marker writes and verifications.
        self._local_brokers = local_brokers if local_brokers is not None else LocalBrokers()
        self._fetch_sessions = FetchSessionCache()
        # Client quotas (`zkbroker.broker.security.quotas`): this broker's sensors and buckets.
        self.quota_slot = QuotaManagerSlot()
        self._producer_ids = ProducerIdAllocator(broker_id)
        # Told the name and timing of every event of the controller this broker may hold.
        self._controller_events = controller_events
        self._broker_id = broker_id
        self._settings = settings
        self._image = image
        self._api_table = api_table(settings.kafka_version)
        self._store: ZkStore | None = None
        self._server: BrokerServer | None = None
        self._credentials: CredentialCache | None = None
        self._jwks: list[JwksOptions] = []
        # Delegation tokens (KIP-48): loaded and followed while the broker runs.
        self._tokens: DelegationTokenManager | None = None
        # The ACL authorizer (authorizer.class.name), started with the broker.
        self._authorizer: AclAuthorizer | None = None
        # Listeners after the first (Settings.extra_listeners), by name.
        self._extra_servers: dict[str, BrokerServer] = {}
        self._extra_bound: dict[str, int] = {}
        self._elector: ControllerElector | None = None
        self.broker_epoch = -1
        # The port the listener bound at its first start; later starts bind it again, so a
        # restarted broker is where clients and /brokers/ids knew it (settings.port may be 0).
        self._bound_port: int | None = None
        self._reregistration: asyncio.Task[None] | None = None
        self._auto_create_in_flight: set[str] = set()
        self._static_configs: dict[str, str] = {}
        self._broker_config: BrokerConfig | None = None
        self._broker_config_version = -1
        self._loggers = BrokerLoggers(settings.kafka_version)
        self._log = get_logger(__name__).bind(broker_id=broker_id)
        # Its replicas; `local_replicas` (every broker of the process by id) lets followers
        # fetch from a leader of this process without a socket.
        self._replica_peers: PeerClient | None = None
        self._replicas = self._new_replica_manager(image, local_replicas, replication_faults)
        # The classic group coordinator: its groups live in the shared logs of
        # __consumer_offsets; started and stopped with the broker.
        self._group_coordinator = self._new_group_coordinator()
        # The transaction coordinator: __transaction_state in the same shared logs.
        self._transaction_coordinator = self._new_transaction_coordinator()

    # ---- BrokerView --------------------------------------------------------------------

    @property
    def broker_id(self) -> int:
        return self._broker_id

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def image(self) -> MetadataImage:
        return self._image

    @property
    def api_table(self) -> ApiTable:
        return self._api_table

    @property
    def store(self) -> ZkStore:
        if self._store is None:
            raise RuntimeError(f"broker {self._broker_id} is not running")
        return self._store

    @property
    def delegation_tokens(self) -> DelegationTokenManager | None:
        return self._tokens

    @property
    def authorizer(self) -> AclAuthorizer | None:
        return self._authorizer

    @property
    def is_controller(self) -> bool:
        return self._elector is not None and self._elector.is_active

    @property
    def controller(self) -> Controller | None:
        return self._elector.controller if self.is_controller and self._elector else None

    @property
    def auto_create_in_flight(self) -> set[str]:
        return self._auto_create_in_flight

    @property
    def broker_config(self) -> BrokerConfig:
        # Rebuilt only when the image's dynamic broker configs change.
        version = self._image.broker_configs_version
        if self._broker_config is None or self._broker_config_version != version:
            overrides = self._image.broker_configs
            self._broker_config = BrokerConfig.build(
                self._broker_id,
                self._settings.kafka_version,
                self._static_configs,
                overrides.get(DEFAULT_ENTITY, {}),
                overrides.get(str(self._broker_id), {}),
            )
            self._broker_config_version = version
        return self._broker_config

    @property
    def broker_loggers(self) -> BrokerLoggers:
        return self._loggers

    def reset_loggers(self) -> None:
        """Log levels back to the release's stock ones (as a restarted broker has them)."""
        self._loggers = BrokerLoggers(self._settings.kafka_version)

    # ---- lifecycle ---------------------------------------------------------------------

    @property
    def logs(self) -> LogManager:
        return self._logs

    @property
    def replica_manager(self) -> ReplicaManager:
        return self._replicas

    def _new_replica_manager(
        self,
        image: MetadataImage,
        local_replicas: dict[int, LeaderView] | None,
        faults: ReplicationFaultView | None,
    ) -> ReplicaManager:
        replicas = ReplicaManager(
            self._broker_id,
            self._logs,
            image,
            self._settings.kafka_version,
            lambda: ReplicaConfig.read(self.broker_config.configured),
            local_replicas if local_replicas is not None else {},
            self._replication_peers,
            faults,
        )
        if local_replicas is not None:
            local_replicas[self._broker_id] = replicas
        return replicas

    def _replication_peers(self) -> PeerClient:
        """The inter-broker client of this broker's fetchers and ISR writes (made on first use,
        closed when the broker stops)."""
        if self._replica_peers is None:
            self._replica_peers = PeerClient(
                self._settings.inter_broker_security(),
                client_id=f"broker-{self._broker_id}-replica-fetcher",
            )
        return self._replica_peers

    @property
    def fetch_sessions(self) -> FetchSessionCache:
        return self._fetch_sessions

    async def next_producer_id(self) -> int:
        return await self._producer_ids.next_id(self.store)

    @property
    def group_coordinator(self) -> GroupCoordinator:
        return self._group_coordinator

    def _new_group_coordinator(self) -> GroupCoordinator:
        return GroupCoordinator(
            self._broker_id,
            self._image,
            self._logs,
            self._settings.kafka_version,
            lambda: group_config(self.broker_config.configured),
            self._replicas,
        )

    @property
    def transaction_coordinator(self) -> TransactionCoordinator:
        return self._transaction_coordinator

    def _new_transaction_coordinator(self) -> TransactionCoordinator:
        return TransactionCoordinator(
            self._broker_id,
            self._image,
            self._logs,
            self._settings.kafka_version,
            lambda: txn_config(self.broker_config.configured, self._settings.kafka_version),
            self.next_producer_id,
            self._settings.inter_broker_security(),
            self._local_brokers,
            self._replicas,
        )

    def knows_scram_credential(self, user: str, mechanism: str) -> bool:
        """Whether this broker's credential cache holds `user`'s credential (for tests and
        `Cluster(security=...)`, which wait for a credential written to take effect)."""
        return self._credentials is not None and self._credentials.get(user, mechanism) is not None

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def port(self) -> int:
        if self._server is not None:
            return self._server.port
        if self._bound_port is not None:
            return self._bound_port
        return self._settings.port_of(self._broker_id)

    @property
    def host(self) -> str:
        return self._settings.public_host

    @property
    def ports(self) -> dict[str, int]:
        """Every listener's port by name, the first listener first."""
        ports = {self._settings.listener_name: self.port}
        for name, _, _ in self._settings.extra_listeners:
            server = self._extra_servers.get(name)
            bound = self._extra_bound.get(name)
            if server is not None:
                ports[name] = server.port
            elif bound is not None:
                ports[name] = bound
            else:
                ports[name] = self._settings.port_of(self._broker_id, name)
        return ports

    @property
    def open_connections(self) -> int:
        """Client connections its listeners serve now (0 while stopped)."""
        servers = [self._server, *self._extra_servers.values()]
        return sum(s.open_connections for s in servers if s is not None)

    @property
    def rack(self) -> str | None:
        return self._settings.rack_of(self._broker_id)

    @property
    def elector(self) -> ControllerElector | None:
        return self._elector

    async def connect_session(self, zookeeper: str) -> ZkStore:
        """A new ZooKeeper session with this broker's settings (what `start` uses)."""
        settings = self._settings
        return await ZkStore.connect(
            zookeeper,
            session_timeout=settings.zk_session_timeout_s,
            max_buffer_bytes=settings.zookeeper_max_buffer_bytes,
            auth=settings.zookeeper_auth,
        )

    async def start(
        self, zookeeper: str, session: ZkStore | None = None, *, elect: bool = True
    ) -> None:
        """Start (or start again after `stop()`); the caller makes sure it is not running.
        `session`: one `connect_session` opened ahead (the cluster opens its brokers' at
        once); this broker owns it from now on. `elect=False` leaves joining the controller
        election to `join_election()`, once the caller has registered its other brokers."""
        settings = self._settings
        # In-memory state of a previous run must not leak into this one: a Kafka broker
        # restarts with its log4j levels from the properties and nothing in flight.
        self.broker_epoch = -1
        self._auto_create_in_flight = set()
        self._loggers = BrokerLoggers(settings.kafka_version)
        self._broker_config = None
        self._store = session if session is not None else await self.connect_session(zookeeper)
        try:
            await self._start_security(self._store)
            port = await self._start_listeners()
            self._static_configs = settings.static_broker_configs(
                self._broker_id, port, zookeeper, dict(self._extra_bound)
            )
            if self._logs.log_dir is not None:
                # This broker's own log dir (`--log-dir` itself, or its broker-<id> there).
                self._static_configs["log.dirs"] = os.path.abspath(self._logs.log_dir)
            await self._register()
            await self._replicas.start(lambda: self.store, lambda: self.broker_epoch)
            self._store.add_session_listener(self._on_session_state)
            if elect:
                await self.join_election()
            # A restarted broker starts with no group in memory and loads what it leads.
            self._group_coordinator = self._new_group_coordinator()
            await self._group_coordinator.start()
            self._transaction_coordinator = self._new_transaction_coordinator()
            await self._transaction_coordinator.start()
            self._local_brokers.register(self._broker_id, self)
        except BaseException:
            await self.stop()
            raise
        self._log.info("broker.started", port=self.port, broker_epoch=self.broker_epoch)

    async def join_election(self) -> None:
        """Stand for controller (Kafka's KafkaController.startup, after the registration)."""
        assert self._store is not None and self._elector is None
        self._elector = ControllerElector(
            self._broker_id, self._store, self._settings, self._image, self._controller_events
        )
        await self._elector.start()

    async def _start_security(self, store: ZkStore) -> None:
        """What the listeners authenticate and authorize with: the SCRAM credential cache
        (when a listener enables SCRAM), the delegation tokens, the ACL authorizer (when
        configured), and the OAUTHBEARER listeners' JWKS keys."""
        settings = self._settings
        securities = {name: settings.security_of(name) for name, _, _ in settings.listeners}
        if any(m.startswith("SCRAM-") for sec in securities.values() for m in sec.mechanisms):
            self._credentials = CredentialCache(
                store, settings.kafka_version, feed=self._image.client_quotas
            )
            await self._credentials.start()
        self._tokens = DelegationTokenManager(
            store,
            TokenConfig.from_configs(dict(settings.broker_configs), settings.kafka_version),
            settings.kafka_version,
            is_controller=lambda: self.is_controller,
            broker_id=self._broker_id,
        )
        await self._tokens.start()
        configs = dict(settings.broker_configs)
        if authorizer_configured(configs):
            self._authorizer = AclAuthorizer(
                store,
                config_from(configs),
                # Prefixed ACLs need inter.broker.protocol.version 2.0+ (KIP-290).
                extended_acl_support=settings.kafka_version >= (2, 0),
                broker_id=self._broker_id,
            )
            await self._authorizer.start()
        # KIP-768: the JWKS keys are loaded before any listener serves (a failure stops
        # the start, as Kafka's validator fails the broker's configure).
        for sec in securities.values():
            jwks = sec.oauthbearer.jwks if sec.oauthbearer is not None else None
            if jwks is not None:
                await oauthbearer_jwks.acquire(jwks)
                self._jwks.append(jwks)

    async def _start_listeners(self) -> int:
        """Every listener's server, on the port it bound before when it restarts (the first
        listener first); the first listener's port."""
        settings = self._settings
        port = self._bound_port
        self._server = self._new_server(
            settings.listener_name,
            settings.host,
            settings.port_of(self._broker_id) if port is None else port,
        )
        self._bound_port = await self._server.start()
        for name, host, _ in settings.extra_listeners:
            bound = self._extra_bound.get(name)
            server = self._new_server(
                name, host, settings.port_of(self._broker_id, name) if bound is None else bound
            )
            self._extra_servers[name] = server
            self._extra_bound[name] = await server.start()
        return self._server.port

    def _new_server(self, listener: str, host: str, port: int) -> BrokerServer:
        security = self._settings.security_of(listener)
        return BrokerServer(
            self,
            self._api_table,
            host,
            port,
            max_request_bytes=self._settings.max_request_bytes,
            listener_name=listener,
            hooks=self._hooks,
            security=security,
            ssl_context=server_context(security.configs) if security.tls else None,
            credentials=self._credentials.get if self._credentials is not None else None,
        )

    async def stop(self) -> None:
        """Stop the elector, the listener and the session; each step runs even if one fails."""
        if self._reregistration is not None:
            # It would register on whatever session the broker has when it resumes: none, or
            # the next run's (which registers itself).
            self._reregistration.cancel()
            self._reregistration = None
        try:
            self._local_brokers.unregister(self._broker_id, self)
            await self._transaction_coordinator.stop()
            await self._group_coordinator.stop()
            await self.leave_controller_election()
            await self._replicas.stop()
            if self._replica_peers is not None:
                peers, self._replica_peers = self._replica_peers, None
                await peers.close()
        finally:
            try:
                extra, self._extra_servers = list(self._extra_servers.values()), {}
                if self._server is not None:
                    server, self._server = self._server, None
                    await server.stop()
                for other in extra:
                    with contextlib.suppress(Exception):
                        await other.stop()
            finally:
                if self._credentials is not None:
                    credentials, self._credentials = self._credentials, None
                    with contextlib.suppress(Exception):
                        await credentials.stop()
                if self._tokens is not None:
                    tokens, self._tokens = self._tokens, None
                    with contextlib.suppress(Exception):
                        await tokens.stop()
                if self._authorizer is not None:
                    authorizer, self._authorizer = self._authorizer, None
                    with contextlib.suppress(Exception):
                        await authorizer.stop()
                jwks_options, self._jwks = self._jwks, []
                for jwks in jwks_options:
                    with contextlib.suppress(Exception):
                        await oauthbearer_jwks.release(jwks)
                if self._store is not None:
                    # Closing the session removes /brokers/ids/<id> (and /controller if held).
                    store, self._store = self._store, None
                    self.broker_epoch = -1
                    await store.close()
                    self._log.info("broker.stopped")

    async def leave_controller_election(self) -> None:
        """Stop contending for /controller (and resign it if held); the broker serves on."""
        if self._elector is not None:
            elector, self._elector = self._elector, None
            await elector.stop()

    def broker_info(self) -> BrokerInfo:
        """The registration: one endpoint per listener, in `listeners` order, with its
        protocol (Kafka writes them and listener_security_protocol_map from 0.10.2)."""
        settings = self._settings
        endpoints = tuple(
            Endpoint(name, host, port, settings.security_of(name).protocol)
            for name, host, port in settings.advertised_endpoints(self._broker_id, self.ports)
        )
        return BrokerInfo.create(self._broker_id, endpoints, rack=self.rack)

    async def _register(self) -> None:
        self.broker_epoch = await self.store.register_broker(
            self.broker_info(), self._settings.kafka_version
        )

    def _on_session_state(self, state: SessionState) -> None:
        # The session expired: the controller resigns first, synchronously, so it handles no
        # event of the new session (Kafka's processExpire).
        if state is SessionState.LOST and self._elector is not None:
            self._elector.session_lost()
        # A new session after expiry: our ephemeral nodes are gone; register again.
        if state is SessionState.RECONNECTED_NEW_SESSION and self._server is not None:
            task = asyncio.get_running_loop().create_task(self._reregister())
            self._reregistration = task
            task.add_done_callback(self._reregistration_done)

    def _reregistration_done(self, task: asyncio.Task[None]) -> None:
        if self._reregistration is task:
            self._reregistration = None

    async def _reregister(self) -> None:
        try:
            await self._register()
            self._log.warning("broker.reregistered", broker_epoch=self.broker_epoch)
            if self._elector is not None:
                await self._elector.session_renewed()
        except Exception:
            self._log.exception("broker.reregistration_failed")
            if self._elector is not None:
                # Elections resume anyway: a cluster must not wait for this broker forever.
                with contextlib.suppress(Exception):
                    await self._elector.session_renewed()
