"""SASL/OAUTHBEARER on the broker (RFC 7628; KIP-255 in 2.0, extensions KIP-342 in 2.1, session
lifetime KIP-368 in 2.2, JWKS validation KIP-768 in 3.1), as Kafka's `OAuthBearerSaslServer`
runs it: the client's first message, the unsecured JWS validator (the default), and the server
side of the exchange. The JWKS keys and signed-token checks are in
`zkbroker.broker.security.oauthbearer_jwks`.

A token the validator refuses is answered with an error JSON challenge (`{"status":
"invalid_token"}`, with a `scope` for a missing required scope); the client then sends `\\x01`
and is refused with that JSON as the SASL_AUTHENTICATION_FAILED message.

Deliberately not here: the broker's own OAUTHBEARER login (inter-broker OAUTHBEARER), custom
callback handler classes.
"""

from __future__ import annotations

import base64
import binascii
import importlib.util
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from zkbroker.broker.security.jaas import Module
from zkbroker.broker.security.sasl import SaslAuthenticationFailed, SaslFailed

MECHANISM = "OAUTHBEARER"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
UNSECURED_VALIDATOR = (
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured."
    "OAuthBearerUnsecuredValidatorCallbackHandler"
)
# KIP-768's handler: in the `secured` package from 3.1, moved up a package in 3.4 (the old
# name kept, deprecated).
JWKS_VALIDATOR_3_1 = (
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
)
JWKS_VALIDATOR_3_4 = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
)
CALLBACK_HANDLER_KEY = "sasl.server.callback.handler.class"

_SEPARATOR = "\x01"
# RFC 7628's saslname: 0x01-0x7F but not `=` or `,`, which come escaped.
_SASLNAME_PY = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7E \t\r\n]+"
_FIRST_MESSAGE = re.compile(
    rf"n,(a=(?P<authzid>{_SASLNAME_PY}))?,{_SEPARATOR}"
    rf"(?P<kvpairs>(?:{_KEY}={_VALUE}{_SEPARATOR})*){_SEPARATOR}",
    re.DOTALL,
)
# The bearer token's characters: base64url only before 3.8, base64 (with padding) since.
_AUTH_OLD = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)", re.ASCII)
_AUTH_3_8 = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)", re.ASCII)
_SCOPE_ITEM = re.compile(r"[\x23-\x5B\x5D-\x7E\x21]+")


class InvalidToken(Exception):
    """The validator refused the token: the client gets the error JSON (`status`, and the
    required `scope` for insufficient_scope); the reason is only logged, as in Kafka."""

    def __init__(self, reason: str, scope: str | None = None) -> None:
        super().__init__(reason)
        self.scope = scope

    @property
    def status(self) -> str:
        return "insufficient_scope" if self.scope is not None else "invalid_token"


class BrokenToken(Exception):
    """A token Kafka's validator does not survive (a runtime exception out of the SASL
    server): the connection is closed unanswered."""


@dataclass(frozen=True)
class Token:
    principal: str
    # The expiry, ms since the epoch (Kafka's OAuthBearerToken.lifetimeMs).
    lifetime_ms: int
    scope: frozenset[str]


Validator = Callable[[str], Token]


# ---- the client's first message ---------------------------------------------------------


@dataclass(frozen=True)
class FirstMessage:
    token: str
    authorization_id: str
    extensions: Mapping[str, str]


