"""Delegation tokens (KIP-48) over real TCP against a real ZooKeeper: Create/Renew/Expire/
DescribeDelegationToken through the wire client (no Python or C client exposes these APIs) on a
SASL_PLAINTEXT listener, Kafka's errors, the znodes and notifications Kafka writes, tokens used
for SCRAM logins with the `tokenauth=true` extension (no installed client sends SCRAM
extensions, so the exchange is driven here byte by byte, as Java's ScramSaslClient sends it),
tokens live across brokers, and the controller's expiry check."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from tests.integration.helpers import wait_until
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.create_delegation_token import (
    CreatableRenewers,
    CreateDelegationTokenRequest,
)
from zkbroker.broker.protocol.messages.describe_delegation_token import (
    DescribeDelegationTokenOwner,
    DescribeDelegationTokenRequest,
)
from zkbroker.broker.protocol.messages.expire_delegation_token import ExpireDelegationTokenRequest
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.protocol.messages.renew_delegation_token import RenewDelegationTokenRequest
from zkbroker.broker.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from zkbroker.broker.protocol.messages.sasl_handshake import SaslHandshakeRequest
from zkbroker.broker.security.cluster_security import Security
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.toolkit.zookeeper import ZooKeeperEndpoint, fresh_chroot

USERS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
SECRET = "shared-token-secret"
DAY_MS = 24 * 3600 * 1000


def _security() -> Security:
    return Security(
        protocol="SASL_PLAINTEXT",
        mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
        users=USERS,
    )


@pytest.fixture(scope="module")
def token_cluster(zk_test_zookeeper: ZooKeeperEndpoint) -> Iterator[Cluster]:
    """Two brokers (two ZooKeeper sessions) with token authentication, plus a PLAINTEXT
    listener."""
    with Cluster(
        brokers=2,
        port=0,
        zookeeper=fresh_chroot(zk_test_zookeeper.connect_string),
        security=_security(),
        kafka_version="3.9",
        extra_listeners=(("PLAINTEXT", "127.0.0.1", 0),),
        broker_configs=(
            ("connection.failed.authentication.delay.ms", "0"),
            ("delegation.token.secret.key", SECRET),
            ("delegation.token.expiry.check.interval.ms", "300"),
        ),
    ) as cluster:
        yield cluster


def _address(cluster: Cluster, broker: int = 0, listener: str | None = None) -> str:
    servers = cluster.bootstrap_servers_of(listener) if listener else cluster.bootstrap_servers
    return servers.split(",")[broker]


def _plain(cluster: Cluster, user: str, broker: int = 0, auth_version: int = 2) -> WireClient:
    client = WireClient.to(_address(cluster, broker))
    assert client.request(1, SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
    token = f"\0{user}\0{USERS[user]}".encode()
    ok = client.request(auth_version, SaslAuthenticateRequest(auth_bytes=token))
    assert ok.error_code == error_codes.NONE
    return client


def _scram_token_login(
    client: WireClient,
    mechanism: str,
    token_id: str,
    password: str,
    extensions: str = ",tokenauth=true",
) -> Any:
    """A SCRAM exchange whose client-first message carries `extensions` after the nonce (Java's
    ScramSaslClient with ScramLoginModule's tokenauth=true); the last SaslAuthenticate answer."""
    assert client.request(1, SaslHandshakeRequest(mechanism=mechanism)).error_code == 0
    nonce = base64.b64encode(os.urandom(18)).decode()
    bare = f"n={token_id},r={nonce}{extensions}"
    first = client.request(2, SaslAuthenticateRequest(auth_bytes=f"n,,{bare}".encode()))
    if first.error_code:
        return first
    server_first = first.auth_bytes.decode()
    attrs = dict(part.split("=", 1) for part in server_first.split(","))
    assert attrs["r"].startswith(nonce)
    digest = hashlib.sha256 if mechanism == "SCRAM-SHA-256" else hashlib.sha512
    salted = hashlib.pbkdf2_hmac(
        digest().name, password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"])
    )
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.new(digest(client_key).digest(), auth_message, digest).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    final = client.request(
        2,
        SaslAuthenticateRequest(
            auth_bytes=f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
        ),
    )
    if final.error_code == error_codes.NONE:
        server_key = hmac.new(salted, b"Server Key", digest).digest()
        expected = hmac.new(server_key, auth_message, digest).digest()
        assert final.auth_bytes.decode() == f"v={base64.b64encode(expected).decode()}"
    return final


def _create(client: WireClient, version: int = 3, **fields: Any) -> Any:
    return client.request(version, CreateDelegationTokenRequest(**fields))


def _kazoo(cluster: Cluster) -> KazooClient:
    zk = KazooClient(hosts=cluster.zookeeper_connect)
    zk.start(timeout=15)
    return zk


def test_create_describe_renew_expire(token_cluster: Cluster) -> None:
    with _plain(token_cluster, "alice") as alice:
        created = _create(
            alice,
            renewers=[CreatableRenewers(principal_type="User", principal_name="bob")],
            max_lifetime_ms=-1,
        )
        assert created.error_code == error_codes.NONE
        assert (created.principal_type, created.principal_name) == ("User", "alice")
        assert (created.token_requester_principal_type, created.token_requester_principal_name) == (
            "User",
            "alice",
        )
        # Kafka's defaults: max lifetime 7 days, expiry one day after issue.
        assert created.max_timestamp_ms == created.issue_timestamp_ms + 7 * DAY_MS
        assert created.expiry_timestamp_ms == created.issue_timestamp_ms + DAY_MS
        # A random UUID in URL-safe base64 without padding; the HMAC as Kafka computes it.
        assert len(created.token_id) == 22
        assert base64.urlsafe_b64decode(created.token_id + "==")
        expected = hmac.new(SECRET.encode(), created.token_id.encode(), hashlib.sha512).digest()
        assert created.hmac == expected

        # The znode Kafka's DelegationTokenManagerZk writes (no HMAC in it) and a notification.
        zk = _kazoo(token_cluster)
        try:
            data, _ = zk.get(f"/delegation_token/tokens/{created.token_id}")
            assert json.loads(data) == {
                "version": 3,
                "owner": "User%3Aalice",
                "tokenRequester": "User%3Aalice",
                "renewers": ["User%3Abob"],
                "issueTimestamp": created.issue_timestamp_ms,
                "maxTimestamp": created.max_timestamp_ms,
                "expiryTimestamp": created.expiry_timestamp_ms,
                "tokenId": created.token_id,
            }
            changes = zk.get_children("/delegation_token/token_changes")
            named = [zk.get(f"/delegation_token/token_changes/{c}")[0] for c in changes]
            assert created.token_id.encode() in named
            assert all(c.startswith("token_change_") for c in changes)
        finally:
            zk.stop()
            zk.close()

        described = alice.request(3, DescribeDelegationTokenRequest(owners=None))
        assert described.error_code == error_codes.NONE
        mine = [t for t in described.tokens if t.token_id == created.token_id]
        assert len(mine) == 1 and mine[0].hmac == created.hmac
        assert [(r.principal_type, r.principal_name) for r in mine[0].renewers] == [("User", "bob")]
        assert mine[0].token_requester_principal_name == "alice"
        # An empty owner list: no tokens; an owner filter: that owner's (or renewer's) tokens.
        assert alice.request(3, DescribeDelegationTokenRequest(owners=[])).tokens == []
        by_bob = alice.request(
            2,
            DescribeDelegationTokenRequest(
                owners=[DescribeDelegationTokenOwner(principal_type="User", principal_name="bob")]
            ),
        )
        assert created.token_id in [t.token_id for t in by_bob.tokens]
        by_carol = alice.request(
            2,
            DescribeDelegationTokenRequest(
                owners=[DescribeDelegationTokenOwner(principal_type="User", principal_name="carol")]
            ),
        )
        assert created.token_id not in [t.token_id for t in by_carol.tokens]

    with _plain(token_cluster, "carol") as carol:
        mismatch = carol.request(
            2, RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=1000)
        )
        assert (mismatch.error_code, mismatch.expiry_timestamp_ms) == (
            error_codes.DELEGATION_TOKEN_OWNER_MISMATCH,
            -1,
        )
        unknown = carol.request(
            2, RenewDelegationTokenRequest(hmac=b"\x01" * 64, renew_period_ms=1000)
        )
        assert unknown.error_code == error_codes.DELEGATION_TOKEN_NOT_FOUND
        assert (
            carol.request(
                1, ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=-1)
            ).error_code
            == error_codes.DELEGATION_TOKEN_OWNER_MISMATCH
        )

    with _plain(token_cluster, "bob") as bob:  # a renewer
        renewed = bob.request(
            0, RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=60_000)
        )
        assert renewed.error_code == error_codes.NONE
        assert created.issue_timestamp_ms < renewed.expiry_timestamp_ms - 60_000
        # Renewing past the max timestamp stops at it.
        capped = bob.request(
            2, RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=30 * DAY_MS)
        )
        assert capped.expiry_timestamp_ms == created.max_timestamp_ms

    with _plain(token_cluster, "alice") as alice:
        shortened = alice.request(
            2, ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=120_000)
        )
        assert shortened.error_code == error_codes.NONE
        assert shortened.expiry_timestamp_ms < capped.expiry_timestamp_ms
        gone = alice.request(
            2, ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=-1)
        )
        assert gone.error_code == error_codes.NONE
        again = alice.request(
            2, RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=1000)
        )
        assert again.error_code == error_codes.DELEGATION_TOKEN_NOT_FOUND
        listed = alice.request(3, DescribeDelegationTokenRequest(owners=None)).tokens
        assert created.token_id not in [t.token_id for t in listed]
    zk = _kazoo(token_cluster)
    try:
        assert zk.exists(f"/delegation_token/tokens/{created.token_id}") is None
    finally:
        zk.stop()
        zk.close()


