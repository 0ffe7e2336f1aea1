"""The embedded ZooKeeper's JVM ends with the process that started it, even one killed with
SIGKILL (a CI time-out kills pytest that way), and a kept data dir serves one server at a
time.

A child Python process starts `EmbeddedZooKeeper` (from the main thread, or from a thread
that has exited before the kill: the trap of ``PR_SET_PDEATHSIG``) and is killed with -9.
Being a fresh process, the child opens the data dir's lock as its first file, fd 3.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.log_events import capture_events
from zkbroker.broker.zookeeper.data_dir_lock import DATA_DIR_LOCK_NAME
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper
from zkbroker.broker.zookeeper.errors import ZooKeeperDataDirInUseError

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


def _fds_on(pid: int, path: Path) -> list[int]:
    """The fds of process `pid` open on `path`."""
    fds = []
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # an fd closed meanwhile
            if os.readlink(entry) == str(path):
                fds.append(int(entry.name))
    return sorted(fds)


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        if int(stat.rpartition(")")[2].split()[1]) == pid:
            found.append(int(entry.name))
    return found


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


def test_the_jvm_and_its_watchdog_hold_the_lock_when_it_is_fd_3(tmp_path: Path) -> None:
    # The watchdog's script moved its pipe to fd 3 with `exec 3<&0`, which closed the lock
    # that a fresh process had opened as fd 3: neither the JVM nor the watchdog held it, and
    # a second server could start on the data dir of a killed owner whose JVM still ran.
    data_dir = tmp_path / "zookeeper"
    lock = data_dir.resolve() / DATA_DIR_LOCK_NAME
    with _child("main", data_dir) as (child, jvm):
        assert _fds_on(child.pid, lock) == [3], "the case under test: the lock is fd 3"
        # The shell forked the watchdog and then became the JVM (`exec`).
        [watchdog] = _children(jvm)
        assert _fds_on(jvm, lock), f"the JVM {jvm} does not hold {lock}"
        assert _fds_on(watchdog, lock), f"the watchdog {watchdog} does not hold {lock}"
        # The owner dies while its JVM cannot exit yet (stopped, as a busy JVM is slow to):
        # the lock stays taken until the JVM is gone.
        os.kill(jvm, signal.SIGSTOP)
        try:
            child.send_signal(signal.SIGKILL)
            child.wait(10)
            fd = os.open(lock, os.O_RDWR)
            try:
                with pytest.raises(BlockingIOError):
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(fd)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(jvm, signal.SIGCONT)
        # Continued, the JVM takes the watchdog's SIGTERM; the next server waits for it.
        with EmbeddedZooKeeper(data_dir=data_dir) as zk:
            assert not _alive(jvm)
            assert zk.running


def test_a_stop_that_cannot_signal_the_jvm_is_logged_and_still_ends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process this one may not signal (EPERM; another user's, say). `ClusterEngine.stop`
    # suppresses what `astop` raises, so without the event nothing would tell.
    data_dir = tmp_path / "zookeeper"
    zk = EmbeddedZooKeeper(data_dir=data_dir).start()
    jvm = zk.pid
    assert jvm is not None

    def refuse(pgid: int, signum: int) -> None:
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))

    try:
        with monkeypatch.context() as patch, capture_events() as events:
            patch.setattr(os, "killpg", refuse)
            with pytest.raises(PermissionError):
                zk.stop()
        [failed] = [e for e in events if e["event"] == "zookeeper.stop_failed"]
        assert failed["log_level"] == "error"
        assert failed["pid"] == jvm
        assert failed["data_dir"] == str(data_dir.resolve())
        assert failed["error"].startswith("PermissionError(")
        assert not any(e["event"] == "zookeeper.stopped" for e in events)
        # Stopped all the same: the pipe closed, the watchdog ends the JVM, the lock is
        # released (the next server on the data dir waits for the JVM), stop is a no-op now.
        assert not zk.running
        zk.stop()
        with EmbeddedZooKeeper(data_dir=data_dir) as again:
            assert not _alive(jvm)
            assert again.running
    finally:
        if _alive(jvm):
            os.kill(jvm, signal.SIGKILL)
