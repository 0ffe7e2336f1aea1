"""Pure parts of delegation tokens: the token znode's JSON (both versions Kafka wrote), the HMAC
and token id, Kafka's filterToken / allowTokenRequests, the token cache, the SCRAM server's
`tokenauth` extension, and the ZooKeeper ACL rules (ZkData.defaultAcls)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest
import scramp
from kazoo.security import ACL, Id, Permissions

from zkbroker.broker.security.delegation_tokens import (
    DelegationToken,
    TokenCache,
    TokenConfig,
    allow_token_requests,
    create_hmac,
    new_token_id,
    token_credentials,
    visible,
)
from zkbroker.broker.security.sasl import SaslFailed
from zkbroker.broker.security.scram import ScramServer, TokenCredential, credential_from_password
from zkbroker.zk_layout import ZnodeFormatError
from zkbroker.zk_layout.nodes.delegation_token import (
    DelegationTokenChangeNode,
    DelegationTokenInfoNode,
    Principal,
    TokenInformation,
)
from zkbroker.zk_layout.nodes.secure_paths import (
    default_acls,
    digest_id,
    sensitive_path,
    writable_by,
)

ALICE, BOB, CAROL = Principal("User", "alice"), Principal("User", "bob"), Principal("User", "carol")
INFO = TokenInformation("tok", ALICE, CAROL, (BOB,), 1, 3, 2)


def test_token_znode_versions() -> None:
    v3 = json.loads(DelegationTokenInfoNode.encode(INFO, (3, 9)))
    assert v3 == {
        "version": 3,
        "owner": "User%3Aalice",
        "tokenRequester": "User%3Acarol",
        "renewers": ["User%3Abob"],
        "issueTimestamp": 1,
        "maxTimestamp": 3,
        "expiryTimestamp": 2,
        "tokenId": "tok",
    }
    v1 = json.loads(DelegationTokenInfoNode.encode(INFO, (3, 2)))
    assert v1["version"] == 1 and "tokenRequester" not in v1
    assert DelegationTokenInfoNode.decode(DelegationTokenInfoNode.encode(INFO, (3, 9))) == INFO
    # Version 1: the owner is the requester.
    old = DelegationTokenInfoNode.decode(DelegationTokenInfoNode.encode(INFO, (2, 8)))
    assert old.token_requester == ALICE
    with pytest.raises(ZnodeFormatError):
        DelegationTokenInfoNode.decode(b'{"version":4}')
    with pytest.raises(ZnodeFormatError):
        DelegationTokenInfoNode.decode(json.dumps({**v3, "owner": "alice"}).encode())
    assert (
        DelegationTokenChangeNode.create_path() == "/delegation_token/token_changes/token_change_"
    )


def test_hmac_and_token_id() -> None:
    expected = hmac.new(b"k", b"tok", hashlib.sha512).digest()
    assert create_hmac("tok", "k") == expected
    token_id = new_token_id()
    assert len(token_id) == 22 and "=" not in token_id
    assert len(base64.urlsafe_b64decode(token_id + "==")) == 16


def test_secret_key_by_release() -> None:
    assert not TokenConfig.from_configs({}, (3, 9)).enabled
    assert not TokenConfig.from_configs({"delegation.token.secret.key": ""}, (3, 9)).enabled
    assert TokenConfig.from_configs({"delegation.token.master.key": "x"}, (3, 9)).secret_key == "x"
    both = {"delegation.token.master.key": "old", "delegation.token.secret.key": "new"}
    assert TokenConfig.from_configs(both, (3, 9)).secret_key == "new"
    assert TokenConfig.from_configs(both, (2, 0)).secret_key == "old"


def test_allow_token_requests() -> None:
    assert not allow_token_requests("PLAINTEXT", "User:ANONYMOUS", False)
    assert not allow_token_requests("SSL", "User:ANONYMOUS", False)
    assert allow_token_requests("SSL", "User:CN=app", False)
    assert allow_token_requests("SASL_SSL", "User:alice", False)
    assert not allow_token_requests("SASL_PLAINTEXT", "User:alice", True)


def test_filter_token() -> None:
    def no(_: object) -> bool:
        return False

    assert visible(ALICE, None, INFO, no, no)
    assert visible(BOB, None, INFO, no, no)  # a renewer
    assert visible(CAROL, None, INFO, no, no)  # the requester
    assert not visible(Principal("User", "dave"), None, INFO, no, no)
    assert visible(Principal("User", "dave"), None, INFO, lambda t: t == "tok", no)
    assert visible(Principal("User", "dave"), None, INFO, no, lambda o: o == ALICE)
    assert not visible(ALICE, [Principal("User", "dave")], INFO, lambda _: True, lambda _: True)


def test_token_cache_by_hmac_and_login() -> None:
    cache = TokenCache()
    token = DelegationToken(INFO, b"\x01" * 64)
    cache.update(token, token_credentials(token))
    assert cache.by_hmac(b"\x01" * 64) == token
    login = cache.login("tok", "SCRAM-SHA-256")
    assert login is not None and login.owner_name == "alice" and login.expiry_timestamp_ms == 2
    assert login.credential.iterations == 4096
    assert cache.login("tok", "PLAIN") is None
    renewed = DelegationToken(INFO, b"\x02" * 64)
    cache.update(renewed, token_credentials(renewed))
    assert cache.by_hmac(b"\x01" * 64) is None
    cache.remove("tok")
    assert cache.by_hmac(b"\x02" * 64) is None and cache.login("tok", "SCRAM-SHA-256") is None


def test_token_credentials_are_made_with_the_token_not_at_login(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DelegationTokenManager.updateCache -> prepareScramCredentials: the cache takes a token
    with one credential per mechanism (4096 iterations over the base64 HMAC); a login only
    looks it up, so no PBKDF2 runs on the event loop that serves the login."""
    token = DelegationToken(INFO, b"\x03" * 64)
    credentials = token_credentials(token)
    assert sorted(credentials) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    for mechanism, credential in credentials.items():
        assert credential.iterations == 4096
        name = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
        salted = hashlib.pbkdf2_hmac(name, token.hmac_base64.encode(), credential.salt, 4096)
        server_key = hmac.new(salted, b"Server Key", name).digest()
        assert credential.server_key == server_key

    def no_pbkdf2(*_args: object, **_kwargs: object) -> bytes:
        raise AssertionError("PBKDF2 during a login")

    monkeypatch.setattr(hashlib, "pbkdf2_hmac", no_pbkdf2)
    cache = TokenCache()
    cache.update(token, credentials)
    for mechanism, credential in credentials.items():
        assert cache.credential("tok", mechanism) == credential
        login = cache.login("tok", mechanism)
        assert login is not None and login.credential == credential
    # A token taken without credentials does not authenticate (Kafka: no credential, no login).
    cache.update(token, {})
    assert cache.login("tok", "SCRAM-SHA-256") is None


