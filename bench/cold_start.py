"""Cold start: `zkbroker run --brokers 3` to the first Metadata answer, and a fresh cluster per
test from the pytest fixtures' recipe, each beside a baseline measured in the same run.

1. The command, from exec to the first Metadata answer listing 3 brokers (the wire client polls
   the first broker's port), median of `--runs`, interleaved with the baseline: the same command
   with the levers off (`ZKBROKER_CLASS_ARCHIVE=off`, `ZKBROKER_EARLY_ZOOKEEPER=off`). One run's
   log gives the breakdown (JVM started, ZooKeeper serving, brokers, first Metadata).
2. The embedded ZooKeeper alone, per JVM option set (the one shipped first), interleaved.
3. The fixtures: `Cluster(Settings(port=0, zookeeper=fresh_chroot(...)))` started and stopped
   on a ZooKeeper that runs already (what `zk_cluster_factory` does per test), in a child
   process, beside the same in a child running the code of `--baseline-rev` (default HEAD,
   exported with `git archive`; skipped outside a git checkout). On the first cluster of each
   child, `zk_cluster`'s cleaning (`ClusterReset.reset`) after a test that left nothing.

Targets (issues 35 and 45): the command ≤ 0.5 s (1.14 s before), a cluster per test ≤ 50 ms,
the cleaning ≤ 10 ms. Timings
are printed, never asserted. Run: python bench/cold_start.py [--runs N] [--clusters N]
[--baseline-rev REV] [--skip-flags]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from zkbroker.broker.jvm import class_archive  # noqa: E402
from zkbroker.broker.protocol.messages.metadata import MetadataRequest  # noqa: E402
from zkbroker.broker.toolkit.wire import WireClient  # noqa: E402
from zkbroker.broker.zookeeper import jvm_launch  # noqa: E402
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper  # noqa: E402

ZKBROKER = Path(sys.executable).parent / "zkbroker"
CLI_TARGET_S = 0.5
CLI_BEFORE_S = 1.14
FIXTURE_TARGET_MS = 50.0
CLEAN_TARGET_MS = 10.0
LEVERS_OFF = {class_archive.ENV: class_archive.OFF, "ZKBROKER_EARLY_ZOOKEEPER": "off"}
POLL_S = 0.002
TIMEOUT_S = 60.0


# ---- 1. the command -------------------------------------------------------------------------


def _free_port_base(count: int = 3) -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = int(s.getsockname()[1])
        if base + count >= 65535:
            continue
        try:
            for port in range(base + 1, base + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue


def _metadata_brokers(port: int) -> int:
    with WireClient("127.0.0.1", port) as client:
        return len(client.request(1, MetadataRequest(topics=[])).brokers)


def time_command(env: dict[str, str], log: Path | None = None) -> float:
    """Seconds from exec to a Metadata answer listing 3 brokers."""
    port = _free_port_base()
    command = [str(ZKBROKER), "run", "--brokers", "3", "--host", "127.0.0.1", "--port", str(port)]
    if log is not None:
        command += ["--log-format", "json"]
    err = log.open("w") if log is not None else subprocess.DEVNULL
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=env)
    try:
        while True:
            with contextlib.suppress(OSError):
                if _metadata_brokers(port) == 3:
                    return time.perf_counter() - started
            if process.poll() is not None:
                raise RuntimeError(f"zkbroker run exited with {process.returncode}")
            if time.perf_counter() - started > TIMEOUT_S:
                raise RuntimeError("no Metadata answer listing 3 brokers")
            time.sleep(POLL_S)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(30)
        if log is not None and err is not subprocess.DEVNULL:
            err.close()  # type: ignore[union-attr]


def breakdown(log: Path, started_at: float, total: float) -> list[tuple[str, float]]:
    """(step, ms after exec) from one run's JSON log."""
    wanted = {
        "zookeeper.starting": "JVM spawned",
        "zookeeper.started": "ZooKeeper serving",
        "controller.elected": "controller elected",
        "cluster.started": "3 brokers registered",
    }
    steps: list[tuple[str, float]] = []
    for line in log.read_text().splitlines():
        with contextlib.suppress(ValueError, KeyError):
            event = json.loads(line)
            name = wanted.pop(event["event"], None)
            if name is None and event["event"] == "broker.started":
                name = f"broker {event['broker_id']} started"
            if name is not None:
                at = datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00"))
                steps.append((name, (at.timestamp() - started_at) * 1000))
    steps.append(("first Metadata with 3 brokers", total * 1000))
    return steps


