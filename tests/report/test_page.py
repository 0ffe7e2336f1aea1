"""The page for a person, from rows as the job collects them (no Spark): a table of contents,
a sentence per section, error names beside codes, no internal columns; the trend plot's runs
by name on a categorical axis, its legend clear of the lines."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest

from zkbroker.broker.report import page, plots

CLIENT = {"client_software": "kafka-python", "client_version": "3.0.12"}
# Columns the tables carry for joins and ids, which a reader has no use for.
INTERNAL = ("run_id", "previous_run_id", "api_key", "ingest_batch", "sequence", "rn",
            "client_id", "deprecated_in_3_9")


def _rows(with_baseline: bool = True) -> dict[str, list[dict[str, Any]]]:
    run = {"run_id": "file:/in/project=a/run-1.jsonl", "run_name": "run-1.jsonl",
           "project": "a", "release": "1.0", "kafka_version": "3.9", "commit": "c0ffee",
           "ci_job": "ci/1", "first_request": "2026-01-01T00:00:00.000745Z", "lines": 11,
           "requests": 10, "bad_lines": 1, "clients": 1, "errors": 1, "error_rate": 0.1,
           "faults": 1, "slowest_apis": ["Metadata v12 p95=0.30ms"]}
    rows: dict[str, list[dict[str, Any]]] = {
        "readiness": [{**CLIENT, "verdict": "not ready", "requests": 10, "removed_requests": 2,
                       "removed_versions": ["Metadata v0"]}],
        "matrix": [{**CLIENT, "api": "Metadata", "api_key": 3, "api_version": 0, "requests": 2,
                    "share": 0.2, "deprecated_in_3_9": True, "removed_in_4_0": True,
                    "removed_range": "v0-3"}],
        "errors": [{**CLIENT, "api": "Metadata", "api_key": 3, "api_version": 0,
                    "error_code": 3, "error_name": "UNKNOWN_TOPIC_OR_PARTITION",
                    "with_code": 1, "requests": 2, "rate": 0.5}],
        "latency": [{"api": "Metadata", "api_key": 3, "api_version": 0, "requests": 9,
                     "p50_us": 100, "p95_us": 300, "p99_us": 310, "max_us": 320}],
        "latency_runs": [{"run_id": run["run_id"], "run_name": "run-1.jsonl",
                          "run_start": "2026-01-01T00:00:00Z", "api": "Metadata",
                          "api_version": 0, "requests": 9, "p50_us": 100, "p95_us": 300,
                          "p99_us": 310, "max_us": 320}],
        "fault_summary": [{**CLIENT, "api": "CreateTopics", "kind": "error", "error_code": 41,
                           "faults": 1, "recovered": 1, "mean_retries": 1.0, "max_retries": 1,
                           "p50_time_to_success_ms": 2.0, "max_time_to_success_ms": 2.0},
                          {**CLIENT, "api": "Metadata", "kind": "delay", "error_code": None,
                           "faults": 1, "recovered": 1, "mean_retries": 1.0, "max_retries": 1,
                           "p50_time_to_success_ms": 9.0, "max_time_to_success_ms": 9.0}],
        "runs": [run],
        "run_diff": [{"project": "a", "run_id": run["run_id"], "run_name": "run-1.jsonl",
                      "previous_run_id": "file:/in/project=a/run-0.jsonl",
                      "previous_run_name": "run-0.jsonl", **CLIENT, "api": "Metadata",
                      "error_code": 3, "error_name": "UNKNOWN_TOPIC_OR_PARTITION",
                      "previous_rate": 0.0, "current_rate": 0.5, "status": "new"}],
    }
    if with_baseline:
        rows["error_diff"] = [{**CLIENT, "api": "Metadata", "error_code": 5,
                               "error_name": "LEADER_NOT_AVAILABLE", "baseline_rate": 0.1,
                               "current_rate": 0.0, "status": "vanished"}]
        rows["version_diff"] = [{**CLIENT, "api": "Metadata", "baseline_versions": [0],
                                 "current_versions": [0], "status": "same"}]
    return rows


def _summary(rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        "totals": {"runs": 1, "lines": 11, "bad_lines": 1, "requests": 10, "clients": 1,
                   "apis": 2, "errors": 1, "faults": 2},
        "bad_lines": [{"run_id": "file:/in/project%3Da/run-1.jsonl", "lines": 11,
                       "bad_lines": 1}],
        "diff": {"baseline": ["old/"]} if "error_diff" in rows else None,
        "fail_on": ["removed-in:4.0"],
        "findings": [{"rule": "removed-in:4.0", "client": "kafka-python 3.0.12",
                      "detail": ["Metadata v0"]}],
    }


class _Page(HTMLParser):
    """Each table's headers and rows (by id), the links and the section headings."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.links: list[str] = []
        self.headings: dict[str, str] = {}
        self.how: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._heading: str | None = None
        self._in_how = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id") or f"table-{len(self.tables)}"
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "a":
            self.links.append(a.get("href") or "")
        elif tag == "h2":
            self._heading = a.get("id") or ""
            self.headings[self._heading] = ""
        elif tag == "p" and a.get("class") == "how":
            self._in_how = True
            self.how.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._cell is not None and self._table:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "h2":
            self._heading = None
        elif tag == "p":
            self._in_how = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._heading is not None:
            self.headings[self._heading] += data
        if self._in_how:
            self.how[-1] += data


