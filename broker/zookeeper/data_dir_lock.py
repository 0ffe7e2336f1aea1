"""One server per ZooKeeper data directory: an exclusive `flock` on a file in it, held by this
process, the JVM and its watchdog while a server runs there, with this process's id recorded
beside it so that a second server is refused at once with who holds it.

Not here: temporary data directories (one per start, never shared), starting or stopping the
server (`zkbroker.broker.zookeeper.embedded`), Windows.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Final

from zkbroker.broker.zookeeper.errors import ZooKeeperDataDirInUseError

#: Held (flock) by whoever runs a server on a data dir: this process, the JVM, its watchdog.
DATA_DIR_LOCK_NAME: Final = ".zkbroker-zookeeper.lock"
#: How long `start` waits for a data dir lock whose recorded owner is gone: the JVM of a
#: killed process still shutting down (its watchdog SIGKILLs it after
#: `zkbroker.broker.zookeeper.supervision.WATCHDOG_GRACE_S`).
DATA_DIR_LOCK_WAIT_S: Final = 15.0


def lock_data_dir(data_dir: Path, deadline_s: float = DATA_DIR_LOCK_WAIT_S) -> int:
    """Take the data dir's lock (an fd to keep open while a server runs on it).

    Refused at once when the recorded owner (a process id) is alive; when it is gone, the
    lock is still held by its JVM shutting down, so this waits for it up to ``deadline_s``.

    Raises:
        ZooKeeperDataDirInUseError: the lock stayed taken.
    """
    path = data_dir / DATA_DIR_LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + deadline_s
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                owner = _recorded_owner(path)
                alive = owner is not None and owner != os.getpid() and _pid_alive(owner)
                if alive or time.monotonic() > deadline:
                    who = f"process {owner}" if alive else "a ZooKeeper still shutting down"
                    raise ZooKeeperDataDirInUseError(
                        f"the ZooKeeper data directory {data_dir} is in use by {who}: one "
                        f"server per directory (with --log-dir, one `zkbroker run` with an "
                        f"embedded ZooKeeper per log dir). Stop it, or join its cluster with "
                        f"--zookeeper HOST:PORT (the `zookeeper=` line it printed)."
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _recorded_owner(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="ascii").strip() or "x")
    except (OSError, ValueError):
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
