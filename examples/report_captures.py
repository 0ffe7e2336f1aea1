"""Example captures for `make report`: two sets of CI runs of the same suite, one against
`--kafka-version 2.8` and one against 3.9, written by zkbroker's own capture hook.

    python examples/report_captures.py DIR  # DIR/kafka-2.8/project=demo/run-*.jsonl, ...

Each run file gets a `<file>.meta.json` (release, commit, CI job, emulated Kafka version), and
one run of 3.9 ends with a line cut short, as a process killed mid-write leaves it. The
requests are synthetic (`zkbroker.broker.report.synthetic`: seeded, four client profiles, 1%
injected faults); record them from a real cluster with `zkbroker run --capture FILE.jsonl` instead.
Deliberately nothing else: `zkbroker report` does the analysis.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zkbroker.broker.report.synthetic import SyntheticConfig, write_runs


def main(folder: str) -> int:
    root = Path(folder)
    for release, seed in (("2.8", 1), ("3.9", 2)):
        runs = root / f"kafka-{release}" / "project=demo"
        paths = write_runs(str(runs), SyntheticConfig(lines=20_000, runs=5, seed=seed,
                                                      release=release))
        for i, path in enumerate(paths):
            meta = {"release": "0.1.0", "commit": f"c0ffee{i}", "ci_job": f"ci/{100 + i}",
                    "kafka_version": release}
            Path(path + ".meta.json").write_text(json.dumps(meta) + "\n", encoding="utf-8")
        if release == "3.9":
            with open(paths[-1], "a", encoding="utf-8") as f:
                f.write('{"time":"2026-01-05T23:59:59.000001Z","broker_id":0,"connec')
        print(f"wrote {len(paths)} runs to {runs}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "examples/captures"))
