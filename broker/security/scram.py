"""SCRAM credentials in Kafka's format and the server side of the SCRAM exchange (RFC 5802).

Credentials are read and written as `ScramCredentialUtils.credentialToString` does
(`salt=...,stored_key=...,server_key=...,iterations=<n>` under `/config/users/<user>`);
`ScramMechanism` has KIP-554's type numbers. `ScramServer` follows `ScramSaslServer`: `scramp`
parses the client-first message, the final check is Kafka's own. Failures raise `SaslFailed`
(the client sees only the generic message), a foreign authorization id `SaslAuthenticationFailed`.
Extensions are stripped before scramp and kept in the AuthMessage; `tokenauth=true` logs in a
delegation token through `token_lookup` (docs/kafka-behaviour.md §18).

Not here: an authorization id equal to the user name (scramp refuses it, Kafka accepts it), the
SCRAM client.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import scramp

from zkbroker.broker.security.sasl import SaslAuthenticationFailed, SaslFailed

# Kafka's ScramMechanism types (the wire value of Describe/AlterUserScramCredentials).
MECHANISM_TYPES: Mapping[str, int] = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES: Mapping[int, str] = {v: k for k, v in MECHANISM_TYPES.items()}
_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
# Kafka's ScramMechanism minIterations (both mechanisms) and ZkAdminManager's maximum.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_text(self) -> str:
        """Kafka's ScramCredentialUtils.credentialToString."""
        return (
            f"salt={_b64(self.salt)},stored_key={_b64(self.stored_key)},"
            f"server_key={_b64(self.server_key)},iterations={self.iterations}"
        )

    @staticmethod
    def from_text(text: str) -> ScramCredential:
        """Kafka's credentialFromString; ValueError when a part is missing or malformed."""
        parts: dict[str, str] = {}
        for item in text.split(","):
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"invalid SCRAM credential {text!r}")
            parts[key] = value
        try:
            return ScramCredential(
                salt=base64.b64decode(parts["salt"], validate=True),
                stored_key=base64.b64decode(parts["stored_key"], validate=True),
                server_key=base64.b64decode(parts["server_key"], validate=True),
                iterations=int(parts["iterations"]),
            )
        except (KeyError, ValueError) as e:
            raise ValueError(f"invalid SCRAM credential: {e}") from None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def credential_from_salted_password(
    mechanism: str, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """Kafka's ScramFormatter.generateCredential(salt, saltedPassword, iterations): what
    AlterUserScramCredentials stores from the client's salted password."""
    digest = _HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    stored_key = digest(client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return ScramCredential(salt, stored_key, server_key, iterations)


def credential_from_password(
    mechanism: str, password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """A credential for `password` (kafka-configs' `SCRAM-SHA-256=[password=...]`)."""
    salt_out, stored_key, server_key, i = scramp.ScramMechanism(mechanism).make_auth_info(
        password, iteration_count=iterations, salt=salt
    )
    return ScramCredential(salt_out, stored_key, server_key, i)


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802 Hi(): what a client sends in AlterUserScramCredentials."""
    name = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
    return hashlib.pbkdf2_hmac(name, password.encode("utf-8"), salt, iterations)


CredentialLookup = Callable[[str], "ScramCredential | None"]


@dataclass(frozen=True)
class TokenCredential:
    """A delegation token's SCRAM credential, its owner's name and its expiry (ms)."""

    credential: ScramCredential
    owner_name: str
    expiry_timestamp_ms: int


# token id -> the token's credential for this exchange's mechanism, None when unknown.
TokenLookup = Callable[[str], "TokenCredential | None"]


class _UnknownUser(Exception):
    pass


class ScramServer:
    """One SCRAM exchange, server side: client-first -> server-first, client-final ->
    server-final, then complete."""

    def __init__(
        self, mechanism: str, lookup: CredentialLookup, token_lookup: TokenLookup | None = None
    ) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._token_lookup = token_lookup
        #: Set by a `tokenauth=true` login: the principal is token-authenticated and the
        #: session ends with the token (KIP-368's credential lifetime).
        self.token_authenticated = False
        self.token_expiry_ms: int | None = None
        self._owner_name = ""
        self._server = scramp.ScramMechanism(mechanism).make_server(self._auth_info)
        self._stage = 0
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._credential: ScramCredential | None = None
        self.complete = False
        self.authorization_id: str | None = None

    def _auth_info(self, username: str) -> tuple[bytes, bytes, bytes, int]:
        credential = self._lookup(username)
        if credential is None:
            raise _UnknownUser(username)
        if credential.iterations < MIN_ITERATIONS:
            raise _UnknownUser(username)
        return credential.salt, credential.stored_key, credential.server_key, credential.iterations

    def _client_final(self, text: str) -> str:
        """Kafka's RECEIVE_CLIENT_FINAL_MESSAGE step: the nonce must END with the server's
        combined nonce (Kafka's `endsWith`: some librdkafka releases repeat the client nonce,
        which an exact comparison such as scramp's refuses), the channel binding must be the
        gs2 header's, the proof must match the stored key; the answer is the server signature.
        The HMACs are hashlib's, over RFC 5802's AuthMessage."""
        credential = self._credential
        if credential is None:  # removed meanwhile
            raise SaslFailed("Authentication failed: Invalid user credentials")
        digest = _HASHES[self.mechanism]
        try:
            channel, nonce, proof, without_proof = _client_final_parts(text)
            binding = base64.b64decode(channel, validate=True)
        except ValueError as e:
            raise SaslFailed(str(e)) from None
        if not nonce.endswith(self._nonce):
            raise SaslFailed("Invalid client nonce in the final client message.")
        if binding != self._gs2_header.encode("utf-8"):
            raise SaslFailed("Invalid channel binding in the final client message.")
        auth = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = hmac.new(credential.stored_key, auth, digest).digest()
        if len(proof) != len(signature):
            raise SaslFailed("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(digest(client_key).digest(), credential.stored_key):
            raise SaslFailed("Invalid client credentials")
        server_signature = hmac.new(credential.server_key, auth, digest).digest()
        return f"v={_b64(server_signature)}"

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailed("Invalid SCRAM message encoding") from None
        if self._stage == 0:
            self._stage = 1
            authzid, username = _gs2_names(text)
            flag, _, rest = text.partition(",")
            authz, _, bare = rest.partition(",")
            core, extensions = _split_extensions(bare)
            if extensions.get("tokenauth", "").lower() == "true":  # Boolean.parseBoolean
                login = self._token_lookup(username) if self._token_lookup else None
                if login is None:
                    raise SaslFailed(f"Token Authentication failed: Invalid tokenId : {username}")
                credential = login.credential
                self._lookup = lambda _user: credential
                self.token_authenticated = True
                self.token_expiry_ms = login.expiry_timestamp_ms
                self._owner_name = login.owner_name
            if authzid:
                # Kafka looks the user up first (unknown: the generic failure), then refuses a
                # foreign authorization id with its own message. scramp accepts no authzid at
                # all, so one equal to the user name fails too (generic): no client sends one.
                if self._lookup(username) is None:
                    raise SaslFailed("Authentication failed: Invalid user credentials")
                if authzid != username:
                    raise SaslAuthenticationFailed(
                        "Authentication failed: Client requested an authorization id that is "
                        "different from username"
                    )
            try:
                self._server.set_client_first(f"{flag},{authz},{core}")
                first: str = self._server.get_server_first()
            except (scramp.ScramException, _UnknownUser, ValueError) as e:
                raise SaslFailed(f"Authentication failed: {e}") from None
            self._client_first_bare = bare  # extensions included, as in Kafka's AuthMessage
            self._gs2_header = f"{flag},{authz},"
            self._server_first = first
            self._nonce = first.split(",", 1)[0][2:]
            self._credential = self._lookup(username)
            self.authorization_id = self._owner_name if self.token_authenticated else username
            return first.encode("utf-8")
        if self._stage == 1:
            self._stage = 2
            final = self._client_final(text)
            self.complete = True
            return final.encode("utf-8")
        raise SaslFailed("Unexpected challenge in Sasl server state COMPLETE")


def _client_final_parts(message: str) -> tuple[str, str, bytes, str]:
    """(channel binding, nonce, proof, the message without its proof) of a client-final
    message, `c=...,r=...[,extensions],p=...` (Kafka's ClientFinalMessage); ValueError when
    malformed."""
    without_proof, sep, proof = message.rpartition(",p=")
    attrs = without_proof.split(",")
    if not sep or len(attrs) < 2 or not attrs[0].startswith("c=") or not attrs[1].startswith("r="):
        raise ValueError(f"Invalid SCRAM client final message format: {message}")
    return attrs[0][2:], attrs[1][2:], base64.b64decode(proof, validate=True), without_proof


def _split_extensions(bare: str) -> tuple[str, dict[str, str]]:
    """(`n=...,r=...`, the extensions after the nonce) of a client-first-bare message."""
    parts = bare.split(",")
    head = parts[:2]
    extensions: dict[str, str] = {}
    for part in parts[2:]:
        key, sep, value = part.partition("=")
        if sep and key.isalpha() and len(key) > 1:
            extensions[key] = value
        else:
            head.append(part)  # not an extension: scramp judges it
    return ",".join(head), extensions


def _gs2_names(client_first: str) -> tuple[str, str]:
    """(authorization id, user name) of a client-first message, with Kafka's saslname
    decoding (=2C is ',', =3D is '='); empty strings where absent."""
    parts = client_first.split(",")
    authzid = parts[1][2:] if len(parts) > 1 and parts[1].startswith("a=") else ""
    user = parts[2][2:] if len(parts) > 2 and parts[2].startswith("n=") else ""

    def decode(name: str) -> str:
        return name.replace("=2C", ",").replace("=3D", "=")

    return decode(authzid), decode(user)
