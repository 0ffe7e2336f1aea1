"""`report.html`: one self-contained page (inline CSS, plots as data: URIs, no script, no
network resource) built from the collected table rows and the summary.

Written for a person: a table of contents, one sentence per section on how to read it,
headers in words, error codes with their names ("3 UNKNOWN_TOPIC_OR_PARTITION"), and only
the columns a reader needs: keys the tables carry for joins and ids (`run_id`, `api_key`,
`previous_run_id`) stay in the Parquet tables and `summary.json`, not on the page.

Every value is HTML-escaped. Versions Kafka 4.0 removed are highlighted (class `removed`),
as are "not ready" verdicts and new/vanished/changed diff rows. Deliberately not here: any
computation beyond formatting (the tables come from `zkbroker.broker.report.tables`), Spark.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from zkbroker.broker.protocol.error_codes import NAMES as ERROR_NAMES
from zkbroker.broker.report import plots

Rows = list[dict[str, Any]]
MAX_ROWS = 500
TIMES = "\u00d7"  # the multiplication sign of "client x API" (escaped: ruff's RUF001)

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left}th{background:#f4f4f4}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.removed td,tr.not-ready td,tr.new td,tr.vanished td{background:#fde2e2}
tr.changed td{background:#fff3cd}.ok{color:#2a7a2a}.bad{color:#b00020;font-weight:bold}
.totals span{display:inline-block;margin-right:2em}img{max-width:100%}
p.how{color:#555;max-width:60em}nav.toc{background:#f8f8f8;padding:.5em 1em;display:inline-block}
nav.toc ol{margin:.3em 0;padding-left:1.5em}
"""

# Column headers in words; a column not listed is shown by its name, "_" as spaces.
LABELS = {
    "client_software": "client",
    "client_version": "client version",
    "api": "API",
    "api_version": "version",
    "share": "share of the client's requests",
    "removed_in_4_0": "removed in 4.0",
    "removed_range": "versions 4.0 removed",
    "removed_requests": "requests to removed versions",
    "removed_versions": "removed versions used",
    "with_code": "requests answering it",
    "baseline_rate": "baseline rate",
    "current_rate": "current rate",
    "previous_run_name": "previous run",
    "run_name": "run",
    "previous_rate": "previous rate",
    "baseline_versions": "baseline versions",
    "current_versions": "current versions",
    "p50_us": "p50 (µs)",
    "p95_us": "p95 (µs)",
    "p99_us": "p99 (µs)",
    "max_us": "max (µs)",
    "kind": "fault",
    "mean_retries": "mean retries",
    "max_retries": "max retries",
    "p50_time_to_success_ms": "p50 time to success (ms)",
    "max_time_to_success_ms": "max time to success (ms)",
    "kafka_version": "Kafka",
    "ci_job": "CI job",
    "first_request": "first request (UTC)",
    "bad_lines": "bad lines",
    "error_rate": "error rate",
    "slowest_apis": "slowest APIs (by p95)",
    "apis": "APIs",
    "errors": "error responses",
}


def label(column: str) -> str:
    return LABELS.get(column, column.replace("_", " "))


def error_text(code: int | None, name: str | None = None) -> str:
    """An error code with its name, "3 UNKNOWN_TOPIC_OR_PARTITION"; "" for none."""
    if code is None:
        return ""
    return f"{code} {name or ERROR_NAMES.get(code, 'UNKNOWN_CODE')}"


def with_error(rows: Rows) -> Rows:
    """The rows with an `error` column: code and name together."""
    return [{**r, "error": error_text(r.get("error_code"), r.get("error_name"))} for r in rows]


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return f"<td>{'yes' if value else ''}</td>"
    if isinstance(value, float):
        text = f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
        return f'<td class="num">{html.escape(text)}</td>'
    if isinstance(value, int):
        return f'<td class="num">{value:,}</td>'
    if isinstance(value, list):
        return f"<td>{html.escape(', '.join(str(v) for v in value))}</td>"
    return f"<td>{html.escape('' if value is None else str(value))}</td>"


