"""SASL GSSAPI (Kerberos) against a real MIT KDC (`tests.integration.kerberos`) started for this
module on 127.0.0.1: the broker's keytab login from `listener.name.<l>.gssapi.sasl.jaas.config`,
real clients (kafka-python and aiokafka through the `gssapi` package, kcat's librdkafka through
Cyrus SASL; confluent-kafka when its librdkafka has GSSAPI), the exchange on the wire
(SaslAuthenticate, raw tokens after a v0 handshake, the 0.9 header-less first token),
refusals with Kafka's messages, and
`sasl.kerberos.principal.to.local.rules` giving the ACLs' `User:` names."""

from __future__ import annotations

import asyncio
import os
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.kerberos import REALM, Kdc, missing_tools, start_kdc
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.framing import size_prefixed
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from zkbroker.broker.protocol.messages.sasl_handshake import SaslHandshakeRequest
from zkbroker.broker.security.cluster_security import Security
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.toolkit.zookeeper import ZooKeeperEndpoint, fresh_chroot

gssapi = pytest.importorskip("gssapi", reason="the gssapi package (zkbroker[security])")

SERVICE = "kafka/127.0.0.1"
ADMIN = {"admin": "admin-secret"}
# App-* principals map to their lowered suffix, other one-component names to themselves;
# two-component client names (svc/host) map to nothing.
RULES = r"RULE:[1:$1](App-.*)s/App-(.*)/$1/L, RULE:[1:$1]"
AUTHORIZER = ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")
GENERIC_FAILURE = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism GSSAPI"
)


@pytest.fixture(scope="module")
def kdc() -> Iterator[Kdc]:
    missing = missing_tools()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"MIT Kerberos tools missing in CI: {missing} (make system-deps)")
        pytest.skip(f"MIT Kerberos tools missing: {missing} (Debian's krb5-kdc, ...)")
    kdc = start_kdc()
    saved = {k: os.environ.get(k) for k in kdc.environment()}
    os.environ.update(kdc.environment())
    try:
        kdc.add_principal(SERVICE)
        kdc.add_principal("other/127.0.0.1")  # in the KDC, not in the broker's keytab
        for client in ("App-Writer", "alice", "svc/127.0.0.1"):
            kdc.add_principal(client)
        yield kdc
    finally:
        kdc.stop()
        assert not kdc.running
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _jaas(keytab: Path, principal: str = f"{SERVICE}@{REALM}", store_key: str = "true") -> str:
    return (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
        f'storeKey={store_key} keyTab="{keytab}" principal="{principal}";'
    )


@pytest.fixture(scope="module")
def gss_cluster(kdc: Kdc, zk_test_zookeeper: ZooKeeperEndpoint) -> Iterator[Cluster]:
    security = Security(
        protocol="SASL_PLAINTEXT",
        mechanisms=("GSSAPI", "PLAIN"),
        users=ADMIN,
        inter_broker_mechanism="PLAIN",
    )
    with Cluster(
        brokers=1,
        port=0,
        zookeeper=fresh_chroot(zk_test_zookeeper.connect_string),
        security=security,
        kafka_version="3.9",
        broker_configs=(
            ("connection.failed.authentication.delay.ms", "0"),
            ("sasl.kerberos.service.name", "kafka"),
            ("sasl.kerberos.principal.to.local.rules", RULES),
            ("listener.name.sasl_plaintext.gssapi.sasl.jaas.config", _jaas(kdc.keytabs[SERVICE])),
            AUTHORIZER,
            ("super.users", "User:admin"),
        ),
    ) as cluster:
        yield cluster


class _As:
    """The process's Kerberos credential cache switched to `principal`'s (kinit from its
    keytab) while the block runs: the clients' GSSAPI takes it from KRB5CCNAME."""

    def __init__(self, kdc: Kdc, principal: str) -> None:
        self._cache = kdc.kinit(principal)
        self._saved: str | None = None

    def __enter__(self) -> None:
        self._saved = os.environ.get("KRB5CCNAME")
        os.environ["KRB5CCNAME"] = self._cache

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None:
            os.environ["KRB5CCNAME"] = self._saved


