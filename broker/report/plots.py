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
from collections import defaultdict
from typing import Any

Rows = list[dict[str, Any]]
MAX_BARS = 30
MAX_TREND_SERIES = 8


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
    """Import matplotlib (~0.6 s) on a thread of its own, while Spark works: the page is
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


def trend_plot(latency_runs: Rows) -> str | None:
    """p95 per API across runs (by run start), for the APIs with the most requests."""
    if not latency_runs:
        return None
    plt = _pyplot()
    by_api: dict[str, list[tuple[str, float]]] = defaultdict(list)
    volume: dict[str, int] = defaultdict(int)
    for r in latency_runs:
        api = f"{r['api']} v{r['api_version']}"
        by_api[api].append((r["run_start"] or "", r["p95_us"] / 1000))
        volume[api] += r["requests"]
    top = sorted(volume, key=lambda a: -volume[a])[:MAX_TREND_SERIES]
    starts = sorted({s for api in top for s, _ in by_api[api]})
    position = {s: i for i, s in enumerate(starts)}
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for api in top:
        points = sorted(by_api[api])
        ax.plot([position[s] for s, _ in points], [v for _, v in points], marker="o", label=api)
    ax.set_xlabel("run (by start time)")
    ax.set_ylabel("p95 latency (ms)")
    ax.legend(fontsize=7, ncol=2)
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
