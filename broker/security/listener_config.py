"""The security of one listener, from Kafka's own static broker config keys.

As `KafkaConfig` and `ChannelBuilders` read them, `listener.name.<listener>.<key>` (and the
per-mechanism `listener.name.<l>.<mechanism>.<key>`) wins over the plain key:
`listener.security.protocol.map`, `sasl.enabled.mechanisms` (PLAIN, SCRAM, GSSAPI, OAUTHBEARER
from 2.0), `sasl.jaas.config` else the JAAS file's server section, `connections.max.reauth.ms`
(KIP-368), `connection.failed.authentication.delay.ms` (KIP-306, 2.1+), `ssl.*` and
`ssl.principal.mapping.rules`. `listener_security` raises ValueError for a configuration Kafka
(or zkbroker) would not start with.

Not here: the TLS context (`zkbroker.broker.security.tls`), the mechanisms' own keys
(`gssapi_server`, `oauthbearer`), dynamic listener reconfiguration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from zkbroker.broker.rules.kerberos_names import KerberosShortNamer
from zkbroker.broker.security.gssapi_server import KerberosLogin, listener_kerberos
from zkbroker.broker.security.jaas import (
    JaasError,
    JaasFile,
    Module,
    module_plain_users,
    parse_modules,
    plain_users,
)
from zkbroker.broker.security.oauthbearer import OAuthBearerConfig, oauthbearer_config
from zkbroker.broker.security.principal_mapping import PrincipalMapper

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in PROTOCOLS)
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")


def listener_prefix(listener: str) -> str:
    """Kafka's ListenerName.configPrefix."""
    return f"listener.name.{listener.lower()}."


def protocol_map(configs: Mapping[str, str]) -> dict[str, str]:
    """`listener.security.protocol.map` as {LISTENER: PROTOCOL}; ValueError when malformed."""
    text = configs.get("listener.security.protocol.map", DEFAULT_PROTOCOL_MAP)
    out: dict[str, str] = {}
    for entry in text.split(","):
        entry = entry.strip()
        if not entry:
            continue
        name, sep, protocol = entry.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip():
            raise ValueError(
                f"Error parsing configuration property 'listener.security.protocol.map': {entry}"
            )
        if protocol not in PROTOCOLS:
            raise ValueError(f"No enum constant SecurityProtocol.{protocol}")
        out[name.strip().upper()] = protocol
    return out


@dataclass(frozen=True)
class ListenerSecurity:
    listener_name: str
    protocol: str
    mechanisms: tuple[str, ...] = ()
    plain_users: Mapping[str, str] = field(default_factory=dict)
    # Per mechanism; 0 = no session lifetime (Kafka's default).
    reauth_ms: Mapping[str, int] = field(default_factory=dict)
    failed_auth_delay_ms: int = 100
    principal_mapper: PrincipalMapper | None = None
    # The listener's effective configs (prefix overrides applied), for the TLS context.
    configs: Mapping[str, str] = field(default_factory=dict)
    # The JAAS file's section this listener logs in with (its name and login modules), when
    # a JAAS file is given and has one: the broker's own login towards its peers comes from
    # it when no sasl.jaas.config does (`zkbroker.broker.security.sasl_client`).
    jaas_section: tuple[str, tuple[Module, ...]] | None = None
    # OAUTHBEARER's validator (`zkbroker.broker.security.oauthbearer`), when enabled.
    oauthbearer: OAuthBearerConfig | None = None
    # GSSAPI's keytab login and principal.to.local rules (`...security.gssapi_server`).
    kerberos: KerberosLogin | None = None
    kerberos_namer: KerberosShortNamer | None = None

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")


def effective_configs(configs: Mapping[str, str], listener: str) -> dict[str, str]:
    """Kafka's valuesWithPrefixOverride(listener prefix): prefixed keys win, prefix removed."""
    prefix = listener_prefix(listener)
    out = {k: v for k, v in configs.items() if not k.startswith("listener.name.")}
    for key, value in configs.items():
        if key.startswith(prefix):
            out[key[len(prefix) :]] = value
    return out


