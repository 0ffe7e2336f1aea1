"""Several listeners per broker with their own security protocols (Kafka's `listeners`,
`listener.security.protocol.map`): each registered as an endpoint of /brokers/ids/<id>, each
answering Metadata with the brokers' addresses on that same listener, each with its own
authentication."""

from __future__ import annotations

import json

from kazoo.client import KazooClient

from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from zkbroker.broker.protocol.messages.sasl_handshake import SaslHandshakeRequest
from zkbroker.broker.security.jaas import plain_jaas_config
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.toolkit.zookeeper import ZooKeeperEndpoint, fresh_chroot


def test_two_listeners_per_broker(zk_test_zookeeper: ZooKeeperEndpoint) -> None:
    configs = (
        ("listener.security.protocol.map", "CLIENT:SASL_PLAINTEXT,INTERNAL:PLAINTEXT"),
        ("inter.broker.listener.name", "INTERNAL"),
        ("listener.name.client.sasl.enabled.mechanisms", "PLAIN"),
        ("listener.name.client.plain.sasl.jaas.config", plain_jaas_config({"u": "p"})),
    )
    with Cluster(
        brokers=2,
        port=0,
        listener_name="CLIENT",
        extra_listeners=(("INTERNAL", "127.0.0.1", 0),),
        broker_configs=configs,
        zookeeper=fresh_chroot(zk_test_zookeeper.connect_string),
    ) as cluster:
        client_ports = {b: h.port for b, h in cluster.brokers.items()}
        internal = cluster.bootstrap_servers_of("INTERNAL")
        internal_ports = {
            b: int(address.rsplit(":", 1)[1])
            for b, address in zip(sorted(cluster.brokers), internal.split(","), strict=True)
        }
        assert set(client_ports.values()).isdisjoint(internal_ports.values())

        zk = KazooClient(hosts=cluster.zookeeper_connect)
        zk.start(timeout=15)
        try:
            registration = json.loads(zk.get("/brokers/ids/1")[0])
        finally:
            zk.stop()
            zk.close()
        assert registration["endpoints"] == [
            f"CLIENT://127.0.0.1:{client_ports[1]}",
            f"INTERNAL://127.0.0.1:{internal_ports[1]}",
        ]
        assert registration["listener_security_protocol_map"] == {
            "CLIENT": "SASL_PLAINTEXT",
            "INTERNAL": "PLAINTEXT",
        }

        # PLAINTEXT listener: no authentication, brokers answered on INTERNAL ports.
        with WireClient.to(internal) as plain:
            answer = plain.request(9, MetadataRequest(topics=[]))
            assert {b.node_id: b.port for b in answer.brokers} == internal_ports
            refused = plain.request(1, SaslHandshakeRequest(mechanism="PLAIN"))
            assert refused.error_code == error_codes.ILLEGAL_SASL_STATE
        # SASL listener: authentication first, brokers answered on CLIENT ports.
        with WireClient.to(cluster.bootstrap_servers) as secured:
            assert secured.request(1, SaslHandshakeRequest(mechanism="PLAIN")).mechanisms == [
                "PLAIN"
            ]
            ok = secured.request(2, SaslAuthenticateRequest(auth_bytes=b"\0u\0p"))
            assert ok.error_code == error_codes.NONE
            answer = secured.request(9, MetadataRequest(topics=[]))
            assert {b.node_id: b.port for b in answer.brokers} == client_ports
        with WireClient.to(cluster.bootstrap_servers) as anonymous:
            _, data = anonymous.frame(3, 9, MetadataRequest(topics=[]))
            anonymous.send_raw(data)
            assert anonymous.is_closed_by_peer()

        # kafka-python on each listener, each with its own protocol.
        from kafka.admin import KafkaAdminClient

        for bootstrap, extra in (
            (internal, {}),
            (
                cluster.bootstrap_servers,
                {
                    "security_protocol": "SASL_PLAINTEXT",
                    "sasl_mechanism": "PLAIN",
                    "sasl_plain_username": "u",
                    "sasl_plain_password": "p",
                },
            ),
        ):
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, **extra)
            try:
                assert admin.list_topics() == []
            finally:
                admin.close()

        # A stopped and restarted broker comes back on the same ports of both listeners.
        cluster.brokers[1].stop()
        cluster.brokers[1].start()
        assert cluster.bootstrap_servers_of("INTERNAL") == internal