def parse_first_message(data: bytes, release: tuple[int, ...] = (3, 9)) -> FirstMessage:
    """Kafka's OAuthBearerClientInitialResponse; SaslFailed with its reason when malformed."""
    text = data.decode("utf-8", errors="replace")
    match = _FIRST_MESSAGE.fullmatch(text)
    if match is None:
        raise SaslFailed("Invalid OAUTHBEARER client first message")
    properties: dict[str, str] = {}
    pairs = match.group("kvpairs")
    for pair in pairs.split(_SEPARATOR) if pairs else ():
        if pair:
            key, _, value = pair.partition("=")
            properties[key] = value
    auth = properties.pop("auth", None)
    if auth is None:
        raise SaslFailed("Invalid OAUTHBEARER client first message: 'auth' not specified")
    pattern = _AUTH_3_8 if release >= (3, 8) else _AUTH_OLD
    auth_match = pattern.fullmatch(auth)
    if auth_match is None:
        raise SaslFailed("Invalid OAUTHBEARER client first message: invalid 'auth' format")
    if auth_match.group("scheme").lower() != "bearer":
        # Kafka formats this message with a group its outer pattern lacks: the lookup itself
        # throws, and the connection closes without an answer.
        raise BrokenToken("Invalid scheme in OAUTHBEARER client first message")
    # Extensions (KIP-342, 2.1+) are kept; 2.0 parsed the same pairs and ignored them.
    extensions = properties if release >= (2, 1) else {}
    return FirstMessage(auth_match.group("token"), match.group("authzid") or "", extensions)


# ---- the unsecured JWS validator --------------------------------------------------------


@dataclass(frozen=True)
class UnsecuredOptions:
    """OAuthBearerUnsecuredValidatorCallbackHandler's JAAS options."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0

    @classmethod
    def from_jaas(cls, options: Mapping[str, str]) -> UnsecuredOptions:
        """ValueError for values Kafka's handler refuses (it refuses them at each login; here
        at start)."""
        principal = (options.get("unsecuredValidatorPrincipalClaimName") or "").strip() or "sub"
        scope = (options.get("unsecuredValidatorScopeClaimName") or "").strip() or "scope"
        required: list[str] = []
        for item in (options.get("unsecuredValidatorRequiredScope") or "").strip().split(" "):
            if not item:
                continue
            if not _SCOPE_ITEM.fullmatch(item):
                raise ValueError(f"Invalid scope value: {item}")
            required.append(item)
        skew_text = (options.get("unsecuredValidatorAllowableClockSkewMs") or "").strip()
        try:
            skew = int(skew_text) if skew_text else 0
        except ValueError:
            raise ValueError(f'For input string: "{skew_text}"') from None
        if skew > 2**31 - 1:  # Integer.parseInt
            raise ValueError(f'For input string: "{skew_text}"')
        if skew < 0:
            raise ValueError(f"Allowable clock skew millis must not be negative: {skew_text}")
        return cls(principal, scope, tuple(required), skew)


def _java_base64(text: str) -> bytes:
    """java.util.Base64.getDecoder(): the basic alphabet (no `-` or `_`), padding optional
    but correct when present. Kafka decodes unsecured JWS parts with it."""
    if not re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", text):
        raise InvalidToken("malformed Base64 URL encoded value")
    body = text.rstrip("=")
    padding = len(text) - len(body)
    if len(body) % 4 == 1 or (padding and (len(body) + padding) % 4):
        raise InvalidToken("malformed Base64 URL encoded value")
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidToken("malformed Base64 URL encoded value") from None


def _no_constants(name: str) -> object:
    raise ValueError(name)  # Jackson refuses NaN and Infinity by default


def _json_object(part: str) -> dict[str, object]:
    """A JWS part's JSON members as Kafka's unsecured JWS keeps them: arrays become lists of
    their elements' text, numbers stay numbers, anything else becomes its text."""
    raw = _java_base64(part)
    if not raw.strip():
        return {}
    try:
        node = json.loads(raw.decode("utf-8"), parse_constant=_no_constants)
    except (ValueError, UnicodeDecodeError):
        raise InvalidToken("malformed JSON") from None
    if not isinstance(node, dict):
        return {}
    return {key: _converted(value) for key, value in node.items()}


