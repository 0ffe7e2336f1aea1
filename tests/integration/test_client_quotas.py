"""Describe/AlterClientQuotas (KIP-546) over the wire against a real ZooKeeper: ZkAdminManager's
validations and messages, the znodes and change notifications in Kafka's format (so
`kafka-configs --zookeeper` and the API see each other's writes), and kafka-python's own codec
of the two messages talking to the broker."""

from __future__ import annotations

import json
import socket
import struct
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)
from zkbroker.broker.protocol.messages.describe_client_quotas import (
    ComponentData,
    DescribeClientQuotasRequest,
)
from zkbroker.broker.toolkit.wire import WireClient

EXACT, DEFAULT, ANY = 0, 1, 2


@pytest.fixture
def zk(zk_cluster: Cluster) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk_cluster.zookeeper_connect)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def tag() -> str:
    """A prefix no other test uses: the shared cluster keeps entities between tests."""
    return f"q{uuid.uuid4().hex[:8]}"


def _entity(**names: str | None) -> list[EntityData]:
    return [EntityData(entity_type=t.replace("_", "-"), entity_name=n) for t, n in names.items()]


def _set(key: str, value: float) -> OpData:
    return OpData(key=key, value=value, remove=False)


def _alter(cluster: Cluster, *entries: EntryData, validate_only: bool = False) -> list[Any]:
    with WireClient.to(cluster.bootstrap_servers) as client:
        answer = client.request(
            1, AlterClientQuotasRequest(entries=list(entries), validate_only=validate_only)
        )
    return [
        ({e.entity_type: e.entity_name for e in r.entity}, r.error_code, r.error_message)
        for r in answer.entries
    ]


def _describe(cluster: Cluster, *components: ComponentData, strict: bool = False) -> Any:
    with WireClient.to(cluster.bootstrap_servers) as client:
        return client.request(
            1, DescribeClientQuotasRequest(components=list(components), strict=strict)
        )


def _entries(answer: Any, tag: str) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    """Entries about this test's entities (defaults included), entity as sorted pairs."""
    out = {}
    for e in answer.entries:
        pairs = tuple(sorted((x.entity_type, x.entity_name) for x in e.entity))
        if all(n is None or n.startswith(tag) for _, n in pairs):
            out[pairs] = {v.key: v.value for v in e.values}
    return out


def _notes(zk: KazooClient) -> list[dict[str, Any]]:
    return [
        json.loads(zk.get(f"/config/changes/{c}")[0]) for c in zk.get_children("/config/changes")
    ]


