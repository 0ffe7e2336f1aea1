"""Frame mutation for the robustness suite: seed requests, mutators, what Kafka does with a
frame, and the pipelined fuzz loop that sends them.

Seeds: every (API key, version) the fuzz cluster serves, in the `zkbroker.broker.protocol.samples`
variants plus a `real` one naming the cluster's topic and group; write APIs are tamed
(validate_only, absent names for deletes). `mutate` is driven only by a `random.Random(seed)`;
`bomb_frame` breaks the size prefix itself. `predict` says whether Kafka answers a frame or
closes the connection (docs/kafka-behaviour.md §0, §9 for ApiVersions): the fuzz loop pipelines
the frames Kafka answers and ends each batch with at most one it closes on, so both outcomes
are checked exactly. `hazard` names requests not sent (counted only): those that would write
more partitions than a fuzz run may keep, and any open bug of `test_known_bugs.py`.

Not here: sockets shared with the tests (`probes`), assertions, hypothesis.
"""

from __future__ import annotations

import dataclasses
import random
import socket
import struct
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.robustness.probes import Closed, FrameConn
from zkbroker.broker.protocol import (
    API_SPECS,
    CodecError,
    RequestHeader,
    decode_request_body,
    decode_request_header,
    decode_response,
    encode_request,
)
from zkbroker.broker.protocol.framing import Answer, Close, route
from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest
from zkbroker.broker.protocol.releases import parse_release
from zkbroker.broker.protocol.samples import VARIANTS, sample
from zkbroker.broker.settings import DEFAULT_MAX_REQUEST_BYTES
from zkbroker.handlers.registry import api_table
from zkbroker.zk_layout.release import release_name

RELEASE = "3.9"
RELEASE_NAME = release_name(parse_release(RELEASE))
RANGES: dict[int, tuple[int, int]] = dict(api_table(parse_release(RELEASE)).ranges)
MAX_REQUEST_BYTES = DEFAULT_MAX_REQUEST_BYTES

FUZZ_TOPIC = "fuzz-t"  # created by the fixture, 2 partitions, replication factor 2
FUZZ_GROUP = "fuzz-g"
ABSENT = "fuzz-absent"

# Issue 17, findings 1-2: one request's replica assignment runs on the event loop every
# broker of the process shares (2^31-1 partitions: 20 s frozen, 3 GB). Counts above this
# are not sent until the fix lands (test_known_bugs.py holds the strict xfails).
HAZARD_PARTITIONS = 100_000
# Not a bug any more (issue 17 finding 2 is fixed: growing fuzz-t to 46,335 partitions no
# longer holds anyone, test_known_bugs.py), but a bound the fuzz run still needs: every
# partition really written stays, as state of the controller, the image and the metadata
# watcher (its state watch), about 3 KB each in this process (46,335 partitions: RSS +135
# MB), and the mutation run's RSS budget is +50 MB for everything it sends. Real writes of
# more partitions than this are not sent.
HAZARD_WRITTEN_PARTITIONS = 1_000
# Issue 17, finding 4: Kafka refuses strings over Short.MAX_VALUE bytes at parse time.
MAX_STRING_BYTES = 0x7FFF

# APIs that may legitimately hold their answer up to the request's timeout_ms.
WAITING_APIS = frozenset({19, 20, 37, 43, 45})

_SIZE = struct.Struct(">i")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def api_name(api_key: int) -> str:
    spec = API_SPECS.get(api_key)
    return spec.name if spec is not None else f"key{api_key}"


def served_pairs() -> list[tuple[int, int]]:
    """Every (api key, version) the fuzz cluster serves, in order."""
    return [(k, v) for k, (low, high) in sorted(RANGES.items()) for v in range(low, high + 1)]


# ---------------------------------------------------------------------------------------
# Seeds
# ---------------------------------------------------------------------------------------