class _GssClient:
    """The client side of the exchange (RFC 4752) for the wire tests."""

    def __init__(self, service: str = "kafka", host: str = "127.0.0.1") -> None:
        name = gssapi.Name(f"{service}@{host}", gssapi.NameType.hostbased_service)
        self.ctx = gssapi.SecurityContext(name=name, usage="initiate")

    def first(self) -> bytes:
        return bytes(self.ctx.step(None))

    def reply(self, server_token: bytes) -> bytes:
        """The next token: more GSS tokens, then the answer to the security-layer offer."""
        if not self.ctx.complete:
            return bytes(self.ctx.step(server_token) or b"")
        offer = self.ctx.unwrap(server_token).message
        assert offer[0] & 1, "no-security-layer offered"
        self.offer = offer
        choice = bytes([1]) + offer[1:4] + b"ignored-authzid"
        return bytes(self.ctx.wrap(choice, False).message)


def _handshake(client: WireClient, version: int = 1) -> Any:
    return client.request(version, SaslHandshakeRequest(mechanism="GSSAPI"))


def _login(client: WireClient, gss: _GssClient) -> Any:
    """SaslHandshake v1 and SaslAuthenticate until the broker answers an empty token after
    the security-layer reply (or fails)."""
    assert _handshake(client).error_code == error_codes.NONE
    token = gss.first()
    replied_offer = False
    for _ in range(6):
        answer = client.request(2, SaslAuthenticateRequest(auth_bytes=token))
        if answer.error_code or replied_offer:
            return answer
        replied_offer = gss.ctx.complete and bool(answer.auth_bytes)
        token = gss.reply(answer.auth_bytes)
    raise AssertionError("the exchange did not end")


def test_sasl_authenticate_exchange_then_metadata(kdc: Kdc, gss_cluster: Cluster) -> None:
    with _As(kdc, "alice"), WireClient.to(gss_cluster.bootstrap_servers) as client:
        handshake = _handshake(client)
        assert handshake.mechanisms == ["GSSAPI", "PLAIN"]
        gss = _GssClient()
        token = gss.first()
        assert token[:1] == b"\x60"  # a GSS-API initial context token
        # AP-REQ -> AP-REP (mutual authentication), the client's empty answer -> the offer.
        ap_rep = client.request(2, SaslAuthenticateRequest(auth_bytes=token))
        assert (ap_rep.error_code, ap_rep.session_lifetime_ms) == (0, 0)
        gss.ctx.step(ap_rep.auth_bytes)
        assert gss.ctx.complete
        offer = client.request(2, SaslAuthenticateRequest(auth_bytes=b""))
        assert offer.error_code == 0
        done = client.request(2, SaslAuthenticateRequest(auth_bytes=gss.reply(offer.auth_bytes)))
        # No security layer, the JDK's 64 KiB buffer; the last answer is empty.
        assert gss.offer == b"\x01\x01\x00\x00"
        assert (done.error_code, done.error_message, done.auth_bytes) == (0, None, b"")
        assert [b.node_id for b in client.request(9, MetadataRequest(topics=[])).brokers] == [0]


def test_raw_tokens_after_a_v0_handshake(kdc: Kdc, gss_cluster: Cluster) -> None:
    with _As(kdc, "alice"), WireClient.to(gss_cluster.bootstrap_servers) as client:
        assert _handshake(client, version=0).error_code == error_codes.NONE
        gss = _GssClient()
        client.send_raw(size_prefixed(gss.first()))
        gss.ctx.step(client.recv_frame())
        client.send_raw(size_prefixed(b""))
        client.send_raw(size_prefixed(gss.reply(client.recv_frame())))
        # The last step has no answer at all: the next frame is Metadata's.
        answer = client.request(0, MetadataRequest(topics=[]))
        assert [b.node_id for b in answer.brokers] == [0]


def test_headerless_first_token_of_0_9_clients(kdc: Kdc, gss_cluster: Cluster) -> None:
    with _As(kdc, "alice"), WireClient.to(gss_cluster.bootstrap_servers) as client:
        gss = _GssClient()
        client.send_raw(size_prefixed(gss.first()))  # no ApiVersions, no SaslHandshake
        gss.ctx.step(client.recv_frame())
        client.send_raw(size_prefixed(b""))
        client.send_raw(size_prefixed(gss.reply(client.recv_frame())))
        assert client.request(0, MetadataRequest(topics=[])).brokers[0].node_id == 0