def test_alter_writes_kafkas_znodes_and_describe_reads_them(
    zk_cluster: Cluster, zk: KazooClient, tag: str
) -> None:
    user, client = f"{tag}-alice@x", f"{tag} app"
    results = _alter(
        zk_cluster,
        EntryData(entity=_entity(user=user), ops=[_set("producer_byte_rate", 1024)]),
        EntryData(entity=_entity(client_id=client), ops=[_set("request_percentage", 50.5)]),
        EntryData(
            entity=_entity(user=user, client_id=client),
            ops=[_set("consumer_byte_rate", 1e7), _set("controller_mutation_rate", 10)],
        ),
    )
    assert [(code, message) for _, code, message in results] == [(0, None)] * 3
    # Names sanitized as Kafka's Sanitizer; LONG written as an integer, DOUBLE as Java prints.
    sanitized_user, sanitized_client = f"{tag}-alice%40x", f"{tag}%20app"
    node = json.loads(zk.get(f"/config/users/{sanitized_user}")[0])
    assert node == {"version": 1, "config": {"producer_byte_rate": "1024"}}
    node = json.loads(zk.get(f"/config/clients/{sanitized_client}")[0])
    assert node == {"version": 1, "config": {"request_percentage": "50.5"}}
    nested = f"/config/users/{sanitized_user}/clients/{sanitized_client}"
    assert json.loads(zk.get(nested)[0])["config"] == {
        "consumer_byte_rate": "10000000",
        "controller_mutation_rate": "10.0",
    }
    notes = _notes(zk)
    for path in (
        f"users/{sanitized_user}",
        f"clients/{sanitized_client}",
        f"users/{sanitized_user}/clients/{sanitized_client}",
    ):
        assert {"version": 2, "entity_path": path} in notes

    everything = _entries(_describe(zk_cluster), tag)
    assert everything == {
        (("user", user),): {"producer_byte_rate": 1024.0},
        (("client-id", client),): {"request_percentage": 50.5},
        (("client-id", client), ("user", user)): {
            "consumer_byte_rate": 1e7,
            "controller_mutation_rate": 10.0,
        },
    }
    # An exact user, not strict: the user alone and the user with any client.
    answer = _describe(zk_cluster, ComponentData(entity_type="user", match_type=EXACT, match=user))
    assert set(_entries(answer, tag)) == {
        (("user", user),),
        (("client-id", client), ("user", user)),
    }
    # Strict: only entities made of exactly the named types.
    answer = _describe(
        zk_cluster, ComponentData(entity_type="user", match_type=EXACT, match=user), strict=True
    )
    assert set(_entries(answer, tag)) == {(("user", user),)}
    answer = _describe(
        zk_cluster,
        ComponentData(entity_type="user", match_type=ANY, match=None),
        ComponentData(entity_type="client-id", match_type=EXACT, match=client),
        strict=True,
    )
    assert set(_entries(answer, tag)) == {(("client-id", client), ("user", user))}
    # The entity order inside an entry is Kafka's HashMap order of the type names.
    pair = next(e for e in answer.entries if len(e.entity) == 2)
    assert [x.entity_type for x in pair.entity] == ["client-id", "user"]

    # Removing the last key leaves the entity out of the answers.
    ops = [OpData(key="request_percentage", value=0.0, remove=True)]
    assert _alter(zk_cluster, EntryData(entity=_entity(client_id=client), ops=ops))[0][1] == 0
    assert (("client-id", client),) not in _entries(_describe(zk_cluster), tag)


def test_default_entities(zk_cluster: Cluster, zk: KazooClient, tag: str) -> None:
    user = f"{tag}-u"
    results = _alter(
        zk_cluster,
        EntryData(entity=_entity(user=None), ops=[_set("producer_byte_rate", 2048)]),
        EntryData(
            entity=_entity(user=user, client_id=None), ops=[_set("consumer_byte_rate", 4096)]
        ),
    )
    assert [code for _, code, _ in results] == [0, 0]
    assert json.loads(zk.get("/config/users/<default>")[0])["config"] == {
        "producer_byte_rate": "2048"
    }
    assert json.loads(zk.get(f"/config/users/{user}/clients/<default>")[0])["config"] == {
        "consumer_byte_rate": "4096"
    }
    answer = _describe(
        zk_cluster, ComponentData(entity_type="user", match_type=DEFAULT, match=None), strict=True
    )
    assert _entries(answer, tag) == {(("user", None),): {"producer_byte_rate": 2048.0}}
    answer = _describe(
        zk_cluster,
        ComponentData(entity_type="user", match_type=EXACT, match=user),
        ComponentData(entity_type="client-id", match_type=DEFAULT, match=None),
    )
    assert _entries(answer, tag) == {
        (("client-id", None), ("user", user)): {"consumer_byte_rate": 4096.0}
    }
    _alter(
        zk_cluster,
        EntryData(
            entity=_entity(user=None),
            ops=[OpData(key="producer_byte_rate", value=0, remove=True)],
        ),
    )