_REAL_STRINGS = {
    "name": FUZZ_TOPIC,
    "topic": FUZZ_TOPIC,
    "topic_name": FUZZ_TOPIC,
    "resource_name": FUZZ_TOPIC,
    "group_id": FUZZ_GROUP,
    "group": FUZZ_GROUP,
    "groups": FUZZ_GROUP,
    "key": FUZZ_GROUP,
    "coordinator_keys": FUZZ_GROUP,
    "client_software_name": "zkbroker-fuzz",
    "client_software_version": "1.0",
    "member_id": "",
    "group_instance_id": None,
    "rack": None,
    "states_filter": "Stable",
    "types_filter": "classic",
}
_REAL_INTS = {
    "partition_index": 0,
    "partition_indexes": 0,
    "partitions": 0,
    "num_partitions": 1,
    "replication_factor": 1,
    "count": 3,
    "timeout_ms": 100,
    "broker_id": 0,
    "broker_ids": 0,
    "replicas": 0,
    "generation_id_or_member_epoch": -1,
    "generation_id": -1,
    "resource_type": 2,
    "key_type": 0,
    "committed_offset": 5,
    "committed_leader_epoch": -1,
    "election_type": 0,
    "config_operation": 0,
}
_REAL_BOOLS = {"validate_only": True, "allow_auto_topic_creation": False}


def _realistic(obj: Any) -> Any:
    """Rename a sample's strings and numbers to the cluster's topic, group and broker."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, list):
            if value and dataclasses.is_dataclass(value[0]):
                for item in value[:1]:
                    _realistic(item)
                del value[1:]
            elif value and isinstance(value[0], str) and f.name in _REAL_STRINGS:
                value[:] = [_REAL_STRINGS[f.name]]
            elif value and isinstance(value[0], int) and f.name in _REAL_INTS:
                value[:] = sorted({_REAL_INTS[f.name], 1})
        elif dataclasses.is_dataclass(value):
            _realistic(value)
        elif isinstance(value, bool) and f.name in _REAL_BOOLS:
            setattr(obj, f.name, _REAL_BOOLS[f.name])
        elif isinstance(value, str) and f.name in _REAL_STRINGS:
            setattr(obj, f.name, _REAL_STRINGS[f.name])
        elif isinstance(value, int) and not isinstance(value, bool) and f.name in _REAL_INTS:
            setattr(obj, f.name, _REAL_INTS[f.name])
    return obj


def _tame(api_key: int, body: Any) -> Any:
    """Keep a seed's side effects small: validate only, and delete only what is absent."""
    for attr, value in _REAL_BOOLS.items():
        if hasattr(body, attr):
            setattr(body, attr, value)
    if api_key == 19:  # CreateTopics: a new name, validated only
        for topic in body.topics:
            topic.name = "fuzz-new" if topic.name == FUZZ_TOPIC else topic.name
    if api_key in (20, 42, 45):  # DeleteTopics, DeleteGroups, AlterPartitionReassignments
        for topic in getattr(body, "topics", None) or ():
            if hasattr(topic, "name"):
                topic.name = ABSENT
        if api_key == 20 and getattr(body, "topic_names", None):
            body.topic_names = [ABSENT]
        if api_key == 42:
            body.groups_names = [ABSENT]
    return body


@dataclass(frozen=True)
class Seed:
    api_key: int
    version: int
    variant: str
    payload: bytes  # header (correlation id 0) + body, no size prefix


def seed_body(api_key: int, version: int, variant: str) -> Any:
    definition = API_SPECS[api_key].request_def
    if variant == "real":
        return _tame(api_key, _realistic(sample(definition, version, "full")))
    return _tame(api_key, sample(definition, version, variant))


def build_seeds() -> list[Seed]:
    seeds = []
    for api_key, version in served_pairs():
        for variant in (*VARIANTS, "real"):
            body = seed_body(api_key, version, variant)
            header = RequestHeader(
                api_key=api_key, api_version=version, correlation_id=0, client_id="fuzz"
            )
            seeds.append(Seed(api_key, version, variant, encode_request(header, body)))
    return seeds


# ---------------------------------------------------------------------------------------
# Mutators
# ---------------------------------------------------------------------------------------

_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0xFE)
_INT16S = (0, 1, -1, -2, 0x7FFF, -0x8000, 0x100, 0x7FFE)
_INT32S = (0, 1, -1, -2, 0x7FFFFFFF, -0x80000000, 0x7FFF, 0x8000, 0x10000, 0x7FFFFFFE)
_VARINTS = (b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x80", b"\x00")


def _flip(rng: random.Random, d: bytearray) -> None:
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(d))
        d[i] ^= 1 << rng.randrange(8)


