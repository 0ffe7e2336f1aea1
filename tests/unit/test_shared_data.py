"""The shared data beside the repository (tests/shared_data.py): a run without it skips the tests
that need it with one line naming the missing folder; a CI run fails them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import shared_data

REPO = Path(__file__).resolve().parents[2]
# Two tests of the suite that read Kafka's message specs (the `kafka_message_specs` fixture).
NEEDING = ["tests/unit/test_releases.py", "-k", "shared_message_specs or controller_only"]


def _pytest(missing: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, shared_data.SHARED_DIR_ENV: str(missing)}
    env.pop("CI", None)
    env.pop("PYTEST_ADDOPTS", None)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider", *NEEDING],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env=env,
    )


def test_without_the_shared_data_its_tests_are_skipped_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-shared-here"
    result = _pytest(missing, ci=None)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[-1].startswith("2 skipped, ") or lines[-1].startswith("2 skipped in"), lines[-1]
    named = [line for line in lines if str(missing / "kafka-message-specs") in line]
    # The summary line, and `-ra`'s one line for both tests (raised from one place).
    summary = [line for line in named if line.startswith("2 tests skipped: ")]
    assert len(summary) == 1, result.stdout[-3000:]
    folded = [line for line in named if line.startswith("SKIPPED [2] ")]
    assert len(folded) == 1, result.stdout[-3000:]
    assert len(named) == 2, named


@pytest.mark.parametrize("ci", ["true", "1"])
def test_under_ci_the_tests_needing_the_shared_data_fail(tmp_path: Path, ci: str) -> None:
    missing = tmp_path / "no-shared-here"
    result = _pytest(missing, ci=ci)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.splitlines()[-1].startswith("2 failed"), result.stdout[-3000:]
    assert f"2 tests failed: shared test data missing: {missing / 'kafka-message-specs'}" in (
        result.stdout
    )
    assert "required under CI" in result.stdout


@pytest.mark.parametrize(
    ("value", "ci"),
    [("", False), ("0", False), ("false", False), ("False", False), ("1", True), ("true", True)],
)
def test_what_counts_as_ci(monkeypatch: pytest.MonkeyPatch, value: str, ci: bool) -> None:
    monkeypatch.setenv("CI", value)
    assert shared_data.under_ci() is ci


def test_the_folder_is_found_beside_the_repository_or_where_the_variable_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(shared_data.SHARED_DIR_ENV, raising=False)
    assert shared_data.kafka_message_specs() == REPO.parent / "shared" / "kafka-message-specs"
    monkeypatch.setenv(shared_data.SHARED_DIR_ENV, str(tmp_path))
    assert shared_data.kafka_message_specs() == tmp_path.resolve() / "kafka-message-specs"
    reason = shared_data.missing_reason()
    assert reason is not None and str(tmp_path.resolve() / "kafka-message-specs") in reason
    (tmp_path / "kafka-message-specs").mkdir()
    (tmp_path / "kafka-message-specs" / "MetadataRequest.json").write_text("{}")
    assert shared_data.missing_reason() is None
