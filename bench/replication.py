"""Replication (issue 43): what a replication factor of 3 costs produce throughput and memory,
how far behind a follower is, and how fast a new follower catches up; each target printed
beside its measured value and the baseline measured in the same run (docs/kafka-behaviour.md
§24, docs/design.md "The data plane").

1. Throughput, in one process (`zkbroker.Cluster(brokers=3)` in the bench's process): 1 KB
   records to partition 0 of a topic with replicas [0, 1, 2] with acks=all, against a topic
   with replicas [0] with acks=1 (the same leader, records and client: confluent-kafka, linger
   5 ms), `--rounds` interleaved rounds of `--records` records after one untimed warm-up round
   each, a fresh producer per round (connections and metadata inside the time). A round counts
   only if every record's delivery report came back without error. Medians. The ISR of the
   factor-3 topic is printed after the rounds (a smaller ISR would flatter acks=all).
2. RSS: `zkbroker run --brokers 3` (logs in memory) in a child process, `--rss-mb` MB of 1 KB
   records produced with acks=all to a topic with replicas [0] in one run and [0, 1, 2] in
   another; VmRSS of /proc/<pid>/status after the producer's flush (the acks=all answers mean
   every follower has the records). Judged on the whole RSS; its growth is printed beside.
3. Replication lag, one record at a time (acks=1, linger 0; the next record 1 ms after the
   previous one reached the follower), `--lag-records` records after 50 untimed ones, to a
   topic with replicas [0, 1]. The follower's log is watched by a task on the follower's own
   event loop that wakes on its `LogManager.wait_for_append` and stamps when each offset
   appears (`time.perf_counter`, one clock for the whole bench process). In one process
   (the cluster of 1.) the leader's appends are stamped in the append itself (the log's
   `on_leader_append` hook, wrapped while the bench runs), and the target is judged on
   append -> follower has it (the follower's stamp comes up to a loop turn after its append:
   the figure errs high). Between processes the leader is a `zkbroker run --broker-ids 0`
   child and the follower `Cluster(broker_ids=(1,))` in the bench's process on the child's
   ZooKeeper (fetching over the inter-broker listener); the leader's append is not visible
   there, so the target is judged on the acks=1 delivery report -> follower has it (0 when the
   follower had it first), and send -> follower has it (an upper bound: it includes the
   Produce request's way to the leader) is printed beside (and in one process the ack-based
   figure too). Each line also counts the records that took over 100 ms: a follower's fetch
   that waited out `replica.fetch.wait.max.ms` (500 ms) although the record had come.
4. Catch-up between processes: the same leader child, a topic with replicas [0, 2] created
   while broker 2 does not exist (leader 0, ISR [0]), `--catch-up-mb` MB of 16 KB records
   produced with acks=1 and large batches; then `Cluster(broker_ids=(2,))` starts in the
   bench's process and is timed from its start until its log end offset reaches the leader's.
   The rate is the follower's log bytes over that time (its start included); the rate from its
   first fetched byte is printed beside.

Targets (issue 43): 1. >= 0.8x; 2. <= 1.2x; 3. p99 <= 5 ms in one process, <= 20 ms between
processes; 4. >= 200 MB/s (MB here is 10^6 bytes, MiB 2^20). Timings are printed, never
asserted. Issue 43 also asks that bench/cold_start.py, bench/request_path.py and
bench/data_plane.py do not regress: `make bench` runs them; this script does not repeat them.
Run: python bench/replication.py [--records N] [--rounds R] [--rss-mb MB] [--lag-records N]
    [--catch-up-mb MB]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import operator
import os
import selectors
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from zkbroker import Cluster
from zkbroker.broker.storage import LogManager, PartitionLog

ZKBROKER = Path(sys.executable).parent / "zkbroker"
RECORD = b"x" * 1024
LARGE_RECORD = b"y" * 16 * 1024
MB = 1_000_000
LAG_WARM_UP = 50
LAG_GAP_S = 0.001


@dataclass
class Check:
    """One issue target: what it says, what was measured, and whether it holds."""

    target: str
    measured: str
    baseline: str
    ok: bool


# ---- processes and clients -------------------------------------------------------------------


@dataclass
class Child:
    """A `zkbroker run` child process and what its stdout announced."""

    process: subprocess.Popen[bytes]
    bootstrap: str
    zookeeper: str

    @property
    def pid(self) -> int:
        return self.process.pid


def _announced(process: subprocess.Popen[bytes], timeout_s: float) -> dict[str, str]:
    """The bootstrap_servers= and zookeeper= lines `zkbroker run` prints once it serves."""
    assert process.stdout is not None
    found: dict[str, str] = {}
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while len(found) < 2:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("zkbroker run did not announce itself")
            if selector.select(0.5):
                line = process.stdout.readline().decode().strip()
                key, _, value = line.partition("=")
                if key in ("bootstrap_servers", "zookeeper"):
                    found[key] = value
    return found


@contextlib.contextmanager
def zkbroker_run(*options: str) -> Iterator[Child]:
    """`zkbroker run --port 0 <options>` in its own session, stopped (SIGTERM) at the end."""
    process = subprocess.Popen(
        [
            str(ZKBROKER),
            "run",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--log-level",
            "warning",
            *options,
        ],
        stdout=subprocess.PIPE,
        bufsize=0,  # unbuffered: a line read leaves none behind in a buffer select cannot see
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        found = _announced(process, 60)
        yield Child(process, found["bootstrap_servers"], found["zookeeper"])
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def create_topic(bootstrap: str, topic: str, replicas: list[int]) -> None:
    """One partition on `replicas` (the first its leader), ready once Metadata names it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=1, replication_factor=-1, replica_assignment=[replicas])
    future = admin.create_topics([new])[topic]
    future.result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic, timeout=5).topics.get(topic)
        part = meta.partitions.get(0) if meta is not None and meta.error is None else None
        if part is not None and part.leader == replicas[0]:
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {topic} has no leader {replicas[0]}")


