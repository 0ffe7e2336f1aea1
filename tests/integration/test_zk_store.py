"""``zkbroker.zk_layout.store.ZkStore`` against a real ZooKeeper: registration, election, fenced and
plain multis, watches delivered on the event loop, session listeners, pipelining, Kafka's recipes.

The server comes from ``_local_zookeeper``: a module-scoped ZooKeeper started from Debian's jar.
It is deliberately self-contained (this suite tests the bottom layer and should not depend on the
broker package's launcher); to run on the project-wide server instead, make ``_local_zookeeper``
return the ``zookeeper`` fixture from ``tests/conftest.py`` — both expose ``.connect_string``.
Every test works in a chroot of its own.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo import exceptions as kazoo_exc
from kazoo.client import KazooClient

from zkbroker.zk_layout import (
    PERSISTENT_ZK_PATHS,
    BadVersionError,
    BrokerIdInUseError,
    BrokerIdNode,
    BrokerInfo,
    ClusterIdNode,
    ControllerEpochNode,
    ControllerMovedError,
    ControllerNode,
    Endpoint,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionState,
    TopicAssignment,
    TopicNode,
    ZkStore,
    ZnodeFormatError,
    uuid_from_text,
)

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")


@dataclass
class LocalZooKeeper:
    connect_string: str
    process: subprocess.Popen[bytes]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _can_connect(connect_string: str) -> bool:
    client = KazooClient(hosts=connect_string)
    try:
        client.start(timeout=1)
        return True
    except Exception:
        return False
    finally:
        client.stop()
        client.close()


@pytest.fixture(scope="module")
def _local_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalZooKeeper]:
    java = shutil.which("java")
    if java is None or not ZOOKEEPER_JAR.exists():
        pytest.skip("needs java and Debian's zookeeper.jar")
    data_dir = tmp_path_factory.mktemp("zookeeper")
    port = _free_port()
    log = (data_dir / "server.log").open("wb")
    process = subprocess.Popen(
        [
            java,
            "-Dzookeeper.admin.enableServer=false",
            "-cp",
            str(ZOOKEEPER_JAR),
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(port),
            str(data_dir),
            "2000",  # tickTime: sessions of 4-40 s
            "0",  # no per-IP connection limit
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        connect_string = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while not _can_connect(connect_string):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"ZooKeeper did not start; see {data_dir / 'server.log'}")
            time.sleep(0.2)
        yield LocalZooKeeper(connect_string, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture
def zk_hosts(_local_zookeeper: LocalZooKeeper) -> str:
    """Connect string with a fresh chroot for this test."""
    return f"{_local_zookeeper.connect_string}/zk_store_{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def open_store(zk_hosts: str) -> AsyncIterator[Callable[[], Awaitable[ZkStore]]]:
    """Factory of stores (one ZooKeeper session each) on the test's chroot, closed afterwards."""
    stores: list[ZkStore] = []

    async def make() -> ZkStore:
        store = await ZkStore.connect(zk_hosts, timeout=15)
        stores.append(store)
        return store

    yield make
    for store in stores:
        await store.close()


@pytest.fixture
async def store(open_store: Callable[[], Awaitable[ZkStore]]) -> ZkStore:
    s = await open_store()
    await s.create_top_level_paths()
    return s


@pytest.fixture
def raw(zk_hosts: str) -> Iterator[KazooClient]:
    """Plain blocking kazoo on the same chroot, to look at what the store wrote."""
    servers, chroot = zk_hosts.split("/", 1)
    root = KazooClient(hosts=servers)
    root.start(timeout=15)
    root.ensure_path("/" + chroot)  # kazoo itself never creates its chroot
    root.stop()
    root.close()
    client = KazooClient(hosts=zk_hosts)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


