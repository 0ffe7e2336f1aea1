"""The controller at scale: cold-start load, a large reassignment and peak RSS, beside raw kazoo.

An embedded ZooKeeper gets a 2.8-layout cluster (6 brokers, by default 10,000 topics x 10
partitions, RF 3; setup not timed). Timed: raw pipelined kazoo reading what a failing-over
controller reads; a child process's `Controller.start()` until loaded; the controller moving
the first 1,000 topics through `/admin/reassign_partitions`, then checked; the child's peak RSS;
raw pipelined kazoo writing the same reassignment's znode writes for 1,000 other topics.
Each figure is printed beside its target (`LOAD_TARGET`, `REASSIGN_TARGET`, `RSS_TARGET_MB`);
timings are never asserted: exit status 1 only for a reassignment that times out or is wrong.

Not measured: the metadata image and client traffic (`image=None`), elections, broker failures.

Run: python bench/controller.py [--topics N] [--partitions-per-topic N] [--reassign-topics N]
[--skip-reassign]; quick: --topics 200 --reassign-topics 20 (full: ~3 min on 2 CPUs).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import resource
import sys
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from time import perf_counter
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kazoo.client import KazooClient

from zkbroker.broker.controller.controller import Controller, ControllerContext
from zkbroker.broker.log import configure_logging
from zkbroker.broker.protocol.releases import DEFAULT_RELEASE
from zkbroker.broker.settings import Settings
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper
from zkbroker.zk_layout import (
    BrokerIdsNode,
    BrokerInfo,
    Endpoint,
    NoNodeError,
    PartitionState,
    PartitionStateNode,
    ReassignPartitionsNode,
    TopicAssignment,
    TopicNode,
    TopicPartition,
    TopicPartitionNode,
    TopicPartitionsNode,
    TopicsNode,
    ZkStore,
    ZkTransaction,
    ZnodeFormatError,
    random_uuid,
)

RELEASE = DEFAULT_RELEASE
BROKERS = range(6)
OLD_REPLICAS = (0, 1, 2)
NEW_REPLICAS = (3, 4, 5)
CONTROLLER_EPOCH = 1
SESSION_TIMEOUT = 30.0
SETUP_BATCH = 500  # topic transactions in flight during setup
CHILD_TIMEOUT = 600.0  # for the controller process's load and shutdown

LOAD_TARGET = 1.3
REASSIGN_TARGET = 1.5
RSS_TARGET_MB = 300.0


@dataclass(frozen=True)
class Scale:
    topics: int
    partitions: int
    reassign_topics: int
    window: int

    def names(self, first: int, count: int) -> list[str]:
        return [topic_name(i) for i in range(first, first + count)]


@dataclass
class Report:
    setup_s: float
    znodes: int
    raw_loads: list[float]
    load_s: float
    rss_kb: int
    reassign_s: float | None = None
    raw_reassign_s: float | None = None
    encode_s: float | None = None
    failures: list[str] | None = None


# ---- the cluster's data -----------------------------------------------------------------


def topic_name(i: int) -> str:
    return f"bench-{i:05d}"


def rotate(brokers: tuple[int, ...], k: int) -> tuple[int, ...]:
    k %= len(brokers)
    return brokers[k:] + brokers[:k]


def old_replicas(partition: int) -> tuple[int, ...]:
    return rotate(OLD_REPLICAS, partition)


def new_replicas(partition: int) -> tuple[int, ...]:
    return rotate(NEW_REPLICAS, partition)


def state_bytes(leader: int, leader_epoch: int, isr: tuple[int, ...]) -> bytes:
    state = PartitionState(leader, leader_epoch, isr, CONTROLLER_EPOCH)
    return PartitionStateNode.encode(state, RELEASE)


def topic_transaction(
    store: ZkStore, name: str, topic_id: uuid.UUID, partitions: int
) -> ZkTransaction:
    """One multi creating a topic the way the controller leaves it: assignment, partitions
    node, and per partition its node and leader state."""
    replicas = {p: old_replicas(p) for p in range(partitions)}
    assignment = TopicAssignment(partitions=replicas, topic_id=topic_id)
    tx = store.transaction().create(TopicNode.path(name), TopicNode.encode(assignment, RELEASE))
    tx.create(TopicPartitionsNode.path(name), None)
    for p, r in replicas.items():
        tx.create(TopicPartitionNode.path(name, p), None)
        tx.create(PartitionStateNode.path(name, p), state_bytes(r[0], 0, r))
    return tx


async def create_cluster(store: ZkStore, scale: Scale) -> dict[str, uuid.UUID]:
    """Top-level paths, brokers 0..5 (ephemeral, owned by `store`'s session) and the topics;
    returns each topic's id."""
    await store.create_top_level_paths()
    for b in BROKERS:
        info = BrokerInfo.create(b, [Endpoint.plaintext("127.0.0.1", 9092 + b)])
        await store.register_broker(info, RELEASE)
    ids = {name: random_uuid() for name in scale.names(0, scale.topics)}
    names = list(ids)
    for start in range(0, len(names), SETUP_BATCH):
        batch = names[start : start + SETUP_BATCH]
        await asyncio.gather(
            *(topic_transaction(store, n, ids[n], scale.partitions).commit() for n in batch)
        )
    return ids


def reassignment_trigger(names: list[str], partitions: int) -> bytes:
    moves = {TopicPartition(n, p): new_replicas(p) for n in names for p in range(partitions)}
    return ReassignPartitionsNode.encode(moves, RELEASE)


# ---- raw kazoo ------------------------------------------------------------------------


def start_client(zk: str) -> KazooClient:
    client = KazooClient(hosts=zk, timeout=SESSION_TIMEOUT)
    client.start(15)
    return client


def stop_client(client: KazooClient) -> None:
    client.stop()
    client.close()


def pipelined(requests: Iterable[Any], window: int) -> Iterator[Any]:
    """Results of kazoo async requests in order, with at most `window` in flight: requests is
    consumed lazily, so a generator of `*_async` calls sends each one only when there is room."""
    in_flight: deque[Any] = deque()
    for request in requests:
        in_flight.append(request)
        if len(in_flight) >= window:
            yield in_flight.popleft().get(timeout=120)
    while in_flight:
        yield in_flight.popleft().get(timeout=120)


def drain(results: Iterable[Any]) -> None:
    for _ in results:
        pass


def raw_load(zk: str, window: int) -> float:
    """What the controller's failover reads, level by level, pipelined, decoding nothing."""
    client = start_client(zk)
    try:
        started = perf_counter()
        client.get_children(BrokerIdsNode.path())
        topics = client.get_children(TopicsNode.path())
        drain(pipelined((client.get_async(TopicNode.path(t)) for t in topics), window))
        children = list(
            pipelined(
                (client.get_children_async(TopicPartitionsNode.path(t)) for t in topics), window
            )
        )
        states = (
            client.get_async(PartitionStateNode.path(t, int(p)))
            for t, parts in zip(topics, children, strict=True)
            for p in parts
        )
        drain(pipelined(states, window))
        return perf_counter() - started
    finally:
        stop_client(client)


Wave = list[tuple[str, bytes]]


def moving_assignment(partitions: int, topic_id: uuid.UUID) -> TopicAssignment:
    """A topic's assignment while it moves: RS = target + old, adding and removing."""
    olds = {p: old_replicas(p) for p in range(partitions)}
    news = {p: new_replicas(p) for p in range(partitions)}
    return TopicAssignment(
        partitions={p: news[p] + tuple(b for b in olds[p] if b not in news[p]) for p in olds},
        adding={p: tuple(b for b in news[p] if b not in olds[p]) for p in olds},
        removing={p: tuple(b for b in olds[p] if b not in news[p]) for p in olds},
        topic_id=topic_id,
    )


def reassignment_waves(names: list[str], ids: dict[str, uuid.UUID], partitions: int) -> list[Wave]:
    """The sets Kafka's reassignment makes when new replicas catch up at once, wave by wave:
    topics start moving; per partition a leader epoch bump, the ISR expansion, the election of
    a new leader with ISR = target; topics finish moving."""
    moving = [
        (TopicNode.path(n), TopicNode.encode(moving_assignment(partitions, ids[n]), RELEASE))
        for n in names
    ]
    final = {p: new_replicas(p) for p in range(partitions)}
    finished = [
        (TopicNode.path(n), TopicNode.encode(TopicAssignment(final, topic_id=ids[n]), RELEASE))
        for n in names
    ]
    bump: Wave = []
    expand: Wave = []
    elect: Wave = []
    for n in names:
        for p in range(partitions):
            old, new = old_replicas(p), new_replicas(p)
            path = PartitionStateNode.path(n, p)
            adding = tuple(b for b in new if b not in old)
            bump.append((path, state_bytes(old[0], 1, old)))
            expand.append((path, state_bytes(old[0], 1, old + adding)))
            elect.append((path, state_bytes(new[0], 2, new)))
    return [moving, bump, expand, elect, finished]


def raw_reassign(
    zk: str, names: list[str], ids: dict[str, uuid.UUID], scale: Scale
) -> tuple[float, float]:
    """(seconds of the writes, seconds it took to encode them beforehand)."""
    encoding = perf_counter()
    trigger = reassignment_trigger(names, scale.partitions)
    waves = reassignment_waves(names, ids, scale.partitions)
    encode_s = perf_counter() - encoding
    client = start_client(zk)
    try:
        started = perf_counter()
        client.create(ReassignPartitionsNode.path(), trigger)
        for wave in waves:
            drain(pipelined((client.set_async(path, data) for path, data in wave), scale.window))
        client.delete(ReassignPartitionsNode.path())
        return perf_counter() - started, encode_s
    finally:
        stop_client(client)


# ---- the controller's process -----------------------------------------------------------


def peak_rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB on Linux


async def run_controller(conn: Connection, zk: str) -> None:
    store = await ZkStore.connect(zk, session_timeout=SESSION_TIMEOUT)
    try:
        result = await store.elect_controller(broker_id=0, release=RELEASE)
        if not result.won:
            raise RuntimeError(f"broker 0 lost the election to {result.controller_id}")
        settings = Settings(
            zookeeper=zk, kafka_version=RELEASE, auto_leader_rebalance=False
        )
        context = ControllerContext(0, result.epoch, result.epoch_zk_version)
        controller = Controller(context, store, settings, image=None)
        started = perf_counter()
        await controller.start()
        await controller.loaded.wait()
        conn.send(("loaded", perf_counter() - started))
        await asyncio.to_thread(conn.recv)  # the parent is done with the controller
        await controller.stop()
    finally:
        await store.close()
    conn.send(("rss", peak_rss_kb()))


def controller_process(conn: Connection, zk: str) -> None:
    """Entry point of the child process that runs the controller (and nothing else)."""
    configure_logging("warning")
    try:
        asyncio.run(run_controller(conn, zk))
    except BaseException as e:
        conn.send(("error", repr(e)))
        raise


async def receive(conn: Connection, kind: str, timeout: float) -> tuple[Any, ...]:
    def wait() -> tuple[Any, ...]:
        if not conn.poll(timeout):
            raise SystemExit(f"the controller process sent no {kind!r} within {timeout:.0f} s")
        message: tuple[Any, ...] = conn.recv()
        return message

    message = await asyncio.to_thread(wait)
    if message[0] != kind:
        raise SystemExit(f"the controller process failed: {message[1:]}")
    return message[1:]


# ---- the controller's reassignment, driven from here --------------------------------------


async def controller_reassign(
    store: ZkStore, names: list[str], partitions: int, timeout: float
) -> float | None:
    """Seconds from writing `/admin/reassign_partitions` until the controller deleted it, or
    None on timeout (the node is then deleted here)."""
    trigger = reassignment_trigger(names, partitions)
    path = ReassignPartitionsNode.path()
    deleted = asyncio.Event()

    def on_change(stat: Any) -> None:
        if stat is None:
            deleted.set()

    started = perf_counter()
    await store.create(path, trigger)
    watch = await store.watch_exists(path, on_change)
    try:
        await asyncio.wait_for(deleted.wait(), timeout)
        return perf_counter() - started
    except TimeoutError:
        return None
    finally:
        watch.cancel()


async def check_reassigned(store: ZkStore, names: list[str], partitions: int) -> list[str]:
    """What is wrong with the moved topics in ZooKeeper (empty when the reassignment is done)."""
    problems: list[str] = []
    topics = await asyncio.gather(*(store.get(TopicNode.path(n)) for n in names))
    for name, node in zip(names, topics, strict=True):
        if node is None:
            problems.append(f"{name}: topic znode missing")
            continue
        assignment = TopicNode.decode_at(node[0], name)
        target = {p: new_replicas(p) for p in range(partitions)}
        if assignment.partitions != target:
            problems.append(f"{name}: replicas {assignment.partitions}, expected {target}")
        if any(assignment.adding.values()) or any(assignment.removing.values()):
            problems.append(f"{name}: still reassigning {assignment.adding} {assignment.removing}")
    paths = [(n, p) for n in names for p in range(partitions)]
    states = await asyncio.gather(*(store.get(PartitionStateNode.path(n, p)) for n, p in paths))
    for (name, p), node in zip(paths, states, strict=True):
        problems.extend(state_problems(f"{name}-{p}", node, new_replicas(p)))
    return problems


def state_problems(
    where: str, node: tuple[bytes, Any] | None, target: tuple[int, ...]
) -> list[str]:
    if node is None:
        return [f"{where}: state znode missing"]
    try:
        state = PartitionStateNode.decode(node[0])
    except ZnodeFormatError as e:
        return [f"{where}: undecodable state ({e})"]
    if state.leader not in target or not set(state.isr) <= set(target):
        return [f"{where}: leader {state.leader}, isr {list(state.isr)}, target {list(target)}"]
    return []


# ---- the run ----------------------------------------------------------------------------


async def run(zk: str, scale: Scale, reassign: bool, timeout: float) -> Report:
    moved = scale.names(0, scale.reassign_topics)
    baseline = scale.names(scale.reassign_topics, scale.reassign_topics)
    async with await ZkStore.connect(zk, session_timeout=SESSION_TIMEOUT) as store:
        started = perf_counter()
        ids = await create_cluster(store, scale)
        setup_s = perf_counter() - started
        raw_loads = [await asyncio.to_thread(raw_load, zk, scale.window)]

        context = multiprocessing.get_context("spawn")  # a fresh interpreter: its own RSS
        ours, theirs = context.Pipe()
        child = context.Process(target=controller_process, args=(theirs, zk), name="controller")
        child.start()
        try:
            (load_s,) = await receive(ours, "loaded", CHILD_TIMEOUT)
            reassign_s = None
            if reassign:
                reassign_s = await controller_reassign(store, moved, scale.partitions, timeout)
            ours.send("stop")
            (rss_kb,) = await receive(ours, "rss", CHILD_TIMEOUT)
        finally:
            await asyncio.to_thread(child.join, 30)
            if child.is_alive():
                child.terminate()
        report = Report(setup_s, znodes(scale), raw_loads, load_s, rss_kb, reassign_s)

        # Raw load again: the best of both raw runs is the baseline, so ZooKeeper warming up
        # does not favour the controller.
        report.raw_loads.append(await asyncio.to_thread(raw_load, zk, scale.window))
        if reassign:
            if reassign_s is None:
                with contextlib.suppress(NoNodeError):
                    await store.delete(ReassignPartitionsNode.path())
            else:
                report.failures = await check_reassigned(store, moved, scale.partitions)
            report.raw_reassign_s, report.encode_s = await asyncio.to_thread(
                raw_reassign, zk, baseline, ids, scale
            )
    return report


def znodes(scale: Scale) -> int:
    return len(BROKERS) + scale.topics * (2 + 2 * scale.partitions)


def verdict(ok: bool, target: str) -> str:
    return f"target {target}: {'met' if ok else 'MISSED'}"


def print_report(report: Report, scale: Scale, timeout: float) -> int:
    """Print the figures; returns the exit status."""
    total = scale.topics * scale.partitions
    moved = scale.reassign_topics * scale.partitions
    raw = min(report.raw_loads)
    print(
        f"Controller at scale: {scale.topics} topics x {scale.partitions} partitions x RF 3 "
        f"({total} partitions), {len(BROKERS)} brokers, window {scale.window}"
    )
    print(f"setup (not measured): {report.znodes} znodes in {report.setup_s:.1f} s")
    runs = ", ".join(f"{s:.2f}" for s in report.raw_loads)
    print(f"{'path':<62}{'seconds':>10}")
    print(f"{f'raw pipelined kazoo reads (best of {runs})':<62}{raw:>10.2f}")
    print(f"{'controller cold start (start() to loaded)':<62}{report.load_s:>10.2f}")
    ratio = report.load_s / raw
    print(f"ratio load/raw: {ratio:.2f}x ({verdict(ratio <= LOAD_TARGET, f'<= {LOAD_TARGET}x')})")
    status = 0
    if report.raw_reassign_s is not None:
        status = print_reassignment(report, moved, timeout)
    rss_mb = report.rss_kb / 1024
    print(
        f"peak RSS of the controller process: {rss_mb:.0f} MB "
        f"({verdict(rss_mb <= RSS_TARGET_MB, f'<= {RSS_TARGET_MB:.0f} MB')})"
    )
    return status


def print_reassignment(report: Report, moved: int, timeout: float) -> int:
    raw = report.raw_reassign_s or 0.0
    label = f"raw pipelined kazoo reassignment writes ({moved} partitions)"
    print(f"{label:<62}{raw:>10.2f}")
    print(f"{'  for information: encoding them beforehand took':<62}{report.encode_s or 0:>10.2f}")
    if report.reassign_s is None:
        print(
            f"FAILED: the controller did not finish the reassignment within {timeout:g} s "
            "(/admin/reassign_partitions was never deleted)"
        )
        return 1
    label = f"controller reassignment end to end ({moved} partitions)"
    print(f"{label:<62}{report.reassign_s:>10.2f}")
    ratio = report.reassign_s / raw
    target = f"<= {REASSIGN_TARGET}x"
    print(f"ratio reassignment/raw: {ratio:.2f}x ({verdict(ratio <= REASSIGN_TARGET, target)})")
    if report.failures:
        print(f"FAILED: the reassignment left {len(report.failures)} problems, e.g.:")
        for problem in report.failures[:5]:
            print(f"  {problem}")
        return 1
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000, help="topics (10000)")
    parser.add_argument("--partitions-per-topic", type=int, default=10, help="(10)")
    parser.add_argument(
        "--reassign-topics",
        type=int,
        default=1_000,
        help="topics moved, and as many for raw (1000)",
    )
    parser.add_argument("--skip-reassign", action="store_true", help="load and RSS only")
    parser.add_argument("--window", type=int, default=5_000, help="raw requests in flight (5000)")
    parser.add_argument("--timeout", type=float, default=300.0, help="for the reassignment (300)")
    parser.add_argument("--zk-heap", default="1g", help="ZooKeeper's JVM heap (1g)")
    args = parser.parse_args()
    scale = Scale(args.topics, args.partitions_per_topic, args.reassign_topics, args.window)
    reassign = not args.skip_reassign
    if min(scale.topics, scale.partitions, scale.window) < 1 or (
        reassign and not 1 <= scale.reassign_topics <= scale.topics // 2
    ):
        parser.error("need topics, partitions and window >= 1 and 1 <= reassign-topics <= topics/2")
    configure_logging("warning")
    with EmbeddedZooKeeper(heap=args.zk_heap) as zk:
        report = asyncio.run(run(zk.connect_string, scale, reassign, args.timeout))
    sys.exit(print_report(report, scale, args.timeout))


if __name__ == "__main__":
    main()
