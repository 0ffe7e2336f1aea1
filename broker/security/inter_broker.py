"""How a broker reaches its peers: the inter-broker listener and the security to dial it with.

As Kafka's `KafkaConfig.getInterBrokerListenerNameAndSecurityProtocol`: the listener is
`inter.broker.listener.name`, else the one named after `security.inter.broker.protocol`
(default PLAINTEXT), never both ("Only one of inter.broker.listener.name and
security.inter.broker.protocol should be set."). zkbroker's own default, when neither is
given, is its first listener (`Settings.listeners`), which it writes as
`inter.broker.listener.name` in the static configs.

`InterBrokerSecurity` is what `ChannelBuilders.clientChannelBuilder` would build from that
listener's configs: the TLS client context (`zkbroker.broker.security.tls.client_context`) for SSL
and SASL_SSL, the SASL login (`zkbroker.broker.security.sasl_client.inter_broker_login`) for
SASL_PLAINTEXT and SASL_SSL. Built at start, its ValueError refuses a configuration Kafka would not
start with.

Deliberately not here: the connections (`zkbroker.broker.peers.client`), which brokers a
peer is (the metadata image), dynamic listener reconfiguration.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass

from zkbroker.broker.rules.broker_config_catalog import broker_config_key
from zkbroker.broker.security.listener_config import ListenerSecurity
from zkbroker.broker.security.sasl_client import SaslLogin, inter_broker_login
from zkbroker.broker.security.tls import client_context


def inter_broker_listener_name(configs: Mapping[str, str], default_listener: str) -> str:
    """The inter-broker listener's name; ValueError when both keys are given."""
    name = configs.get("inter.broker.listener.name")
    protocol = configs.get("security.inter.broker.protocol")
    if name is not None and protocol is not None:
        raise ValueError(
            "Only one of inter.broker.listener.name and security.inter.broker.protocol "
            "should be set."
        )
    if name is not None:
        return name.strip().upper()
    if protocol is not None:
        return protocol.strip().upper()
    return default_listener


@dataclass(frozen=True)
class InterBrokerSecurity:
    listener_name: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    login: SaslLogin | None = None


PLAINTEXT = InterBrokerSecurity("PLAINTEXT", "PLAINTEXT")


def inter_broker_security(
    security: ListenerSecurity, release: tuple[int, ...] = (3, 9)
) -> InterBrokerSecurity:
    """The client side of the inter-broker listener `security`; ValueError with the reason
    when Kafka (or zkbroker) would not start with it."""
    context = None
    if security.tls:
        key = broker_config_key("ssl.endpoint.identification.algorithm", release)
        try:
            context = client_context(security.configs, None if key is None else key.default)
        except ValueError as e:
            raise ValueError(
                f"inter-broker listener {security.listener_name} (TLS client): {e}"
            ) from None
    login = None
    if security.sasl:
        # Before 1.1 a broker's JAAS login came from a file only (no sasl.jaas.config key).
        jaas_in_configs = broker_config_key("sasl.jaas.config", release) is not None
        login = inter_broker_login(security, jaas_in_configs)
    return InterBrokerSecurity(security.listener_name, security.protocol, context, login)
