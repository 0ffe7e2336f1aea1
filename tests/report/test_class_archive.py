"""The class-data archive of the report's JVM: where it is kept, which JVM it is offered to,
and how a run writes it (a real process stands in for the JVM: it writes its file when its
stdin closes, as Spark's gateway does). A real JVM writing and mapping one is in test_cli."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from zkbroker.broker.jvm import class_archive as jvm_archive
from zkbroker.broker.jvm.class_archive import ArchivePlan
from zkbroker.broker.report import class_archive

pytest.importorskip("pyspark")


# What a dynamic archive starts with (its magic; a header version whose layout is not checked).
_ARCHIVE = jvm_archive.DYNAMIC_MAGIC.to_bytes(4, "little") + b"a whole archive"
_ARCHIVE_PRINTF = "".join(f"\\{b:03o}" for b in _ARCHIVE)


def _jdk(root: Path, version: str) -> Path:
    """A folder shaped as a JDK: bin/java and a release file."""
    (root / "bin").mkdir(parents=True)
    java = root / "bin" / "java"
    java.write_text("#!/bin/sh\nexit 0\n")
    java.chmod(0o755)
    (root / "release").write_text(f'IMPLEMENTOR="Test"\nJAVA_VERSION="{version}"\n')
    return root


def test_the_folder_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(jvm_archive.ENV, "off")
    assert jvm_archive.default_folder() is None
    monkeypatch.setenv(jvm_archive.ENV, str(tmp_path / "kept"))
    assert jvm_archive.default_folder() == str(tmp_path / "kept")
    monkeypatch.delenv(jvm_archive.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert jvm_archive.default_folder() == str(tmp_path / "cache" / "zkbroker")


@pytest.mark.parametrize(
    ("version", "major"), [("17.0.15", 17), ("1.8.0_392", 8), ("25", 25), ("junk", None)]
)
def test_java_release_is_read_from_the_release_file(
    tmp_path: Path, version: str, major: int | None
) -> None:
    assert jvm_archive.java_major(_jdk(tmp_path / "jdk", version)) == major


def test_a_jdk_before_13_gets_no_archive(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(_jdk(tmp_path / "jdk", "11.0.2")))
    assert class_archive.plan(str(tmp_path / "kept")) is None
    assert class_archive.plan(None) is None


def test_a_run_writes_the_archive_then_later_runs_map_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    jdk = _jdk(tmp_path / "jdk", "17.0.15")
    monkeypatch.setenv("JAVA_HOME", str(jdk))
    first = class_archive.plan(str(tmp_path / "kept"))
    assert first is not None and first.writing is not None
    assert first.final.parent == tmp_path / "kept"
    assert f"-XX:ArchiveClassesAtExit={first.writing}" in first.java_options
    assert str(os.getpid()) in first.writing.name  # concurrent first runs never share a file
    first.final.write_bytes(_ARCHIVE)
    later = class_archive.plan(str(tmp_path / "kept"))
    assert later == ArchivePlan(first.final, None)
    assert f"-XX:SharedArchiveFile={first.final}" in later.java_options
    # Another JVM build: another archive.
    (jdk / "release").write_text('JAVA_VERSION="17.0.16"\n')
    assert class_archive.plan(str(tmp_path / "kept")).final != first.final  # type: ignore[union-attr]


def _jvm_like(path: Path) -> subprocess.Popen[bytes]:
    """Writes `path` when its stdin closes, then exits (what the JVM does with the archive)."""
    return subprocess.Popen(
        ["sh", "-c", 'cat >/dev/null; printf "$1" > "$0"', str(path), _ARCHIVE_PRINTF],
        stdin=subprocess.PIPE,
    )


@pytest.mark.parametrize("ok", [True, False])
def test_the_archive_is_kept_only_when_the_run_succeeded(tmp_path: Path, ok: bool) -> None:
    final = tmp_path / "a.jsa"
    plan = ArchivePlan(final, tmp_path / "a.jsa.1.partial")
    assert plan.writing is not None
    process = _jvm_like(plan.writing)
    jvm_archive.finish(plan, process, ok)
    assert process.returncode == 0
    assert final.exists() is ok
    assert not plan.writing.exists()
