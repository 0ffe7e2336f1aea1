"""scripts/ci/pytest-with-cores.sh, what `make test` runs pytest with: a command that dies by a
signal gets every thread's backtrace from its core file (gdb), and its exit status is kept.

Real crashes: a Python that sends itself SIGSEGV. Needs gdb (`make test` installs it; skipped
without it outside CI) and core files written as files (a core_pattern of `|program` skips).
"""

from __future__ import annotations

import getpass
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ci" / "pytest-with-cores.sh"
SEGV = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
CORE_PATTERN = Path("/proc/sys/kernel/core_pattern")


def _run(
    *command: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *command],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _needs_core_files() -> str:
    """The kernel's core pattern, when cores are files gdb can read here."""
    if shutil.which("gdb") is None:
        if os.environ.get("CI"):
            pytest.fail("gdb is missing: `make test` installs it (TEST_PACKAGES)")
        pytest.skip("gdb is not installed (`make test` installs it)")
    pattern = CORE_PATTERN.read_text().strip() if CORE_PATTERN.exists() else "core"
    if pattern.startswith("|"):
        pytest.skip(f"core files go to a program on this machine: {pattern}")
    if resource.getrlimit(resource.RLIMIT_CORE)[1] == 0:
        pytest.skip("the hard limit of core files is 0")
    return pattern


def _cores_read(output: str) -> list[Path]:
    return [Path(p) for p in re.findall(r"backtraces of every thread in (\S+) \(read", output)]


def test_a_segfault_prints_every_threads_backtrace_and_keeps_the_status(tmp_path: Path) -> None:
    _needs_core_files()
    result = _run(sys.executable, "-c", SEGV, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 128 + signal.SIGSEGV == 139, output
    assert "died by signal SEGV (exit status 139)" in output
    # PYTHONFAULTHANDLER=1: the Python stack first, from the process itself.
    assert "Fatal Python error: Segmentation fault" in output
    # gdb's `thread apply all bt`, from the core.
    assert "Program terminated with signal SIGSEGV" in output
    assert re.search(r"^Thread 1 \(.*LWP \d+\)\):$", output, re.M), output
    assert re.search(r"^#0 ", output, re.M)
    [core] = _cores_read(output)
    assert core.is_file()  # kept
    core.unlink()


def test_the_interpreter_of_a_script_command_reads_the_core(tmp_path: Path) -> None:
    # `make test` passes .venv/bin/pytest, a script: gdb needs the Python its #! names.
    _needs_core_files()
    command = tmp_path / "crash"
    command.write_text(f"#!{sys.executable}\n{SEGV}\n")
    command.chmod(0o755)
    result = _run(str(command), cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 139, output
    assert f"(read with {os.path.realpath(sys.executable)})" in output
    assert re.search(r"^Thread 1 \(", output, re.M), output
    for core in _cores_read(output):
        core.unlink()


def test_a_core_in_a_pytest_temporary_dir_is_found(tmp_path: Path) -> None:
    # A test that chdir'd into its tmp_path crashes there: the core is written there.
    pattern = _needs_core_files()
    if "/" in pattern:
        pytest.skip(f"cores go to a dir of their own here: {pattern}")
    temp = tmp_path / "tmp"
    crash_dir = temp / f"pytest-of-{getpass.getuser()}" / "pytest-7" / "test_crash0"
    crash_dir.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    crash = f"import os; os.chdir({str(crash_dir)!r}); {SEGV}"
    result = _run(
        sys.executable, "-c", crash, cwd=tmp_path / "elsewhere", env={"TMPDIR": str(temp)}
    )
    output = result.stdout + result.stderr
    assert result.returncode == 139, output
    [core] = _cores_read(output)
    assert core.parent == crash_dir
    assert "Program terminated with signal SIGSEGV" in output


def test_other_exits_pass_through(tmp_path: Path) -> None:
    for code in (0, 1, 3):
        result = _run(sys.executable, "-c", f"raise SystemExit({code})", cwd=tmp_path)
        assert result.returncode == code
        assert "pytest-with-cores" not in result.stderr


def test_a_signal_without_a_core_is_said_so(tmp_path: Path) -> None:
    pattern_file = tmp_path / "core_pattern"
    pattern_file.write_text("core\n")
    kill = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    result = _run(
        sys.executable, "-c", kill, cwd=tmp_path, env={"CORE_PATTERN_FILE": str(pattern_file)}
    )
    assert result.returncode == 137
    assert "died by signal KILL (exit status 137)" in result.stderr
    assert "no core file newer than this run" in result.stderr
    assert "signal KILL does not dump core" in result.stderr


def test_a_pattern_handing_cores_to_a_program_is_said_so(tmp_path: Path) -> None:
    pattern_file = tmp_path / "core_pattern"
    pattern_file.write_text("|/usr/lib/systemd/systemd-coredump %P %u %g %s %t %c %h\n")
    result = _run(
        sys.executable, "-c", SEGV, cwd=tmp_path, env={"CORE_PATTERN_FILE": str(pattern_file)}
    )
    assert result.returncode == 139
    assert "core_pattern hands cores to a program: |/usr/lib/systemd/systemd-coredump" in (
        result.stderr
    )
    assert "coredumpctl gdb PID" in result.stderr
    assert "Thread 1 (" not in result.stdout + result.stderr
