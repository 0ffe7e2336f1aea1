"""A small asyncio Kafka client the transaction coordinator uses to reach other brokers.

Kafka's coordinator talks to partition leaders over the inter-broker listener: WriteTxnMarkers
(``TransactionMarkerChannelManager``) and, for KIP-890 part 1 produce verification, a leader
asks the coordinator with AddPartitionsToTxn v4 ``verify_only`` (``AddPartitionsToTxnManager``).
This module sends one request and reads its answer on a fresh connection per call, with a
deadline; connection failures raise `PeerUnavailable` so the caller retries with backoff.

Deliberately not here: TLS or SASL towards a peer (the inter-broker listener is assumed to be
PLAINTEXT; a secured one is a known gap), connection pooling, and retry policy (the callers'),
which brokers lead what (the metadata image's).
"""

from __future__ import annotations

import asyncio
import itertools
import struct
from typing import Any

from broker.image.metadata_image import MetadataImage
from broker.protocol import RequestHeader, decode_response, encode_request

_CLIENT_ID = "zkbroker-txn-coordinator"
_TIMEOUT_S = 10.0
_correlations = itertools.count(1)


class PeerUnavailable(Exception):
    """The broker could not be reached or answered nothing usable."""


def endpoint_of(image: MetadataImage, broker_id: int, listener: str) -> tuple[str, int] | None:
    """The broker's endpoint on `listener` (the inter-broker one), else a PLAINTEXT one, else
    its first (None if the broker is unknown). A null host (all interfaces) is this host."""
    info = image.brokers.get(broker_id)
    if info is None or not info.endpoints:
        return None
    chosen = next(
        (e for e in info.endpoints if e.listener == listener),
        next((e for e in info.endpoints if e.security_protocol == "PLAINTEXT"), info.endpoints[0]),
    )
    return chosen.host or "127.0.0.1", chosen.port


async def send(host: str, port: int, version: int, body: Any) -> Any:
    """Send `body` at `version` and return the decoded response."""
    correlation = next(_correlations) & 0x7FFFFFFF
    header = RequestHeader(
        api_key=body.API_KEY,
        api_version=version,
        correlation_id=correlation,
        client_id=_CLIENT_ID,
    )
    payload = encode_request(header, body)
    try:
        async with asyncio.timeout(_TIMEOUT_S):
            reader, writer = await asyncio.open_connection(host, port)
            try:
                writer.write(struct.pack(">i", len(payload)) + payload)
                await writer.drain()
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
            finally:
                writer.close()
    except (OSError, TimeoutError, asyncio.IncompleteReadError) as e:
        raise PeerUnavailable(f"{host}:{port}: {e!r}") from e
    got, response = decode_response(body.API_KEY, version, frame)
    if got != correlation:
        raise PeerUnavailable(f"{host}:{port}: correlation id {got} != {correlation}")
    return response
