"""SASL server mechanisms as Kafka's broker runs them: the failure kinds and PLAIN (RFC 4616).

Two kinds of failure, as in Kafka's `SaslServerAuthenticator`:
- `SaslAuthenticationFailed` (Kafka's SaslAuthenticationException): its message is sent to the
  client (PLAIN's "Authentication failed: Invalid username or password");
- `SaslFailed` (Kafka's SaslException): the client sees only the generic "Authentication failed
  during authentication due to invalid credentials with SASL mechanism <m>", so that nothing
  tells whether the user exists.

`PlainServer` follows Kafka's `PlainSaslServer` and `PlainServerCallbackHandler`: the token is
`[authzid] NUL authcid NUL passwd`, the password is compared in constant time with the
`user_<name>="..."` option of the listener's PlainLoginModule JAAS configuration.

Deliberately not here: the SCRAM exchange (`zkbroker.broker.security.scram`), GSSAPI
(`zkbroker.broker.security.gssapi_server`) and OAUTHBEARER
(`zkbroker.broker.security.oauthbearer`).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Protocol


class SaslAuthenticationFailed(Exception):
    """Authentication failed; the message is the one the client is sent."""


class SaslFailed(Exception):
    """Authentication failed; the client is sent the authenticator's generic message."""


class SaslClosed(Exception):
    """The mechanism failed where Kafka closes the connection at once, unanswered (an
    I/O-like error of its SaslServer, e.g. GSSAPI's transient Kerberos errors)."""


class SaslServer(Protocol):
    mechanism: str
    complete: bool
    authorization_id: str | None

    # None: no answer at all (GSSAPI's last step; with SaslAuthenticate an empty one).
    def evaluate(self, token: bytes) -> bytes | None: ...


class PlainServer:
    mechanism = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.complete = False
        self.authorization_id: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailed("Unexpected challenge in Sasl server state COMPLETE")
        text = token.decode("utf-8", errors="replace")
        tokens = text.split("\x00", 3)
        if len(tokens) != 3:
            raise SaslAuthenticationFailed(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(tokens), 4)}"
            )
        authzid, username, password = tokens
        if not username:
            raise SaslAuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationFailed("Authentication failed: password not specified")
        expected = self._users.get(username)
        if expected is None or not hmac.compare_digest(
            password.encode("utf-8"), expected.encode("utf-8")
        ):
            raise SaslAuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.authorization_id = username
        self.complete = True
        return b""


def credential_lifetime_applies(release: tuple[int, ...], reauth_ms: int) -> bool:
    """Whether a credential's expiry (an OAUTHBEARER token's, a delegation token's) bounds the
    session (SaslServerAuthenticator's session lifetime): not before KIP-368 (2.2); until 3.3
    only when `connections.max.reauth.ms` is positive (a 0 there made the session unbounded);
    always since KAFKA-13848 (3.3)."""
    if release < (2, 2):
        return False
    return release >= (3, 3) or reauth_ms > 0
