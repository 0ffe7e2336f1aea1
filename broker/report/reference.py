"""A plain-Python, single-pass computation of the report's main tables from capture files:
the golden test's oracle and the benchmark's comparison (one process, or several over
disjoint files, merged).

It follows the definitions of `zkbroker.broker.report.tables` written independently of Spark: the
client is the announced software name/version ("unknown" when absent); conformance tables
skip requests with an injected fault; percentiles are exact nearest rank (the smallest value
with at least p of the values at or below it: the job's, read from ~1% buckets, must be at
most 1% below these and never above); a fault's `retries` counts the client's later
requests of the same API in the run up to and including the first one answered without error
or fault. Bad lines: not JSON, not an object, a field missing or of the wrong type, or a number no
broker captures (an API key, version or error code outside Kafka's INT16, a negative latency).

Deliberately not here: the baseline diff, readiness and pages (thin layers over these tables), and
sorting by time: lines are taken in file order, which is time order for the synthetic
captures it is used with (`zkbroker.broker.report.synthetic`).
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

from zkbroker.broker.protocol.removed_in_4 import DEPRECATED_IN_3_9, REMOVED_IN_4_0

UNKNOWN = "unknown"
_INT_FIELDS = ("broker_id", "api_key", "api_version", "correlation_id", "latency_us")
_STR_FIELDS = ("time", "connection_id", "api")
_NULLABLE_STR = ("client_id", "client_software_name", "client_software_version")


def nearest_rank(values: list[int], p: float) -> int:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_INT16_MAX = 2**15 - 1


def _is_int16(v: Any) -> bool:
    return _is_int(v) and -_INT16_MAX - 1 <= v <= _INT16_MAX


def valid_line(d: Any) -> bool:
    if not isinstance(d, dict):
        return False
    if not all(_is_int(d.get(k)) for k in _INT_FIELDS):
        return False
    if not all(isinstance(d.get(k), str) for k in _STR_FIELDS):
        return False
    if not all(d.get(k) is None or isinstance(d.get(k), str) for k in _NULLABLE_STR):
        return False
    # Numbers a broker could have captured: API keys and versions 0..32767, latencies from
    # 0, error codes within Kafka's INT16.
    if not (0 <= d["api_key"] <= _INT16_MAX and 0 <= d["api_version"] <= _INT16_MAX):
        return False
    if d["latency_us"] < 0:
        return False
    codes = d.get("error_codes")
    if not isinstance(codes, list) or not all(_is_int16(c) for c in codes):
        return False
    i = d.get("intervention")
    return i is None or (isinstance(i, dict) and (i.get("error_code") is None
                                                  or _is_int16(i.get("error_code"))))


@dataclass
class _RunStats:
    lines: int = 0
    bad_lines: int = 0
    requests: int = 0
    clients: set[str] = field(default_factory=set)
    errors: int = 0
    answered: int = 0
    faults: int = 0


@dataclass
class Partial:
    """Aggregates of some files; `merge` adds another's (disjoint files)."""

    matrix: dict[tuple[str, str, str, int, int], int] = field(
        default_factory=lambda: defaultdict(int)
    )
    error_totals: dict[tuple[str, str, str, int, int], int] = field(
        default_factory=lambda: defaultdict(int)
    )
    error_codes: dict[tuple[str, str, str, int, int, int], int] = field(
        default_factory=lambda: defaultdict(int)
    )
    latency: dict[tuple[str, int, int], list[int]] = field(
        default_factory=lambda: defaultdict(list)
    )
    run_latency: dict[tuple[str, str, int], list[int]] = field(
        default_factory=lambda: defaultdict(list)
    )
    # Per run: (run, software, version, api) -> requests without a fault, and per code.
    run_api_totals: dict[tuple[str, str, str, str], int] = field(
        default_factory=lambda: defaultdict(int)
    )
    run_api_codes: dict[tuple[str, str, str, str, int], int] = field(
        default_factory=lambda: defaultdict(int)
    )
    run_first: dict[str, int] = field(default_factory=dict)  # first valid request, micros
    runs: dict[str, _RunStats] = field(default_factory=dict)
    fault_events: list[dict[str, Any]] = field(default_factory=list)

    def merge(self, other: Partial) -> None:
        for mine, theirs in (
            (self.matrix, other.matrix),
            (self.error_totals, other.error_totals),
            (self.error_codes, other.error_codes),
            (self.run_api_totals, other.run_api_totals),
            (self.run_api_codes, other.run_api_codes),
        ):
            for k, v in theirs.items():
                mine[k] += v  # type: ignore[index]
        for lat, olat in ((self.latency, other.latency), (self.run_latency, other.run_latency)):
            for k2, vals in olat.items():
                lat[k2].extend(vals)  # type: ignore[index]
        self.runs.update(other.runs)
        self.run_first.update(other.run_first)
        self.fault_events.extend(other.fault_events)