def _set_byte(rng: random.Random, d: bytearray) -> None:
    d[rng.randrange(len(d))] = rng.choice(_BYTES) if rng.random() < 0.7 else rng.randrange(256)


def _set_int16(rng: random.Random, d: bytearray) -> None:
    if len(d) >= 2:
        _I16.pack_into(d, rng.randrange(len(d) - 1), rng.choice(_INT16S))


def _set_int32(rng: random.Random, d: bytearray) -> None:
    if len(d) >= 4:
        _I32.pack_into(d, rng.randrange(len(d) - 3), rng.choice(_INT32S))


def _varint_bomb(rng: random.Random, d: bytearray) -> None:
    i = rng.randrange(len(d))
    bomb = rng.choice(_VARINTS)
    d[i : i + len(bomb)] = bomb


def _truncate(rng: random.Random, d: bytearray) -> None:
    del d[rng.randrange(len(d)) :]


def _extend(rng: random.Random, d: bytearray) -> None:
    d += rng.randbytes(rng.randint(1, 64))


def _insert(rng: random.Random, d: bytearray) -> None:
    i = rng.randrange(len(d) + 1)
    d[i:i] = rng.randbytes(rng.randint(1, 16))


def _delete(rng: random.Random, d: bytearray) -> None:
    i = rng.randrange(len(d))
    del d[i : i + rng.randint(1, 16)]


def _duplicate(rng: random.Random, d: bytearray) -> None:
    i = rng.randrange(len(d))
    j = min(len(d), i + rng.randint(1, 32))
    d[j:j] = d[i:j]


MUTATORS = (
    _flip,
    _set_byte,
    _set_int16,
    _set_int32,
    _varint_bomb,
    _truncate,
    _extend,
    _insert,
    _delete,
    _duplicate,
)
# Weights: mostly in-place changes, which keep the frame close enough to parse further.
_WEIGHTS = (6, 4, 4, 4, 1, 1, 1, 1, 1, 1)


def mutate(rng: random.Random, payload: bytes) -> tuple[bytes, str]:
    """`payload` with 1-3 mutations; returns the bytes and the mutators' names."""
    d = bytearray(payload)
    names = []
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        if not d:
            break
        (op,) = rng.choices(MUTATORS, _WEIGHTS)
        op(rng, d)
        names.append(op.__name__.lstrip("_"))
    return bytes(d), "+".join(names)


def bomb_frame(rng: random.Random, payload: bytes) -> tuple[bytes, str]:
    """A frame whose size prefix lies: negative, over the limit, zero, or larger than what
    follows (then the client half-closes). Kafka closes the connection on each."""
    kind = rng.randrange(4)
    if kind == 0:
        return _SIZE.pack(rng.choice((-1, -2, -0x80000000))) + payload[:8], "size-negative"
    if kind == 1:
        size = rng.choice((MAX_REQUEST_BYTES + 1, 0x7FFFFFFF))
        return _SIZE.pack(size) + payload[:8], "size-over-limit"
    if kind == 2:
        return _SIZE.pack(0), "size-zero"
    extra = rng.choice((1, 7, 1000, 1 << 20, MAX_REQUEST_BYTES - len(payload)))
    return _SIZE.pack(len(payload) + extra) + payload, "size-beyond-data"


# ---------------------------------------------------------------------------------------
# What Kafka does with a frame
# ---------------------------------------------------------------------------------------


def _long_string(obj: Any, depth: int = 0) -> bool:
    if depth > 12:
        return False
    if isinstance(obj, str):
        return len(obj.encode("utf-8", "surrogatepass")) > MAX_STRING_BYTES
    if isinstance(obj, list):
        return any(_long_string(x, depth + 1) for x in obj)
    if dataclasses.is_dataclass(obj):
        return any(_long_string(getattr(obj, f.name), depth + 1) for f in dataclasses.fields(obj))
    return False


