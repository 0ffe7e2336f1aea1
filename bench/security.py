"""Connection security: what TLS and SASL cost a client, against PLAINTEXT from the same run.

One broker with two listeners (SASL_SSL with SCRAM-SHA-512 and PLAIN, and PLAINTEXT), in this
process (`Cluster`, its own loop thread); a blocking wire client measures:
- connection set-up to the first answer: TCP + ApiVersions on PLAINTEXT (the baseline), against
  TCP + TLS handshake + ApiVersions + SaslHandshake + SaslAuthenticate (PLAIN: one round trip;
  SCRAM-SHA-512: two, with the HMACs of RFC 5802 on the server);
  the SCRAM figure includes the client's own PBKDF2 (4096 iterations of SHA-512, a few ms in
  this process); the server's part of the exchange (HMACs only) is printed apart, in-process;
- Metadata round trips on an open connection: PLAINTEXT against an authenticated SASL_SSL one
  (what TLS adds per request; SASL adds nothing once authenticated).
Prints p50/p99 in ms and the 1-minute load average beside them. Run:
python bench/security.py [--connections N] [--requests N]
"""

from __future__ import annotations

import argparse
import os
import socket
import ssl
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scramp

from zkbroker import Cluster
from zkbroker.broker.log import configure_logging
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from zkbroker.broker.protocol.messages.sasl_handshake import SaslHandshakeRequest
from zkbroker.broker.security.cluster_security import Security
from zkbroker.broker.security.scram import ScramServer, credential_from_password
from zkbroker.broker.toolkit.wire import WireClient


def _client(address: str, ctx: ssl.SSLContext | None) -> WireClient:
    host, port = address.rsplit(":", 1)
    raw = socket.create_connection((host, int(port)), timeout=10)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client = WireClient.__new__(WireClient)
    client.sock = ctx.wrap_socket(raw, server_hostname=host) if ctx is not None else raw
    client.client_id = "bench"
    client._correlation = 0
    return client


def _login(client: WireClient, mechanism: str) -> None:
    client.request(3, ApiVersionsRequest(client_software_name="bench", client_software_version="1"))
    if mechanism == "NONE":
        return
    assert client.request(1, SaslHandshakeRequest(mechanism=mechanism)).error_code == 0
    if mechanism == "PLAIN":
        done = client.request(2, SaslAuthenticateRequest(auth_bytes=b"\0bench\0bench-secret"))
        assert done.error_code == 0
        return
    scram = scramp.ScramClient([mechanism], "bench", "bench-secret")
    first = client.request(2, SaslAuthenticateRequest(auth_bytes=scram.get_client_first().encode()))
    scram.set_server_first(first.auth_bytes.decode())
    final = client.request(2, SaslAuthenticateRequest(auth_bytes=scram.get_client_final().encode()))
    assert final.error_code == 0


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1000:7.3f} ms  p99 {p99 * 1000:7.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    configure_logging("warning", "console")
    security = Security(
        protocol="SASL_SSL",
        mechanisms=("SCRAM-SHA-512", "PLAIN"),
        users={"bench": "bench-secret"},
    )
    with Cluster(
        brokers=1,
        port=0,
        kafka_version="3.9",
        security=security,
        extra_listeners=(("PLAINTEXT", "127.0.0.1", 0),),
    ) as cluster:
        prepared = cluster.security
        assert prepared is not None
        ctx = prepared.ssl_context(client_certificate=False)
        secured, plain = cluster.bootstrap_servers, cluster.bootstrap_servers_of("PLAINTEXT")
        print(f"load average (1 min) before: {os.getloadavg()[0]:.2f}")
        print(f"connection to first answer, {args.connections} each:")
        for label, address, context, mechanism in (
            ("PLAINTEXT (baseline)", plain, None, "NONE"),
            ("SASL_SSL PLAIN", secured, ctx, "PLAIN"),
            ("SASL_SSL SCRAM-SHA-512", secured, ctx, "SCRAM-SHA-512"),
        ):
            samples = []
            for _ in range(args.connections):
                started = time.perf_counter()
                client = _client(address, context)
                _login(client, mechanism)
                samples.append(time.perf_counter() - started)
                client.close()
            print(f"  {label:24s} {_ms(samples)}")
        print(f"Metadata v12 round trips on one connection, {args.requests} each:")
        for label, address, context, mechanism in (
            ("PLAINTEXT (baseline)", plain, None, "NONE"),
            ("SASL_SSL (authenticated)", secured, ctx, "SCRAM-SHA-512"),
        ):
            client = _client(address, context)
            _login(client, mechanism)
            samples = []
            for _ in range(args.requests):
                started = time.perf_counter()
                client.request(12, MetadataRequest(topics=[]))
                samples.append(time.perf_counter() - started)
            client.close()
            print(f"  {label:24s} {_ms(samples)}")
        server_side = []
        credential = credential_from_password("SCRAM-SHA-512", "bench-secret", 4096)
        for _ in range(args.connections):
            scram = scramp.ScramClient(["SCRAM-SHA-512"], "bench", "bench-secret")
            first_message = scram.get_client_first().encode()
            started = time.perf_counter()
            server = ScramServer("SCRAM-SHA-512", {"bench": credential}.get)
            first = server.evaluate(first_message)
            spent = time.perf_counter() - started
            scram.set_server_first(first.decode())
            final_message = scram.get_client_final().encode()
            started = time.perf_counter()
            server.evaluate(final_message)
            server_side.append(spent + time.perf_counter() - started)
        print(f"  {'SCRAM-SHA-512, server part':24s} {_ms(server_side)}")
        print(f"load average (1 min) after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