def _open(path: str) -> IO[str]:
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _micros(text: str) -> int:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond


def scan(paths: Iterable[str]) -> Partial:
    """One pass over each file."""
    out = Partial()
    for path in paths:
        run = out.runs.setdefault(path, _RunStats())
        # (client id, software, version, api) -> [position, pending faults]
        sequences: dict[tuple[str, str, str, str], list[Any]] = {}
        with _open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                run.lines += 1
                try:
                    d = json.loads(line)
                except ValueError:
                    run.bad_lines += 1
                    continue
                if not valid_line(d):
                    run.bad_lines += 1
                    continue
                _add(out, run, path, d, sequences)
    return out


def _add(
    out: Partial,
    run: _RunStats,
    path: str,
    d: dict[str, Any],
    sequences: dict[tuple[str, str, str, str], list[Any]],
) -> None:
    software = d["client_software_name"] or UNKNOWN
    version = d["client_software_version"] or UNKNOWN
    api, key, ver = d["api"], d["api_key"], d["api_version"]
    run.requests += 1
    at_micros = _micros(d["time"])
    if path not in out.run_first or at_micros < out.run_first[path]:
        out.run_first[path] = at_micros
    run.clients.add(f"{software}/{version}/{d['client_id'] or ''}")
    out.matrix[(software, version, api, key, ver)] += 1
    fault = d["intervention"]
    codes = d["error_codes"]
    if fault is None:
        run.answered += 1
        if codes:
            run.errors += 1
        out.error_totals[(software, version, api, key, ver)] += 1
        for code in set(codes):
            out.error_codes[(software, version, api, key, ver, code)] += 1
            out.run_api_codes[(path, software, version, api, code)] += 1
        out.run_api_totals[(path, software, version, api)] += 1
        out.latency[(api, key, ver)].append(d["latency_us"])
        out.run_latency[(path, api, ver)].append(d["latency_us"])
    else:
        run.faults += 1
    seq = sequences.setdefault((d["client_id"] or "", software, version, api), [0, []])
    seq[0] += 1
    position, pending = seq
    success = fault is None and not codes
    if success and pending:
        at = _micros(d["time"])
        for event in pending:
            event["recovered"] = True
            event["retries"] = position - event["_position"]
            event["time_to_success_ms"] = (at - event["_at"]) / 1000.0
        seq[1] = []
    if fault is not None:
        event = {
            "run_id": path,
            "client_id": d["client_id"] or "",
            "client_software": software,
            "client_version": version,
            "api": api,
            "kind": fault.get("kind"),
            "error_code": fault.get("error_code"),
            "recovered": False,
            "retries": None,
            "time_to_success_ms": None,
            "_position": position,
            "_at": _micros(d["time"]),
        }
        out.fault_events.append(event)
        seq[1].append(event)


def _in(ranges: dict[int, tuple[str, int, int]], key: int, version: int) -> bool:
    return key in ranges and ranges[key][1] <= version <= ranges[key][2]