def listener_security(
    configs: Mapping[str, str],
    listener: str,
    release: tuple[int, ...] = (3, 9),
    jaas_file: JaasFile | None = None,
) -> ListenerSecurity:
    """`release` refuses what its brokers could not do: SCRAM before 0.10.2 (KIP-84).
    `jaas_file` is the broker's JAAS file (`--jaas-config`), if any."""
    listener = listener.upper()
    protocols = protocol_map(configs)
    protocol = protocols.get(listener)
    if protocol is None:
        # Kafka's text (EndPoint.createEndPoint / CoreUtils.listenerListToEndPoints).
        raise ValueError(f"No security protocol defined for listener {listener}")
    own = effective_configs(configs, listener)
    if protocol == "SASL_SSL" and f"{listener_prefix(listener)}ssl.client.auth" not in configs:
        # Kafka's ChannelBuilders: a SASL_SSL listener authenticates clients with SASL and
        # asks for certificates only when ssl.client.auth is set for that listener itself.
        own["ssl.client.auth"] = "none"
    # KIP-306 (2.1) delays failed-authentication answers by 100 ms; earlier brokers did not.
    default_delay = "100" if release >= (2, 1) else "0"
    delay = int(own.get("connection.failed.authentication.delay.ms", default_delay).strip())
    mapper = None
    if protocol in ("SSL", "SASL_SSL"):
        try:
            mapper = PrincipalMapper.parse(own.get("ssl.principal.mapping.rules", "DEFAULT"))
        except ValueError as e:
            raise ValueError(f"ssl.principal.mapping.rules: {e}") from None
    if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return ListenerSecurity(
            listener, protocol, failed_auth_delay_ms=delay, principal_mapper=mapper, configs=own
        )
    mechanisms = _mechanisms(own, listener, release)
    section = None if jaas_file is None else jaas_file.server_section(listener, release)
    users: dict[str, str] = {}
    if "PLAIN" in mechanisms:
        users = _plain_users(own, listener, release, section, jaas_file)
    oauth = None
    if "OAUTHBEARER" in mechanisms:
        oauth = _oauthbearer(own, listener, release, section, jaas_file)
    kerberos = namer = None
    if "GSSAPI" in mechanisms:
        kerberos, namer = listener_kerberos(own, listener, release, section, jaas_file)
    return ListenerSecurity(
        listener,
        protocol,
        mechanisms=mechanisms,
        plain_users=users,
        reauth_ms=_reauth_ms(own, mechanisms),
        failed_auth_delay_ms=delay,
        principal_mapper=mapper,
        configs=own,
        jaas_section=section,
        oauthbearer=oauth,
        kerberos=kerberos,
        kerberos_namer=namer,
    )


def _mechanisms(own: Mapping[str, str], listener: str, release: tuple[int, ...]) -> tuple[str, ...]:
    """`sasl.enabled.mechanisms` (Kafka's default GSSAPI), each one zkbroker serves and
    `release` knows."""
    mechanisms = tuple(
        m.strip() for m in own.get("sasl.enabled.mechanisms", "GSSAPI").split(",") if m.strip()
    )
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported:
        raise ValueError(
            f"sasl.enabled.mechanisms of listener {listener}: {', '.join(unsupported)} not "
            f"supported by zkbroker (it serves {', '.join(SUPPORTED_MECHANISMS)})"
        )
    if not mechanisms:
        raise ValueError(f"sasl.enabled.mechanisms of listener {listener} is empty")
    if release < (0, 10, 2) and any(m.startswith("SCRAM-") for m in mechanisms):
        raise ValueError("SCRAM mechanisms came with Kafka 0.10.2 (KIP-84)")
    return mechanisms


def _plain_users(
    own: Mapping[str, str],
    listener: str,
    release: tuple[int, ...],
    section: tuple[str, tuple[Module, ...]] | None,
    jaas_file: JaasFile | None,
) -> dict[str, str]:
    """PLAIN's users: the listener's `plain.sasl.jaas.config` (else `sasl.jaas.config`), else
    the JAAS file's section."""
    jaas = own.get("plain.sasl.jaas.config", own.get("sasl.jaas.config"))
    if jaas is None and section is not None:
        return module_plain_users(section[1])
    if jaas is None and jaas_file is not None:
        raise ValueError(jaas_file.missing_section_message(listener, release))
    if jaas is None:
        raise ValueError(
            f"Could not find a 'KafkaServer' or '{listener.lower()}.KafkaServer' entry in "
            f"the JAAS configuration: set listener.name.{listener.lower()}."
            "plain.sasl.jaas.config for PLAIN"
        )
    try:
        return plain_users(jaas)
    except JaasError as e:
        raise ValueError(f"sasl.jaas.config: {e}") from None


def _reauth_ms(own: Mapping[str, str], mechanisms: tuple[str, ...]) -> dict[str, int]:
    """`connections.max.reauth.ms` per mechanism (KIP-368; the mechanism-prefixed key wins)."""
    reauth: dict[str, int] = {}
    for mechanism in mechanisms:
        text = own.get(
            f"{mechanism.lower()}.connections.max.reauth.ms",
            own.get("connections.max.reauth.ms", "0"),
        )
        reauth[mechanism] = int(text.strip())
    return reauth


def _oauthbearer(
    own: Mapping[str, str],
    listener: str,
    release: tuple[int, ...],
    section: tuple[str, tuple[Module, ...]] | None,
    jaas_file: JaasFile | None,
) -> OAuthBearerConfig:
    """OAUTHBEARER's login modules (the listener's `oauthbearer.sasl.jaas.config`, else
    the JAAS file's section: JaasContext.loadServerContext reads no unprefixed
    sasl.jaas.config) and validator configs."""
    if release < (2, 0):
        raise ValueError("SASL/OAUTHBEARER came with Kafka 2.0 (KIP-255)")
    jaas = own.get("oauthbearer.sasl.jaas.config")
    if jaas is not None:
        try:
            modules: tuple[Module, ...] = tuple(parse_modules(jaas))
        except JaasError as e:
            raise ValueError(f"sasl.jaas.config: {e}") from None
    elif section is not None:
        modules = section[1]
    elif jaas_file is not None:
        raise ValueError(jaas_file.missing_section_message(listener, release))
    else:
        raise ValueError(
            f"Could not find a 'KafkaServer' or '{listener.lower()}.KafkaServer' entry in "
            f"the JAAS configuration: set listener.name.{listener.lower()}."
            "oauthbearer.sasl.jaas.config for OAUTHBEARER"
        )
    return oauthbearer_config(own, modules, release)
