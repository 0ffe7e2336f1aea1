"""Chaos across hosts (issue 43): replication survives crashed leaders and cut-off hosts.

Three hosts (tests/integration/hosts.py) carry a three-server ZooKeeper ensemble and one
`zkbroker run` each, with its own broker id, address and log directory; a fourth host carries
the clients: an idempotent acks=all producer that writes down every acknowledged record as its
delivery report arrives, and a consumer group committing offsets. Meanwhile rounds of faults
hit the brokers: the leader of a partition (of the topic, or the group's partition of
__consumer_offsets) killed with SIGKILL and started again on its log dir once its ZooKeeper
session has expired, or a broker's host cut off at the switch for a
while (shorter or longer than the ZooKeeper session), then healed. After each round the cluster
must heal (every replica back in the ISR) and the producer must go on.

Then what Kafka promises with replication factor 3, min.insync.replicas 2 and clean leader
election (docs/kafka-behaviour.md §24) is checked against the brokers: every acknowledged record
is in the log at its offset (one librdkafka acknowledged implicitly, without an offset, is in
it somewhere), each partition's offsets run without a gap from the log start,
nothing was written twice (idempotence), what the group read stayed, each replica's log on disk
equals the leader's, and the group's committed offsets (sampled during and after every round)
never went back.

ZKBROKER_CHAOS_ROUNDS sets the rounds (3 by default, 20 in `make chaos`); ZKBROKER_CHAOS_SEED
replays a run's choices (each run prints its seed). On failure the process logs stay in the
test's tmp dir (pytest keeps the last three); the data directories are removed, unless
ZKBROKER_CHAOS_KEEP=1 keeps everything (the brokers' log dirs too).
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.integration.hosts import Host, Hosts, available
from tests.shared_data import under_ci
from zkbroker.broker.protocol.records.batch_v2 import RecordBatchV2
from zkbroker.broker.protocol.records.reader import iter_batches
from zkbroker.broker.rules.jvm_collections import java_abs_hash

ROUNDS = int(os.environ.get("ZKBROKER_CHAOS_ROUNDS", "3"))
SEED = int(os.environ.get("ZKBROKER_CHAOS_SEED", str(random.SystemRandom().randrange(1 << 31))))
BROKERS = 3
TOPIC, PARTITIONS, GROUP = "chaos", 3, "chaos-group"
OFFSETS_TOPIC, OFFSETS_PARTITIONS = "__consumer_offsets", 3
# Short enough that a killed broker's registration goes soon and a long cut expires the
# session; ZooKeeper's tickTime of 500 ms (hosts.py) allows 1 to 10 s.
SESSION_MS = 4000
BROKER_CONFIGS = (
    # A follower cut off leaves the ISR after 2 s, so acks=all goes on with the other two.
    "replica.lag.time.max.ms=2000",
    # One broker per process: without it each process would make __consumer_offsets with
    # replication factor 1 (zkbroker's default follows the brokers of the process).
    "offsets.topic.replication.factor=3",
    f"offsets.topic.num.partitions={OFFSETS_PARTITIONS}",
    "group.initial.rebalance.delay.ms=0",
)
# Each round must end healed within these (a hang otherwise).
HEAL_S, PROGRESS_S, RESTART_S = 90.0, 45.0, 60.0

# Skipped where hosts cannot be built (not root, no iproute2), but never under CI, which
# installs iproute2 and runs as root: there a missing part fails the test.
needs_hosts = pytest.mark.skipif(
    available() is not None and not under_ci(), reason=str(available())
)

# The clients, run inside the client host (the test's own namespace cannot reach the hosts).
CLIENTS = r"""
import json, signal, sys, time
from confluent_kafka import (
    Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer, TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

STOP = []
signal.signal(signal.SIGTERM, lambda *_: STOP.append(1))


def events(path):
    out = open(path, "a", buffering=1)
    return lambda **fields: out.write(json.dumps({"t": round(time.time(), 3), **fields}) + "\n")


def produce(bootstrap, topic, partitions, acked_path, events_path):
    acked, event = open(acked_path, "a", buffering=1), events(events_path)

    def delivered(err, msg):
        # No offset (-1): librdkafka acknowledged the batch implicitly, as a later batch of
        # the producer succeeded while this one's answer was lost (IMPLICITACK).
        if err is None:
            offset = -1 if msg.offset() is None else msg.offset()
            acked.write(f"{msg.partition()} {offset} {msg.value().decode()}\n")
        else:
            event(kind="not_delivered", error=str(err), value=msg.value().decode())

    producer = Producer({
        "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
        "linger.ms": 5, "message.timeout.ms": 60000,
        "error_cb": lambda err: event(kind="error", error=str(err), fatal=err.fatal()),
    })
    seq = 0
    while not STOP:
        for p in range(int(partitions)):
            producer.produce(topic, f"{p}-{seq}".encode(), partition=p, on_delivery=delivered)
        seq += 1
        producer.poll(0.02)
    event(kind="stopped", produced=seq * int(partitions), unflushed=producer.flush(60))


def consume(bootstrap, topic, group, consumed_path, events_path):
    consumed, event = open(consumed_path, "a", buffering=1), events(events_path)
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
        "enable.auto.commit": True, "auto.commit.interval.ms": 300,
        "error_cb": lambda err: event(kind="error", error=str(err)),
    })
    consumer.subscribe([topic], on_assign=lambda c, ps: event(
        kind="assigned", partitions=[p.partition for p in ps]))
    while not STOP:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            event(kind="consume_error", error=str(msg.error()))
            continue
        consumed.write(f"{msg.partition()} {msg.offset()} {msg.value().decode()}\n")
    consumer.close()


