"""Transactions across zkbroker processes over a secured inter-broker listener, with the
authorizer on: broker 0 runs in this process (a `Cluster`), broker 1 in a `zkbroker run`
subprocess, on one real ZooKeeper. The transaction coordinator and the partition leaders are
in different processes, so markers (WriteTxnMarkers) and KIP-890 verification
(AddPartitionsToTxn v4) go over TCP with the inter-broker listener's TLS and SASL, as the
brokers' principal (a super user: both requests need CLUSTER_ACTION); nobody else has an ACL.

- SASL_SSL with SCRAM-SHA-512: a confluent-kafka transactional producer commits and aborts;
  a read_committed consumer sees exactly the committed records;
- SSL with client certificates (mTLS): the same, the brokers' principal from their keystore;
- a wrong inter-broker password in this process: its markers to the other process are
  refused (`txn.marker_failed` with SASL_AUTHENTICATION_FAILED), the local ones are written,
  and every client keeps working;
- the toolkit: `Cluster(security=...)` configures the brokers' login itself; the peer client
  re-authenticates in band before the session ends (KIP-368) and dials afresh after it; two
  clusters (two engines, which reach each other over TCP as processes do) sharing one
  `certificates_dir` commit a transaction across them.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.broker.cli.main import main
from zkbroker.broker.security.jaas import scram_jaas_config

trustme = pytest.importorskip("trustme")
confluent_kafka = pytest.importorskip("confluent_kafka")

REPO = Path(__file__).resolve().parents[2]
TOPIC = "orders"
SUPER = "User:broker;User:app"
# KIP-890 verification (AddPartitionsToTxn v4 between brokers) is 3.6+.
RELEASE = "3.9"
AUTHORIZER = ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")


class _Tls:
    """A CA, one certificate for the brokers (server and client: Kafka presents its keystore)
    and one for the application, as PEM files."""

    def __init__(self, directory: Path) -> None:
        ca = trustme.CA()
        self.ca = str(directory / "ca.pem")
        ca.cert_pem.write_to_path(self.ca)
        self.broker = str(directory / "broker.pem")
        ca.issue_cert(
            "localhost", "127.0.0.1", common_name="broker"
        ).private_key_and_cert_chain_pem.write_to_path(self.broker)
        app = ca.issue_cert("app@zkbroker.test", common_name="app")
        self.app_cert = str(directory / "app.pem")
        self.app_key = str(directory / "app-key.pem")
        for blob in app.cert_chain_pems:
            blob.write_to_path(self.app_cert, append=True)
        app.private_key_pem.write_to_path(self.app_key)

    def broker_configs(self) -> list[tuple[str, str]]:
        return [
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", self.broker),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", self.ca),
        ]


def _scram_configs(tls: _Tls, password: str) -> list[tuple[str, str]]:
    return [
        ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
        ("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"),
        (
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
            scram_jaas_config("broker", password),
        ),
        *tls.broker_configs(),
        AUTHORIZER,
        ("super.users", SUPER),
        ("connection.failed.authentication.delay.ms", "0"),
    ]


def _mtls_configs(tls: _Tls) -> list[tuple[str, str]]:
    return [
        *tls.broker_configs(),
        ("ssl.client.auth", "required"),
        ("ssl.principal.mapping.rules", "RULE:^CN=([^,]*),.*$/$1/,DEFAULT"),
        AUTHORIZER,
        ("super.users", SUPER),
    ]


@pytest.fixture
def other_process(zk_connect: str, tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start `zkbroker run --broker-ids 1` with these listener and configs; its bootstrap."""
    started: list[tuple[subprocess.Popen[bytes], Any]] = []

    def start(listener: str, configs: list[tuple[str, str]]) -> str:
        log = (tmp_path / "broker1.log").open("wb")
        argv = [
            sys.executable, "-m", "zkbroker", "run", "--zookeeper", zk_connect,
            "--broker-ids", "1", "--port", "0", "--listener", f"{listener}://127.0.0.1:0",
            "--kafka-version", RELEASE,
        ]  # fmt: skip
        for key, value in configs:
            argv += ["--broker-config", f"{key}={value}"]
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, cwd=REPO)
        started.append((process, log))
        assert process.stdout is not None
        first = process.stdout.readline().decode()
        assert first.startswith("bootstrap_servers="), (tmp_path / "broker1.log").read_text()
        return first.strip().partition("=")[2]

    yield start
    for process, log in started:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(30)
        log.close()


