"""Run a throw-away, single-node ZooKeeper server as a child JVM process: `EmbeddedZooKeeper`.

For tests, demos and `zkbroker` started without `--zookeeper`: finds ZooKeeper and `java`
(`zkbroker.broker.zookeeper.discovery`), writes its files (`config_files`), starts
`QuorumPeerMain` on a free loopback port (`jvm_launch`), retrying another port when the one
picked was taken meanwhile, waits until it serves, and stops it (also at exit). A watchdog ends
the JVM when this process dies, even by SIGKILL (`supervision`); a given `data_dir` is kept
across stops and locked (`data_dir_lock`: `ZooKeeperDataDirInUseError` for a second server).
Only the four-letter words `ruok`, `srvr` and `conf` are allowed (docs/kafka-behaviour.md §19).

Not here: ensembles, TLS, Kerberos (SASL only as DIGEST-MD5 for `sasl_users`), durability
against power loss (`forceSync=no`), installing ZooKeeper or Java (`ZooKeeperNotFoundError`
says how), the client protocol (kazoo, `zkbroker.zk_layout.store.client`), Windows.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Self

from zkbroker.broker.asyncutil import AsyncStartStop, StartStop
from zkbroker.broker.jvm.class_archive import ArchivePlan
from zkbroker.broker.log import get_logger
from zkbroker.broker.zookeeper.config_files import LOG_FILE_NAME, LOOPBACK
from zkbroker.broker.zookeeper.data_dir_lock import lock_data_dir
from zkbroker.broker.zookeeper.discovery import DEFAULT_SYSTEM_JAR_DIRS, resolve_runtime
from zkbroker.broker.zookeeper.errors import ZooKeeperError
from zkbroker.broker.zookeeper.jvm_launch import (
    DEFAULT_HEAP,
    ArchiveFailed,
    PortTaken,
    StartAborted,
    archive_ignored,
    drop_archive,
    finish_archive,
    launch_failure,
    plan_archive,
    prepare_launch,
    spawn,
    wait_until_serving,
)
from zkbroker.broker.zookeeper.network import pick_free_port
from zkbroker.broker.zookeeper.supervision import close_lifeline, terminate_logged

log = get_logger(__name__)

DEFAULT_START_TIMEOUT = 30.0

# Strong references on purpose: a running instance the caller dropped must
# still be stopped at exit, or its JVM outlives the test run.
_running: set[EmbeddedZooKeeper] = set()
_running_lock = threading.Lock()


def _stop_all_at_exit() -> None:
    with _running_lock:
        instances = list(_running)
    for instance in instances:
        # A forked child inherits the set; it must not stop its parent's servers.
        if instance._owner_pid != os.getpid():
            continue
        try:
            instance.stop()
        except Exception as exc:  # keep stopping the others
            log.warning("zookeeper.stop_at_exit_failed", pid=instance.pid, error=repr(exc))


atexit.register(_stop_all_at_exit)


class EmbeddedZooKeeper(StartStop, AsyncStartStop):
    """A standalone ZooKeeper in a child JVM, listening on 127.0.0.1.

    ``port=None`` picks a free port; ``data_dir=None`` makes a temporary
    directory that :meth:`stop` removes (a given directory is kept, so a
    server can be restarted on the same data). ``classpath`` and ``java``
    skip discovery; ``system_jar_dirs`` is where Debian-style jars are looked
    for when ``$ZOOKEEPER_HOME`` does not name a distribution.
    ``class_archive``: the JVM's class-data archive (`zkbroker.broker.jvm.class_archive`) in
    the default folder (True), in the folder given, or none (False).

    Usable as a (sync or async) context manager. Any instance still running
    at interpreter exit is stopped by an atexit hook. `start_soon` starts it in the
    background; `stop` during a start ends the start.
    """

    def __init__(
        self,
        port: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        classpath: str | None = None,
        java: str | None = None,
        system_jar_dirs: Sequence[str | os.PathLike[str]] = DEFAULT_SYSTEM_JAR_DIRS,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        heap: str = DEFAULT_HEAP,
        max_buffer_bytes: int | None = None,
        sasl_users: Mapping[str, str] | None = None,
        class_archive: bool | str | os.PathLike[str] = True,
    ) -> None:
        self._requested_port = port
        self._class_archive = class_archive
        # The archive the running (or starting) JVM maps or writes.
        self._archive: ArchivePlan | None = None
        self._max_buffer_bytes = max_buffer_bytes
        # SASL DIGEST-MD5 users (zkbroker's --zookeeper-auth sasl); None: no SASL.
        self._sasl_users = dict(sasl_users) if sasl_users else None
        # resolve(): ZooKeeper reports the path it was given, and the
        # ownership check in serves_data_dir compares paths literally.
        self._requested_data_dir = Path(data_dir).resolve() if data_dir is not None else None
        self._classpath = classpath
        self._java = java
        self._system_jar_dirs = tuple(system_jar_dirs)
        self._start_timeout = start_timeout
        self._heap = heap
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._port: int | None = port
        self._data_dir: Path | None = self._requested_data_dir
        self._owns_data_dir = False
        self._owner_pid = os.getpid()
        # The watchdog pipe's write end (while the JVM runs) and a given data dir's lock.
        self._lifeline: int | None = None
        self._lock_fd: int | None = None
        # A start_soon() not yet waited for by start()/astart(), and stop()'s request to end
        # a start in progress (set before it waits for the start's lock).
        self._starting: concurrent.futures.Future[Self] | None = None
        self._abort = threading.Event()

    def _options(self) -> tuple[object, ...]:
        return (
            self._requested_port,
            self._requested_data_dir,
            self._classpath,
            self._java,
            self._system_jar_dirs,
            self._start_timeout,
            self._heap,
            self._max_buffer_bytes,
            self._sasl_users,
            self._class_archive,
        )

    def configured_as(self, **options: object) -> bool:
        """Whether this instance was made with these constructor options (the defaults for
        the rest): whether a server started early (`start_soon`) is the one a caller wants."""
        return self._options() == EmbeddedZooKeeper(**options)._options()  # type: ignore[arg-type]

    # -- properties ---------------------------------------------------------

    @property
    def host(self) -> str:
        return LOOPBACK

    @property
    def port(self) -> int:
        if self._port is None:
            raise ZooKeeperError("the port is chosen by start(); this ZooKeeper is not started")
        return self._port

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def data_dir(self) -> Path:
        if self._data_dir is None:
            raise ZooKeeperError("the data directory is made by start(); not started")
        return self._data_dir

    @property
    def log_file(self) -> Path:
        """ZooKeeper's own log (its JVM's stdout/stderr go to ``zookeeper.out`` beside it)."""
        return self.data_dir / LOG_FILE_NAME

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def __repr__(self) -> str:
        port = self._port if self._port is not None else "?"
        return f"EmbeddedZooKeeper({self.host}:{port}, pid={self.pid}, data_dir={self._data_dir})"

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> Self:
        """Start ZooKeeper and block until it serves requests (after `start_soon`: wait for
        that start).

        Raises:
            ZooKeeperNotFoundError: Java or ZooKeeper is not installed.
            ZooKeeperStartError: the JVM exited or did not answer within ``start_timeout``,
                or `stop` was called meanwhile.
        """
        starting, self._starting = self._starting, None
        if starting is not None:
            return starting.result()
        self._abort.clear()
        return self._start()

    def start_soon(self) -> None:
        """Begin `start` in a background thread and return at once: the caller prepares the
        rest while the JVM comes up, then `start()`/`astart()` waits for it (raising what it
        raised). If nothing waits, `stop` (or the exit hook) ends it."""
        if self._starting is not None:
            raise ZooKeeperError(f"already starting: {self!r}")
        future: concurrent.futures.Future[Self] = concurrent.futures.Future()

        def run() -> None:
            try:
                # mypy sees EmbeddedZooKeeper, not Self, inside this closure.
                future.set_result(self._start())  # type: ignore[arg-type]
            except BaseException as exc:
                future.set_exception(exc)

        self._starting = future
        self._abort.clear()
        # Known to the exit hook from now on: a start nobody waits for is ended there.
        with _running_lock:
            _running.add(self)
        threading.Thread(target=run, name="zookeeper-start", daemon=True).start()

    def _start(self) -> Self:
        with self._lock:
            if self._process is not None:
                raise ZooKeeperError(f"already started: {self!r}")
            if self._abort.is_set():
                with _running_lock:
                    _running.discard(self)
                raise StartAborted("stopped before it started")
            java, classpath = resolve_runtime(self._java, self._classpath, self._system_jar_dirs)
            data_dir = self._make_data_dir()
            try:
                if not self._owns_data_dir:
                    self._lock_fd = lock_data_dir(data_dir)
                self._archive = plan_archive(self._class_archive, java, classpath)
                self._launch_with_retries(java, classpath, data_dir)
            except BaseException:
                self._port = self._requested_port
                self._release_data_dir_lock()
                self._remove_data_dir_if_owned()
                self._finish_archive(None)
                with _running_lock:
                    _running.discard(self)
                raise
        return self

    def stop(self) -> None:
        """Stop ZooKeeper (SIGTERM, SIGKILL after 10 s) and remove a temporary data dir.

        Idempotent; a never-started instance is a no-op. A start in progress (another
        thread's) is ended: it raises `ZooKeeperStartError`. When signalling or reaping the
        JVM fails, that is logged (``zookeeper.stop_failed``) and raised, and the instance is
        stopped all the same: the watchdog ends the JVM once its pipe is closed.
        """
        self._abort.set()
        with self._lock:
            process = self._process
            if process is None:
                return
            self._process = None
            stopped, forced = False, False
            try:
                forced = terminate_logged(process, self._port, self._data_dir)
                stopped = True
            finally:
                close_lifeline(self._lifeline)
                self._lifeline = None
                self._finish_archive(process.returncode if stopped and not forced else None)
                # The JVM and its watchdog hold the lock too while they live.
                self._release_data_dir_lock()
                if stopped:
                    log.info(
                        "zookeeper.stopped",
                        pid=process.pid,
                        port=self._port,
                        returncode=process.returncode,
                        forced=forced,
                    )
                self._remove_data_dir_if_owned()
                if self._requested_port is None:
                    # A restart picks a new port; reporting the old one would mislead.
                    self._port = None
                with _running_lock:
                    _running.discard(self)

    async def astart(self) -> Self:
        """:meth:`start` in a worker thread, so the event loop keeps running."""
        starting, self._starting = self._starting, None
        if starting is not None:
            return await asyncio.wrap_future(starting)
        self._abort.clear()
        await asyncio.to_thread(self._start)
        return self

    async def astop(self) -> None:
        """:meth:`stop` in a worker thread, so the event loop keeps running."""
        await asyncio.to_thread(self.stop)

    # -- internals ----------------------------------------------------------

    def _make_data_dir(self) -> Path:
        if self._requested_data_dir is not None:
            self._requested_data_dir.mkdir(parents=True, exist_ok=True)
            self._data_dir = self._requested_data_dir
            self._owns_data_dir = False
        else:
            self._data_dir = Path(tempfile.mkdtemp(prefix="zkbroker-zookeeper-")).resolve()
            self._owns_data_dir = True
        return self._data_dir

    def _release_data_dir_lock(self) -> None:
        if self._lock_fd is not None:
            fd, self._lock_fd = self._lock_fd, None
            try:
                os.close(fd)
            except OSError as exc:  # EBADF: closed by someone else, a bug worth a line
                log.warning(
                    "zookeeper.data_dir_lock_release_failed",
                    fd=fd,
                    data_dir=str(self._data_dir),
                    error=repr(exc),
                )

    def _remove_data_dir_if_owned(self) -> None:
        if not self._owns_data_dir or self._data_dir is None:
            return
        data_dir, self._data_dir, self._owns_data_dir = self._data_dir, None, False
        try:
            shutil.rmtree(data_dir)
        except OSError as exc:
            log.warning("zookeeper.data_dir_not_removed", data_dir=str(data_dir), error=repr(exc))

    def _launch_with_retries(self, java: str, classpath: str, data_dir: Path) -> None:
        # Only a port we picked ourselves may be swapped for another one.
        attempts = 1 if self._requested_port is not None else 3
        attempt = 1
        while True:
            port = self._requested_port or pick_free_port()
            try:
                self._launch(java, classpath, data_dir, port, may_retry=attempt < attempts)
                return
            except PortTaken:
                log.warning("zookeeper.port_taken_retrying", port=port, attempt=attempt)
                attempt += 1
            except ArchiveFailed:
                # The archive must never cost a start (a damaged one can crash the JVM
                # while it maps it): drop it and start without.
                self._drop_archive("the JVM exited at start with it")

    # -- the class-data archive -----------------------------------------------

    def _drop_archive(self, reason: str) -> None:
        archive, self._archive = self._archive, None
        if archive is not None:
            drop_archive(archive, reason)

    def _finish_archive(self, returncode: int | None) -> None:
        archive, self._archive = self._archive, None
        if archive is not None:
            finish_archive(archive, returncode)

    # -- one launch -----------------------------------------------------------

    def _launch(
        self, java: str, classpath: str, data_dir: Path, port: int, *, may_retry: bool
    ) -> None:
        launch = prepare_launch(
            java,
            classpath,
            data_dir,
            port,
            heap=self._heap,
            max_buffer_bytes=self._max_buffer_bytes,
            sasl_users=self._sasl_users,
            archive=self._archive,
        )
        log.info("zookeeper.starting", port=port, data_dir=str(data_dir), java=java)
        started_at = time.monotonic()
        process, lifeline = spawn(launch, data_dir, self._lock_fd)
        self._process = process
        self._lifeline = lifeline
        self._port = port
        self._owner_pid = os.getpid()
        # Registered before the wait: an interpreter exit during a slow start
        # must not leave this JVM behind either.
        with _running_lock:
            _running.add(self)
        try:
            wait_until_serving(
                process, port, data_dir, started_at, self._start_timeout, self._abort
            )
        except BaseException as exc:
            self._abandon(process, port, data_dir)
            failure = launch_failure(
                exc, launch, port, may_retry=may_retry, with_archive=self._archive is not None
            )
            if failure is None:
                raise
            raise failure from None
        self._started(process, port, data_dir, classpath, started_at)

    def _abandon(self, process: subprocess.Popen[bytes], port: int, data_dir: Path) -> None:
        """End a JVM that did not come up, and forget it."""
        self._process = None
        with _running_lock:
            _running.discard(self)
        try:
            terminate_logged(process, port, data_dir)
        finally:
            close_lifeline(self._lifeline)
            self._lifeline = None

    def _started(
        self,
        process: subprocess.Popen[bytes],
        port: int,
        data_dir: Path,
        classpath: str,
        started_at: float,
    ) -> None:
        if self._archive is not None and archive_ignored(self._archive, process.pid):
            self._drop_archive("the JVM did not map it")
        archive = self._archive
        log.info(
            "zookeeper.started",
            port=port,
            pid=process.pid,
            connect_string=f"{LOOPBACK}:{port}",
            data_dir=str(data_dir),
            elapsed_ms=round((time.monotonic() - started_at) * 1000),
            classpath=classpath,
            class_archive="none" if archive is None else "writing" if archive.writing else "used",
        )