def create(bootstrap, topic, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 90
    while True:  # until the three processes registered and one of them is the controller
        try:
            cluster = admin.list_topics(timeout=10)
            if len(cluster.brokers) == 3 and cluster.controller_id >= 0:
                break
        except KafkaException:
            pass
        assert time.monotonic() < deadline, "the three brokers never showed up"
        time.sleep(0.5)
    new = NewTopic(topic, int(partitions), 3, config={"min.insync.replicas": "2"})
    admin.create_topics([new])[topic].result(30)


def state(bootstrap):
    cluster = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    print(json.dumps({
        name: {p: {"leader": m.leader, "isr": sorted(m.isrs)} for p, m in t.partitions.items()}
        for name, t in cluster.topics.items()
    }))


def committed(bootstrap, group, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    asked = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    answer = asked[group].result(15)
    print(json.dumps({tp.partition: tp.offset for tp in answer.topic_partitions
                      if tp.topic == topic}))


def read(bootstrap, topic, partitions, out_path):
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "chaos-reader", "enable.auto.commit": False,
        "isolation.level": "read_uncommitted", "enable.partition.eof": True,
    })
    tps = [TopicPartition(topic, p) for p in range(int(partitions))]
    marks = {tp.partition: consumer.get_watermark_offsets(tp, timeout=15) for tp in tps}
    consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in marks.items()])
    records = {p: [] for p in marks}
    done = {p for p, (low, high) in marks.items() if high <= low}
    deadline = time.monotonic() + 120
    while len(done) < len(marks):
        assert time.monotonic() < deadline, f"read stuck: {marks} done {sorted(done)}"
        msg = consumer.poll(1)
        if msg is None or (msg.error() and msg.error().code() == KafkaError._PARTITION_EOF):
            continue
        if msg.error():
            raise KafkaException(msg.error())
        records[msg.partition()].append([msg.offset(), msg.value().decode()])
        if msg.offset() + 1 >= marks[msg.partition()][1]:
            done.add(msg.partition())
    consumer.close()
    with open(out_path, "w") as out:
        json.dump({"marks": marks, "records": records}, out)


COMMANDS = {"produce": produce, "consume": consume, "create": create, "state": state,
            "committed": committed, "read": read}
COMMANDS[sys.argv[1]](*sys.argv[2:])
"""


def broker_argv(broker: int, address: str, connect: str, log_dir: Path) -> list[str]:
    """The command line of one broker: the README's three-host guide uses the same flags."""
    configs = [a for c in BROKER_CONFIGS for a in ("--broker-config", c)]
    return [
        *(sys.executable, "-m", "zkbroker", "run", "--broker-ids", str(broker)),
        *("--host", address, "--port", "9092", "--zookeeper", connect),
        *("--log-dir", str(log_dir), "--broker-session-timeout-ms", "6000"),
        *("--zookeeper-session-timeout-ms", str(SESSION_MS), *configs),
    ]


