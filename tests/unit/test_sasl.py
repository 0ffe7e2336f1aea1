"""Pure security code: PLAIN and SCRAM servers, Kafka's SCRAM credential text, JAAS parsing,
SslPrincipalMapper rules (Kafka's own test vectors), listener security configs, and the SASL
keys of each release's ApiVersions."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import pytest
import scramp

from zkbroker.broker.protocol.releases import advertised_range
from zkbroker.broker.security.jaas import JaasError, plain_jaas_config, plain_users
from zkbroker.broker.security.listener_config import listener_security
from zkbroker.broker.security.principal_mapping import NoMatchingRule, PrincipalMapper, rfc2253
from zkbroker.broker.security.sasl import PlainServer, SaslAuthenticationFailed, SaslFailed
from zkbroker.broker.security.scram import (
    ScramCredential,
    ScramServer,
    credential_from_password,
    credential_from_salted_password,
    salted_password,
)

# ---- PLAIN -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
        (b"\0nobody\0pw", "Authentication failed: Invalid username or password"),
        (b"\0\0pw", "Authentication failed: username not specified"),
        (b"\0alice\0", "Authentication failed: password not specified"),
        (b"alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"a\0b\0c\0d", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (
            b"bob\0alice\0pw",
            "Authentication failed: Client requested an authorization id that is different "
            "from username",
        ),
    ],
)
def test_plain_failures_carry_kafkas_messages(token: bytes, message: str) -> None:
    server = PlainServer({"alice": "pw"})
    with pytest.raises(SaslAuthenticationFailed, match=f"^{message}$"):
        server.evaluate(token)
    assert not server.complete


def test_plain_success() -> None:
    server = PlainServer({"alice": "pw"})
    assert server.evaluate(b"alice\0alice\0pw") == b""
    assert (server.complete, server.authorization_id) == (True, "alice")


# ---- SCRAM -------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_exchange_against_scramps_client(mechanism: str) -> None:
    credential = credential_from_password(mechanism, "secret", 4096)
    store = {"alice": credential}
    server = ScramServer(mechanism, store.get)
    client = scramp.ScramClient([mechanism], "alice", "secret")
    client.set_server_first(server.evaluate(client.get_client_first().encode()).decode())
    client.set_server_final(server.evaluate(client.get_client_final().encode()).decode())
    assert (server.complete, server.authorization_id) == (True, "alice")


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("nobody", "secret")])
def test_scram_failures_are_generic(user: str, password: str) -> None:
    store = {"alice": credential_from_password("SCRAM-SHA-256", "secret")}
    server = ScramServer("SCRAM-SHA-256", store.get)
    client = scramp.ScramClient(["SCRAM-SHA-256"], user, password)
    with pytest.raises(SaslFailed):
        client.set_server_first(server.evaluate(client.get_client_first().encode()).decode())
        server.evaluate(client.get_client_final().encode())


def test_scram_below_minimum_iterations_is_refused() -> None:
    weak = credential_from_password("SCRAM-SHA-256", "secret", 4096)
    weak = ScramCredential(weak.salt, weak.stored_key, weak.server_key, 1000)
    server = ScramServer("SCRAM-SHA-256", {"alice": weak}.get)
    with pytest.raises(SaslFailed):
        server.evaluate(b"n,,n=alice,r=abcdefgh")


def test_scram_foreign_authorization_id() -> None:
    store = {"alice": credential_from_password("SCRAM-SHA-256", "secret")}
    server = ScramServer("SCRAM-SHA-256", store.get)
    with pytest.raises(SaslAuthenticationFailed, match="authorization id that is different"):
        server.evaluate(b"n,a=bob,n=alice,r=abcdefgh")


def test_credential_text_is_kafkas_format() -> None:
    salt = b"0123456789abcdef"
    credential = credential_from_password("SCRAM-SHA-256", "pw", 4096, salt=salt)
    text = credential.to_text()
    assert text.startswith(f"salt={base64.b64encode(salt).decode()},stored_key=")
    assert text.endswith(",iterations=4096")
    assert ScramCredential.from_text(text) == credential
    # What AlterUserScramCredentials derives from the client's salted password is the same.
    salted = salted_password("SCRAM-SHA-256", "pw", salt, 4096)
    assert credential_from_salted_password("SCRAM-SHA-256", salt, salted, 4096) == credential
    # RFC 5802: StoredKey = H(HMAC(SaltedPassword, "Client Key")).
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    assert credential.stored_key == hashlib.sha256(client_key).digest()
    with pytest.raises(ValueError):
        ScramCredential.from_text("salt=AA==,iterations=4096")


# ---- JAAS --------------------------------------------------------------------------------


def test_jaas_plain_users() -> None:
    text = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="al\\"ice" user_bob=bare;'
    )
    assert plain_users(text) == {"admin": "admin-secret", "alice": 'al"ice', "bob": "bare"}
    assert plain_users(plain_jaas_config({"x": 'q"uote\\'})) == {"x": 'q"uote\\'}
    with pytest.raises(JaasError):
        plain_users("org.apache.kafka.common.security.plain.PlainLoginModule required user_a=1")
    with pytest.raises(JaasError):
        plain_users("Module sometimes;")


# ---- SslPrincipalMapper (Kafka's SslPrincipalMapperTest vectors) ----------------------------


def test_principal_mapping_rules() -> None:
    mapper = PrincipalMapper.parse(
        ", ".join(
            [
                "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
                "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
                "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
                "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
                "DEFAULT",
            ]
        )
    )
    assert mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert mapper.name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert mapper.name("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert (
        mapper.name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"
    )
    comma = PrincipalMapper.parse("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert comma.name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"
    with pytest.raises(NoMatchingRule):
        PrincipalMapper.parse("RULE:^CN=x$/y/").name("CN=z")


@pytest.mark.parametrize(
    "rules",
    [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
    ],
)
def test_invalid_principal_mapping_rules(rules: str) -> None:
    with pytest.raises(ValueError):
        PrincipalMapper.parse(rules)


@pytest.mark.parametrize(
    "rules",
    [
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "",
        ",,RULE://,,,DEFAULT,,",
    ],
)
def test_valid_principal_mapping_rules(rules: str) -> None:
    PrincipalMapper.parse(rules)


def test_rfc2253_is_javas_order() -> None:
    subject = (
        (("countryName", "US"),),
        (("organizationName", "Org, Inc"),),
        (("commonName", "client"),),
    )
    assert rfc2253(subject) == "CN=client,O=Org\\, Inc,C=US"


# ---- listener configs --------------------------------------------------------------------


def test_listener_security_reads_kafkas_keys() -> None:
    jaas = plain_jaas_config({"alice": "pw"})
    security = listener_security(
        {
            "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "GSSAPI",
            "listener.name.client.sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
            "listener.name.client.plain.sasl.jaas.config": jaas,
            "connections.max.reauth.ms": "60000",
            "listener.name.client.scram-sha-512.connections.max.reauth.ms": "1000",
        },
        "CLIENT",
    )
    assert security.protocol == "SASL_PLAINTEXT"
    assert security.mechanisms == ("SCRAM-SHA-512", "PLAIN")
    assert dict(security.plain_users) == {"alice": "pw"}
    assert dict(security.reauth_ms) == {"SCRAM-SHA-512": 1000, "PLAIN": 60000}


@pytest.mark.parametrize(
    ("configs", "listener", "reason"),
    [
        ({}, "CLIENT", "No security protocol defined for listener CLIENT"),
        # Kafka's default GSSAPI needs its Krb5LoginModule login.
        ({}, "SASL_PLAINTEXT", "gssapi.sasl.jaas.config"),
        ({"sasl.enabled.mechanisms": "PLAIN"}, "SASL_PLAINTEXT", "plain.sasl.jaas.config"),
        ({"listener.security.protocol.map": "A:NOPE"}, "A", "SecurityProtocol.NOPE"),
        ({"ssl.principal.mapping.rules": "nope"}, "SSL", "Invalid rule"),
    ],
)
def test_listener_security_refusals(configs: dict[str, str], listener: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        listener_security(configs, listener)


def test_sasl_ssl_asks_for_certificates_only_when_the_listener_says() -> None:
    base = {"sasl.enabled.mechanisms": "SCRAM-SHA-256", "ssl.client.auth": "required"}
    assert listener_security(base, "SASL_SSL").configs["ssl.client.auth"] == "none"
    own = {**base, "listener.name.sasl_ssl.ssl.client.auth": "requested"}
    assert listener_security(own, "SASL_SSL").configs["ssl.client.auth"] == "requested"
    assert listener_security(base, "SSL").configs["ssl.client.auth"] == "required"


# ---- ApiVersions history -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("release", "handshake", "authenticate", "scram_apis"),
    [
        ((0, 10, 0), (0, 0), None, None),
        ((0, 11, 0), (0, 0), None, None),
        ((1, 0), (0, 1), (0, 0), None),
        ((2, 1), (0, 1), (0, 0), None),
        ((2, 2), (0, 1), (0, 1), None),
        ((2, 5), (0, 1), (0, 2), None),
        ((2, 7), (0, 1), (0, 2), (0, 0)),
        ((3, 9), (0, 1), (0, 2), (0, 0)),
    ],
)
def test_sasl_keys_per_release(
    release: tuple[int, ...],
    handshake: tuple[int, int],
    authenticate: tuple[int, int] | None,
    scram_apis: tuple[int, int] | None,
) -> None:
    assert advertised_range(release, 17) == handshake
    assert advertised_range(release, 36) == authenticate
    assert advertised_range(release, 50) == scram_apis
    assert advertised_range(release, 51) == scram_apis


def _final(password: str, salt: bytes, bare: str, server_first: str, nonce: str) -> str:
    """A client-final message as a client computes it (RFC 5802), for any nonce."""
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 4096)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    stored_key = hashlib.sha256(client_key).digest()
    without_proof = f"c=biws,r={nonce}"
    auth = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.new(stored_key, auth, hashlib.sha256).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return f"{without_proof},p={base64.b64encode(proof).decode()}"


def test_scram_accepts_a_repeated_client_nonce_as_kafka_does() -> None:
    """Some librdkafka releases (Debian's kcat) send client nonce + server nonce, where the
    server nonce already starts with the client's: Kafka checks `endsWith`, so it logs in."""
    credential = credential_from_password("SCRAM-SHA-256", "secret", 4096)
    server = ScramServer("SCRAM-SHA-256", {"alice": credential}.get)
    bare = "n=alice,r=clientnonce"
    server_first = server.evaluate(f"n,,{bare}".encode()).decode()
    combined = server_first.split(",")[0][2:]
    buggy = _final("secret", credential.salt, bare, server_first, "clientnonce" + combined)
    assert server.evaluate(buggy.encode()).startswith(b"v=")
    assert server.complete


@pytest.mark.parametrize("nonce", ["", "other"])
def test_scram_refuses_a_foreign_nonce_or_binding(nonce: str) -> None:
    credential = credential_from_password("SCRAM-SHA-256", "secret", 4096)
    server = ScramServer("SCRAM-SHA-256", {"alice": credential}.get)
    bare = "n=alice,r=clientnonce"
    server_first = server.evaluate(f"n,,{bare}".encode()).decode()
    combined = server_first.split(",")[0][2:]
    final = _final("secret", credential.salt, bare, server_first, nonce or combined)
    if not nonce:
        final = final.replace("c=biws", "c=eSws")  # "y,," where the client said "n,,"
    with pytest.raises(SaslFailed):
        server.evaluate(final.encode())


# ---- TLS contexts ------------------------------------------------------------------------


def test_tls_context_from_pem_text_and_files(tmp_path: Path) -> None:
    import ssl

    import trustme

    from zkbroker.broker.security.tls import server_context

    ca = trustme.CA()
    leaf = ca.issue_cert("localhost")
    chain = "".join(b.bytes().decode() for b in leaf.cert_chain_pems)
    key = leaf.private_key_pem.bytes().decode()
    text = server_context(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": chain,
            "ssl.keystore.key": key,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": ca.cert_pem.bytes().decode(),
            "ssl.client.auth": "requested",
            "ssl.enabled.protocols": "TLSv1.3",
        }
    )
    assert text.verify_mode == ssl.CERT_OPTIONAL
    assert text.minimum_version == ssl.TLSVersion.TLSv1_3
    keystore = tmp_path / "server.pem"
    leaf.private_key_and_cert_chain_pem.write_to_path(str(keystore))
    files = server_context({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore)})
    assert files.verify_mode == ssl.CERT_NONE
    with pytest.raises(ValueError, match="must be set together"):
        server_context({"ssl.keystore.type": "PEM", "ssl.keystore.key": key})
    with pytest.raises(ValueError, match="needs a truststore"):
        server_context(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(keystore),
                "ssl.client.auth": "required",
            }
        )