def test_headerless_garbage_is_closed_unanswered(gss_cluster: Cluster) -> None:
    with WireClient.to(gss_cluster.bootstrap_servers) as client:
        client.send_raw(size_prefixed(b"\x60\x01not a token"))  # raw mode: no error answer
        assert client.is_closed_by_peer()
    with WireClient.to(gss_cluster.bootstrap_servers) as client:
        assert _handshake(client).error_code == error_codes.NONE
        client.send_raw(size_prefixed(b"\x60\x01\xff"))  # past the first packet: no header
        assert client.is_closed_by_peer()


def test_ticket_for_another_service_is_refused_with_kafkas_message(
    kdc: Kdc, gss_cluster: Cluster
) -> None:
    # other/127.0.0.1 exists in the KDC, so the client gets a ticket; the broker's keytab
    # holds only kafka/127.0.0.1 and cannot accept it.
    with _As(kdc, "alice"), WireClient.to(gss_cluster.bootstrap_servers) as client:
        refused = _login(client, _GssClient(service="other"))
        assert (refused.error_code, refused.error_message) == (
            error_codes.SASL_AUTHENTICATION_FAILED,
            GENERIC_FAILURE,
        )
        assert client.is_closed_by_peer()


def test_garbage_token_is_refused(kdc: Kdc, gss_cluster: Cluster) -> None:
    with WireClient.to(gss_cluster.bootstrap_servers) as client:
        assert _handshake(client).error_code == error_codes.NONE
        refused = client.request(2, SaslAuthenticateRequest(auth_bytes=b"\x60\x03abc"))
        assert (refused.error_code, refused.error_message) == (
            error_codes.SASL_AUTHENTICATION_FAILED,
            GENERIC_FAILURE,
        )


def test_principal_with_no_short_name_is_closed_after_the_exchange(
    kdc: Kdc, gss_cluster: Cluster
) -> None:
    with _As(kdc, "svc/127.0.0.1"), WireClient.to(gss_cluster.bootstrap_servers) as client:
        done = _login(client, _GssClient())
        assert done.error_code == error_codes.NONE
        assert client.is_closed_by_peer()


def _admin(cluster: Cluster) -> Any:
    from confluent_kafka.admin import AdminClient

    assert cluster.security is not None
    conf = cluster.security.client_config("confluent", user="admin", mechanism="PLAIN")
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **conf})


def _allow(topic: str, user: str, operations: list[str]) -> list[Any]:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    bindings = []
    for op in operations:
        rtype = ResourceType.GROUP if op == "GROUP_READ" else ResourceType.TOPIC
        operation = AclOperation.READ if op == "GROUP_READ" else AclOperation[op]
        name = "*" if op == "GROUP_READ" else topic
        bindings.append(
            AclBinding(
                rtype,
                name,
                ResourcePatternType.LITERAL,
                f"User:{user}",
                "*",
                operation,
                AclPermissionType.ALLOW,
            )
        )
    return bindings


@pytest.fixture(scope="module")
def writer_topic(gss_cluster: Cluster) -> str:
    from confluent_kafka.admin import NewTopic

    admin = _admin(gss_cluster)
    topic = "gss-orders"
    for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result(timeout=30)
    # The ACLs name the short name the rules give App-Writer@ZKBROKER.TEST.
    bindings = _allow(topic, "writer", ["WRITE", "DESCRIBE", "READ", "GROUP_READ"])
    for f in admin.create_acls(bindings).values():
        f.result(timeout=30)
    return topic


def _kafka_python_conf(cluster: Cluster) -> dict[str, Any]:
    return {
        "bootstrap_servers": cluster.bootstrap_servers,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "GSSAPI",
        "sasl_kerberos_service_name": "kafka",
    }


def test_kafka_python_produces_and_consumes_as_the_mapped_user(
    kdc: Kdc, gss_cluster: Cluster, writer_topic: str
) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    with _As(kdc, "App-Writer"):
        producer = KafkaProducer(**_kafka_python_conf(gss_cluster))
        try:
            meta = producer.send(writer_topic, b"kerberos-1").get(timeout=30)
        finally:
            producer.close()
        consumer = KafkaConsumer(
            **_kafka_python_conf(gss_cluster), group_id="gss-py", auto_offset_reset="earliest"
        )
        try:
            partition = TopicPartition(writer_topic, 0)
            consumer.assign([partition])
            consumer.seek(partition, meta.offset)
            got = consumer.poll(timeout_ms=20000, max_records=1)
            assert [r.value for r in got.get(partition, [])] == [b"kerberos-1"]
        finally:
            consumer.close()


