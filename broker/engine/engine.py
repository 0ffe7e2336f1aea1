"""A cluster of N brokers in one process, on an embedded or an existing ZooKeeper.

`ClusterEngine.start()` uses `settings.zookeeper` or starts an `EmbeddedZooKeeper`, opens the
process's own session (Kafka's persistent paths, `/cluster/id`, the metadata and config-change
watchers, the fault injector `zkbroker.broker.hooks.faults`), starts the brokers in id order,
then `BrokerControl` (`zkbroker.broker.engine.broker_control`), which applies the desired state
of `/zkbroker/brokers/<id>` (`stop_broker` / `start_broker`). Processes on one ZooKeeper form
one cluster and share nothing else; a broker id held by a live broker raises
`BrokerIdInUseError` before anything is left behind.

Not here: command-line parsing (`zkbroker.broker.cli.main`), request handling, the public face
(`zkbroker.broker.cluster.Cluster`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from zkbroker.broker.asyncutil import cancel_and_wait
from zkbroker.broker.engine import records as records_access
from zkbroker.broker.engine.broker_control import BrokerControl
from zkbroker.broker.engine.log_retention import LogRetention
from zkbroker.broker.hooks.capture import CapturedRequest, RequestCapture
from zkbroker.broker.hooks.faults import FaultInjector, Faults
from zkbroker.broker.hooks.metrics import StatsdMetrics
from zkbroker.broker.image.config_watcher import ConfigWatcher
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.image.metadata_watcher import MetadataWatcher
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol.records import Record
from zkbroker.broker.replication.local_source import LeaderView
from zkbroker.broker.rules.broker_config import BrokerConfig
from zkbroker.broker.server.broker_node import BrokerNode
from zkbroker.broker.server.hooks import HookChain
from zkbroker.broker.settings import Settings
from zkbroker.broker.storage import LogManager, PartitionLog, log_dirs_of
from zkbroker.broker.transactions.local_brokers import LocalBrokers
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper
from zkbroker.zk_layout import BrokerState, ControllerMovedError, ZkStore

SLOW_STOP_STEP_S = 2.0
# How long start waits for this process's controller to finish failing over (it goes on after).
CONTROLLER_SETTLE_S = 30.0


async def _close_sessions(sessions: asyncio.Task[list[ZkStore]], log: Any) -> None:
    """Close what `ClusterEngine._open_sessions` opened and no broker took over. The task is
    cancelled if still running and waited for at most `CANCEL_WAIT_S` (`cancel_and_wait`: if
    it does not end, that is logged and it is left behind); the caller's own cancellation is
    raised."""
    await cancel_and_wait([sessions], what="zookeeper_sessions", log=log)
    if not sessions.done() or sessions.cancelled() or sessions.exception() is not None:
        return  # still running, cancelled, or failed (then it closed its own)
    for store in sessions.result():
        try:
            await store.close()
        except Exception:
            log.exception("zookeeper_session.close_failed")


def _broker_logs(settings: Settings) -> dict[int, LogManager]:
    """Each broker's logs: in memory, or under `settings.log_dir` (`log_dirs_of`: the dir
    itself for one broker, `broker-<id>` for several)."""
    release = settings.kafka_version
    if not settings.log_dir:
        return {b: LogManager(None, release=release) for b in settings.broker_ids}
    dirs = log_dirs_of(Path(settings.log_dir), settings.broker_ids)
    return {b: LogManager(dirs[b], release=release) for b in settings.broker_ids}


class ClusterEngine:
    """The brokers of this process, their ZooKeeper sessions, the metadata image and the
    toolkit hooks; `zkbroker.Cluster` is the public face over it."""

    def __init__(
        self, settings: Settings, *, embedded_zookeeper: EmbeddedZooKeeper | None = None
    ) -> None:
        self.settings = settings
        # An embedded ZooKeeper the caller began to start (`start_soon`) before it knew the
        # settings: taken over if it is the one these settings want, else stopped.
        self._early_zookeeper = embedded_zookeeper
        self.image = MetadataImage()
        # Every broker's request hooks (faults, capture, metrics add themselves here).
        self.hooks = HookChain()
        # Each broker's partition logs: in memory, or in `settings.log_dir`/broker-<id>.
        self.logs_of = _broker_logs(settings)
        # The replica managers of this process's brokers: followers fetch from a leader here
        # by a direct call.
        self._local_replicas: dict[int, LeaderView] = {}
        # Fault injection (`zkbroker.broker.hooks.faults`): entries shared by every process through
        # ZooKeeper; the replication faults reach each broker's replica manager.
        self._fault_injector = FaultInjector(self.hooks)
        # Which of those brokers run now: the transaction coordinators' in-process shortcut.
        self.local_brokers = LocalBrokers()
        self.brokers: dict[int, BrokerNode] = {b: self._new_broker(b) for b in settings.broker_ids}
        self._retention = LogRetention(
            list(self.logs_of.values()),
            self.image,
            settings.kafka_version,
            self._any_broker_config,
        )
        self.faults = Faults(lambda: self._store, self._fault_injector)
        self._embedded: EmbeddedZooKeeper | None = None
        self._store: ZkStore | None = None
        self._watcher: MetadataWatcher | None = None
        self._config_watcher: ConfigWatcher | None = None
        self._control: BrokerControl | None = None
        self._zookeeper: str | None = settings.zookeeper
        # StatsD metrics (`zkbroker.broker.hooks.metrics`) while started, when `settings.statsd` is
        # set.
        self.metrics: StatsdMetrics | None = None
        self._log = get_logger(__name__)
        # Request capture (`zkbroker.broker.hooks.capture`): from the start with `capture_path`,
        # else once `capture()` is called.
        self._capture: RequestCapture | None = None
        if settings.capture_path is not None:
            self._capture = RequestCapture(settings.capture_path)
            self.hooks.add(self._capture)

    def _new_broker(self, broker_id: int) -> BrokerNode:
        return BrokerNode(
            broker_id,
            self.settings,
            self.image,
            self.hooks,
            self._controller_event,
            self.logs_of[broker_id],
            self.local_brokers,
            self._local_replicas,
            self._fault_injector.replication,
        )

    @property
    def zookeeper_connect(self) -> str:
        if self._zookeeper is None:
            raise RuntimeError("the cluster is not started")
        return self._zookeeper

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{b.host}:{b.port}" for _, b in sorted(self.brokers.items()) if b.running)

    @property
    def controller_id(self) -> int:
        return self.image.controller_id

    async def start(self) -> None:
        sessions: asyncio.Task[list[ZkStore]] | None = None
        try:
            if self._capture is not None:
                self._capture.open()
            # The embedded ZooKeeper's own lock on `--log-dir`'s data comes first: its refusal
            # names the process holding it and the way to join that cluster.
            await self._start_zookeeper()
            # One broker per log dir, as Kafka's `.lock` makes sure.
            for logs in self.logs_of.values():
                logs.lock()
            assert self._zookeeper is not None  # the one _start_zookeeper chose
            self._store = await ZkStore.connect(
                self._zookeeper,
                session_timeout=self.settings.zk_session_timeout_s,
                max_buffer_bytes=self.settings.zookeeper_max_buffer_bytes,
                auth=self.settings.zookeeper_auth,
            )
            # The brokers' own sessions are opened meanwhile (each a handshake and threads of
            # its own); the brokers still start and register one by one, in id order, below.
            sessions = asyncio.create_task(self._open_sessions(self._zookeeper))
            await self._store.create_top_level_paths()
            cluster_id = await self._store.get_or_create_cluster_id()
            self.image.set_cluster_id(cluster_id)
            await self._fault_injector.start(self._store)
            self.image.topic_configs.attach(self._store)
            self._watcher = MetadataWatcher(
                self._store, self.image, on_topic_removed=self._delete_topic_logs
            )
            await self._watcher.start()
            self._config_watcher = ConfigWatcher(
                self._store,
                self.image,
                self.settings.kafka_version,
                change_expiration_ms=self.settings.config_change_expiration_ms,
                on_unclean_enabled=self._on_unclean_enabled,
            )
            await self._config_watcher.start()
            if self.settings.statsd is not None and self.metrics is None:
                await self._start_metrics(self.settings.statsd)
            await self._start_brokers(self._zookeeper, await sessions)
            # After the brokers: their registrations proved the ids are this process's, so
            # resetting those ids' control nodes cannot overrule another live process.
            self._control = BrokerControl(self._store, self.brokers, self._zookeeper)
            await self._control.start()
            self._retention.start()
        except BaseException:
            if sessions is not None:
                await _close_sessions(sessions, self._log)
            await self.stop()
            raise
        self._log.info(
            "cluster.started",
            bootstrap_servers=self.bootstrap_servers,
            zookeeper=self._zookeeper,
            kafka_version=self.settings.release_name,
            cluster_id=self.image.cluster_id,
        )

    async def _start_brokers(self, zookeeper: str, sessions: list[ZkStore]) -> None:
        """Every broker of the process registers before any stands for controller, as one Kafka
        broker registers before its controller starts: the first controller then finds them
        all live and moves no leader away from a broker about to register."""
        for _, broker in sorted(self.brokers.items()):
            await broker.start(zookeeper, sessions.pop(0), elect=False)
        for _, broker in sorted(self.brokers.items()):
            await broker.join_election()
        await self._wait_for_local_controller()

    async def _wait_for_local_controller(self) -> None:
        """When one of this process's brokers won the election, wait (at most
        `CONTROLLER_SETTLE_S`) for its failover and the events queued behind it, so that a
        client of the started cluster finds every partition's leader elected. A controller in
        another process is not waited for: it owes this process nothing at start."""
        controller = next((b.controller for b in self.brokers.values() if b.controller), None)
        if controller is None:
            return

        async def settled(_: Any) -> None:
            return None

        try:
            async with asyncio.timeout(CONTROLLER_SETTLE_S):
                await controller.loaded.wait()
                await controller.call("StartupSettled", settled)
        except (TimeoutError, ControllerMovedError) as e:
            self._log.warning("cluster.controller_not_settled", reason=repr(e))

    async def _start_zookeeper(self) -> None:
        """Choose the cluster's ZooKeeper (`_zookeeper`): `settings.zookeeper`, or the embedded
        server these settings want, started (the early one taken over when it is that server,
        else stopped)."""
        early, self._early_zookeeper = self._early_zookeeper, None
        if self._zookeeper is None:
            # The embedded server takes the request-size limit the brokers check against.
            options = self.settings.embedded_zookeeper_options()
            if early is not None and early.configured_as(**options):
                embedded, early = early, None
            else:
                embedded = EmbeddedZooKeeper(**options)
            self._embedded = embedded
            if early is not None:
                await early.astop()
            await embedded.astart()
            self._zookeeper = embedded.connect_string
        elif early is not None:
            await early.astop()

    async def _start_metrics(self, statsd: str) -> None:
        """StatsD metrics to `statsd` (`zkbroker.broker.hooks.metrics`), a hook of every broker."""
        self.metrics = StatsdMetrics(
            statsd, gauges=self.gauges, interval_s=self.settings.statsd_interval_s
        )
        self.hooks.add(self.metrics)
        await self.metrics.start()

    async def _open_sessions(self, zookeeper: str) -> list[ZkStore]:
        """One new session per broker, in id order, opened at once; none left open on error."""
        opened = await asyncio.gather(
            *(b.connect_session(zookeeper) for _, b in sorted(self.brokers.items())),
            return_exceptions=True,
        )
        stores = [s for s in opened if isinstance(s, ZkStore)]
        failed = next((e for e in opened if isinstance(e, BaseException)), None)
        if failed is not None:
            for store in stores:
                with contextlib.suppress(Exception):
                    await store.close()
            raise failed
        return stores

    async def stop_broker(self, broker_id: int) -> None:
        """Stop one broker as a Kafka broker stops: listener closed, ZooKeeper session closed
        (`/brokers/ids/<id>`, and `/controller` if it held it, vanish at once). No-op if it is
        stopped already. The desired state "stopped" is recorded in its control node."""
        await self._control_of(broker_id).request(broker_id, BrokerState.STOPPED)

    async def start_broker(self, broker_id: int) -> None:
        """Start a stopped broker again: same id and port, a new session, registration and
        broker epoch. No-op if it is running. Records the desired state "running"."""
        await self._control_of(broker_id).request(broker_id, BrokerState.RUNNING)

    def _control_of(self, broker_id: int) -> BrokerControl:
        if broker_id not in self.brokers:
            ids = ", ".join(map(str, sorted(self.brokers)))
            raise ValueError(f"broker {broker_id} is not one of this process's brokers ({ids})")
        if self._control is None:
            raise RuntimeError("the cluster is not started")
        return self._control

    async def stop(self) -> None:
        """Stop everything, in order; each step runs even when one before it failed (logged
        as `<step>.stop_failed` or `.close_failed`, never dropped silently)."""
        await self._stop_brokers()
        # Nothing reads or writes a log any more: a stopped cluster holds no log file open
        # (another process may own the directory next, or the test may remove it).
        for logs in self.logs_of.values():
            logs.release_files()
        self.image.topic_configs.attach(None)
        await self._stop_hooks()
        await self._stop_watchers()
        await self._stop_zookeeper()
        self._log.info("cluster.stopped")

    async def _stop_brokers(self) -> None:
        """The broker control, the brokers (highest id first), then the log retention."""
        if self._control is not None:
            # First, so that no control change starts a broker while they are being stopped.
            control, self._control = self._control, None
            try:
                await control.stop()
            except Exception:
                self._log.exception("broker_control.stop_failed")
        # The whole cluster stops at once: no controller of ours is left to see the others
        # leave and report their partitions offline (which they are only in a cluster that
        # goes on running).
        for broker_id, broker in self.brokers.items():
            try:
                await broker.leave_controller_election()
            except Exception:
                self._log.exception("broker.stop_failed", broker_id=broker_id)
        for broker_id, broker in sorted(self.brokers.items(), reverse=True):
            try:
                with self._slow_step(f"broker {broker_id}"):
                    await broker.stop()
            except Exception:
                self._log.exception("broker.stop_failed", broker_id=broker_id)
        try:
            with self._slow_step("log_retention"):
                await self._retention.stop()
        except Exception:
            self._log.exception("log_retention.stop_failed")

    async def _stop_hooks(self) -> None:
        """The request capture and the StatsD metrics, after the brokers: their last requests
        are written and counted too."""
        if self._capture is not None:
            try:
                with self._slow_step("capture"):
                    await self._capture.aclose()
            except Exception:
                self._log.exception("capture.close_failed")
        if self.metrics is not None:
            metrics, self.metrics = self.metrics, None
            self.hooks.remove(metrics)
            try:
                with self._slow_step("statsd"):
                    await metrics.stop()
            except Exception:
                self._log.exception("statsd.stop_failed")

    async def _stop_watchers(self) -> None:
        """The config watcher, the fault injector and the metadata watcher."""
        if self._config_watcher is not None:
            try:
                with self._slow_step("config_watcher"):
                    await self._config_watcher.stop()
            except Exception:
                self._log.exception("config_watcher.stop_failed")
            self._config_watcher = None
        try:
            with self._slow_step("faults"):
                await self._fault_injector.stop()  # releases requests held by a blackhole
        except Exception:
            self._log.exception("faults.stop_failed")
        if self._watcher is not None:
            try:
                with self._slow_step("metadata_watcher"):
                    await self._watcher.stop()
            except Exception:
                self._log.exception("metadata_watcher.stop_failed")
            self._watcher = None

    async def _stop_zookeeper(self) -> None:
        """The process's own session, then the embedded ZooKeeper (the early one too)."""
        if self._store is not None:
            try:
                with self._slow_step("zookeeper_session"):
                    await self._store.close()
            except Exception:
                self._log.exception("zookeeper_session.close_failed")
            self._store = None
        if self._early_zookeeper is not None:
            early, self._early_zookeeper = self._early_zookeeper, None
            try:
                await early.astop()
            except Exception:
                self._log.exception("embedded_zookeeper.stop_failed", which="early")
        if self._embedded is not None:
            try:
                await self._embedded.astop()
            except Exception:
                self._log.exception("embedded_zookeeper.stop_failed", which="cluster")
            self._embedded = None
            self._zookeeper = None

    @contextlib.contextmanager
    def _slow_step(self, name: str) -> Iterator[None]:
        """Log a stop step that took long (each should take milliseconds): where a stop that
        hangs spent its time."""
        started = time.monotonic()
        try:
            yield
        finally:
            took = time.monotonic() - started
            if took > SLOW_STOP_STEP_S:
                self._log.warning("cluster.stop_step_slow", step=name, seconds=round(took, 2))

    def _any_broker_config(self) -> BrokerConfig | None:
        """The first running broker's config (the brokers of a process share static configs)."""
        for _, broker in sorted(self.brokers.items()):
            if broker.running:
                return broker.broker_config
        return None

    async def produce(
        self, topic: str, partition: int, messages: Sequence[records_access.Message]
    ) -> int:
        """Append `messages` as one batch through the partition leader's Produce handler;
        returns the base offset (`zkbroker.broker.engine.records`)."""
        return await records_access.produce(self.brokers, self.image, topic, partition, messages)

    def records(self, topic: str, partition: int) -> list[Record]:
        """Every record in the partition's log from its log start offset."""
        known = self.image.topics.get(topic)
        topic_id = None if known is None else known.topic_id
        exists = known is not None and partition in known.partitions
        return records_access.records(
            self._replica_logs(topic, partition), topic, partition, topic_id, exists
        )

    def log_of(self, topic: str, partition: int) -> PartitionLog | None:
        """The partition's log on its leader (when the leader is a broker of this process; else
        on a broker here with a replica)."""
        return self._replica_logs(topic, partition).get(topic, partition)

    def _replica_logs(self, topic: str, partition: int) -> LogManager:
        """The logs of the partition's leader when it is a broker of this process, else of the
        first broker here with a replica (else the first broker's)."""
        known = self.image.topics.get(topic)
        state = None if known is None else known.partitions.get(partition)
        if state is not None:
            for b in (state.leader, *state.replicas):
                if b in self.logs_of and self.logs_of[b].get(topic, partition) is not None:
                    return self.logs_of[b]
        return self.logs_of[min(self.logs_of)]

    def _delete_topic_logs(self, topic: str) -> None:
        for logs in self.logs_of.values():
            logs.delete_topic(topic)

    def capture(self) -> RequestCapture:
        """Capture requests in memory from now on (see `requests()`); returns the capture.
        Idempotent: the capture `--capture`/`capture_path` started, or a previous call's.
        Call it on the cluster's loop."""
        if self._capture is None:
            self._capture = RequestCapture()
            self.hooks.add(self._capture)
        return self._capture

    def requests(
        self,
        api: str | None = None,
        client_id: str | None = None,
        broker_id: int | None = None,
        version: int | None = None,
    ) -> list[CapturedRequest]:
        """The captured requests (oldest first) matching every filter given, e.g.
        `requests(api="CreateTopics")`. Empty until capturing started."""
        if self._capture is None:
            return []
        return self._capture.requests(
            api=api, client_id=client_id, broker_id=broker_id, version=version
        )

    def clear_requests(self) -> None:
        """Forget the captured requests kept in memory (a capture file keeps its lines)."""
        if self._capture is not None:
            self._capture.clear()

    def _on_unclean_enabled(self, topic: str | None) -> None:
        # Only the active controller acts; in other processes nothing does.
        for broker in self.brokers.values():
            controller = broker.controller
            if controller is not None:
                controller.enable_unclean_election(topic)

    async def __aenter__(self) -> ClusterEngine:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def _controller_event(self, name: str, queued_s: float, run_s: float, failed: bool) -> None:
        if self.metrics is not None:
            self.metrics.controller_event(name, run_s)

    def gauges(self) -> dict[str, float]:
        """The StatsD gauges of this process's part of the cluster (names without the prefix)."""
        gauges: dict[str, float] = {
            "connections.open": sum(b.open_connections for b in self.brokers.values()),
            "topics": len(self.image.topics),
            "partitions": sum(len(t.assignment) for t in self.image.topics.values()),
        }
        for broker in self.brokers.values():
            controller = broker.controller
            if controller is not None:
                gauges["controller.epoch"] = controller.context.epoch
                break
        return gauges
