"""What `zkbroker report` tells a person in a terminal or a CI log: progress lines on stderr
while it works (one line per step, no progress bars: a CI log keeps every line), and a short
plain-text summary on stdout when it is done: totals, Kafka 4.0 readiness, the diff counts and,
under `--fail-on`, every finding, so the log says why the command exited 3.

Deliberately not here: computing anything (the summary is `summary.json`'s, from
`zkbroker.broker.report.job`), the page (`zkbroker.broker.report.page`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

# A step's line, e.g. "ingesting 5 capture files"; the command prefixes its name.
Progress = Callable[[str], None]

# Findings listed one per line; the rest are counted (summary.json has them all).
MAX_FINDING_LINES = 10
# Not-ready clients named on the readiness line.
MAX_NAMED_CLIENTS = 3
DIFF_STATUSES = ("new", "vanished", "changed")
EXIT_MEANING = {0: "ok", 3: "findings under --fail-on"}


def quiet(_: str) -> None:
    """No progress lines (`run_report` from Python)."""


class StderrProgress:
    """Progress lines `<prog>: <message>` on stderr, flushed at once (Spark's own output
    goes to the same stream), each with the seconds since the command started."""

    def __init__(self, prog: str, stream: TextIO | None = None) -> None:
        self.prog = prog
        self.stream = stream
        self.started = time.perf_counter()

    def __call__(self, message: str) -> None:
        elapsed = time.perf_counter() - self.started
        print(f"{self.prog}: [{elapsed:5.1f}s] {message}", file=self.stream or sys.stderr,
              flush=True)


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"


def finding_text(finding: dict[str, Any]) -> str:
    detail = finding.get("detail")
    if isinstance(detail, list):
        detail = ", ".join(str(d) for d in detail)
    client = finding.get("client")
    return f"{finding['rule']}: " + (f"{client}: {detail}" if client else str(detail))


def _counts(rows: list[dict[str, Any]]) -> str:
    """"2 new, 1 vanished, 0 changed" of diff rows (one per code x client x API)."""
    return ", ".join(
        f"{sum(1 for r in rows if r.get('status') == s)} {s}" for s in DIFF_STATUSES
    )


def summary_lines(
    summary: dict[str, Any], out: str | None = None, prog: str = "zkbroker report"
) -> list[str]:
    """The summary as a handful of short lines, plus one per `--fail-on` finding (at most
    MAX_FINDING_LINES); `out` is the folder the page and summary.json were written to."""
    t = summary["totals"]
    code = summary.get("exit_code", 0)
    where = f": report.html and summary.json in {out}" if out else ""
    meaning = f" ({EXIT_MEANING[code]})" if code in EXIT_MEANING else ""
    lines = [f"{prog}: exit {code}{meaning}{where}"]
    lines.append("  totals:     " + ", ".join([
        plural(t["runs"], "run"),
        plural(t["requests"], "request"),
        plural(t["clients"], "client"),
        plural(t.get("apis", 0), "API"),
    ]))
    errors = [
        plural(t.get("errors", 0), "error response") + " (faults excluded)",
        plural(t.get("faults", 0), "injected fault"),
    ]
    if t.get("bad_lines"):
        errors.append(plural(t["bad_lines"], "bad line") + " (truncated or invalid)")
    lines.append("  errors:     " + ", ".join(errors))

    readiness = summary.get("readiness", [])
    not_ready = [r for r in readiness if r["verdict"] != "ready"]
    text = (f"{plural(len(readiness) - len(not_ready), 'client')} ready, {len(not_ready)} "
            "not ready for Kafka 4.0 (KIP-896)")
    if not_ready:
        named = [f"{r['client_software']} {r['client_version']} "
                 f"({plural(len(r.get('removed_versions') or []), 'removed version')})"
                 for r in not_ready[:MAX_NAMED_CLIENTS]]
        more = len(not_ready) - len(named)
        text += ": " + ", ".join(named) + (f" and {more} more" if more else "")
    lines.append("  readiness:  " + text)

    diff = summary.get("diff")
    if diff is not None:
        codes = [*diff["new_error_codes"], *diff["vanished_error_codes"],
                 *diff["changed_error_codes"]]
        lines.append(
            f"  baseline:   error codes {_counts(codes)}; API versions changed for "
            f"{plural(len(diff['changed_versions']), 'client x API pair')}"
        )
    lines.append(f"  run to run: error codes {_counts(summary.get('run_diff', []))}")

    rules = summary.get("fail_on", [])
    if rules:
        findings = summary.get("findings", [])
        per_rule = [f"{rule}: {sum(1 for f in findings if f['rule'] == rule)}" for rule in rules]
        verdict = (f"FAILED, {plural(len(findings), 'finding')}" if findings
                   else "passed, no findings")
        lines.append(f"  --fail-on:  {verdict} ({', '.join(per_rule)})")
        for finding in findings[:MAX_FINDING_LINES]:
            lines.append("    " + finding_text(finding))
        if len(findings) > MAX_FINDING_LINES:
            lines.append(f"    ... and {len(findings) - MAX_FINDING_LINES} more in summary.json")
    return lines


def print_summary(
    summary: dict[str, Any],
    out: str | None = None,
    prog: str = "zkbroker report",
    stream: TextIO | None = None,
) -> None:
    print("\n".join(summary_lines(summary, out, prog)), file=stream or sys.stdout, flush=True)
