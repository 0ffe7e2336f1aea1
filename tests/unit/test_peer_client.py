"""The inter-broker client's pure parts: the SASL client mechanisms against the project's own
servers, the brokers' JAAS login, the inter-broker listener and its TLS client context, the
startup refusals (Kafka's KafkaConfig messages) and the endpoint a peer is dialled on."""

from __future__ import annotations

import asyncio
import re
import ssl
from pathlib import Path

import pytest

from tests.log_events import capture_events
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.peers.client import PeerAuthenticationFailed, PeerClient
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.security.inter_broker import inter_broker_listener_name
from zkbroker.broker.security.jaas import plain_jaas_config, scram_jaas_config
from zkbroker.broker.security.listener_config import listener_security
from zkbroker.broker.security.sasl import PlainServer, SaslAuthenticationFailed, SaslFailed
from zkbroker.broker.security.sasl_client import (
    PlainClient,
    SaslClientFailed,
    SaslLogin,
    ScramClient,
    inter_broker_login,
    jaas_credentials,
    new_client,
)
from zkbroker.broker.security.scram import ScramServer, credential_from_password
from zkbroker.broker.security.tls import client_context
from zkbroker.broker.settings import Settings
from zkbroker.zk_layout import BrokerInfo, Endpoint

# ---- SASL client mechanisms against the servers ------------------------------------------


def _run(client: PlainClient | ScramClient, server: PlainServer | ScramServer) -> None:
    token: bytes | None = client.first()
    while token is not None:
        token = client.evaluate(server.evaluate(token))


def test_plain_client_logs_in() -> None:
    server = PlainServer({"admin": "s3cret"})
    client = PlainClient("admin", "s3cret")
    assert client.first() == b"\0admin\0s3cret"
    _run(client, server)
    assert client.complete and server.complete and server.authorization_id == "admin"


def test_plain_client_wrong_password_is_refused_by_the_server() -> None:
    with pytest.raises(SaslAuthenticationFailed, match="Invalid username or password"):
        _run(PlainClient("admin", "nope"), PlainServer({"admin": "s3cret"}))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_client_logs_in_and_checks_the_server_signature(mechanism: str) -> None:
    credential = credential_from_password(mechanism, "s3cret")
    server = ScramServer(mechanism, lambda user: credential if user == "admin" else None)
    client = ScramClient(mechanism, "admin", "s3cret")
    _run(client, server)
    assert client.complete and server.complete and server.authorization_id == "admin"


def test_scram_client_wrong_password_fails_on_the_server() -> None:
    credential = credential_from_password("SCRAM-SHA-512", "s3cret")
    server = ScramServer("SCRAM-SHA-512", lambda _user: credential)
    with pytest.raises(SaslFailed):
        _run(ScramClient("SCRAM-SHA-512", "admin", "wrong"), server)


def test_scram_client_refuses_a_server_that_cannot_prove_the_credential() -> None:
    client = ScramClient("SCRAM-SHA-256", "admin", "s3cret")
    real = credential_from_password("SCRAM-SHA-256", "s3cret")
    server = ScramServer("SCRAM-SHA-256", lambda _user: real)
    final = client.evaluate(server.evaluate(client.first()))
    assert final is not None
    server.evaluate(final)
    with pytest.raises(SaslClientFailed):
        client.evaluate(b"v=" + b"A" * 88)  # not the server's signature


def test_sasl_names_are_escaped_as_kafka_does() -> None:
    # ScramFormatter.saslName: ',' -> =2C, '=' -> =3D.
    assert b",n=a=2Cb=3Dc," in ScramClient("SCRAM-SHA-256", "a,b=c", "pw").first()


def test_new_client_follows_the_mechanism() -> None:
    assert isinstance(new_client(SaslLogin("PLAIN", "u", "p")), PlainClient)
    assert new_client(SaslLogin("SCRAM-SHA-512", "u", "p")).mechanism == "SCRAM-SHA-512"
    assert "p" not in repr(SaslLogin("PLAIN", "u", "p"))  # the password stays out of logs


# ---- the brokers' JAAS login -------------------------------------------------------------


def test_jaas_credentials_from_plain_and_scram_modules() -> None:
    assert jaas_credentials(plain_jaas_config({"x": "y"}, login=("admin", "a"))) == (
        "admin",
        "a",
    )
    assert jaas_credentials(scram_jaas_config("br=ker", 'p"w')) == ("br=ker", 'p"w')
    assert jaas_credentials(plain_jaas_config({"x": "y"})) is None
    other = 'com.example.Other required username="u" password="p";'
    assert jaas_credentials(other) is None


def _login(configs: dict[str, str], listener: str = "SASL_SSL") -> SaslLogin:
    return inter_broker_login(listener_security(configs, listener))