async def eventually(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


async def fence(store: ZkStore) -> None:
    """For a negative check: wait until `store` has delivered a change made now. ZooKeeper
    sends a session's watch events in the order of the changes and the store re-reads and
    delivers them in that order, so whatever an earlier change would have called (on any
    watch of `store`) has been called by then."""
    path = f"/fence-{uuid.uuid4().hex}"
    seen: list[Any] = []
    watch = await store.watch_exists(path, seen.append)
    await store.create(path)
    await eventually(lambda: seen[-1] is not None)
    watch.cancel()
    await store.delete(path)


def _broker(broker_id: int) -> BrokerInfo:
    return BrokerInfo.create(broker_id, [Endpoint.plaintext("127.0.0.1", 9092 + broker_id)])


# --- connection and chroot ------------------------------------------------------------------


async def test_connect_creates_nested_chroot_with_null_data(
    _local_zookeeper: LocalZooKeeper,
) -> None:
    base = f"/zk_store_chroot_{uuid.uuid4().hex[:8]}"
    store = await ZkStore.connect(f"{_local_zookeeper.connect_string}{base}/a/b/")
    try:
        assert store.chroot == f"{base}/a/b"
        assert store.session_id is not None and store.connected
        await store.create("/x", b"1")
        assert (await store.get("/x"))[0] == b"1"  # type: ignore[index]
    finally:
        await store.close()
    root = KazooClient(hosts=_local_zookeeper.connect_string)
    root.start(timeout=15)
    try:
        data, _ = root.get(f"{base}/a/b")
        assert data is None  # null data, as Kafka creates the chroot
        assert root.get(f"{base}/a/b/x")[0] == b"1"
    finally:
        root.stop()
        root.close()


async def test_connect_failure_is_a_connection_error() -> None:
    from zkbroker.zk_layout import ZkConnectionError

    with pytest.raises(ZkConnectionError):
        await ZkStore.connect(f"127.0.0.1:{_free_port()}", timeout=0.5)


async def test_create_top_level_paths_is_idempotent(
    open_store: Callable[[], Awaitable[ZkStore]], raw: KazooClient
) -> None:
    store = await open_store()
    await store.create_top_level_paths()
    await asyncio.gather(store.create_top_level_paths(), store.create_top_level_paths())
    for path in PERSISTENT_ZK_PATHS:
        data, stat = raw.get(path)
        assert data is None, path
        assert stat.version == 0, path
    assert sorted(raw.get_children("/config")) == [
        "brokers",
        "changes",
        "clients",
        "ips",
        "topics",
        "users",
    ]
    await store.create_acl_paths()
    assert raw.exists("/kafka-acl/Topic") and raw.exists("/kafka-acl-extended/prefixed/Group")


# --- plain operations -----------------------------------------------------------------------


async def test_basic_operations(store: ZkStore, raw: KazooClient) -> None:
    assert await store.get("/nope") is None
    assert await store.get_children("/nope") is None
    assert await store.exists("/nope") is None
    assert await store.create("/a", b"x") == "/a"
    with pytest.raises(NodeExistsError) as exists:
        await store.create("/a")
    assert isinstance(exists.value, kazoo_exc.NodeExistsError)  # kazoo-compatible
    with pytest.raises(NoNodeError):
        await store.create("/missing/parent/leaf")
    assert await store.create("/m/n/o", b"leaf", makepath=True) == "/m/n/o"
    assert raw.get("/m/n")[0] is None  # parents get null data
    stat = await store.set("/a", b"y", version=0)
    assert stat.version == 1
    with pytest.raises(BadVersionError):
        await store.set("/a", b"z", version=0)
    seq = await store.create("/config/changes/config_change_", b"{}", sequence=True)
    assert seq == "/config/changes/config_change_0000000000"
    with pytest.raises(NotEmptyError):
        await store.delete("/m")
    await store.delete("/m", recursive=True)
    assert await store.exists("/m") is None
    await store.delete("/m", recursive=True)  # absent: fine
    with pytest.raises(NoNodeError):
        await store.delete("/m")
    await store.create("/null", None)
    assert raw.get("/null")[0] is None
    assert (await store.get("/null"))[0] == b""  # type: ignore[index]


async def test_read_decodes_and_names_the_path(store: ZkStore) -> None:
    assignment = TopicAssignment({0: (1, 2)}, topic_id=uuid.uuid4())
    await store.create(TopicNode.path("foo"), TopicNode.encode(assignment, (2, 8)))
    got = await store.read(TopicNode, "foo")
    assert got is not None and got[0] == assignment and got[1].version == 0
    assert await store.read(TopicNode, "bar") is None
    await store.create(TopicNode.path("bad"), b"{nope")
    with pytest.raises(ZnodeFormatError) as bad:
        await store.read(TopicNode, "bad")
    assert bad.value.where == "/brokers/topics/bad"


async def test_pipelining_1000_concurrent_creates(store: ZkStore, raw: KazooClient) -> None:
    await store.ensure_path("/pipe")
    paths = await asyncio.gather(
        *(store.create(f"/pipe/n{i}", str(i).encode()) for i in range(1000))
    )
    assert paths == [f"/pipe/n{i}" for i in range(1000)]
    assert len(raw.get_children("/pipe")) == 1000
    values = await asyncio.gather(*(store.get(f"/pipe/n{i}") for i in range(1000)))
    assert [v[0] for v in values if v] == [str(i).encode() for i in range(1000)]
    await store.delete("/pipe", recursive=True)
    assert raw.exists("/pipe") is None


# --- transactions ---------------------------------------------------------------------------


async def test_transaction_success_results(store: ZkStore, raw: KazooClient) -> None:
    await store.create("/t", b"0")
    results = await (
        store.transaction()
        .create("/t/a", b"1")
        .create("/t/n", None)
        .set("/t", b"2", 0)
        .check("/t", 1)
        .delete("/t/a")
        .commit()
    )
    assert results[0] == "/t/a" and results[1] == "/t/n"
    assert results[2].version == 1
    assert results[3:] == [True, True]
    assert raw.get("/t/n")[0] is None  # null data inside a multi too
    assert raw.exists("/t/a") is None


@pytest.mark.parametrize(
    ("build", "error", "index", "names"),
    [
        (lambda tx: tx.create("/u/a").create("/u"), NodeExistsError, 1, "create /u"),
        (lambda tx: tx.create("/u/a").set("/u", b"x", 5), BadVersionError, 1, "set /u version 5"),
        (lambda tx: tx.create("/u/a").delete("/zz"), NoNodeError, 1, "delete /zz"),
        (lambda tx: tx.check("/u", 3).create("/u/a"), BadVersionError, 0, "check /u version 3"),
        (lambda tx: tx.create("/u/a").delete("/u"), NotEmptyError, 1, "delete /u"),
    ],
)
async def test_transaction_failure_names_the_op_and_rolls_back(
    store: ZkStore, raw: KazooClient, build: Any, error: type[Exception], index: int, names: str
) -> None:
    await store.create("/u")
    with pytest.raises(error) as failed:
        await build(store.transaction()).commit()
    assert failed.value.op_index == index  # type: ignore[attr-defined]
    assert f"op #{index} ({names})" in str(failed.value)
    assert "rolled back" in str(failed.value)
    assert raw.exists("/u/a") is None


async def test_transaction_commits_once(store: ZkStore) -> None:
    tx = store.transaction().create("/once")
    await tx.commit()
    with pytest.raises(RuntimeError):
        await tx.commit()
    with pytest.raises(RuntimeError):
        tx.create("/twice")


# --- broker registration --------------------------------------------------------------------


async def test_register_broker_is_checked_ephemeral_create(
    open_store: Callable[[], Awaitable[ZkStore]], raw: KazooClient
) -> None:
    first = await open_store()
    await first.create_top_level_paths()
    epoch = await first.register_broker(_broker(1), (2, 8))
    data, stat = raw.get("/brokers/ids/1")
    assert stat.version == 1  # create(null) + set(version 0)
    assert stat.czxid == epoch
    assert stat.ephemeralOwner == first.session_id
    assert json.loads(data)["version"] == 5
    assert BrokerIdNode.decode(data, 1).endpoints == (Endpoint.plaintext("127.0.0.1", 9093),)
    # the same session registering again (a retry) gets its own epoch back
    assert await first.register_broker(_broker(1), (2, 8)) == epoch

    second = await open_store()
    with pytest.raises(BrokerIdInUseError) as clash:
        await second.register_broker(_broker(1), (2, 8))
    assert str(clash.value).startswith(
        "broker id 1 is already registered in ZooKeeper at /brokers/ids/1"
    )
    assert "(by another process?)" in str(clash.value)

    await first.close()  # closing the session removes the ephemeral at once
    new_epoch = await second.register_broker(_broker(1), (2, 6))
    assert new_epoch > epoch
    assert json.loads(raw.get("/brokers/ids/1")[0])["version"] == 4


async def test_register_broker_needs_parent(open_store: Callable[[], Awaitable[ZkStore]]) -> None:
    store = await open_store()
    with pytest.raises(NoNodeError) as missing:
        await store.register_broker(_broker(2), (2, 8))
    assert "create /brokers/ids/2 (ephemeral)" in str(missing.value)


# --- controller election and fencing --------------------------------------------------------


async def test_controller_election_and_failover(
    open_store: Callable[[], Awaitable[ZkStore]], raw: KazooClient
) -> None:
    one, two = await open_store(), await open_store()
    won = await one.elect_controller(1, (2, 8))
    assert (won.won, won.controller_id, won.epoch, won.epoch_zk_version) == (True, 1, 1, 1)
    data, stat = raw.get("/controller")
    assert set(json.loads(data)) == {"version", "brokerid", "timestamp"}
    assert stat.ephemeralOwner == one.session_id
    assert raw.get("/controller_epoch")[0] == b"1"

    lost = await two.elect_controller(2, (2, 8))
    assert (lost.won, lost.controller_id, lost.epoch, lost.epoch_zk_version) == (False, 1, 1, 1)
    # asking again from the winner's session is idempotent
    again = await one.elect_controller(1, (2, 8))
    assert (again.won, again.epoch, again.epoch_zk_version) == (True, 1, 1)

    await one.close()
    failover = await two.elect_controller(2, (3, 4))
    assert (failover.won, failover.controller_id, failover.epoch) == (True, 2, 2)
    assert failover.epoch_zk_version == 2
    assert json.loads(raw.get("/controller")[0])["kraftControllerEpoch"] == -1
    assert raw.get("/controller_epoch")[0] == b"2"


async def test_concurrent_elections_have_one_winner(
    open_store: Callable[[], Awaitable[ZkStore]],
) -> None:
    stores = [await open_store() for _ in range(5)]
    results = await asyncio.gather(*(s.elect_controller(i, (2, 8)) for i, s in enumerate(stores)))
    winners = [r for r in results if r.won]
    assert len(winners) == 1
    assert {r.controller_id for r in results} == {winners[0].controller_id}
    assert winners[0].epoch == 1


async def test_election_creates_missing_epoch_node_and_respects_existing(
    store: ZkStore, raw: KazooClient
) -> None:
    raw.create("/controller_epoch", b"41")
    result = await store.elect_controller(7, (2, 8))
    assert (result.won, result.epoch, result.epoch_zk_version) == (True, 42, 1)
    got = await store.read(ControllerEpochNode)
    assert got is not None and got[0] == 42
    assert (await store.read(ControllerNode))[0].broker_id == 7  # type: ignore[index]


async def test_fenced_transaction(
    open_store: Callable[[], Awaitable[ZkStore]], raw: KazooClient
) -> None:
    one, two = await open_store(), await open_store()
    await one.create_top_level_paths()
    election = await one.elect_controller(1, (2, 8))
    await one.create(TopicNode.path("t"), TopicNode.encode(TopicAssignment({0: (1,)}), (2, 8)))
    results = await (
        one.fenced(election.epoch_zk_version)
        .create("/brokers/topics/t/partitions", None)
        .create("/brokers/topics/t/partitions/0", None)
        .set("/brokers/topics/t", TopicNode.encode(TopicAssignment({0: (1, 2)}), (2, 8)), 0)
        .commit()
    )
    # the epoch check is not part of the caller's results
    assert results[:2] == ["/brokers/topics/t/partitions", "/brokers/topics/t/partitions/0"]
    assert results[2].version == 1
    assert raw.get("/brokers/topics/t/partitions/0")[0] is None

    await one.close()
    newer = await two.elect_controller(2, (2, 8))
    assert newer.epoch_zk_version == election.epoch_zk_version + 1
    stale = await open_store()
    with pytest.raises(ControllerMovedError):
        await stale.fenced(election.epoch_zk_version).create("/zombie").commit()
    assert raw.exists("/zombie") is None
    # ordinary failures of a fenced multi still map to the op (index among the caller's ops)
    with pytest.raises(NodeExistsError) as exists:
        await two.fenced(newer.epoch_zk_version).create("/ok").create("/ok").commit()
    assert exists.value.op_index == 1
    assert raw.exists("/ok") is None


async def test_fenced_create_of_missing_parent_is_not_controller_moved(
    store: ZkStore,
) -> None:
    election = await store.elect_controller(1, (2, 8))
    with pytest.raises(NoNodeError):
        await store.fenced(election.epoch_zk_version).create("/no/such/parent").commit()


# --- Kafka recipes --------------------------------------------------------------------------


async def test_cluster_id_created_once(
    open_store: Callable[[], Awaitable[ZkStore]], raw: KazooClient
) -> None:
    stores = [await open_store() for _ in range(3)]
    ids = await asyncio.gather(*(s.get_or_create_cluster_id() for s in stores))
    assert len(set(ids)) == 1
    uuid_from_text(ids[0])
    data = raw.get("/cluster/id")[0]
    assert json.loads(data) == {"version": "1", "id": ids[0]}
    assert ClusterIdNode.decode(data) == ids[0]
    assert raw.get("/cluster")[0] is None
    assert await stores[0].get_or_create_cluster_id() == ids[0]


async def test_broker_sequence_ids(store: ZkStore) -> None:
    assert await store.next_broker_sequence_id() == 1001
    assert await store.next_broker_sequence_id() == 1002
    assert await store.next_broker_sequence_id(reserved_broker_max_id=5000) == 5003


# --- watches --------------------------------------------------------------------------------


async def test_children_watch_runs_on_the_loop_and_is_persistent(
    store: ZkStore, raw: KazooClient
) -> None:
    loop_thread = threading.get_ident()
    seen: list[list[str] | None] = []

    def on_children(children: list[str] | None) -> None:
        assert threading.get_ident() == loop_thread
        asyncio.get_running_loop()  # raises unless called on the loop
        seen.append(None if children is None else sorted(children))

    watch = await store.watch_children("/w", on_children)
    assert seen == [None]  # initial call happened before watch_children returned
    await store.create("/w")
    await eventually(lambda: seen[-1] == [])
    raw.create("/w/a")
    await eventually(lambda: seen[-1] == ["a"])
    await asyncio.gather(store.create("/w/b"), store.create("/w/c"))
    await eventually(lambda: seen[-1] == ["a", "b", "c"])
    # delete a child and re-create it: the list is the same but it must still be reported
    count = len(seen)
    raw.delete("/w/a")
    raw.create("/w/a")
    await eventually(lambda: len(seen) > count and seen[-1] == ["a", "b", "c"])
    await store.delete("/w", recursive=True)
    await eventually(lambda: seen[-1] is None)
    await store.create("/w/x", makepath=True)
    await eventually(lambda: seen[-1] == ["x"])
    # a data change of the watched node is not a children change (negative checks: the
    # fence waits for what these changes would have called)
    count = len(seen)
    await store.set("/w", b"data")
    await fence(store)
    assert len(seen) == count
    watch.cancel()
    assert watch.cancelled
    await store.create("/w/y")
    await fence(store)
    assert len(seen) == count


async def test_data_watch(store: ZkStore) -> None:
    seen: list[tuple[bytes | None, int | None]] = []

    def on_data(data: bytes | None, stat: Any) -> None:
        seen.append((data, None if stat is None else stat.version))

    await store.watch_data("/d", on_data)
    assert seen == [(None, None)]
    await store.create("/d", b"1")
    await eventually(lambda: seen[-1] == (b"1", 0))
    await store.set("/d", b"2")
    await eventually(lambda: seen[-1] == (b"2", 1))
    await store.create("/d/child")  # children changes are not data changes
    await store.delete("/d", recursive=True)
    await eventually(lambda: seen[-1] == (None, None))
    await store.create("/d", None)
    await eventually(lambda: seen[-1] == (b"", 0))
    assert seen == [(None, None), (b"1", 0), (b"2", 1), (None, None), (b"", 0)]


async def test_watch_callback_returning_false_cancels(store: ZkStore) -> None:
    calls: list[Any] = []

    def once(stat: Any) -> bool:
        calls.append(stat)
        return len(calls) < 2

    watch = await store.watch_exists("/e", once)
    await store.create("/e")
    await eventually(lambda: len(calls) == 2)
    assert calls[0] is None and calls[1] is not None
    await eventually(lambda: watch.cancelled)
    await store.delete("/e")
    await fence(store)  # a negative check: what the deletion would have called has been
    assert len(calls) == 2


async def test_watch_callback_errors_do_not_stop_the_watch(store: ZkStore) -> None:
    calls: list[Any] = []

    def flaky(data: bytes | None, stat: Any) -> None:
        calls.append(data)
        raise RuntimeError("boom")

    await store.watch_data("/f", flaky)
    await store.create("/f", b"1")
    await eventually(lambda: calls == [None, b"1"])


async def test_many_watches_and_close(open_store: Callable[[], Awaitable[ZkStore]]) -> None:
    store = await open_store()
    seen: dict[int, list[Any]] = {i: [] for i in range(50)}

    def recorder(i: int) -> Callable[[bytes | None, Any], None]:
        return lambda data, _stat: seen[i].append(data)

    await asyncio.gather(*(store.watch_data(f"/many/n{i}", recorder(i)) for i in range(50)))
    await asyncio.gather(*(store.create(f"/many/n{i}", b"v", makepath=True) for i in range(50)))
    await eventually(lambda: all(v == [None, b"v"] for v in seen.values()))
    await store.close()
    await store.close()  # idempotent


# --- sessions -------------------------------------------------------------------------------


async def test_session_expiry_is_reported_and_watches_survive(
    open_store: Callable[[], Awaitable[ZkStore]], zk_hosts: str, raw: KazooClient
) -> None:
    store = await open_store()
    await store.create_top_level_paths()
    await store.register_broker(_broker(3), (2, 8))
    states: list[SessionState] = []
    loop_thread = threading.get_ident()

    def on_state(state: SessionState) -> None:
        assert threading.get_ident() == loop_thread
        states.append(state)

    store.add_session_listener(on_state)
    children: list[list[str] | None] = []
    await store.watch_children("/brokers/ids", lambda c: children.append(sorted(c or [])))
    assert children == [["3"]]
    old_session = store.session_id
    assert old_session is not None

    # Expire the session from outside: attach to it with its id and password, then close it.
    client_id = store.client.client_id
    servers = zk_hosts.split("/", 1)[0]
    intruder = KazooClient(hosts=servers, client_id=client_id)
    await asyncio.to_thread(intruder.start, 15)
    await asyncio.to_thread(intruder.stop)
    intruder.close()

    await eventually(lambda: SessionState.RECONNECTED_NEW_SESSION in states, timeout=30)
    assert SessionState.LOST in states
    lost_at = states.index(SessionState.LOST)
    assert states[lost_at:][-2:] == [SessionState.CONNECTED, SessionState.RECONNECTED_NEW_SESSION]
    assert store.session_id not in (None, old_session)
    # the ephemeral registration died with the old session; the re-armed watch saw it go
    await eventually(lambda: children[-1] == [])
    assert raw.exists("/brokers/ids/3") is None
    await store.register_broker(_broker(3), (2, 8))
    await eventually(lambda: children[-1] == ["3"])


async def test_get_many_reads_in_order_across_windows_with_absent_nodes(
    store: ZkStore, raw: KazooClient
) -> None:
    count = 5_100  # more than one read window
    raw.ensure_path("/many")
    created = [raw.create_async(f"/many/n{i}", str(i).encode()) for i in range(count) if i % 7]
    for result in created:
        result.get(timeout=30)
    paths = [f"/many/n{i}" for i in range(count)]
    got = await store.get_many(paths)
    assert [g[0] if g else None for g in got] == [
        str(i).encode() if i % 7 else None for i in range(count)
    ]
    assert got[1] is not None and got[1][1].version == 0
    children = await store.get_children_many(["/many", "/nosuch", "/brokers"])
    assert children[0] is not None and len(children[0]) == count - len(range(0, count, 7))
    assert children[1] is None and sorted(children[2] or []) == ["ids", "seqid", "topics"]
    assert await store.get_many([]) == []


async def test_get_many_and_watch_reports_later_changes_only(
    store: ZkStore, raw: KazooClient
) -> None:
    raw.create("/watched/a", b"1", makepath=True)
    seen: dict[str, list[bytes | None]] = {"a": [], "b": []}
    results, watches = await store.get_many_and_watch(
        ["/watched/a", "/watched/b"],
        [lambda d, s: seen["a"].append(d), lambda d, s: seen["b"].append(d)],
    )
    assert results[0] is not None and results[0][0] == b"1" and results[1] is None
    raw.set("/watched/a", b"2")
    raw.create("/watched/b", b"x")
    await _eventually(lambda: seen["a"] == [b"2"] and seen["b"][-1:] == [b"x"])
    for watch in watches:
        watch.cancel()
    raw.set("/watched/a", b"3")
    await fence(store)  # a negative check: what the change would have called has been
    assert seen["a"] == [b"2"]


async def _eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met"
        await asyncio.sleep(0.02)