@dataclass
class Chaos:
    """The cluster under test: its hosts, brokers, clients and what happened, in order."""

    hosts: Hosts
    work: Path
    connect: str = ""
    brokers: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    clients_running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    timeline: list[str] = field(default_factory=list)
    committed: list[tuple[str, dict[int, int]]] = field(default_factory=list)
    began: float = field(default_factory=time.monotonic)
    passed: bool = False

    @property
    def client(self) -> Host:
        return self.hosts.hosts[BROKERS]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{h.address}:9092" for h in self.hosts.hosts[:BROKERS])

    def note(self, text: str) -> None:
        line = f"{time.monotonic() - self.began:7.1f}s {text}"
        self.timeline.append(line)
        print(line, flush=True)

    def broker_argv(self, i: int) -> list[str]:
        return broker_argv(i, self.hosts.hosts[i].address, self.connect, self.work / f"logs{i}")

    def launch(self, i: int) -> Launch:
        """Start broker `i`'s process on its host."""
        log = self.work / f"zkbroker{i}.log"
        with log.open("a") as out:
            out.write(f"--- test: start at {time.monotonic() - self.began:.1f}s\n")
        begin = log.stat().st_size
        return Launch(i, self.hosts.hosts[i].start(self.broker_argv(i), log), log, begin)

    def serving(self, launch: Launch) -> bool:
        """True once the launched broker serves, False when it was refused because its id is
        still registered (by the ZooKeeper session of a killed process); any other exit
        fails the test."""
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            with launch.log.open("rb") as f:
                f.seek(launch.begin)
                output = f.read()
            if b"bootstrap_servers=" in output:
                self.brokers[launch.broker] = launch.process
                return True
            if launch.process.poll() is not None:
                assert b"is already registered" in output, (
                    f"broker {launch.broker} exited with {launch.process.returncode}" + self.logs()
                )
                return False
            time.sleep(0.2)
        raise AssertionError(f"broker {launch.broker} neither served nor exited" + self.logs())

    def restart(self, i: int) -> None:
        deadline, refused = time.monotonic() + RESTART_S, 0
        while not self.serving(self.launch(i)):
            refused += 1
            assert time.monotonic() < deadline, f"broker {i} never started again" + self.logs()
            time.sleep(0.5)
        self.note(f"broker {i} started again ({refused} starts refused before)")

    def kill(self, i: int) -> None:
        self.hosts.hosts[i].kill(self.brokers.pop(i))

    def run_client(self, *args: str, timeout: float = 60) -> str:
        done = self.client.run(
            [sys.executable, str(self.work / "clients.py"), *args], timeout=timeout
        )
        if done.returncode != 0:
            raise ClientFailed(f"clients {args[0]}: {done.stderr[-2000:]}")
        return done.stdout

    def start_client(self, name: str, command: str, *args: str) -> None:
        """Start a long-running client (`command` of CLIENTS) on the client host."""
        argv = [sys.executable, str(self.work / "clients.py"), command, *args]
        self.clients_running[name] = self.client.start(argv, self.work / f"{name}.log")

    def stop_client(self, name: str, timeout: float = 90) -> None:
        process = self.clients_running.pop(name)
        process.send_signal(signal.SIGTERM)
        try:
            assert process.wait(timeout) == 0, f"{name} failed" + self.logs()
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{name} did not stop in {timeout} s" + self.logs()) from None

    def state(self) -> dict[str, dict[int, Replicas]]:
        """Each topic's partitions as Metadata answers them."""
        answer = json.loads(self.run_client("state", self.bootstrap))
        return {
            t: {int(p): Replicas(m["leader"], m["isr"]) for p, m in parts.items()}
            for t, parts in answer.items()
        }

    def sample_committed(self, label: str) -> None:
        self.start_committed_sample(label)()

    def start_committed_sample(self, label: str) -> Callable[[], None]:
        """Ask for the group's committed offsets now; the call returned records the answer
        (skipped when the coordinator cannot answer in time: the monotonicity check needs
        samples, not every one)."""
        out = self.work / f"committed-{len(self.committed)}.out"
        argv = [sys.executable, str(self.work / "clients.py"), "committed", self.bootstrap]
        process = self.client.start([*argv, GROUP, TOPIC], out)

        def collect() -> None:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                self.client.kill(process)
            lines = out.read_text().splitlines()
            out.unlink()
            if process.returncode != 0 or not lines or not lines[-1].startswith("{"):
                self.note(f"committed offsets not available ({label})")
                return
            answer = json.loads(lines[-1])
            self.committed.append((label, {int(p): o for p, o in answer.items()}))

        return collect

    def acked_count(self) -> int:
        path = self.work / "acked.txt"
        if not path.exists():
            return 0
        with path.open("rb") as f:
            return sum(1 for _ in f)

    def logs(self) -> str:
        return _tails(self.work) + "\ntimeline:\n" + "\n".join(self.timeline)