def finish(p: Partial) -> dict[str, list[dict[str, Any]]]:
    """The tables, as lists of dicts with the Spark tables' column names."""
    client_totals: dict[tuple[str, str], int] = defaultdict(int)
    for (sw, v, *_), n in p.matrix.items():
        client_totals[(sw, v)] += n
    matrix = [
        {"client_software": sw, "client_version": v, "api": api, "api_key": key,
         "api_version": ver, "requests": n, "share": n / client_totals[(sw, v)],
         "deprecated_in_3_9": _in(DEPRECATED_IN_3_9, key, ver),
         "removed_in_4_0": _in(REMOVED_IN_4_0, key, ver)}
        for (sw, v, api, key, ver), n in p.matrix.items()
    ]
    errors = [
        {"client_software": sw, "client_version": v, "api": api, "api_key": key,
         "api_version": ver, "error_code": code, "with_code": n,
         "requests": p.error_totals[(sw, v, api, key, ver)],
         "rate": n / p.error_totals[(sw, v, api, key, ver)]}
        for (sw, v, api, key, ver, code), n in p.error_codes.items()
    ]
    latency = [
        {"api": api, "api_key": key, "api_version": ver, "requests": len(vals),
         "p50_us": nearest_rank(vals, 0.5), "p95_us": nearest_rank(vals, 0.95),
         "p99_us": nearest_rank(vals, 0.99), "max_us": max(vals)}
        for (api, key, ver), vals in p.latency.items()
    ]
    latency_runs = [
        {"run_id": run, "api": api, "api_version": ver, "requests": len(vals),
         "p50_us": nearest_rank(vals, 0.5), "p95_us": nearest_rank(vals, 0.95),
         "p99_us": nearest_rank(vals, 0.99), "max_us": max(vals)}
        for (run, api, ver), vals in p.run_latency.items()
    ]
    runs = [
        {"run_id": run, "lines": s.lines, "bad_lines": s.bad_lines, "requests": s.requests,
         "clients": len(s.clients), "errors": s.errors, "faults": s.faults,
         "error_rate": s.errors / s.answered if s.answered else None}
        for run, s in p.runs.items()
    ]
    events = [{k: v for k, v in e.items() if not k.startswith("_")} for e in p.fault_events]
    return {"matrix": matrix, "errors": errors, "latency": latency,
            "latency_runs": latency_runs, "runs": runs, "fault_events": events,
            "run_diff": run_diff(p)}


def project_of(path: str) -> str:
    """The `project=NAME` folder above a capture file, else "default"."""
    found = re.search(r"/project=([^/]+)/", path)
    return found.group(1) if found else "default"


def run_diff(p: Partial, threshold: float = 0.05) -> list[dict[str, Any]]:
    """Each run against the previous run of its project (by first request, then path): error
    codes new, vanished or changed by `threshold` per client x API both runs called."""
    by_project: dict[str, list[str]] = defaultdict(list)
    for path in sorted(p.run_first, key=lambda r: (p.run_first[r], r)):
        by_project[project_of(path)].append(path)
    rates: dict[str, dict[tuple[str, str, str], dict[int, float]]] = defaultdict(dict)
    for path, sw, v, api in p.run_api_totals:
        rates[path][(sw, v, api)] = {}
    for (path, sw, v, api, code), n in p.run_api_codes.items():
        rates[path][(sw, v, api)][code] = n / p.run_api_totals[(path, sw, v, api)]
    out: list[dict[str, Any]] = []
    for project, paths in by_project.items():
        for previous, current in itertools.pairwise(paths):
            for call in rates[current].keys() & rates[previous].keys():
                before, after = rates[previous][call], rates[current][call]
                for code in before.keys() | after.keys():
                    if code not in before:
                        status = "new"
                    elif code not in after:
                        status = "vanished"
                    elif abs(after[code] - before[code]) >= threshold:
                        status = "changed"
                    else:
                        continue
                    out.append({"project": project, "run_id": current,
                                "previous_run_id": previous, "client_software": call[0],
                                "client_version": call[1], "api": call[2], "error_code": code,
                                "previous_rate": before.get(code, 0.0),
                                "current_rate": after.get(code, 0.0), "status": status})
    return out


def compute(paths: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    return finish(scan(paths))
