"""`Security`: a secured listener for `Cluster(security=...)` and the toolkit's fixtures, with
generated test certificates (trustme, imported only when TLS is asked for: `pip install
'zkbroker[security]'`).

`Security(protocol="SASL_SSL", mechanisms=("SCRAM-SHA-512", "PLAIN"), users={"alice": "pw"})`
becomes, when the cluster starts (`prepare`):
- the listener name (the protocol's name) and the Kafka broker configs a real broker would be
  given: `listener.security.protocol.map` (implicit), `sasl.enabled.mechanisms`, the
  PlainLoginModule JAAS config with every user, `ssl.keystore.type=PEM` and
  `ssl.keystore.location`, a truststore and `ssl.client.auth` for mTLS,
  `connections.max.reauth.ms`, `ssl.principal.mapping.rules`;
- for TLS, a fresh CA, a server certificate for `localhost`/`127.0.0.1`/`::1` and one client
  certificate (CN=`client_cn`), PEM files in a temporary directory removed with the cluster;
- the SCRAM users' credentials, which the cluster writes to `/config/users/<user>` once it is
  up (as kafka-configs would) and waits for every broker to know.

`client_config(kind, user)` gives what a client needs: kafka-python / aiokafka keyword
arguments or a confluent-kafka (librdkafka) config dict.

Deliberately not here: several listeners per broker (one secured listener per cluster), JKS
keystores, certificate rotation.
"""

from __future__ import annotations

import shutil
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.security.jaas import plain_jaas_config
from broker.security.listener_config import PROTOCOLS, SUPPORTED_MECHANISMS


@dataclass(frozen=True)
class Security:
    protocol: str = "SASL_SSL"
    mechanisms: tuple[str, ...] = ("SCRAM-SHA-512", "PLAIN")
    users: Mapping[str, str] = field(default_factory=lambda: {"admin": "admin-secret"})
    # ssl.client.auth: none, requested or required (client certificates, mTLS).
    client_auth: str = "none"
    client_cn: str = "client"
    principal_mapping_rules: str | None = None
    reauth_ms: int = 0
    scram_iterations: int = 4096

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS or self.protocol == "PLAINTEXT":
            raise ValueError(f"Security protocol must be one of {PROTOCOLS[1:]}")
        unknown = [m for m in self.mechanisms if m not in SUPPORTED_MECHANISMS]
        if unknown:
            raise ValueError(f"unsupported SASL mechanisms {unknown}")
        if self.client_auth not in ("none", "requested", "required"):
            raise ValueError("client_auth is none, requested or required")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def scram_mechanisms(self) -> tuple[str, ...]:
        return tuple(m for m in self.mechanisms if m.startswith("SCRAM-")) if self.sasl else ()

    def prepare(self) -> PreparedSecurity:
        """Certificates written, broker configs built (call once per cluster)."""
        directory = Path(tempfile.mkdtemp(prefix="zkbroker-tls-")) if self.tls else None
        configs: dict[str, str] = {}
        listener = self.protocol
        prefix = f"listener.name.{listener.lower()}."
        if self.sasl:
            configs["sasl.enabled.mechanisms"] = ",".join(self.mechanisms)
            if "PLAIN" in self.mechanisms:
                configs[f"{prefix}plain.sasl.jaas.config"] = plain_jaas_config(dict(self.users))
            if self.reauth_ms:
                configs["connections.max.reauth.ms"] = str(self.reauth_ms)
        ca_file = client_cert = client_key = None
        if directory is not None:
            import trustme  # the `security` extra: only TLS needs it

            ca = trustme.CA()
            server = ca.issue_cert("localhost", "127.0.0.1", "::1")
            client = ca.issue_cert(f"{self.client_cn}@zkbroker.test", common_name=self.client_cn)
            ca_file = str(directory / "ca.pem")
            ca.cert_pem.write_to_path(ca_file)
            keystore = str(directory / "server.pem")
            server.private_key_and_cert_chain_pem.write_to_path(keystore)
            client_cert = str(directory / "client.pem")
            client_key = str(directory / "client-key.pem")
            for blob in client.cert_chain_pems:
                blob.write_to_path(client_cert, append=True)
            client.private_key_pem.write_to_path(client_key)
            configs["ssl.keystore.type"] = "PEM"
            configs["ssl.keystore.location"] = keystore
            if self.client_auth != "none":
                configs["ssl.truststore.type"] = "PEM"
                configs["ssl.truststore.location"] = ca_file
                # Kafka applies ssl.client.auth to SASL_SSL only as a listener override.
                key = "ssl.client.auth" if self.protocol == "SSL" else f"{prefix}ssl.client.auth"
                configs[key] = self.client_auth
            if self.principal_mapping_rules is not None:
                configs["ssl.principal.mapping.rules"] = self.principal_mapping_rules
        return PreparedSecurity(
            self, listener, configs, directory, ca_file, client_cert, client_key
        )


@dataclass
class PreparedSecurity:
    """What `Security.prepare` made: configs for the brokers, files for the clients."""

    security: Security
    listener_name: str
    broker_configs: dict[str, str]
    directory: Path | None
    ca_file: str | None
    client_cert_file: str | None
    client_key_file: str | None

    def cleanup(self) -> None:
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    def ssl_context(self, client_certificate: bool = True) -> ssl.SSLContext:
        """A client TLS context trusting the test CA (with the client certificate)."""
        ctx = ssl.create_default_context(cafile=self.ca_file)
        if client_certificate and self.client_cert_file and self.client_key_file:
            ctx.load_cert_chain(self.client_cert_file, self.client_key_file)
        return ctx

    def client_config(
        self,
        kind: str = "kafka-python",
        user: str | None = None,
        mechanism: str | None = None,
        password: str | None = None,
    ) -> dict[str, Any]:
        """Connection settings for `kind` ("kafka-python", "aiokafka" or "confluent") as
        `user` (the first user by default) with `mechanism` (the first enabled by default)."""
        sec = self.security
        name = user if user is not None else next(iter(sec.users), None)
        secret = password if password is not None else sec.users.get(name or "", "")
        mech = mechanism or (sec.mechanisms[0] if sec.mechanisms else None)
        if kind == "confluent":
            conf: dict[str, Any] = {"security.protocol": sec.protocol}
            if sec.sasl:
                conf.update(
                    {"sasl.mechanism": mech, "sasl.username": name, "sasl.password": secret}
                )
            if sec.tls:
                conf["ssl.ca.location"] = self.ca_file
                if sec.client_auth != "none":
                    conf["ssl.certificate.location"] = self.client_cert_file
                    conf["ssl.key.location"] = self.client_key_file
            return conf
        if kind not in ("kafka-python", "aiokafka"):
            raise ValueError("kind is kafka-python, aiokafka or confluent")
        out: dict[str, Any] = {"security_protocol": sec.protocol}
        if sec.sasl:
            out.update(
                {
                    "sasl_mechanism": mech,
                    "sasl_plain_username": name,
                    "sasl_plain_password": secret,
                }
            )
        if sec.tls:
            if kind == "aiokafka":
                out["ssl_context"] = self.ssl_context(sec.client_auth != "none")
            else:
                out["ssl_cafile"] = self.ca_file
                if sec.client_auth != "none":
                    out["ssl_certfile"] = self.client_cert_file
                    out["ssl_keyfile"] = self.client_key_file
                out["ssl_check_hostname"] = True
        return out