def _add_users(zk_connect: str, *users: tuple[str, str]) -> None:
    """`zkbroker user add` for each; the command configures logging for its process, so the
    root handlers (pytest's capture among them) are put back after it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        for user, password in users:
            argv = ["user", "add", user, "--password", password, "--mechanism", "SCRAM-SHA-512"]
            assert main([*argv, "--zookeeper", zk_connect]) == 0
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def _prepare(conf: dict[str, Any], coordinator: int) -> None:
    """Wait for both brokers; the topic with partition i led by broker i, and the
    transaction log's one partition on `coordinator`, so who talks to whom is known."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(conf)
    wait_until(lambda: set(admin.list_topics(timeout=10).brokers) == {0, 1}, timeout=60)
    futures = admin.create_topics(
        [
            NewTopic(TOPIC, num_partitions=2, replica_assignment=[[0], [1]]),
            NewTopic(
                "__transaction_state",
                num_partitions=1,
                replica_assignment=[[coordinator]],
                config={"cleanup.policy": "compact"},
            ),
        ],
        operation_timeout=30,
    )
    for future in futures.values():
        future.result(timeout=60)


def _transactions(conf: dict[str, Any]) -> set[str]:
    """Commit, abort, commit (records in both partitions); the committed values."""
    producer = confluent_kafka.Producer(
        {**conf, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}", "linger.ms": 0}
    )
    producer.init_transactions(60)
    committed: set[str] = set()
    for round_, commit in enumerate((True, False, True)):
        producer.begin_transaction()
        values = {f"r{round_}-p{p}-{i}" for p in (0, 1) for i in range(3)}
        for value in sorted(values):
            producer.produce(TOPIC, value=value.encode(), partition=int(value.split("-p")[1][0]))
        # Written before the end, so the aborted records are in the logs too.
        assert producer.flush(30) == 0
        if commit:
            producer.commit_transaction(60)
            committed |= values
        else:
            producer.abort_transaction(60)
    producer.flush(30)
    return committed


