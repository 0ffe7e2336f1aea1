"""The scripts in examples/ that the README and docs point to run as a reader runs them: each in
its own process, `python examples/<name>.py`, starting its own cluster, ending with status 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("script", ["join_as_broker.py", "zookeeper_registry_group.py"])
def test_example_runs_to_the_end(script: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip(), "an example says what it did"
