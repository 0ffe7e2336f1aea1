"""Delegation tokens (KIP-48) as a ZooKeeper-mode broker keeps them: Kafka 3.9's
``DelegationTokenManager(Zk)`` and ``DelegationTokenCache`` (docs/kafka-behaviour.md §18).

On when ``delegation.token.secret.key`` (or ``delegation.token.master.key``) is set, else
DELEGATION_TOKEN_AUTH_DISABLED. Tokens live in ``/delegation_token/tokens/<id>``
(``zkbroker.zk_layout.nodes.delegation_token``); each change writes a notification that a
``zkbroker.zk_layout.store.ChangeNotificationListener`` follows on every broker (a failed one is
logged as ``delegation_tokens.notification_failed``). Create, renew and expire follow §18; the
active controller removes expired tokens. The SCRAM credentials of a token are made when the
cache takes it, in a worker thread (PBKDF2 would stall the event loop); a login only looks
them up.

Not here: the request rules before the manager (the handlers), KRaft's token records,
forwarding token requests during a ZooKeeper migration.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from zkbroker.broker.asyncutil import cancel_and_wait
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.security.scram import MECHANISM_TYPES, MIN_ITERATIONS, ScramCredential
from zkbroker.broker.security.scram import credential_from_password as _credential
from zkbroker.zk_layout import NodeExistsError, NoNodeError, ZnodeFormatError
from zkbroker.zk_layout.nodes.delegation_token import (
    DelegationTokenChangeNode,
    DelegationTokenChangesNode,
    DelegationTokenInfoNode,
    DelegationTokensNode,
    Principal,
    TokenInformation,
)
from zkbroker.zk_layout.release import Release, release_at_least
from zkbroker.zk_layout.store import ChangeNotificationListener, Purge, ZkStore

log = get_logger(__name__)

#: DelegationTokenManager.ErrorTimestamp.
ERROR_TIMESTAMP = -1


@dataclass(frozen=True)
class TokenConfig:
    """The delegation.token.* broker configs."""

    secret_key: str | None
    max_lifetime_ms: int = 7 * 24 * 3600 * 1000
    expiry_time_ms: int = 24 * 3600 * 1000
    expiry_check_interval_ms: int = 3600 * 1000

    @property
    def enabled(self) -> bool:
        """KafkaConfig.tokenAuthEnabled: a non-empty secret key."""
        return bool(self.secret_key)

    @classmethod
    def from_configs(cls, configs: Mapping[str, str], release: Release) -> TokenConfig:
        """From static broker configs: ``delegation.token.secret.key`` (2.8+) or its alias
        ``delegation.token.master.key``; lifetimes in ms."""
        secret = None
        if release_at_least(release, (2, 8)):
            secret = configs.get("delegation.token.secret.key")
        if secret is None:
            secret = configs.get("delegation.token.master.key")

        def ms(key: str, default: int) -> int:
            return int(configs.get(key, str(default)).strip())

        return cls(
            secret_key=secret,
            max_lifetime_ms=ms("delegation.token.max.lifetime.ms", cls.max_lifetime_ms),
            expiry_time_ms=ms("delegation.token.expiry.time.ms", cls.expiry_time_ms),
            expiry_check_interval_ms=ms(
                "delegation.token.expiry.check.interval.ms", cls.expiry_check_interval_ms
            ),
        )


def create_hmac(token_id: str, secret_key: str) -> bytes:
    """DelegationTokenManager.createHmac: HmacSHA512 of the token id under the secret key."""
    return hmac.new(secret_key.encode("utf-8"), token_id.encode("utf-8"), hashlib.sha512).digest()


def new_token_id() -> str:
    """CoreUtils.generateUuidAsBase64: a random UUID's 16 bytes, URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def expired(info: TokenInformation, now_ms: int) -> bool:
    return info.max_timestamp < now_ms or info.expiry_timestamp < now_ms


@dataclass(frozen=True)
class DelegationToken:
    """A token's information and its HMAC (Kafka's DelegationToken)."""

    info: TokenInformation
    hmac: bytes

    @property
    def hmac_base64(self) -> str:
        return base64.b64encode(self.hmac).decode("ascii")


@dataclass(frozen=True)
class CreateResult:
    error_code: int
    token: DelegationToken | None = None


@dataclass(frozen=True)
class TokenLogin:
    """What a SCRAM login with ``tokenauth=true`` authenticates against."""

    credential: ScramCredential
    owner_name: str
    expiry_timestamp_ms: int