def test_create_rules(token_cluster: Cluster) -> None:
    with _plain(token_cluster, "alice") as alice:
        bad_renewer = _create(
            alice,
            renewers=[CreatableRenewers(principal_type="Group", principal_name="g")],
            max_lifetime_ms=-1,
        )
        assert bad_renewer.error_code == error_codes.INVALID_PRINCIPAL_TYPE
        assert (bad_renewer.principal_name, bad_renewer.token_id, bad_renewer.hmac) == (
            "alice",
            "",
            b"",
        )
        assert bad_renewer.issue_timestamp_ms == -1
        # A shorter max lifetime than the broker's; the expiry never passes it.
        short = _create(alice, max_lifetime_ms=5000)
        assert short.max_timestamp_ms == short.issue_timestamp_ms + 5000
        assert short.expiry_timestamp_ms == short.max_timestamp_ms
        # v3: a token for another owner (no authorizer: allowed, as in Kafka).
        other = _create(alice, owner_principal_type="User", owner_principal_name="bob")
        assert (other.principal_name, other.token_requester_principal_name) == ("bob", "alice")
        # v0-v2 answers have no requester.
        old = _create(alice, version=0, max_lifetime_ms=-1)
        assert old.error_code == error_codes.NONE and old.token_requester_principal_name == ""
        for token in (short, other, old):
            alice.request(
                2, ExpireDelegationTokenRequest(hmac=token.hmac, expiry_time_period_ms=-1)
            )


