"""Describe/AlterUserScramCredentials (KIP-554) over the wire on the shared cluster, with
ZkAdminManager's validations and error codes, the znode written in Kafka's format, kafka-python's
admin client, and `zkbroker user add` writing a user a running cluster then accepts."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from zkbroker import Cluster
from zkbroker.broker.cli.main import main
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from zkbroker.broker.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    UserName,
)
from zkbroker.broker.security.scram import ScramCredential, salted_password
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.toolkit.zookeeper import ZooKeeperEndpoint, fresh_chroot

SHA256, SHA512 = 1, 2


@pytest.fixture
def zk(zk_cluster: Cluster) -> Iterator[KazooClient]:
    """Plain kazoo on the shared cluster's chroot."""
    client = KazooClient(hosts=zk_cluster.zookeeper_connect)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def _upsert(name: str, mechanism: int = SHA256, iterations: int = 4096) -> ScramCredentialUpsertion:
    salt = b"salt-" + name.encode()
    mech = "SCRAM-SHA-512" if mechanism == SHA512 else "SCRAM-SHA-256"
    salted = salted_password(mech, "pw", salt, 4096) if mechanism in (1, 2) else b"x"
    return ScramCredentialUpsertion(
        name=name, mechanism=mechanism, iterations=iterations, salt=salt, salted_password=salted
    )


def _client_to(cluster: Cluster, controller: bool) -> WireClient:
    for broker_id, handle in cluster.brokers.items():
        if (broker_id == cluster.controller_id) == controller:
            return WireClient(handle.host, handle.port)
    raise AssertionError("no such broker")


def _results(answer: Any) -> list[tuple[str, int, str | None]]:
    return [(r.user, r.error_code, r.error_message) for r in answer.results]


