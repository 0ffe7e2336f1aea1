"""ZooKeeper ACLs on what zkbroker writes (Kafka's zookeeper.set.acl, ZkData.defaultAcls), read
back with plain kazoo; clients without the cluster's digest cannot alter its znodes; a wrong
digest refuses start; the embedded ZooKeeper answers only the four-letter words zkbroker uses."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id, Permissions, make_digest_acl_credential

from zkbroker import Cluster
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper
from zkbroker.broker.zookeeper.network import send_four_letter_word
from zkbroker.zk_layout.store.auth import ZkAuthError

DIGEST = "kafka:kafka-zk-secret"
OWNER = ("digest", make_digest_acl_credential("kafka", "kafka-zk-secret"))
WORLD = ("world", "anyone")


def _acl_set(acls: list[ACL]) -> set[tuple[int, str, str]]:
    return {(a.perms, a.id.scheme, a.id.id) for a in acls}


CREATOR_AND_READ = {(Permissions.ALL, *OWNER), (Permissions.READ, *WORLD)}
CREATOR_ONLY = {(Permissions.ALL, *OWNER)}
OPEN = {(Permissions.ALL, *WORLD)}


@pytest.fixture
def secure_connect(zk_connect: str) -> Iterator[str]:
    """A chroot that zkbroker itself creates (so it gets ACLs too), removed with the digest."""
    connect = zk_connect + "/secure"
    yield connect
    hosts, _, chroot = zk_connect.partition("/")
    admin = KazooClient(hosts=hosts, auth_data=[("digest", DIGEST)])
    admin.start(timeout=15)
    with contextlib.suppress(Exception):
        admin.delete(f"/{chroot}/secure", recursive=True)
    admin.stop()
    admin.close()


@pytest.fixture
def secure_cluster(zk_cluster_factory: Callable[..., Cluster], secure_connect: str) -> Cluster:
    return zk_cluster_factory(
        brokers=1,
        kafka_version="3.9",
        zookeeper=secure_connect,
        zookeeper_set_acl=True,
        zookeeper_digest=DIGEST,
        broker_configs=(("delegation.token.secret.key", "token-secret"),),
    )


def _anonymous(connect: str, auth: str | None = None) -> KazooClient:
    client = KazooClient(hosts=connect, auth_data=[("digest", auth)] if auth else None)
    client.start(timeout=15)
    return client


def test_znodes_get_kafkas_acls(secure_cluster: Cluster, secure_connect: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=secure_cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("acl-topic", 1, 1)])
    finally:
        admin.close()
    # Read with the cluster's digest: ZooKeeper (3.6+) redacts a digest ACL's hash to
    # "user:x" for a reader without ADMIN permission.
    zk = _anonymous(secure_connect, DIGEST)
    hosts, _, chroot = secure_connect.partition("/")
    root = _anonymous(hosts, DIGEST)
    outsider = _anonymous(secure_connect)
    try:
        # The chroot zkbroker created, the persistent paths, ephemerals, multis' creates,
        # sequential notifications: CREATOR_ALL_ACL + READ_ACL_UNSAFE.
        assert _acl_set(root.get_acls("/" + chroot)[0]) == CREATOR_AND_READ
        for path in (
            "/brokers",
            "/brokers/ids",
            "/brokers/ids/0",
            "/brokers/topics/acl-topic",
            "/brokers/topics/acl-topic/partitions/0/state",
            "/config/topics",
            "/config/topics/acl-topic",
            "/controller",
            "/controller_epoch",
            "/cluster/id",
            "/admin/delete_topics",
            "/config/changes",
            "/delegation_token",
            "/delegation_token/token_changes",
        ):
            assert _acl_set(zk.get_acls(path)[0]) == CREATOR_AND_READ, path
        # ZkData.sensitivePath: credentials, broker configs and tokens are not world-readable.
        for path in ("/config/users", "/config/brokers", "/delegation_token/tokens"):
            assert _acl_set(zk.get_acls(path)[0]) == CREATOR_ONLY, path
        # The old consumers' root stays open for consumers of any identity.
        assert _acl_set(zk.get_acls("/consumers")[0]) == OPEN
        # World-readable: any client still sees the cluster's layout, not the credentials.
        assert outsider.get("/brokers/ids/0")[0]
        assert _acl_set(outsider.get_acls("/brokers")[0]) == {
            (Permissions.ALL, "digest", "kafka:x"),
            (Permissions.READ, *WORLD),
        }
        with pytest.raises(NoAuthError):
            outsider.get_children("/config/users")
    finally:
        outsider.stop()
        outsider.close()
        zk.stop()
        zk.close()
        root.stop()
        root.close()


@pytest.mark.parametrize("auth", [None, "kafka:wrong-password", "intruder:x"])
def test_clients_without_the_digest_cannot_alter_znodes(
    secure_cluster: Cluster, secure_connect: str, auth: str | None
) -> None:
    zk = _anonymous(secure_connect, auth)
    try:
        with pytest.raises(NoAuthError):
            zk.set("/brokers/ids/0", b"{}")
        with pytest.raises(NoAuthError):
            zk.create("/brokers/ids/77", b"{}", ephemeral=True)
        with pytest.raises(NoAuthError):
            zk.create("/admin/delete_topics/__consumer_offsets", b"")
        with pytest.raises(NoAuthError):
            zk.delete("/controller")
        with pytest.raises(NoAuthError):
            zk.get_children("/config/users")
        with pytest.raises(NoAuthError):
            zk.set_acls("/brokers", [ACL(Permissions.ALL, Id("world", "anyone"))])
        assert zk.exists("/controller") is not None
    finally:
        zk.stop()
        zk.close()


@pytest.mark.parametrize("digest", [None, "kafka:wrong-password"])
def test_start_is_refused_without_the_clusters_digest(
    secure_cluster: Cluster,
    secure_connect: str,
    zk_cluster_factory: Callable[..., Cluster],
    digest: str | None,
) -> None:
    with pytest.raises(ZkAuthError, match="cannot write it; give the credentials"):
        zk_cluster_factory(broker_ids=(5,), zookeeper=secure_connect, zookeeper_digest=digest)
    # A second process with the right digest joins the cluster.
    other = zk_cluster_factory(
        broker_ids=(6,), zookeeper=secure_connect, zookeeper_set_acl=True, zookeeper_digest=DIGEST
    )
    assert other.brokers[6].running


def test_set_acl_without_credentials_is_refused() -> None:
    with pytest.raises(ValueError, match=r"zookeeper\.set\.acl is true, but no ZooKeeper"):
        Cluster(brokers=1, zookeeper_set_acl=True)


def test_describe_configs_shows_zookeeper_set_acl(secure_cluster: Cluster) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

    admin = AdminClient({"bootstrap.servers": secure_cluster.bootstrap_servers})
    resource = ConfigResource(ConfigResource.Type.BROKER, "0")
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    entry = configs["zookeeper.set.acl"]
    assert entry.value == "true"
    assert entry.source == ConfigSource.STATIC_BROKER_CONFIG.value


def test_embedded_zookeeper_allows_only_the_four_letter_words_zkbroker_uses() -> None:
    with EmbeddedZooKeeper() as zk:
        assert send_four_letter_word(zk.host, zk.port, "ruok") == "imok"
        assert "Mode: standalone" in send_four_letter_word(zk.host, zk.port, "srvr")
        assert "dataDir=" in send_four_letter_word(zk.host, zk.port, "conf")
        for word in ("dump", "envi", "wchp", "stat", "mntr", "cons"):
            answer = send_four_letter_word(zk.host, zk.port, word)
            assert answer.startswith(f"{word} is not executed because it is not in the whitelist")


def test_user_add_uses_the_digest_from_the_environment(
    secure_cluster: Cluster,
    secure_connect: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from zkbroker.broker.cli.main import main

    argv = ["user", "add", "alice", "--password", "alice-pw", "--zookeeper", secure_connect]
    monkeypatch.delenv("ZKBROKER_ZOOKEEPER_DIGEST", raising=False)
    assert main(argv) == 1
    assert "cannot write it" in capsys.readouterr().err
    monkeypatch.setenv("ZKBROKER_ZOOKEEPER_DIGEST", DIGEST)
    assert main(argv) == 0
    zk = _anonymous(secure_connect, DIGEST)
    try:
        # Credentials are sensitive: creator-only, like everything under /config/users.
        assert _acl_set(zk.get_acls("/config/users/alice")[0]) == CREATOR_ONLY
        assert b"SCRAM-SHA-512" in zk.get("/config/users/alice")[0]
    finally:
        zk.stop()
        zk.close()


def test_sasl_digest_md5_to_zookeeper(zk_cluster_factory: Callable[..., Cluster]) -> None:
    """Kafka's own way (a JAAS Client section): SASL DIGEST-MD5, checked by the server, so a
    wrong password is refused at login; the identity in the ACLs is sasl:<user>."""
    with EmbeddedZooKeeper(sasl_users={"kafka": "zk-secret"}) as zk:
        connect = zk.connect_string + "/sasl"
        cluster = zk_cluster_factory(
            brokers=1,
            zookeeper=connect,
            zookeeper_set_acl=True,
            zookeeper_digest="kafka:zk-secret",
            zookeeper_auth_scheme="sasl",
        )
        assert cluster.brokers[0].running
        reader = KazooClient(
            hosts=connect,
            sasl_options={"mechanism": "DIGEST-MD5", "username": "kafka", "password": "zk-secret"},
        )
        reader.start(timeout=15)
        try:
            assert _acl_set(reader.get_acls("/brokers")[0]) == {
                (Permissions.ALL, "sasl", "kafka"),
                (Permissions.READ, *WORLD),
            }
            assert _acl_set(reader.get_acls("/config/users")[0]) == {
                (Permissions.ALL, "sasl", "kafka")
            }
        finally:
            reader.stop()
            reader.close()
        with pytest.raises(ZkAuthError, match="refused zkbroker's credentials"):
            zk_cluster_factory(
                broker_ids=(3,),
                zookeeper=connect,
                zookeeper_digest="kafka:wrong",
                zookeeper_auth_scheme="sasl",
            )
        cluster.stop()


def test_embedded_zookeeper_with_sasl() -> None:
    """Without --zookeeper, `--zookeeper-auth sasl` starts the embedded server with zkbroker's
    user in its JAAS Server section."""
    with Cluster(
        brokers=1,
        port=0,
        zookeeper_set_acl=True,
        zookeeper_digest="kafka:zk-secret",
        zookeeper_auth_scheme="sasl",
    ) as cluster:
        zk = _anonymous(cluster.zookeeper_connect)
        try:
            assert _acl_set(zk.get_acls("/brokers/ids/0")[0]) == {
                (Permissions.ALL, "sasl", "kafka"),
                (Permissions.READ, *WORLD),
            }
            with pytest.raises(NoAuthError):
                zk.delete("/brokers/ids/0")
        finally:
            zk.stop()
            zk.close()