@dataclass(frozen=True)
class Replicas:
    leader: int
    isr: list[int]


@dataclass
class Launch:
    broker: int
    process: subprocess.Popen[bytes]
    log: Path
    #: Where this start's output begins in the broker's log (restarts append to it).
    begin: int


class ClientFailed(Exception):
    """A one-shot client (state, committed, read) exited with an error."""


def _tails(work: Path) -> str:
    return "".join(
        f"\n--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
        for p in sorted(work.glob("*.log"))
    )


@pytest.fixture
def chaos(tmp_path: Path) -> Iterator[Chaos]:
    built = Hosts(BROKERS + 1)
    made = Chaos(built, tmp_path)
    try:
        yield made
    finally:
        built.close()
        if not os.environ.get("ZKBROKER_CHAOS_KEEP"):
            _remove_data(tmp_path, keep_logs=not made.passed)


def _remove_data(work: Path, *, keep_logs: bool) -> None:
    """Everything the test wrote, but what a failed run leaves as evidence: the process
    logs, the acknowledged and consumed records, what the final read saw."""
    for path in work.iterdir():
        if keep_logs and path.suffix in (".log", ".txt", ".json"):
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


@needs_hosts
@pytest.mark.timeout(120 + 75 * ROUNDS)
def test_acknowledged_records_survive_crashed_leaders_and_cut_off_hosts(chaos: Chaos) -> None:
    rng = random.Random(SEED)
    chaos.note(f"seed {SEED} (ZKBROKER_CHAOS_SEED={SEED} replays it), {ROUNDS} rounds")
    set_up(chaos)
    for r in range(ROUNDS):
        run_round(chaos, rng, r)
    evidence = finish(chaos)
    found = problems(evidence)
    assert not found, "\n".join(found) + "\n" + chaos.logs()
    chaos.passed = True


