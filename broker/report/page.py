"""`report.html`: one self-contained page (inline CSS, plots as data: URIs, no script, no
network resource) built from the collected table rows and the summary.

Every value is HTML-escaped. Versions Kafka 4.0 removed are highlighted (class `removed`),
as are "not ready" verdicts and new/vanished/changed diff rows. Deliberately not here: any
computation beyond formatting (the tables come from `zkbroker.broker.report.tables`), Spark.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

from zkbroker.broker.report import plots

Rows = list[dict[str, Any]]
MAX_ROWS = 500

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left}th{background:#f4f4f4}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.removed td,tr.not-ready td,tr.new td,tr.vanished td{background:#fde2e2}
tr.changed td{background:#fff3cd}.ok{color:#2a7a2a}.bad{color:#b00020;font-weight:bold}
.totals span{display:inline-block;margin-right:2em}img{max-width:100%}
"""


def _cell(value: Any) -> str:
    if isinstance(value, float):
        text = f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
        return f'<td class="num">{html.escape(text)}</td>'
    if isinstance(value, int) and not isinstance(value, bool):
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
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
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


def render_page(title: str, summary: dict[str, Any], rows: dict[str, Rows]) -> str:
    t = summary["totals"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        '<p class="totals">'
        + "".join(
            f"<span><b>{html.escape(k)}</b> {v:,}</span>"
            for k, v in t.items()
            if isinstance(v, int)
        )
        + "</p>",
    ]
    if summary["findings"]:
        parts.append(f'<p class="bad">{len(summary["findings"])} findings under --fail-on '
                     f'{html.escape(", ".join(summary["fail_on"]))}</p>')
        parts.append(table(summary["findings"], ["rule", "client", "detail"]))
    if t["bad_lines"]:
        parts.append(f'<p class="bad">{t["bad_lines"]:,} truncated or invalid lines</p>')
        parts.append(table(summary["bad_lines"], ["run_id", "lines", "bad_lines"]))

    parts.append("<h2 id=\"readiness\">Kafka 4.0 readiness (KIP-896)</h2>")
    parts.append(
        table(
            rows["readiness"],
            ["client_software", "client_version", "verdict", "requests", "removed_requests",
             "removed_versions"],
            lambda r: "not-ready" if r["verdict"] != "ready" else "",
            "readiness-table",
        )
    )
    parts.append("<h2 id=\"matrix\">Clients &times; API &times; version</h2>")
    parts.append(_img(plots.matrix_plot(rows["matrix"]), "requests per client"))
    parts.append(
        table(
            rows["matrix"],
            ["client_software", "client_version", "api", "api_key", "api_version", "requests",
             "share", "removed_in_4_0", "removed_range"],
            lambda r: "removed" if r["removed_in_4_0"] else "",
            "matrix-table",
        )
    )
    parts.append("<h2 id=\"errors\">Error codes (faults excluded)</h2>")
    parts.append(_img(plots.errors_plot(rows["errors"]), "error codes"))
    parts.append(
        table(
            rows["errors"],
            ["client_software", "client_version", "api", "api_version", "error_code",
             "error_name", "with_code", "requests", "rate"],
            table_id="errors-table",
        )
    )
    if "error_diff" in rows:
        changed = [r for r in rows["error_diff"] if r["status"] != "same"]
        versions = [r for r in rows["version_diff"] if r["status"] != "same"]
        baseline = ", ".join(summary["diff"]["baseline"]) if summary.get("diff") else ""
        parts.append(f"<h2 id=\"diff\">Diff against the baseline ({html.escape(baseline)})</h2>")
        parts.append("<h3>Error codes</h3>")
        parts.append(
            table(
                changed,
                ["client_software", "client_version", "api", "error_code", "error_name",
                 "baseline_rate", "current_rate", "status"],
                lambda r: str(r["status"]),
                "error-diff-table",
            )
        )
        parts.append("<h3>API versions used</h3>")
        parts.append(
            table(
                versions,
                ["client_software", "client_version", "api", "baseline_versions",
                 "current_versions", "status"],
                lambda r: str(r["status"]),
                "version-diff-table",
            )
        )
    parts.append("<h2 id=\"run-diff\">Run to run: error codes that changed</h2>")
    parts.append(
        "<p>Each run against the run before it in its project (by first request): codes "
        "new, vanished or changed per client &times; API both runs called.</p>"
    )
    parts.append(
        table(
            rows.get("run_diff", []),
            ["project", "previous_run_name", "run_name", "client_software", "client_version",
             "api", "error_code", "error_name", "previous_rate", "current_rate", "status"],
            lambda r: str(r["status"]),
            "run-diff-table",
        )
    )
    parts.append("<h2 id=\"latency\">Latency (nearest rank; faults excluded)</h2>")
    parts.append(_img(plots.latency_plot(rows["latency"]), "latency percentiles"))
    parts.append(_img(plots.trend_plot(rows["latency_runs"]), "p95 trend across runs"))
    parts.append(
        table(
            rows["latency"],
            ["api", "api_version", "requests", "p50_us", "p95_us", "p99_us", "max_us"],
            table_id="latency-table",
        )
    )
    parts.append("<h2 id=\"faults\">Injected faults and what followed</h2>")
    parts.append(
        table(
            rows["fault_summary"],
            ["client_software", "client_version", "api", "kind", "error_code", "faults",
             "recovered", "mean_retries", "max_retries", "p50_time_to_success_ms",
             "max_time_to_success_ms"],
            table_id="faults-table",
        )
    )
    parts.append("<h2 id=\"runs\">Runs</h2>")
    parts.append(
        table(
            rows["runs"],
            ["run_name", "project", "release", "kafka_version", "commit", "ci_job",
             "first_request", "requests", "bad_lines", "clients", "error_rate", "faults",
             "slowest_apis"],
            table_id="runs-table",
        )
    )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
