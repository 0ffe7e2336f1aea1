"""Admission limits over real TCP, with real clients where one exercises the path
(docs/kafka-behaviour.md §0, "Connection limits"): `max.connections.per.ip` (+ overrides)
closes the new connection at once, `max.connections` makes new clients wait until a connection
closes, `connections.max.idle.ms` closes idle connections (a real client reconnects and goes
on, and closes a stalled unfinished request), `queued.max.request.bytes` holds back requests
over 64 KiB while unfinished ones use it up (smaller ones are always read), dynamic
changes apply to new connections and show in DescribeConfigs, and accept failures at the fd
limit are logged once per interval."""

from __future__ import annotations

import errno
import json
import os
import resource
import select
import socket
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigResource, ConfigSource
from confluent_kafka.admin import ConfigEntry as CfConfigEntry

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from zkbroker.broker.server import listener as listener_module
from zkbroker.broker.server.frame_protocol import MAPPED_REQUEST_BYTES
from zkbroker.broker.toolkit.wire import WireClient


def _client(cluster: Cluster) -> WireClient:
    return WireClient.to(cluster.bootstrap_servers)


def _served(client: WireClient) -> bool:
    return bool(client.request(0, ApiVersionsRequest()).error_code == 0)


def _open_connections(cluster: Cluster, broker_id: int = 0) -> int:
    return int(cluster.engine.brokers[broker_id].open_connections)


def _no_answer_yet(client: WireClient, seconds: float = 0.5) -> bool:
    """Nothing to read on the socket for `seconds` (neither an answer nor a close)."""
    readable, _, _ = select.select([client.sock], [], [], seconds)
    return not readable


