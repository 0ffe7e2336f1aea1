"""SASL on a SASL_PLAINTEXT listener, over real TCP against a real ZooKeeper: the exchange as
Kafka's SaslServerAuthenticator runs it (raw wire client, byte-exact errors), real clients
(kafka-python, confluent-kafka, aiokafka) with PLAIN and SCRAM, SCRAM credentials altered
through the admin APIs or written by plain kazoo in Kafka's format, and KIP-368
re-authentication."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import scramp
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.broker.protocol import decode_response, error_codes
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from zkbroker.broker.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from zkbroker.broker.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from zkbroker.broker.protocol.messages.sasl_handshake import SaslHandshakeRequest
from zkbroker.broker.security.cluster_security import Security
from zkbroker.broker.security.scram import credential_from_password
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.toolkit.zookeeper import ZooKeeperEndpoint, fresh_chroot

USERS = {"alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture(scope="module")
def sasl_cluster(zk_test_zookeeper: ZooKeeperEndpoint) -> Iterator[Cluster]:
    security = Security(
        protocol="SASL_PLAINTEXT",
        mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
        users=USERS,
    )
    zookeeper = fresh_chroot(zk_test_zookeeper.connect_string)
    with Cluster(
        brokers=1,
        port=0,
        zookeeper=zookeeper,
        security=security,
        kafka_version="3.9",
        broker_configs=(("connection.failed.authentication.delay.ms", "0"),),
    ) as cluster:
        yield cluster


def _handshake(client: WireClient, mechanism: str, version: int = 1) -> Any:
    return client.request(version, SaslHandshakeRequest(mechanism=mechanism))


def _authenticate(client: WireClient, token: bytes, version: int = 2) -> Any:
    return client.request(version, SaslAuthenticateRequest(auth_bytes=token))


def _scram_login(client: WireClient, mechanism: str, user: str, password: str) -> Any:
    """The whole SCRAM exchange; the last SaslAuthenticate answer (or the failing one)."""
    assert _handshake(client, mechanism).error_code == error_codes.NONE
    scram = scramp.ScramClient([mechanism], user, password)
    first = _authenticate(client, scram.get_client_first().encode())
    if first.error_code:
        return first
    scram.set_server_first(first.auth_bytes.decode())
    final = _authenticate(client, scram.get_client_final().encode())
    if final.error_code == error_codes.NONE:
        scram.set_server_final(final.auth_bytes.decode())  # verifies the server's signature
    return final


def _knows(cluster: Cluster, user: str, mechanism: str) -> bool:
    """Whether broker 0's credential cache holds the user's credential now."""
    broker = cluster.engine.brokers[0]
    return cluster.run_sync(lambda: broker.knows_scram_credential(user, mechanism))


def _metadata_works(cluster: Cluster, user: str = "alice") -> None:
    with WireClient.to(cluster.bootstrap_servers) as client:
        assert _handshake(client, "PLAIN").error_code == error_codes.NONE
        ok = _authenticate(client, f"\0{user}\0{USERS[user]}".encode())
        assert ok.error_code == error_codes.NONE
        answer = client.request(9, MetadataRequest(topics=[]))
        assert [b.node_id for b in answer.brokers] == [0]


def test_plain_handshake_lists_enabled_mechanisms_and_authenticates(sasl_cluster: Cluster) -> None:
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        versions = client.request(
            3, ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        keys = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert keys[17] == (0, 1) and keys[36] == (0, 2) and keys[50] == (0, 0)
        handshake = _handshake(client, "PLAIN")
        assert handshake.error_code == error_codes.NONE
        assert handshake.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        ok = _authenticate(client, b"\0alice\0alice-secret")
        assert (ok.error_code, ok.error_message, ok.auth_bytes, ok.session_lifetime_ms) == (
            0,
            None,
            b"",
            0,
        )
        assert client.request(9, MetadataRequest(topics=[])).brokers[0].node_id == 0
        # After authentication the API layer answers as KafkaApis does.
        again = _handshake(client, "PLAIN")
        assert (again.error_code, again.mechanisms) == (error_codes.ILLEGAL_SASL_STATE, [])
        late = _authenticate(client, b"\0alice\0alice-secret")
        assert late.error_code == error_codes.ILLEGAL_SASL_STATE
        assert late.error_message == (
            "SaslAuthenticate request received after successful authentication"
        )


def test_plain_wrong_password_is_refused_with_kafkas_message(sasl_cluster: Cluster) -> None:
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        _handshake(client, "PLAIN")
        refused = _authenticate(client, b"\0alice\0wrong")
        assert refused.error_code == error_codes.SASL_AUTHENTICATION_FAILED
        assert refused.error_message == "Authentication failed: Invalid username or password"
        assert client.is_closed_by_peer()
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        _handshake(client, "PLAIN")
        refused = _authenticate(client, b"\0nobody\0x")
        assert refused.error_message == "Authentication failed: Invalid username or password"
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        _handshake(client, "PLAIN")
        refused = _authenticate(client, b"alice-secret")
        assert refused.error_message == "Invalid SASL/PLAIN response: expected 3 tokens, got 1"
    _metadata_works(sasl_cluster)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_exchange_and_failures(sasl_cluster: Cluster, mechanism: str) -> None:
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        done = _scram_login(client, mechanism, "bob", "bob-secret")
        assert done.error_code == error_codes.NONE
        assert client.request(9, MetadataRequest(topics=[])).brokers[0].node_id == 0
    generic = (
        "Authentication failed during authentication due to invalid credentials with SASL "
        f"mechanism {mechanism}"
    )
    for user, password in (("bob", "wrong"), ("nobody", "x")):
        with WireClient.to(sasl_cluster.bootstrap_servers) as client:
            refused = _scram_login(client, mechanism, user, password)
            assert (refused.error_code, refused.error_message) == (
                error_codes.SASL_AUTHENTICATION_FAILED,
                generic,
            )
            assert client.is_closed_by_peer()
    _metadata_works(sasl_cluster)


def test_unsupported_mechanism_lists_the_enabled_ones_then_closes(sasl_cluster: Cluster) -> None:
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        refused = _handshake(client, "GSSAPI")
        assert refused.error_code == error_codes.UNSUPPORTED_SASL_MECHANISM
        assert refused.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert client.is_closed_by_peer()
    _metadata_works(sasl_cluster)


def test_requests_before_authentication(sasl_cluster: Cluster) -> None:
    # During the handshake: anything but ApiVersions/SaslHandshake closes, unanswered.
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        _, data = client.frame(3, 9, MetadataRequest(topics=[]))
        client.send_raw(data)
        assert client.is_closed_by_peer()
    # During the SaslAuthenticate exchange: ILLEGAL_SASL_STATE in that request's own answer.
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        _handshake(client, "PLAIN")
        answer = client.request(9, MetadataRequest(topics=[MetadataRequestTopic(name="t")]))
        assert [(t.name, t.error_code) for t in answer.topics] == [
            ("t", error_codes.ILLEGAL_SASL_STATE)
        ]
        assert client.is_closed_by_peer()
    # ... with the exception's message where the answer has one.
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        _handshake(client, "PLAIN")
        created = client.request(
            5,
            CreateTopicsRequest(
                topics=[CreatableTopic(name="t", num_partitions=1, replication_factor=1)],
                timeout_ms=1000,
            ),
        )
        assert [(t.name, t.error_code, t.error_message) for t in created.topics] == [
            (
                "t",
                error_codes.ILLEGAL_SASL_STATE,
                "Unexpected Kafka request of type CREATE_TOPICS during SASL authentication.",
            )
        ]
        assert client.is_closed_by_peer()
    # A second ApiVersions before the handshake: closed (Kafka's IllegalStateException).
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        client.request(0, ApiVersionsRequest())
        _, data = client.frame(18, 0, ApiVersionsRequest())
        client.send_raw(data)
        assert client.is_closed_by_peer()


def test_handshake_v0_takes_raw_tokens(sasl_cluster: Cluster) -> None:
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        assert _handshake(client, "PLAIN", version=0).error_code == error_codes.NONE
        client.send_raw(len(b"\0alice\0alice-secret").to_bytes(4, "big") + b"\0alice\0alice-secret")
        assert client.recv_frame() == b""  # PLAIN's empty challenge, size-prefixed
        assert client.request(0, MetadataRequest(topics=[])).brokers[0].node_id == 0
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        _handshake(client, "PLAIN", version=0)
        client.send_raw(len(b"\0alice\0bad").to_bytes(4, "big") + b"\0alice\0bad")
        assert client.is_closed_by_peer()  # no error can be sent after a v0 handshake


def test_real_clients_with_plain_and_scram(sasl_cluster: Cluster) -> None:
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaConsumer, KafkaProducer

    security = sasl_cluster.security
    assert security is not None
    bootstrap = sasl_cluster.bootstrap_servers
    conf = {
        "bootstrap.servers": bootstrap,
        **security.client_config("confluent", "bob", "SCRAM-SHA-512"),
    }
    assert list(AdminClient(conf).list_topics(timeout=15).brokers) == [0]
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        **security.client_config("kafka-python", "alice", "SCRAM-SHA-256"),
    )
    producer.send("secured", b"hello").get(timeout=15)
    producer.close()
    consumer = KafkaConsumer(
        "secured",
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10000,
        **security.client_config("kafka-python", "alice", "PLAIN"),
    )
    assert [m.value for m in consumer][:1] == [b"hello"]
    consumer.close()

    async def aiokafka_round_trip() -> list[str]:
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(
            bootstrap_servers=bootstrap,
            **security.client_config("aiokafka", "bob", "SCRAM-SHA-512"),
        )
        await admin.start()
        try:
            return list(await admin.list_topics())
        finally:
            await admin.close()

    assert "secured" in asyncio.run(aiokafka_round_trip())


def test_confluent_sees_kafkas_authentication_error(sasl_cluster: Cluster) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    security = sasl_cluster.security
    assert security is not None
    errors: list[str] = []
    conf = {
        "bootstrap.servers": sasl_cluster.bootstrap_servers,
        **security.client_config("confluent", "alice", "PLAIN", password="nope"),
        "error_cb": lambda e: errors.append(e.str()),
    }
    admin = AdminClient(conf)
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    wait_until(lambda: admin.poll(0.2) is not None and errors)
    assert any("Authentication failed: Invalid username or password" in e for e in errors)
    _metadata_works(sasl_cluster)


def test_scram_credentials_through_the_admin_apis(sasl_cluster: Cluster) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    security = sasl_cluster.security
    assert security is not None
    admin = AdminClient(
        {
            "bootstrap.servers": sasl_cluster.bootstrap_servers,
            **security.client_config("confluent", "alice", "PLAIN"),
        }
    )
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("carol", info, b"carol-secret", b"salt-of-carol")]
    )
    futures["carol"].result(timeout=15)
    described = admin.describe_user_scram_credentials(["carol"])["carol"].result(timeout=15)
    assert [(c.mechanism, c.iterations) for c in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_256, 8192)
    ]
    wait_until(lambda: _knows(sasl_cluster, "carol", "SCRAM-SHA-256"))
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        assert _scram_login(client, "SCRAM-SHA-256", "carol", "carol-secret").error_code == 0

    # Kafka's validations, per user.
    too_few = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 1000)
    futures = admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion("dave", too_few, b"pw"),
            UserScramCredentialDeletion("erin", ScramMechanism.SCRAM_SHA_512),
        ]
    )
    with pytest.raises(Exception, match="Too few iterations"):
        futures["dave"].result(timeout=15)
    with pytest.raises(Exception, match="Attempt to delete a user credential that does not exist"):
        futures["erin"].result(timeout=15)
    with pytest.raises(
        Exception, match="Attempt to describe a user credential that does not exist"
    ):
        admin.describe_user_scram_credentials(["erin"])["erin"].result(timeout=15)

    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)]
    )
    futures["carol"].result(timeout=15)
    wait_until(lambda: not _knows(sasl_cluster, "carol", "SCRAM-SHA-256"))
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        refused = _scram_login(client, "SCRAM-SHA-256", "carol", "carol-secret")
        assert refused.error_code == error_codes.SASL_AUTHENTICATION_FAILED


def test_credential_written_by_kazoo_applies_live(sasl_cluster: Cluster) -> None:
    kazoo = KazooClient(hosts=sasl_cluster.zookeeper_connect)
    kazoo.start(timeout=15)
    try:
        credential = credential_from_password("SCRAM-SHA-512", "frank-secret", 4096)
        kazoo.create(
            "/config/users/frank",
            json.dumps({"version": 1, "config": {"SCRAM-SHA-512": credential.to_text()}}).encode(),
            makepath=True,
        )
        kazoo.create(
            "/config/changes/config_change_",
            json.dumps({"version": 2, "entity_path": "users/frank"}).encode(),
            sequence=True,
        )
    finally:
        kazoo.stop()
        kazoo.close()
    wait_until(lambda: _knows(sasl_cluster, "frank", "SCRAM-SHA-512"))
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        assert _scram_login(client, "SCRAM-SHA-512", "frank", "frank-secret").error_code == 0


def test_reauthentication_and_session_expiry(zk_test_zookeeper: ZooKeeperEndpoint) -> None:
    security = Security(
        protocol="SASL_PLAINTEXT", mechanisms=("PLAIN",), users=USERS, reauth_ms=1500
    )
    with Cluster(
        brokers=1,
        port=0,
        zookeeper=fresh_chroot(zk_test_zookeeper.connect_string),
        security=security,
    ) as cluster:
        with WireClient.to(cluster.bootstrap_servers) as client:
            _handshake(client, "PLAIN")
            ok = _authenticate(client, b"\0alice\0alice-secret", version=1)
            assert ok.session_lifetime_ms == 1500
            # KIP-368: a new handshake on the authenticated connection re-authenticates.
            assert _handshake(client, "PLAIN").error_code == error_codes.NONE
            again = _authenticate(client, b"\0alice\0alice-secret", version=1)
            assert (again.error_code, again.session_lifetime_ms) == (0, 1500)
            assert client.request(9, MetadataRequest(topics=[])).brokers
            # Another principal may not take the connection over.
            time.sleep(1.1)  # re-authentication is allowed once a second
            assert _handshake(client, "PLAIN").error_code == error_codes.NONE
            changed = _authenticate(client, b"\0bob\0bob-secret", version=1)
            assert changed.error_code == error_codes.SASL_AUTHENTICATION_FAILED
            assert changed.error_message == (
                "Cannot change principals during re-authentication from User.alice: User.bob"
            )
            assert client.is_closed_by_peer()
        with WireClient.to(cluster.bootstrap_servers) as client:
            _handshake(client, "PLAIN")
            _authenticate(client, b"\0alice\0alice-secret", version=1)
            time.sleep(1.7)  # past the session lifetime: the next request closes
            _, data = client.frame(3, 9, MetadataRequest(topics=[]))
            client.send_raw(data)
            assert client.is_closed_by_peer()


def test_sasl_apis_on_a_plaintext_listener(zk_cluster: Cluster) -> None:
    with WireClient.to(zk_cluster.bootstrap_servers) as client:
        handshake = _handshake(client, "PLAIN")
        assert (handshake.error_code, handshake.mechanisms) == (error_codes.ILLEGAL_SASL_STATE, [])
        answer = _authenticate(client, b"\0a\0b", version=0)
        assert answer.error_code == error_codes.ILLEGAL_SASL_STATE
        assert answer.error_message == (
            "SaslAuthenticate request received after successful authentication"
        )
        assert client.request(9, MetadataRequest(topics=[])).brokers


def test_security_configs_in_describe_configs(sasl_cluster: Cluster) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    security = sasl_cluster.security
    assert security is not None
    admin = AdminClient(
        {
            "bootstrap.servers": sasl_cluster.bootstrap_servers,
            **security.client_config("confluent", "alice", "PLAIN"),
        }
    )
    resource = ConfigResource(ResourceType.BROKER, "0")
    entries = admin.describe_configs([resource])[resource].result(timeout=15)
    jaas = entries["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert (jaas.value, jaas.is_sensitive) == (None, True)
    assert entries["sasl.enabled.mechanisms"].value == "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    assert entries["listeners"].value.startswith("SASL_PLAINTEXT://")
    assert entries["inter.broker.listener.name"].value == "SASL_PLAINTEXT"


def test_registration_names_the_listener_and_its_protocol(sasl_cluster: Cluster) -> None:
    zk = KazooClient(hosts=sasl_cluster.zookeeper_connect)
    zk.start(timeout=15)
    try:
        registration = json.loads(zk.get("/brokers/ids/0")[0])
    finally:
        zk.stop()
        zk.close()
    port = sasl_cluster.brokers[0].port
    assert registration["endpoints"] == [f"SASL_PLAINTEXT://127.0.0.1:{port}"]
    assert registration["listener_security_protocol_map"] == {"SASL_PLAINTEXT": "SASL_PLAINTEXT"}


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_kcat_logs_in(sasl_cluster: Cluster, mechanism: str) -> None:
    """The system's librdkafka (kcat) repeats the client nonce in SCRAM's final message;
    Kafka accepts it (`endsWith`), so must zkbroker."""
    import shutil
    import subprocess

    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed")
    done = subprocess.run(
        ["kcat", "-L", "-b", sasl_cluster.bootstrap_servers, "-m", "10",
         "-X", "security.protocol=SASL_PLAINTEXT", "-X", f"sasl.mechanism={mechanism}",
         "-X", "sasl.username=bob", "-X", "sasl.password=bob-secret"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert "broker 0 at" in done.stdout, done.stderr


@pytest.mark.parametrize("release", ["0.10.2", "1.0", "2.1"])
def test_older_releases_authenticate_as_they_did(
    zk_test_zookeeper: ZooKeeperEndpoint, release: str
) -> None:
    """0.10.2: SaslHandshake v0 only (raw SCRAM tokens); 1.0-2.1: SaslAuthenticate v0 (no
    session lifetime). librdkafka picks what ApiVersions offers."""
    from confluent_kafka.admin import AdminClient

    security = Security(
        protocol="SASL_PLAINTEXT", mechanisms=("SCRAM-SHA-256",), users={"old": "old-secret"}
    )
    with Cluster(
        brokers=1,
        port=0,
        zookeeper=fresh_chroot(zk_test_zookeeper.connect_string),
        security=security,
        kafka_version=release,
    ) as cluster:
        prepared = cluster.security
        assert prepared is not None
        conf = {
            "bootstrap.servers": cluster.bootstrap_servers,
            **prepared.client_config("confluent"),
        }
        assert list(AdminClient(conf).list_topics(timeout=15).brokers) == [0]
        with WireClient.to(cluster.bootstrap_servers) as client:
            if release == "0.10.2":
                _, data = client.frame(17, 1, SaslHandshakeRequest(mechanism="SCRAM-SHA-256"))
                client.send_raw(data)  # v1 did not exist yet: closed
                assert client.is_closed_by_peer()
            else:
                assert _handshake(client, "SCRAM-SHA-256").error_code == 0
                _, data = client.frame(36, 1, SaslAuthenticateRequest(auth_bytes=b"x"))
                client.send_raw(data)  # v1 came with 2.2 (KIP-368): closed
                assert client.is_closed_by_peer()


def test_request_in_the_same_write_as_sasl_authenticate_is_answered(sasl_cluster: Cluster) -> None:
    """A client may send its first request right behind SaslAuthenticate, in one TCP write:
    the request is already buffered when authentication completes and must be answered (it
    once failed with "Cannot enter into task" and closed the connection)."""
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        assert _handshake(client, "PLAIN").error_code == error_codes.NONE
        login = SaslAuthenticateRequest(auth_bytes=b"\0bob\0bob-secret")
        auth_id, auth = client.frame(36, 2, login)
        meta_id, meta = client.frame(3, 9, MetadataRequest(topics=None))
        versions_id, versions = client.frame(18, 3, ApiVersionsRequest(
            client_software_name="t", client_software_version="1"))  # fmt: skip
        client.send_raw(auth + meta + versions)  # one sendall: a single write
        got, ok = decode_response(36, 2, client.recv_frame())
        assert (got, ok.error_code, ok.error_message) == (auth_id, error_codes.NONE, None)
        got, metadata = decode_response(3, 9, client.recv_frame())
        assert got == meta_id
        port = sasl_cluster.brokers[0].port
        assert [(b.node_id, b.port) for b in metadata.brokers] == [(0, port)]
        got, api_versions = decode_response(18, 3, client.recv_frame())
        assert (got, api_versions.error_code) == (versions_id, error_codes.NONE)
        # The connection stays usable afterwards.
        assert client.request(9, MetadataRequest(topics=[])).brokers[0].node_id == 0
        assert not client.is_closed_by_peer(timeout=0.2)


def test_pipelined_requests_after_sasl_are_answered_in_order(sasl_cluster: Cluster) -> None:
    with WireClient.to(sasl_cluster.bootstrap_servers) as client:
        assert _handshake(client, "PLAIN").error_code == error_codes.NONE
        assert _authenticate(client, b"\0alice\0alice-secret").error_code == error_codes.NONE
        frames = []
        expected = []
        for i in range(30):
            if i % 2:
                body = ApiVersionsRequest(client_software_name="t", client_software_version="1")
                correlation, frame = client.frame(18, i % 4, body)
                expected.append((correlation, 18, i % 4))
            else:
                version = 1 + i % 12  # topics=None (all topics) needs v1+
                correlation, frame = client.frame(3, version, MetadataRequest(topics=None))
                expected.append((correlation, 3, version))
            frames.append(frame)
        client.send_raw(b"".join(frames))  # one sendall: all requests in a single write
        for correlation, api_key, version in expected:
            got, response = decode_response(api_key, version, client.recv_frame())
            assert got == correlation
            if api_key == 3:
                assert [b.node_id for b in response.brokers] == [0]
            else:
                assert response.error_code == error_codes.NONE