def table(
    rows: Rows,
    columns: Sequence[str],
    row_class: Callable[[dict[str, Any]], str] | None = None,
    table_id: str = "",
) -> str:
    if not rows:
        return "<p>none</p>"
    head = "".join(f"<th>{html.escape(label(c))}</th>" for c in columns)
    body = []
    for r in rows[:MAX_ROWS]:
        cls = row_class(r) if row_class else ""
        attr = f' class="{cls}"' if cls else ""
        body.append(f"<tr{attr}>" + "".join(_cell(r.get(c)) for c in columns) + "</tr>")
    more = ""
    if len(rows) > MAX_ROWS:
        more = f"<p>{len(rows) - MAX_ROWS} more rows in the Parquet table</p>"
    ident = f' id="{table_id}"' if table_id else ""
    return f"<table{ident}><tr>{head}</tr>{''.join(body)}</table>{more}"


def _img(png: str | None, alt: str) -> str:
    if png is None:
        return ""
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{png}">'


def _file(run_id: str) -> str:
    """A run's capture file as a reader finds it: a local path without `file:`."""
    text = unquote(run_id)
    return "/" + text.removeprefix("file:").lstrip("/") if text.startswith("file:") else text


def _when(value: Any) -> str:
    """An ISO time to the second, "2026-01-01 00:00:00"."""
    return str(value)[:19].replace("T", " ") if value else ""


@dataclass(frozen=True, slots=True)
class Section:
    anchor: str
    title: str
    how: str  # one sentence: how to read it
    body: str


def _sections(summary: dict[str, Any], rows: dict[str, Rows]) -> list[Section]:
    """The page's sections in order; findings and bad lines only when there are any, the
    baseline diff only against a baseline."""
    sections = []
    if summary["findings"]:
        sections.append(_findings(summary))
    if summary["totals"]["bad_lines"]:
        sections.append(_bad_lines(summary))
    sections += [_readiness(rows), _matrix(rows), _errors(rows)]
    if "error_diff" in rows:
        sections.append(_baseline_diff(summary, rows))
    sections += [_run_diff(rows), _latency(rows), _faults(rows), _runs(rows)]
    return sections


def _findings(summary: dict[str, Any]) -> Section:
    return Section(
        "findings", f"Findings under --fail-on ({len(summary['findings']):,})",
        f"Each finding of the rules {', '.join(summary['fail_on'])}; any finding makes "
        "the command exit 3, so a CI job fails on it.",
        table(summary["findings"], ["rule", "client", "detail"], table_id="findings-table"),
    )


def _bad_lines(summary: dict[str, Any]) -> Section:
    bad = [{**r, "file": _file(r["run_id"])} for r in summary["bad_lines"]]
    return Section(
        "bad-lines", f"Bad lines ({summary['totals']['bad_lines']:,})",
        "Capture lines that were truncated (a process killed mid-write) or invalid, per "
        "file: they are counted here and left out of every other table.",
        table(bad, ["file", "lines", "bad_lines"], table_id="bad-lines-table"),
    )


def _readiness(rows: dict[str, Rows]) -> Section:
    return Section(
        "readiness", "Kafka 4.0 readiness (KIP-896)",
        "One verdict per client: \"not ready\" (red) means it still sent API versions that "
        "Kafka 4.0 removed, listed on the right, and would fail against a 4.0 broker.",
        table(
            rows["readiness"],
            ["client_software", "client_version", "verdict", "requests", "removed_requests",
             "removed_versions"],
            lambda r: "not-ready" if r["verdict"] != "ready" else "",
            "readiness-table",
        ),
    )


def _matrix(rows: dict[str, Rows]) -> Section:
    return Section(
        "matrix", f"Clients {TIMES} API {TIMES} version",
        "Which versions of each API every client used and how often; red rows are versions "
        "Kafka 4.0 no longer serves (the plot shows each client's requests to them).",
        _img(plots.matrix_plot(rows["matrix"]), "requests per client") + table(
            rows["matrix"],
            ["client_software", "client_version", "api", "api_version", "requests", "share",
             "removed_in_4_0", "removed_range"],
            lambda r: "removed" if r["removed_in_4_0"] else "",
            "matrix-table",
        ),
    )


def _errors(rows: dict[str, Rows]) -> Section:
    return Section(
        "errors", "Error codes (faults excluded)",
        "The error codes the broker answered per client, API and version, with the rate "
        "(requests answering the code / requests); requests a fault was injected into are "
        "not counted, their errors are the test's doing.",
        _img(plots.errors_plot(rows["errors"]), "error codes") + table(
            with_error(rows["errors"]),
            ["client_software", "client_version", "api", "api_version", "error", "with_code",
             "requests", "rate"],
            table_id="errors-table",
        ),
    )


