"""Pure OAUTHBEARER code: the client's first message per release, the unsecured JWS validator,
the error JSON, the listener's configs per release (handler class names, JAAS entries, KIP-768
keys), the session-lifetime rule, and signed-token checks against a JWKS file."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from zkbroker.broker.security.jaas import Module
from zkbroker.broker.security.listener_config import listener_security
from zkbroker.broker.security.oauthbearer import (
    JWKS_VALIDATOR_3_1,
    JWKS_VALIDATOR_3_4,
    LOGIN_MODULE,
    BrokenToken,
    InvalidToken,
    JwksOptions,
    OAuthBearerServer,
    Token,
    UnsecuredOptions,
    error_json,
    oauthbearer_config,
    parse_first_message,
    validate_unsecured,
)
from zkbroker.broker.security.oauthbearer_jwks import JwksKeys, validate_signed
from zkbroker.broker.security.sasl import (
    SaslAuthenticationFailed,
    SaslFailed,
    credential_lifetime_applies,
)

NOW_MS = 1_800_000_000_000


def _part(data: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(data).encode()).decode().rstrip("=")


def _jws(claims: dict[str, Any], header: dict[str, Any] | None = None, sig: str = "") -> str:
    return f"{_part(header or {'alg': 'none'})}.{_part(claims)}.{sig}"


def _claims(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"sub": "alice", "iat": NOW_MS // 1000, "exp": NOW_MS // 1000 + 60}
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def _validate(token: str, **options: Any) -> Token:
    return validate_unsecured(token, UnsecuredOptions(**options), NOW_MS)


# ---- the first message -------------------------------------------------------------------


def test_first_message_parts() -> None:
    message = parse_first_message(b"n,a=alice,\x01auth=Bearer abc.def.\x01k=v 1\x01\x01")
    assert (message.token, message.authorization_id) == ("abc.def.", "alice")
    assert message.extensions == {"k": "v 1"}
    # 2.0 parsed the pairs and ignored them (extensions came with KIP-342, 2.1).
    assert parse_first_message(b"n,,\x01auth=Bearer t\x01k=v\x01\x01", (2, 0)).extensions == {}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"n,,\x01auth=Bearer\x01\x01", "invalid 'auth' format"),
        (b"n,,\x01k=v\x01\x01", "'auth' not specified"),
        (b"y,,\x01auth=Bearer t\x01\x01", "Invalid OAUTHBEARER client first message"),
        (b"n,,\x01auth=Bearer t\x01k1=v\x01\x01", "Invalid OAUTHBEARER client first message"),
    ],
)
def test_first_message_refused(data: bytes, reason: str) -> None:
    with pytest.raises(SaslFailed, match=reason):
        parse_first_message(data)


def test_token_characters_per_release() -> None:
    data = b"n,,\x01auth=Bearer ab+/c==\x01\x01"
    assert parse_first_message(data, (3, 8)).token == "ab+/c=="
    with pytest.raises(SaslFailed):
        parse_first_message(data, (3, 7))


def test_other_scheme_closes() -> None:
    with pytest.raises(BrokenToken):
        parse_first_message(b"n,,\x01auth=Basic abc\x01\x01")


# ---- the unsecured validator --------------------------------------------------------------


def test_unsecured_valid() -> None:
    token = _validate(_jws(_claims(scope=["a", " b "])), required_scope=("a",))
    assert token == Token("alice", NOW_MS + 60_000, frozenset({"a", "b"}))
    assert _validate(_jws(_claims(exp=NOW_MS / 1000 + 0.0005))).lifetime_ms == NOW_MS + 1


@pytest.mark.parametrize(
    ("token", "options"),
    [
        (_jws(_claims(), {"alg": "HS256"}), {}),
        (_jws(_claims(), sig="abc"), {}),
        (_jws(_claims(exp=None)), {}),
        (_jws(_claims(exp="soon")), {}),
        (_jws(_claims(sub=None)), {}),
        (_jws(_claims(sub=7)), {}),
        (_jws(_claims(exp=NOW_MS // 1000)), {}),
        (_jws(_claims(iat=NOW_MS // 1000 + 5)), {}),
        (_jws(_claims(iat=NOW_MS // 1000 + 60)), {"clock_skew_ms": 100_000}),
        (_jws(_claims(scope=3)), {}),
        ("a.b", {}),
        ("a..b", {}),
        ("ab_c.def.", {}),
        (_part({"alg": "none"}) + ".bm90IGpzb24.", {}),
    ],
)
def test_unsecured_invalid(token: str, options: dict[str, Any]) -> None:
    with pytest.raises(InvalidToken) as refused:
        _validate(token, **options)
    assert refused.value.status == "invalid_token"


def test_unsecured_clock_skew_and_principal_claim() -> None:
    expired = _jws(_claims(iat=NOW_MS // 1000 - 60, exp=NOW_MS // 1000 - 1))
    assert _validate(expired, clock_skew_ms=2000).principal == "alice"
    assert _validate(_jws(_claims(uid="bob")), principal_claim="uid").principal == "bob"


def test_unsecured_scope_error() -> None:
    with pytest.raises(InvalidToken) as refused:
        _validate(_jws(_claims(scope="a")), required_scope=("a", "b"))
    assert error_json(refused.value) == '{"status":"insufficient_scope", "scope":"[a, b]"}'
    assert error_json(InvalidToken("x")) == '{"status":"invalid_token"}'


def test_unsecured_no_alg_closes() -> None:
    with pytest.raises(BrokenToken):
        _validate(_jws(_claims(), {"typ": "JWT"}))


def test_unsecured_options() -> None:
    options = UnsecuredOptions.from_jaas(
        {
            "unsecuredValidatorPrincipalClaimName": " uid ",
            "unsecuredValidatorRequiredScope": "a  b",
            "unsecuredValidatorAllowableClockSkewMs": "5",
        }
    )
    assert options == UnsecuredOptions("uid", "scope", ("a", "b"), 5)
    for bad in ({"unsecuredValidatorAllowableClockSkewMs": "-1"},
                {"unsecuredValidatorAllowableClockSkewMs": "x"},
                {"unsecuredValidatorRequiredScope": 'a"b'}):  # fmt: skip
        with pytest.raises(ValueError):
            UnsecuredOptions.from_jaas(bad)


# ---- the server ----------------------------------------------------------------------------


def test_server_challenge_then_failure() -> None:
    def refuse(_token: str) -> Token:
        raise InvalidToken("no")

    server = OAuthBearerServer(refuse)
    assert server.evaluate(b"n,,\x01auth=Bearer t\x01\x01") == b'{"status":"invalid_token"}'
    assert not server.complete
    with pytest.raises(SaslAuthenticationFailed, match=r'^\{"status":"invalid_token"\}$'):
        server.evaluate(b"\x01")


def test_server_success_and_lifetime() -> None:
    def accept(_token: str) -> Token:
        return Token("alice", 123, frozenset())

    server = OAuthBearerServer(accept)
    assert server.evaluate(b"n,,\x01auth=Bearer t\x01x=y\x01\x01") == b""
    assert (server.complete, server.authorization_id) == (True, "alice")
    assert (server.token_expiry_ms, server.extensions) == (123, {"x": "y"})
    with pytest.raises(SaslAuthenticationFailed, match=r"authorization id \(bob\)"):
        OAuthBearerServer(accept).evaluate(b"n,a=bob,\x01auth=Bearer t\x01\x01")


def test_credential_lifetime_rule() -> None:
    assert not credential_lifetime_applies((2, 1), 1000)
    assert not credential_lifetime_applies((3, 2), 0)
    assert credential_lifetime_applies((3, 2), 1000)
    assert credential_lifetime_applies((3, 3), 0)


# ---- configs -------------------------------------------------------------------------------

MODULE: Module = (LOGIN_MODULE, "required", {})
HANDLER = "oauthbearer.sasl.server.callback.handler.class"


def test_config_unsecured_by_default() -> None:
    config = oauthbearer_config({}, (MODULE,), (2, 0))
    assert config.unsecured == UnsecuredOptions() and config.jwks is None
    with pytest.raises(ValueError, match="exactly 1"):
        oauthbearer_config({}, (MODULE, MODULE))
    with pytest.raises(ValueError, match=r"2\.0"):
        oauthbearer_config({}, (MODULE,), (1, 1))


def test_config_jwks_handler_names_per_release(tmp_path: Path) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text('{"keys": []}')
    own = {"sasl.oauthbearer.jwks.endpoint.url": jwks.as_uri()}
    for release, name, ok in (
        ((3, 0), JWKS_VALIDATOR_3_1, False),
        ((3, 1), JWKS_VALIDATOR_3_1, True),
        ((3, 3), JWKS_VALIDATOR_3_4, False),
        ((3, 4), JWKS_VALIDATOR_3_4, True),
        ((3, 9), JWKS_VALIDATOR_3_1, True),
    ):
        configs = {**own, HANDLER: name}
        if ok:
            config = oauthbearer_config(configs, (MODULE,), release)
            assert config.jwks is not None and config.jwks.file == jwks
        else:
            with pytest.raises(ValueError, match="could not be found"):
                oauthbearer_config(configs, (MODULE,), release)


def test_config_jwks_keys() -> None:
    configs = {
        HANDLER: JWKS_VALIDATOR_3_4,
        "sasl.oauthbearer.jwks.endpoint.url": "https://idp.test/jwks",
        "oauthbearer.sasl.oauthbearer.expected.audience": "a, b",
        "sasl.oauthbearer.expected.issuer": "iss",
        "sasl.oauthbearer.clock.skew.seconds": "5",
        "sasl.oauthbearer.sub.claim.name": "client_id",
    }
    jwks = oauthbearer_config(configs, (MODULE,)).jwks
    assert jwks == JwksOptions(
        "https://idp.test/jwks",
        expected_audience=("a", "b"),
        expected_issuer="iss",
        clock_skew_s=5,
        sub_claim="client_id",
    )
    for url, reason in (
        ("ftp://x/jwks", "invalid protocol"),
        ("file:///no/such/jwks.json", "doesn't exist"),
        ("", "must be non-null"),
    ):
        with pytest.raises(ValueError, match=reason):
            oauthbearer_config({**configs, "sasl.oauthbearer.jwks.endpoint.url": url}, (MODULE,))
    with pytest.raises(ValueError, match="must be positive"):
        oauthbearer_config({**configs, "sasl.oauthbearer.jwks.endpoint.refresh.ms": "0"}, (MODULE,))


def test_listener_security_oauthbearer() -> None:
    configs = {
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": (
            f'{LOGIN_MODULE} required unsecuredValidatorRequiredScope="kafka";'
        ),
    }
    security = listener_security(configs, "SASL_PLAINTEXT")
    assert security.oauthbearer is not None
    assert security.oauthbearer.unsecured == UnsecuredOptions(required_scope=("kafka",))
    with pytest.raises(ValueError, match=r"oauthbearer\.sasl\.jaas\.config"):
        listener_security({"sasl.enabled.mechanisms": "OAUTHBEARER"}, "SASL_PLAINTEXT")
    with pytest.raises(ValueError, match=r"2\.0"):
        listener_security(configs, "SASL_PLAINTEXT", (1, 1))


# ---- signed tokens against a JWKS file ---------------------------------------------------


KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _signed(key: rsa.RSAPrivateKey = KEY, kid: str = "k1", **claims: Any) -> str:
    now = int(time.time())
    body = {"sub": "alice", "iat": now, "exp": now + 60, "aud": "kafka", "scope": "a b"}
    body.update(claims)
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, "RS256",
                      headers={"kid": kid})  # fmt: skip


def test_validate_signed(tmp_path: Path) -> None:
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key()))
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [{**public, "kid": "k1"}, {"kty": "weird"}]}))

    async def run() -> None:
        keys = JwksKeys(JwksOptions(path.as_uri(), expected_audience=("kafka",)))
        await keys.start()
        try:
            assert len(keys.keys) == 1
            token = validate_signed(_signed(), keys)
            assert (token.principal, token.scope) == ("alice", frozenset({"a b"}))
            other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            for bad in (
                _signed(aud="x"),
                _signed(exp=int(time.time()) - 60),
                _signed(key=other),
                _signed(kid="k2"),
                _signed(sub=" "),
                _signed(iat=None),
            ):
                with pytest.raises(InvalidToken):
                    validate_signed(bad, keys)
        finally:
            await keys.stop()

    asyncio.run(run())


def test_no_inter_broker_oauthbearer() -> None:
    from zkbroker.broker.security.inter_broker import inter_broker_security

    configs = {
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": f"{LOGIN_MODULE} required;",
    }
    with pytest.raises(ValueError, match="OAUTHBEARER: zkbroker's brokers log in"):
        inter_broker_security(listener_security(configs, "SASL_PLAINTEXT"))