def test_per_ip_limit_closes_the_connection_over_it_at_once(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(broker_ids=(0,), broker_configs=(("max.connections.per.ip", "2"),))
    with _client(cluster) as first, _client(cluster) as second:
        assert _served(first) and _served(second)
        with _client(cluster) as third:
            assert third.is_closed_by_peer(timeout=10)  # closed unanswered, as Kafka does
        assert _served(first)  # the others go on
    # Once one closes, a new connection from the address is accepted again.
    wait_until(lambda: _open_connections(cluster) == 0)
    with _client(cluster) as again:
        assert _served(again)


def test_per_ip_overrides_name_hosts_and_addresses(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(
        broker_ids=(0,),
        broker_configs=(
            ("max.connections.per.ip", "0"),
            ("max.connections.per.ip.overrides", "localhost:3,192.0.2.1:1"),
        ),
    )
    clients = [_client(cluster) for _ in range(3)]
    try:
        assert all(_served(c) for c in clients)
        with _client(cluster) as fourth:
            assert fourth.is_closed_by_peer(timeout=10)
    finally:
        for c in clients:
            c.close()


def test_max_connections_makes_new_clients_wait_for_a_free_slot(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(broker_ids=(0,), broker_configs=(("max.connections", "2"),))
    first, second = _client(cluster), _client(cluster)
    try:
        assert _served(first) and _served(second)
        with _client(cluster) as waiting:  # connected by the kernel, not accepted
            _, frame = waiting.frame(18, 0, ApiVersionsRequest())
            waiting.send_raw(frame)
            assert _no_answer_yet(waiting)
            assert _open_connections(cluster) == 2
            first.close()
            # A slot is free: the waiting client is accepted and answered.
            waiting.sock.settimeout(15)
            assert len(waiting.recv_frame()) > 4
    finally:
        first.close()
        second.close()


def test_idle_connections_are_closed_and_a_real_client_reconnects(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(broker_ids=(0,), broker_configs=(("connections.max.idle.ms", "500"),))
    with _client(cluster) as idle:
        assert _served(idle)
        assert idle.is_closed_by_peer(timeout=30)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    assert admin.list_topics(timeout=15).brokers
    # librdkafka keeps its connection open: the broker closes it once idle ...
    wait_until(lambda: _open_connections(cluster) == 0, timeout=30)
    # ... and the client reconnects on its next request, as with Kafka.
    assert admin.list_topics(timeout=15).brokers


def test_a_request_being_handled_is_not_idle(cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(broker_ids=(0,), broker_configs=(("connections.max.idle.ms", "500"),))
    cluster.faults.add_latency(1500, api="ApiVersions")  # three idle periods in flight
    with _client(cluster) as slow:
        assert _served(slow)


def _set_per_ip_limit_with_confluent(bootstrap: str, value: str) -> Any:
    """IncrementalAlterConfigs on broker 0 with a real client, then its DescribeConfigs entry
    once the broker applied it; the client is gone (its connections closed) on return."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    broker = ConfigResource("BROKER", "0")
    op = CfConfigEntry("max.connections.per.ip", value, incremental_operation=AlterConfigOpType.SET)
    altered = admin.incremental_alter_configs(
        [ConfigResource("BROKER", "0", incremental_configs=[op])]
    )
    altered[broker].result(timeout=30)

    def described() -> Any:
        (future,) = admin.describe_configs([ConfigResource("BROKER", "0")]).values()
        entries = future.result(timeout=30)
        return entries if entries["max.connections.per.ip"].value == value else None

    return wait_until(described, timeout=30)  # applied asynchronously, as in Kafka


def test_dynamic_per_ip_limit_applies_to_new_connections_and_is_described(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(broker_ids=(0,), kafka_version=(3, 9))
    entries = _set_per_ip_limit_with_confluent(cluster.bootstrap_servers, "2")
    assert entries["max.connections.per.ip"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    # zkbroker's own default of queued.max.request.bytes shows as a static config.
    queued = entries["queued.max.request.bytes"]
    assert (queued.value, queued.source) == (
        "104857600",
        ConfigSource.STATIC_BROKER_CONFIG.value,
    )
    idle = entries["connections.max.idle.ms"]
    assert (idle.value, idle.source) == ("600000", ConfigSource.DEFAULT_CONFIG.value)
    wait_until(lambda: _open_connections(cluster) == 0, timeout=30)
    with _client(cluster) as a, _client(cluster) as b:
        assert _served(a) and _served(b)
        with _client(cluster) as c:
            assert c.is_closed_by_peer(timeout=10)


def test_lowering_max_connections_closes_the_least_recently_used(
    cluster_factory: Callable[..., Cluster], kazoo: Any
) -> None:
    cluster = cluster_factory(broker_ids=(0,))
    oldest, middle, newest = _client(cluster), _client(cluster), _client(cluster)
    try:
        for c in (oldest, middle, newest):
            assert _served(c)
        assert _served(middle) and _served(newest)  # `oldest` is the least recently used
        # As kafka-configs.sh --zookeeper writes a cluster default.
        kazoo.create(
            "/config/brokers/<default>",
            json.dumps({"version": 1, "config": {"max.connections": "2"}}).encode(),
        )
        kazoo.create(
            "/config/changes/config_change_",
            json.dumps({"version": 2, "entity_path": "brokers/<default>"}).encode(),
            sequence=True,
        )
        assert oldest.is_closed_by_peer(timeout=30)
        assert _served(middle) and _served(newest)
    finally:
        for c in (oldest, middle, newest):
            c.close()


def _metadata_frame(client: WireClient, size_at_least: int) -> bytes:
    """A Metadata v4 frame naming enough unknown topics to be at least `size_at_least` bytes
    (no auto-creation: each is answered UNKNOWN_TOPIC_OR_PARTITION)."""
    names = [MetadataRequestTopic(name=f"absent-{i:06d}") for i in range(size_at_least // 14)]
    _, frame = client.frame(3, 4, MetadataRequest(topics=names, allow_auto_topic_creation=False))
    assert len(frame) >= size_at_least
    return frame


def _metadata_answered(client: WireClient) -> bool:
    return client.request(1, MetadataRequest(topics=[])).brokers != []


def _unfinished(frame: bytes, sent: int) -> bytes:
    """The first `sent` bytes of a frame's body, after its size prefix."""
    return frame[: 4 + sent]


def test_unfinished_large_requests_hold_back_large_requests_but_never_small_ones(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(
        broker_ids=(0,),
        max_request_bytes=200_000,
        broker_configs=(("queued.max.request.bytes", "200000"),),
    )
    server = cluster.engine.brokers[0]._server
    assert server is not None
    first, second = _client(cluster), _client(cluster)
    try:
        # Two unfinished requests reserve their announced size, as Kafka's pool does; the
        # second goes over the budget (non-strict: some memory was left).
        held = _metadata_frame(first, 150_000)
        first.send_raw(_unfinished(held, 140_000))
        wait_until(lambda: server.queued_request_bytes == len(held) - 4)
        second.send_raw(_unfinished(held, 100_000))
        wait_until(lambda: server.queued_request_bytes == 2 * (len(held) - 4))
        with _client(cluster) as large, _client(cluster) as small:
            large.send_raw(_metadata_frame(large, 100_000))
            assert _no_answer_yet(large)  # waits, unread, for the budget
            # A small request is read whatever the budget holds: answered while both wait.
            assert _metadata_answered(small)
            _, frame = small.frame(18, 0, ApiVersionsRequest())
            small.send_raw(frame)
            assert len(small.recv_frame()) > 4
            first.close()  # its reservation is released: the large request is read
            large.sock.settimeout(15)
            assert len(large.recv_frame()) > 100_000
    finally:
        first.close()
        second.close()
    wait_until(lambda: server.queued_request_bytes == 0)


def test_a_mapped_request_whose_client_leaves_midway_returns_its_share(
    cluster_factory: Callable[..., Cluster],
) -> None:
    # Regression: a request above MAPPED_REQUEST_BYTES (read into an anonymous mapping) whose
    # client closed midway kept its share of queued.max.request.bytes, so once the budget was
    # used up no large request was ever read again.
    cluster = cluster_factory(broker_ids=(0,))
    server = cluster.engine.brokers[0]._server
    assert server is not None
    size = MAPPED_REQUEST_BYTES + 1
    for _ in range(4):  # 4 x 32 MiB: over the default 100 MiB budget if any share leaked
        with _client(cluster) as client:
            client.send_raw(size.to_bytes(4, "big") + bytes(1000))
            wait_until(lambda: server.queued_request_bytes == size)
        wait_until(lambda: server.queued_request_bytes == 0)
    with _client(cluster) as client:  # a large request is still read and answered
        client.send_raw(_metadata_frame(client, 150_000))
        assert len(client.recv_frame()) > 150_000


def test_stalled_unfinished_request_is_closed_after_connections_max_idle_ms(
    cluster_factory: Callable[..., Cluster], caplog: pytest.LogCaptureFixture
) -> None:
    cluster = cluster_factory(
        broker_ids=(0,),
        max_request_bytes=200_000,
        broker_configs=(
            ("queued.max.request.bytes", "200000"),
            ("connections.max.idle.ms", "500"),
        ),
    )
    server = cluster.engine.brokers[0]._server
    assert server is not None
    with _client(cluster) as stalled, _client(cluster) as small_stalled:
        frame = _metadata_frame(stalled, 150_000)
        stalled.send_raw(_unfinished(frame, 100_000))
        _, small = small_stalled.frame(18, 0, ApiVersionsRequest())
        small_stalled.send_raw(small[:-2])
        wait_until(lambda: server.queued_request_bytes > 0)
        # Nothing more comes: both are closed once idle for connections.max.idle.ms.
        assert stalled.is_closed_by_peer(timeout=30)
        assert small_stalled.is_closed_by_peer(timeout=30)
    closes = {e["connection_id"]: e for e in _events(caplog, "connection.closing")}
    reasons = sorted(e["reason"] for e in closes.values())
    assert reasons == [
        f"unfinished request of {len(small) - 4} bytes: nothing more received for more than "
        "connections.max.idle.ms (500 ms)",
        f"unfinished request: 100000 of {len(frame) - 4} bytes received, then nothing more "
        "for more than connections.max.idle.ms (500 ms)",
    ]
    assert {e["config"] for e in closes.values()} == {"connections.max.idle.ms"}
    # The budget is released with the connection: a large request is read and answered.
    wait_until(lambda: server.queued_request_bytes == 0)
    with _client(cluster) as large:
        large.send_raw(_metadata_frame(large, 150_000))
        assert len(large.recv_frame()) > 150_000


def _events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    return [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg.get("event") == name]


def _socket_from_freed(held: list[socket.socket]) -> socket.socket:
    """Free one held descriptor and take it for a client socket. Another thread of the test
    process (a client library's reconnect loop) may take the freed descriptor first: then
    free one more, so the process stays at its limit either way."""
    for _ in range(10):
        held.pop().close()
        try:
            return socket.socket()
        except OSError as e:
            if e.errno != errno.EMFILE:
                raise
    raise AssertionError("other threads keep taking every freed descriptor")


def test_accept_at_the_fd_limit_backs_off_and_logs_once_per_interval(
    cluster_factory: Callable[..., Cluster],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = cluster_factory(broker_ids=(0,))
    node = cluster.engine.brokers[0]
    monkeypatch.setattr(listener_module, "ACCEPT_BACKOFF_S", (0.01, 0.02))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    held: list[socket.socket] = []
    pending: list[socket.socket] = []
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 64, hard))
        while True:  # use up every descriptor the process may open
            try:
                held.append(socket.socket())
            except OSError as e:
                assert e.errno == errno.EMFILE
                break
        for _ in range(3):  # each client takes a freed descriptor: none is left to accept it
            s = _socket_from_freed(held)
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", node.port))
            pending.append(s)
        wait_until(lambda: _events(caplog, "listener.accept_failed") != [], timeout=30)
        server = node._server
        assert server is not None
        # Many more failures (10-20 ms back-off) are counted, not logged: one line per 10 s.
        wait_until(lambda: server._accept_errors.suppressed >= 20, timeout=30)
        (line,) = _events(caplog, "listener.accept_failed")
        assert line["error"].startswith("EMFILE")
        # asyncio's own accept path (a traceback per failure) is not used.
        assert not [r for r in caplog.records if "out of system resource" in r.getMessage()]
    finally:
        for s in held:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    # Descriptors are back: the listener accepts the clients that waited, and new ones.
    wait_until(lambda: node.open_connections >= len(pending), timeout=30)
    with _client(cluster) as client:
        assert _served(client)
    for s in pending:
        s.close()
