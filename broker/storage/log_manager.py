"""Every partition log of one process, and the wake-up of long-polling fetches.

All brokers of a process share one `LogManager`; with ``--log-dir`` several processes may share
its directory (each partition's writers serialise on a flock, `PartitionLog.append_lock`).
Follows Kafka's ``LogManager`` for the layout, ``log-start-offset-checkpoint``, retention
(``cleanupLogs``) and topic deletion (docs/kafka-behaviour.md §15, "Where a log lives", "When
a log directory goes", "Retention"); compaction is `zkbroker.broker.storage.cleaner.clean_log`.
`wait_for_append` is the long-poll primitive of Fetch (Kafka's ``DelayedFetch`` reduced to
"something was appended": O(1) per append, waiters re-check; on disk they also poll the
directory for other processes' appends). A log dir also holds the embedded ZooKeeper's data
(`zkbroker.broker.settings.EMBEDDED_ZOOKEEPER_DIR`), a name no partition directory can have.

Not here: recovery points, several log dirs (JBOD), moving logs between dirs, choosing
retention configs (the caller passes them).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Final

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol.releases import DEFAULT_RELEASE
from zkbroker.broker.storage.files import CLEANER_OFFSET_CHECKPOINT_FILE, LogStartOffsetCheckpoint
from zkbroker.broker.storage.partition_dir import (
    DELETE_DIR_SUFFIX,
    SET_ASIDE_DIR,
    set_aside_partition_dir,
)
from zkbroker.broker.storage.partition_log import (
    DEFAULT_SEGMENT_BYTES,
    DEFAULT_SEGMENT_MS,
    PartitionLog,
)
from zkbroker.zk_layout.release import Release

_log = get_logger(__name__)

#: How often waiters look for other processes' appends (disk mode).
POLL_INTERVAL_S: Final = 0.1


class LogManager:
    """The partition logs of one process: in memory (``log_dir`` None) or in ``log_dir``."""

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
        self._checkpoint: LogStartOffsetCheckpoint | None = None
        self._cleaner_checkpoint: LogStartOffsetCheckpoint | None = None
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
            self._checkpoint = LogStartOffsetCheckpoint(log_dir)
            self._cleaner_checkpoint = LogStartOffsetCheckpoint(
                log_dir, CLEANER_OFFSET_CHECKPOINT_FILE
            )
            self._load_set_aside_dirs(log_dir)
        self.generation = 0
        """Bumped by every append seen (this process's, or another's found by polling)."""
        self._appended = asyncio.Event()
        self._last_poll = 0.0
        self._closed = False

    @staticmethod
    def _load_set_aside_dirs(log_dir: Path) -> None:
        """Kafka's ``loadLog`` for set-aside directories: finish removing the ``-delete``
        ones (their topics were deleted; a process stopped before they were gone) and log
        the ``-stray`` ones, which stay for the operator to look at."""
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(log_dir):
                match = SET_ASIDE_DIR.match(entry.name)
                if match is None or not entry.is_dir(follow_symlinks=False):
                    continue
                if match.group(4) == DELETE_DIR_SUFFIX:
                    shutil.rmtree(entry.path, ignore_errors=True)
                    _log.info("storage.deleted_partition_dir_removed", directory=entry.path)
                else:
                    _log.warning("storage.stray_partition_dir_kept", directory=entry.path)

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
            log = PartitionLog.in_memory(
                topic,
                partition,
                topic_id,
                segment_bytes=self.segment_bytes,
                segment_ms=self.segment_ms,
                release=self.release,
                on_append=self._notify,
            )
        else:
            log = PartitionLog.open_dir(
                self.log_dir,
                topic,
                partition,
                topic_id,
                checkpoint=self._checkpoint,
                cleaner_checkpoint=self._cleaner_checkpoint,
                segment_bytes=self.segment_bytes,
                segment_ms=self.segment_ms,
                release=self.release,
                on_append=self._notify,
            )
        self._logs[key] = log
        return log

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
        self._checkpoint.remove_topic(topic)
        if self._cleaner_checkpoint is not None:
            self._cleaner_checkpoint.remove_topic(topic)

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

    def release_files(self) -> None:
        """Close every open log file and forget the logs (disk mode): the next use reopens
        each from the directory, as a restarted broker does. In memory the logs are the only
        copy of the records and stay."""
        if self.log_dir is None:
            return
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        self._notify()  # waiters re-check and find their logs gone

    def close(self) -> None:
        self._closed = True
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        self._notify()  # waiters re-check and find their logs gone

    # -- long polling ----------------------------------------------------------------------

    def _notify(self) -> None:
        self.generation += 1
        event, self._appended = self._appended, asyncio.Event()
        event.set()

    async def wait_for_append(self, timeout_s: float) -> None:
        """Return after the next append to any log of this manager, or after ``timeout_s``.

        In disk mode, other processes' appends are noticed by polling within
        `POLL_INTERVAL_S`. Callers re-check their own condition: the append may have been
        to another partition."""
        event = self._appended
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
