"""Golden: seeded captures written by the broker's own capture hook (`RequestCapture`), a
few lines broken as a killed process leaves them, then the whole job (`run_report`) checked
table by table against the plain-Python reference (`zkbroker.broker.report.reference`), which parses
the same files with json.loads and computes exact nearest-rank percentiles.

The job reads percentiles from ~1% latency buckets: each must be at most 1% below the exact
nearest rank and never above it; counts and max are exact.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from zkbroker.broker.report import reference
from zkbroker.broker.report.ingest import same_path
from zkbroker.broker.report.job import run_report
from zkbroker.broker.report.options import EXIT_FINDINGS, ReportOptions
from zkbroker.broker.report.synthetic import SyntheticConfig, write_runs

# The module fixture runs the whole job (and may start the JVM): allow a busy machine.
pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


def _local(run_id: str) -> str:
    return same_path(run_id).removeprefix("file:")


def _rows(result: Any, name: str, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    out = []
    for r in result.tables[name]:
        values = [_local(r[c]) if c == "run_id" else r[c] for c in columns]
        out.append(tuple(round(v, 9) if isinstance(v, float) else v for v in values))
    return sorted(out, key=repr)


def _ref(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    return sorted(
        (tuple(round(r[c], 9) if isinstance(r[c], float) else r[c] for c in columns)
         for r in rows),
        key=repr,
    )


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.images: list[str] = []
        self.external: list[str] = []
        self.links: list[str] = []
        self.headers: set[str] = set()
        self._header: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"] or "")
        if tag == "a":
            self.links.append(a.get("href") or "")
        if tag == "th":
            self._header = []
        if tag == "img":
            self.images.append(a.get("src") or "")
        for key in ("src", "href"):
            value = a.get(key) or ""
            if value and not value.startswith(("data:", "#")):
                self.external.append(value)

    def handle_data(self, data: str) -> None:
        if self._header is not None:
            self._header.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "th" and self._header is not None:
            self.headers.add("".join(self._header))
            self._header = None


@pytest.fixture(scope="module")
def golden(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Path]:
    root = tmp_path_factory.mktemp("golden")
    paths = write_runs(str(root / "in"), SyntheticConfig(lines=6000, runs=3, seed=5,
                                                          fault_rate=0.03))
    with open(paths[1], "a", encoding="utf-8") as f:
        f.write('{"time":"2026-01-02T00:00:00.000001Z","broker_id":"zero"}\n')
        f.write('{"time":"2026-01-02T00:00:01Z","api":"Meta')  # killed mid-line
    options = ReportOptions(out=str(root / "out"), inputs=(str(root / "in"),),
                            fail_on=("removed-in:4.0", "bad-lines"))
    result = run_report(options, spark=spark)
    return result, reference.compute(paths), root


def test_matrix_errors_and_runs_equal_the_reference(golden: tuple[Any, Any, Path]) -> None:
    result, ref, _ = golden
    cols = ("client_software", "client_version", "api", "api_key", "api_version", "requests",
            "share", "deprecated_in_3_9", "removed_in_4_0")
    assert _rows(result, "matrix", cols) == _ref(ref["matrix"], cols)
    cols = ("client_software", "client_version", "api", "api_key", "api_version",
            "error_code", "with_code", "requests", "rate")
    assert _rows(result, "errors", cols) == _ref(ref["errors"], cols)
    cols = ("run_id", "lines", "bad_lines", "requests", "clients", "errors", "faults",
            "error_rate")
    assert _rows(result, "runs", cols) == _ref(ref["runs"], cols)
    assert result.summary["totals"]["bad_lines"] == 2
    assert result.summary["totals"]["lines"] == 6002


def _within_one_percent_below(got: list[tuple[Any, ...]], exact: list[tuple[Any, ...]],
                              percentiles: slice) -> None:
    assert len(got) == len(exact)
    for g, e in zip(got, exact, strict=True):
        assert g[: percentiles.start] == e[: percentiles.start]  # keys and requests: exact
        assert g[percentiles.stop:] == e[percentiles.stop:]  # max: exact
        for value, want in zip(g[percentiles], e[percentiles], strict=True):
            assert want * 0.99 < value <= want, (g, e)


def test_latency_percentiles_within_one_percent_below_exact_nearest_rank(
    golden: tuple[Any, Any, Path],
) -> None:
    result, ref, _ = golden
    cols = ("api", "api_key", "api_version", "requests", "p50_us", "p95_us", "p99_us",
            "max_us")
    got, exact = _rows(result, "latency", cols), _ref(ref["latency"], cols)
    _within_one_percent_below(got, exact, slice(4, 7))
    assert got != exact  # the generated latencies share buckets: not trivially exact
    cols = ("run_id", "api", "api_version", "requests", "p50_us", "p95_us", "p99_us", "max_us")
    got, exact = _rows(result, "latency_runs", cols), _ref(ref["latency_runs"], cols)
    _within_one_percent_below(got, exact, slice(4, 7))


def test_run_diff_equals_the_reference(golden: tuple[Any, Any, Path]) -> None:
    result, ref, _ = golden
    cols = ("run_id", "previous_run_id", "client_software", "client_version", "api",
            "error_code", "previous_rate", "current_rate", "status")
    got = sorted(
        tuple(_local(r[c]) if c.endswith("run_id") else
              (round(r[c], 9) if isinstance(r[c], float) else r[c]) for c in cols)
        for r in result.tables["run_diff"]
    )
    want = sorted(
        tuple(round(r[c], 9) if isinstance(r[c], float) else r[c] for c in cols)
        for r in ref["run_diff"]
    )
    assert got == want
    assert {r[-1] for r in got} >= {"new", "vanished"}  # the seeded runs do differ
    assert result.summary["run_diff"] == result.tables["run_diff"]


def test_fault_events_equal_the_reference(
    spark: Any, golden: tuple[Any, Any, Path]
) -> None:
    _, ref, root = golden
    cols = ("run_id", "client_id", "client_software", "client_version", "api", "kind",
            "error_code", "recovered", "retries", "time_to_success_ms")
    events = spark.read.parquet(str(root / "out" / "tables" / "fault_events")).collect()
    got = sorted(
        (tuple(_local(r[c]) if c == "run_id" else
               (round(r[c], 3) if isinstance(r[c], float) else r[c]) for c in cols)
         for r in events),
        key=repr,
    )
    want = sorted(
        (tuple(round(e[c], 3) if isinstance(e[c], float) else e[c] for c in cols)
         for e in ref["fault_events"]),
        key=repr,
    )
    assert got == want
    assert len(got) > 100 and any(e[7] for e in got) and any(e[8] and e[8] > 1 for e in got)


def test_verdicts_findings_exit_code_and_page(golden: tuple[Any, Any, Path]) -> None:
    result, _, root = golden
    verdicts = {(r["client_software"], r["verdict"]) for r in result.tables["readiness"]}
    assert verdicts == {
        ("unknown", "not ready"),
        ("apache-kafka-java", "ready"),
        ("confluent-kafka-python", "ready"),
        ("kafka-python", "ready"),
    }
    assert result.exit_code == EXIT_FINDINGS
    assert {f["rule"] for f in result.findings} == {"removed-in:4.0", "bad-lines"}
    summary = json.loads((root / "out" / "summary.json").read_text())
    assert summary["exit_code"] == EXIT_FINDINGS
    assert summary["findings"] == result.findings
    html = (root / "out" / "report.html").read_text()
    page = _Page()
    page.feed(html)
    assert {"readiness-table", "matrix-table", "errors-table", "latency-table",
            "faults-table", "runs-table"} <= page.ids
    # The table of contents links every section (findings and bad lines first: both exist).
    assert page.links[:2] == ["#findings", "#bad-lines"]
    assert {link.removeprefix("#") for link in page.links} == {
        "findings", "bad-lines", "readiness", "matrix", "errors", "run-diff", "latency",
        "faults", "runs"} <= page.ids
    assert html.count('<p class="how">') == len(page.links)
    # Error codes with their names, in the fault table too (the faults inject codes).
    faults = html.split('id="faults-table"', 1)[1].split("</table>", 1)[0]
    injected = {int(code) for code in re.findall(r"<td>(-?\d+) [A-Z_]+</td>", faults)}
    assert injected == {f["error_code"] for f in result.tables["fault_summary"]} - {None}
    assert "<td>41 NOT_CONTROLLER</td>" in faults
    errors = html.split('id="errors-table"', 1)[1].split("</table>", 1)[0]
    assert "<td>3 UNKNOWN_TOPIC_OR_PARTITION</td>" in errors
    # No internal column: ids and join keys stay in the Parquet tables.
    assert not page.headers & {"run_id", "previous_run_id", "api_key", "sequence",
                                "ingest_batch", "client_id", "error_code"}
    assert not [h for h in page.headers if "_" in h]
    assert len(page.images) == 4 and all(i.startswith("data:image/png;base64,")
                                         for i in page.images)
    assert page.external == []
    for table in ("matrix", "errors", "latency", "latency_runs", "fault_events", "runs"):
        assert list((root / "out" / "tables" / table).glob("*.parquet")), table
