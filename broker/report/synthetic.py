"""Seeded synthetic captures, for the report's golden test and its benchmark.

`events(config)` yields `SyntheticEvent`s: plain values (client, API, version, time, latency,
error codes, injected fault) drawn from a seeded `random.Random`, so the same config gives the
same captures. Two renderings of an event, which a test keeps identical:

- `to_record(event)` -> the `RequestRecord` the broker itself would observe (real message
  objects from `zkbroker.broker.protocol.samples`), for `RequestCapture` to write: writer and reader
  cannot drift;
- `fast_line(event)` -> the same line through precomputed templates, much faster, so the
  benchmark can write millions of lines in reasonable time.

Clients mimic real ones: a legacy client that never sends ApiVersions v3+ (software
unknown) and uses versions Kafka 4.0 removed, Java and librdkafka clients at newest versions.
`release` "2.8" caps versions as a 2.8 broker's ApiVersions would and answers INVALID_REQUEST
where 3.9 answers INVALID_CONFIG, so two generated sets differ the way the report's diff
should show. Deliberately not here: any realism beyond that (bodies are fixed samples, with
error fields not matching the error codes), or reading captures.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from zkbroker.broker.hooks.capture import to_jsonable
from zkbroker.broker.protocol import API_SPECS
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.headers import RequestHeader
from zkbroker.broker.protocol.samples import sample
from zkbroker.broker.server.hooks import Intervention, RequestCall, RequestRecord
from zkbroker.handlers.context import ConnectionInfo

API_KEYS = {spec.name: key for key, spec in API_SPECS.items()}


@dataclass(frozen=True, slots=True)
class ClientProfile:
    software: str | None
    version: str | None
    client_id: str
    versions: tuple[tuple[str, int], ...]  # (API, newest version the client speaks)


CLIENTS: tuple[ClientProfile, ...] = (
    ClientProfile(None, None, "legacy-app", (("Metadata", 1), ("CreateTopics", 1),
                  ("DeleteTopics", 0), ("DescribeConfigs", 0), ("ApiVersions", 0))),
    ClientProfile("apache-kafka-java", "3.9.0", "admin-java", (("Metadata", 12),
                  ("CreateTopics", 7), ("DeleteTopics", 6), ("DescribeConfigs", 4),
                  ("ApiVersions", 4), ("DescribeCluster", 1), ("AlterConfigs", 2))),
    ClientProfile("confluent-kafka-python", "2.6.1", "ops-tool", (("Metadata", 12),
                  ("CreateTopics", 4), ("DescribeConfigs", 1), ("ListGroups", 4),
                  ("ApiVersions", 3), ("AlterConfigs", 1))),
    ClientProfile("kafka-python", "3.0.12", "scripts", (("Metadata", 8), ("CreateTopics", 3),
                  ("DeleteTopics", 3), ("ListGroups", 2), ("FindCoordinator", 2),
                  ("ApiVersions", 4))),
)
# The newest versions a 2.8 broker answers (the rest: 3.9 = the specs' maximum).
CAPS_2_8 = {"Metadata": 11, "ApiVersions": 3, "DescribeCluster": 0, "ListGroups": 4}
BASE_LATENCY_US = {"Metadata": 300, "CreateTopics": 4000, "DeleteTopics": 3000,
                   "DescribeConfigs": 600, "ApiVersions": 80, "DescribeCluster": 150,
                   "AlterConfigs": 2500, "ListGroups": 400, "FindCoordinator": 200}
ERRORS = {
    "Metadata": (ec.UNKNOWN_TOPIC_OR_PARTITION, ec.LEADER_NOT_AVAILABLE),
    "CreateTopics": (ec.TOPIC_ALREADY_EXISTS, ec.INVALID_REPLICATION_FACTOR),
    "DeleteTopics": (ec.UNKNOWN_TOPIC_OR_PARTITION,),
    "DescribeConfigs": (ec.UNKNOWN_TOPIC_OR_PARTITION,),
    "AlterConfigs": (ec.INVALID_CONFIG,),
    "FindCoordinator": (ec.COORDINATOR_NOT_AVAILABLE,),
}
FAULT_CODES = (ec.POLICY_VIOLATION, ec.NOT_CONTROLLER, ec.REQUEST_TIMED_OUT)
EPOCH_2026 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@dataclass(frozen=True, slots=True)
class SyntheticConfig:
    lines: int = 10_000
    runs: int = 4
    seed: int = 7
    release: str = "3.9"  # "2.8" or "3.9"
    error_rate: float = 0.05
    fault_rate: float = 0.01
    start: float = EPOCH_2026


@dataclass(frozen=True, slots=True)
class SyntheticEvent:
    run: int
    time_us: int  # microseconds since the epoch
    broker_id: int
    connection_id: str
    client: ClientProfile
    api: str
    api_version: int
    correlation_id: int
    error_codes: tuple[int, ...]
    latency_us: int
    fault: str | None  # None, "error", "delay", "drop"
    fault_code: int | None
    delay_s: float


def _version(client: ClientProfile, api: str, release: str) -> int:
    newest = dict(client.versions)[api]
    if release == "2.8":
        newest = min(newest, CAPS_2_8.get(api, newest))
    return newest


def events(config: SyntheticConfig) -> Iterator[SyntheticEvent]:
    """`config.lines` events over `config.runs` runs (run i gets lines i, i+runs, ... in
    count), time increasing within a run."""
    rng = random.Random(config.seed)
    per_run = [config.lines // config.runs + (1 if i < config.lines % config.runs else 0)
               for i in range(config.runs)]
    for run, count in enumerate(per_run):
        now_us = int((config.start + run * 86_400) * 1_000_000)
        connections: dict[int, int] = {}
        correlation: dict[int, int] = {}
        for _ in range(count):
            c = rng.randrange(len(CLIENTS))
            client = CLIENTS[c]
            api = rng.choice(client.versions)[0]
            now_us += rng.randint(50, 5_000)
            conn = connections.setdefault(c, 0)
            correlation[c] = correlation.get(c, 0) + 1
            latency = int(BASE_LATENCY_US[api] * rng.lognormvariate(0.0, 0.6)) + 1
            codes: tuple[int, ...] = ()
            fault: str | None = None
            fault_code: int | None = None
            delay_s = 0.0
            roll = rng.random()
            if roll < config.fault_rate:
                fault = rng.choice(("error", "error", "delay", "drop"))
                if fault == "error":
                    fault_code = rng.choice(FAULT_CODES)
                    codes = (fault_code,)
                elif fault == "delay":
                    delay_s = 0.2
                    latency += 200_000
            elif roll < config.fault_rate + config.error_rate and api in ERRORS:
                code = rng.choice(ERRORS[api])
                if code == ec.INVALID_CONFIG and config.release == "2.8":
                    code = ec.INVALID_REQUEST  # as Kafka up to 3.2 answers bad values
                codes = (code,)
            yield SyntheticEvent(
                run=run,
                time_us=now_us,
                broker_id=c % 3,
                connection_id=f"{c % 3}-{c}-{conn}",
                client=client,
                api=api,
                api_version=_version(client, api, config.release),
                correlation_id=correlation[c],
                error_codes=codes,
                latency_us=latency,
                fault=fault,
                fault_code=fault_code,
                delay_s=delay_s,
            )
            if fault == "drop":
                connections[c] = conn + 1  # the client reconnects
                correlation[c] = 0


@cache
def _bodies(api: str, version: int) -> tuple[Any, Any]:
    spec = API_SPECS[API_KEYS[api]]
    return sample(spec.request_def, version), sample(spec.response_def, version)


def to_record(event: SyntheticEvent) -> RequestRecord:
    """The record the broker would have observed for this event."""
    request, response = _bodies(event.api, event.api_version)
    intervention = None
    if event.fault is not None:
        intervention = Intervention(
            delay_s=event.delay_s,
            drop=event.fault == "drop",
            error_code=event.fault_code,
            source="fault:1",
        )
    call = RequestCall(
        broker_id=event.broker_id,
        connection=ConnectionInfo(
            connection_id=event.connection_id,
            peer="127.0.0.1:50000",
            listener_name="PLAINTEXT",
            client_software_name=event.client.software,
            client_software_version=event.client.version,
        ),
        header=RequestHeader(
            api_key=API_KEYS[event.api],
            api_version=event.api_version,
            correlation_id=event.correlation_id,
            client_id=event.client.client_id,
        ),
        api_name=event.api,
        request=request,
    )
    return RequestRecord(
        call=call,
        response=None if event.fault == "drop" else response,
        error_codes=list(event.error_codes),
        received_at=event.time_us / 1_000_000,
        latency_us=event.latency_us,
        intervention=intervention,
    )


# -- the fast rendering ----------------------------------------------------------------------


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


@cache
def _body_json(api: str, version: int) -> tuple[str, str]:
    request, response = _bodies(api, version)
    return _dumps(to_jsonable(request)), _dumps(to_jsonable(response))


@cache
def _client_json(client: ClientProfile) -> tuple[str, str, str]:
    return _dumps(client.client_id), _dumps(client.software), _dumps(client.version)


def _time_text(time_us: int) -> str:
    seconds, micros = divmod(time_us, 1_000_000)
    text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{micros:06d}Z"


def fast_line(event: SyntheticEvent) -> str:
    """`record_to_line(to_record(event))`, built from cached pieces (same keys, same order)."""
    request, response = _body_json(event.api, event.api_version)
    client_id, software, version = _client_json(event.client)
    if event.fault is None:
        intervention = "null"
    else:
        code = "null" if event.fault_code is None else str(event.fault_code)
        intervention = (
            f'{{"source":"fault:1","kind":"{event.fault}","delay_s":{event.delay_s!r},'
            f'"error_code":{code}}}'
        )
    codes = ",".join(str(c) for c in event.error_codes)
    return (
        f'{{"time":"{_time_text(event.time_us)}","broker_id":{event.broker_id},'
        f'"connection_id":"{event.connection_id}","client_id":{client_id},'
        f'"client_software_name":{software},"client_software_version":{version},'
        f'"api":"{event.api}","api_key":{API_KEYS[event.api]},'
        f'"api_version":{event.api_version},"correlation_id":{event.correlation_id},'
        f'"request":{request},"response":{"null" if event.fault == "drop" else response},'
        f'"error_codes":[{codes}],"latency_us":{event.latency_us},'
        f'"intervention":{intervention}}}\n'
    )


def write_with_capture(path: str, items: Iterator[SyntheticEvent] | list[SyntheticEvent]) -> int:
    """Write events through the broker's own capture hook (`RequestCapture`, file mode), as
    a cluster with `--capture path` would; returns the lines written."""
    import asyncio

    from zkbroker.broker.hooks.capture import RequestCapture

    async def write() -> int:
        capture = RequestCapture(path, max_records=1)
        capture.open()
        for event in items:
            capture.observe(to_record(event))
        await capture.aclose()
        return capture.lines_written

    return asyncio.run(write())


def write_runs(folder: str, config: SyntheticConfig, fast: bool = False) -> list[str]:
    """One capture file per run in `folder` (`run-<i>.jsonl`); returns their paths."""
    import os
    from itertools import groupby

    os.makedirs(folder, exist_ok=True)
    paths = []
    for run, items in groupby(events(config), key=lambda e: e.run):
        path = os.path.join(folder, f"run-{run:04d}.jsonl")
        if fast:
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(fast_line(e) for e in items)
        else:
            if os.path.exists(path):
                os.remove(path)  # the capture hook appends
            write_with_capture(path, items)
        paths.append(path)
    return paths