def test_requests_not_allowed_over_plaintext(token_cluster: Cluster) -> None:
    with WireClient.to(_address(token_cluster, 0, "PLAINTEXT")) as client:
        created = _create(client, max_lifetime_ms=-1)
        assert created.error_code == error_codes.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert (created.principal_name, created.token_requester_principal_name) == (
            "ANONYMOUS",
            "ANONYMOUS",
        )
        renew = client.request(2, RenewDelegationTokenRequest(hmac=b"x", renew_period_ms=1))
        assert (renew.error_code, renew.expiry_timestamp_ms) == (
            error_codes.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            -1,
        )
        expire = client.request(2, ExpireDelegationTokenRequest(hmac=b"x", expiry_time_period_ms=1))
        assert expire.error_code == error_codes.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        describe = client.request(3, DescribeDelegationTokenRequest(owners=None))
        assert describe.error_code == error_codes.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_token_authenticates_over_scram(token_cluster: Cluster, mechanism: str) -> None:
    with _plain(token_cluster, "alice") as alice:
        created = _create(alice, max_lifetime_ms=-1)
    password = base64.b64encode(created.hmac).decode()
    try:
        with WireClient.to(_address(token_cluster)) as client:
            ok = _scram_token_login(client, mechanism, created.token_id, password)
            assert ok.error_code == error_codes.NONE
            # The session ends with the token (Kafka's credential lifetime, KIP-368).
            lifetime = ok.session_lifetime_ms
            assert 0 < lifetime <= created.expiry_timestamp_ms - created.issue_timestamp_ms
            assert client.request(9, MetadataRequest(topics=[])).brokers
            # A token-authenticated principal may not create, renew or describe tokens.
            refused = _create(client, max_lifetime_ms=-1)
            assert refused.error_code == error_codes.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
            # ... and it is the token's owner.
            assert refused.principal_name == "alice"
            describe = client.request(3, DescribeDelegationTokenRequest(owners=None))
            assert describe.error_code == error_codes.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED

        for token_id, secret, extensions in (
            (created.token_id, base64.b64encode(b"\0" * 64).decode(), ",tokenauth=true"),
            ("no-such-token", password, ",tokenauth=true"),
            (created.token_id, password, ""),  # without the extension: a user of that name
        ):
            with WireClient.to(_address(token_cluster)) as client:
                failed = _scram_token_login(client, mechanism, token_id, secret, extensions)
                assert failed.error_code == error_codes.SASL_AUTHENTICATION_FAILED
                assert failed.error_message == (
                    "Authentication failed during authentication due to invalid credentials "
                    f"with SASL mechanism {mechanism}"
                )
    finally:
        with _plain(token_cluster, "alice") as alice:
            alice.request(
                2, ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=-1)
            )