def test_login_from_the_listener_mechanism_jaas_config_first() -> None:
    configs = {
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas_config({"a": "b"}),
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": scram_jaas_config("br", "1"),
        "sasl.jaas.config": scram_jaas_config("global", "2"),
    }
    assert _login(configs) == SaslLogin("SCRAM-SHA-512", "br", "1")
    del configs["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"]
    assert _login(configs) == SaslLogin("SCRAM-SHA-512", "global", "2")


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        (
            {"sasl.enabled.mechanisms": "SCRAM-SHA-512"},
            "requirement failed: sasl.mechanism.inter.broker.protocol must be included in "
            "sasl.enabled.mechanisms when SASL is used for inter-broker communication "
            "(inter-broker listener SASL_SSL enables SCRAM-SHA-512; "
            "sasl.mechanism.inter.broker.protocol is GSSAPI)",
        ),
        (
            {
                "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
            },
            "requirement failed: sasl.mechanism.inter.broker.protocol must be included",
        ),
        (
            {
                "sasl.enabled.mechanisms": "SCRAM-SHA-256",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
            },
            "Could not find a 'KafkaServer' or 'sasl_ssl.KafkaServer' entry in the JAAS "
            "configuration: set listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config",
        ),
        (
            {
                "sasl.enabled.mechanisms": "PLAIN",
                "sasl.mechanism.inter.broker.protocol": "PLAIN",
                "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas_config({"a": "b"}),
            },
            "listener.name.sasl_ssl.plain.sasl.jaas.config: no username and password",
        ),
    ],
)
def test_login_refusals(configs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        _login(configs)


# ---- the inter-broker listener and the startup checks ------------------------------------


def test_inter_broker_listener_name() -> None:
    assert inter_broker_listener_name({}, "CLIENT") == "CLIENT"
    assert inter_broker_listener_name({"inter.broker.listener.name": "internal"}, "C") == (
        "INTERNAL"
    )
    assert inter_broker_listener_name({"security.inter.broker.protocol": "SSL"}, "C") == "SSL"
    with pytest.raises(ValueError, match=r"^Only one of inter\.broker\.listener\.name and "):
        inter_broker_listener_name(
            {"inter.broker.listener.name": "A", "security.inter.broker.protocol": "SSL"}, "C"
        )


def test_settings_refuse_a_sasl_inter_broker_listener_without_a_login() -> None:
    base = (("sasl.enabled.mechanisms", "PLAIN"),)
    jaas = ("listener.name.sasl_plaintext.plain.sasl.jaas.config", plain_jaas_config({"a": "b"}))
    with pytest.raises(ValueError, match=r"must be included in sasl\.enabled\.mechanisms"):
        Settings(listener_name="SASL_PLAINTEXT", broker_configs=(*base, jaas))
    with pytest.raises(ValueError, match="no username and password"):
        Settings(
            listener_name="SASL_PLAINTEXT",
            broker_configs=(*base, jaas, ("sasl.mechanism.inter.broker.protocol", "PLAIN")),
        )
    # A PLAINTEXT inter-broker listener needs no login, whatever the client listener is.
    s = Settings(
        listener_name="SASL_PLAINTEXT",
        extra_listeners=(("PLAINTEXT", "127.0.0.1", 0),),
        port=0,
        broker_configs=(*base, jaas, ("inter.broker.listener.name", "PLAINTEXT")),
    )
    assert s.inter_broker_security().login is None
    assert s.inter_broker_security().ssl_context is None


def test_security_inter_broker_protocol_names_the_listener() -> None:
    s = Settings(
        listener_name="CLIENT",
        extra_listeners=(("PLAINTEXT", "127.0.0.1", 0),),
        port=0,
        broker_configs=(("security.inter.broker.protocol", "PLAINTEXT"),),
    )
    assert s.inter_broker_listener == "PLAINTEXT"
    assert "inter.broker.listener.name" not in s.static_broker_configs(0, 1, "zk")
    with pytest.raises(ValueError, match=r"inter\.broker\.listener\.name must be a listener name"):
        Settings(
            listener_name="CLIENT", broker_configs=(("security.inter.broker.protocol", "SSL"),)
        )


def _tls(tmp_path: Path) -> dict[str, str]:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server = ca.issue_cert("localhost", "127.0.0.1")
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    server.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "server.pem"))
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tmp_path / "server.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tmp_path / "ca.pem"),
    }


def test_tls_client_context(tmp_path: Path) -> None:
    configs = _tls(tmp_path)
    ctx = client_context(configs)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert not client_context(configs, None).check_hostname  # before 2.0: no default
    off = {**configs, "ssl.endpoint.identification.algorithm": ""}
    assert not client_context(off).check_hostname
    assert client_context(off).verify_mode == ssl.CERT_REQUIRED  # the chain still counts
    assert client_context({**configs, "ssl.enabled.protocols": "TLSv1.3"}).minimum_version == (
        ssl.TLSVersion.TLSv1_3
    )
    with pytest.raises(ValueError, match="PEM truststores only"):
        client_context({**configs, "ssl.truststore.type": "JKS"})
    with pytest.raises(ValueError, match="https or empty"):
        client_context({**configs, "ssl.endpoint.identification.algorithm": "ldaps"})


