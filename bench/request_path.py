"""Metadata round trip: zkbroker beside librdkafka's mock cluster, the same client, one run.

One confluent-kafka producer per target keeps one connection open and calls
`list_topics(topic=..., timeout=...)` `--requests` times (one Metadata request each, for one
existing topic); the targets take turns, `--rounds` rounds each, so both see the same load.
zkbroker is `zkbroker run --brokers 1` in its own process; the mock is
`test.mock.num.brokers=1` inside the producer. Printed: p50 and p99 per target, the ratio, and
the median of the per-round ratios (the machine's load moves single figures).

Target (issue 35): p50 <= 1.0x the mock, p99 <= 1.5x. Printed, never asserted.
Run: python bench/request_path.py [--requests N] [--rounds R] [--pid-file PATH]
[--baseline-rev REV] (`--pid-file`: the broker's pid, for bench/profile_request_path.sh;
`--baseline-rev`: that revision's zkbroker too, exported with `git archive`, in the same rounds.)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import Producer

REPO = Path(__file__).resolve().parents[1]
TOPIC = "request-path"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def zkbroker(root: Path | None = None) -> Iterator[tuple[str, int]]:
    """A `zkbroker run --brokers 1` process, of the code under `root` when given (an export
    of another revision, first on its PYTHONPATH); yields (bootstrap, pid)."""
    port = _free_port()
    env = os.environ if root is None else {**os.environ, "PYTHONPATH": str(root)}
    exe = shutil.which("zkbroker", path=str(REPO / ".venv" / "bin")) or "zkbroker"
    proc = subprocess.Popen(
        [
            exe,
            "run",
            "--brokers",
            "1",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--kafka-version",
            "3.9",
            "--log-level",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    bootstrap = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                # log_level 0: the refused connects while it starts are expected.
                Producer({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=2)
                break
            except Exception:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("zkbroker did not start") from None
                time.sleep(0.3)
        yield bootstrap, proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _client(config: dict[str, object]) -> Producer:
    """A producer whose connection is up and whose topic exists (both auto-create it)."""
    producer = Producer(config)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        topic = producer.list_topics(TOPIC, timeout=5).topics.get(TOPIC)
        if topic is not None and topic.error is None and topic.partitions:
            return producer
        time.sleep(0.2)
    raise RuntimeError(f"topic {TOPIC} did not appear")


def round_trips(producer: Producer, n: int) -> list[float]:
    """n Metadata round trips, in microseconds."""
    times: list[float] = []
    clock = time.perf_counter
    for _ in range(n):
        started = clock()
        producer.list_topics(TOPIC, timeout=5)
        times.append((clock() - started) * 1e6)
    return times


def _cpu_s(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a process so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def _export(rev: str, into: Path) -> bool:
    """The tree of git revision `rev` under `into` (False outside a git checkout)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True)
    if archive.returncode != 0:
        return False
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2_000, help="requests per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pid-file", type=Path)
    parser.add_argument(
        "--baseline-rev", help="also this git revision's zkbroker, in the same rounds (HEAD...)"
    )
    args = parser.parse_args()

    print(f"start: load average {os.getloadavg()[0]:.2f}", flush=True)
    mock_name = "librdkafka mock"
    with contextlib.ExitStack() as stack:
        bootstrap, pid = stack.enter_context(zkbroker())
        if args.pid_file:
            args.pid_file.write_text(str(pid))
        clients = {"zkbroker": _client({"bootstrap.servers": bootstrap})}
        pids = {"zkbroker": pid}
        if args.baseline_rev:
            tree = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="zkb-base-")))
            if _export(args.baseline_rev, tree):
                name = f"zkbroker {args.baseline_rev}"
                base_bootstrap, pids[name] = stack.enter_context(zkbroker(tree))
                clients[name] = _client({"bootstrap.servers": base_bootstrap})
        clients[mock_name] = _client({"test.mock.num.brokers": 1, "bootstrap.servers": ""})
        for client in clients.values():
            round_trips(client, 200)  # warm-up: code paths, caches
        samples: dict[str, list[float]] = {name: [] for name in clients}
        ratios: dict[str, list[tuple[float, float]]] = {name: [] for name in pids}
        cpu = dict.fromkeys(pids, 0.0)
        for _ in range(args.rounds):
            this_round: dict[str, list[float]] = {}
            for name, client in clients.items():
                before = sum(_cpu_s(pids[name])) if name in pids else 0.0
                this_round[name] = round_trips(client, args.requests)
                if name in pids:
                    cpu[name] += sum(_cpu_s(pids[name])) - before
                samples[name] += this_round[name]
            mock = this_round[mock_name]
            for name in pids:
                ours = this_round[name]
                ratios[name].append(
                    (_pct(ours, 0.5) / _pct(mock, 0.5), _pct(ours, 0.99) / _pct(mock, 0.99))
                )
    count = args.rounds * args.requests
    for name, values in samples.items():
        line = f"{name:<24} p50 {_pct(values, 0.5):7.1f} µs  p99 {_pct(values, 0.99):7.1f} µs"
        if name in cpu:
            line += f"  process CPU {cpu[name] / count * 1e6:5.1f} µs/request (clock ticks)"
        print(line)
    mock_all = samples[mock_name]
    for name in pids:
        p50 = _pct(samples[name], 0.5) / _pct(mock_all, 0.5)
        p99 = _pct(samples[name], 0.99) / _pct(mock_all, 0.99)
        per_round = ", ".join(f"{a:.2f}/{b:.2f}" for a, b in ratios[name])
        print(f"{name}:")
        print(f"  p50 <= 1.0x the mock  {p50:5.2f}x  {'met' if p50 <= 1.0 else 'MISSED'}")
        print(f"  p99 <= 1.5x the mock  {p99:5.2f}x  {'met' if p99 <= 1.5 else 'MISSED'}")
        print(
            f"  per round p50/p99: {per_round}  (median "
            f"{statistics.median(r[0] for r in ratios[name]):.2f}x / "
            f"{statistics.median(r[1] for r in ratios[name]):.2f}x)"
        )
    print(f"end: load average {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