def test_token_credentials_are_ready_before_any_login(token_cluster: Cluster) -> None:
    """DelegationTokenManager.updateCache: the SCRAM credentials of a token are made when a
    broker's cache takes it (here: broker 0 creating it, broker 1 through the notification),
    not at the first login."""
    with _plain(token_cluster, "alice", broker=0) as alice:
        created = _create(alice, max_lifetime_ms=-1)
    try:

        def credentials(broker: int) -> list[object]:
            tokens = token_cluster.engine.brokers[broker].delegation_tokens
            assert tokens is not None
            return [
                tokens.cache.credential(created.token_id, m)
                for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")
            ]

        assert None not in credentials(0)
        wait_until(lambda: None not in credentials(1), timeout=15)
        assert all(getattr(c, "iterations", 0) == 4096 for c in credentials(1))
    finally:
        with _plain(token_cluster, "alice") as alice:
            alice.request(
                2, ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=-1)
            )


def test_tokens_are_live_across_brokers(token_cluster: Cluster) -> None:
    """Broker 1 learns of tokens created, renewed and expired on broker 0 through the
    /delegation_token/token_changes notifications."""
    with _plain(token_cluster, "alice", broker=0) as alice:
        created = _create(alice, max_lifetime_ms=-1)
    password = base64.b64encode(created.hmac).decode()

    def login_on_broker_1() -> bool:
        with WireClient.to(_address(token_cluster, 1)) as client:
            answer = _scram_token_login(client, "SCRAM-SHA-512", created.token_id, password)
            return bool(answer.error_code == error_codes.NONE)

    wait_until(login_on_broker_1, timeout=15)
    with _plain(token_cluster, "alice", broker=1) as alice_on_1:
        renewed = alice_on_1.request(
            2, RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=3_600_000)
        )
        assert renewed.error_code == error_codes.NONE

    def described_expiry_on_broker_0() -> int:
        with _plain(token_cluster, "alice", broker=0) as client:
            tokens = client.request(3, DescribeDelegationTokenRequest(owners=None)).tokens
        return next(t.expiry_timestamp for t in tokens if t.token_id == created.token_id)

    wait_until(lambda: described_expiry_on_broker_0() == renewed.expiry_timestamp_ms, timeout=15)
    with _plain(token_cluster, "alice", broker=0) as alice:
        alice.request(2, ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=-1))
    wait_until(lambda: not login_on_broker_1(), timeout=15)


def test_the_controller_removes_expired_tokens(token_cluster: Cluster) -> None:
    with _plain(token_cluster, "alice") as alice:
        created = _create(alice, max_lifetime_ms=1)
    zk = _kazoo(token_cluster)
    try:
        wait_until(
            lambda: zk.exists(f"/delegation_token/tokens/{created.token_id}") is None, timeout=15
        )
    finally:
        zk.stop()
        zk.close()
    with _plain(token_cluster, "alice") as alice:
        gone = alice.request(2, RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=1))
        assert gone.error_code == error_codes.DELEGATION_TOKEN_NOT_FOUND


