"""A partition's directory in Kafka's on-disk layout: its name, the names it is set aside under
(deleted with its topic, or a stray of another topic id) and what a log dir's loading does with
those, its lock, the segment files it holds, and the files of a cleaning's swap.

Follows Kafka's ``LogFileUtils`` and ``LocalLog`` (directory and file names) and ``LogLoader``
(finishing a swap a crash interrupted); docs/kafka-behaviour.md §15. Not here: what a segment
file holds (``segment``), the checkpoint files beside the directories (``files``), the log
over the segments (``partition_log``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Final

from zkbroker.broker.log import get_logger
from zkbroker.broker.storage.files import (
    PARTITION_LOCK_FILE,
    OffsetCheckpointFile,
    read_partition_metadata,
)
from zkbroker.broker.storage.segment import (
    FileStore,
    Segment,
    SegmentStore,
    parse_segment_file_name,
    scan_store,
    segment_file_name,
)

_log = get_logger(__name__)

#: Kafka's suffixes of a segment being cleaned and of one being swapped in (``LogFileUtils``).
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
#: Kafka's suffixes of a partition directory set aside (``LogFileUtils``/``LocalLog``): one
#: being deleted with its topic, and one kept because it does not belong where it is.
DELETE_DIR_SUFFIX: Final = "-delete"
STRAY_DIR_SUFFIX: Final = "-stray"
#: Kafka's ``DeleteDirPattern``/``StrayDirPattern``: ``topic-partition.uniqueId<suffix>``.
SET_ASIDE_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)(-delete|-stray)$")
_MAX_DIR_NAME: Final = 255


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def set_aside_dir_name(topic: str, partition: int, suffix: str) -> str:
    """Kafka's ``logDirNameWithSuffixCappedLength``: ``<topic>-<partition>.<uuid hex><suffix>``,
    the topic cut so the name stays within 255 characters."""
    full_suffix = f"-{partition}.{uuid.uuid4().hex}{suffix}"
    return topic[: _MAX_DIR_NAME - len(full_suffix)] + full_suffix


def set_aside_partition_dir(directory: Path, topic: str, partition: int, suffix: str) -> Path:
    """Rename a partition directory to Kafka's set-aside name beside it; returns the new path."""
    target = directory.with_name(set_aside_dir_name(topic, partition, suffix))
    os.rename(directory, target)
    return target


def load_set_aside_dirs(log_dir: Path) -> None:
    """Kafka's ``loadLog`` for set-aside directories: finish removing the ``-delete`` ones
    (their topics were deleted; a process stopped before they were gone) and log the
    ``-stray`` ones, which stay for the operator to look at."""
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


def lock_partition_dir(directory: Path) -> int:
    """Create the directory if missing and take its partition lock; returns the lock's fd.

    Another process may rename the directory aside (or delete it with its topic) while this
    one waits for the lock: the fd then locks the file that moved, so it is dropped and the
    directory now at the path is locked instead."""
    while True:
        directory.mkdir(parents=True, exist_ok=True)
        lock_path = directory / PARTITION_LOCK_FILE
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # the directory went between mkdir and open
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                current = os.stat(lock_path)
            except FileNotFoundError:
                current = None
            if current is not None and (current.st_dev, current.st_ino) == (
                held.st_dev,
                held.st_ino,
            ):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def lock_own_partition_dir(
    directory: Path,
    topic: str,
    partition: int,
    topic_id: uuid.UUID | None,
    checkpoints: tuple[OffsetCheckpointFile, ...],
) -> int:
    """Lock the partition's directory (`lock_partition_dir`) once it belongs to ``topic_id``:
    a directory whose ``partition.metadata`` names another topic id is renamed aside
    (``-stray``), its entries in ``checkpoints`` dropped, and a new one locked instead.
    Returns the lock's fd."""
    while True:
        lock_fd = lock_partition_dir(directory)
        try:
            stored_id = read_partition_metadata(directory)
            if topic_id is None or stored_id is None or stored_id == topic_id:
                return lock_fd
            aside = set_aside_partition_dir(directory, topic, partition, STRAY_DIR_SUFFIX)
            _log.warning(
                "storage.partition_dir_set_aside",
                directory=str(directory),
                renamed_to=str(aside),
                topic=topic,
                partition=partition,
                stored_topic_id=str(stored_id),
                topic_id=str(topic_id),
                reason="partition.metadata names another topic id",
            )
            # The offsets checkpointed for that directory belong to it, not to the new log.
            key = (topic, partition)
            for offsets in checkpoints:
                if offsets.get(*key) is not None:
                    offsets.update({key: None})
        except BaseException:
            os.close(lock_fd)
            raise
        os.close(lock_fd)  # the lock moved with the directory; lock the new one