def hazard(api_key: int, body: Any, frame_len: int = 0) -> str | None:
    """Why a decoded request is not sent: it would write more partitions than a fuzz run may
    keep (`HAZARD_WRITTEN_PARTITIONS`: CreateTopics or CreatePartitions without explicit
    assignments); None when it may be sent."""
    if api_key in (19, 37):
        writes = not body.validate_only
        for topic in body.topics:
            count = topic.num_partitions if api_key == 19 else topic.count
            if topic.assignments:
                continue
            if writes and count > HAZARD_WRITTEN_PARTITIONS:
                return "writes thousands of partitions, whose state outgrows the RSS budget"
    return None


PRODUCE = 0
FETCH = 1
PROBE_CORRELATION_ID = 0x7FFF_FFF0


# Kafka holds these answers until something else happens: a JoinGroup until the group's
# rebalance completes (group.initial.rebalance.delay.ms, then every member or the rebalance
# timeout), a follower's SyncGroup until the leader syncs (DelayedJoin/DelayedSync).
GROUP_WAITING_APIS = frozenset({11, 14})


def may_wait(api_key: int, body: Any) -> bool:
    """Whether a valid request may legitimately be held for longer than a few seconds."""
    if api_key in GROUP_WAITING_APIS:
        return True
    return api_key == FETCH and getattr(body, "max_wait_ms", 0) > 1_000


def is_silent(api_key: int, body: Any) -> bool:
    """Kafka sends no answer at all: Produce with acks=0 (it closes the connection instead
    when the produce failed)."""
    return api_key == PRODUCE and getattr(body, "acks", None) == 0


# Kafka's ACL enums (ResourceType, PatternType, AclOperation, AclPermissionType): how many
# codes each defines; 0 is UNKNOWN.
_ACL_ENUM_SIZES = (8, 5, 15, 4)
ENVELOPE, DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 58, 29, 30, 31


def closes_after_decoding(api_key: int, body: Any) -> str | None:
    """Why Kafka closes the connection on a request that decodes (None when it answers):
    Envelope on a ZooKeeper broker without forwarding (KafkaApis.handleEnvelope), and the ACL
    requests whose `validate` fails while the request is parsed: Create/DeleteAcls with an
    UNKNOWN (0) element, DescribeAcls with any element `fromCode` maps to UNKNOWN."""
    if api_key == ENVELOPE:
        return "Envelope: forwarding is not enabled on a ZooKeeper broker"
    if api_key == DESCRIBE_ACLS:
        codes = (body.resource_type_filter, body.pattern_type_filter, body.operation,
                 body.permission_type)  # fmt: skip
        if any(not 0 < c < n for c, n in zip(codes, _ACL_ENUM_SIZES, strict=True)):
            return "DescribeAcls filter with an UNKNOWN element"
    if api_key == CREATE_ACLS:
        for c in body.creations:
            if 0 in (c.resource_type, c.resource_pattern_type, c.operation, c.permission_type):
                return "CreateAcls with an UNKNOWN element"
    if api_key == DELETE_ACLS:
        for f in body.filters:
            codes = (f.resource_type_filter, f.pattern_type_filter, f.operation,
                     f.permission_type)  # fmt: skip
            if 0 in codes:
                return "DeleteAcls filter with an UNKNOWN element"
    return None


def probe_frame() -> bytes:
    """An ApiVersions v0 request (size-prefixed): after a silent request, its answer proves
    the broker read on without answering that one."""
    header = RequestHeader(
        api_key=18, api_version=0, correlation_id=PROBE_CORRELATION_ID, client_id="probe"
    )
    payload = encode_request(header, ApiVersionsRequest())
    return struct.pack(">i", len(payload)) + payload


@dataclass(frozen=True)
class Prediction:
    answered: bool  # Kafka answers it (else: closes the connection)
    api_key: int = -1
    version: int = -1
    correlation_id: int = 0
    waits: bool = False  # may hold its answer up to its timeout_ms
    hazard: str | None = None
    reason: str = ""
    silent: bool = False  # no answer either way (Produce acks=0); a close if it failed


