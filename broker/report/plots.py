"""The report's plots: matplotlib figures (Agg backend, no display) as base64 PNG text, to be
embedded in `report.html` as data: URIs, so the page needs no other file and no network.

Each function takes the collected rows of one table (plain dicts, small) and returns None
when there is nothing to draw. Deliberately not here: Spark (the rows are already collected),
HTML (`zkbroker.broker.report.page`).
"""

from __future__ import annotations

import base64
import io
import threading
from collections import Counter, defaultdict
from typing import Any

Rows = list[dict[str, Any]]
MAX_BARS = 30
MAX_TREND_SERIES = 8
# Run names written under the trend's axis at most.
MAX_RUN_LABELS = 40


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # no display: the page embeds the PNG
    import matplotlib.pyplot as plt

    return plt


def load_in_background() -> None:
    """Import matplotlib (slow to import) on a thread of its own, while Spark works: the page is
    drawn only at the end of a run, which then does not wait for the import."""
    threading.Thread(target=_pyplot, name="report-plots-import", daemon=True).start()


def matrix_plot(matrix: Rows) -> str | None:
    """Requests per client, split into versions Kafka 4.0 still serves and removed ones."""
    if not matrix:
        return None
    plt = _pyplot()
    kept: dict[str, int] = defaultdict(int)
    removed: dict[str, int] = defaultdict(int)
    for r in matrix:
        client = f"{r['client_software']} {r['client_version']}"
        (removed if r["removed_in_4_0"] else kept)[client] += r["requests"]
    clients = sorted(set(kept) | set(removed))[:MAX_BARS]
    fig, ax = plt.subplots(figsize=(8, 0.5 + 0.4 * len(clients)))
    ax.barh(clients, [kept[c] for c in clients], color="#4c72b0", label="served by Kafka 4.0")
    ax.barh(
        clients,
        [removed[c] for c in clients],
        left=[kept[c] for c in clients],
        color="#c44e52",
        label="removed in Kafka 4.0",
    )
    ax.set_xlabel("requests")
    ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


def latency_plot(latency: Rows) -> str | None:
    """p50/p95/p99 per API and version (the slowest MAX_BARS by p99)."""
    if not latency:
        return None
    plt = _pyplot()
    rows = sorted(latency, key=lambda r: -r["p99_us"])[:MAX_BARS]
    labels = [f"{r['api']} v{r['api_version']}" for r in rows][::-1]
    fig, ax = plt.subplots(figsize=(8, 0.5 + 0.35 * len(rows)))
    for key, color in (("p99_us", "#c44e52"), ("p95_us", "#dd8452"), ("p50_us", "#4c72b0")):
        ax.barh(labels, [r[key] / 1000 for r in rows][::-1], color=color, label=key[:3])
    ax.set_xlabel("latency (ms)")
    ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


def trend_plot(latency_runs: Rows, runs: Rows | None = None) -> str | None:
    """p95 per API run by run, for the APIs with the most requests: the runs on a categorical
    x axis by name, in the order of their first request (`runs`: the runs table, which names
    a run's project where two projects have runs of the same name), the legend outside the
    axes so it never hides a line."""
    if not latency_runs:
        return None
    plt = _pyplot()
    project = {r["run_id"]: r.get("project") for r in runs or []}
    by_api: dict[str, dict[str, float]] = defaultdict(dict)
    volume: dict[str, int] = defaultdict(int)
    start: dict[str, str] = {}
    name: dict[str, str] = {}
    for r in latency_runs:
        api = f"{r['api']} v{r['api_version']}"
        by_api[api][r["run_id"]] = r["p95_us"] / 1000
        volume[api] += r["requests"]
        start[r["run_id"]] = r["run_start"] or ""
        name[r["run_id"]] = r["run_name"] or r["run_id"]
    top = sorted(volume, key=lambda a: (-volume[a], a))[:MAX_TREND_SERIES]
    order = sorted({run for api in top for run in by_api[api]}, key=lambda r: (start[r], r))
    shared = {n for n, count in Counter(name.values()).items() if count > 1}
    labels = [
        f"{project.get(r) or '?'}/{name[r]}" if name[r] in shared else name[r] for r in order
    ]
    position = {run: i for i, run in enumerate(order)}
    fig, ax = plt.subplots(figsize=(max(6.0, min(14.0, 2 + 0.35 * len(order))), 3.8))
    for api in top:
        runs_of_api = sorted(by_api[api], key=position.__getitem__)
        ax.plot([position[r] for r in runs_of_api], [by_api[api][r] for r in runs_of_api],
                marker="o", label=api)
    # A label per run while they fit; beyond that every k-th, so they never overlap.
    step = max(1, -(-len(order) // MAX_RUN_LABELS))
    ticks = list(range(0, len(order), step))
    ax.set_xticks(ticks, [labels[i] for i in ticks], rotation=35 if len(order) > 4 else 0,
                  ha="right" if len(order) > 4 else "center", fontsize=8)
    ax.set_xlim(-0.5, len(order) - 0.5)
    ax.set_xlabel("run (in order of first request)")
    ax.set_ylabel("p95 latency (ms)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
              title="API", title_fontsize=8)
    return _png(fig)


def errors_plot(errors: Rows) -> str | None:
    """Requests answering each error code, per API."""
    if not errors:
        return None
    plt = _pyplot()
    counts: dict[str, int] = defaultdict(int)
    for r in errors:
        counts[f"{r['api']} {r['error_name']}"] += r["with_code"]
    labels = sorted(counts, key=lambda k: -counts[k])[:MAX_BARS][::-1]
    fig, ax = plt.subplots(figsize=(8, 0.5 + 0.35 * len(labels)))
    ax.barh(labels, [counts[k] for k in labels], color="#8172b3")
    ax.set_xlabel("requests answering the code (faults excluded)")
    return _png(fig)