def test_settings_build_the_tls_client_by_release(tmp_path: Path) -> None:
    configs = tuple(_tls(tmp_path).items())
    new = Settings(listener_name="SSL", broker_configs=configs)
    context = new.inter_broker_security().ssl_context
    assert context is not None and context.check_hostname
    old = Settings(listener_name="SSL", broker_configs=configs, kafka_version=(1, 1))
    context = old.inter_broker_security().ssl_context
    assert context is not None and not context.check_hostname


# ---- the endpoint a peer is dialled on ----------------------------------------------------


def test_a_peer_without_the_inter_broker_listener_is_logged_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    image = MetadataImage()
    image.brokers[1] = BrokerInfo.create(1, (Endpoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),))
    image.brokers[2] = BrokerInfo.create(
        2, (Endpoint("SASL_PLAINTEXT", None, 9093, "SASL_PLAINTEXT"),)
    )
    security = Settings(
        listener_name="SASL_PLAINTEXT",
        broker_configs=(
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
            (
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                plain_jaas_config({"a": "b"}, login=("a", "b")),
            ),
        ),
    ).inter_broker_security()
    with capture_events() as logs:
        client = PeerClient(security)  # binds its logger: inside the capture
        assert client.endpoint_of(image, 1) is None  # no fallback to PLAINTEXT
        assert client.endpoint_of(image, 1) is None
        assert client.endpoint_of(image, 2) == ("127.0.0.1", 9093)
        assert client.endpoint_of(image, 3) is None  # unknown: nothing to say
    missing = [e for e in logs if e["event"] == "peer.listener_missing"]
    assert len(missing) == 1 and missing[0]["broker"] == 1
    assert missing[0]["listeners"] == ["PLAINTEXT"] and missing[0]["log_level"] == "error"


def test_before_1_1_a_broker_has_no_jaas_login_and_its_peer_calls_fail() -> None:
    sasl = (("sasl.enabled.mechanisms", "SCRAM-SHA-256"),)
    mechanism = (("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-256"),)
    with pytest.raises(ValueError, match=r"must be included in sasl\.enabled\.mechanisms"):
        Settings(listener_name="SASL_PLAINTEXT", kafka_version=(1, 0), broker_configs=sasl)
    s = Settings(
        listener_name="SASL_PLAINTEXT", kafka_version=(1, 0), broker_configs=(*sasl, *mechanism)
    )
    security = s.inter_broker_security()
    assert security.login is None
    client = PeerClient(security)
    with pytest.raises(PeerAuthenticationFailed, match="no inter-broker SASL login"):
        asyncio.run(client.send("127.0.0.1", 1, 0, ApiVersionsRequest()))
    assert client.open_connections == 0


# ---- the toolkit's Security ----------------------------------------------------------------


def test_toolkit_security_gives_the_brokers_their_login() -> None:
    from zkbroker.broker.security.cluster_security import Security

    prepared = Security(
        protocol="SASL_PLAINTEXT", mechanisms=("SCRAM-SHA-512", "PLAIN"), users={"a": "1", "b": "2"}
    ).prepare()
    configs = prepared.broker_configs
    assert configs["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    scram = configs["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"]
    assert jaas_credentials(scram) == ("a", "1")
    # The PLAIN entry keeps only the users when PLAIN is not the inter-broker mechanism.
    assert jaas_credentials(configs["listener.name.sasl_plaintext.plain.sasl.jaas.config"]) is None
    plain = Security(
        protocol="SASL_PLAINTEXT",
        mechanisms=("SCRAM-SHA-512", "PLAIN"),
        users={"a": "1", "b": "2"},
        inter_broker_user="b",
        inter_broker_mechanism="PLAIN",
    ).prepare()
    text = plain.broker_configs["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert jaas_credentials(text) == ("b", "2")
    # Before 1.1 no JAAS login is a broker config.
    old = Security(protocol="SASL_PLAINTEXT", mechanisms=("SCRAM-SHA-256",), users={"a": "1"})
    assert not any(k.endswith("sasl.jaas.config") for k in old.prepare((1, 0)).broker_configs)
    with pytest.raises(ValueError, match="inter_broker_user 'c' is not in users"):
        Security(users={"a": "1"}, inter_broker_user="c")
    with pytest.raises(ValueError, match="inter_broker_mechanism must be one of mechanisms"):
        Security(mechanisms=("PLAIN",), inter_broker_mechanism="SCRAM-SHA-256")


def test_toolkit_certificates_dir_is_made_once_and_kept(tmp_path: Path) -> None:
    pytest.importorskip("trustme")
    from zkbroker.broker.security.cluster_security import Security

    security = Security(protocol="SSL", mechanisms=(), certificates_dir=str(tmp_path / "tls"))
    first = security.prepare()
    ca = (tmp_path / "tls" / "ca.pem").read_bytes()
    second = security.prepare()
    assert (tmp_path / "tls" / "ca.pem").read_bytes() == ca  # reused, not made again
    assert first.broker_configs == second.broker_configs
    assert first.broker_configs["ssl.truststore.location"] == str(tmp_path / "tls" / "ca.pem")
    first.cleanup()
    assert (tmp_path / "tls" / "ca.pem").exists()  # shared: never removed by a cluster
    assert [p.name for p in tmp_path.iterdir()] == ["tls"]  # no temporary directory left
