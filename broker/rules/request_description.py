"""How a Kafka broker prints a request (`RequestChannel.Request.toString`), for the text of
ClusterAuthorizationException ("Request $request is not authorized.").

The formats per release (1.0+, 2.8+'s `envelope`, 0.10/0.11's case-class text), the buffer
Kafka keeps for some APIs, connection ids and processor numbering are in
docs/kafka-behaviour.md §21, "ClusterAuthorizationException's text". `processor_of`
reproduces the round-robin numbering from the order connections were accepted.

Not here: reading sockets or settings (the listener passes what it knows), and dynamic changes
of `num.network.threads` (the numbering assumes the count a connection was accepted with).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.zk_layout.release import Release

# Forwardable APIs that can answer a ClusterAuthorizationException with a message, by release
# they became forwardable (ApiKeys' `forwardable` flag, the API key table's `forwardable`
# column for 3.9; a test checks each is forwardable there): their buffer outlives parsing.
RETAINED_SINCE: Mapping[int, Release] = MappingProxyType(
    {
        ApiKey.CREATE_ACLS: (2, 8),
        ApiKey.DELETE_ACLS: (2, 8),
        ApiKey.ALTER_PARTITION_REASSIGNMENTS: (2, 8),
        ApiKey.LIST_PARTITION_REASSIGNMENTS: (3, 0),
        ApiKey.ALLOCATE_PRODUCER_IDS: (3, 0),
    }
)


@functools.lru_cache(maxsize=4096)
def java_host_address(text: str) -> str:
    """``InetAddress.getHostAddress``: IPv4 as is; IPv6 as eight hexadecimal groups without
    leading zeros and without ``::`` compression (an IPv4-mapped address is accepted as IPv4);
    anything else as given."""
    host, _, scope = text.partition("%")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return text
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        groups = ":".join(format(int(g, 16), "x") for g in address.exploded.split(":"))
        return f"{groups}%{scope}" if scope else groups
    return str(address)


@dataclass(frozen=True)
class ConnectionSlot:
    """Where Kafka's Acceptor would have put a connection: its processor and that processor's
    connection index."""

    processor: int
    index: int


def processor_of(accepted: int, listener_index: int, network_threads: int) -> ConnectionSlot:
    """The slot of the `accepted`-th (from 0) connection a listener admitted."""
    threads = max(1, network_threads)
    return ConnectionSlot(listener_index * threads + accepted % threads, accepted // threads)


def connection_id(
    release: Release, local: tuple[str, int], remote: tuple[str, int], index: int
) -> str:
    """SocketServer's ConnectionId text."""
    text = f"{java_host_address(local[0])}:{local[1]}-{java_host_address(remote[0])}:{remote[1]}"
    return f"{text}-{index}" if release >= (1, 0) else text


@dataclass(frozen=True)
class RequestFacts:
    """What RequestChannel.Request.toString prints."""

    processor: int
    connection_id: str
    principal: str
    client_host: str
    listener_name: str
    security_protocol: str
    api_key: int
    size: int
    received_ms: int = 0
    received_ns: int = 0


def request_text(release: Release, r: RequestFacts) -> str:
    session = f"Session({r.principal},/{java_host_address(r.client_host)})"
    listener = f"ListenerName({r.listener_name})"
    if release < (1, 0):
        start = r.received_ns if release >= (0, 11) else r.received_ms
        named = f",{listener}" if release >= (0, 10, 2) else ""
        return (
            f"Request({r.processor},{r.connection_id},{session},null,{start}"
            f"{named},{r.security_protocol})"
        )
    since = RETAINED_SINCE.get(r.api_key)
    retained = since is not None and release >= since
    buffer = (
        f"java.nio.HeapByteBuffer[pos={r.size} lim={r.size} cap={r.size}]" if retained else "null"
    )
    text = (
        f"Request(processor={r.processor}, connectionId={r.connection_id}, session={session}, "
        f"listenerName={listener}, securityProtocol={r.security_protocol}, buffer={buffer}"
    )
    return f"{text}, envelope=None)" if release >= (2, 8) else f"{text})"


def not_authorized_message(release: Release, r: RequestFacts) -> str:
    """ClusterAuthorizationException's message for a request refused on the cluster."""
    return f"Request {request_text(release, r)} is not authorized."
