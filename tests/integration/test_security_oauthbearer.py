"""SASL/OAUTHBEARER (KIP-255, KIP-342, KIP-368, KIP-768) on a SASL_PLAINTEXT listener, over real
TCP against a real ZooKeeper: the unsecured JWS validator, JWKS validation from a file and from
an https endpoint served on 127.0.0.1, Kafka's error challenge and SASL_AUTHENTICATION_FAILED
for refused tokens (raw wire client, byte-exact), the session bounded by the token's expiry,
and real clients (kafka-python, aiokafka, confluent-kafka, kafkajs) each with a good and a
refused token."""

from __future__ import annotations

import asyncio
import base64
import http.server
import json
import logging
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.integration.helpers import wait_until
from tests.log_events import capture_events
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from zkbroker.broker.protocol.messages.sasl_handshake import SaslHandshakeRequest
from zkbroker.broker.security.cluster_security import Security
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.toolkit.zookeeper import ZooKeeperEndpoint, fresh_chroot

JS = Path(__file__).resolve().parents[1] / "js"
LISTENER = "listener.name.sasl_plaintext."
MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
JWKS_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
AUDIENCE = "zkbroker"
ISSUER = "https://issuer.zkbroker.test"
GENERIC = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism OAUTHBEARER"
)
INVALID = '{"status":"invalid_token"}'


# ---- tokens ------------------------------------------------------------------------------


def _b64url(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def unsecured(
    sub: str = "alice",
    lifetime_s: float = 3600,
    scope: str | list[str] | None = "kafka",
    header: dict[str, Any] | None = None,
    url_chars: bool = False,
) -> str:
    """An alg-none JWS. Kafka decodes its parts with Java's basic Base64 decoder, which refuses
    `-` and `_`: a filler claim is varied until the parts have none (or, with `url_chars`,
    until the claims have one)."""
    now = int(time.time())
    for filler in range(10_000):
        claims: dict[str, Any] = {"sub": sub, "iat": now, "exp": now + lifetime_s, "n": filler}
        if scope is not None:
            claims["scope"] = scope
        if url_chars:
            claims["x"] = "???>>>" * (filler + 1)
        parts = [_b64url(header or {"alg": "none"}), _b64url(claims)]
        has_url_chars = any(c in "".join(parts) for c in "-_")
        if has_url_chars == url_chars:
            return ".".join(parts) + "."
    raise AssertionError("no token without URL-safe characters")


KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
NEW_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwk(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    out.update(kid=kid, use="sig", alg="RS256")
    return out


def signed(
    key: rsa.RSAPrivateKey = KEY,
    kid: str = "k1",
    sub: str = "alice",
    lifetime_s: float = 3600,
    **claims: Any,
) -> str:
    now = int(time.time())
    body: dict[str, Any] = {"sub": sub, "iat": now, "exp": now + lifetime_s, "aud": AUDIENCE}
    body["iss"] = ISSUER
    body.update(claims)
    body = {k: v for k, v in body.items() if v is not None}
    return jwt.encode(body, key, algorithm="RS256", headers={"kid": kid})


def first_message(token: str, authzid: str = "", extensions: str = "") -> bytes:
    a = f"a={authzid}" if authzid else ""
    return f"n,{a},\x01auth=Bearer {token}\x01{extensions}\x01".encode()


# ---- wire helpers ------------------------------------------------------------------------


def _login(client: WireClient, message: bytes, version: int = 2) -> Any:
    handshake = client.request(1, SaslHandshakeRequest(mechanism="OAUTHBEARER"))
    assert handshake.error_code == error_codes.NONE
    return client.request(version, SaslAuthenticateRequest(auth_bytes=message))


def _refused(cluster: Cluster, token: str) -> tuple[bytes, Any]:
    """Kafka's refusal: the error JSON as a challenge, then (after the client's 0x01)
    SASL_AUTHENTICATION_FAILED with that JSON, then the close."""
    with WireClient.to(cluster.bootstrap_servers) as client:
        challenge = _login(client, first_message(token))
        assert challenge.error_code == error_codes.NONE
        final = client.request(2, SaslAuthenticateRequest(auth_bytes=b"\x01"))
        assert client.is_closed_by_peer()
    return challenge.auth_bytes, final


def _assert_refused(cluster: Cluster, token: str, expected: str = INVALID) -> None:
    challenge, final = _refused(cluster, token)
    assert challenge == expected.encode()
    assert final.error_code == error_codes.SASL_AUTHENTICATION_FAILED
    assert final.error_message == expected


# ---- clients -----------------------------------------------------------------------------


def _kafka_python_topics(cluster: Cluster, token: str, timeout_ms: int = 30_000) -> set[str]:
    from kafka import KafkaAdminClient
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Provider(AbstractTokenProvider):
        def token(self) -> str:
            return token

    admin = KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=Provider(),
        request_timeout_ms=10_000,
        bootstrap_timeout_ms=timeout_ms,
    )
    try:
        return set(admin.list_topics())
    finally:
        admin.close()


def _kafka_python_refused(cluster: Cluster, token: str) -> list[str]:
    """Why the broker refused kafka-python's token, as it logged it. kafka-python 3 takes the
    server's error challenge for a dropped connection and reports nothing but a bootstrap
    timeout, so the broker's refusals are what show the token was refused, not unanswered."""
    from kafka.errors import KafkaTimeoutError

    with (
        capture_events(logging.INFO) as events,
        pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"),
    ):
        _kafka_python_topics(cluster, token, 3000)
    return [
        e["reason"]
        for e in events
        if e["event"] == "sasl.authentication_failed" and e["mechanism"] == "OAUTHBEARER"
    ]


async def _aiokafka_send(cluster: Cluster, token: str, topic: str) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.abc import AbstractTokenProvider

    class Provider(AbstractTokenProvider):
        async def token(self) -> str:
            return token

    producer = AIOKafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=Provider(),
        request_timeout_ms=10_000,
    )
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"v")
    finally:
        await producer.stop()