def test_alter_validations_and_messages(zk_cluster: Cluster, zk: KazooClient, tag: str) -> None:
    bad = f"{tag}-bad"
    results = _alter(
        zk_cluster,
        EntryData(entity=[], ops=[_set("producer_byte_rate", 1)]),
        EntryData(entity=_entity(group=bad), ops=[_set("producer_byte_rate", 1)]),
        EntryData(entity=_entity(user=""), ops=[_set("producer_byte_rate", 1)]),
        EntryData(entity=_entity(user=bad, ip="10.0.0.1"), ops=[]),
        EntryData(entity=_entity(ip=f"{tag}.invalid"), ops=[]),
        EntryData(entity=_entity(client_id=bad), ops=[_set("no_such_quota", 1)]),
        EntryData(entity=_entity(client_id=f"{bad}2"), ops=[_set("producer_byte_rate", 1.5)]),
        EntryData(entity=_entity(user=f"{bad}3"), ops=[_set("SCRAM-SHA-256", 1)]),
        EntryData(entity=_entity(ip="10.0.0.1"), ops=[_set("producer_byte_rate", 1)]),
    )
    invalid = error_codes.INVALID_REQUEST
    assert [(code, message) for _, code, message in results] == [
        (invalid, "Invalid empty client quota entity"),
        (invalid, "Unhandled client quota entity type: group"),
        (invalid, "Empty user not supported"),
        (
            invalid,
            "Invalid quota entity combination, IP entity should not be used with "
            "user/client ID entity.",
        ),
        (invalid, f"{tag}.invalid is not a valid IP or resolvable host."),
        (invalid, "Invalid configuration key no_such_quota"),
        (invalid, "Configuration producer_byte_rate must be a LONG value"),
        (error_codes.UNKNOWN_SERVER_ERROR, None),
        (invalid, "Invalid configuration key producer_byte_rate"),
    ]
    assert not any(n.startswith(tag) for n in zk.get_children("/config/users"))
    assert not any(n.startswith(tag) for n in zk.get_children("/config/clients"))


def test_validate_only_writes_nothing_and_ips(
    zk_cluster: Cluster, zk: KazooClient, tag: str
) -> None:
    client = f"{tag}-v"
    ops = [_set("producer_byte_rate", 100)]
    results = _alter(
        zk_cluster, EntryData(entity=_entity(client_id=client), ops=ops), validate_only=True
    )
    assert results == [({"client-id": client}, 0, None)]
    assert zk.exists(f"/config/clients/{client}") is None
    ip = "192.0.2.77"
    results = _alter(
        zk_cluster, EntryData(entity=_entity(ip=ip), ops=[_set("connection_creation_rate", 5)])
    )
    assert results == [({"ip": ip}, 0, None)]
    assert json.loads(zk.get(f"/config/ips/{ip}")[0])["config"] == {"connection_creation_rate": "5"}
    answer = _describe(zk_cluster, ComponentData(entity_type="ip", match_type=EXACT, match=ip))
    assert [
        ([(x.entity_type, x.entity_name) for x in e.entity], [(v.key, v.value) for v in e.values])
        for e in answer.entries
    ] == [([("ip", ip)], [("connection_creation_rate", 5.0)])]
    _alter(
        zk_cluster,
        EntryData(
            entity=_entity(ip=ip),
            ops=[OpData(key="connection_creation_rate", value=0, remove=True)],
        ),
    )


@pytest.mark.parametrize(
    ("components", "code", "message"),
    [
        (
            [("user", ANY, None), ("user", EXACT, "a")],
            error_codes.INVALID_REQUEST,
            "Duplicate user filter component entity type",
        ),
        (
            [("client-id", ANY, None), ("client-id", ANY, None)],
            error_codes.INVALID_REQUEST,
            "Duplicate client filter component entity type",
        ),
        (
            [("", ANY, None)],
            error_codes.INVALID_REQUEST,
            "Unexpected empty filter component entity type",
        ),
        (
            [("group", ANY, None)],
            error_codes.UNSUPPORTED_VERSION,
            "Custom entity type 'group' not supported",
        ),
        (
            [("ip", ANY, None), ("user", ANY, None)],
            error_codes.INVALID_REQUEST,
            "Invalid entity filter component combination, IP filter component should not be "
            "used with user or clientId filter component.",
        ),
        ([("user", 7, None)], error_codes.UNKNOWN_SERVER_ERROR, None),
    ],
)
def test_describe_filter_errors(
    zk_cluster: Cluster, components: list[tuple[str, int, str | None]], code: int, message: str
) -> None:
    answer = _describe(
        zk_cluster, *(ComponentData(entity_type=t, match_type=m, match=n) for t, m, n in components)
    )
    assert (answer.error_code, answer.error_message, answer.entries) == (code, message, None)