def _baseline_diff(summary: dict[str, Any], rows: dict[str, Rows]) -> Section:
    changed = [r for r in rows["error_diff"] if r["status"] != "same"]
    versions = [r for r in rows["version_diff"] if r["status"] != "same"]
    baseline = ", ".join(summary["diff"]["baseline"]) if summary.get("diff") else ""
    return Section(
        "diff", f"Diff against the baseline ({baseline})",
        "What changed from the baseline's runs to these: error codes new, vanished or "
        "whose rate moved by at least --rate-threshold, per client and API both called; "
        "then the API versions each client used before and after.",
        "<h3>Error codes</h3>" + table(
            with_error(changed),
            ["client_software", "client_version", "api", "error", "baseline_rate",
             "current_rate", "status"],
            lambda r: str(r["status"]),
            "error-diff-table",
        ) + "<h3>API versions used</h3>" + table(
            versions,
            ["client_software", "client_version", "api", "baseline_versions",
             "current_versions", "status"],
            lambda r: str(r["status"]),
            "version-diff-table",
        ),
    )


def _run_diff(rows: dict[str, Rows]) -> Section:
    return Section(
        "run-diff", "Run to run: error codes that changed",
        "Each run against the run before it in its project (by first request): error codes "
        f"new, vanished or changed per client {TIMES} API both runs called; a code that stays the "
        "same is not listed.",
        table(
            with_error(rows.get("run_diff", [])),
            ["project", "previous_run_name", "run_name", "client_software", "client_version",
             "api", "error", "previous_rate", "current_rate", "status"],
            lambda r: str(r["status"]),
            "run-diff-table",
        ),
    )


def _latency(rows: dict[str, Rows]) -> Section:
    return Section(
        "latency", "Latency (nearest rank; faults excluded)",
        "Percentiles of the broker's time to answer, per API and version over every run "
        "(within 1% below the exact value); the second plot follows the busiest APIs' p95 "
        "run by run, to spot a run that got slower.",
        _img(plots.latency_plot(rows["latency"]), "latency percentiles")
        + _img(plots.trend_plot(rows["latency_runs"], rows["runs"]), "p95 trend across runs")
        + table(
            rows["latency"],
            ["api", "api_version", "requests", "p50_us", "p95_us", "p99_us", "max_us"],
            table_id="latency-table",
        ),
    )


def _faults(rows: dict[str, Rows]) -> Section:
    return Section(
        "faults", "Injected faults and what followed",
        "Each kind of fault injected into a client's calls of an API, and how the client "
        "coped: recovered counts faults followed by a successful call of the same API, "
        "retries the calls it took, time to success how long until then.",
        table(
            with_error(rows["fault_summary"]),
            ["client_software", "client_version", "api", "kind", "error", "faults",
             "recovered", "mean_retries", "max_retries", "p50_time_to_success_ms",
             "max_time_to_success_ms"],
            table_id="faults-table",
        ),
    )


def _runs(rows: dict[str, Rows]) -> Section:
    runs = [{**r, "first_request": _when(r.get("first_request"))} for r in rows["runs"]]
    return Section(
        "runs", "Runs",
        "One row per capture file, in the order of its first request: where it came from "
        "(its meta file's release, commit, CI job) and what it held.",
        table(
            runs,
            ["run_name", "project", "release", "kafka_version", "commit", "ci_job",
             "first_request", "requests", "bad_lines", "clients", "error_rate", "faults",
             "slowest_apis"],
            table_id="runs-table",
        ),
    )


def render_page(title: str, summary: dict[str, Any], rows: dict[str, Rows]) -> str:
    t = summary["totals"]
    sections = _sections(summary, rows)
    toc = "".join(
        f'<li><a href="#{s.anchor}">{html.escape(s.title)}</a></li>' for s in sections
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        '<p class="totals">'
        + "".join(
            f"<span><b>{html.escape(label(k))}</b> {v:,}</span>"
            for k, v in t.items()
            if isinstance(v, int)
        )
        + "</p>",
    ]
    if summary["findings"]:
        parts.append(f'<p class="bad">{len(summary["findings"])} findings under --fail-on '
                     f'{html.escape(", ".join(summary["fail_on"]))}: the command exits 3</p>')
    parts.append(f'<nav class="toc" id="contents"><b>Contents</b><ol>{toc}</ol></nav>')
    for s in sections:
        parts.append(f'<h2 id="{s.anchor}">{html.escape(s.title)}</h2>')
        parts.append(f'<p class="how">{html.escape(s.how)}</p>')
        parts.append(s.body)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