def test_alter_validations_in_kafkas_order(zk_cluster: Cluster, zk: KazooClient) -> None:
    with _client_to(zk_cluster, controller=True) as client:
        answer = client.request(
            0,
            AlterUserScramCredentialsRequest(
                upsertions=[
                    _upsert(""),
                    _upsert("unknown-mech", mechanism=3),
                    _upsert("few", iterations=4095),
                    _upsert("many", iterations=16385),
                    _upsert("twice"),
                    _upsert("twice"),
                    _upsert("ok", SHA512, 8192),
                ],
                deletions=[
                    ScramCredentialDeletion(name="ghost", mechanism=SHA256),
                    ScramCredentialDeletion(name="unknown-del", mechanism=0),
                ],
            ),
        )
    results = {user: (code, message) for user, code, message in _results(answer)}
    assert results == {
        "": (error_codes.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "unknown-mech": (error_codes.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "unknown-del": (error_codes.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "few": (error_codes.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "many": (error_codes.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "twice": (
            error_codes.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        ),
        "ghost": (
            error_codes.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        ),
        "ok": (error_codes.NONE, None),
    }
    # Only "ok" was written, in Kafka's format, with a notification naming it.
    users = set(zk.get_children("/config/users"))
    assert "ok" in users
    assert users.isdisjoint({"unknown-mech", "few", "many", "twice", "ghost", "unknown-del"})
    node = json.loads(zk.get("/config/users/ok")[0])
    assert node["version"] == 1 and list(node["config"]) == ["SCRAM-SHA-512"]
    credential = ScramCredential.from_text(node["config"]["SCRAM-SHA-512"])
    assert (credential.salt, credential.iterations) == (b"salt-ok", 8192)
    notes = [
        json.loads(zk.get(f"/config/changes/{c}")[0]) for c in zk.get_children("/config/changes")
    ]
    assert {"version": 2, "entity_path": "users/ok"} in notes


def test_alter_on_a_broker_that_is_not_the_controller(zk_cluster: Cluster) -> None:
    with _client_to(zk_cluster, controller=False) as client:
        answer = client.request(
            0, AlterUserScramCredentialsRequest(upsertions=[_upsert("a"), _upsert("b")])
        )
    assert [(u, c) for u, c, _ in _results(answer)] == [
        ("a", error_codes.NOT_CONTROLLER),
        ("b", error_codes.NOT_CONTROLLER),
    ]


def test_describe(zk_cluster: Cluster, zk: KazooClient) -> None:
    zk.create(
        "/config/users/quota-only",
        json.dumps({"version": 1, "config": {"producer_byte_rate": "1024"}}).encode(),
        makepath=True,
    )
    with _client_to(zk_cluster, controller=True) as client:
        altered = client.request(
            0,
            AlterUserScramCredentialsRequest(
                upsertions=[_upsert("zed", SHA512), _upsert("amy"), _upsert("amy", SHA512)]
            ),
        )
        assert {c for _, c, _ in _results(altered)} == {error_codes.NONE}
        everyone = client.request(0, DescribeUserScramCredentialsRequest(users=None))
        assert [
            (r.user, [(c.mechanism, c.iterations) for c in r.credential_infos])
            for r in everyone.results
        ] == [("amy", [(SHA256, 4096), (SHA512, 4096)]), ("zed", [(SHA512, 4096)])]
        named = client.request(
            0,
            DescribeUserScramCredentialsRequest(
                users=[UserName(n) for n in ("zed", "", "nobody", "dup", "dup", "quota-only")]
            ),
        )
    assert _results(named) == [
        ("zed", error_codes.NONE, None),
        ("", error_codes.RESOURCE_NOT_FOUND, "Username must not be empty"),
        (
            "nobody",
            error_codes.RESOURCE_NOT_FOUND,
            "Attempt to describe a user credential that does not exist: nobody",
        ),
        (
            "dup",
            error_codes.DUPLICATE_RESOURCE,
            "Cannot describe SCRAM credentials for the same user twice in a single request: dup",
        ),
        (
            "quota-only",
            error_codes.RESOURCE_NOT_FOUND,
            "Attempt to describe a user credential that does not exist: quota-only",
        ),
    ]


def test_kafka_python_admin_alters_and_describes(cluster_factory: Callable[..., Cluster]) -> None:
    from kafka.admin import KafkaAdminClient, ScramMechanism, UserScramCredentialUpsertion

    # One broker: kafka-python sends AlterUserScramCredentials to any broker, and a ZooKeeper
    # broker other than the controller answers NOT_CONTROLLER (as above).
    single = cluster_factory(brokers=1)
    admin = KafkaAdminClient(bootstrap_servers=single.bootstrap_servers)
    try:
        errors = admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion("kp", ScramMechanism.SCRAM_SHA_512, "kp-pw", 8192),
                UserScramCredentialUpsertion("weak", ScramMechanism.SCRAM_SHA_256, "pw", 100),
            ]
        )
        assert errors["kp"] is None
        assert "Too few iterations" in str(errors["weak"])
        described = admin.describe_user_scram_credentials(["kp"])
        infos = described["kp"]["credential_infos"]
        assert [(int(i["mechanism"]), i["iterations"]) for i in infos] == [(SHA512, 8192)]
    finally:
        admin.close()


def test_user_add_command_then_login(zk_test_zookeeper: ZooKeeperEndpoint, capsys: Any) -> None:
    from zkbroker.broker.security.cluster_security import Security

    zookeeper = fresh_chroot(zk_test_zookeeper.connect_string)
    code = main(
        [
            "user",
            "add",
            "gina",
            "--password",
            "gina-pw",
            "--mechanism",
            "SCRAM-SHA-256",
            "--zookeeper",
            zookeeper,
        ]
    )
    assert code == 0
    assert capsys.readouterr().out.strip() == "user gina: SCRAM-SHA-256"
    security = Security(protocol="SASL_PLAINTEXT", mechanisms=("SCRAM-SHA-256",), users={})
    from confluent_kafka.admin import AdminClient

    with Cluster(brokers=1, port=0, zookeeper=zookeeper, security=security) as cluster:
        prepared = cluster.security
        assert prepared is not None
        conf = {
            "bootstrap.servers": cluster.bootstrap_servers,
            **prepared.client_config("confluent", "gina", password="gina-pw"),
        }
        assert list(AdminClient(conf).list_topics(timeout=15).brokers) == [0]
