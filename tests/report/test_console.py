"""What `zkbroker report` prints for a person: the summary's lines (stdout) and the progress
lines (stderr). No Spark: the summary is built by hand, as `job.build_summary` writes it."""

from __future__ import annotations

import io
import re
from typing import Any

from zkbroker.broker.report.console import MAX_FINDING_LINES, StderrProgress, summary_lines


def _summary(**overrides: Any) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "totals": {"runs": 3, "lines": 1201, "bad_lines": 1, "requests": 1200, "clients": 4,
                   "apis": 7, "errors": 45, "faults": 12},
        "readiness": [
            {"client_software": "kafka-python", "client_version": "3.0.12", "verdict": "ready",
             "removed_versions": []},
            {"client_software": "unknown", "client_version": "unknown",
             "verdict": "not ready", "removed_versions": ["CreateTopics v1", "Metadata v0"]},
        ],
        "diff": None,
        "run_diff": [{"status": "new"}, {"status": "new"}, {"status": "vanished"}],
        "fail_on": [],
        "findings": [],
        "exit_code": 0,
    }
    summary.update(overrides)
    return summary


def test_the_summary_says_the_totals_verdicts_and_diff_counts() -> None:
    lines = summary_lines(_summary(), "/tmp/out")
    text = "\n".join(lines)
    assert lines[0] == "zkbroker report: exit 0 (ok): report.html and summary.json in /tmp/out"
    assert "3 runs, 1,200 requests, 4 clients, 7 APIs" in text
    assert "45 error responses (faults excluded), 12 injected faults, 1 bad line" in text
    assert ("1 client ready, 1 not ready for Kafka 4.0 (KIP-896): unknown unknown "
            "(2 removed versions)") in text
    assert "run to run: error codes 2 new, 1 vanished, 0 changed" in text
    assert "baseline" not in text and "--fail-on" not in text  # neither was asked for
    assert len(lines) <= 12 and all(len(line) < 120 for line in lines)


def test_the_baseline_diff_is_counted() -> None:
    diff = {"baseline": ["old/"], "new_error_codes": [{"status": "new"}] * 2,
            "vanished_error_codes": [{"status": "vanished"}], "changed_error_codes": [],
            "changed_versions": [{"status": "changed"}] * 3}
    text = "\n".join(summary_lines(_summary(diff=diff)))
    assert ("baseline:   error codes 2 new, 1 vanished, 0 changed; API versions changed for "
            "3 client x API pairs") in text


def test_a_fail_on_failure_lists_each_finding() -> None:
    findings = [
        {"rule": "removed-in:4.0", "client": "unknown unknown",
         "detail": ["CreateTopics v1", "Metadata v0"]},
        {"rule": "bad-lines", "client": None, "detail": "file:/in/a.jsonl: 1 bad lines"},
    ]
    lines = summary_lines(_summary(fail_on=["removed-in:4.0", "bad-lines"],
                                   findings=findings, exit_code=3))
    assert lines[0].startswith("zkbroker report: exit 3 (findings under --fail-on)")
    assert "  --fail-on:  FAILED, 2 findings (removed-in:4.0: 1, bad-lines: 1)" in lines
    assert "    removed-in:4.0: unknown unknown: CreateTopics v1, Metadata v0" in lines
    assert "    bad-lines: file:/in/a.jsonl: 1 bad lines" in lines


def test_many_findings_are_cut_short_and_a_pass_is_said() -> None:
    findings = [{"rule": "changed-versions", "client": f"c {i}", "detail": "Metadata [1] -> [2]"}
                for i in range(25)]
    lines = summary_lines(_summary(fail_on=["changed-versions"], findings=findings))
    listed = [line for line in lines if line.startswith("    changed-versions: ")]
    assert len(listed) == MAX_FINDING_LINES
    assert lines[-1] == f"    ... and {25 - MAX_FINDING_LINES} more in summary.json"
    passed = summary_lines(_summary(fail_on=["bad-lines"]))
    assert passed[-1] == "  --fail-on:  passed, no findings (bad-lines: 0)"


def test_progress_lines_are_one_line_each_with_the_time_so_far() -> None:
    stream = io.StringIO()
    progress = StderrProgress("zkbroker report", stream)
    progress("starting Spark (local[*])")
    progress("writing the JVM class archive (once, ~30 s)")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"zkbroker report: \[ +\d+\.\ds\] starting Spark \(local\[\*\]\)",
                        lines[0])
    assert "\r" not in stream.getvalue()  # no progress bars
