"""Per-listener advertised.listeners (`--advertised-listener NAME://HOST:PORT`): what each
listener's clients are told in Metadata, and what /brokers/ids holds, as a Kafka broker with
`advertised.listeners` writes and answers it."""

from __future__ import annotations

import json
from collections.abc import Callable

from kazoo.client import KazooClient

from zkbroker import Cluster
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.toolkit.wire import WireClient


def _metadata_hosts(bootstrap: str) -> list[tuple[int, str, int]]:
    with WireClient.to(bootstrap) as client:
        answer = client.request(9, MetadataRequest(topics=[]))
    return sorted((b.node_id, b.host, b.port) for b in answer.brokers)


def test_each_listener_answers_its_advertised_address(
    cluster_factory: Callable[..., Cluster], kazoo: KazooClient
) -> None:
    cluster = cluster_factory(
        broker_ids=(0, 1),
        listener_name="INTERNAL",
        extra_listeners=(("EXTERNAL", "127.0.0.1", 0),),
        broker_configs=(
            ("listener.security.protocol.map", "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"),
        ),
        advertised_listeners=(("INTERNAL", "127.0.0.1", 0), ("EXTERNAL", "edge.example", 29092)),
    )
    internal = cluster.bootstrap_servers.split(",")
    internal_ports = [int(a.rsplit(":", 1)[1]) for a in internal]
    assert _metadata_hosts(internal[0]) == [
        (0, "127.0.0.1", internal_ports[0]),
        (1, "127.0.0.1", internal_ports[1]),
    ]
    external_port = cluster.engine.brokers[1].ports["EXTERNAL"]  # bound, not advertised
    # Broker i advertises PORT + i on EXTERNAL, whatever port it bound.
    assert _metadata_hosts(f"127.0.0.1:{external_port}") == [
        (0, "edge.example", 29092),
        (1, "edge.example", 29093),
    ]
    registration = json.loads(kazoo.get("/brokers/ids/1")[0])
    assert registration["endpoints"] == [
        f"INTERNAL://127.0.0.1:{internal_ports[1]}",
        "EXTERNAL://edge.example:29093",
    ]
    assert (registration["host"], registration["port"]) == ("127.0.0.1", internal_ports[1])