def bench_command(runs: int) -> None:
    on = dict(os.environ)
    on.pop(class_archive.ENV, None)
    on.pop("ZKBROKER_EARLY_ZOOKEEPER", None)
    off = {**on, **LEVERS_OFF}
    # The first run with the archive on writes it (at exit); the timed ones map it.
    time_command(on)
    times: dict[str, list[float]] = {"levers on": [], "baseline (levers off)": []}
    for _ in range(runs):
        times["levers on"].append(time_command(on))
        times["baseline (levers off)"].append(time_command(off))
    print(f"\n`zkbroker run --brokers 3` to first Metadata (median of {runs}, interleaved)")
    for name, values in times.items():
        print(f"  {name:24s} {statistics.median(values):6.3f} s   (min {min(values):.3f})")
    print(f"  target {CLI_TARGET_S} s; before this work {CLI_BEFORE_S} s on a quiet 2-core machine")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "run.log"
        wall = time.time()
        total = time_command(on, log)
        print("  where one run's time goes (ms after exec, levers on):")
        for name, ms in breakdown(log, wall, total):
            print(f"    {ms:7.0f}  {name}")


# ---- 2. the ZooKeeper JVM's options -----------------------------------------------------------

Variant = Callable[[list[str]], list[str]]


def _without(*flags: str) -> Variant:
    return lambda command: [c for c in command if c not in flags]


def _replace(old: str, new: str) -> Variant:
    return lambda command: [new if c == old else c for c in command]


def _without_prefix(prefix: str) -> Variant:
    return lambda command: [c for c in command if not c.startswith(prefix)]


VARIANTS: dict[str, tuple[bool, Variant]] = {
    "as shipped (archive, C1, serial GC)": (True, lambda c: c),
    "no archive": (False, lambda c: c),
    "archive without CRC check": (True, _without("-XX:+VerifySharedSpaces")),
    "archive, C1+C2 JIT": (True, _without("-XX:TieredStopAtLevel=1")),
    "archive, G1 GC": (True, _without("-XX:+UseSerialGC")),
    "archive, -Xmx64m": (True, _replace(f"-Xmx{jvm_launch.DEFAULT_HEAP}", "-Xmx64m")),
    "archive, -Xshare:off (no JDK archive)": (
        True,
        lambda c: [c[0], "-Xshare:off", *_without_prefix("-XX:SharedArchiveFile")(c)[1:]],
    ),
}


@contextlib.contextmanager
def _java_command_changed(variant: Variant) -> Iterator[None]:
    original = jvm_launch.build_java_command

    def changed(**kwargs: object) -> list[str]:
        return variant(original(**kwargs))  # type: ignore[arg-type]

    jvm_launch.build_java_command = changed  # type: ignore[assignment]
    try:
        yield
    finally:
        jvm_launch.build_java_command = original


