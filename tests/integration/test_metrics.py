"""StatsD metrics (`--statsd`): packets received by a real asyncio-dgram UDP listener while
real clients (kafka-python, confluent-kafka) talk to a cluster; a dead StatsD harms nobody."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
from collections.abc import Callable, Iterator

import asyncio_dgram
import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as ConfluentNewTopic
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.broker.hooks.metrics import MAX_PACKET_BYTES, pack_lines
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.server.hooks import Intervention, RequestCall, RequestRecord
from zkbroker.broker.settings import parse_address


class StatsdListener:
    """A UDP server (asyncio-dgram) on its own loop in a thread, collecting packets."""

    def __init__(self) -> None:
        self.packets: list[bytes] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        stream = await asyncio_dgram.bind(("127.0.0.1", 0))
        self.port = stream.sockname[1]
        self._stream = stream
        self._ready.set()
        try:
            while True:
                data, _ = await stream.recv()
                with self._lock:
                    self.packets.append(data)
        except asyncio_dgram.TransportClosed:
            pass

    def start(self) -> StatsdListener:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stream.close)
        self._thread.join(5)

    @property
    def lines(self) -> list[str]:
        with self._lock:
            packets = list(self.packets)
        return [line for p in packets for line in p.decode().split("\n")]

    def wait_for(self, pattern: str, timeout: float = 15.0) -> list[str]:
        regex = re.compile(pattern)
        return wait_until(lambda: [x for x in self.lines if regex.fullmatch(x)], timeout)


@pytest.fixture
def statsd() -> Iterator[StatsdListener]:
    listener = StatsdListener().start()
    yield listener
    listener.stop()


class InjectOnce:
    """Intervenes once on the named API (an error, or a drop)."""

    def __init__(self, api: str, intervention: Intervention) -> None:
        self.api = api
        self.pending: Intervention | None = intervention

    async def intervene(self, call: RequestCall) -> Intervention | None:
        if call.api_name == self.api and self.pending is not None:
            intervention, self.pending = self.pending, None
            return intervention
        return None

    def observe(self, record: RequestRecord) -> None:
        pass


def test_pack_lines_and_parse_address() -> None:
    lines = [f"zkbroker.x.{i}:1|c" for i in range(500)]
    packets = pack_lines(lines)
    assert all(len(p) <= MAX_PACKET_BYTES for p in packets)
    assert b"\n".join(packets).decode().split("\n") == lines
    assert parse_address("localhost:8125") == ("localhost", 8125)
    assert parse_address("[::1]:8125") == ("::1", 8125)
    for bad in ("localhost", ":8125", "h:0", "h:x"):
        with pytest.raises(ValueError):
            parse_address(bad)


def test_request_counters_timers_gauges_and_faults(
    cluster_factory: Callable[..., Cluster], statsd: StatsdListener
) -> None:
    cluster = cluster_factory(statsd=f"127.0.0.1:{statsd.port}", statsd_interval_s=0.2)
    assert cluster.engine.metrics is not None
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("metered", 3, 1)])
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("metered", 3, 1)])
        assert "metered" in admin.list_topics()

        statsd.wait_for(r"zkbroker\.requests\.ApiVersions\.v\d+\.none:1\|c")
        statsd.wait_for(r"zkbroker\.requests\.CreateTopics\.v\d+\.none:1\|c")
        statsd.wait_for(r"zkbroker\.requests\.CreateTopics\.v\d+\.topic_already_exists:1\|c")
        statsd.wait_for(r"zkbroker\.requests\.Metadata\.v\d+\.none:1\|c")
        (timer, *_) = statsd.wait_for(r"zkbroker\.request_latency\.CreateTopics\.v\d+:[\d.]+\|ms")
        assert float(timer.split(":")[1].split("|")[0]) >= 0
        # Gauges: the admin client's connection is open while it is not closed.
        statsd.wait_for(r"zkbroker\.connections\.open:[1-9]\d*\|g")
        statsd.wait_for(r"zkbroker\.topics:1\|g")
        statsd.wait_for(r"zkbroker\.partitions:3\|g")
        statsd.wait_for(r"zkbroker\.controller\.epoch:[1-9]\d*\|g")
    finally:
        admin.close()

    # Injected faults are counted; a dropped request counts as "dropped".
    cluster.engine.hooks.add(
        InjectOnce("CreateTopics", Intervention(error_code=ec.POLICY_VIOLATION, source="t"))
    )
    confluent = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    (future,) = confluent.create_topics([ConfluentNewTopic("refused", 1, 1)]).values()
    with pytest.raises(KafkaException, match="POLICY_VIOLATION"):
        future.result(15)
    statsd.wait_for(r"zkbroker\.faults\.injected:1\|c")
    statsd.wait_for(r"zkbroker\.requests\.CreateTopics\.v\d+\.policy_violation:1\|c")
    cluster.engine.hooks.add(InjectOnce("Metadata", Intervention(drop=True, source="t")))
    # librdkafka reconnects and asks again.
    assert "metered" in confluent.list_topics(timeout=15).topics
    statsd.wait_for(r"zkbroker\.requests\.Metadata\.v\d+\.dropped:1\|c")
    assert len(statsd.wait_for(r"zkbroker\.faults\.injected:1\|c")) == 2
    assert all(len(p) <= MAX_PACKET_BYTES for p in statsd.packets)
    metrics = cluster.engine.metrics
    assert metrics is not None and metrics.send_errors == 0 and metrics.dropped == 0


@pytest.mark.kafka_version("2.8")
@pytest.mark.debug_logging  # each event's `controller.event` line is logged at DEBUG
def test_controller_events_are_named_and_timed(
    cluster_factory: Callable[..., Cluster],
    statsd: StatsdListener,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = cluster_factory(statsd=f"127.0.0.1:{statsd.port}", statsd_interval_s=0.2)
    # Kafka's event names: the failover and the broker watch's first delivery.
    statsd.wait_for(r"zkbroker\.controller\.event\.Startup:[\d.]+\|ms")
    statsd.wait_for(r"zkbroker\.controller\.event\.BrokerChange:[\d.]+\|ms")
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("timed", 1, 1)])
    finally:
        admin.close()
    statsd.wait_for(r"zkbroker\.controller\.event\.TopicsCreated:[\d.]+\|ms")

    # A failing event fails its caller, is logged under its name and is still timed.
    controller = cluster.engine.brokers[cluster.controller_id].controller
    assert controller is not None

    async def boom(_: object) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        cluster.call(controller.call("Boom", boom))
    statsd.wait_for(r"zkbroker\.controller\.event\.Boom:[\d.]+\|ms")
    logged = [r.msg for r in caplog.records if isinstance(r.msg, dict)]
    assert any(
        m.get("event") == "controller.event_failed" and m.get("event_name") == "Boom"
        for m in logged
    )
    assert any(
        m.get("event") == "controller.event" and m.get("event_name") == "Boom" and m["failed"]
        for m in logged
    )


def test_dead_statsd_fails_no_request(cluster_factory: Callable[..., Cluster]) -> None:
    # A port nobody listens on: every send draws an ICMP "port unreachable".
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    cluster = cluster_factory(statsd=f"127.0.0.1:{dead_port}", statsd_interval_s=0.05)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        for i in range(5):
            admin.create_topics([NewTopic(f"unmetered-{i}", 1, 1)])
            assert f"unmetered-{i}" in admin.list_topics()
    finally:
        admin.close()
    metrics = cluster.engine.metrics
    assert metrics is not None
    wait_until(lambda: metrics.send_errors > 0)


def test_full_queue_drops_and_counts(
    cluster_factory: Callable[..., Cluster], statsd: StatsdListener
) -> None:
    cluster = cluster_factory(statsd=f"127.0.0.1:{statsd.port}", statsd_interval_s=0.2)
    metrics = cluster.engine.metrics
    assert metrics is not None

    def flood() -> int:
        # On the cluster's loop, faster than the sender can drain: the queue overflows.
        assert metrics is not None
        record = RequestRecord(
            call=RequestCall(0, None, _Header(), "Metadata", None),  # type: ignore[arg-type]
            response=object(),
            error_codes=[],
            received_at=0.0,
            latency_us=10,
        )
        for _ in range(metrics._queue.maxsize + 5):
            metrics.observe(record)
        return metrics.dropped

    assert cluster.run_sync(flood) == 5
    statsd.wait_for(r"zkbroker\.metrics\.dropped:5\|c")


class _Header:
    api_version = 12
