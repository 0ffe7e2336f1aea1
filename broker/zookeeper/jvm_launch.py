"""Launching ZooKeeper's JVM once: its command line (`QuorumPeerMain` with small-heap, fast-start
options), its class-data archive (`zkbroker.broker.jvm.class_archive`: planned before, checked
and published after), the wait until it serves, and what a failed launch means (a taken port,
an archive the JVM died of, or a start error quoting its logs).

Not here: retrying a launch and the server's lifetime (`zkbroker.broker.zookeeper.embedded`),
the files it reads (`zkbroker.broker.zookeeper.config_files`), the watchdog and stopping it
(`zkbroker.broker.zookeeper.supervision`).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from zkbroker.broker.jvm import class_archive
from zkbroker.broker.jvm.class_archive import ArchivePlan
from zkbroker.broker.log import get_logger
from zkbroker.broker.zookeeper.config_files import LOOPBACK, ServerFiles, write_server_files
from zkbroker.broker.zookeeper.errors import ZooKeeperStartError
from zkbroker.broker.zookeeper.network import serves_data_dir
from zkbroker.broker.zookeeper.supervision import spawn_with_watchdog

log = get_logger(__name__)

DEFAULT_HEAP = "256m"
QUORUM_PEER_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
#: The label of the server's class-data archive (`zkbroker.broker.jvm.class_archive`).
CLASS_ARCHIVE_LABEL: Final = "zookeeper"
# How often a starting server is asked whether it serves: a refused connection costs
# microseconds, and a JVM with its class archive serves within a few hundred milliseconds.
READY_POLL_S = 0.005


class PortTaken(Exception):
    """The JVM exited because another process owns the port (another port may be tried)."""


class ArchiveFailed(Exception):
    """The JVM exited at start while given a class-data archive (a start without may work)."""


class ExitedEarly(ZooKeeperStartError):
    """The JVM exited before it served."""


class StartAborted(ZooKeeperStartError):
    """`stop()` was called while the server was starting."""


def build_java_command(
    *,
    java: str,
    classpath: str,
    config_file: str | os.PathLike[str],
    log4j_config: str | os.PathLike[str],
    logback_config: str | os.PathLike[str],
    heap: str = DEFAULT_HEAP,
    max_buffer_bytes: int | None = None,
    jaas_config: str | os.PathLike[str] | None = None,
    jvm_options: Sequence[str] = (),
) -> list[str]:
    """Return the argv that starts ZooKeeper with ``config_file`` (and, when given, a
    ``jute.maxbuffer`` other than ZooKeeper's 0xfffff, a JAAS file for SASL, and more JVM
    options such as the class-data archive's)."""
    # The server refuses (drops the connection of) any request packet larger than this.
    jute = [] if max_buffer_bytes is None else [f"-Djute.maxbuffer={max_buffer_bytes}"]
    jaas = (
        []
        if jaas_config is None
        else [f"-Djava.security.auth.login.config={Path(jaas_config).absolute()}"]
    )
    return [
        java,
        f"-Xmx{heap}",
        *jute,
        *jaas,
        # One short-lived server per test session (or several): fewer GC
        # threads and C1-only JIT start faster and use less memory.
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        # Otherwise a SIGKILLed JVM leaves /tmp/hsperfdata_<user>/<pid> behind.
        "-XX:-UsePerfData",
        *jvm_options,
        "-Djava.awt.headless=true",
        # Whichever SLF4J binding is on the classpath finds its own file, and
        # neither falls back to a console appender on our stdout.
        f"-Dlog4j.configuration={Path(log4j_config).absolute().as_uri()}",
        f"-Dlogback.configurationFile={Path(logback_config).absolute()}",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-cp",
        classpath,
        QUORUM_PEER_MAIN,
        os.fspath(config_file),
    ]


# -- the class-data archive ---------------------------------------------------------------


def plan_archive(
    setting: bool | str | os.PathLike[str], java: str, classpath: str
) -> ArchivePlan | None:
    """The archive a JVM of `java` and `classpath` maps or writes: in the default folder
    (`setting` True), in the folder given, or none (False, or no archive possible)."""
    if setting is False:
        return None
    folder = class_archive.default_folder() if setting is True else os.fspath(setting)
    try:
        return class_archive.plan(
            folder,
            CLASS_ARCHIVE_LABEL,
            class_archive.file_stamps(classpath.split(os.pathsep)),
            java=java,
            event="zookeeper.class_archive",
            quiet=True,
            # Checked as mapped (CRCs): a damaged archive is ignored, not trusted.
            verify=True,
        )
    except Exception as exc:  # only ever a shortcut: never a reason not to start
        log.debug("zookeeper.class_archive.unavailable", error=repr(exc))
        return None


def drop_archive(archive: ArchivePlan, reason: str) -> None:
    """Give up `archive`: an existing one is discarded, one being written is not kept."""
    if archive.writing is None:
        class_archive.discard(archive, reason)
    else:
        class_archive.publish(archive, False)


def archive_ignored(archive: ArchivePlan, pid: int) -> bool:
    """Whether the JVM `pid` ignored the existing `archive` it was given (another build, a jar
    changed since, a CRC that fails): then it is dropped, so that the next start writes a new
    one."""
    return archive.writing is None and class_archive.mapped_by(pid, archive) is False


def finish_archive(archive: ArchivePlan, returncode: int | None) -> None:
    """After the JVM exited (`returncode`; None: killed, or never serving): keep the archive it
    wrote as it exited, if it exited as asked."""
    if archive.writing is not None:
        # SIGTERM makes the JVM run its shutdown hooks and exit with 128 + 15.
        ok = returncode in (0, 128 + signal.SIGTERM)
        class_archive.publish(archive, ok)


# -- one launch ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Launch:
    """One start of the JVM: its command, its files, and the sizes its two logs had before it
    (a failure quotes only this start's lines)."""

    command: list[str]
    files: ServerFiles
    log_offset: int
    out_offset: int


def prepare_launch(
    java: str,
    classpath: str,
    data_dir: Path,
    port: int,
    *,
    heap: str,
    max_buffer_bytes: int | None,
    sasl_users: Mapping[str, str] | None,
    archive: ArchivePlan | None,
) -> Launch:
    """Write the server's files for `port` and build the command that starts it."""
    files = write_server_files(data_dir, port, sasl_users)
    command = build_java_command(
        java=java,
        classpath=classpath,
        config_file=files.config,
        log4j_config=files.log4j_config,
        logback_config=files.logback_config,
        heap=heap,
        max_buffer_bytes=max_buffer_bytes,
        jaas_config=files.jaas_config,
        jvm_options=archive.java_args if archive is not None else (),
    )
    return Launch(command, files, _file_size(files.log_file), _file_size(files.out_file))


def spawn(
    launch: Launch, data_dir: Path, lock_fd: int | None
) -> tuple[subprocess.Popen[bytes], int]:
    """Start the JVM of `launch` under its watchdog; the process and the watchdog's pipe."""
    with launch.files.out_file.open("ab") as out:
        # The JVM and its watchdog inherit the data dir's lock: it is held until they
        # are gone, even when this process is killed first.
        return spawn_with_watchdog(
            launch.command,
            out=out.fileno(),
            cwd=data_dir,
            pass_fds=() if lock_fd is None else (lock_fd,),
        )


def wait_until_serving(
    process: subprocess.Popen[bytes],
    port: int,
    data_dir: Path,
    started_at: float,
    timeout: float,
    abort: threading.Event,
) -> None:
    """Return once the JVM serves `data_dir` on `port`.

    Raises:
        ExitedEarly: the JVM exited first.
        ZooKeeperStartError: it did not serve within `timeout` seconds of `started_at`.
        StartAborted: `abort` was set meanwhile.
    """
    deadline = started_at + timeout
    while True:
        returncode = process.poll()
        if returncode is not None:
            raise ExitedEarly(
                f"ZooKeeper's JVM (pid {process.pid}) exited with code {returncode} "
                f"before serving on {LOOPBACK}:{port}"
            )
        if serves_data_dir(LOOPBACK, port, data_dir):
            return
        if time.monotonic() > deadline:
            raise ZooKeeperStartError(
                f"ZooKeeper (pid {process.pid}) did not serve on {LOOPBACK}:{port} "
                f"within {timeout:g} s"
            )
        # A stop() meanwhile ends the wait at once (`start_soon` nobody waited for).
        if abort.wait(READY_POLL_S):
            raise StartAborted("stopped while starting")


def launch_failure(
    exc: BaseException, launch: Launch, port: int, *, may_retry: bool, with_archive: bool
) -> BaseException | None:
    """What a launch that raised `exc` while starting (its JVM ended since) raises instead:
    `PortTaken` when another port may be tried, `ArchiveFailed` when the JVM died with its
    archive, a `ZooKeeperStartError` quoting this start's log lines; None: `exc` itself."""
    if isinstance(exc, StartAborted):
        return None
    log_text = _read_from(launch.files.log_file, launch.log_offset)
    out_text = _read_from(launch.files.out_file, launch.out_offset)
    if may_retry and isinstance(exc, ZooKeeperStartError) and _port_was_taken(log_text + out_text):
        return PortTaken()
    if isinstance(exc, ExitedEarly) and with_archive:
        return ArchiveFailed()
    if not isinstance(exc, ZooKeeperStartError):
        return None
    log.error("zookeeper.start_failed", port=port, reason=str(exc))
    log_name, out_name = launch.files.log_file.name, launch.files.out_file.name
    return ZooKeeperStartError(
        f"{exc}\ncommand: {shlex.join(launch.command)}\n"
        f"--- last lines of {log_name} ---\n{_tail(log_text)}\n"
        f"--- last lines of {out_name} (JVM stdout/stderr) ---\n{_tail(out_text)}"
    )


def _port_was_taken(log_text: str) -> bool:
    return "Address already in use" in log_text


def _read_from(path: Path, offset: int) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _tail(text: str, max_lines: int = 40) -> str:
    lines = text.splitlines()[-max_lines:]
    return "\n".join(lines) if lines else "(empty)"


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
