"""The embedded ZooKeeper's JVM ends with the process that started it, even one killed with
SIGKILL (a CI time-out kills pytest that way), and a kept data dir serves one server at a
time.

A child Python process starts `EmbeddedZooKeeper` (from the main thread, or from a thread
that has exited before the kill: the trap of ``PR_SET_PDEATHSIG``) and is killed with -9.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper, ZooKeeperDataDirInUseError

CHILD = textwrap.dedent(
    """
    import sys, threading, time
    from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper

    data_dir = sys.argv[2] or None
    zk = EmbeddedZooKeeper(data_dir=data_dir)
    if sys.argv[1] == "thread":
        worker = threading.Thread(target=zk.start)
        worker.start()
        worker.join()
    else:
        zk.start()
    print(zk.pid, flush=True)
    time.sleep(600)
    """
)


def _alive(pid: int) -> bool:
    """Running, not a zombie left for an init that does not reap."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _start_child(mode: str, data_dir: Path | None) -> tuple[subprocess.Popen[str], int]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, mode, str(data_dir or "")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line.strip():
        child.kill()
        child.wait()
        pytest.fail("the child did not start ZooKeeper")
    return child, int(line)


def _wait_gone(pid: int, timeout: float = 10.0) -> float:
    started = time.monotonic()
    while _alive(pid):
        assert time.monotonic() - started < timeout, f"the JVM {pid} outlived its parent"
        time.sleep(0.05)
    return time.monotonic() - started


@contextlib.contextmanager
def _child(mode: str, data_dir: Path | None) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """`_start_child`, with the child and its JVM gone after the block whatever happened."""
    child, jvm = _start_child(mode, data_dir)
    try:
        yield child, jvm
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if _alive(jvm):
            os.kill(jvm, signal.SIGKILL)


@pytest.mark.parametrize("mode", ["main", "thread"])
def test_jvm_ends_when_its_parent_is_killed(mode: str) -> None:
    with _child(mode, None) as (child, jvm):
        assert _alive(jvm)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        assert _wait_gone(jvm) < 5


def test_kept_data_dir_is_one_servers_at_a_time(tmp_path: Path) -> None:
    data_dir = tmp_path / "zookeeper"
    with _child("main", data_dir) as (child, jvm):
        started = time.monotonic()
        with pytest.raises(ZooKeeperDataDirInUseError, match=f"in use by process {child.pid}"):
            EmbeddedZooKeeper(data_dir=data_dir).start()
        assert time.monotonic() - started < 5  # refused at once, not after a wait
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        # The lock outlives the killed owner until its JVM is gone; then the same data dir
        # serves again.
        with EmbeddedZooKeeper(data_dir=data_dir) as zk:
            assert not _alive(jvm)
            assert zk.running
        assert (data_dir / "version-2").is_dir()  # a given data dir is kept