def _parse(rows: dict[str, list[dict[str, Any]]]) -> _Page:
    parsed = _Page()
    parsed.feed(page.render_page("t", _summary(rows), rows))
    return parsed


@pytest.mark.parametrize("with_baseline", [True, False])
def test_a_table_of_contents_links_every_section_and_each_says_how_to_read_it(
    with_baseline: bool,
) -> None:
    parsed = _parse(_rows(with_baseline))
    assert parsed.links == [f"#{anchor}" for anchor in parsed.headings]
    expected = {"findings", "bad-lines", "readiness", "matrix", "errors", "run-diff",
                "latency", "faults", "runs"} | ({"diff"} if with_baseline else set())
    assert set(parsed.headings) == expected
    assert len(parsed.how) == len(parsed.headings)
    assert all(h.endswith(".") and h.count(". ") == 0 for h in parsed.how)  # one sentence


def test_error_names_stand_beside_codes_in_every_table() -> None:
    tables = _parse(_rows()).tables
    faults = tables["faults-table"]
    error = faults[0].index("error")
    assert [r[error] for r in faults[1:]] == ["41 NOT_CONTROLLER", ""]  # a delay has no code
    for name, want in (("errors-table", "3 UNKNOWN_TOPIC_OR_PARTITION"),
                       ("run-diff-table", "3 UNKNOWN_TOPIC_OR_PARTITION"),
                       ("error-diff-table", "5 LEADER_NOT_AVAILABLE")):
        assert tables[name][1][tables[name][0].index("error")] == want
    assert "error code" not in {h for rows in tables.values() for h in rows[0]}


def test_no_internal_column_reaches_the_page() -> None:
    tables = _parse(_rows()).tables
    headers = {h for rows in tables.values() for h in rows[0]}
    for column in INTERNAL:
        assert column not in headers and page.label(column) not in headers, column
    assert not any(h.endswith("_id") or "_" in h for h in headers), headers  # words, not keys
    # The bad line's file is a path a reader can open, not Spark's URI of it.
    assert tables["bad-lines-table"][1][0] == "/in/project=a/run-1.jsonl"
    runs = tables["runs-table"]
    assert runs[1][runs[0].index("first request (UTC)")] == "2026-01-01 00:00:00"
    matrix = tables["matrix-table"]
    assert matrix[1][matrix[0].index("removed in 4.0")] == "yes"


def test_the_trend_names_runs_on_its_axis_and_keeps_the_legend_off_the_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    figures: list[Any] = []
    monkeypatch.setattr(plots, "_png", lambda fig: figures.append(fig) or "png")
    latency_runs = []
    runs = []
    # Two projects with runs of the same names; started in another order than named.
    for i, (project, name) in enumerate([("a", "run-2"), ("a", "run-1"), ("b", "run-1")]):
        run_id = f"file:/in/project={project}/{name}.jsonl"
        runs.append({"run_id": run_id, "project": project})
        for api in ("Metadata", "CreateTopics"):
            latency_runs.append({"run_id": run_id, "run_name": f"{name}.jsonl",
                                 "run_start": f"2026-01-0{i + 1}T00:00:00Z", "api": api,
                                 "api_version": 1, "requests": 10, "p95_us": 1000 * (i + 1)})
    assert plots.trend_plot(latency_runs, runs) == "png"
    fig = figures[0]
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["run-2.jsonl", "a/run-1.jsonl", "b/run-1.jsonl"]  # by start, by name
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    axes = ax.get_window_extent(renderer)
    assert legend.x0 >= axes.x1 or legend.y1 <= axes.y0  # beside or below, never over
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == [
        "CreateTopics v1", "Metadata v1"]