def _confluent(cluster: Cluster, token: str, lifetime_s: float = 3600) -> dict[str, Any]:
    def refresh(_config: str) -> tuple[str, float]:
        return token, time.time() + lifetime_s

    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "oauth_cb": refresh,
    }


def _confluent_topics(cluster: Cluster, token: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    return set(AdminClient(_confluent(cluster, token)).list_topics(timeout=10).topics)


def _confluent_refused(cluster: Cluster, token: str) -> str:
    """The error librdkafka reports for a refused token."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[str] = []
    conf = _confluent(cluster, token)
    conf["error_cb"] = lambda err: errors.append(str(err))
    admin = AdminClient(conf)
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    deadline = time.monotonic() + 5
    while not errors and time.monotonic() < deadline:
        admin.poll(0.2)
    return " ".join(errors)


# kafkajs (2.2.4) ignores the server's OAUTHBEARER challenge: it takes Kafka's error JSON for
# success and never sends the 0x01 that would fetch SASL_AUTHENTICATION_FAILED, so its refused
# token here is one Kafka fails at once (characters outside the bearer token's set).
MALFORMED = "not!a!token"
KAFKAJS_FAILED = "SASL OAUTHBEARER authentication failed: "


def _kafkajs(cluster: Cluster, good: str, bad: str, topic: str) -> dict[str, Any]:
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed")
    if not (JS / "node_modules" / "kafkajs").is_dir():
        pytest.fail("kafkajs is not installed: run `make test` (npm ci --prefix tests/js)")
    done = subprocess.run(
        ["node", str(JS / "oauthbearer_checks.js"), cluster.bootstrap_servers, good, bad, topic],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


def _security() -> Security:
    # PLAIN carries the brokers' own inter-broker login (OAUTHBEARER's is not emulated).
    return Security(
        protocol="SASL_PLAINTEXT",
        mechanisms=("PLAIN", "OAUTHBEARER"),
        users={"admin": "admin-secret"},
        inter_broker_mechanism="PLAIN",
    )


def _configs(jaas_options: str = "", **extra: str) -> tuple[tuple[str, str], ...]:
    return (
        ("connection.failed.authentication.delay.ms", "0"),
        (f"{LISTENER}oauthbearer.sasl.jaas.config", f"{MODULE} required {jaas_options};"),
        *extra.items(),
    )


# ---- the unsecured validator (the default) ----------------------------------------------


def _module_cluster(zookeeper: ZooKeeperEndpoint, configs: Any) -> Iterator[Cluster]:
    with Cluster(
        brokers=1,
        port=0,
        zookeeper=fresh_chroot(zookeeper.connect_string),
        security=_security(),
        kafka_version="3.9",
        broker_configs=configs,
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def unsecured_cluster(zk_test_zookeeper: ZooKeeperEndpoint) -> Iterator[Cluster]:
    yield from _module_cluster(
        zk_test_zookeeper, _configs('unsecuredValidatorRequiredScope="kafka"')
    )


def test_unsecured_token_authenticates_with_its_lifetime(unsecured_cluster: Cluster) -> None:
    with WireClient.to(unsecured_cluster.bootstrap_servers) as client:
        answer = _login(client, first_message(unsecured(lifetime_s=600)))
        assert answer.error_code == error_codes.NONE
        assert answer.auth_bytes == b""
        # 3.3+ (KAFKA-13848): the token's expiry bounds the session with no reauth max set.
        assert 590_000 < answer.session_lifetime_ms <= 600_000
        metadata = client.request(12, MetadataRequest(topics=None))
        assert [b.node_id for b in metadata.brokers] == [0]


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        (unsecured(header={"alg": "HS256"}), INVALID),
        (unsecured(lifetime_s=-10), INVALID),
        (unsecured(sub=" "), INVALID),
        (unsecured(url_chars=True), INVALID),
        (unsecured(scope=None), '{"status":"insufficient_scope", "scope":"[kafka]"}'),
        (unsecured(scope=["read", "write"]), '{"status":"insufficient_scope", "scope":"[kafka]"}'),
    ],
    ids=["signed", "expired", "blank-sub", "base64url-chars", "no-scope", "other-scope"],
)
def test_unsecured_refusals(unsecured_cluster: Cluster, token: str, expected: str) -> None:
    _assert_refused(unsecured_cluster, token, expected)


def test_authorization_id_and_malformed_messages(unsecured_cluster: Cluster) -> None:
    with WireClient.to(unsecured_cluster.bootstrap_servers) as client:
        answer = _login(client, first_message(unsecured(), authzid="bob"))
        assert answer.error_code == error_codes.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == (
            "Authentication failed: Client requested an authorization id (bob) that is "
            "different from the token's principal name (alice)"
        )
        assert client.is_closed_by_peer()
    for message in (b"n,,\x01auth=Bearer\x01\x01", b"n,,\x01host=x\x01\x01", b"garbage"):
        with WireClient.to(unsecured_cluster.bootstrap_servers) as client:
            answer = _login(client, message)
            assert answer.error_code == error_codes.SASL_AUTHENTICATION_FAILED
            assert answer.error_message == GENERIC
    # Kafka's scheme check throws while formatting its own message: closed, unanswered.
    with WireClient.to(unsecured_cluster.bootstrap_servers) as client:
        handshake = client.request(1, SaslHandshakeRequest(mechanism="OAUTHBEARER"))
        assert handshake.error_code == error_codes.NONE
        client.send_raw(
            client.frame(
                36, 2, SaslAuthenticateRequest(auth_bytes=b"n,,\x01auth=Basic abc\x01\x01")
            )[1]
        )
        assert client.is_closed_by_peer()


def test_extensions_are_accepted(unsecured_cluster: Cluster) -> None:
    message = first_message(unsecured(), extensions="traceId=abc 123\x01tenant=t1\x01")
    with WireClient.to(unsecured_cluster.bootstrap_servers) as client:
        assert _login(client, message).error_code == error_codes.NONE
        assert client.request(12, MetadataRequest(topics=None)).brokers


def test_token_expiry_ends_the_session(unsecured_cluster: Cluster) -> None:
    with WireClient.to(unsecured_cluster.bootstrap_servers) as client:
        answer = _login(client, first_message(unsecured(lifetime_s=2)))
        assert answer.error_code == error_codes.NONE
        assert 0 < answer.session_lifetime_ms <= 2000
        assert client.request(12, MetadataRequest(topics=None)).brokers
        time.sleep(answer.session_lifetime_ms / 1000 + 0.5)
        client.send_raw(client.frame(3, 12, MetadataRequest(topics=None))[1])
        assert client.is_closed_by_peer()


def test_reauthentication_with_a_fresh_token(unsecured_cluster: Cluster) -> None:
    """KIP-368: a client re-authenticates on the same connection before its token expires."""
    with WireClient.to(unsecured_cluster.bootstrap_servers) as client:
        assert _login(client, first_message(unsecured(lifetime_s=3))).error_code == 0
        time.sleep(1.1)  # Kafka allows one re-authentication a second
        again = _login(client, first_message(unsecured(lifetime_s=600)))
        assert again.error_code == error_codes.NONE
        assert again.session_lifetime_ms > 590_000
        time.sleep(2.5)  # past the first token's expiry
        assert client.request(12, MetadataRequest(topics=None)).brokers
        time.sleep(1.0)
        other = _login(client, first_message(unsecured(sub="mallory", lifetime_s=600)))
        assert other.error_code == error_codes.SASL_AUTHENTICATION_FAILED
        assert other.error_message == (
            "Cannot change principals during re-authentication from User.alice: User.mallory"
        )


def test_real_clients_unsecured(unsecured_cluster: Cluster) -> None:
    good, bad = unsecured(), unsecured(scope=None)
    seen = _kafkajs(unsecured_cluster, good, MALFORMED, "oauth-js")
    assert seen["topics"] == ["oauth-js"]
    assert seen["bad"] == ["KafkaJSSASLAuthenticationError", f"{KAFKAJS_FAILED}{GENERIC}"]
    assert "oauth-js" in _kafka_python_topics(unsecured_cluster, good)
    assert "oauth-js" in _confluent_topics(unsecured_cluster, good)
    asyncio.run(_aiokafka_send(unsecured_cluster, good, "oauth-js"))
    refusals = _kafka_python_refused(unsecured_cluster, bad)
    assert refusals and all('"status":"insufficient_scope"' in r for r in refusals), refusals
    assert "insufficient_scope" in _confluent_refused(unsecured_cluster, bad)


# ---- JWKS (KIP-768) ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def jwks_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("jwks") / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk(KEY, "k1")]}))
    return path


def _jwks_configs(url: str, jaas_options: str = "", **extra: str) -> tuple[tuple[str, str], ...]:
    return _configs(
        jaas_options,
        **{
            f"{LISTENER}oauthbearer.sasl.server.callback.handler.class": JWKS_HANDLER,
            "sasl.oauthbearer.jwks.endpoint.url": url,
            "sasl.oauthbearer.expected.audience": AUDIENCE,
            "sasl.oauthbearer.expected.issuer": ISSUER,
            **extra,
        },
    )


@pytest.fixture(scope="module")
def jwks_file_cluster(zk_test_zookeeper: ZooKeeperEndpoint, jwks_file: Path) -> Iterator[Cluster]:
    yield from _module_cluster(zk_test_zookeeper, _jwks_configs(jwks_file.as_uri()))


def test_jwks_file_good_token(jwks_file_cluster: Cluster) -> None:
    with WireClient.to(jwks_file_cluster.bootstrap_servers) as client:
        answer = _login(client, first_message(signed(lifetime_s=300, scope="a b")))
        assert answer.error_code == error_codes.NONE
        assert 290_000 < answer.session_lifetime_ms <= 300_000


@pytest.mark.parametrize(
    "token",
    [
        signed(aud="someone-else"),
        signed(aud=None),
        signed(iss="https://elsewhere.test"),
        signed(lifetime_s=-120),  # beyond the 30 s default clock skew
        signed(key=OTHER_KEY),  # kid k1, wrong signature
        signed(kid="unknown"),
        signed(iat=None),
        signed(sub=None),
        unsecured(),
    ],
    ids=["audience", "no-audience", "issuer", "expired", "signature", "kid", "no-iat", "no-sub",
         "alg-none"],
)  # fmt: skip
def test_jwks_refusals(jwks_file_cluster: Cluster, token: str) -> None:
    _assert_refused(jwks_file_cluster, token)


def test_jwks_clock_skew(jwks_file_cluster: Cluster) -> None:
    """Expired 10 s ago is within `sasl.oauthbearer.clock.skew.seconds` (30): accepted, and
    the session has no time left (the next request closes it)."""
    with WireClient.to(jwks_file_cluster.bootstrap_servers) as client:
        answer = _login(client, first_message(signed(lifetime_s=-10)))
        assert answer.error_code == error_codes.NONE
        assert answer.session_lifetime_ms == 0
        client.send_raw(client.frame(3, 12, MetadataRequest(topics=None))[1])
        assert client.is_closed_by_peer()


def test_real_clients_jwks(jwks_file_cluster: Cluster) -> None:
    good, bad = signed(), signed(aud="someone-else")
    seen = _kafkajs(jwks_file_cluster, good, MALFORMED, "oauth-jwks-js")
    assert seen["topics"] == ["oauth-jwks-js"]
    assert seen["bad"] == ["KafkaJSSASLAuthenticationError", f"{KAFKAJS_FAILED}{GENERIC}"]
    assert "oauth-jwks-js" in _kafka_python_topics(jwks_file_cluster, good)
    assert "oauth-jwks-js" in _confluent_topics(jwks_file_cluster, good)
    asyncio.run(_aiokafka_send(jwks_file_cluster, good, "oauth-jwks-js"))
    refusals = _kafka_python_refused(jwks_file_cluster, bad)
    assert refusals and all('"status":"invalid_token"' in r for r in refusals), refusals
    assert "invalid_token" in _confluent_refused(jwks_file_cluster, bad)


class _JwksServer:
    """A JWKS endpoint on 127.0.0.1 (TLS with a trustme CA), counting its requests."""

    def __init__(self, directory: Path) -> None:
        import trustme

        self.keys: list[dict[str, Any]] = [jwk(KEY, "k1")]
        self.requests = 0
        ca = trustme.CA()
        self.ca_file = directory / "jwks-ca.pem"
        ca.cert_pem.write_to_path(str(self.ca_file))
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests += 1
                body = json.dumps({"keys": outer.keys}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://localhost:{self.httpd.server_address[1]}/jwks"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def jwks_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_JwksServer]:
    server = _JwksServer(tmp_path_factory.mktemp("jwks-https"))
    yield server
    server.close()


def test_jwks_https_endpoint_and_key_rotation(
    cluster_factory: Callable[..., Cluster], jwks_server: _JwksServer
) -> None:
    ssl_options = f'ssl.truststore.type="PEM" ssl.truststore.location="{jwks_server.ca_file}"'
    cluster = cluster_factory(
        brokers=1,
        kafka_version="3.9",
        security=_security(),
        broker_configs=_jwks_configs(jwks_server.url, ssl_options),
    )
    assert jwks_server.requests >= 1  # fetched at start
    with WireClient.to(cluster.bootstrap_servers) as client:
        assert _login(client, first_message(signed())).error_code == error_codes.NONE
    # The issuer rotates to a key the broker has not seen: the first token naming it is
    # refused and makes the broker fetch the JWKS again; then it is accepted.
    jwks_server.keys = [jwk(KEY, "k1"), jwk(NEW_KEY, "k2")]
    before = jwks_server.requests
    rotated = signed(key=NEW_KEY, kid="k2")
    _assert_refused(cluster, rotated)
    wait_until(lambda: jwks_server.requests > before, timeout=10)

    def accepted() -> bool:
        with WireClient.to(cluster.bootstrap_servers) as client:
            return bool(_login(client, first_message(rotated)).error_code == error_codes.NONE)

    # Once the refetched keys are in use (the fetch's answer is read after its request).
    wait_until(accepted, timeout=10, interval=0.1)
    assert "oauth-https" not in _kafka_python_topics(cluster, rotated)


def test_jwks_endpoint_unreachable_stops_the_start(
    cluster_factory: Callable[..., Cluster], jwks_file: Path
) -> None:
    with pytest.raises(Exception, match="VerificationKeyResolver"):
        cluster_factory(
            brokers=1,
            kafka_version="3.9",
            security=_security(),
            broker_configs=_jwks_configs("http://127.0.0.1:9/jwks"),
        )


# ---- per release -------------------------------------------------------------------------


def test_before_3_3_token_expiry_bounds_no_session(cluster_factory: Callable[..., Cluster]) -> None:
    """2.2-3.2: with connections.max.reauth.ms 0 the session lifetime is 0 (unbounded) even
    for an expiring token; with a max set it is the smaller of both."""
    cluster = cluster_factory(
        brokers=1, kafka_version="3.2", security=_security(), broker_configs=_configs()
    )
    with WireClient.to(cluster.bootstrap_servers) as client:
        answer = _login(client, first_message(unsecured(lifetime_s=2)))
        assert answer.error_code == error_codes.NONE
        assert answer.session_lifetime_ms == 0
        time.sleep(2.5)
        assert client.request(12, MetadataRequest(topics=None)).brokers
    bounded = cluster_factory(
        brokers=1,
        broker_ids=(1,),
        kafka_version="3.2",
        security=_security(),
        broker_configs=(*_configs(), ("connections.max.reauth.ms", "60000")),
    )
    with WireClient.to(bounded.bootstrap_servers) as client:
        answer = _login(client, first_message(unsecured(lifetime_s=30)))
        assert 20_000 < answer.session_lifetime_ms <= 30_000


def test_kafka_2_0_serves_oauthbearer(cluster_factory: Callable[..., Cluster]) -> None:
    """2.0 (KIP-255): SaslAuthenticate v0 (no session lifetime), extensions ignored."""
    cluster = cluster_factory(
        brokers=1, kafka_version="2.0", security=_security(), broker_configs=_configs()
    )
    message = first_message(unsecured(), extensions="traceId=abc\x01")
    with WireClient.to(cluster.bootstrap_servers) as client:
        answer = _login(client, message, version=0)
        assert answer.error_code == error_codes.NONE
    _ = _kafka_python_topics(cluster, unsecured())
