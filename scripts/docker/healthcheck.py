"""The image's HEALTHCHECK: healthy when a broker of this container answers a Kafka request.

On the INTERNAL listener (PLAINTEXT) when there is one: a Metadata request, healthy when it
lists $ZKBROKER_BROKERS brokers. Without it, on the EXTERNAL listener: ApiVersions (answered
before SASL authentication), over TLS without verifying the certificate for SSL/SASL_SSL.
Reads the same ZKBROKER_* variables as the entrypoint; does not follow listeners given as
`zkbroker run` arguments (give the container a healthcheck of its own then).
"""

from __future__ import annotations

import os
import ssl
import sys

from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.toolkit.wire import WireClient

TIMEOUT_S = 2.0


def main() -> int:
    host = os.environ.get("ZKBROKER_LISTEN_HOST", "0.0.0.0")
    host = "127.0.0.1" if host in ("0.0.0.0", "") else host
    brokers = int(os.environ.get("ZKBROKER_BROKERS", "3"))
    internal = os.environ.get("ZKBROKER_INTERNAL_PORT", "29092")
    try:
        if internal and internal != "none":
            with WireClient(host, int(internal), client_id="zkbroker-healthcheck") as client:
                client.sock.settimeout(TIMEOUT_S)
                answer = client.request(1, MetadataRequest(topics=[]))
            if len(answer.brokers) < brokers:
                print(f"{len(answer.brokers)} of {brokers} brokers registered", file=sys.stderr)
                return 1
            return 0
        port = int(os.environ.get("ZKBROKER_PORT", "9092"))
        protocol = os.environ.get("ZKBROKER_EXTERNAL_PROTOCOL", "PLAINTEXT")
        with WireClient(host, port, client_id="zkbroker-healthcheck") as client:
            client.sock.settimeout(TIMEOUT_S)
            if protocol.endswith("SSL"):
                context = ssl.create_default_context()
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
                client.sock = context.wrap_socket(client.sock, server_hostname=host)
            answer = client.request(0, ApiVersionsRequest())
        return 0 if answer.error_code == 0 else 1
    except Exception as exc:  # refused, timed out, closed, undecodable: all unhealthy
        print(f"no answer: {exc!r}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