def _token_server(password: str) -> ScramServer:
    credential = credential_from_password("SCRAM-SHA-256", password)
    return ScramServer(
        "SCRAM-SHA-256",
        lambda _user: None,
        lambda token_id: TokenCredential(credential, "alice", 99) if token_id == "tok" else None,
    )


def test_scram_tokenauth_extension() -> None:
    server = _token_server("hmac-b64")
    client = scramp.ScramClient(["SCRAM-SHA-256"], "tok", "hmac-b64")
    first = client.get_client_first() + ",tokenauth=true"
    server_first = server.evaluate(first.encode()).decode()
    client.set_server_first(server_first)
    # scramp's client leaves the extension out of its AuthMessage: compute the proof by hand.
    bare = first[3:]
    attrs = dict(p.split("=", 1) for p in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(
        "sha256", b"hmac-b64", base64.b64decode(attrs["s"]), int(attrs["i"])
    )
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth, hashlib.sha256).digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True)))
    server.evaluate(f"{without_proof},p={proof.decode()}".encode())
    assert server.complete and server.authorization_id == "alice"
    assert server.token_authenticated and server.token_expiry_ms == 99


def test_scram_unknown_token_and_ignored_extensions() -> None:
    with pytest.raises(SaslFailed, match="Invalid tokenId : nope"):
        _token_server("x").evaluate(b"n,,n=nope,r=abc,tokenauth=true")
    # Another extension is ignored: a plain user login (unknown here).
    with pytest.raises(SaslFailed):
        _token_server("x").evaluate(b"n,,n=tok,r=abc,other=1")


def test_default_acls_follow_zkdata() -> None:
    creator = ACL(Permissions.ALL, Id("auth", ""))
    world_read = ACL(Permissions.READ, Id("world", "anyone"))
    world_all = ACL(Permissions.ALL, Id("world", "anyone"))
    assert default_acls(False, "/brokers") == [world_all]
    assert default_acls(True, "/brokers/ids/1") == [creator, world_read]
    for path in ("/config/users", "/config/users/alice", "/config/brokers/0"):
        assert sensitive_path(path) and default_acls(True, path) == [creator]
    assert default_acls(True, "/delegation_token/tokens/x") == [creator]
    assert default_acls(True, "/delegation_token") == [creator, world_read]
    assert default_acls(True, "/consumers") == [world_all]
    me = digest_id("kafka", "pw")
    assert writable_by([ACL(Permissions.ALL, me), world_read], [me])
    assert not writable_by([ACL(Permissions.ALL, me), world_read], [digest_id("kafka", "no")])
    assert writable_by([world_all], [])
