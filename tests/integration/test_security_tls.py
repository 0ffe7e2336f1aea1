"""TLS listeners over real TLS against a real ZooKeeper: SSL with and without client
certificates (the principal mapped from the certificate's DN by ssl.principal.mapping.rules),
SASL_SSL with SCRAM-SHA-512 and PLAIN through confluent-kafka, kafka-python and aiokafka, and
clients refused (plaintext on a TLS listener, no or an expired client certificate) while others
go on."""

from __future__ import annotations

import asyncio
import datetime
import logging
import socket
import ssl
from collections.abc import Iterator
from typing import Any

import pytest

from zkbroker import Cluster
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.security.cluster_security import Security
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.toolkit.zookeeper import ZooKeeperEndpoint, fresh_chroot


def _cluster(zk: ZooKeeperEndpoint, security: Security, **options: Any) -> Cluster:
    return Cluster(
        brokers=1, port=0, zookeeper=fresh_chroot(zk.connect_string), security=security, **options
    )


@pytest.fixture(scope="module")
def mtls_cluster(zk_test_zookeeper: ZooKeeperEndpoint) -> Iterator[Cluster]:
    security = Security(
        protocol="SSL",
        mechanisms=(),
        client_auth="required",
        client_cn="app-client",
        principal_mapping_rules="RULE:^CN=([^,]*),.*$/$1/U,DEFAULT",
    )
    with _cluster(zk_test_zookeeper, security) as cluster:
        yield cluster


# How a refused TLS client sees the refusal: the broker's alert or its close. Not a timeout
# (an OSError too): a broker that never answered would not have refused anything.
REFUSED = (ssl.SSLError, ConnectionError)


def _tls_metadata(cluster: Cluster, ctx: ssl.SSLContext) -> list[int]:
    """Broker ids of a Metadata v9 answer over TLS with `ctx`."""
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    raw = socket.create_connection((host, int(port)), timeout=10)
    client = WireClient.__new__(WireClient)
    client.sock = ctx.wrap_socket(raw, server_hostname=host)
    client.client_id = "tls-test"
    client._correlation = 0
    try:
        return [b.node_id for b in client.request(9, MetadataRequest(topics=[])).brokers]
    finally:
        client.close()


def test_mtls_client_certificate_principal(
    mtls_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    security = mtls_cluster.security
    assert security is not None
    caplog.set_level(logging.DEBUG, logger="zkbroker.broker.server.listener")
    assert _tls_metadata(mtls_cluster, security.ssl_context()) == [0]
    principals = {r.msg.get("principal") for r in caplog.records if isinstance(r.msg, dict)}
    # The DN CN=app-client,OU=...,O=... mapped by RULE:^CN=([^,]*),.*$/$1/U.
    assert "User:APP-CLIENT" in principals


def test_mtls_refuses_a_client_without_certificate_and_plaintext(mtls_cluster: Cluster) -> None:
    security = mtls_cluster.security
    assert security is not None
    with pytest.raises(REFUSED):
        _tls_metadata(mtls_cluster, security.ssl_context(client_certificate=False))
    with WireClient.to(mtls_cluster.bootstrap_servers) as plaintext:
        _, data = plaintext.frame(3, 9, MetadataRequest(topics=[]))
        plaintext.send_raw(data)
        assert plaintext.is_closed_by_peer()
    # Nobody else was harmed.
    assert _tls_metadata(mtls_cluster, security.ssl_context()) == [0]


def test_mtls_real_clients(mtls_cluster: Cluster) -> None:
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaProducer

    security = mtls_cluster.security
    assert security is not None
    bootstrap = mtls_cluster.bootstrap_servers
    conf = {"bootstrap.servers": bootstrap, **security.client_config("confluent")}
    assert list(AdminClient(conf).list_topics(timeout=15).brokers) == [0]
    producer = KafkaProducer(bootstrap_servers=bootstrap, **security.client_config())
    producer.send("tls-topic", b"x").get(timeout=15)
    producer.close()


def test_untrusted_client_certificate_is_refused(mtls_cluster: Cluster, tmp_path: Any) -> None:
    import trustme

    security = mtls_cluster.security
    assert security is not None
    # A certificate from another CA, and one from no CA at all the broker trusts: refused.
    stranger = trustme.CA().issue_cert("x@zkbroker.test", common_name="stranger")
    ctx = ssl.create_default_context(cafile=security.ca_file)
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    for blob in stranger.cert_chain_pems:
        blob.write_to_path(str(cert), append=True)
    stranger.private_key_pem.write_to_path(str(key))
    ctx.load_cert_chain(str(cert), str(key))
    with pytest.raises(REFUSED):
        _tls_metadata(mtls_cluster, ctx)
    assert _tls_metadata(mtls_cluster, security.ssl_context()) == [0]


def test_expired_certificate_from_the_trusted_ca_is_refused(
    zk_test_zookeeper: ZooKeeperEndpoint, tmp_path: Any
) -> None:
    import trustme

    ca = trustme.CA()
    server = ca.issue_cert("localhost", "127.0.0.1")
    old = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    expired = ca.issue_cert(
        "old@zkbroker.test",
        common_name="old",
        not_before=old,
        not_after=old + datetime.timedelta(days=1),
    )
    keystore, ca_file = tmp_path / "server.pem", tmp_path / "ca.pem"
    server.private_key_and_cert_chain_pem.write_to_path(str(keystore))
    ca.cert_pem.write_to_path(str(ca_file))
    configs = (
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", str(keystore)),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", str(ca_file)),
        ("ssl.client.auth", "required"),
    )
    with Cluster(
        brokers=1,
        port=0,
        listener_name="SSL",
        broker_configs=configs,
        zookeeper=fresh_chroot(zk_test_zookeeper.connect_string),
    ) as cluster:
        cert, key = tmp_path / "old.pem", tmp_path / "old-key.pem"
        for blob in expired.cert_chain_pems:
            blob.write_to_path(str(cert), append=True)
        expired.private_key_pem.write_to_path(str(key))
        ctx = ssl.create_default_context(cafile=str(ca_file))
        ctx.load_cert_chain(str(cert), str(key))
        with pytest.raises(REFUSED):
            _tls_metadata(cluster, ctx)


