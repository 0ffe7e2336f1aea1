"""The report JVM's options: the directives file is one a real JVM loads (a malformed one
would stop it from starting), it names what it should, it is written once per version and
repaired when changed, and a session zkbroker starts runs with every option; C2 kept off
for a block of a real JVM's work, and given back after."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from zkbroker.broker.report import jvm_tuning


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        pytest.skip("java not found: the report needs a JRE (make test installs one)")
    return java


def test_a_real_jvm_starts_with_the_directives_and_installs_them(tmp_path: Path) -> None:
    path = jvm_tuning.directives_file(str(tmp_path))
    assert path is not None
    done = subprocess.run(
        [_java(), "-XX:+UnlockDiagnosticVMOptions", f"-XX:CompilerDirectivesFile={path}",
         "-XX:+CompilerDirectivesPrint", "-version"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert "1 compiler directives added" in output
    printed = output.split("Directive:", 2)[1]  # the first: ours, before HotSpot's default
    for pattern in jvm_tuning.C2_EXCLUDED:
        assert pattern in printed
    c2 = printed.split("c2 directives:", 1)[1]
    assert "Exclude:true" in c2.split("\n\n", 1)[0]


def test_the_per_row_code_is_left_to_c2() -> None:
    # What every captured line passes through must never lose the optimising compiler.
    for pattern in jvm_tuning.C2_EXCLUDED:
        for hot in ("com/fasterxml/jackson", "org/apache/parquet", "org/apache/spark/unsafe",
                    "org/apache/spark/sql/catalyst/json", "org/apache/hadoop",
                    "org/apache/spark/sql/catalyst/expressions/codegen/UnsafeRowWriter",
                    "org/apache/spark/sql/catalyst/expressions/GeneratedClass", "java/lang/"):
            prefix = pattern.split("*", 1)[0]
            assert not hot.startswith(prefix), (pattern, hot)


def test_the_file_is_written_once_per_text_and_repaired(tmp_path: Path) -> None:
    first = jvm_tuning.directives_file(str(tmp_path))
    assert first is not None and first.read_text() == jvm_tuning.directives_text()
    assert first.parent == tmp_path and first.name.startswith("jit-")
    stamp = first.stat().st_mtime_ns
    assert jvm_tuning.directives_file(str(tmp_path)) == first
    assert first.stat().st_mtime_ns == stamp  # found, not rewritten
    first.write_text("[]\n")  # changed by hand, or half of a file from a crash
    assert jvm_tuning.directives_file(str(tmp_path)) == first
    assert first.read_text() == jvm_tuning.directives_text()
    assert [p.name for p in tmp_path.iterdir()] == [first.name]


def test_without_a_folder_the_jvm_runs_without_directives(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    options = jvm_tuning.java_options(str(blocked / "cache"))
    assert options == ["-XX:+UseParallelGC", f"-XX:MetaspaceSize={jvm_tuning.METASPACE_SIZE}",
                       "-XX:+DisplayVMOutputToStderr"]


def test_the_jvms_own_messages_go_to_stderr(tmp_path: Path) -> None:
    # stdout carries the command's summary: "1 compiler directives added" must not land there.
    done = subprocess.run(
        [_java(), *jvm_tuning.java_options(str(tmp_path)), "-version"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "1 compiler directives added" in done.stderr


def test_the_default_folder_is_zkbrokers_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = jvm_tuning.directives_file()
    assert path is not None and path.parent == tmp_path / "zkbroker"


def _directives(spark: Any) -> str:
    return jvm_tuning.diagnostic_command(spark, "compilerDirectivesPrint")


@pytest.mark.spark
def test_c2_is_kept_off_inside_the_block_and_given_back_after(spark: Any, tmp_path: Path) -> None:
    before = _directives(spark)
    with jvm_tuning.c2_paused(spark, str(tmp_path)) as paused:
        assert paused
        top = _directives(spark).split("Directive:", 2)[1]  # the newest first
        assert "matching: *.*" in top
        c1, c2 = top.split("c1 directives:", 1)[1].split("c2 directives:", 1)
        assert "Exclude:true" in c2 and "Enable:true" in c2
        assert "Enable:false" in c1  # no C1 options: C1 goes on as before
    assert _directives(spark) == before
    with pytest.raises(RuntimeError), jvm_tuning.c2_paused(spark, str(tmp_path)):
        raise RuntimeError("a failing table")
    assert _directives(spark) == before


@pytest.mark.spark
def test_without_a_folder_c2_is_left_alone(spark: Any, tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    before = _directives(spark)
    with jvm_tuning.c2_paused(spark, str(blocked / "cache")) as paused:
        assert not paused
        assert _directives(spark) == before
