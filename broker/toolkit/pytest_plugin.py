"""zkbroker's pytest plugin (`pytest11` entry point `zkbroker`): Kafka clusters as fixtures, on a
real ZooKeeper.

- `zk_test_zookeeper` (session): from `zkbroker.broker.toolkit.zookeeper.start_zookeeper_for_tests`.
- `zk_cluster`: a 3-broker `zkbroker.Cluster` started once per session on its own chroot and
  cleaned, not re-created, after each test: leftover topics deleted as Kafka deletes them (the
  internal ones too, so groups and transactional ids go with them), config overrides restored
  (SCRAM credentials and quotas among them), ACLs, delegation tokens and finalized features
  restored with the change notifications Kafka's writers send, leftover `/config/topics` and
  `/consumers` nodes removed, stopped brokers restarted, broker log levels set back, faults and
  captured requests cleared (not reset: KIP-631 brokers, other processes' additions).
- `zk_cluster_factory`: a cluster of its own per call (any `Settings` field,
  `security=Security(...)`), stopped after the test.
- `zk_secure_cluster`: one broker on a SASL_SSL listener (user `admin` / `admin-secret`).

Not here: Kafka client fixtures, the project's own fixtures (`tests/conftest.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from zkbroker.broker.asyncutil import wait_for
from zkbroker.broker.cluster import Cluster, settings_from_options
from zkbroker.broker.security.cluster_security import Security
from zkbroker.broker.settings import Settings
from zkbroker.broker.toolkit.zookeeper import (
    ZooKeeperEndpoint,
    fresh_chroot,
    remove_chroot,
    start_zookeeper_for_tests,
)
from zkbroker.zk_layout import (
    AclChangeNode,
    ConfigEntityNode,
    DelegationTokenChangeNode,
    DelegationTokensNode,
    DeleteTopicMarkerNode,
    ExtendedAclChangeNode,
    FeatureNode,
    NodeExistsError,
    ResourcePattern,
    ZkStore,
)
from zkbroker.zk_layout.nodes.acl import EXTENDED_ACL_ROOT, LITERAL, LITERAL_ACL_ROOT
from zkbroker.zk_layout.release import Release
from zkbroker.zk_layout.store.admin_zk import change_entity_config

__all__ = [
    "ClusterReset",
    "Security",
    "zk_cluster",
    "zk_cluster_factory",
    "zk_secure_cluster",
    "zk_test_zookeeper",
]

# Config entity types restored after each test (topics' configs go with their topics).
_RESET_CONFIG_TYPES = ("brokers", "clients", "users", "ips")
# Subtrees of state no topic deletion or config restore covers: restored node by node to what
# they held at capture (ACLs of both stores, delegation tokens, finalized features).
_STATE_ROOTS = (
    LITERAL_ACL_ROOT,
    EXTENDED_ACL_ROOT,
    DelegationTokensNode.path(),
    FeatureNode.path(),
)
RESET_TIMEOUT_S = 30.0


@dataclass
class ClusterReset:
    """What a cluster looked like once; `reset()` brings it back there (see the module doc).

    Create it with `ClusterReset.capture(cluster)` and call `reset()` from the test thread;
    both run on the cluster's loop with a ZooKeeper session of their own."""

    cluster: Cluster
    store: ZkStore
    topics: frozenset[str] = frozenset()
    consumers: frozenset[str] = frozenset()
    configs: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    state: dict[str, bytes] = field(default_factory=dict)

    @classmethod
    def capture(cls, cluster: Cluster) -> ClusterReset:
        async def snapshot() -> ClusterReset:
            store = await ZkStore.connect(cluster.zookeeper_connect)
            reset = cls(cluster, store)
            reset.topics = frozenset(await store.get_children("/brokers/topics") or ())
            reset.consumers = frozenset(await store.get_children("/consumers") or ())
            reset.configs = await _read_configs(store)
            reset.state = await _read_trees(store, _STATE_ROOTS)
            return reset

        return cluster.call(snapshot())

    def reset(self, timeout: float = RESET_TIMEOUT_S) -> None:
        self.cluster.call(wait_for(self._reset(), timeout), timeout=timeout + 5)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.cluster.call(self.store.close(), timeout=10)

    async def _reset(self) -> None:
        engine = self.cluster.engine
        store = self.store
        # Faults first: a blackhole or latency left behind would hold the cleanup itself.
        await engine.faults.clear()
        engine.clear_requests()
        for broker_id, node in sorted(engine.brokers.items()):
            if not node.running:
                await engine.start_broker(broker_id)
        # Topics: marked for deletion as DeleteTopics does; the controller deletes them.
        extra = set(await store.get_children("/brokers/topics") or ()) - self.topics
        for topic in sorted(extra):
            with contextlib.suppress(NodeExistsError):
                await store.create(DeleteTopicMarkerNode.path(topic), None, makepath=True)
        while True:
            left = extra & set(await store.get_children("/brokers/topics") or ())
            left |= extra & set(engine.image.topics)
            if not left:
                break
            await asyncio.sleep(0.02)
        live = set(await store.get_children("/brokers/topics") or ())
        for topic in await store.get_children("/config/topics") or ():
            if topic not in live:
                with contextlib.suppress(Exception):
                    await store.delete(ConfigEntityNode.path("topics", topic), recursive=True)
        # Config overrides: written back to what they were (empty if they were not there).
        now = await _read_configs(store)
        release = engine.settings.kafka_version
        rewritten: dict[str, dict[str, str]] = {}
        for key in sorted(set(now) | set(self.configs)):
            before = self.configs.get(key, {})
            if now.get(key, {}) != before:
                await change_entity_config(store, key[0], key[1], before, release)
                if key[0] == "brokers":
                    rewritten[key[1]] = before
            if key not in self.configs:
                # Written empty above (its change notification tells every broker); a new
                # cluster has no such node, and brokers read a missing one as empty.
                with contextlib.suppress(Exception):
                    await store.delete(ConfigEntityNode.path(*key))
        # The next test must see them applied: broker overrides reach the image through the
        # change notifications, a moment later.
        while any(engine.image.broker_configs.get(b, {}) != c for b, c in rewritten.items()):
            await asyncio.sleep(0.01)
        # Consumer groups of the ZooKeeper registry.
        for group in await store.get_children("/consumers") or ():
            if group not in self.consumers:
                with contextlib.suppress(Exception):
                    await store.delete(f"/consumers/{group}", recursive=True)
        await self._restore_state(await _read_trees(store, _STATE_ROOTS))
        for node in engine.brokers.values():
            node.reset_loggers()

    async def _restore_state(self, now: dict[str, bytes]) -> None:
        """ACLs, tokens and features (`now`) back to the capture, each change announced as its
        writer announces it (the brokers' caches reload the resource or token named)."""
        store = self.store
        if now == self.state:
            return
        for path in sorted(set(now) - set(self.state), key=_depth, reverse=True):
            with contextlib.suppress(Exception):
                await store.delete(path)
        for path, data in sorted(self.state.items(), key=lambda item: _depth(item[0])):
            if path not in now:
                await store.create(path, data, makepath=True)
            elif now[path] != data:
                await store.set(path, data)
        changed = {p for p in set(now) | set(self.state) if now.get(p) != self.state.get(p)}
        release = self.cluster.engine.settings.kafka_version
        for path in sorted(changed):
            await _announce(store, path, release)


