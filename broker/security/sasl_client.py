"""The client side of SASL PLAIN and SCRAM, and the login a broker uses towards its peers.

A broker logs in to a peer's inter-broker listener as Kafka's
`ChannelBuilders.clientChannelBuilder` does (docs/kafka-behaviour.md §17, "The inter-broker
client"): mechanism `sasl.mechanism.inter.broker.protocol`, and the `username`/`password` of the
listener's JAAS login for it, else the JAAS file's section. `PlainClient` sends RFC 4616's
message with an empty authzid; `ScramClient` runs RFC 5802 with `scramp` and verifies the server
signature. `inter_broker_login` raises ValueError with Kafka's message for a mechanism not
enabled, and with zkbroker's own when no login gives a user name and password.

Not here: the wire (`zkbroker.broker.peers.client`), GSSAPI and OAUTHBEARER, SCRAM
extensions (token logins are for clients).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import scramp

from zkbroker.broker.security.jaas import JaasError, module_credentials, parse_modules
from zkbroker.broker.security.listener_config import ListenerSecurity, listener_prefix


class SaslClientFailed(Exception):
    """The exchange cannot go on (the server's answer is malformed or unproven)."""


@dataclass(frozen=True)
class SaslLogin:
    """Who a broker is towards its peers: mechanism, user name and password."""

    mechanism: str
    username: str
    password: str = field(repr=False)


class SaslClient(Protocol):
    mechanism: str
    complete: bool

    def first(self) -> bytes: ...

    def evaluate(self, challenge: bytes) -> bytes | None:
        """The next token for the server's `challenge`; None once nothing more is sent."""
        ...


class PlainClient:
    mechanism = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self._token = b"\x00" + username.encode("utf-8") + b"\x00" + password.encode("utf-8")
        self.complete = False

    def first(self) -> bytes:
        return self._token

    def evaluate(self, challenge: bytes) -> bytes | None:
        # PLAIN is one token: the server's (empty) answer ends the exchange.
        self.complete = True
        return None


class ScramClient:
    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.mechanism = mechanism
        self._client = scramp.ScramClient([mechanism], username, password)
        self._stage = 0
        self.complete = False

    def first(self) -> bytes:
        first: str = self._client.get_client_first()
        return first.encode("utf-8")

    def evaluate(self, challenge: bytes) -> bytes | None:
        try:
            text = challenge.decode("utf-8")
            if self._stage == 0:
                self._stage = 1
                self._client.set_server_first(text)
                final: str = self._client.get_client_final()
                return final.encode("utf-8")
            if self._stage == 1:
                self._stage = 2
                self._client.set_server_final(text)
                self.complete = True
                return None
        except (UnicodeDecodeError, scramp.ScramException, ValueError) as e:
            raise SaslClientFailed(f"{self.mechanism}: {e}") from None
        raise SaslClientFailed(f"{self.mechanism}: unexpected challenge after the exchange")


def new_client(login: SaslLogin) -> SaslClient:
    if login.mechanism == "PLAIN":
        return PlainClient(login.username, login.password)
    return ScramClient(login.mechanism, login.username, login.password)


def jaas_credentials(text: str) -> tuple[str, str] | None:
    """(username, password) of the first PlainLoginModule / ScramLoginModule entry naming
    both, None when none does."""
    return module_credentials(parse_modules(text))


def inter_broker_login(
    security: ListenerSecurity, jaas_in_configs: bool = True
) -> SaslLogin | None:
    """The broker's login on its SASL inter-broker listener `security` (whose effective
    configs carry the broker-wide keys too); ValueError when Kafka (or zkbroker) would not
    start with it. Without `jaas_in_configs` (releases before 1.1, whose brokers read their
    JAAS login from a file only) a missing login is None when no JAAS file gives one: such a
    broker cannot log in to its peers."""
    own: Mapping[str, str] = security.configs
    mechanism = own.get("sasl.mechanism.inter.broker.protocol", "GSSAPI").strip()
    if mechanism not in security.mechanisms:
        raise ValueError(
            "requirement failed: sasl.mechanism.inter.broker.protocol must be included in "
            "sasl.enabled.mechanisms when SASL is used for inter-broker communication "
            f"(inter-broker listener {security.listener_name} enables "
            f"{','.join(security.mechanisms)}; sasl.mechanism.inter.broker.protocol is "
            f"{mechanism})"
        )
    if mechanism in ("GSSAPI", "OAUTHBEARER"):
        raise ValueError(
            f"sasl.mechanism.inter.broker.protocol={mechanism}: zkbroker's brokers log in to each "
            "other with PLAIN or SCRAM only (name one of those enabled on inter-broker listener "
            f"{security.listener_name}, or make inter.broker.listener.name a PLAINTEXT or SSL "
            "listener)"
        )
    listener = security.listener_name.lower()
    key = f"{listener_prefix(listener)}{mechanism.lower()}.sasl.jaas.config"
    jaas = own.get(f"{mechanism.lower()}.sasl.jaas.config", own.get("sasl.jaas.config"))
    if jaas is None and security.jaas_section is not None:
        section, modules = security.jaas_section
        from_file = module_credentials(modules)
        if from_file is None:
            raise ValueError(
                f"JAAS file section {section}: no username and password for the broker's "
                f'inter-broker login with {mechanism} (give its login module username="..." '
                'password="...")'
            )
        return SaslLogin(mechanism, *from_file)
    if jaas is None and not jaas_in_configs:
        return None
    if jaas is None:
        raise ValueError(
            f"Could not find a 'KafkaServer' or '{listener}.KafkaServer' entry in the JAAS "
            f"configuration: set {key} with the broker's username and password (its "
            f"inter-broker login with {mechanism})"
        )
    try:
        credentials = jaas_credentials(jaas)
    except JaasError as e:
        raise ValueError(f"{key}: {e}") from None
    if credentials is None:
        raise ValueError(
            f"{key}: no username and password for the broker's inter-broker login with "
            f'{mechanism} (give the login module username="..." password="...")'
        )
    return SaslLogin(mechanism, *credentials)