def test_acls_deny_a_principal_the_rules_map_elsewhere(
    kdc: Kdc, gss_cluster: Cluster, writer_topic: str
) -> None:
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError

    # alice authenticates (User:alice) but has no ACL on the topic.
    with _As(kdc, "alice"):
        producer = KafkaProducer(**_kafka_python_conf(gss_cluster), max_block_ms=10000)
        try:
            with pytest.raises(TopicAuthorizationFailedError):
                producer.send(writer_topic, b"denied").get(timeout=30)
        finally:
            producer.close()


def test_aiokafka_produces_and_consumes(kdc: Kdc, gss_cluster: Cluster, writer_topic: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    conf = {
        "bootstrap_servers": gss_cluster.bootstrap_servers,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "GSSAPI",
        "sasl_kerberos_service_name": "kafka",
    }

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**conf)
        await producer.start()
        try:
            meta = await producer.send_and_wait(writer_topic, b"kerberos-aio")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**conf, group_id="gss-aio", auto_offset_reset="earliest")
        await consumer.start()
        try:
            partition = TopicPartition(writer_topic, 0)
            consumer.assign([partition])
            consumer.seek(partition, meta.offset)
            got = await consumer.getmany(partition, timeout_ms=20000, max_records=1)
            return [r.value for r in got.get(partition, [])]
        finally:
            await consumer.stop()

    with _As(kdc, "App-Writer"):
        assert asyncio.run(run()) == [b"kerberos-aio"]


def test_confluent_kafka_if_its_librdkafka_has_gssapi(
    kdc: Kdc, gss_cluster: Cluster, writer_topic: str
) -> None:
    from confluent_kafka import KafkaException, Producer

    conf = {
        "bootstrap.servers": gss_cluster.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
    }
    try:
        producer = Producer(conf)
    except KafkaException as e:
        # The PyPI wheels' librdkafka is built without Cyrus SASL (builtin.features has no
        # sasl_gssapi), so it cannot speak GSSAPI at all.
        print(f"confluent-kafka skipped: {e}")
        pytest.skip(f"confluent-kafka's librdkafka has no GSSAPI: {e}")
    with _As(kdc, "App-Writer"):
        producer.produce(writer_topic, b"kerberos-rdkafka")
        assert producer.flush(30) == 0


def _kcat_gssapi() -> str | None:
    """Why kcat cannot speak GSSAPI here, None when it can (Debian's librdkafka has Cyrus
    SASL; its GSSAPI plugin is libsasl2-modules-gssapi-mit)."""
    kcat = shutil.which("kcat")
    if kcat is None:
        return "kcat is not installed"
    version = subprocess.run([kcat, "-V"], capture_output=True, text=True, timeout=10).stdout
    if "sasl_gssapi" not in version:
        return f"kcat's librdkafka has no sasl_gssapi: {version.strip()}"
    if not list(Path("/usr/lib").glob("*/sasl2/libgssapiv2.so*")):
        return "Cyrus SASL's GSSAPI plugin is missing (libsasl2-modules-gssapi-mit)"
    return None