def _read_committed(
    conf: dict[str, Any], expected: int, partitions: tuple[int, ...] = (0, 1)
) -> list[str]:
    """What a read_committed consumer reads from the start: `expected` records (bounded
    wait), then one more second to show nothing else comes."""
    from confluent_kafka import TopicPartition

    consumer = confluent_kafka.Consumer(
        {
            **conf,
            "group.id": f"g-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in partitions])
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while len(seen) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen.append(message.value().decode())
        extra = time.monotonic() + 1.0
        while time.monotonic() < extra:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen.append(message.value().decode())
        return seen
    finally:
        consumer.close()


def _client_scram(bootstrap: str, tls: _Tls) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "app",
        "sasl.password": "app-secret",
        "ssl.ca.location": tls.ca,
    }


def _peer_requests(caplog: pytest.LogCaptureFixture, client_id: str) -> list[dict[str, Any]]:
    """The requests this process's broker answered for the other process's peer client."""
    return [e for e in _events(caplog, "request") if e.get("client_id") == client_id]


def test_sasl_ssl_scram_transactions_across_processes(
    zk_connect: str,
    tmp_path: Path,
    other_process: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="zkbroker.broker.server.listener")
    tls = _Tls(tmp_path)
    _add_users(zk_connect, ("broker", "broker-secret"), ("app", "app-secret"))
    configs = _scram_configs(tls, "broker-secret")
    with Cluster(
        broker_ids=(0,),
        kafka_version=RELEASE,
        port=0,
        listener_name="SASL_SSL",
        zookeeper=zk_connect,
        broker_configs=tuple(configs),
    ) as cluster:
        other = other_process("SASL_SSL", configs)
        conf = _client_scram(f"{cluster.bootstrap_servers},{other}", tls)
        # The coordinator in the other process: its markers reach partition 0 here, and
        # this process's leader verifies partition 0's records with it (KIP-890).
        _prepare(conf, coordinator=1)
        committed = _transactions(conf)
        seen = _read_committed(conf, len(committed))
        assert sorted(seen) == sorted(committed) and len(seen) == 12
        # The other process's markers came over SASL_SSL as User:broker, all on one
        # connection (commit, abort, commit), each answered without error.
        markers = _peer_requests(caplog, "broker-1-txn-marker-sender")
        assert [m["api"] for m in markers] == ["WriteTxnMarkers"] * 3
        assert {m["principal"] for m in markers} == {"User:broker"}
        assert len({m["connection_id"] for m in markers}) == 1
        assert all(not m["error_codes"] for m in markers), markers
        assert not _events(caplog, "txn.verify_unreachable")
        assert not _events(caplog, "txn.verify_failed")


def test_mtls_transactions_across_processes(
    zk_connect: str,
    tmp_path: Path,
    other_process: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="zkbroker.broker.server.listener")
    tls = _Tls(tmp_path)
    configs = _mtls_configs(tls)
    with Cluster(
        broker_ids=(0,),
        kafka_version=RELEASE,
        port=0,
        listener_name="SSL",
        zookeeper=zk_connect,
        broker_configs=tuple(configs),
    ) as cluster:
        other = other_process("SSL", configs)
        conf = {
            "bootstrap.servers": f"{cluster.bootstrap_servers},{other}",
            "security.protocol": "SSL",
            "ssl.ca.location": tls.ca,
            "ssl.certificate.location": tls.app_cert,
            "ssl.key.location": tls.app_key,
        }
        # The coordinator here: its markers go to partition 1 in the other process.
        _prepare(conf, coordinator=0)
        committed = _transactions(conf)
        seen = _read_committed(conf, len(committed))
        assert sorted(seen) == sorted(committed) and len(seen) == 12
        # The other process's leader verified partition 1's records with this coordinator
        # (KIP-890), as User:broker from its keystore's certificate, on one connection.
        verify = _peer_requests(caplog, "broker-1-add-partitions-to-txn-sender")
        assert verify and {v["api"] for v in verify} == {"AddPartitionsToTxn"}
        assert {(v["api_version"], v["principal"]) for v in verify} == {(4, "User:broker")}
        assert len({v["connection_id"] for v in verify}) == 1
        assert not _events(caplog, "txn.marker_unreachable")


def _events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    return [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg.get("event") == name]


def test_wrong_inter_broker_password_leaves_markers_unwritten_and_harms_nothing_else(
    zk_connect: str,
    tmp_path: Path,
    other_process: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="zkbroker.broker.transactions.marker_writer")
    tls = _Tls(tmp_path)
    _add_users(zk_connect, ("broker", "broker-secret"), ("app", "app-secret"))
    with Cluster(
        broker_ids=(0,),
        kafka_version=RELEASE,
        port=0,
        listener_name="SASL_SSL",
        zookeeper=zk_connect,
        broker_configs=tuple(_scram_configs(tls, "not-the-password")),
    ) as cluster:
        other = other_process("SASL_SSL", _scram_configs(tls, "broker-secret"))
        conf = _client_scram(f"{cluster.bootstrap_servers},{other}", tls)
        _prepare(conf, coordinator=0)  # this process's coordinator, with the wrong password
        producer = confluent_kafka.Producer({**conf, "transactional.id": "tx-wrong"})
        producer.init_transactions(60)
        producer.begin_transaction()
        for p in (0, 1):
            producer.produce(TOPIC, value=f"t-p{p}".encode(), partition=p)
        producer.commit_transaction(60)  # answered once PrepareCommit is written

        failed = wait_until(lambda: _events(caplog, "txn.marker_failed"), timeout=30)
        assert failed[0]["partition"] == 1 and failed[0]["leader"] == 1
        assert failed[0]["error"] == "SASL_AUTHENTICATION_FAILED"
        assert failed[0]["message"] == (
            "Authentication failed during authentication due to invalid credentials with "
            "SASL mechanism SCRAM-SHA-512"
        )
        # Partition 0's marker (this process) is written; partition 1's never: its LSO
        # stays before the transaction, so read_committed sees nothing there.
        assert _read_committed(conf, 1, (0,)) == ["t-p0"]
        plain = confluent_kafka.Producer(conf)
        plain.produce(TOPIC, value=b"plain-p0", partition=0)
        assert plain.flush(30) == 0
        assert _read_committed(conf, 2, (0,)) == ["t-p0", "plain-p0"]
        from confluent_kafka import TopicPartition

        partition1 = TopicPartition(TOPIC, 1)
        for isolation, end in (("read_uncommitted", 1), ("read_committed", 0)):
            # The record is in partition 1, its marker is not: the LSO stays before it.
            consumer = confluent_kafka.Consumer(
                {**conf, "group.id": "g-ends", "isolation.level": isolation}
            )
            try:
                assert consumer.get_watermark_offsets(partition1, timeout=10)[1] == end
            finally:
                consumer.close()
        assert _read_committed(conf, 0, (1,)) == []
        assert len(_events(caplog, "txn.marker_failed")) >= 1  # still retried, still refused


def test_toolkit_login_reauthenticates_in_band_then_redials_after_the_session(
    zk_connect: str, caplog: pytest.LogCaptureFixture
) -> None:
    """`Cluster(security=...)` gives the brokers their inter-broker login with no extra
    setup; with connections.max.reauth.ms (KIP-368) the peer client re-authenticates on its
    connection past 85% of the session, and dials afresh once the session is over."""
    import asyncio

    from zkbroker import Security
    from zkbroker.broker.peers.client import PeerClient
    from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest

    caplog.set_level(logging.DEBUG, logger="zkbroker.broker.server.listener")
    security = Security(
        protocol="SASL_PLAINTEXT", mechanisms=("PLAIN",), users={"broker": "pw"}, reauth_ms=3000
    )
    with Cluster(brokers=1, port=0, zookeeper=zk_connect, security=security) as cluster:
        inter_broker = cluster.settings.inter_broker_security()
        assert inter_broker.login is not None and inter_broker.login.username == "broker"
        port = cluster.brokers[0].port

        async def calls() -> list[int]:
            client = PeerClient(inter_broker, client_id="reauth-test")
            try:
                codes = [(await client.send("127.0.0.1", port, 0, ApiVersionsRequest())).error_code]
                await asyncio.sleep(2.6)  # past 85% of 3 s, well before its end
                codes.append(
                    (await client.send("127.0.0.1", port, 0, ApiVersionsRequest())).error_code
                )
                await asyncio.sleep(3.2)  # past the end of the re-authenticated session
                codes.append(
                    (await client.send("127.0.0.1", port, 0, ApiVersionsRequest())).error_code
                )
                return codes
            finally:
                await client.close()

        assert asyncio.run(calls()) == [0, 0, 0]
        answered = [e for e in _events(caplog, "request") if e.get("client_id") == "reauth-test"]
        connections = [e["connection_id"] for e in answered]
        assert len(connections) == 3
        assert connections[0] == connections[1] != connections[2]
        assert {e["principal"] for e in answered} == {"User:broker"}
        reauthenticated = _events(caplog, "sasl.reauthenticated")
        assert [e["connection_id"] for e in reauthenticated] == [connections[0]]


def test_toolkit_clusters_of_two_engines_share_certificates_and_commit(
    zk_connect: str, tmp_path: Path
) -> None:
    """Two `Cluster`s on one ZooKeeper (two engines: they reach each other over TCP as two
    processes do) with one `Security(certificates_dir=...)`: SASL_SSL SCRAM-SHA-512, the
    authorizer with the brokers' user as super user, and nothing else to configure."""
    from zkbroker import Security

    security = Security(users={"admin": "admin-secret"}, certificates_dir=str(tmp_path / "tls"))
    configs = (AUTHORIZER, ("super.users", "User:admin"))
    common: dict[str, Any] = {
        "kafka_version": RELEASE, "port": 0, "zookeeper": zk_connect, "broker_configs": configs,
        "security": security,
    }  # fmt: skip
    with Cluster(broker_ids=(0,), **common) as first, Cluster(broker_ids=(1,), **common) as second:
        assert first.security is not None
        conf = {
            "bootstrap.servers": f"{first.bootstrap_servers},{second.bootstrap_servers}",
            **first.security.client_config("confluent", "admin"),
        }
        _prepare(conf, coordinator=0)
        committed = _transactions(conf)
        assert sorted(_read_committed(conf, len(committed))) == sorted(committed)
    assert (tmp_path / "tls" / "ca.pem").exists()  # shared: kept


def test_tls_refusals_are_authentication_failures(zk_connect: str, tmp_path: Path) -> None:
    """A peer whose certificate this broker's truststore does not trust, and a broker without
    a keystore towards a peer requiring client certificates: both refused as TLS handshake
    failures (what `txn.marker_failed` reports), never sent in clear."""
    import asyncio
    import dataclasses

    from zkbroker import Security
    from zkbroker.broker.peers.client import PeerAuthenticationFailed, PeerClient
    from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
    from zkbroker.broker.security.tls import client_context

    security = Security(protocol="SSL", mechanisms=(), users={}, client_auth="required")
    with Cluster(brokers=1, port=0, zookeeper=zk_connect, security=security) as cluster:
        own = cluster.settings.inter_broker_security()
        port = cluster.brokers[0].port
        stranger = _Tls(tmp_path)  # another CA
        untrusting = dataclasses.replace(
            own, ssl_context=client_context({**dict(cluster.settings.broker_configs), **{
                "ssl.truststore.location": stranger.ca}})
        )  # fmt: skip
        anonymous = dataclasses.replace(
            own, ssl_context=client_context({"ssl.truststore.type": "PEM",
                                             "ssl.truststore.location": stranger.ca})
        )  # fmt: skip
        assert anonymous.ssl_context is not None and cluster.security is not None
        anonymous.ssl_context.load_verify_locations(cafile=cluster.security.ca_file)

        async def refused(inter_broker: Any) -> PeerAuthenticationFailed:
            client = PeerClient(inter_broker)
            try:
                with pytest.raises(PeerAuthenticationFailed) as failure:
                    await client.send("127.0.0.1", port, 0, ApiVersionsRequest())
                assert client.open_connections == 0
                return failure.value
            finally:
                await client.close()

        untrusted = asyncio.run(refused(untrusting))
        assert untrusted.error == "SSL_HANDSHAKE_FAILED" and "CERTIFICATE_VERIFY_FAILED" in str(
            untrusted
        )
        without_certificate = asyncio.run(refused(anonymous))
        assert without_certificate.error == "SSL_HANDSHAKE_FAILED"

        async def accepted() -> int:
            client = PeerClient(own)
            try:
                return int(
                    (await client.send("127.0.0.1", port, 0, ApiVersionsRequest())).error_code
                )
            finally:
                await client.close()

        assert asyncio.run(accepted()) == 0  # the broker's own keystore and truststore


def test_a_tls_peer_resetting_before_its_first_answer_refused_the_handshake(
    tmp_path: Path,
) -> None:
    """TLS 1.3 refuses a client certificate after the handshake completed on the client's
    side: the peer then closes, and with the request unread its socket may reset instead of
    ending. Both are the same refusal (regression: a reset was reported as an unreachable
    peer, once in a full run of the suite). A real TLS server that resets every connection
    right after its handshake."""
    import asyncio
    import socket
    import ssl
    import struct

    from zkbroker.broker.peers.client import PeerAuthenticationFailed, PeerClient
    from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
    from zkbroker.broker.security.inter_broker import InterBrokerSecurity

    tls = _Tls(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(tls.broker)
    client_context = ssl.create_default_context(cafile=tls.ca)

    async def scenario() -> PeerAuthenticationFailed:
        async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(4)  # the request has started arriving: the handshake is done
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()  # a reset, with the rest of the request unread

        server = await asyncio.start_server(reset, "127.0.0.1", 0, ssl=server_context)
        port = server.sockets[0].getsockname()[1]
        client = PeerClient(InterBrokerSecurity("SSL", "SSL", ssl_context=client_context))
        try:
            with pytest.raises(PeerAuthenticationFailed) as failure:
                await client.send("127.0.0.1", port, 0, ApiVersionsRequest())
            return failure.value
        finally:
            await client.close()
            server.close()
            await server.wait_closed()

    refused = asyncio.run(scenario())
    assert refused.error == "SSL_HANDSHAKE_FAILED"
    assert "before its first answer" in str(refused)
