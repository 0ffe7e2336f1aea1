"""KIP-768 (3.1+) validation of signed OAUTHBEARER tokens against a JWKS, as Kafka's
`OAuthBearerValidatorCallbackHandler` does it (jose4j there, PyJWT here):
`sasl.oauthbearer.jwks.endpoint.url` is a `file:` JWKS read once at start, or an http(s)
endpoint fetched at start and every `sasl.oauthbearer.jwks.endpoint.refresh.ms`, with an early
refresh (at most once a minute per key id) when a token names a key id the set lacks.

Fetches run in a worker thread with a timeout and a size cap, never on the event loop; a
validation reads only the keys in memory. Brokers of one process with the same options share
one key set (`acquire` / `release`), as Kafka's handlers share one resolver.

Deliberately not here: JWE (encrypted) tokens, `x5c` certificate chains, the 3.9.1+
`org.apache.kafka.sasl.oauthbearer.allowed.urls` allow-list.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

import structlog

from zkbroker.broker.asyncutil import cancel_and_wait, wait_for
from zkbroker.broker.security.oauthbearer import InvalidToken, JwksOptions, Token
from zkbroker.broker.security.tls import client_context

_log = structlog.get_logger(__name__)

# jose4j's Get defaults are longer; a broker must not hang its start on a dead endpoint.
FETCH_TIMEOUT_S = 10.0
MAX_JWKS_BYTES = 1 << 20
# RefreshingHttpsJwks: an unknown key id triggers a refresh at most once a minute, and at
# most 16 key ids (of at most 1000 characters) are remembered.
MISSING_KID_INTERVAL_S = 60.0
MISSING_KID_ENTRIES = 16
MISSING_KID_MAX_LENGTH = 1000

_FAMILIES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "HS": "oct", "Ed": "OKP"}


def _jwt() -> ModuleType:
    """PyJWT, imported on use: it is the `security` extra's (`pip install 'zkbroker[security]'`)."""
    import jwt

    return jwt


def _kty_of(alg: str) -> str | None:
    return _FAMILIES.get(alg[:2])


def parse_jwks(data: bytes | str, where: str) -> list[dict[str, Any]]:
    """The usable keys of a JWKS document; ValueError when it is not one."""
    jwt = _jwt()
    try:
        document = json.loads(data)
    except ValueError as e:
        raise ValueError(f"JWKS at {where}: not JSON ({e})") from None
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        raise ValueError(f"JWKS at {where}: no 'keys' array")
    usable = []
    for entry in keys:
        if not isinstance(entry, dict):
            continue
        try:
            jwt.PyJWK(entry)
        except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError, KeyError):
            continue  # jose4j also skips keys it cannot use
        usable.append(entry)
    return usable