def isr_of(bootstrap: str, topic: str) -> list[int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return list(admin.list_topics(topic, timeout=10).topics[topic].partitions[0].isrs)


def produce_all(bootstrap: str, topic: str, n: int, record: bytes, config: dict[str, Any]) -> float:
    """Produce `n` records to partition 0 with a new producer; seconds from its creation's
    end to the last delivery report. Raises unless every record was acknowledged."""
    counts = {"ok": 0, "failed": 0}

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        counts["failed" if err is not None else "ok"] += 1

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "queue.buffering.max.messages": max(n, 100_000),
            "on_delivery": delivered,
            **config,
        }
    )
    started = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                producer.produce(topic, record, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    left = producer.flush(300)
    elapsed = time.perf_counter() - started
    if left or counts["failed"] or counts["ok"] != n:
        raise RuntimeError(f"{topic}: {counts['ok']} of {n} acknowledged, {counts}, {left} left")
    return elapsed


#: Large batches: what "a fast producer" fills a partition with (2. and 4.).
FAST = {"linger.ms": 20, "batch.size": 1_000_000, "queue.buffering.max.kbytes": 2_097_151}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


# ---- watching a log's end from its broker's loop --------------------------------------------


@dataclass
class EndWatcher:
    """When each offset of one partition first appeared in one broker's log, stamped by a task
    on that broker's event loop that wakes at every append (`wait_for_append`): no polling, no
    hook in the follower's path."""

    logs: LogManager
    topic: str
    stamps: dict[int, float] = field(default_factory=dict)

    async def run(self) -> None:
        seen = -1
        while True:
            log = self.logs.get(self.topic, 0)
            end = log.log_end_offset if log is not None else 0
            if seen < 0:
                seen = end  # only offsets appended from now on are stamped
            elif end > seen:
                now = time.perf_counter()
                for offset in range(seen, end):
                    self.stamps[offset] = now
                seen = end
            await self.logs.wait_for_append(1.0)


@contextlib.contextmanager
def leader_appends(cluster: Cluster, logs: LogManager, topic: str) -> Iterator[dict[int, float]]:
    """When each offset of partition 0 of `topic` was appended by its leader, stamped in the
    append itself: the log's `on_leader_append` hook (which tells the replica manager, whose
    answer wakes the followers) is wrapped while the measurement runs."""
    _wait_for(lambda: logs.get(topic, 0) is not None, f"the leader's log of {topic}", 30)
    log = logs.get(topic, 0)
    assert log is not None
    stamps: dict[int, float] = {}
    original = log.on_leader_append
    seen = [log.log_end_offset]

    def stamped(appended: PartitionLog) -> None:
        now = time.perf_counter()
        for offset in range(seen[0], appended.log_end_offset):
            stamps[offset] = now
        seen[0] = appended.log_end_offset
        if original is not None:
            original(appended)

    def wrap() -> None:
        seen[0] = log.log_end_offset
        log.on_leader_append = stamped

    cluster.run_sync(wrap)
    try:
        yield stamps
    finally:
        cluster.run_sync(partial(setattr, log, "on_leader_append", original))


async def _spawn(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    return asyncio.get_running_loop().create_task(coro)


@contextlib.contextmanager
def watching(cluster: Cluster, watchers: list[EndWatcher]) -> Iterator[None]:
    tasks = [cluster.call(_spawn(w.run())) for w in watchers]
    time.sleep(0.1)  # each task has read the end it starts from
    try:
        yield
    finally:
        for task in tasks:
            cluster.run_sync(task.cancel)


# ---- 1. throughput ---------------------------------------------------------------------------


def bench_throughput(cluster: Cluster, records: int, rounds: int) -> Check:
    bootstrap = cluster.bootstrap_servers
    cases: dict[str, tuple[str, list[int], dict[str, Any]]] = {
        "acks=1, factor 1": ("rf1", [0], {"acks": 1}),
        "acks=all, factor 3": ("rf3", [0, 1, 2], {"acks": "all"}),
    }
    for topic, replicas, _ in cases.values():
        create_topic(bootstrap, topic, replicas)
    rates: dict[str, list[float]] = {name: [] for name in cases}
    order = list(cases)
    for round_no in range(rounds + 1):
        for name in order if round_no % 2 else order[::-1]:
            topic, _, acks = cases[name]
            seconds = produce_all(bootstrap, topic, records, RECORD, {"linger.ms": 5, **acks})
            if round_no:  # round 0 warms up
                rates[name].append(records / seconds)
    medians = {name: statistics.median(r) for name, r in rates.items()}
    one, three = medians["acks=1, factor 1"], medians["acks=all, factor 3"]
    print(f"\n1. produce throughput in one process ({rounds} rounds of {records:,} 1 KB records)")
    for name, values in rates.items():
        rate = medians[name]
        print(
            f"  {name:20s} median {rate:>9,.0f} rec/s ({rate * len(RECORD) / MB:5.1f} MB/s)"
            f"  rounds {', '.join(f'{v:,.0f}' for v in values)}"
        )
    isr = isr_of(bootstrap, "rf3")
    print(f"  ISR of the factor-3 topic after the rounds: {isr}")
    shrunk = "" if len(isr) == 3 else ", ISR shrank"
    return Check(
        "1. acks=all RF3 / acks=1 RF1 throughput >= 0.8x",
        f"{three / one:.2f}x ({three:,.0f} rec/s{shrunk})",
        f"{one:,.0f} rec/s",
        three / one >= 0.8,
    )


# ---- 2. RSS ------------------------------------------------------------------------------------


def rss_after(mb: int, replicas: list[int]) -> tuple[int, int]:
    """(RSS before, RSS after) in KiB of a `zkbroker run --brokers 3` holding `mb` MB."""
    with zkbroker_run("--brokers", "3") as child:
        create_topic(child.bootstrap, "held", replicas)
        before = rss_kib(child.pid)
        produce_all(
            child.bootstrap, "held", mb * MB // len(RECORD), RECORD, {"acks": "all", **FAST}
        )
        time.sleep(1.0)
        return before, rss_kib(child.pid)


def bench_rss(mb: int) -> Check:
    one = rss_after(mb, [0])
    three = rss_after(mb, [0, 1, 2])
    print(f"\n2. RSS of `zkbroker run --brokers 3` holding {mb:,} MB (1 KB records, acks=all)")
    for name, (before, after) in (("factor 1", one), ("factor 3", three)):
        print(
            f"  {name:9s} {before / 1024:6,.0f} MiB before, {after / 1024:6,.0f} MiB after "
            f"({(after - before) / 1024:+,.0f} MiB)"
        )
    growth = (three[1] - three[0]) / max(one[1] - one[0], 1)
    print(f"  growth ratio factor 3 / factor 1: {growth:.2f}x (information)")
    ratio = three[1] / one[1]
    return Check(
        "2. RSS RF3 / RF1 <= 1.2x",
        f"{ratio:.2f}x ({three[1] / 1024:,.0f} MiB)",
        f"{one[1] / 1024:,.0f} MiB",
        ratio <= 1.2,
    )


# ---- 3. lag --------------------------------------------------------------------------------


@dataclass
class Lags:
    """Per record, seconds: append at the leader, the acks=1 report, the send -> follower."""

    from_append: list[float] = field(default_factory=list)
    from_ack: list[float] = field(default_factory=list)
    from_send: list[float] = field(default_factory=list)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(int(len(ordered) * q + 0.999999) - 1, 0)]


def _wait_for(ready: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.0002)


def measure_lag(
    bootstrap: str, topic: str, follower: EndWatcher, appended: dict[int, float] | None, n: int
) -> Lags:
    """One record at a time with acks=1: when it was sent, acknowledged, and reached the
    follower (and the leader's log, when `appended` has the leader's stamps)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0})
    report: dict[str, Any] = {}

    def delivered(err: KafkaError | None, msg: Message) -> None:
        report.update(at=time.perf_counter(), err=err, offset=msg.offset())

    lags = Lags()
    for i in range(LAG_WARM_UP + n):
        report.clear()
        sent = time.perf_counter()
        producer.produce(topic, RECORD, partition=0, on_delivery=delivered)
        deadline = time.monotonic() + 10
        while "at" not in report and time.monotonic() < deadline:
            producer.poll(0.05)
        if report.get("err") is not None or "at" not in report:
            raise RuntimeError(f"record not acknowledged: {report}")
        offset: int = report["offset"]
        _wait_for(
            partial(operator.contains, follower.stamps, offset), f"offset {offset} on the follower"
        )
        if i >= LAG_WARM_UP:
            at = follower.stamps[offset]
            lags.from_ack.append(max(at - report["at"], 0.0))
            lags.from_send.append(at - sent)
            if appended is not None:
                lags.from_append.append(at - appended[offset])
        time.sleep(LAG_GAP_S)
    producer.flush(10)
    return lags


def print_lags(title: str, lags: Lags) -> None:
    print(f"\n{title} ({len(lags.from_ack):,} records, ms)")
    for name, values in (
        ("append -> follower", lags.from_append),
        ("acks=1 report -> follower", lags.from_ack),
        ("send -> follower", lags.from_send),
    ):
        if values:
            p50, p99 = _pct(values, 0.5) * 1e3, _pct(values, 0.99) * 1e3
            slow = sum(v > 0.1 for v in values)
            print(
                f"  {name:26s} p50 {p50:6.2f}  p99 {p99:6.2f}  max {max(values) * 1e3:6.2f}"
                f"  over 100 ms: {slow}"
            )


def bench_lag_in_process(cluster: Cluster, n: int) -> Check:
    create_topic(cluster.bootstrap_servers, "lag", [0, 1])
    logs = cluster.engine.logs_of
    follower = EndWatcher(logs[1], "lag")
    with leader_appends(cluster, logs[0], "lag") as appended, watching(cluster, [follower]):
        lags = measure_lag(cluster.bootstrap_servers, "lag", follower, appended, n)
    print_lags("3a. replication lag in one process (replicas [0, 1])", lags)
    p99 = _pct(lags.from_append, 0.99) * 1e3
    return Check(
        "3a. lag p99 in one process <= 5 ms", f"{p99:.2f} ms (from the append)", "-", p99 <= 5
    )


def bench_lag_between(child: Child, n: int) -> Check:
    create_topic(child.bootstrap, "lag-between", [0, 1])
    with Cluster(broker_ids=(1,), zookeeper=child.zookeeper, port=0) as follower_cluster:
        follower = EndWatcher(follower_cluster.engine.logs_of[1], "lag-between")
        logs = follower_cluster.engine.logs_of[1]
        _wait_for(lambda: logs.get("lag-between", 0) is not None, "the follower's log", 30)
        with watching(follower_cluster, [follower]):
            lags = measure_lag(child.bootstrap, "lag-between", follower, None, n)
    print_lags("3b. replication lag between processes (leader 0 in a child, follower 1 here)", lags)
    p99 = _pct(lags.from_ack, 0.99) * 1e3
    return Check(
        "3b. lag p99 between processes <= 20 ms", f"{p99:.2f} ms (from the ack)", "-", p99 <= 20
    )


# ---- 4. catch-up ---------------------------------------------------------------------------------


def leader_end(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-replication"})
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(high)
    finally:
        consumer.close()


def bench_catch_up(child: Child, mb: int) -> Check:
    topic = "catch-up"
    create_topic(child.bootstrap, topic, [0, 2])  # broker 2 does not exist yet: ISR [0]
    n = mb * MB // len(LARGE_RECORD)
    produce_s = produce_all(child.bootstrap, topic, n, LARGE_RECORD, {"acks": 1, **FAST})
    end = leader_end(child.bootstrap, topic)
    started = time.perf_counter()
    first = 0.0
    with Cluster(broker_ids=(2,), zookeeper=child.zookeeper, port=0) as follower_cluster:
        up = time.perf_counter()
        logs = follower_cluster.engine.logs_of[2]
        deadline = time.monotonic() + 600
        while True:
            log = logs.get(topic, 0)
            reached = log.log_end_offset if log is not None else 0
            if reached and not first:
                first = time.perf_counter()
            if reached >= end:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the follower reached {reached} of {end}")
            time.sleep(0.002)
        done = time.perf_counter()
        size = log.size_bytes if log is not None else 0
    rate = size / MB / (done - started)
    print(
        f"\n4. catch-up between processes: {size / MB:,.0f} MB ({end:,} records of 16 KB; "
        f"produced at {n * len(LARGE_RECORD) / MB / produce_s:,.0f} MB/s)\n"
        f"  follower started in {(up - started) * 1e3:,.0f} ms, first bytes after "
        f"{(first - started) * 1e3:,.0f} ms, caught up after {(done - started):.2f} s\n"
        f"  from its first bytes: {size / MB / (done - first):,.0f} MB/s (information)"
    )
    return Check("4. catch-up between processes >= 200 MB/s", f"{rate:,.0f} MB/s", "-", rate >= 200)


# ---- main -------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=50_000, help="records per round (1.)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per case (1.)")
    parser.add_argument("--rss-mb", type=int, default=200, help="MB held (2.)")
    parser.add_argument("--lag-records", type=int, default=1_000, help="records timed (3.)")
    parser.add_argument("--catch-up-mb", type=int, default=500, help="MB to catch up (4.)")
    args = parser.parse_args()
    print(f"replication ({os.cpu_count()} CPUs, {_load()}: figures move with it)", flush=True)
    checks: list[Check] = []
    with Cluster(brokers=3, port=0) as cluster:
        checks.append(bench_throughput(cluster, args.records, args.rounds))
        checks.append(bench_lag_in_process(cluster, args.lag_records))
    checks.append(bench_rss(args.rss_mb))
    with zkbroker_run("--broker-ids", "0") as child:
        checks.append(bench_lag_between(child, args.lag_records))
        checks.append(bench_catch_up(child, args.catch_up_mb))
    print(f"\n{'target (issue 43)':50s} {'measured':26s} {'baseline (same run)':20s}")
    for check in sorted(checks, key=lambda c: c.target):
        verdict = "PASS" if check.ok else "MISS"
        print(f"{check.target:50s} {check.measured:26s} {check.baseline:20s} {verdict}")
    print(
        "no regression of cold start, the request path and the data plane: their own scripts "
        "(bench/cold_start.py, bench/request_path.py, bench/data_plane.py; `make bench` runs "
        "them), figures in bench/README.md"
    )
    print(f"end: {_load()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