@pytest.mark.parametrize(
    ("release", "secret_key", "znode_version"),
    [("3.9", None, None), ("2.0", "delegation.token.master.key", 1)],
)
def test_releases_and_a_missing_secret(
    zk_cluster_factory: Any, release: str, secret_key: str | None, znode_version: int | None
) -> None:
    configs: tuple[tuple[str, str], ...] = ()
    if secret_key is not None:
        configs += ((secret_key, SECRET),)
    cluster = zk_cluster_factory(
        brokers=1, kafka_version=release, security=_security(), broker_configs=configs
    )
    version = 1 if release == "2.0" else 3
    with _plain(cluster, "alice", auth_version=0 if release == "2.0" else 2) as alice:
        created = _create(alice, version=min(version, 1), max_lifetime_ms=-1)
        if secret_key is None:
            assert created.error_code == error_codes.DELEGATION_TOKEN_AUTH_DISABLED
            assert (created.principal_name, created.token_id) == ("alice", "")
            for request in (
                RenewDelegationTokenRequest(hmac=b"x", renew_period_ms=1),
                ExpireDelegationTokenRequest(hmac=b"x", expiry_time_period_ms=1),
                DescribeDelegationTokenRequest(owners=None),
            ):
                answer = alice.request(1, request)
                assert answer.error_code == error_codes.DELEGATION_TOKEN_AUTH_DISABLED
            return
        assert created.error_code == error_codes.NONE
    zk = _kazoo(cluster)
    try:
        data, _ = zk.get(f"/delegation_token/tokens/{created.token_id}")
        stored = json.loads(data)
        # Before 3.3 (KIP-373) Kafka writes version 1, without tokenRequester.
        assert stored["version"] == znode_version and "tokenRequester" not in stored
    finally:
        zk.stop()
        zk.close()


def test_a_later_process_loads_existing_tokens(token_cluster: Cluster) -> None:
    """Another zkbroker process on the same ZooKeeper (sharing nothing else) loads the
    tokens at start (DelegationTokenManagerZk.loadCache) and accepts them for SCRAM."""
    with _plain(token_cluster, "alice") as alice:
        created = _create(alice, max_lifetime_ms=-1)
    try:
        with Cluster(
            broker_ids=(7,),
            port=0,
            zookeeper=token_cluster.zookeeper_connect,
            security=_security(),
            kafka_version="3.9",
            broker_configs=(
                ("connection.failed.authentication.delay.ms", "0"),
                ("delegation.token.secret.key", SECRET),
            ),
        ) as later:
            with WireClient.to(later.bootstrap_servers) as client:
                password = base64.b64encode(created.hmac).decode()
                ok = _scram_token_login(client, "SCRAM-SHA-256", created.token_id, password)
                assert ok.error_code == error_codes.NONE
            with _plain(later, "alice") as alice_later:
                tokens = alice_later.request(3, DescribeDelegationTokenRequest(owners=None))
                assert created.token_id in [t.token_id for t in tokens.tokens]
    finally:
        with _plain(token_cluster, "alice") as alice:
            alice.request(
                2, ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=-1)
            )


@pytest.mark.parametrize(
    ("release", "reauth_ms", "bounded"),
    [("3.2", None, False), ("3.2", "60000", True), ("3.3", None, True)],
)
def test_a_token_bounds_the_session_as_the_release_says(
    zk_cluster_factory: Any, release: str, reauth_ms: str | None, bounded: bool
) -> None:
    """KIP-368's credential lifetime for a delegation token: from 3.3 (KAFKA-13848) the token's
    expiry ends the session; on 2.2-3.2 only with `connections.max.reauth.ms` set (with the
    default 0 the session never expires, as OAUTHBEARER's on those releases)."""
    configs: tuple[tuple[str, str], ...] = (("delegation.token.secret.key", SECRET),)
    if reauth_ms is not None:
        configs += (("connections.max.reauth.ms", reauth_ms),)
    cluster = zk_cluster_factory(
        brokers=1, kafka_version=release, security=_security(), broker_configs=configs
    )
    with _plain(cluster, "alice") as alice:
        created = _create(alice, version=2, max_lifetime_ms=-1)
    assert created.error_code == error_codes.NONE
    password = base64.b64encode(created.hmac).decode()
    with WireClient.to(_address(cluster)) as client:
        ok = _scram_token_login(client, "SCRAM-SHA-512", created.token_id, password)
        assert ok.error_code == error_codes.NONE
        token_ms = created.expiry_timestamp_ms - created.issue_timestamp_ms
        if bounded:
            assert 0 < ok.session_lifetime_ms <= min(token_ms, int(reauth_ms or token_ms))
        else:
            assert ok.session_lifetime_ms == 0