def segment_bases(directory: Path) -> list[int]:
    """The base offsets of the directory's segment files, in order ([] without the directory)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(b for b in map(parse_segment_file_name, names) if b is not None)


def segments_replaced(directory: Path, dir_stamp: int, segments: list[Segment]) -> bool:
    """Whether the file of one of ``segments`` was swapped for another (an inode per segment,
    looked at only when the directory's mtime is no longer ``dir_stamp``)."""
    try:
        if os.stat(directory).st_mtime_ns == dir_stamp:
            return False
    except FileNotFoundError:
        return False
    return any(
        isinstance(seg.store, FileStore) and seg.store.replaced_on_disk() for seg in segments
    )


def cleaned_segment_path(directory: Path, base_offset: int) -> Path:
    """Kafka's ``<base>.log.cleaned``: where a cleaned group of segments is written."""
    return directory / (segment_file_name(base_offset) + CLEANED_SUFFIX)


def discard_cleaned(cleaned: SegmentStore) -> None:
    """Drop a cleaned store that will not be swapped in; its file only when it is still
    ours (another process may have put its own under the same name)."""
    if isinstance(cleaned, FileStore) and cleaned.replaced_on_disk():
        cleaned.close()
    else:
        cleaned.delete()


def swap_in_cleaned(
    directory: Path, cleaned: FileStore, old: list[Segment], last_modified_ms: int
) -> None:
    """Replace the files of the segments ``old`` with ``cleaned`` (Kafka's
    ``LocalLog.replaceSegments``), through ``<base>.log.swap``: once it has that name, a crash
    completes the swap at the next open (`recover_swaps`)."""
    base = old[0].base_offset
    cleaned.rename(directory / (segment_file_name(base) + SWAP_SUFFIX))
    for seg in old:
        seg.store.delete()
    cleaned.rename(directory / segment_file_name(base))
    cleaned.set_last_modified_ms(last_modified_ms)


def recover_swaps(directory: Path, topic: str, partition: int) -> None:
    """Kafka's ``LogLoader`` for an interrupted cleaning (lock held, at open): a
    ``.cleaned`` file was never committed and goes; a ``.swap`` file was, so the
    segments whose base offsets it covers are deleted and it becomes their ``.log``."""
    names = os.listdir(directory)
    for name in names:
        if name.endswith(".log" + CLEANED_SUFFIX):
            _log.warning(
                "deleting an uncommitted cleaned segment",
                topic=topic,
                partition=partition,
                file=name,
            )
            with contextlib.suppress(FileNotFoundError):
                os.unlink(directory / name)
    for name in sorted(n for n in names if n.endswith(".log" + SWAP_SUFFIX)):
        base = parse_segment_file_name(name[: -len(SWAP_SUFFIX)])
        if base is None:
            continue
        probe = Segment(base, FileStore(directory / name))
        scan_store(probe)
        probe.store.close()
        next_offset = base if probe.last_offset is None else probe.last_offset + 1
        for old in segment_bases(directory):
            if base <= old < max(next_offset, base + 1):
                os.unlink(directory / segment_file_name(old))
        os.replace(directory / name, directory / segment_file_name(base))
        _log.warning(
            "completed an interrupted segment swap",
            topic=topic,
            partition=partition,
            segment=base,
            next_offset=next_offset,
        )