def test_kcat_librdkafka_cyrus_gssapi_produces_and_consumes(
    kdc: Kdc, gss_cluster: Cluster, writer_topic: str
) -> None:
    reason = _kcat_gssapi()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (make system-deps installs it)")
        pytest.skip(reason)
    common = [
        "-b", gss_cluster.bootstrap_servers,
        "-X", "security.protocol=SASL_PLAINTEXT",
        "-X", "sasl.mechanism=GSSAPI",
        "-X", "sasl.kerberos.service.name=kafka",
        # The ticket is already in KRB5CCNAME's cache: no kinit of librdkafka's own.
        "-X", "sasl.kerberos.kinit.cmd=true",
        "-t", writer_topic,
    ]  # fmt: skip
    env = {**os.environ, "KRB5CCNAME": kdc.kinit("App-Writer")}
    produced = subprocess.run(
        ["kcat", "-P", *common, "-p", "0"],
        input="kerberos-kcat\n", env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(
        ["kcat", "-C", *common, "-p", "0", "-o", "-1", "-c", "1", "-e"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.strip() == "kerberos-kcat"


@pytest.mark.parametrize(
    ("release", "handshake_versions"),
    [("0.10.2", (0, 0)), ("1.0", (0, 1))],  # raw tokens only; SaslAuthenticate v0 (KIP-152)
)
def test_older_releases_with_real_clients(
    kdc: Kdc, zk_test_zookeeper: ZooKeeperEndpoint, release: str, handshake_versions: Any
) -> None:
    from kafka import KafkaProducer

    from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest

    security = Security(
        protocol="SASL_PLAINTEXT", mechanisms=("GSSAPI", "PLAIN"), users=ADMIN,
        inter_broker_mechanism="PLAIN",
    )  # fmt: skip
    # Before 1.1 the broker's login comes from the JAAS file only (`--jaas-config`).
    jaas = kdc.directory / "kafka_server_jaas.conf"
    plain = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret" user_admin="admin-secret";'
    )
    jaas.write_text(f"KafkaServer {{ {_jaas(kdc.keytabs[SERVICE])} {plain} }};\n")

    def cluster_with(rules: str) -> Cluster:
        return Cluster(
            brokers=1,
            port=0,
            zookeeper=fresh_chroot(zk_test_zookeeper.connect_string),
            security=security,
            kafka_version=release,
            jaas_config=str(jaas),
            broker_configs=(
                ("sasl.kerberos.service.name", "kafka"),
                ("sasl.kerberos.principal.to.local.rules", rules),
            ),
        )

    # These releases have no /L (1.1, KAFKA-5764): their brokers refuse the rule at start.
    with pytest.raises(ValueError, match="unmatched substring: `L`"):
        cluster_with(r"RULE:[1:$1](App-.*)s/App-(.*)/$1/L,DEFAULT")
    with cluster_with(r"RULE:[1:$1](App-.*)s/App-(.*)/$1/,DEFAULT") as cluster:
        with WireClient.to(cluster.bootstrap_servers) as client:
            versions = client.request(0, ApiVersionsRequest())
            keys = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
            assert keys[17] == handshake_versions
        with _As(kdc, "App-Writer"):
            if handshake_versions == (0, 0):
                # kafka-python 3.0 waits for an answer to the last raw GSSAPI token, which
                # Kafka 0.10/0.11 never send (nor does zkbroker): aiokafka does not wait.
                asyncio.run(_aiokafka_send(cluster.bootstrap_servers, "gss-old"))
                return
            producer = KafkaProducer(
                bootstrap_servers=cluster.bootstrap_servers,
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="GSSAPI",
                sasl_kerberos_service_name="kafka",
            )
            try:
                assert producer.partitions_for("gss-old") is not None
                producer.send("gss-old", b"old-release").get(timeout=30)
            finally:
                producer.close()


async def _aiokafka_send(bootstrap: str, topic: str) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="GSSAPI",
        sasl_kerberos_service_name="kafka",
    )
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"old-release")
    finally:
        await producer.stop()


def test_broker_refuses_to_start_without_its_principal_in_the_keytab(
    kdc: Kdc, zk_test_zookeeper: ZooKeeperEndpoint
) -> None:
    keytab = kdc.keytabs["alice"]  # holds alice only
    security = Security(
        protocol="SASL_PLAINTEXT", mechanisms=("GSSAPI", "PLAIN"), users=ADMIN,
        inter_broker_mechanism="PLAIN",
    )  # fmt: skip
    with pytest.raises(ValueError, match="Unable to obtain password from user"):
        Cluster(
            brokers=1,
            port=0,
            zookeeper=fresh_chroot(zk_test_zookeeper.connect_string),
            security=security,
            broker_configs=(
                ("sasl.kerberos.service.name", "kafka"),
                ("listener.name.sasl_plaintext.gssapi.sasl.jaas.config", _jaas(keytab)),
            ),
        ).start()
    with pytest.raises(ValueError, match="No serviceName defined"):
        Cluster(
            brokers=1,
            port=0,
            zookeeper=fresh_chroot(zk_test_zookeeper.connect_string),
            security=security,
            broker_configs=(
                ("listener.name.sasl_plaintext.gssapi.sasl.jaas.config", _jaas(keytab)),
            ),
        ).start()


def test_the_kdc_is_stopped_by_the_fixture(kdc: Kdc) -> None:
    # The module fixture stops it (and asserts so) at teardown; here it still runs.
    assert kdc.running
    assert struct.pack(">H", kdc.port)
