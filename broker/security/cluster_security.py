"""`Security`: a secured listener for `Cluster(security=...)` and the toolkit's fixtures, with
generated test certificates (trustme, imported only for TLS: `pip install 'zkbroker[security]'`).

`prepare` turns it into the Kafka broker configs a real broker would get (protocol map,
`sasl.enabled.mechanisms`, the PlainLoginModule JAAS config, PEM keystore and truststore,
`ssl.client.auth`, `connections.max.reauth.ms`, `ssl.principal.mapping.rules`), a fresh CA and
certificates (temporary, or kept in `certificates_dir` for clusters of several processes), the
SCRAM credentials the cluster writes once up, and the brokers' inter-broker login
(`inter_broker_mechanism`, `inter_broker_user`; with no users a random login that only works
within one process). `client_config(kind, user)` gives kafka-python / aiokafka keywords or a
confluent-kafka config.

Not here: several listeners per broker, JKS keystores, certificate rotation.
"""

from __future__ import annotations

import secrets
import shutil
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkbroker.broker.security.jaas import plain_jaas_config, scram_jaas_config
from zkbroker.broker.security.listener_config import PROTOCOLS, SUPPORTED_MECHANISMS


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
    # The brokers' inter-broker login: a user of `users` (default the first) and a mechanism
    # of `mechanisms` (default the first).
    inter_broker_user: str | None = None
    inter_broker_mechanism: str | None = None
    # TLS certificates shared by clusters of several processes: made there once (by whichever
    # process comes first), then reused, and never removed by a cluster. None: a fresh CA
    # per cluster in a temporary directory, removed with it.
    certificates_dir: str | None = None

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS or self.protocol == "PLAINTEXT":
            raise ValueError(f"Security protocol must be one of {PROTOCOLS[1:]}")
        unknown = [m for m in self.mechanisms if m not in SUPPORTED_MECHANISMS]
        if unknown:
            raise ValueError(f"unsupported SASL mechanisms {unknown}")
        if self.client_auth not in ("none", "requested", "required"):
            raise ValueError("client_auth is none, requested or required")
        if self.inter_broker_user is not None and self.inter_broker_user not in self.users:
            raise ValueError(f"inter_broker_user {self.inter_broker_user!r} is not in users")
        if self.inter_broker_mechanism is not None and (
            not self.sasl or self.inter_broker_mechanism not in self.mechanisms
        ):
            raise ValueError("inter_broker_mechanism must be one of mechanisms (SASL only)")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def scram_mechanisms(self) -> tuple[str, ...]:
        return tuple(m for m in self.mechanisms if m.startswith("SCRAM-")) if self.sasl else ()

    @property
    def inter_broker_login(self) -> tuple[str, str]:
        """(user name, password) the brokers log in to each other with (SASL)."""
        user = self.inter_broker_user or next(iter(self.users), None)
        if user is None:
            return "zkbroker-inter-broker", secrets.token_urlsafe(16)
        return user, self.users[user]

    def prepare(self, release: tuple[int, ...] | None = None) -> PreparedSecurity:
        """Certificates written, broker configs built (call once per cluster) for `release`
        (the latest by default): before 1.1 a broker's JAAS login is no broker config, so
        none is written (its brokers then cannot log in to other processes' brokers)."""
        directory = None
        if self.tls:
            directory = (
                _shared_certificates(Path(self.certificates_dir), self.client_cn)
                if self.certificates_dir is not None
                else _write_certificates(
                    Path(tempfile.mkdtemp(prefix="zkbroker-tls-")), self.client_cn
                )
            )
        configs: dict[str, str] = {}
        listener = self.protocol
        prefix = f"listener.name.{listener.lower()}."
        if self.sasl:
            configs["sasl.enabled.mechanisms"] = ",".join(self.mechanisms)
            # No mechanism at all: the listener's own check refuses it with its reason.
            mechanism = self.inter_broker_mechanism or next(iter(self.mechanisms), "GSSAPI")
            login = self.inter_broker_login
            configs["sasl.mechanism.inter.broker.protocol"] = mechanism
            if "PLAIN" in self.mechanisms:
                configs[f"{prefix}plain.sasl.jaas.config"] = plain_jaas_config(
                    dict(self.users), login if mechanism == "PLAIN" else None
                )
            if mechanism.startswith("SCRAM-") and (release is None or release >= (1, 1)):
                configs[f"{prefix}{mechanism.lower()}.sasl.jaas.config"] = scram_jaas_config(*login)
            if self.reauth_ms:
                configs["connections.max.reauth.ms"] = str(self.reauth_ms)
        ca_file = client_cert = client_key = None
        if directory is not None:
            ca_file = str(directory / "ca.pem")
            keystore = str(directory / "server.pem")
            client_cert = str(directory / "client.pem")
            client_key = str(directory / "client-key.pem")
            configs["ssl.keystore.type"] = "PEM"
            configs["ssl.keystore.location"] = keystore
            # The CA is the truststore of every broker, as a Kafka broker dialing its peers
            # needs one (and, with client_auth, for the clients' certificates).
            configs["ssl.truststore.type"] = "PEM"
            configs["ssl.truststore.location"] = ca_file
            if self.client_auth != "none":
                # Kafka applies ssl.client.auth to SASL_SSL only as a listener override.
                key = "ssl.client.auth" if self.protocol == "SSL" else f"{prefix}ssl.client.auth"
                configs[key] = self.client_auth
            if self.principal_mapping_rules is not None:
                configs["ssl.principal.mapping.rules"] = self.principal_mapping_rules
        return PreparedSecurity(
            self,
            listener,
            configs,
            directory if self.certificates_dir is None else None,  # a shared one stays
            ca_file,
            client_cert,
            client_key,
        )


_CERTIFICATE_FILES = ("ca.pem", "server.pem", "client.pem", "client-key.pem")


def _write_certificates(directory: Path, client_cn: str) -> Path:
    """A fresh CA, a server certificate for localhost (the brokers' keystore, also their
    client certificate towards each other) and one client certificate, as PEM files."""
    import trustme  # the `security` extra: only TLS needs it

    ca = trustme.CA()
    server = ca.issue_cert("localhost", "127.0.0.1", "::1")
    client = ca.issue_cert(f"{client_cn}@zkbroker.test", common_name=client_cn)
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    server.private_key_and_cert_chain_pem.write_to_path(str(directory / "server.pem"))
    for blob in client.cert_chain_pems:
        blob.write_to_path(str(directory / "client.pem"), append=True)
    client.private_key_pem.write_to_path(str(directory / "client-key.pem"))
    return directory


def _shared_certificates(directory: Path, client_cn: str) -> Path:
    """`directory` with the certificates: made in a sibling temporary directory and renamed
    into place, so processes starting together all end up with the first one's files."""
    if all((directory / name).exists() for name in _CERTIFICATE_FILES):
        return directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=".zkbroker-tls-", dir=directory.parent))
    _write_certificates(fresh, client_cn)
    try:
        if directory.exists() and not any(directory.iterdir()):
            directory.rmdir()
        fresh.rename(directory)
    except OSError:  # another process was first: keep its certificates
        shutil.rmtree(fresh, ignore_errors=True)
    if not all((directory / name).exists() for name in _CERTIFICATE_FILES):
        raise ValueError(f"certificates_dir {directory}: not zkbroker's certificates")
    return directory


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