def set_up(chaos: Chaos) -> None:
    """The ensemble on the brokers' hosts, the three brokers, the topic, then the producer
    and the group on the client host; ready once the group has committed."""
    work = chaos.work
    (work / "clients.py").write_text(CLIENTS)
    chaos.connect = chaos.hosts.zookeeper_ensemble(work, servers=BROKERS)
    for launch in [chaos.launch(i) for i in range(BROKERS)]:
        assert chaos.serving(launch), f"broker {launch.broker} did not start" + chaos.logs()
    chaos.run_client("create", chaos.bootstrap, TOPIC, str(PARTITIONS), timeout=150)
    chaos.start_client(
        "producer", "produce", chaos.bootstrap, TOPIC, str(PARTITIONS),
        str(work / "acked.txt"), str(work / "producer-events.log"),
    )  # fmt: skip
    chaos.start_client(
        "consumer", "consume", chaos.bootstrap, TOPIC, GROUP,
        str(work / "consumed.txt"), str(work / "consumer-events.log"),
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not any(o >= 0 for _, offsets in chaos.committed for o in offsets.values()):
        assert time.monotonic() < deadline, "the group never committed" + chaos.logs()
        time.sleep(1)
        chaos.sample_committed("start")
    wait_healed(chaos, "start")


# Each round's fault, in turn: a crashed leader, a cut longer than the ZooKeeper session (the
# broker's registration goes, leaders move), a crashed leader, a cut shorter than the session
# (only the ISR shrinks; the broker stays registered).
KINDS = ("kill", "long cut", "kill", "short cut")


def run_round(chaos: Chaos, rng: random.Random, r: int) -> None:
    kind = KINDS[r % len(KINDS)]
    if kind == "kill":
        kill_round(chaos, rng, r)
    else:
        session_s = SESSION_MS / 1000
        span = (1.5, 2.5) if kind == "long cut" else (0.4, 0.8)
        cut_round(chaos, rng, r, session_s * rng.uniform(*span))
    chaos.sample_committed(f"round {r} after the fault")
    wait_healed(chaos, f"round {r}")
    chaos.sample_committed(f"round {r} healed")


def group_partition(group: str, partitions: int) -> int:
    """The __consumer_offsets partition of `group` (Kafka's ``Utils.abs(groupId.hashCode) %
    offsets.topic.num.partitions``)."""
    return java_abs_hash(group) % partitions


def _some_leader(chaos: Chaos, rng: random.Random) -> tuple[str, int]:
    """A leader at random: of a partition of the topic, or of the group's offsets (which the
    group coordinator writes): the broker and what it leads."""
    state = chaos.state()
    offsets = group_partition(GROUP, OFFSETS_PARTITIONS)
    led = [(f"{TOPIC}-{p}", m.leader) for p, m in state[TOPIC].items()]
    led.append((f"{OFFSETS_TOPIC}-{offsets} (the group's)", state[OFFSETS_TOPIC][offsets].leader))
    led = [(what, leader) for what, leader in led if leader >= 0]
    assert led, "no partition has a leader" + chaos.logs()
    what, leader = rng.choice(sorted(led))
    return f"leader of {what}", leader


def kill_round(chaos: Chaos, rng: random.Random, r: int) -> None:
    role, leader = _some_leader(chaos, rng)
    chaos.note(f"round {r}: kill -9 broker {leader}, {role}")
    chaos.kill(leader)
    time.sleep(rng.uniform(0.5, 3.0))
    chaos.sample_committed(f"round {r} broker {leader} down")
    chaos.restart(leader)


def cut_round(chaos: Chaos, rng: random.Random, r: int, seconds: float) -> None:
    role, leader = _some_leader(chaos, rng)
    victim = leader if rng.random() < 0.7 else rng.randrange(BROKERS)
    host = chaos.hosts.hosts[victim]
    role = f", {role}" if victim == leader else ""
    chaos.note(f"round {r}: cut off host {victim} ({host.address}{role}) for {seconds:.1f}s")
    ends = time.monotonic() + seconds
    chaos.hosts.cut_off(host)
    try:
        time.sleep(seconds / 2)
        # In the background: asking a coordinator that is cut off must not make the cut longer.
        sampled = chaos.start_committed_sample(f"round {r} host {victim} cut off")
        time.sleep(max(0.0, ends - time.monotonic()))
    finally:
        chaos.hosts.heal(host)
    chaos.note(f"round {r}: host {victim} healed")
    sampled()


def wait_healed(chaos: Chaos, label: str, *, producing: bool = True) -> None:
    """Every broker running, every replica of the topic and of the group's offsets back in
    the ISR, and (while producing) new acknowledgements: a hang fails the test here."""
    deadline = time.monotonic() + HEAL_S
    while True:
        dead = {i: p.returncode for i, p in chaos.brokers.items() if p.poll() is not None}
        assert not dead, f"{label}: brokers exited on their own: {dead}" + chaos.logs()
        try:
            lagging = _out_of_sync(chaos.state())
        except (ClientFailed, subprocess.TimeoutExpired) as e:
            lagging = [str(e)]
        if not lagging:
            break
        assert time.monotonic() < deadline, f"{label}: not healed in {HEAL_S}s: {lagging}" + (
            chaos.logs()
        )
        time.sleep(1)
    acked = chaos.acked_count()
    deadline = time.monotonic() + PROGRESS_S
    while producing and chaos.acked_count() < acked + 30:
        assert time.monotonic() < deadline, (
            f"{label}: the producer got no acknowledgement in {PROGRESS_S}s once healed"
            + chaos.logs()
        )
        time.sleep(0.5)
    chaos.note(f"{label}: healed, every replica in sync, {chaos.acked_count()} records acked")


def _out_of_sync(state: dict[str, dict[int, Replicas]]) -> list[str]:
    """Partitions of the topic and of __consumer_offsets without a leader or a full ISR."""
    lagging = [f"{t} missing" for t in (TOPIC, OFFSETS_TOPIC) if t not in state]
    for topic in (TOPIC, OFFSETS_TOPIC):
        for p, m in sorted(state.get(topic, {}).items()):
            if m.leader == -1 or m.isr != list(range(BROKERS)):
                lagging.append(f"{topic}-{p} leader {m.leader} isr {m.isr}")
    return lagging


@dataclass
class Evidence:
    """What the clients saw and what the brokers hold at the end."""

    acked: list[tuple[int, int, str]]
    consumed: list[tuple[int, int, str]]
    #: partition -> offset -> value, read from the leaders from the log start.
    read: dict[int, dict[int, str]]
    #: partition -> (log start, high watermark) at that read.
    marks: dict[int, tuple[int, int]]
    #: broker -> partition -> offset -> value, from the segment files after a clean stop.
    disk: dict[int, dict[int, dict[int, str]]]
    committed: list[tuple[str, dict[int, int]]]


def finish(chaos: Chaos) -> Evidence:
    """Stop the clients (the producer flushes what it holds), let the cluster settle, read
    every partition from its start, stop the brokers cleanly and read their segment files."""
    work = chaos.work
    chaos.stop_client("producer")
    chaos.stop_client("consumer")
    chaos.sample_committed("after the clients stopped")
    wait_healed(chaos, "end", producing=False)
    chaos.run_client("read", chaos.bootstrap, TOPIC, str(PARTITIONS), str(work / "read.json"))
    read = json.loads((work / "read.json").read_text())
    for i, process in sorted(chaos.brokers.items()):
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"broker {i} did not stop in 30 s" + chaos.logs()) from None
    chaos.note(f"end: {chaos.acked_count()} records acked, brokers stopped")
    return Evidence(
        acked=_records(work / "acked.txt"),
        consumed=_records(work / "consumed.txt"),
        read={int(p): {o: v for o, v in rs} for p, rs in read["records"].items()},
        marks={int(p): (m[0], m[1]) for p, m in read["marks"].items()},
        disk={b: _disk_log(work / f"logs{b}", b) for b in range(BROKERS)},
        committed=chaos.committed,
    )


