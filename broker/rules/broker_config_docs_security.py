"""Our own one-line documentation of the broker's security configs (DescribeConfigs v3+
`include_documentation`, Kafka's behaviour: §4.3): TLS and SASL (as KafkaConfig's SSL and SASL
sections define them, OAuth and Kerberos included), authorization, delegation tokens,
password encryption, and the broker's TLS and ACLs towards ZooKeeper.

The texts are the project's own words, not Kafka's documentation strings or edits of
them: each says what the setting controls in Kafka and in which unit, naming no default.

Not here: the other broker configs (``broker_config_docs_log``,
``broker_config_docs_coordinators``, ``broker_config_docs_server``), listener-prefixed names
and the lookup (``config_documentation``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_DOCS: dict[str, str] = {
    "authorizer.class.name": (
        "Class implementing the authorizer that checks ACLs for each request; empty means no "
        "authorization."
    ),
    "connections.max.reauth.ms": (
        "Upper bound in ms on a SASL session before the client must re-authenticate or be "
        "disconnected; 0 turns re-authentication off."
    ),
    "delegation.token.expiry.check.interval.ms": (
        "Time in ms between scans that remove expired delegation tokens."
    ),
    "delegation.token.expiry.time.ms": (
        "Time in ms a delegation token stays valid before it must be renewed; each renewal extends "
        "it by this much, up to the lifetime limit."
    ),
    "delegation.token.master.key": "Deprecated name of delegation.token.secret.key.",
    "delegation.token.max.lifetime.ms": (
        "Hard limit in ms on a delegation token's lifetime; renewals cannot extend it further."
    ),
    "delegation.token.secret.key": (
        "Secret for signing and checking delegation tokens; must match on all brokers, and tokens "
        "are unavailable while it is unset."
    ),
    "password.encoder.cipher.algorithm": (
        "Cipher transformation that encrypts dynamically configured passwords."
    ),
    "password.encoder.iterations": (
        "Iteration count of the key derivation for encrypting dynamically configured passwords."
    ),
    "password.encoder.key.length": (
        "Length in bits of the key that encrypts dynamically configured passwords."
    ),
    "password.encoder.keyfactory.algorithm": (
        "SecretKeyFactory algorithm that derives the key encrypting dynamically configured "
        "passwords."
    ),
    "password.encoder.old.secret": (
        "Former password.encoder.secret; stored dynamic passwords are decrypted with it and "
        "re-encrypted with the current secret at startup."
    ),
    "password.encoder.secret": (
        "Secret from which the key that encrypts dynamically configured passwords is derived."
    ),
    "principal.builder.class": (
        "Class implementing KafkaPrincipalBuilder that derives a connection's principal from how "
        "it authenticated."
    ),
    "sasl.client.callback.handler.class": (
        "Class implementing AuthenticateCallbackHandler used by the broker's own SASL client "
        "connections."
    ),
    "sasl.enabled.mechanisms": (
        "SASL mechanisms the broker accepts, e.g. GSSAPI, PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
        "OAUTHBEARER."
    ),
    "sasl.jaas.config": (
        "JAAS login section, written inline in JAAS file syntax, used instead of a separate JAAS "
        "file."
    ),
    "sasl.kerberos.kinit.cmd": "Path of the kinit program used to renew Kerberos tickets.",
    "sasl.kerberos.min.time.before.relogin": (
        "Least time in ms the login thread waits between two Kerberos refresh attempts."
    ),
    "sasl.kerberos.principal.to.local.rules": (
        "Ordered rules, in krb5.conf auth_to_local style, that turn Kerberos principals into short "
        "user names."
    ),
    "sasl.kerberos.service.name": (
        "Kerberos service name (the primary part of the principal) the broker runs under."
    ),
    "sasl.kerberos.ticket.renew.jitter": (
        "Random fraction of the ticket lifetime added to the Kerberos renewal time."
    ),
    "sasl.kerberos.ticket.renew.window.factor": (
        "Fraction of a Kerberos ticket's lifetime after which the login thread tries to renew it."
    ),
    "sasl.login.callback.handler.class": (
        "Class implementing AuthenticateCallbackHandler used by SASL login modules, e.g. to fetch "
        "OAUTHBEARER tokens."
    ),
    "sasl.login.class": "Class implementing Login that SASL mechanisms use to obtain credentials.",
    "sasl.login.connect.timeout.ms": (
        "OAUTHBEARER login: connect timeout in ms towards the external identity provider."
    ),
    "sasl.login.read.timeout.ms": (
        "OAUTHBEARER login: read timeout in ms towards the external identity provider."
    ),
    "sasl.login.refresh.buffer.seconds": (
        "Credential refresh (OAUTHBEARER): seconds of validity still left when a refresh is "
        "scheduled."
    ),
    "sasl.login.refresh.min.period.seconds": (
        "Credential refresh (OAUTHBEARER): least time in seconds between two refreshes."
    ),
    "sasl.login.refresh.window.factor": (
        "Credential refresh (OAUTHBEARER): fraction of the credential's lifetime after which a "
        "refresh is attempted."
    ),
    "sasl.login.refresh.window.jitter": (
        "Credential refresh (OAUTHBEARER): random fraction of the lifetime added to the refresh "
        "time."
    ),
    "sasl.login.retry.backoff.max.ms": (
        "OAUTHBEARER login: ceiling in ms of the growing backoff between retries of identity "
        "provider calls."
    ),
    "sasl.login.retry.backoff.ms": (
        "OAUTHBEARER login: first backoff in ms between retries of identity provider calls."
    ),
    "sasl.mechanism.controller.protocol": (
        "KRaft: SASL mechanism used on connections to the controllers."
    ),
    "sasl.mechanism.inter.broker.protocol": "SASL mechanism used on connections between brokers.",
    "sasl.oauthbearer.clock.skew.seconds": (
        "Clock difference in seconds tolerated between the broker and the token issuer when "
        "checking token times."
    ),
    "sasl.oauthbearer.expected.audience": (
        "Audience values, one of which an OAuth token's 'aud' claim must contain to be accepted."
    ),
    "sasl.oauthbearer.expected.issuer": (
        "Value an OAuth token's 'iss' claim must equal to be accepted."
    ),
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": (
        "Time in ms between reloads of the JSON Web Key Set."
    ),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": (
        "Ceiling in ms of the growing backoff between retries of a failed JSON Web Key Set "
        "download."
    ),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": (
        "First backoff in ms between retries of a failed JSON Web Key Set download."
    ),
    "sasl.oauthbearer.jwks.endpoint.url": (
        "URL, or file, of the JSON Web Key Set whose public keys verify OAuth token signatures."
    ),
    "sasl.oauthbearer.scope.claim.name": (
        "Name of the OAuth token claim that lists the token's scopes."
    ),
    "sasl.oauthbearer.sub.claim.name": (
        "Name of the OAuth token claim that names the token's subject."
    ),
    "sasl.oauthbearer.token.endpoint.url": (
        "URL, or file, of the identity provider's token endpoint used to obtain OAuth access "
        "tokens at login."
    ),
    "sasl.server.callback.handler.class": (
        "Class implementing AuthenticateCallbackHandler that checks client credentials on the "
        "broker; usually set per listener and mechanism."
    ),
    "sasl.server.max.receive.size": (
        "Largest request in bytes accepted from a client before and during its initial SASL "
        "authentication."
    ),
    "security.inter.broker.protocol": (
        "Security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL) for traffic between "
        "brokers; cannot be combined with inter.broker.listener.name."
    ),
    "security.providers": (
        "Classes implementing SecurityProviderCreator whose providers are registered for the "
        "broker's security algorithms."
    ),
    "ssl.allow.dn.changes": (
        "Whether a dynamic key store update may change the certificate's distinguished name."
    ),
    "ssl.allow.san.changes": (
        "Whether a dynamic key store update may change the certificate's subject alternative names."
    ),
    "ssl.cipher.suites": (
        "Cipher suites allowed on TLS connections; empty allows every suite the JVM supports."
    ),
    "ssl.client.auth": (
        "Whether TLS clients must present a certificate: required, requested or none."
    ),
    "ssl.enabled.protocols": "TLS versions allowed on connections.",
    "ssl.endpoint.identification.algorithm": (
        "Algorithm checking that a peer's certificate matches its host name (https); empty turns "
        "the check off."
    ),
    "ssl.engine.factory.class": (
        "Class implementing SslEngineFactory that builds the SSLEngine objects in place of the "
        "built-in factory."
    ),
    "ssl.key.password": "Password of the private key held in the key store or in ssl.keystore.key.",
    "ssl.keymanager.algorithm": "Algorithm of the key manager factory used for TLS.",
    "ssl.keystore.certificate.chain": (
        "Certificate chain in PEM format, given inline, for a PEM key store."
    ),
    "ssl.keystore.key": "Private key in PEM format, given inline, for a PEM key store.",
    "ssl.keystore.location": "Path of the key store file.",
    "ssl.keystore.password": "Password of the key store file.",
    "ssl.keystore.type": "Format of the key store, e.g. JKS, PKCS12 or PEM.",
    "ssl.principal.mapping.rules": (
        "Ordered rules that turn a client certificate's distinguished name into a short principal "
        "name."
    ),
    "ssl.protocol": "Protocol name passed when creating the SSLContext, e.g. TLSv1.3.",
    "ssl.provider": "Security provider used for TLS; empty uses the JVM default.",
    "ssl.secure.random.implementation": "SecureRandom implementation used for TLS cryptography.",
    "ssl.trustmanager.algorithm": "Algorithm of the trust manager factory used for TLS.",
    "ssl.truststore.certificates": (
        "Trusted certificates in PEM format, given inline, for a PEM trust store."
    ),
    "ssl.truststore.location": "Path of the trust store file.",
    "ssl.truststore.password": "Password of the trust store file.",
    "ssl.truststore.type": "Format of the trust store, e.g. JKS, PKCS12 or PEM.",
    "zookeeper.clientCnxnSocket": (
        "ZooKeeper client socket class; set to org.apache.zookeeper.ClientCnxnSocketNetty for TLS "
        "to ZooKeeper."
    ),
    "zookeeper.set.acl": (
        "Whether the broker creates its znodes with secure ACLs, so that only the brokers' "
        "authenticated identity may change them."
    ),
    "zookeeper.ssl.cipher.suites": "Cipher suites allowed on the TLS connection to ZooKeeper.",
    "zookeeper.ssl.client.enable": "Whether the broker connects to ZooKeeper over TLS.",
    "zookeeper.ssl.crl.enable": (
        "Whether certificate revocation lists are consulted on the TLS connection to ZooKeeper."
    ),
    "zookeeper.ssl.enabled.protocols": "TLS versions allowed on the connection to ZooKeeper.",
    "zookeeper.ssl.endpoint.identification.algorithm": (
        "Host name check on the TLS connection to ZooKeeper: HTTPS turns it on, empty turns it off."
    ),
    "zookeeper.ssl.keystore.location": "Path of the key store for the TLS connection to ZooKeeper.",
    "zookeeper.ssl.keystore.password": (
        "Password of the key store for the TLS connection to ZooKeeper."
    ),
    "zookeeper.ssl.keystore.type": "Format of the key store for the TLS connection to ZooKeeper.",
    "zookeeper.ssl.ocsp.enable": (
        "Whether OCSP is used to check certificate revocation on the TLS connection to ZooKeeper."
    ),
    "zookeeper.ssl.protocol": "TLS protocol used on the connection to ZooKeeper.",
    "zookeeper.ssl.truststore.location": (
        "Path of the trust store for the TLS connection to ZooKeeper."
    ),
    "zookeeper.ssl.truststore.password": (
        "Password of the trust store for the TLS connection to ZooKeeper."
    ),
    "zookeeper.ssl.truststore.type": (
        "Format of the trust store for the TLS connection to ZooKeeper."
    ),
}

SECURITY_CONFIG_DOCS: Mapping[str, str] = MappingProxyType(_DOCS)
"""Broker config name -> our one-line documentation, for the security configs."""