def _text(value: object) -> str:
    """Jackson's JsonNode.asText."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float | str):
        return str(value) if not isinstance(value, float) else repr(value)
    return ""  # objects and arrays


def _converted(value: object) -> object:
    if isinstance(value, list):
        return [_text(v) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return _text(value)


def _number(claims: Mapping[str, object], name: str) -> int | float | None:
    value = claims.get(name)
    if value is not None and not isinstance(value, int | float):
        raise InvalidToken(f"The '{name}' claim was not of type Number")
    return value


def _java_list(items: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def validate_unsecured(token: str, options: UnsecuredOptions, now_ms: int | None = None) -> Token:
    """Kafka's OAuthBearerUnsecuredJws + OAuthBearerUnsecuredValidatorCallbackHandler checks;
    InvalidToken (BrokenToken where Kafka's code throws an unexpected exception)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if ".." in token:
        raise InvalidToken("Malformed compact serialization contains '..'")
    parts = token.split(".")
    while parts and parts[-1] == "":  # Java's String.split drops trailing empty strings
        parts.pop()
    if token.endswith("."):
        parts.append("")
    if len(parts) != 3:
        raise InvalidToken(
            "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded "
            "values"
        )
    header = _json_object(parts[0])
    claims = _json_object(parts[1])
    if "alg" not in header:
        raise BrokenToken("JWS header must have an Algorithm value")
    if header["alg"] != "none":
        raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
    if parts[2]:
        raise InvalidToken("Unsecured JWS must not contain a digital signature")
    scope_value = claims.get(options.scope_claim)
    scope: frozenset[str]
    if isinstance(scope_value, str):
        scope = frozenset([scope_value.strip()]) if scope_value.strip() else frozenset()
    elif scope_value is None or isinstance(scope_value, list):
        scope = frozenset(s.strip() for s in scope_value or () if s.strip())
    else:
        raise InvalidToken(f"The '{options.scope_claim}' claim was not of type List")
    exp = _number(claims, "exp")
    if exp is None:
        raise InvalidToken("No expiration time in JWT")
    principal = claims.get(options.principal_claim)
    if principal is not None and not isinstance(principal, str):
        raise InvalidToken(f"The '{options.principal_claim}' claim was not of type String")
    if principal is None or not principal.strip():
        raise InvalidToken(f"No principal name in JWT claim: {options.principal_claim}")
    iat = _number(claims, "iat")
    skew = options.clock_skew_ms
    if iat is not None and 1000 * iat > now + skew:
        raise InvalidToken("The Issued At value was after the indicated time plus clock skew")
    if now - skew >= 1000 * exp:
        raise InvalidToken("The indicated time minus clock skew was on or after the Expiration")
    if iat is not None and exp <= iat:
        raise InvalidToken("The Expiration Time time was not after the Issued At time")
    for required in options.required_scope:
        if required not in scope:
            raise InvalidToken(
                f"The provided scope was missing a required scope ({required})",
                scope=_java_list(options.required_scope),
            )
    return Token(principal, _java_round(exp * 1000), scope)


def _java_round(value: float) -> int:
    """Math.round: half up."""
    return math.floor(value + 0.5)


# ---- configuration ----------------------------------------------------------------------


@dataclass(frozen=True)
class JwksOptions:
    """KIP-768's validator configs (`sasl.oauthbearer.*`), hashable: brokers of one process
    with the same options share one key set, as Kafka's handlers share one resolver."""

    url: str
    refresh_ms: int = 3_600_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 10_000
    expected_audience: tuple[str, ...] | None = None
    expected_issuer: str | None = None
    clock_skew_s: int = 30
    scope_claim: str = "scope"
    sub_claim: str = "sub"
    # The JAAS module's `ssl.*` options: the TLS client settings of an https endpoint.
    ssl_options: tuple[tuple[str, str], ...] = ()

    @property
    def file(self) -> Path | None:
        parts = urlsplit(self.url)
        if parts.scheme.lower() != "file":
            return None
        return Path(unquote(parts.path)).absolute()


@dataclass(frozen=True)
class OAuthBearerConfig:
    """A listener's OAUTHBEARER validation: exactly one of the two validators."""

    unsecured: UnsecuredOptions | None = None
    jwks: JwksOptions | None = None


def _oauth_config(own: Mapping[str, str], name: str) -> str | None:
    """Kafka's ConfigurationUtils.get: the mechanism-prefixed key first."""
    value = own.get(f"oauthbearer.{name}", own.get(name))
    return None if value is None else value


def _config_long(
    own: Mapping[str, str], name: str, default: int, minimum: int | None = None
) -> int:
    text = _oauth_config(own, name)
    try:
        value = default if text is None else int(text.strip())
    except ValueError:
        raise ValueError(
            f"Invalid value {text} for configuration {name}: Not a number of type LONG"
        ) from None
    if minimum is not None and value < minimum:
        raise ValueError(f"The OAuth configuration option {name} value must be at least {minimum}")
    return value


_JWKS_URL = "sasl.oauthbearer.jwks.endpoint.url"


def _jwks_options(own: Mapping[str, str], jaas: Mapping[str, str]) -> JwksOptions:
    """ConfigurationUtils' checks of VerificationKeyResolverFactory and
    AccessTokenValidatorFactory; ValueError with Kafka's text."""
    url = _jwks_url(own)
    audience_text = _oauth_config(own, "sasl.oauthbearer.expected.audience")
    audience = None
    if audience_text is not None:
        audience = tuple(a.strip() for a in audience_text.split(",") if a.strip()) or None
    issuer = (_oauth_config(own, "sasl.oauthbearer.expected.issuer") or "").strip() or None
    scope_claim = (_oauth_config(own, "sasl.oauthbearer.scope.claim.name") or "scope").strip()
    sub_claim = (_oauth_config(own, "sasl.oauthbearer.sub.claim.name") or "sub").strip()
    for name, value in (
        ("sasl.oauthbearer.scope.claim.name", scope_claim),
        ("sasl.oauthbearer.sub.claim.name", sub_claim),
    ):
        if not value:
            raise ValueError(
                f"The OAuth configuration option {name} value must not contain only whitespace"
            )
    options = JwksOptions(
        url=url,
        refresh_ms=_config_long(own, "sasl.oauthbearer.jwks.endpoint.refresh.ms", 3_600_000, 0),
        retry_backoff_ms=_config_long(own, "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", 100),
        retry_backoff_max_ms=_config_long(
            own, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", 10_000
        ),
        expected_audience=audience,
        expected_issuer=issuer,
        clock_skew_s=_config_long(own, "sasl.oauthbearer.clock.skew.seconds", 30),
        scope_claim=scope_claim,
        sub_claim=sub_claim,
        ssl_options=tuple(sorted((k, v) for k, v in jaas.items() if k.startswith("ssl."))),
    )
    path = options.file
    if path is not None:
        if not path.exists():
            raise ValueError(
                f"The OAuth configuration option {_JWKS_URL} contains a file ({path}) that "
                "doesn't exist"
            )
        if path.is_dir():
            raise ValueError(
                f"The OAuth configuration option {_JWKS_URL} references a directory ({path}), "
                "not a file"
            )
    elif options.refresh_ms <= 0:
        raise ValueError(
            "JWKS validation key refresh configuration value retryWaitMs value must be positive"
        )
    return options


def _jwks_url(own: Mapping[str, str]) -> str:
    """The JWKS endpoint's URL, an http, https or file one (Kafka's
    ConfigurationUtils.validateUrl)."""
    url = (_oauth_config(own, _JWKS_URL) or "").strip()
    if not url:
        raise ValueError(f"The OAuth configuration option {_JWKS_URL} value must be non-null")
    scheme = urlsplit(url).scheme.lower()
    if not scheme:
        raise ValueError(
            f"The OAuth configuration option {_JWKS_URL} contains a URL ({url}) that is "
            f"malformed: no protocol: {url}"
        )
    if scheme not in ("http", "https", "file"):
        raise ValueError(
            f"The OAuth configuration option {_JWKS_URL} contains a URL ({url}) that contains "
            f'an invalid protocol ({scheme}); only "http", "https", and "file" protocol are '
            "supported"
        )
    return url


def oauthbearer_config(
    own: Mapping[str, str],
    modules: list[Module] | tuple[Module, ...],
    release: tuple[int, ...] = (3, 9),
) -> OAuthBearerConfig:
    """A listener's validator from its effective configs and its OAUTHBEARER JAAS entries
    (the listener's `oauthbearer.sasl.jaas.config`, else the JAAS file section); ValueError
    with the reason Kafka (or zkbroker) would not start for."""
    if release < (2, 0):
        raise ValueError("SASL/OAUTHBEARER came with Kafka 2.0 (KIP-255)")
    # Both of Kafka's handlers read the options of exactly one login module entry, so a
    # JAAS file section shared with PLAIN or SCRAM modules does not serve OAUTHBEARER.
    if len(modules) != 1:
        raise ValueError(
            f"Must supply exactly 1 non-null JAAS mechanism configuration (size was {len(modules)})"
        )
    options = modules[0][2]
    handler = (own.get(f"oauthbearer.{CALLBACK_HANDLER_KEY}") or "").strip()
    jwks_handlers = {JWKS_VALIDATOR_3_1} if release >= (3, 1) else set()
    if release >= (3, 4):
        jwks_handlers.add(JWKS_VALIDATOR_3_4)
    if not handler or handler == UNSECURED_VALIDATOR:
        return OAuthBearerConfig(unsecured=UnsecuredOptions.from_jaas(options))
    if handler in jwks_handlers:
        if importlib.util.find_spec("jwt") is None:
            raise ValueError(
                "OAUTHBEARER with JWKS validation needs PyJWT: pip install 'zkbroker[security]'"
            )
        return OAuthBearerConfig(jwks=_jwks_options(own, options))
    if handler in (JWKS_VALIDATOR_3_1, JWKS_VALIDATOR_3_4):
        raise ValueError(
            f"Invalid value {handler} for configuration {CALLBACK_HANDLER_KEY}: Class "
            f"{handler} could not be found."
        )
    raise ValueError(
        f"{CALLBACK_HANDLER_KEY}={handler}: zkbroker serves OAUTHBEARER with Kafka's own "
        f"handlers only ({UNSECURED_VALIDATOR}, or from 3.1 OAuthBearerValidatorCallbackHandler)"
    )


# ---- the SASL server --------------------------------------------------------------------


def error_json(error: InvalidToken) -> str:
    """OAuthBearerSaslServer's error challenge (its spacing kept)."""
    text = f'{{"status":"{error.status}"'
    if error.scope is not None:
        text += f', "scope":"{error.scope}"'
    return text + "}"


class OAuthBearerServer:
    """One OAUTHBEARER exchange; the token's expiry is left in `token_expiry_ms` for the
    authenticator's session rule (``zkbroker.broker.security.sasl.credential_lifetime_applies``)."""

    mechanism = MECHANISM

    def __init__(
        self,
        validate: Validator,
        release: tuple[int, ...] = (3, 9),
    ) -> None:
        self._validate = validate
        self._release = release
        self._error: str | None = None
        self.complete = False
        self.authorization_id: str | None = None
        self.extensions: Mapping[str, str] = {}
        self.scope: frozenset[str] = frozenset()
        # Read by the authenticator's session lifetime (as a delegation token's expiry is).
        self.token_expiry_ms: int | None = None

    def evaluate(self, token: bytes) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise SaslAuthenticationFailed(self._error)
        self._error = None
        message = parse_first_message(token, self._release)
        try:
            valid = self._validate(message.token)
        except InvalidToken as e:
            self._error = error_json(e)
            return self._error.encode("utf-8")
        if message.authorization_id and message.authorization_id != valid.principal:
            raise SaslAuthenticationFailed(
                "Authentication failed: Client requested an authorization id "
                f"({message.authorization_id}) that is different from the token's principal "
                f"name ({valid.principal})"
            )
        # Kafka's own handlers accept every extension (OAuthBearerExtensionsValidatorCallback).
        self.extensions = dict(message.extensions)
        self.scope = valid.scope
        self.authorization_id = valid.principal
        self.token_expiry_ms = valid.lifetime_ms
        self.complete = True
        return b""