def _kafka_python_round_trip(bootstrap: str, request: Any, response_class: Any) -> Any:
    """One request encoded by kafka-python's own codec, its answer decoded by it."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    request.with_header(correlation_id=42, client_id="kafka-python")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        reader = sock.makefile("rb")
        size = struct.unpack(">i", reader.read(4))[0]
        body = reader.read(size)
    return response_class.decode(body, version=request.API_VERSION, header=True)


def test_kazoo_write_in_kafka_format_seen_by_kafka_python_codec(
    zk_cluster: Cluster, zk: KazooClient, tag: str
) -> None:
    from kafka.protocol.admin import (
        AlterClientQuotasRequest as KpAlter,
    )
    from kafka.protocol.admin import (
        AlterClientQuotasResponse as KpAlterResponse,
    )
    from kafka.protocol.admin import (
        DescribeClientQuotasRequest as KpDescribe,
    )
    from kafka.protocol.admin import (
        DescribeClientQuotasResponse as KpDescribeResponse,
    )

    # What `kafka-configs --zookeeper ... --alter --entity-type clients` writes.
    client = f"{tag}-zk"
    zk.create(
        f"/config/clients/{client}",
        json.dumps({"version": 1, "config": {"consumer_byte_rate": "777"}}).encode(),
        makepath=True,
    )
    zk.create(
        "/config/changes/config_change_",
        json.dumps({"version": 2, "entity_path": f"clients/{client}"}).encode(),
        sequence=True,
    )
    for version in (0, 1):
        request = KpDescribe[version](
            components=[
                KpDescribe.ComponentData(entity_type="client-id", match_type=0, match=client)
            ],
            strict=True,
        )
        answer = _kafka_python_round_trip(zk_cluster.bootstrap_servers, request, KpDescribeResponse)
        assert answer.error_code == 0
        assert [
            (
                [(e.entity_type, e.entity_name) for e in x.entity],
                [(v.key, v.value) for v in x.values],
            )
            for x in answer.entries
        ] == [([("client-id", client)], [("consumer_byte_rate", 777.0)])]

    request = KpAlter[1](
        entries=[
            KpAlter.EntryData(
                entity=[KpAlter.EntryData.EntityData(entity_type="client-id", entity_name=client)],
                ops=[KpAlter.EntryData.OpData(key="producer_byte_rate", value=99.0, remove=False)],
            )
        ],
        validate_only=False,
    )
    answer = _kafka_python_round_trip(zk_cluster.bootstrap_servers, request, KpAlterResponse)
    assert [(x.error_code, x.error_message) for x in answer.entries] == [(0, None)]
    assert json.loads(zk.get(f"/config/clients/{client}")[0])["config"] == {
        "consumer_byte_rate": "777",
        "producer_byte_rate": "99",
    }


def test_release_26_has_no_ip_entity(cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(brokers=1, kafka_version="2.6")
    with WireClient.to(cluster.bootstrap_servers) as client:
        answer = client.request(
            0,
            DescribeClientQuotasRequest(
                components=[ComponentData(entity_type="ip", match_type=ANY, match=None)]
            ),
        )
        assert (answer.error_code, answer.error_message) == (
            error_codes.UNSUPPORTED_VERSION,
            "Custom entity type 'ip' not supported",
        )
        answer = client.request(
            0,
            AlterClientQuotasRequest(
                entries=[
                    EntryData(entity=_entity(ip="10.1.1.1"), ops=[]),
                    EntryData(entity=_entity(user="u"), ops=[_set("controller_mutation_rate", 1)]),
                ]
            ),
        )
        assert [(e.error_code, e.error_message) for e in answer.entries] == [
            (error_codes.INVALID_REQUEST, "Unhandled client quota entity type: ip"),
            (error_codes.INVALID_REQUEST, "Invalid configuration key controller_mutation_rate"),
        ]
