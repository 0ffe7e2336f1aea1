"""The OAUTHBEARER SASL server of a listener: its validator (unsecured JWS, or the JWKS keys a
broker acquired at start), for the authenticator."""

from __future__ import annotations

from zkbroker.broker.security.listener_config import ListenerSecurity
from zkbroker.broker.security.oauthbearer import (
    InvalidToken,
    OAuthBearerServer,
    Token,
    validate_unsecured,
)
from zkbroker.broker.security.oauthbearer_jwks import shared, validate_signed


def oauthbearer_server(security: ListenerSecurity, release: tuple[int, ...]) -> OAuthBearerServer:
    config = security.oauthbearer
    if config is None:  # pragma: no cover - listener_security builds it with the mechanism
        raise ValueError("OAUTHBEARER is not configured on this listener")
    unsecured, jwks = config.unsecured, config.jwks

    def validate(token: str) -> Token:
        if unsecured is not None:
            return validate_unsecured(token, unsecured)
        assert jwks is not None
        keys = shared(jwks)
        if keys is None:
            # The broker loads its key sets at start; none here means it is stopping.
            raise InvalidToken("the JWKS keys are not loaded")
        return validate_signed(token, keys)

    return OAuthBearerServer(validate, release)