def test_sasl_ssl_scram_and_plain_with_every_client(zk_test_zookeeper: ZooKeeperEndpoint) -> None:
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient

    security = Security(
        protocol="SASL_SSL", mechanisms=("SCRAM-SHA-512", "PLAIN"), users={"alice": "pw-a"}
    )
    with _cluster(zk_test_zookeeper, security, kafka_version="3.9") as cluster:
        prepared = cluster.security
        assert prepared is not None
        bootstrap = cluster.bootstrap_servers
        for mechanism in ("SCRAM-SHA-512", "PLAIN"):
            conf = {
                "bootstrap.servers": bootstrap,
                **prepared.client_config("confluent", mechanism=mechanism),
            }
            assert list(AdminClient(conf).list_topics(timeout=15).brokers) == [0]
            admin = KafkaAdminClient(
                bootstrap_servers=bootstrap, **prepared.client_config(mechanism=mechanism)
            )
            assert admin.list_topics() == []
            admin.close()

        async def aiokafka_produce() -> None:
            from aiokafka import AIOKafkaProducer

            producer = AIOKafkaProducer(
                bootstrap_servers=bootstrap, **prepared.client_config("aiokafka")
            )
            await producer.start()
            try:
                await producer.send_and_wait("tls-sasl", b"v")
            finally:
                await producer.stop()

        asyncio.run(aiokafka_produce())
        # A plaintext client on the TLS listener: closed, nothing else harmed.
        with WireClient.to(bootstrap) as plaintext:
            data = b"\x00\x00\x00\x10" + b"\x00" * 16  # any bytes that are not a ClientHello
            plaintext.send_raw(data)
            assert plaintext.is_closed_by_peer()
        conf = {"bootstrap.servers": bootstrap, **prepared.client_config("confluent")}
        assert list(AdminClient(conf).list_topics(timeout=15).brokers) == [0]


def test_a_stalled_handshake_holds_nobody_else(mtls_cluster: Cluster) -> None:
    """A client that connects to the TLS listener and sends nothing: its handshake waits on
    its own connection while other clients complete theirs and are answered."""
    security = mtls_cluster.security
    assert security is not None
    host, port = mtls_cluster.bootstrap_servers.rsplit(":", 1)
    silent = [socket.create_connection((host, int(port)), timeout=10) for _ in range(5)]
    try:
        for _ in range(3):
            assert _tls_metadata(mtls_cluster, security.ssl_context()) == [0]
    finally:
        for sock in silent:
            sock.close()


def test_zk_secure_cluster_fixture(zk_secure_cluster: Cluster) -> None:
    from confluent_kafka.admin import AdminClient

    security = zk_secure_cluster.security
    assert security is not None and security.listener_name == "SASL_SSL"
    conf = {
        "bootstrap.servers": zk_secure_cluster.bootstrap_servers,
        **security.client_config("confluent"),  # admin / admin-secret, SCRAM-SHA-512
    }
    assert list(AdminClient(conf).list_topics(timeout=15).brokers) == [0]
