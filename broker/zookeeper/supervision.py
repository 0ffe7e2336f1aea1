"""The embedded server's JVM as a child process: started under a watchdog that ends it when this
process dies (even by SIGKILL), and stopped with SIGTERM to its process group, SIGKILL after a
grace period.

Not here: what the JVM runs (`zkbroker.broker.zookeeper.jvm_launch`), waiting until it serves,
the data directory's lock (`zkbroker.broker.zookeeper.data_dir_lock`), Windows.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from zkbroker.broker.log import get_logger

log = get_logger(__name__)

#: How long the watchdog lets the JVM shut down after SIGTERM before it SIGKILLs it.
WATCHDOG_GRACE_S: Final = 10
STOP_GRACE_SECONDS = 10.0

# Run as `sh -c SCRIPT zookeeper-watchdog JAVA ARGS...` with the pipe's read end as stdin.
# The pipe moves to fd P and stdin becomes /dev/null; the subshell (which stays in the
# JVM's process group and so keeps the pid $$ from being reused while it lives) ignores
# the group's SIGTERM from `stop`, blocks until EOF, then signals $$, the JVM that the
# shell became with `exec`, until it is gone or a zombie (an init that does not reap
# orphans must not keep the watchdog, and the data dir lock it holds, for the whole
# grace). A pipe rather than PR_SET_PDEATHSIG, which fires when the forking *thread* exits
# (`astart` forks from a worker thread); it also covers this process being SIGKILLed.
# P is a digit (dash allows only one-digit fds in redirections) that is none of the fds
# handed down (`pass_fds`): `exec P<&0` would close such an fd in the shell, so that neither
# the watchdog nor the JVM would hold it. In a fresh process the data dir's lock is the
# first file opened, fd 3.


def _watchdog_pipe_fd(pass_fds: Sequence[int]) -> int:
    """The fd the watchdog's pipe moves to: the lowest one-digit fd above stderr that is
    not handed down."""
    for fd in range(3, 10):
        if fd not in pass_fds:
            return fd
    raise ValueError(f"no one-digit fd is left for the watchdog's pipe: {sorted(pass_fds)}")


def _watchdog_script(pipe_fd: int) -> str:
    """The watchdog's shell script with its pipe on `pipe_fd` (3 to 9)."""
    if not 3 <= pipe_fd <= 9:
        raise ValueError(f"the watchdog's pipe needs a one-digit fd above 2, not {pipe_fd}")
    p = pipe_fd
    return f"""exec {p}<&0 </dev/null
(
  trap '' TERM INT HUP
  while read -r _ <&{p}; do :; done
  kill -TERM $$ 2>/dev/null || exit 0
  n=0
  while kill -0 $$ 2>/dev/null && [ $n -lt {WATCHDOG_GRACE_S * 10} ]; do
    {{ read -r stat </proc/$$/stat; }} 2>/dev/null && case $stat in *") Z "*) exit 0 ;; esac
    sleep 0.1
    n=$((n + 1))
  done
  kill -KILL $$ 2>/dev/null
) &
exec "$@" {p}<&-
"""


# Write ends of the watchdogs' pipes held by this process. A child made by os.fork()
# (multiprocessing) would keep them open, and the JVMs alive, until it exits: it closes
# its copies at once.
_lifelines: set[int] = set()


def _close_lifelines_in_child() -> None:
    # Not logged: this runs in a fork's child before it does anything else, and a copy that
    # cannot be closed keeps nothing alive that the parent's own close does not end.
    for fd in list(_lifelines):
        with contextlib.suppress(OSError):
            os.close(fd)
    _lifelines.clear()


os.register_at_fork(after_in_child=_close_lifelines_in_child)


def spawn_with_watchdog(
    command: Sequence[str], *, out: int, cwd: Path, pass_fds: Sequence[int] = ()
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``command`` (the JVM) under the watchdog; return it and the pipe's write end,
    whose closing (by `close_lifeline` or by this process's death) stops the JVM."""
    read_end, write_end = os.pipe()  # both close-on-exec (PEP 446)
    try:
        # Own session/process group: a Ctrl-C in the terminal reaches the whole
        # foreground group, and ZooKeeper must not die before the brokers that use it
        # have shut down; stop() signals it explicitly.
        process = subprocess.Popen(
            [
                "/bin/sh",
                "-c",
                _watchdog_script(_watchdog_pipe_fd(pass_fds)),
                "zookeeper-watchdog",
                *command,
            ],
            stdin=read_end,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    _lifelines.add(write_end)
    return process, write_end


def close_lifeline(fd: int | None) -> None:
    """Close a watchdog's pipe (after the JVM was stopped: the watchdog then exits)."""
    if fd is None:
        return
    _lifelines.discard(fd)
    try:
        os.close(fd)
    except OSError as exc:  # EBADF: closed by someone else, a bug worth a line
        log.warning("zookeeper.lifeline_close_failed", fd=fd, error=repr(exc))


def _terminate(process: subprocess.Popen[bytes]) -> bool:
    """SIGTERM the process group, SIGKILL it after a grace period, reap. True if killed."""
    if process.poll() is not None:
        return False
    # start_new_session=True made the JVM a group leader, so its pid is the pgid.
    _signal_group(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_GRACE_SECONDS)
        return False
    except subprocess.TimeoutExpired:
        log.warning("zookeeper.kill_after_grace", pid=process.pid, grace_s=STOP_GRACE_SECONDS)
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()
        return True


def terminate_logged(
    process: subprocess.Popen[bytes], port: int | None, data_dir: Path | None
) -> bool:
    """`_terminate`, logging (``zookeeper.stop_failed``) what it raises before raising it:
    whoever stops several things may go on with the others and drop the exception
    (ClusterEngine.stop suppresses what `astop` raises)."""
    try:
        return _terminate(process)
    except Exception as exc:
        log.error(
            "zookeeper.stop_failed",
            pid=process.pid,
            port=port,
            data_dir=None if data_dir is None else str(data_dir),
            error=repr(exc),
        )
        raise


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    # ESRCH is no failure: the group ended between `poll` and the signal. Anything else
    # (EPERM) is raised, and `stop` logs it.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)