def _records(path: Path) -> list[tuple[int, int, str]]:
    rows = (line.split(" ") for line in path.read_text().splitlines())
    return [(int(p), int(o), v) for p, o, v in rows]


def _disk_log(root: Path, broker: int) -> dict[int, dict[int, str]]:
    """Each partition's records as the broker's segment files hold them (a process with one
    broker keeps Kafka's layout in the --log-dir itself, several brokers one dir each)."""
    broker_dir = root / f"broker-{broker}" if (root / f"broker-{broker}").is_dir() else root
    logs: dict[int, dict[int, str]] = {}
    for p in range(PARTITIONS):
        records = logs.setdefault(p, {})
        for segment in sorted((broker_dir / f"{TOPIC}-{p}").glob("*.log")):
            for batch in iter_batches(segment.read_bytes()):
                assert isinstance(batch, RecordBatchV2) and batch.is_valid(), (segment, batch)
                for record in batch.records():
                    records[record.offset] = (record.value or b"").decode()
    return logs


def problems(e: Evidence) -> list[str]:
    """Every broken promise, each with its evidence."""
    checks: list[Callable[[Evidence], list[str]]] = [
        _not_vacuous, _lost, _gaps, _written_twice, _replicas_differ, _committed_went_back,
    ]  # fmt: skip
    return [problem for check in checks for problem in check(e)]


def _listed(title: str, items: list[str], shown: int = 15) -> list[str]:
    if not items:
        return []
    more = f" (and {len(items) - shown} more)" if len(items) > shown else ""
    return [f"{title}: {len(items)}{more}", *(f"  {i}" for i in items[:shown])]


def _not_vacuous(e: Evidence) -> list[str]:
    per_partition = {p: sum(1 for q, _, _ in e.acked if q == p) for p in range(PARTITIONS)}
    found = [f"nothing acknowledged on {TOPIC}-{p}" for p, n in per_partition.items() if n == 0]
    if not e.consumed:
        found.append("the group consumed nothing")
    return found


