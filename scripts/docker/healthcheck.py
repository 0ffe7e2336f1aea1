"""The image's HEALTHCHECK: healthy when this container's server answers.

In a Confluent or Bitnami role (/etc/confluent/docker/configure recorded it in
/etc/kafka/zkbroker-role; testcontainers' start scripts run configure too):
- kafka: a Metadata request to the broker's own listener from /etc/kafka/kafka.properties (the
  first PLAINTEXT one, else the first, with ApiVersions, over TLS without verification for
  SSL/SASL_SSL), healthy when it lists the broker (its broker.id);
- zookeeper: `ruok` answered `imok` on clientPort of /etc/kafka/zookeeper.properties (`srvr`
  when ruok is not in the 4lw whitelist); only a TCP connection with secureClientPort alone.

Otherwise, the ZKBROKER_* cluster of the entrypoint: on the INTERNAL listener (PLAINTEXT) when
there is one, a Metadata request, healthy when it lists $ZKBROKER_BROKERS brokers; without it,
on the EXTERNAL listener, ApiVersions (answered before SASL authentication), over TLS for
SSL/SASL_SSL. It reads the entrypoint's variables and does not follow listeners given as
`zkbroker run` arguments (give the container a healthcheck of its own then).
"""

from __future__ import annotations

import os
import socket
import ssl
import struct
import sys
from pathlib import Path

TIMEOUT_S = 2.0
ROLE_FILE = Path("/etc/kafka/zkbroker-role")
KAFKA_PROPERTIES = Path("/etc/kafka/kafka.properties")
ZOOKEEPER_PROPERTIES = Path("/etc/kafka/zookeeper.properties")
_WILDCARDS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "::1"}


def _properties(path: Path) -> dict[str, str]:
    from zkbroker.broker.jvm.properties import parse_properties

    text = path.read_bytes().decode("iso-8859-1")
    return {key: value for key, value, _ in parse_properties(text, str(path))}


def _local(host: str) -> str:
    """Where to reach a listener bound to `host` from inside the container."""
    host = _WILDCARDS.get(host, host)
    return host[1:-1] if host.startswith("[") else host


def _kafka_listener(props: dict[str, str]) -> tuple[str, int, str]:
    """(host, port, security protocol) of the listener to ask: the first PLAINTEXT one."""
    protocols = dict(
        item.split(":", 1)
        for item in props.get("listener.security.protocol.map", "").split(",")
        if ":" in item
    )
    listeners = []
    entries = [entry.strip() for entry in props.get("listeners", "PLAINTEXT://:9092").split(",")]
    for entry in filter(None, entries):  # a trailing comma leaves an empty one
        name, _, address = entry.partition("://")
        host, _, port = address.rpartition(":")
        listeners.append((_local(host), int(port), protocols.get(name, name).upper()))
    return next((item for item in listeners if item[2] == "PLAINTEXT"), listeners[0])


def _receive(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("connection closed")
        data += chunk
    return data


def metadata_broker_ids(host: str, port: int) -> set[int]:
    """The node ids of a Metadata v1 answer (every release from 0.10.0 serves v1), encoded
    here rather than with zkbroker's codec: importing the messages costs 0.2 s of CPU, every
    interval of the container's life."""
    client_id = b"zkbroker-healthcheck"
    # Request header v1 (api key 3 Metadata, version 1, correlation id 1, client id), then an
    # empty topic array: no topics (v1+; a null array would ask for all of them).
    request = struct.pack(">hhih", 3, 1, 1, len(client_id)) + client_id + struct.pack(">i", 0)
    with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        (size,) = struct.unpack(">i", _receive(sock, 4))
        answer = _receive(sock, size)
    # Correlation id, then the brokers: [node_id int32, host string, port int32, rack string].
    (count,) = struct.unpack_from(">i", answer, 4)
    offset, ids = 8, set()
    for _ in range(count):
        node_id, host_size = struct.unpack_from(">ih", answer, offset)
        offset += 6 + host_size + 4
        (rack_size,) = struct.unpack_from(">h", answer, offset)
        offset += 2 + max(rack_size, 0)
        ids.add(node_id)
    return ids


def check_kafka_role() -> int:
    props = _properties(KAFKA_PROPERTIES)
    host, port, protocol = _kafka_listener(props)
    if protocol != "PLAINTEXT":
        from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest

        return _api_versions(host, port, protocol, ApiVersionsRequest())
    ids = metadata_broker_ids(host, port)
    own = int(props.get("broker.id", "-1") or -1)
    if (own >= 0 and own not in ids) or not ids:
        print(f"broker {own} is not registered yet (brokers: {sorted(ids)})", file=sys.stderr)
        return 1
    return 0


def _four_letters(host: str, port: int, word: bytes) -> bytes:
    with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
        sock.sendall(word)
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks)


def check_zookeeper_role() -> int:
    props = _properties(ZOOKEEPER_PROPERTIES)
    host = _local(props.get("clientPortAddress", ""))
    if "clientPort" not in props:
        secure = int(props.get("secureClientPort", "2182"))
        socket.create_connection((host, secure), timeout=TIMEOUT_S).close()
        return 0
    port = int(props["clientPort"])
    answer = _four_letters(host, port, b"ruok")
    if answer == b"imok":
        return 0
    # ZooKeeper 3.5+ answers only the 4lw commands of 4lw.commands.whitelist (srvr by default).
    status = _four_letters(host, port, b"srvr")
    if b"Mode:" in status:
        return 0
    print(f"ZooKeeper not serving: {(answer or status).decode(errors='replace')}", file=sys.stderr)
    return 1


def _api_versions(host: str, port: int, protocol: str, request: object) -> int:
    from zkbroker.broker.toolkit.wire import WireClient

    with WireClient(host, port, client_id="zkbroker-healthcheck") as client:
        client.sock.settimeout(TIMEOUT_S)
        if protocol.endswith("SSL"):
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            client.sock = context.wrap_socket(client.sock, server_hostname=host)
        answer = client.request(0, request)
    return 0 if answer.error_code == 0 else 1


def check_zkbroker_cluster() -> int:
    from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
    from zkbroker.broker.protocol.messages.metadata import MetadataRequest
    from zkbroker.broker.toolkit.wire import WireClient

    host = _local(os.environ.get("ZKBROKER_LISTEN_HOST", "0.0.0.0"))
    brokers = int(os.environ.get("ZKBROKER_BROKERS", "3"))
    internal = os.environ.get("ZKBROKER_INTERNAL_PORT", "29092")
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
    return _api_versions(host, port, protocol, ApiVersionsRequest())


def main() -> int:
    role = ROLE_FILE.read_text().strip() if ROLE_FILE.exists() else ""
    check = {"kafka": check_kafka_role, "zookeeper": check_zookeeper_role}.get(
        role, check_zkbroker_cluster
    )
    try:
        return check()
    except Exception as exc:  # refused, timed out, closed, undecodable: all unhealthy
        print(f"no answer: {exc!r}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