def _depth(path: str) -> int:
    return path.count("/")


async def _read_trees(store: ZkStore, roots: Sequence[str]) -> dict[str, bytes]:
    """Every node under `roots` (the roots included) and its data, a level per round trip."""
    tree: dict[str, bytes] = {}
    level = list(roots)
    while level:
        datas = await asyncio.gather(*(store.get(path) for path in level))
        children = await store.get_children_many(level)
        below: list[str] = []
        for path, got, names in zip(level, datas, children, strict=True):
            if got is None:
                continue
            tree[path] = got[0]
            below.extend(f"{path}/{name}" for name in names or ())
        level = below
    return tree


async def _announce(store: ZkStore, path: str, release: Release) -> None:
    """The change notification Kafka writes for an ACL resource or a token changed at `path`
    (a store's directory node, or the feature node, which brokers watch, needs none)."""
    parts = path.split("/")[1:]
    if parts[0] == LITERAL_ACL_ROOT[1:] and len(parts) == 3:
        pattern = ResourcePattern(parts[1], parts[2], LITERAL)
        node_path, data = AclChangeNode.create_path(), AclChangeNode.encode(pattern, release)
    elif parts[0] == EXTENDED_ACL_ROOT[1:] and len(parts) == 4:
        pattern = ResourcePattern(parts[2], parts[3], parts[1].upper())
        node_path = ExtendedAclChangeNode.create_path()
        data = ExtendedAclChangeNode.encode(pattern, release)
    elif path.startswith(DelegationTokensNode.path() + "/") and len(parts) == 3:
        node_path = DelegationTokenChangeNode.create_path()
        data = DelegationTokenChangeNode.encode(parts[2], release)
    else:
        return
    await store.create(node_path, data, sequence=True, makepath=True)