def _lost(e: Evidence) -> list[str]:
    values = {p: set(records.values()) for p, records in e.read.items()}
    lost = [
        f"{TOPIC}-{p} offset {o}: acknowledged {v!r}, the log holds {e.read[p].get(o)!r}"
        for p, o, v in e.acked
        if o >= 0 and e.read[p].get(o) != v
    ]
    lost += [
        f"{TOPIC}-{p}: acknowledged {v!r} (implicitly: no offset), not in the log"
        for p, o, v in e.acked
        if o < 0 and v not in values[p]
    ]
    gone = [
        f"{TOPIC}-{p} offset {o}: the group read {v!r}, the log holds {e.read[p].get(o)!r}"
        for p, o, v in e.consumed
        if e.read[p].get(o) != v
    ]
    return _listed("acknowledged records lost or changed", lost) + _listed(
        "records the group read that the log no longer holds", gone
    )


def _gaps(e: Evidence) -> list[str]:
    found = []
    for p, (start, high) in sorted(e.marks.items()):
        if start != 0:
            found.append(f"{TOPIC}-{p}: the log starts at {start}, nothing deleted any")
        missing = sorted(set(range(start, high)) - set(e.read[p]))
        if missing:
            found.append(f"{TOPIC}-{p}: offsets skipped below the high watermark {high}: "
                         f"{_ranges(missing)}")  # fmt: skip
    return found


def _ranges(offsets: list[int]) -> str:
    spans: list[list[int]] = []
    for o in offsets:
        if spans and spans[-1][1] == o - 1:
            spans[-1][1] = o
        else:
            spans.append([o, o])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans[:20])


def _written_twice(e: Evidence) -> list[str]:
    twice = []
    for p, records in sorted(e.read.items()):
        where: dict[str, list[int]] = {}
        for o, v in sorted(records.items()):
            where.setdefault(v, []).append(o)
        twice += [f"{TOPIC}-{p} {v!r} at offsets {os}" for v, os in where.items() if len(os) > 1]
    return _listed("records written twice by the idempotent producer", twice)


def _replicas_differ(e: Evidence) -> list[str]:
    found = []
    for b, logs in sorted(e.disk.items()):
        for p, records in sorted(logs.items()):
            high = e.marks[p][1]
            end = max(records, default=-1) + 1
            differ = [o for o in range(high) if records.get(o) != e.read[p].get(o)]
            if end != high or differ:
                first = differ[0] if differ else end
                found.append(
                    f"broker {b}'s log of {TOPIC}-{p} ends at {end} (the leader's high watermark: "
                    f"{high}); first offset where it differs: {first} "
                    f"(disk {records.get(first)!r}, read {e.read[p].get(first)!r})"
                )
    return found


def _committed_went_back(e: Evidence) -> list[str]:
    found = []
    last: dict[int, tuple[int, str]] = {}
    for label, offsets in e.committed:
        for p in sorted(set(offsets) | set(last)):
            now = offsets.get(p, -1)
            if p in last and now < last[p][0]:
                found.append(f"the group's committed offset of {TOPIC}-{p} went back from "
                             f"{last[p][0]} ({last[p][1]}) to {now} ({label})")  # fmt: skip
            if now >= 0:
                last[p] = (now, label)
    for p, (offset, label) in sorted(last.items()):
        if offset > e.marks[p][1]:
            found.append(f"{TOPIC}-{p}: committed {offset} ({label}) beyond the log end")
    return found


def test_the_readme_guide_uses_the_flags_this_test_runs() -> None:
    """The README's "One cluster on three hosts" command is this test's broker command: every
    option it gives, and every broker config, is one the brokers here run with."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    guide = readme.split("#### One cluster on three hosts", 1)[1].split("\n### ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", guide, re.S)
    assert block is not None, "the guide's command is gone"
    words = shlex.split(block.group(1).replace("\\\n", " "), comments=True)
    assert words[:2] == ["zkbroker", "run"], words
    ours = broker_argv(0, "10.0.0.1", "10.0.0.1:2181", Path("/var/lib/zkbroker"))
    given = [w for w in words if w.startswith("--")]
    assert set(given) <= set(ours), set(given) - set(ours)
    configs = [words[i + 1] for i, w in enumerate(words) if w == "--broker-config"]
    assert set(configs) <= set(BROKER_CONFIGS), set(configs) - set(BROKER_CONFIGS)
