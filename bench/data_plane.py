"""Produce and consume throughput and latency: zkbroker beside librdkafka's mock cluster, then the
RSS of a zkbroker process holding 1 GB of records with --log-dir.

Both targets are driven by the same confluent-kafka producer and consumer in one run: the mock
(`test.mock.num.brokers=3`, inside a producer, its brokers on 127.0.0.1) and `zkbroker run
--brokers 3` in its own process. Produce: `--rounds` rounds of N 1 KB records (acks=all, linger
5 ms) to a fresh topic by a new producer, connections and metadata inside the time (beside it,
for information, a warmed-up producer); rounds because the mock trims a partition's log beyond
a few MB. Consume: a fresh consumer reads them back. `--warm-up-rounds` rounds run first,
untimed, on both targets (the first consumer makes the broker create `__consumer_offsets`,
which would otherwise weigh on one round of ten). Latency: one record every 2 ms, receive
minus send, p50 and p99. RSS: `--hold-mb` MB sent to a zkbroker with `--log-dir`.

Targets (issue 35): throughput >= 1.0x the mock's, latency p50 <= 2x; 1 GB held is not 1 GB of
RSS.
Run: python bench/data_plane.py [--records N] [--rounds R] [--warm-up-rounds W]
    [--latency-records N] [--hold-mb MB]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

REPO = Path(__file__).resolve().parents[1]
TOPIC = "bench"
RECORD = b"x" * 1024


def _free_port_run(count: int) -> int:
    """A port P with P..P+count-1 free (zkbroker numbers its brokers' ports from P)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count > 65535:
            continue
        ok = True
        for p in range(base, base + count):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no free port range")


@contextlib.contextmanager
def zkbroker(*extra: str) -> Iterator[tuple[str, int]]:
    """A `zkbroker run --brokers 3` process; yields (bootstrap servers, pid)."""
    port = _free_port_run(3)
    exe = shutil.which("zkbroker", path=str(REPO / ".venv" / "bin")) or "zkbroker"
    proc = subprocess.Popen(
        [
            exe,
            "run",
            "--brokers",
            "3",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--kafka-version",
            "3.9",
            "--log-level",
            "warning",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    bootstrap = ",".join(f"127.0.0.1:{port + i}" for i in range(3))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                Producer({"bootstrap.servers": bootstrap}).list_topics(timeout=2)
                break
            except Exception:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("zkbroker did not start") from None
                time.sleep(0.5)
        yield bootstrap, proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@contextlib.contextmanager
def mock_cluster() -> Iterator[tuple[str, int]]:
    """librdkafka's mock cluster, kept alive by a producer instance; yields its bootstrap."""
    holder = Producer({"test.mock.num.brokers": 3, "bootstrap.servers": ""})
    brokers = holder.list_topics(timeout=10).brokers.values()
    yield ",".join(f"{b.host}:{b.port}" for b in brokers), os.getpid()
    holder.flush(5)


def _ensure_topic(bootstrap: str, name: str) -> None:
    """Created by the broker on first metadata request (both brokers auto-create topics);
    every record goes to partition 0, whatever partition count each picks."""
    producer = Producer({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        topic = producer.list_topics(name, timeout=5).topics.get(name)
        ready = topic is not None and topic.error is None and 0 in topic.partitions
        if ready and topic.partitions[0].leader >= 0:
            return
        time.sleep(0.2)
    raise RuntimeError(f"topic {name} did not appear")


def produce_throughput(bootstrap: str, n: int, topic: str = TOPIC) -> float:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "queue.buffering.max.messages": max(n, 100_000),
        }
    )
    started = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                producer.produce(topic, RECORD, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) != 0:
        raise RuntimeError("produce did not complete")
    return n / (time.perf_counter() - started)


def warm_produce_throughput(bootstrap: str, n: int, topic: str) -> float:
    """`produce_throughput` by a producer whose connections and metadata are already up."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "queue.buffering.max.messages": max(n, 100_000),
        }
    )
    producer.produce(topic, b"warm-up", partition=0)
    if producer.flush(30) != 0:
        raise RuntimeError("warm-up record not delivered")
    started = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                producer.produce(topic, RECORD, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) != 0:
        raise RuntimeError("produce did not complete")
    return n / (time.perf_counter() - started)


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def consume_throughput(bootstrap: str, n: int, topic: str = TOPIC) -> float:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = 0
    started = time.perf_counter()
    deadline = started + 120
    while got < n and time.perf_counter() < deadline:
        # Ask for exactly what is left: consume() waits its timeout for a larger count.
        for message in consumer.consume(min(n - got, 10_000), 1.0):
            if message.error() is None:
                got += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    if got < n:
        raise RuntimeError(f"consumed {got} of {n}")
    return n / elapsed


def latency(bootstrap: str, n: int) -> tuple[float, float]:
    topic = f"{TOPIC}-latency"
    _ensure_topic(bootstrap, topic)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-latency",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    delays: list[float] = []
    done = threading.Event()

    def read() -> None:
        while len(delays) < n and not done.is_set():
            message = consumer.poll(0.05)
            if message is not None and message.error() is None:
                (sent,) = struct.unpack(">d", (message.value() or b"")[:8])
                delays.append(time.perf_counter() - sent)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(1.0)  # the consumer's first fetch is parked
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for _ in range(n):
        producer.produce(topic, struct.pack(">d", time.perf_counter()) + RECORD[8:], partition=0)
        producer.poll(0)
        time.sleep(0.002)
    producer.flush(30)
    reader.join(30)
    done.set()
    consumer.close()
    delays.sort()
    return delays[len(delays) // 2] * 1000, delays[int(len(delays) * 0.99) - 1] * 1000


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2_000, help="records per round")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--warm-up-rounds", type=int, default=1)
    parser.add_argument("--latency-records", type=int, default=500)
    parser.add_argument("--hold-mb", type=int, default=1024)
    args = parser.parse_args()

    results: dict[str, tuple[float, float, float, float, float]] = {}
    print(f"start: {_load()} (2 cores shared: figures move with it)", flush=True)
    for name, target in (("librdkafka mock", mock_cluster), ("zkbroker", zkbroker)):
        with target() as (bootstrap, _pid):
            # Rounds on fresh topics: librdkafka's mock keeps only a few MB per partition
            # (it trims the log's start), so one long run could not be consumed from 0.
            for round_no in range(args.warm_up_rounds):
                topic = f"{TOPIC}-warm-up-{round_no}"
                _ensure_topic(bootstrap, topic)
                produce_throughput(bootstrap, args.records, topic)
                consume_throughput(bootstrap, args.records, topic)
            produce_s = consume_s = warm_s = 0.0
            for round_no in range(args.rounds):
                topic = f"{TOPIC}-{round_no}"
                _ensure_topic(bootstrap, topic)
                produce_s += args.records / produce_throughput(bootstrap, args.records, topic)
                consume_s += args.records / consume_throughput(bootstrap, args.records, topic)
                warm_topic = f"{TOPIC}-warm-{round_no}"
                _ensure_topic(bootstrap, warm_topic)
                warm_s += args.records / warm_produce_throughput(
                    bootstrap, args.records, warm_topic
                )
            produced = args.rounds * args.records / produce_s
            consumed = args.rounds * args.records / consume_s
            warm = args.rounds * args.records / warm_s
            p50, p99 = latency(bootstrap, args.latency_records)
            results[name] = (produced, consumed, p50, p99, warm)
        print(
            f"{name:<16} produce {produced:>9,.0f} rec/s ({produced / 1024:6.1f} MB/s)  "
            f"consume {consumed:>9,.0f} rec/s ({consumed / 1024:6.1f} MB/s)  "
            f"latency p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  "
            f"(warm producer {warm:>9,.0f} rec/s)",
            flush=True,
        )
    mock, ours = results["librdkafka mock"], results["zkbroker"]
    checks = [
        ("produce throughput >= 1.0x", ours[0] >= mock[0], ours[0] / mock[0]),
        ("consume throughput >= 1.0x", ours[1] >= mock[1], ours[1] / mock[1]),
        ("latency p50 <= 2x", ours[2] <= 2 * mock[2], ours[2] / mock[2]),
    ]
    for label, ok, ratio in checks:
        print(f"  {label:<28} {ratio:5.2f}x  {'met' if ok else 'MISSED'}")
    print(f"  {'(warm producer produce)':<28} {ours[4] / mock[4]:5.2f}x  information only")
    print(f"end: {_load()}", flush=True)

    with tempfile.TemporaryDirectory(prefix="zkbroker-hold-") as log_dir:
        with zkbroker("--log-dir", log_dir) as (bootstrap, pid):
            _ensure_topic(bootstrap, TOPIC)
            before = rss_kib(pid)
            produce_throughput(bootstrap, args.hold_mb * 1024)
            after = rss_kib(pid)
            on_disk = sum(f.stat().st_size for f in Path(log_dir).rglob("*.log"))
        print(
            f"holding {on_disk / 2**20:,.0f} MiB in --log-dir: zkbroker RSS {before / 1024:,.0f} "
            f"MiB before, {after / 1024:,.0f} MiB after ({(after - before) / 1024:+,.0f} MiB)  "
            f"{'met' if (after - before) * 1024 < on_disk / 4 else 'MISSED'} "
            "(< 1/4 of the bytes held)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