def token_credentials(token: DelegationToken) -> dict[str, ScramCredential]:
    """DelegationTokenManager.prepareScramCredentials: one credential per SCRAM mechanism
    from the base64 HMAC, 4096 PBKDF2 iterations each (blocking: call it in a thread)."""
    return {m: _credential(m, token.hmac_base64, MIN_ITERATIONS) for m in MECHANISM_TYPES}


class TokenCache:
    """Kafka's DelegationTokenCache: tokens by id and by base64 HMAC, and their SCRAM
    credentials, which come with the token (``update``): a login never computes one."""

    def __init__(self) -> None:
        self._tokens: dict[str, DelegationToken] = {}
        self._by_hmac: dict[str, str] = {}
        self._credentials: dict[tuple[str, str], ScramCredential] = {}

    def update(self, token: DelegationToken, credentials: Mapping[str, ScramCredential]) -> None:
        """DelegationTokenCache.updateCache: the token and its credentials
        (``token_credentials``), replacing the ones it had."""
        token_id = token.info.token_id
        old = self._tokens.get(token_id)
        if old is not None:
            self._by_hmac.pop(old.hmac_base64, None)
        for mechanism in MECHANISM_TYPES:
            self._credentials.pop((mechanism, token_id), None)
        for mechanism, credential in credentials.items():
            self._credentials[(mechanism, token_id)] = credential
        self._tokens[token_id] = token
        self._by_hmac[token.hmac_base64] = token_id

    def credential(self, token_id: str, mechanism: str) -> ScramCredential | None:
        """DelegationTokenCache.credential."""
        return self._credentials.get((mechanism, token_id))

    def remove(self, token_id: str) -> None:
        old = self._tokens.pop(token_id, None)
        if old is not None:
            self._by_hmac.pop(old.hmac_base64, None)
        for mechanism in MECHANISM_TYPES:
            self._credentials.pop((mechanism, token_id), None)

    def by_hmac(self, hmac_bytes: bytes) -> DelegationToken | None:
        token_id = self._by_hmac.get(base64.b64encode(hmac_bytes).decode("ascii"))
        return None if token_id is None else self._tokens.get(token_id)

    def get(self, token_id: str) -> DelegationToken | None:
        return self._tokens.get(token_id)

    def tokens(self) -> list[DelegationToken]:
        return list(self._tokens.values())

    def login(self, token_id: str, mechanism: str) -> TokenLogin | None:
        """ScramServerCallbackHandler's DelegationTokenCredentialCallback."""
        token = self._tokens.get(token_id)
        credential = self._credentials.get((mechanism, token_id))
        if token is None or credential is None:
            return None
        return TokenLogin(credential, token.info.owner.name, token.info.expiry_timestamp)


