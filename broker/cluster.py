"""zkbroker's public Python API: `Cluster`, one class for synchronous and asynchronous code.

`Cluster(**options)` takes the options of `zkbroker run` (`zkbroker.broker.settings.Settings`)
and starts an embedded ZooKeeper when given none. With `with` it runs on its own event loop in a
background thread and offers blocking methods (`cluster.brokers[1].stop()`); with `async with`
it runs on the caller's loop and offers coroutines (`astop()`); the other mode's methods raise.
It also offers `produce`/`records`/`committed_offsets`, `faults`, `security` and, for tests
that look inside, `engine` and `call`/`run_sync`. README "The Python API" has examples.

Not here: the cluster's behaviour (`zkbroker.broker.engine`), the pytest fixtures
(`zkbroker.broker.toolkit.pytest_plugin`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Self, TypeVar

from zkbroker.broker.asyncutil import AsyncStartStop, StartStop
from zkbroker.broker.engine import records as records_access
from zkbroker.broker.engine.engine import ClusterEngine
from zkbroker.broker.engine.thread import EngineThread
from zkbroker.broker.hooks.capture import CapturedRequest, RequestCapture
from zkbroker.broker.hooks.faults import Faults, SyncFaults
from zkbroker.broker.hooks.metrics import StatsdMetrics
from zkbroker.broker.protocol.records import Record
from zkbroker.broker.protocol.releases import parse_release
from zkbroker.broker.security.cluster_security import PreparedSecurity, Security
from zkbroker.broker.security.scram_users import add_scram_user
from zkbroker.broker.settings import Settings

__all__ = [
    "BrokerHandle",
    "Cluster",
    "settings_from_options",
]

T = TypeVar("T")


def settings_from_options(options: dict[str, Any]) -> Settings:
    """Settings from `Cluster(**options)`: `brokers=N` means ids 0..N-1, and a release may be
    given as text ("3.9")."""
    options = dict(options)
    brokers = options.pop("brokers", None)
    if brokers is not None:
        if "broker_ids" in options:
            raise ValueError("give brokers or broker_ids, not both")
        options["broker_ids"] = tuple(range(brokers))
    release = options.get("kafka_version")
    if isinstance(release, str):
        options["kafka_version"] = parse_release(release)
    # The keywords given are the user's server.properties lines (DescribeConfigs shows them).
    given = {
        key
        for key, names in (
            ("listeners", ("host", "port", "listener_name", "extra_listeners")),
            ("advertised.listeners", ("advertised_host", "advertised_listeners")),
        )
        if any(name in options for name in names)
    }
    options.setdefault("configured_keys", frozenset(given))
    return Settings(**options)


class BrokerHandle:
    """One broker of a `Cluster`: its address, and stop/start/restart."""

    def __init__(self, cluster: Cluster, broker_id: int) -> None:
        self._cluster = cluster
        self.broker_id = broker_id

    @property
    def host(self) -> str:
        return self._cluster._inner().brokers[self.broker_id].host

    @property
    def port(self) -> int:
        return self._cluster._inner().brokers[self.broker_id].port

    @property
    def running(self) -> bool:
        return self._cluster._inner().brokers[self.broker_id].running

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def stop(self) -> None:
        """Stop the broker: listener closed, `/brokers/ids/<id>` gone (blocking mode)."""
        self._cluster._thread_mode().stop_broker(self.broker_id)

    def start(self) -> None:
        """Start it again on the same port, with a new registration (blocking mode)."""
        self._cluster._thread_mode().start_broker(self.broker_id)

    def restart(self) -> None:
        self.stop()
        self.start()

    async def astop(self) -> None:
        await self._cluster._async_mode().stop_broker(self.broker_id)

    async def astart(self) -> None:
        await self._cluster._async_mode().start_broker(self.broker_id)

    async def arestart(self) -> None:
        await self.astop()
        await self.astart()

    def __repr__(self) -> str:
        return f"BrokerHandle({self.broker_id}, running={self.running})"


class Cluster(StartStop, AsyncStartStop):
    """A zkbroker cluster: `with Cluster(...)` or `async with Cluster(...)`."""

    def __init__(
        self, settings: Settings | None = None, *, security: Security | None = None, **options: Any
    ) -> None:
        if settings is not None and options:
            raise ValueError("give a Settings or options, not both")
        self.security: PreparedSecurity | None = None
        if security is not None:
            if settings is not None:
                raise ValueError("give security with options, not with a Settings")
            release = options.get("kafka_version")
            self.security = security.prepare(
                parse_release(release) if isinstance(release, str) else release
            )
            options["listener_name"] = self.security.listener_name
            options["broker_configs"] = (
                *tuple(options.get("broker_configs", ())),
                *self.security.broker_configs.items(),
            )
        try:
            self.settings = settings if settings is not None else settings_from_options(options)
        except BaseException:
            if self.security is not None:
                self.security.cleanup()
            raise
        self._thread: EngineThread | None = None
        self._async: ClusterEngine | None = None
        self.brokers = {b: BrokerHandle(self, b) for b in self.settings.broker_ids}

    # ---- lifecycle ---------------------------------------------------------------------

    def start(self) -> Self:
        """Start in blocking mode (what `with` does)."""
        if self._thread is not None or self._async is not None:
            raise RuntimeError("the cluster is already started")
        self._thread = EngineThread(self.settings).start()
        if self.security is not None:
            try:
                self._thread.call(_install_users(self._thread.cluster, self.security))
            except BaseException:
                self.stop()
                raise
        return self

    def stop(self) -> None:
        if self._thread is not None:
            thread, self._thread = self._thread, None
            thread.stop()
        if self.security is not None:
            self.security.cleanup()

    async def astart(self) -> Self:
        """Start in asyncio mode on the running loop (what `async with` does)."""
        if self._thread is not None or self._async is not None:
            raise RuntimeError("the cluster is already started")
        cluster = ClusterEngine(self.settings)
        await cluster.start()
        self._async = cluster
        if self.security is not None:
            try:
                await _install_users(cluster, self.security)
            except BaseException:
                await self.astop()
                raise
        return self

    async def astop(self) -> None:
        if self._async is not None:
            cluster, self._async = self._async, None
            await cluster.stop()
        if self.security is not None:
            self.security.cleanup()

    # ---- what a test reads ---------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """The running brokers' addresses, `host:port,...`."""
        return self._inner().bootstrap_servers

    def bootstrap_servers_of(self, listener: str) -> str:
        """The running brokers' addresses on one listener (`extra_listeners`, `--listener`)."""
        brokers = self._inner().brokers
        return ",".join(
            f"{ep.host}:{ep.port}"
            for _, b in sorted(brokers.items())
            if b.running
            for ep in b.broker_info().endpoints
            if ep.listener == listener
        )

    @property
    def zookeeper_connect(self) -> str:
        return self._inner().zookeeper_connect

    @property
    def controller_id(self) -> int:
        """The controller's broker id as this process last saw it (-1 while none)."""
        return self._inner().controller_id

    @property
    def faults(self) -> Faults | SyncFaults:
        """Fault injection: blocking methods in `with` mode, coroutines in `async with` mode."""
        if self._thread is not None:
            return self._thread.faults
        return self._async_mode().faults

    @property
    def metrics(self) -> StatsdMetrics | None:
        """The StatsD sender when started with `statsd="host:port"` (e.g. its `dropped`
        counter), else None."""
        return self._inner().metrics

    def capture(self) -> RequestCapture:
        """Start keeping every request in memory (idempotent); see `requests()`."""
        if self._thread is not None:
            return self._thread.capture()
        return self._async_mode().capture()

    def requests(
        self,
        api: str | None = None,
        client_id: str | None = None,
        broker_id: int | None = None,
        version: int | None = None,
    ) -> list[CapturedRequest]:
        """Captured requests matching every filter given, oldest first."""
        if self._thread is not None:
            return self._thread.requests(
                api=api, client_id=client_id, broker_id=broker_id, version=version
            )
        return self._async_mode().requests(
            api=api, client_id=client_id, broker_id=broker_id, version=version
        )

    def clear_requests(self) -> None:
        if self._thread is not None:
            self._thread.run_sync(self._thread.cluster.clear_requests)
        else:
            self._async_mode().clear_requests()

    # ---- records -------------------------------------------------------------------------

    def produce(
        self,
        topic: str,
        value: bytes | None,
        *,
        key: bytes | None = None,
        partition: int = 0,
        headers: Sequence[tuple[str, bytes | None]] = (),
    ) -> int:
        """Produce one record as a client would (the leader's Produce handler, acks=-1) and
        return its offset (blocking mode). Raises `ProduceFailed` with Kafka's error code."""
        engine = self._thread_mode()
        return engine.call(engine.cluster.produce(topic, partition, [(key, value, headers)]))

    async def aproduce(
        self,
        topic: str,
        value: bytes | None,
        *,
        key: bytes | None = None,
        partition: int = 0,
        headers: Sequence[tuple[str, bytes | None]] = (),
    ) -> int:
        """`produce` for `async with` mode."""
        return await self._async_mode().produce(topic, partition, [(key, value, headers)])

    def records(self, topic: str, partition: int = 0) -> list[Record]:
        """Every record the partition holds (from its log start offset, transaction markers
        left out): offset, timestamp, key, value, headers. Either mode."""
        if self._thread is not None:
            thread = self._thread
            return thread.run_sync(lambda: thread.cluster.records(topic, partition))
        return self._async_mode().records(topic, partition)

    def committed_offsets(self, group: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets, `{(topic, partition): offset}`, as its coordinator
        answers OffsetFetch (blocking mode). Raises `OffsetsUnavailable` with Kafka's error
        code when no broker of this process coordinates the group."""
        engine = self._thread_mode()
        return engine.call(records_access.committed_offsets(engine.cluster.brokers, group))

    async def acommitted_offsets(self, group: str) -> dict[tuple[str, int], int]:
        """`committed_offsets` for `async with` mode."""
        return await records_access.committed_offsets(self._async_mode().brokers, group)

    # ---- what a test drives ------------------------------------------------------------

    @property
    def engine(self) -> ClusterEngine:
        """The engine under this cluster (`image`, `hooks`, `brokers`, `settings`), for tests
        that look inside. Read it on the cluster's loop (`run_sync`) in `with` mode."""
        return self._inner()

    def stop_broker(self, broker_id: int) -> None:
        """`brokers[broker_id].stop()`: returns once it is deregistered (blocking mode);
        ValueError for an id this cluster does not run."""
        self._thread_mode().stop_broker(broker_id)

    def start_broker(self, broker_id: int) -> None:
        """`brokers[broker_id].start()`: returns once it is registered (blocking mode);
        ValueError for an id this cluster does not run."""
        self._thread_mode().start_broker(broker_id)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = 60.0) -> T:
        """Run `coro` on the cluster's loop and wait for its result (blocking mode)."""
        return self._thread_mode().call(coro, timeout)

    def run_sync(self, fn: Callable[[], T], timeout: float | None = 60.0) -> T:
        """Run a plain function on the cluster's loop, to read its state consistently
        (blocking mode)."""
        return self._thread_mode().run_sync(fn, timeout)

    # ---- modes ---------------------------------------------------------------------------

    def _inner(self) -> ClusterEngine:
        if self._thread is not None:
            return self._thread.cluster
        if self._async is not None:
            return self._async
        raise RuntimeError("the cluster is not started (use `with` or `async with`)")

    def _thread_mode(self) -> EngineThread:
        if self._thread is None:
            raise RuntimeError(
                "blocking methods need `with Cluster(...)`; in `async with` use the a-methods"
            )
        return self._thread

    def _async_mode(self) -> ClusterEngine:
        if self._async is None:
            raise RuntimeError(
                "coroutine methods need `async with Cluster(...)`; in `with` use the blocking ones"
            )
        return self._async


async def _install_users(engine: ClusterEngine, prepared: PreparedSecurity) -> None:
    """Write the SCRAM users of `Cluster(security=...)` (as kafka-configs would) and wait
    until every running broker's credential cache holds them."""
    security = prepared.security
    mechanisms = security.scram_mechanisms
    if not mechanisms or not security.users:
        return
    nodes = [b for b in engine.brokers.values() if b.running]
    store = nodes[0].store
    release = engine.settings.kafka_version
    for user, password in security.users.items():
        await add_scram_user(
            store, user, dict.fromkeys(mechanisms, password), release, security.scram_iterations
        )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while not all(
        b.knows_scram_credential(u, m) for b in nodes for u in security.users for m in mechanisms
    ):
        if loop.time() > deadline:
            raise TimeoutError("the brokers did not load the SCRAM users within 30 s")
        await asyncio.sleep(0.01)
