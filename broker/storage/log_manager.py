"""The partition logs of one log dir (one broker's, `broker_log_dir`), and the wake-up of
long-polling fetches.

Each broker has its own `LogManager`, in memory or over its own log dir; several processes
may still share one directory (each partition's writers serialise on a flock,
`PartitionLog.append_lock`). Follows Kafka's ``LogManager`` for the layout,
``log-start-offset-checkpoint``, ``replication-offset-checkpoint`` (each log's high watermark,
read when a log opens, written by `checkpoint_high_watermarks` and at close), retention
(``cleanupLogs``) and topic deletion (docs/kafka-behaviour.md §15, "Where a log lives", "When
a log directory goes", "Retention"); compaction is `zkbroker.broker.storage.cleaner.clean_log`.
`wait_for_append` is the long-poll primitive of Fetch (Kafka's ``DelayedFetch`` reduced to
"something was appended or a high watermark moved": O(1) per change, waiters re-check; on
disk they also poll the directory for other processes' appends).

Not here: recovery points, several log dirs (JBOD), moving logs between dirs, choosing
retention configs (the caller passes them), when high watermarks are checkpointed (the
caller's schedule, Kafka's ``replica.high.watermark.checkpoint.interval.ms``), the root of a
``--log-dir`` and its broker dirs (``log_dir_layout``).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import time
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Final

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol.releases import DEFAULT_RELEASE
from zkbroker.broker.storage.files import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    OffsetCheckpointFile,
)
from zkbroker.broker.storage.partition_dir import (
    DELETE_DIR_SUFFIX,
    load_set_aside_dirs,
    set_aside_partition_dir,
)
from zkbroker.broker.storage.partition_log import (
    DEFAULT_SEGMENT_BYTES,
    DEFAULT_SEGMENT_MS,
    PartitionLog,
)
from zkbroker.broker.storage.types import LogDirInUse
from zkbroker.zk_layout.release import Release

_log = get_logger(__name__)

#: Kafka's log dir lock file, held by the broker using the directory.
LOG_DIR_LOCK_FILE: Final = ".lock"
#: How often waiters look for other processes' appends (disk mode).
POLL_INTERVAL_S: Final = 0.1


class LogManager:
    """The partition logs of one broker: in memory (``log_dir`` None) or in ``log_dir``."""

    def __init__(
        self,
        log_dir: Path | None,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        segment_ms: int = DEFAULT_SEGMENT_MS,
        release: Release = DEFAULT_RELEASE,
    ) -> None:
        self.log_dir = log_dir
        self.segment_bytes = segment_bytes
        self.segment_ms = segment_ms
        # The emulated release: what a log's producer state keeps when its start moves (§17).
        self.release = release
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._checkpoint: OffsetCheckpointFile | None = None
        self._cleaner_checkpoint: OffsetCheckpointFile | None = None
        self._hw_checkpoint: OffsetCheckpointFile | None = None
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
            self._checkpoint = OffsetCheckpointFile(log_dir)
            self._cleaner_checkpoint = OffsetCheckpointFile(log_dir, CLEANER_OFFSET_CHECKPOINT_FILE)
            self._hw_checkpoint = OffsetCheckpointFile(log_dir, REPLICATION_OFFSET_CHECKPOINT_FILE)
            load_set_aside_dirs(log_dir)
        #: Told after each leader append to one of these logs (set by the replica manager).
        self.on_leader_append: Callable[[PartitionLog], None] | None = None
        self.generation = 0
        self._dir_lock_fd = -1
        """Bumped by every append seen (this process's, or another's found by polling)."""
        self._appended = asyncio.Event()
        self._last_poll = 0.0
        self._closed = False

    # -- logs ------------------------------------------------------------------------------

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, topic_id: uuid.UUID | None) -> PartitionLog:
        """The partition's log, opened or created. A log (or directory) of an earlier topic
        with the same name but another topic id is replaced by an empty one (Kafka refuses
        the mismatch; here the old topic was deleted)."""
        key = (topic, partition)
        log = self._logs.get(key)
        if log is not None:
            if topic_id is None or log.topic_id is None or log.topic_id == topic_id:
                if log.topic_id is None and topic_id is not None:
                    log.topic_id = topic_id
                return log
            log.close()
            del self._logs[key]
            if self.log_dir is None:
                _log.info("replacing log of an earlier topic", topic=topic, partition=partition)
        if self.log_dir is None:
            log = PartitionLog(
                topic,
                partition,
                topic_id,
                segment_bytes=self.segment_bytes,
                segment_ms=self.segment_ms,
                release=self.release,
                on_append=self._notify,
                on_high_watermark=self._notify,
            )
        else:
            log = PartitionLog.open_dir(
                self.log_dir,
                topic,
                partition,
                topic_id,
                checkpoint=self._checkpoint,
                cleaner_checkpoint=self._cleaner_checkpoint,
                hw_checkpoint=self._hw_checkpoint,
                segment_bytes=self.segment_bytes,
                segment_ms=self.segment_ms,
                release=self.release,
                on_append=self._notify,
                on_high_watermark=self._notify,
            )
        log.on_leader_append = self._leader_appended
        self._logs[key] = log
        return log

    def _leader_appended(self, log: PartitionLog) -> None:
        if self.on_leader_append is not None:
            self.on_leader_append(log)

    def logs(self) -> list[PartitionLog]:
        return list(self._logs.values())

    def delete_topic(self, topic: str) -> None:
        """Close and remove every partition log of ``topic`` (idempotent). In disk mode the
        directories go too, including those of partitions this process never opened, and
        it is no error when another process removed them first. Each is renamed to Kafka's
        ``-delete`` name before it is removed (see the module's docstring)."""
        for key in [k for k in self._logs if k[0] == topic]:
            self._logs.pop(key).close()
        if self.log_dir is None or self._checkpoint is None:
            return
        prefix = topic + "-"
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self.log_dir):
                name = entry.name
                if name.startswith(prefix) and name[len(prefix) :].isdigit() and entry.is_dir():
                    try:
                        doomed = set_aside_partition_dir(
                            Path(entry.path), topic, int(name[len(prefix) :]), DELETE_DIR_SUFFIX
                        )
                    except FileNotFoundError:
                        continue  # another process sharing the dir deleted it first
                    shutil.rmtree(doomed, ignore_errors=True)
        for checkpoint in (self._checkpoint, self._cleaner_checkpoint, self._hw_checkpoint):
            if checkpoint is not None:
                checkpoint.remove_topic(topic)

    def apply_retention(self, now_ms: int, configs: Callable[[str], tuple[int, int]]) -> int:
        """One retention pass over every log; ``configs(topic)`` gives (retention.ms,
        retention.bytes), -1 unlimited. Returns the bytes freed."""
        freed = 0
        for log in self.logs():
            retention_ms, retention_bytes = configs(log.topic)
            freed += log.apply_retention(
                now_ms, retention_ms=retention_ms, retention_bytes=retention_bytes
            )
        return freed

    def checkpoint_high_watermarks(self) -> None:
        """Write every open log's high watermark to ``replication-offset-checkpoint`` (Kafka's
        ``ReplicaManager.checkpointHighWatermarks``; written whole and renamed). Entries of
        logs not open here are kept: they are opened on first use, not all at start. Nothing
        in memory, or when the file already says it. OSError when it cannot be written."""
        if self._hw_checkpoint is None:
            return
        stored = self._hw_checkpoint.read()
        changes: dict[tuple[str, int], int | None] = {
            key: log.high_watermark
            for key, log in self._logs.items()
            if not log.closed and stored.get(key) != log.high_watermark
        }
        if changes:
            self._hw_checkpoint.update(changes)

    def _checkpoint_at_shutdown(self) -> None:
        """A failed checkpoint must not keep the logs open: the next start reads the
        previous one (clamped), as after a crash."""
        try:
            self.checkpoint_high_watermarks()
        except OSError as exc:
            _log.warning("storage.high_watermark_checkpoint_failed", error=str(exc))

    def lock(self) -> None:
        """Take the log dir's lock (Kafka's ``.lock``, held while the broker runs): one broker
        per log dir, as each replica's log must be its own. `LogDirInUse` when another process
        holds it; nothing in memory. Released by `release_files` and `close`."""
        if self.log_dir is None or self._dir_lock_fd >= 0:
            return
        self.log_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.log_dir / LOG_DIR_LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LogDirInUse(str(self.log_dir)) from None
        self._dir_lock_fd = fd

    def _unlock(self) -> None:
        fd, self._dir_lock_fd = self._dir_lock_fd, -1
        if fd >= 0:
            os.close(fd)

    def release_files(self) -> None:
        """Checkpoint the high watermarks, close every open log file and forget the logs (disk
        mode): the next use reopens each from the directory, as a restarted broker does. In
        memory the logs are the only copy of the records and stay."""
        if self.log_dir is None:
            return
        self._checkpoint_at_shutdown()
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        self._unlock()
        self._notify()  # waiters re-check and find their logs gone

    def close(self) -> None:
        """Checkpoint the high watermarks (a clean shutdown) and close every log."""
        if not self._closed:
            self._checkpoint_at_shutdown()
        self._closed = True
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        self._unlock()
        self._notify()  # waiters re-check and find their logs gone

    # -- long polling ----------------------------------------------------------------------

    def _notify(self) -> None:
        self.generation += 1
        event, self._appended = self._appended, asyncio.Event()
        event.set()

    def wait_for_append(
        self, timeout_s: float, since: int | None = None
    ) -> Coroutine[Any, Any, None]:
        """Return after the next append to any log of this manager or the next move of one's
        high watermark (consumers read up to it), or after ``timeout_s``; at once when
        `generation` has moved past ``since`` (what the caller read before it waits).

        The append counted is one after this call, not after the returned coroutine first
        runs (a task started for it runs a loop turn later, and an append in between would
        be missed for the whole wait). In disk mode, other processes' appends are noticed by
        polling within `POLL_INTERVAL_S`. Callers re-check their own condition: the append
        may have been to another partition."""
        event = self._appended
        if since is not None and self.generation != since:
            event = asyncio.Event()  # something moved since the caller read: no wait
            event.set()
        return self._wait(event, timeout_s)

    async def _wait(self, event: asyncio.Event, timeout_s: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout_s, 0.0)
        while not event.is_set():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            step = remaining if self.log_dir is None else min(remaining, POLL_INTERVAL_S)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(step):
                    await event.wait()
                return
            if self.log_dir is not None:
                self.poll_other_processes()

    def poll_other_processes(self) -> bool:
        """Index what other processes sharing the log dir appended (at most once per
        `POLL_INTERVAL_S` however many waiters call it); wakes the waiters when any log
        changed. True when something changed."""
        if self.log_dir is None or self._closed:
            return False
        now = time.monotonic()
        if now - self._last_poll < POLL_INTERVAL_S / 2:
            return False
        self._last_poll = now
        changed = False
        for log in self.logs():
            try:
                changed |= log.refresh_if_changed()
            except OSError as exc:  # a directory removed under us: its topic is going
                _log.debug(
                    "log refresh failed", topic=log.topic, partition=log.partition, error=str(exc)
                )
        if changed:
            self._notify()
        return changed


__all__ = ["POLL_INTERVAL_S", "LogManager"]