def predict(payload: bytes) -> Prediction:
    """What a Kafka broker of `RELEASE` does with this frame (without its size prefix)."""
    try:
        header, offset = decode_request_header(payload)
    except CodecError as e:
        return Prediction(False, reason=f"header: {e}")
    decision = route(header, RANGES, RELEASE_NAME)
    if isinstance(decision, Close):
        return Prediction(False, header.api_key, header.api_version, reason=decision.reason)
    if isinstance(decision, Answer):
        return Prediction(True, header.api_key, header.api_version, header.correlation_id)
    try:
        body = decode_request_body(header, payload, offset)
    except CodecError as e:
        return Prediction(False, header.api_key, header.api_version, reason=f"body: {e}")
    closes = closes_after_decoding(header.api_key, body)
    if closes is not None:
        return Prediction(False, header.api_key, header.api_version, reason=closes)
    waits = (
        header.api_key in WAITING_APIS
        and not getattr(body, "validate_only", False)
        and getattr(body, "timeout_ms", 0) > 5_000
    ) or may_wait(header.api_key, body)
    return Prediction(
        True,
        header.api_key,
        header.api_version,
        header.correlation_id,
        silent=is_silent(header.api_key, body),
        waits=waits,
        hazard=hazard(header.api_key, body, len(payload)),
    )


# ---------------------------------------------------------------------------------------
# The fuzz loop
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FuzzPlan:
    host: str
    port: int
    seed: int
    frames: int
    batch: int = 48
    connections: int = 4  # connections fuzzed at once (one thread each)
    bomb_rate: float = 0.01
    clean_rate: float = 0.03  # unmutated seeds, so every API's good path stays in the mix
    answer_timeout_s: float = 15.0
    progress_every: int = 0  # print a progress line to stderr every N frames (0: never)


@dataclass
class FuzzReport:
    seed: int
    frames: int = 0  # frames sent
    answered: int = 0
    closed: int = 0  # connections the broker closed where Kafka closes them
    connections: int = 0
    quarantined: Counter[str] = field(default_factory=Counter)
    waited: int = 0  # answers held up to a request's timeout (legitimate), connection dropped
    per_api: dict[str, list[int]] = field(default_factory=dict)  # name -> [sent, answered, closed]
    per_version: Counter[tuple[int, int]] = field(default_factory=Counter)  # seed's (key, v)
    anomalies: list[dict[str, Any]] = field(default_factory=list)
    anomaly_count: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.frames / self.seconds if self.seconds else 0.0

    def anomaly(self, kind: str, payload: bytes, how: str, detail: str) -> None:
        self.anomaly_count += 1
        if len(self.anomalies) < 50:
            self.anomalies.append(
                {"kind": kind, "mutation": how, "detail": detail[:500], "frame": payload.hex()}
            )

    def absorb(self, other: FuzzReport) -> None:
        """Add another lane's figures to these."""
        self.frames += other.frames
        self.answered += other.answered
        self.closed += other.closed
        self.connections += other.connections
        self.waited += other.waited
        self.quarantined.update(other.quarantined)
        self.per_version.update(other.per_version)
        for api, row in other.per_api.items():
            mine = self.per_api.setdefault(api, [0, 0, 0])
            for i, n in enumerate(row):
                mine[i] += n
        self.anomaly_count += other.anomaly_count
        self.anomalies.extend(other.anomalies[: 50 - len(self.anomalies)])

    def tally(self, api: str, slot: int) -> None:
        row = self.per_api.setdefault(api, [0, 0, 0])
        row[slot] += 1

    def lines(self) -> list[str]:
        out = [
            f"mutation fuzz seed={self.seed}: {self.frames} frames in {self.seconds:.1f} s "
            f"({self.rate:.0f} frames/s) over {self.connections} connections; "
            f"answered {self.answered}, closed {self.closed}, waited {self.waited}, "
            f"anomalies {self.anomaly_count}",
        ]
        if self.per_version:
            (low_pair, low), (_, high) = (
                min(self.per_version.items(), key=lambda kv: kv[1]),
                max(self.per_version.items(), key=lambda kv: kv[1]),
            )
            out.append(
                f"  {len(self.per_version)} API versions, {low}-{high} frames each "
                f"(fewest: {api_name(low_pair[0])} v{low_pair[1]})"
            )
        if self.quarantined:
            out.append(f"  not sent (known bugs, see test_known_bugs.py): {dict(self.quarantined)}")
        for api, (sent, answered, closed) in sorted(self.per_api.items()):
            out.append(f"  {api:<28} sent {sent:>8}  answered {answered:>8}  closed {closed:>7}")
        return out