class JwksKeys:
    """One JWKS source's keys in memory, refreshed in the background (http/https)."""

    def __init__(self, options: JwksOptions) -> None:
        self.options = options
        self._keys: list[dict[str, Any]] = []
        self._refresh_task: asyncio.Task[None] | None = None
        self._early: set[asyncio.Task[None]] = set()
        self._refreshing = False
        self._missing: OrderedDict[str, float] = OrderedDict()
        self._context: ssl.SSLContext | None = None
        if options.url.lower().startswith("https:"):
            # JaasOptionsUtils: the endpoint's TLS settings are the JAAS module's ssl.* options.
            self._context = client_context(dict(options.ssl_options))

    @property
    def keys(self) -> Sequence[Mapping[str, Any]]:
        return self._keys

    async def start(self) -> None:
        """The first load (Kafka's init at configure: a failure stops the broker's start)."""
        try:
            self._keys = await self._load()
        except (OSError, ValueError, TimeoutError) as e:
            raise ValueError(
                "The OAuth validator configuration encountered an error when initializing the "
                f"VerificationKeyResolver: {e}"
            ) from None
        if self.options.file is None:
            self._refresh_task = asyncio.create_task(self._refresh_loop())

    async def stop(self) -> None:
        """Cancel the refreshes and wait for them at most `CANCEL_WAIT_S` (`cancel_and_wait`:
        one that does not end, e.g. in a fetch that ignores it, is logged); the caller's own
        cancellation is raised."""
        tasks = [*self._early, *([self._refresh_task] if self._refresh_task else [])]
        self._refresh_task = None
        self._early.clear()
        # Logged through zkbroker's logging (asyncutil's logger), as every stop's leftovers.
        await cancel_and_wait(tasks, what="oauthbearer_jwks")

    def _read(self) -> bytes:
        """Blocking: runs in a worker thread."""
        path = self.options.file
        if path is not None:
            with path.open("rb") as f:
                return f.read(MAX_JWKS_BYTES + 1)
        handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
        if self._context is not None:
            handlers.append(urllib.request.HTTPSHandler(context=self._context))
        opener = urllib.request.build_opener(*handlers)
        request = urllib.request.Request(self.options.url, headers={"Accept": "application/json"})
        with opener.open(request, timeout=FETCH_TIMEOUT_S) as response:
            return bytes(response.read(MAX_JWKS_BYTES + 1))

    async def _load(self) -> list[dict[str, Any]]:
        data = await wait_for(asyncio.to_thread(self._read), FETCH_TIMEOUT_S + 5)
        if len(data) > MAX_JWKS_BYTES:
            raise ValueError(f"JWKS at {self.options.url}: larger than {MAX_JWKS_BYTES} bytes")
        return parse_jwks(data, self.options.url)

    async def _refresh_loop(self) -> None:
        while True:
            await asyncio.sleep(self.options.refresh_ms / 1000)
            await self.refresh()

    async def refresh(self) -> None:
        """RefreshingHttpsJwks.refresh: retried with a doubling backoff for at most
        retry.backoff.max.ms; on failure the keys stay as they were."""
        if self._refreshing:
            return
        self._refreshing = True
        try:
            backoff = max(self.options.retry_backoff_ms, 1) / 1000
            deadline = time.monotonic() + self.options.retry_backoff_max_ms / 1000
            while True:
                try:
                    keys = await self._load()
                except (OSError, ValueError, TimeoutError, urllib.error.URLError) as e:
                    if time.monotonic() + backoff > deadline:
                        _log.warning(
                            "oauthbearer.jwks_refresh_failed", url=self.options.url, error=str(e)
                        )
                        return
                    await asyncio.sleep(backoff)
                    backoff *= 2
                    continue
                for key in keys:
                    self._missing.pop(str(key.get("kid")), None)
                self._keys = keys
                _log.info("oauthbearer.jwks_refreshed", url=self.options.url, keys=len(keys))
                return
        finally:
            self._refreshing = False

    def missing_key(self, kid: str | None) -> None:
        """A token named a key id the set lacks: refresh now, at most once a minute per id."""
        if kid is None or self.options.file is not None or len(kid) > MISSING_KID_MAX_LENGTH:
            return
        now = time.monotonic()
        next_check = self._missing.get(kid)
        if next_check is not None and next_check > now:
            return
        self._missing[kid] = now + MISSING_KID_INTERVAL_S
        self._missing.move_to_end(kid)
        while len(self._missing) > MISSING_KID_ENTRIES:
            self._missing.popitem(last=False)
        task = asyncio.get_running_loop().create_task(self.refresh())
        self._early.add(task)
        task.add_done_callback(self._early.discard)

    def select(self, header: Mapping[str, Any]) -> Any:
        """jose4j's VerificationJwkSelector, roughly: the key id when the token names one,
        a key type that fits the algorithm, `use` sig and `alg` the token's when given."""
        jwt = _jwt()
        alg = str(header.get("alg", ""))
        kid = header.get("kid")
        for entry in self._keys:
            if kid is not None and entry.get("kid") != kid:
                continue
            if entry.get("kty") != _kty_of(alg):
                continue
            if entry.get("use", "sig") != "sig" or entry.get("alg", alg) != alg:
                continue
            try:
                return jwt.PyJWK(entry, algorithm=alg).key
            except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError, KeyError):
                continue
        return None