class DelegationTokenManager:
    """One broker's token manager (DelegationTokenManagerZk) over its ZooKeeper session."""

    def __init__(
        self,
        store: ZkStore,
        config: TokenConfig,
        release: Release,
        *,
        is_controller: Callable[[], bool],
        broker_id: int,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._store = store
        self.config = config
        self._release = release
        self._is_controller = is_controller
        self._clock_ms = clock_ms
        self._log = log.bind(broker_id=broker_id)
        self.cache = TokenCache()
        # DelegationTokenManager's `lock`: one token operation at a time on this broker.
        self._lock = asyncio.Lock()
        # TokenChangedNotificationHandler over /delegation_token/token_changes.
        self._changes = ChangeNotificationListener.of(
            store,
            DelegationTokenChangeNode,
            self._process_change,
            log=self._log,
            failed_event="delegation_tokens.notification_failed",
            skip_failed=True,
            purge=Purge.WHEN_PROCESSED,
        )
        self._cleaner: asyncio.Task[None] | None = None

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    # ---- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """DelegationTokenManagerZk.startup: paths, the cache, the change listener; and the
        expiry check (which acts only while this broker is the controller)."""
        if not self.enabled:
            return
        await self._store.ensure_path(DelegationTokenChangesNode.path())
        await self._store.ensure_path(DelegationTokensNode.path())
        async with self._lock:
            for token_id in await self._store.get_children(DelegationTokensNode.path()) or []:
                await self._reload(token_id)
        self._log.info("delegation_tokens.loaded", count=len(self.cache.tokens()))
        await self._changes.start()
        self._cleaner = asyncio.create_task(self._expiry_loop(), name="delegation-token-cleaner")

    async def stop(self) -> None:
        """The change listener, then the expiry check: cancelled and waited for, at most
        `CANCEL_WAIT_S` (`cancel_and_wait`: one that does not end is logged); the caller's
        own cancellation is raised."""
        cleaner, self._cleaner = self._cleaner, None
        try:
            await self._changes.stop()
        finally:
            if cleaner is not None:
                await cancel_and_wait([cleaner], what="delegation_tokens", log=self._log)

    # ---- ZooKeeper ----------------------------------------------------------------------------

    def _token(self, info: TokenInformation) -> DelegationToken:
        assert self.config.secret_key  # only called with token authentication on
        return DelegationToken(info, create_hmac(info.token_id, self.config.secret_key))

    async def _reload(self, token_id: str) -> None:
        """getTokenFromZk + updateCache, or removeCache when the znode is gone."""
        got = await self._store.get(DelegationTokenInfoNode.path(token_id))
        if got is None or not got[0]:
            self.cache.remove(token_id)
            return
        try:
            info = DelegationTokenInfoNode.decode(got[0])
        except ZnodeFormatError as e:
            self._log.error("delegation_tokens.unreadable", token_id=token_id, reason=str(e))
            return
        await self._cache_update(self._token(info))

    async def _cache_update(self, token: DelegationToken) -> None:
        """DelegationTokenManager.updateCache: the SCRAM credentials are made now, in a worker
        thread (8192 PBKDF2 rounds would stall every connection on the event loop)."""
        credentials = await asyncio.to_thread(token_credentials, token)
        self.cache.update(token, credentials)

    async def _notify(self, token_id: str) -> None:
        await self._store.create(
            DelegationTokenChangeNode.create_path(),
            DelegationTokenChangeNode.encode(token_id, self._release),
            sequence=True,
            makepath=True,
        )

    async def _write(self, token: DelegationToken) -> None:
        """updateToken: set-or-create the znode, update the cache, notify the others."""
        path = DelegationTokenInfoNode.path(token.info.token_id)
        data = DelegationTokenInfoNode.encode(token.info, self._release)
        try:
            await self._store.set(path, data)
        except NoNodeError:
            with contextlib.suppress(NodeExistsError):
                await self._store.create(path, data, makepath=True)
        await self._cache_update(token)
        await self._notify(token.info.token_id)

    async def _remove(self, token_id: str) -> None:
        await self._store.delete(DelegationTokenInfoNode.path(token_id), recursive=True)
        self.cache.remove(token_id)
        await self._notify(token_id)

    async def _process_change(self, path: str, data: bytes) -> None:
        """TokenChangedNotificationHandler: re-read the token the notification names."""
        async with self._lock:
            await self._reload(DelegationTokenChangeNode.decode(data))

    async def _expiry_loop(self) -> None:
        interval = self.config.expiry_check_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            if not self._is_controller():
                continue
            try:
                await self.expire_tokens()
            except Exception as e:
                self._log.error("delegation_tokens.expiry_check_failed", error=repr(e))

    async def expire_tokens(self) -> int:
        """DelegationTokenManagerZk.expireTokens: remove every expired token."""
        removed = 0
        async with self._lock:
            for token in self.cache.tokens():
                if expired(token.info, self._clock_ms()):
                    self._log.info(
                        "delegation_tokens.expired",
                        token_id=token.info.token_id,
                        owner=str(token.info.owner),
                    )
                    await self._remove(token.info.token_id)
                    removed += 1
        return removed

    # ---- the API operations ---------------------------------------------------------------------

    async def create(
        self,
        owner: Principal,
        requester: Principal,
        renewers: list[Principal],
        max_lifetime_ms: int,
    ) -> CreateResult:
        if not self.enabled:
            return CreateResult(error_codes.DELEGATION_TOKEN_AUTH_DISABLED)
        async with self._lock:
            token_id = new_token_id()
            issued = self._clock_ms()
            max_life = (
                self.config.max_lifetime_ms
                if max_lifetime_ms <= 0
                else min(max_lifetime_ms, self.config.max_lifetime_ms)
            )
            max_timestamp = issued + max_life
            info = TokenInformation(
                token_id=token_id,
                owner=owner,
                token_requester=requester,
                renewers=tuple(renewers),
                issue_timestamp=issued,
                max_timestamp=max_timestamp,
                expiry_timestamp=min(max_timestamp, issued + self.config.expiry_time_ms),
            )
            token = self._token(info)
            await self._write(token)
            self._log.info("delegation_tokens.created", token_id=token_id, owner=str(owner))
            return CreateResult(error_codes.NONE, token)

    async def renew(
        self, principal: Principal, hmac_bytes: bytes, period_ms: int
    ) -> tuple[int, int]:
        """(error code, expiry timestamp)."""
        if not self.enabled:
            return error_codes.DELEGATION_TOKEN_AUTH_DISABLED, ERROR_TIMESTAMP
        async with self._lock:
            token = self.cache.by_hmac(hmac_bytes)
            if token is None:
                return error_codes.DELEGATION_TOKEN_NOT_FOUND, ERROR_TIMESTAMP
            info = token.info
            now = self._clock_ms()
            if not _allowed_to_renew(principal, info):
                return error_codes.DELEGATION_TOKEN_OWNER_MISMATCH, ERROR_TIMESTAMP
            if expired(info, now):
                return error_codes.DELEGATION_TOKEN_EXPIRED, ERROR_TIMESTAMP
            period = self.config.expiry_time_ms if period_ms < 0 else period_ms
            expiry = min(info.max_timestamp, now + period)
            await self._write(replace(token, info=replace(info, expiry_timestamp=expiry)))
            self._log.info("delegation_tokens.renewed", token_id=info.token_id)
            return error_codes.NONE, expiry

    async def expire(
        self, principal: Principal, hmac_bytes: bytes, period_ms: int
    ) -> tuple[int, int]:
        """(error code, expiry timestamp); a negative period removes the token now."""
        if not self.enabled:
            return error_codes.DELEGATION_TOKEN_AUTH_DISABLED, ERROR_TIMESTAMP
        async with self._lock:
            token = self.cache.by_hmac(hmac_bytes)
            if token is None:
                return error_codes.DELEGATION_TOKEN_NOT_FOUND, ERROR_TIMESTAMP
            info = token.info
            now = self._clock_ms()
            if not _allowed_to_renew(principal, info):
                return error_codes.DELEGATION_TOKEN_OWNER_MISMATCH, ERROR_TIMESTAMP
            if period_ms < 0:
                await self._remove(info.token_id)
                self._log.info("delegation_tokens.expired_now", token_id=info.token_id)
                return error_codes.NONE, now
            if expired(info, now):
                return error_codes.DELEGATION_TOKEN_EXPIRED, ERROR_TIMESTAMP
            expiry = min(info.max_timestamp, now + period_ms)
            await self._write(replace(token, info=replace(info, expiry_timestamp=expiry)))
            return error_codes.NONE, expiry

    def tokens(self, keep: Callable[[TokenInformation], bool]) -> list[DelegationToken]:
        """DelegationTokenManager.getTokens(filter)."""
        return [t for t in self.cache.tokens() if keep(t.info)]

    def login(self, token_id: str, mechanism: str) -> TokenLogin | None:
        return self.cache.login(token_id, mechanism) if self.enabled else None


def _allowed_to_renew(principal: Principal, info: TokenInformation) -> bool:
    """DelegationTokenManagerZk.allowedToRenew: the owner or a renewer (not the requester)."""
    return principal == info.owner or principal in info.renewers


def visible(
    requester: Principal,
    owners: list[Principal] | None,
    info: TokenInformation,
    authorize_token: Callable[[str], bool],
    authorize_requester: Callable[[Principal], bool],
) -> bool:
    """DelegationTokenManager.filterToken: requested owners only; owners, requesters and
    renewers see their tokens; others need DESCRIBE on the token or DESCRIBE_TOKENS on its
    owner."""
    if owners is not None and not any(info.owner_or_renewer(o) for o in owners):
        return False
    if info.owner_or_renewer(requester):
        return True
    return authorize_token(info.token_id) or authorize_requester(info.owner)


def allow_token_requests(protocol: str, principal: str, token_authenticated: bool) -> bool:
    """KafkaApis.allowTokenRequests: never over PLAINTEXT, never from a token-authenticated
    principal, never from an anonymous one over 1-way SSL."""
    if token_authenticated or protocol == "PLAINTEXT":
        return False
    return not (protocol == "SSL" and principal == "User:ANONYMOUS")