@dataclass
class _Frame:
    data: bytes  # with its size prefix
    payload: bytes
    api: str  # the seed's API (the mutated header may name another)
    pair: tuple[int, int]  # the seed's (api key, version)
    how: str
    prediction: Prediction
    half_close: bool = False


class _Fuzzer:
    def __init__(self, plan: FuzzPlan, lane: int = 0) -> None:
        self.plan = plan
        self.rng = random.Random(f"{plan.seed}/{lane}")
        self.seeds = build_seeds()
        self.report = FuzzReport(seed=plan.seed)
        self.correlation = 0

    def next_frame(self) -> _Frame:
        rng = self.rng
        seed = rng.choice(self.seeds)
        self.correlation = (self.correlation + 1) & 0x7FFFFFFF
        base = bytearray(seed.payload)
        _I32.pack_into(base, 4, self.correlation)
        api = api_name(seed.api_key)
        pair = (seed.api_key, seed.version)
        roll = rng.random()
        if roll < self.plan.bomb_rate:
            data, how = bomb_frame(rng, bytes(base))
            return _Frame(data, data[4:], api, pair, how, Prediction(False, reason=how), True)
        if roll < self.plan.bomb_rate + self.plan.clean_rate:
            payload, how = bytes(base), "none"
        else:
            payload, how = mutate(rng, bytes(base))
        return _Frame(_SIZE.pack(len(payload)) + payload, payload, api, pair, how, predict(payload))

    def run(self) -> FuzzReport:
        plan, report = self.plan, self.report
        started = time.perf_counter()
        conn: FrameConn | None = None
        while report.frames < plan.frames:
            batch: list[_Frame] = []
            closer: _Frame | None = None
            while len(batch) < plan.batch and report.frames + len(batch) < plan.frames:
                frame = self.next_frame()
                if frame.prediction.hazard is not None:
                    report.quarantined[frame.prediction.hazard] += 1
                    continue
                if not frame.prediction.answered or frame.prediction.silent:
                    closer = frame
                    break
                batch.append(frame)
            if conn is None:
                conn = FrameConn(plan.host, plan.port, timeout=plan.answer_timeout_s)
                report.connections += 1
            conn = self._exchange(conn, batch, closer)
        if conn is not None:
            conn.close()
        report.seconds = time.perf_counter() - started
        return report

    def _exchange(
        self, conn: FrameConn, batch: list[_Frame], closer: _Frame | None
    ) -> FrameConn | None:
        """Send the batch (and the closer), check every answer; the connection to go on
        with, or None when it is gone."""
        report = self.report
        frames = [*batch, closer] if closer is not None else batch
        for f in frames:
            report.frames += 1
            report.tally(f.api, 0)
            report.per_version[f.pair] += 1
        silent = closer is not None and closer.prediction.silent
        try:
            conn.send(b"".join(f.data for f in frames) + (probe_frame() if silent else b""))
            if closer is not None and closer.half_close:
                conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the broker may already have closed on an earlier frame; answers tell
        for f in batch:
            p = f.prediction
            try:
                answer = conn.recv_frame()
            except Closed:
                report.anomaly(
                    "closed-on-valid",
                    f.payload,
                    f.how,
                    f"{api_name(p.api_key)} v{p.version}: Kafka answers this frame",
                )
                conn.close()
                return None
            except TimeoutError:
                if p.waits:
                    report.waited += 1
                else:
                    report.anomaly(
                        "no-answer",
                        f.payload,
                        f.how,
                        f"{api_name(p.api_key)} v{p.version}: no answer in "
                        f"{self.plan.answer_timeout_s} s",
                    )
                conn.close()
                return None
            try:
                got, _ = decode_response(p.api_key, p.version, answer)
            except CodecError as e:
                report.anomaly("undecodable-answer", f.payload, f.how, f"{e}; {answer[:64].hex()}")
                got = p.correlation_id
            if got != p.correlation_id:
                report.anomaly(
                    "wrong-correlation-id", f.payload, f.how, f"got {got}, sent {p.correlation_id}"
                )
            report.answered += 1
            report.tally(f.api, 1)
        if closer is None:
            return conn
        if silent:
            self._after_silent(conn, closer)
            conn.close()
            return None
        try:
            extra = conn.recv_frame()
            report.anomaly(
                "answered-invalid",
                closer.payload,
                closer.how,
                f"{closer.prediction.reason}; answered {extra[:64].hex()}",
            )
        except Closed:
            report.closed += 1
            report.tally(closer.api, 2)
        except TimeoutError:
            report.anomaly(
                "no-close",
                closer.payload,
                closer.how,
                f"{closer.prediction.reason}; neither answered nor closed",
            )
        conn.close()
        return None

    def _after_silent(self, conn: FrameConn, silent: _Frame) -> None:
        """A Produce with acks=0: the next answer must be the probe's, or the broker closed
        the connection because the produce failed (half-closed frames end as a close)."""
        report = self.report
        try:
            answer = conn.recv_frame()
        except Closed:
            report.closed += 1
            report.tally(silent.api, 2)
            return
        except TimeoutError:
            report.anomaly("no-answer", silent.payload, silent.how, "acks=0: probe unanswered")
            return
        try:
            got, _ = decode_response(18, 0, answer)
        except CodecError:
            got = -1
        if got != PROBE_CORRELATION_ID:
            report.anomaly(
                "answered-silent",
                silent.payload,
                silent.how,
                f"Produce acks=0 was answered: {answer[:64].hex()}",
            )
            return
        report.answered += 1
        report.tally(silent.api, 1)