def _claim_text(claims: Mapping[str, Any], name: str) -> str:
    value = claims.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidToken(f"Could not extract the '{name}' claim from the access token")
    if value is None:
        raise InvalidToken(f"{name} value must be non-null")
    if not value.strip():
        raise InvalidToken(f"{name} value must not contain only whitespace")
    return value.strip()


def validate_signed(token: str, keys: JwksKeys) -> Token:
    """ValidatorAccessTokenValidator: signature (never `none`), exp and iat required, the
    expected audience and issuer, clock skew; then the scope and sub claims. InvalidToken
    (always invalid_token) when refused."""
    jwt = _jwt()
    options = keys.options
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as e:
        raise InvalidToken(f"Could not validate the access token: {e}") from None
    alg = str(header.get("alg", ""))
    if alg == "none" or _kty_of(alg) is None:
        raise InvalidToken(f"Could not validate the access token: algorithm {alg!r} refused")
    key = keys.select(header)
    if key is None:
        keys.missing_key(header.get("kid") if isinstance(header.get("kid"), str) else None)
        raise InvalidToken(
            f"Unable to find a suitable verification key for JWS w/ header {header} from "
            f"JWKs obtained from {options.url}"
        )
    audience = list(options.expected_audience) if options.expected_audience else None
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=[alg],
            audience=audience,
            issuer=options.expected_issuer,
            leeway=options.clock_skew_s,
            # jose4j requires exp and iat but does not check iat against the clock, nor sub
            # or jti unless asked; the sub claim is checked below (its name is a config).
            options={
                "require": ["exp", "iat"],
                "verify_iat": False,
                "verify_sub": False,
                "verify_jti": False,
            },
        )
    except jwt.PyJWTError as e:
        raise InvalidToken(f"Could not validate the access token: {e}") from None
    exp: Any = claims.get("exp")
    for name in ("exp", "iat"):
        value = claims.get(name)
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise InvalidToken(f"{name} value must be a non-negative number")
    raw_scope = claims.get(options.scope_claim)
    items: list[Any] = [raw_scope] if isinstance(raw_scope, str) else []
    if isinstance(raw_scope, list):
        items = raw_scope
    scope: set[str] = set()
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise InvalidToken(f"{options.scope_claim} value must be non-empty text")
        if item.strip() in scope:
            raise InvalidToken(f"{options.scope_claim} value must not contain duplicates")
        scope.add(item.strip())
    principal = _claim_text(claims, options.sub_claim)
    return Token(principal, int(exp) * 1000, frozenset(scope))


# ---- the process's key sets ---------------------------------------------------------------

_SHARED: dict[tuple[JwksOptions, int], list[Any]] = {}


async def acquire(options: JwksOptions) -> JwksKeys:
    """The started key set of `options` for this event loop (loaded on first use)."""
    slot = (options, id(asyncio.get_running_loop()))
    entry = _SHARED.get(slot)
    if entry is None:
        keys = JwksKeys(options)
        await keys.start()
        entry = _SHARED.setdefault(slot, [keys, 0])
        if entry[0] is not keys:  # another broker of the loop loaded it meanwhile
            await keys.stop()
    entry[1] += 1
    return entry[0]


async def release(options: JwksOptions) -> None:
    slot = (options, id(asyncio.get_running_loop()))
    entry = _SHARED.get(slot)
    if entry is None:
        return
    entry[1] -= 1
    if entry[1] <= 0:
        del _SHARED[slot]
        await entry[0].stop()


def shared(options: JwksOptions) -> JwksKeys | None:
    """The key set a broker of this loop acquired for `options`, if any."""
    try:
        slot = (options, id(asyncio.get_running_loop()))
    except RuntimeError:
        return None
    entry = _SHARED.get(slot)
    return None if entry is None else entry[0]
