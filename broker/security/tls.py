"""The TLS contexts of a listener from Kafka's `ssl.*` configs, PEM only (KIP-651): the server
context a listener accepts with, and the client context a broker dials its peers'
inter-broker listener with (`SslFactory` in CLIENT mode; docs/kafka-behaviour.md §17, "The
inter-broker client").

Reads `ssl.keystore.*` and `ssl.key.password`, `ssl.truststore.*` (the system's CAs for a
client without one), `ssl.client.auth`, `ssl.enabled.protocols` (its lowest version is the
minimum) and, for the client, `ssl.endpoint.identification.algorithm`. Handshakes run in
asyncio's SSL protocol, never blocking the event loop.

Not here: JKS and PKCS12 keystores (refused with a clear error), cipher suites,
`ssl.engine.factory.class`, CRLs, dynamic keystore updates.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Mapping

_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}


def server_context(configs: Mapping[str, str]) -> ssl.SSLContext:
    """ValueError with the reason when the configs do not make a usable context."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if not _load_keystore(ctx, configs):
        raise ValueError(
            "an SSL listener needs ssl.keystore.location or ssl.keystore.certificate.chain"
        )
    has_truststore = _load_truststore(ctx, configs)
    client_auth = configs.get("ssl.client.auth", "none").strip().lower()
    if client_auth == "required":
        ctx.verify_mode = ssl.CERT_REQUIRED
    elif client_auth == "requested":
        ctx.verify_mode = ssl.CERT_OPTIONAL
    else:
        ctx.verify_mode = ssl.CERT_NONE
    if ctx.verify_mode != ssl.CERT_NONE and not has_truststore:
        raise ValueError(f"ssl.client.auth={client_auth} needs a truststore of client CAs")
    _set_protocols(ctx, configs)
    return ctx


def client_context(
    configs: Mapping[str, str], endpoint_identification_default: str | None = "https"
) -> ssl.SSLContext:
    """The context a broker connects to a peer's listener with, from that listener's
    effective configs; `endpoint_identification_default` is the release's default of
    `ssl.endpoint.identification.algorithm` ("https" since 2.0, None before). ValueError with
    the reason when the configs do not make a usable context."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if not _load_truststore(ctx, configs):
        # Kafka's SslFactory without a truststore uses the JVM's default trust managers.
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    # Kafka's client-mode SslFactory presents the keystore whenever one is configured: the
    # peer asks for it when its ssl.client.auth wants client certificates (mTLS).
    _load_keystore(ctx, configs)
    algorithm = configs.get(
        "ssl.endpoint.identification.algorithm", endpoint_identification_default or ""
    )
    algorithm = (algorithm or "").strip()
    if algorithm and algorithm.lower() != "https":
        raise ValueError(
            f"ssl.endpoint.identification.algorithm={algorithm}: zkbroker knows https or "
            "empty (no host name verification)"
        )
    # The chain is verified either way; only the host name check follows the algorithm.
    ctx.check_hostname = bool(algorithm)
    ctx.verify_mode = ssl.CERT_REQUIRED
    _set_protocols(ctx, configs)
    return ctx


def _load_keystore(ctx: ssl.SSLContext, configs: Mapping[str, str]) -> bool:
    """Load `ssl.keystore.*` into ctx; False when none is configured."""
    keystore_type = configs.get("ssl.keystore.type", "JKS").upper()
    location = configs.get("ssl.keystore.location")
    chain = configs.get("ssl.keystore.certificate.chain")
    key = configs.get("ssl.keystore.key")
    password = configs.get("ssl.key.password") or configs.get("ssl.keystore.password")
    if chain or key:
        if not (chain and key):
            raise ValueError(
                "ssl.keystore.certificate.chain and ssl.keystore.key must be set together"
            )
        if keystore_type != "PEM":
            raise ValueError("ssl.keystore.key requires ssl.keystore.type=PEM")
        _load_pem_text(ctx, chain, key, password)
        return True
    if location:
        if keystore_type != "PEM":
            raise ValueError(
                f"ssl.keystore.type={keystore_type}: zkbroker reads PEM keystores only "
                "(set ssl.keystore.type=PEM)"
            )
        try:
            ctx.load_cert_chain(location, password=password)
        except (OSError, ssl.SSLError) as e:
            raise ValueError(f"ssl.keystore.location {location}: {e}") from None
        return True
    return False


def _load_truststore(ctx: ssl.SSLContext, configs: Mapping[str, str]) -> bool:
    """Load `ssl.truststore.*` into ctx; False when none is configured."""
    trust_type = configs.get("ssl.truststore.type", "JKS").upper()
    trust_location = configs.get("ssl.truststore.location")
    trust_text = configs.get("ssl.truststore.certificates")
    if not (trust_location or trust_text):
        return False
    if trust_type != "PEM":
        raise ValueError(f"ssl.truststore.type={trust_type}: zkbroker reads PEM truststores only")
    try:
        if trust_text:
            ctx.load_verify_locations(cadata=trust_text)
        else:
            ctx.load_verify_locations(cafile=trust_location)
    except (OSError, ssl.SSLError) as e:
        raise ValueError(f"ssl.truststore: {e}") from None
    return True


def _set_protocols(ctx: ssl.SSLContext, configs: Mapping[str, str]) -> None:
    """`ssl.enabled.protocols`: its lowest TLS version is the context's minimum."""
    protocols = [
        p.strip() for p in configs.get("ssl.enabled.protocols", "TLSv1.2,TLSv1.3").split(",")
    ]
    versions = [_VERSIONS[p] for p in protocols if p in _VERSIONS]
    if versions:
        with contextlib.suppress(ValueError):
            ctx.minimum_version = min(versions)


def _load_pem_text(ctx: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    """`load_cert_chain` reads files only: the PEM text goes through a private temporary file,
    removed at once."""
    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(key.strip() + "\n" + chain.strip() + "\n")
        ctx.load_cert_chain(path, password=password)
    except (OSError, ssl.SSLError) as e:
        raise ValueError(f"ssl.keystore.key/certificate.chain: {e}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