def run_fuzz(plan: FuzzPlan) -> FuzzReport:
    """Send `plan.frames` frames to the broker at host:port over `plan.connections`
    connections at a time (one thread each, each with its own `random.Random` derived from
    the seed); the merged figures and anomalies. Top-level so a spawned process can run it."""
    share, extra = divmod(plan.frames, plan.connections)
    fuzzers = [
        _Fuzzer(dataclasses.replace(plan, frames=share + (i < extra)), lane=i)
        for i in range(plan.connections)
    ]
    errors: list[BaseException] = []

    def lane(fuzzer: _Fuzzer) -> None:
        try:
            fuzzer.run()
        except BaseException as e:  # a broken lane must fail the run, not shorten it
            errors.append(e)
            raise

    threads = [
        threading.Thread(target=lane, args=(f,), name=f"fuzz-{i}") for i, f in enumerate(fuzzers)
    ]
    started = time.perf_counter()
    for t in threads:
        t.start()
    next_progress = plan.progress_every
    while any(t.is_alive() for t in threads):
        threads[0].join(1.0)
        sent = sum(f.report.frames for f in fuzzers)
        if plan.progress_every and sent >= next_progress:
            next_progress = (sent // plan.progress_every + 1) * plan.progress_every
            elapsed = time.perf_counter() - started
            print(
                f"[fuzz] {sent} frames, {sent / elapsed:.0f}/s, "
                f"answered {sum(f.report.answered for f in fuzzers)}, "
                f"closed {sum(f.report.closed for f in fuzzers)}, "
                f"anomalies {sum(f.report.anomaly_count for f in fuzzers)}",
                file=sys.stderr,
                flush=True,
            )
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)} fuzz lane(s) failed") from errors[0]
    merged = FuzzReport(seed=plan.seed)
    for f in fuzzers:
        merged.absorb(f.report)
    merged.seconds = time.perf_counter() - started
    return merged


def replay(host: str, port: int, frame_hex: str) -> bytes | None:
    """Send one reported frame alone (size prefix added); the answer, or None on close."""
    payload = bytes.fromhex(frame_hex)
    with FrameConn(host, port) as conn:
        conn.send(_SIZE.pack(len(payload)) + payload)
        try:
            return conn.recv_frame()
        except Closed:
            return None


def random_seed() -> int:
    return uuid.uuid4().int & 0xFFFFFFFF