async def _read_configs(store: ZkStore) -> dict[tuple[str, str], dict[str, str]]:
    configs: dict[tuple[str, str], dict[str, str]] = {}
    for entity_type in _RESET_CONFIG_TYPES:
        for name in await store.get_children(f"/config/{entity_type}") or ():
            got = await store.read(ConfigEntityNode, entity_type, name)
            if got is not None:
                configs[(entity_type, name)] = dict(got[0])
    return configs


# ---------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def zk_test_zookeeper() -> Iterator[ZooKeeperEndpoint]:
    """The session's ZooKeeper (see
    `zkbroker.broker.toolkit.zookeeper.start_zookeeper_for_tests`)."""
    endpoint = start_zookeeper_for_tests()
    try:
        yield endpoint
    finally:
        endpoint.stop()


@pytest.fixture(scope="session")
def _zkbroker_session_cluster(
    zk_test_zookeeper: ZooKeeperEndpoint,
) -> Iterator[tuple[Cluster, ClusterReset]]:
    connect = fresh_chroot(zk_test_zookeeper.connect_string)
    cluster = Cluster(Settings(port=0, zookeeper=connect)).start()
    reset = ClusterReset.capture(cluster)
    try:
        yield cluster, reset
    finally:
        reset.close()
        cluster.stop()
        if zk_test_zookeeper.kind == "external":
            remove_chroot(connect)


@pytest.fixture
def zk_cluster(
    _zkbroker_session_cluster: tuple[Cluster, ClusterReset],
) -> Iterator[Cluster]:
    """The session's 3-broker cluster; topics and config overrides the test leaves are
    deleted after it (see the module docstring)."""
    cluster, reset = _zkbroker_session_cluster
    yield cluster
    reset.reset()


ClusterFactory = Callable[..., Cluster]


@pytest.fixture
def zk_cluster_factory(zk_test_zookeeper: ZooKeeperEndpoint) -> Iterator[ClusterFactory]:
    """`zk_cluster_factory(brokers=3, kafka_version=None, racks=None, **settings)`: a new
    cluster on a fresh chroot (or on `zookeeper=...`), stopped after the test."""
    started: list[Cluster] = []
    chroots: list[str] = []

    def start(
        brokers: int = 3,
        kafka_version: str | tuple[int, ...] | None = None,
        racks: Sequence[str | None] | str | None = None,
        **settings: Any,
    ) -> Cluster:
        options: dict[str, Any] = {"port": 0}
        if "broker_ids" not in settings:
            options["brokers"] = brokers
        if kafka_version is not None:
            options["kafka_version"] = kafka_version
        if racks is not None:
            parts = racks.split(",") if isinstance(racks, str) else racks
            options["racks"] = tuple((r.strip() or None) if r else None for r in parts)
        if settings.get("zookeeper") is None:
            settings["zookeeper"] = fresh_chroot(zk_test_zookeeper.connect_string)
            chroots.append(settings["zookeeper"])
        security = settings.pop("security", None)
        options.update(settings)
        if security is not None:
            cluster = Cluster(security=security, **options).start()
        else:
            cluster = Cluster(settings_from_options(options)).start()
        started.append(cluster)
        return cluster

    yield start
    errors: list[BaseException] = []
    for cluster in reversed(started):
        try:
            cluster.stop()
        except Exception as e:
            errors.append(e)
    if zk_test_zookeeper.kind == "external":
        for chroot in chroots:
            with contextlib.suppress(Exception):
                remove_chroot(chroot)
    if errors:
        raise errors[0]


@pytest.fixture
def zk_secure_cluster(zk_cluster_factory: ClusterFactory) -> Cluster:
    """One broker on a SASL_SSL listener: SCRAM-SHA-512 and PLAIN, user admin/admin-secret,
    certificates generated for the test (`cluster.security.ca_file`)."""
    return zk_cluster_factory(brokers=1, security=Security())