def _cpu_s(pid: int | None) -> float:
    """CPU time a process used so far (user + system): steadier than wall time on a busy host."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_jvm_flags(runs: int) -> None:
    names = list(VARIANTS)
    with tempfile.TemporaryDirectory() as folder:
        EmbeddedZooKeeper(class_archive=folder).start().stop()  # writes the archive
        wall: dict[str, list[float]] = {name: [] for name in VARIANTS}
        cpu: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for round_ in range(runs):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                archive, variant = VARIANTS[name]
                with _java_command_changed(variant):
                    started = time.perf_counter()
                    zookeeper = EmbeddedZooKeeper(class_archive=folder if archive else False)
                    zookeeper.start()
                    wall[name].append(time.perf_counter() - started)
                    cpu[name].append(_cpu_s(zookeeper.pid))
                    zookeeper.stop()
    print(f"\nThe embedded ZooKeeper alone, until it serves (median of {runs}, order rotated)")
    for name in names:
        print(
            f"  {name:40s} {statistics.median(wall[name]) * 1000:6.0f} ms, "
            f"JVM CPU {statistics.median(cpu[name]) * 1000:5.0f} ms"
        )


# ---- 3. a cluster per test ---------------------------------------------------------------------

CHILD = """
import json, statistics, sys, time
from zkbroker.broker.cluster import Cluster
from zkbroker.broker.log import configure_logging
from zkbroker.broker.settings import Settings
from zkbroker.broker.toolkit.zookeeper import fresh_chroot
from zkbroker.broker.toolkit.pytest_plugin import ClusterReset
configure_logging("warning", "console")
connect, runs = sys.argv[1], int(sys.argv[2])
starts, stops, cleans = [], [], []
for i in range(runs + 1):
    t0 = time.perf_counter()
    cluster = Cluster(Settings(port=0, zookeeper=fresh_chroot(connect))).start()
    starts.append(time.perf_counter() - t0)
    if i == 0:  # zk_cluster's cleaning after a test that left nothing, on the first cluster
        reset = ClusterReset.capture(cluster)
        for _ in range(runs + 1):
            t = time.perf_counter()
            reset.reset()
            cleans.append(time.perf_counter() - t)
        reset.close()
    t1 = time.perf_counter()
    cluster.stop()
    stops.append(time.perf_counter() - t1)
print(json.dumps({"start": starts[1:], "stop": stops[1:], "clean": cleans[1:]}))
"""


def _fixture_child(root: Path, connect: str, runs: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, connect, str(runs)],
        env=env,
        cwd=tempfile.gettempdir(),
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _export(rev: str, into: Path) -> bool:
    if shutil.which("git") is None:
        return False
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=False
    )
    if archive.returncode != 0:
        return False
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return True


def bench_fixtures(clusters: int, rounds: int, baseline_rev: str | None) -> None:
    with contextlib.ExitStack() as stack:
        zookeeper = stack.enter_context(EmbeddedZooKeeper())
        roots: dict[str, Path] = {"this tree": ROOT}
        if baseline_rev:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            if _export(baseline_rev, tmp):
                roots[f"baseline ({baseline_rev})"] = tmp
        times: dict[str, dict[str, list[float]]] = {
            n: {"start": [], "stop": [], "clean": []} for n in roots
        }
        for _ in range(rounds):
            for name, root in roots.items():
                got = _fixture_child(root, zookeeper.connect_string, clusters)
                for key in ("start", "stop", "clean"):
                    times[name][key].extend(got[key])
    print(
        f"\nA fresh 3-broker cluster per test on a running ZooKeeper "
        f"({rounds} x {clusters} clusters per variant, interleaved children)"
    )
    for name, got in times.items():
        print(
            f"  {name:24s} start {statistics.median(got['start']) * 1000:6.1f} ms, "
            f"stop {statistics.median(got['stop']) * 1000:5.1f} ms, zk_cluster's cleaning "
            f"after a test that left nothing {statistics.median(got['clean']) * 1000:5.1f} ms "
            "(medians)"
        )
    print(f"  target: start ≤ {FIXTURE_TARGET_MS:g} ms, cleaning ≤ {CLEAN_TARGET_MS:g} ms")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-rev", default="HEAD")
    parser.add_argument("--skip-flags", action="store_true")
    args = parser.parse_args(argv)
    print(f"cold start ({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f})")
    bench_command(args.runs)
    if not args.skip_flags:
        bench_jvm_flags(args.runs)
    bench_fixtures(args.clusters, args.rounds, args.baseline_rev or None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
