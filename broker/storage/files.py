"""Kafka's small text files beside the logs, read and written the way Kafka does.

`partition.metadata` (`PartitionMetadataFile`, KIP-516), the offset checkpoints
`log-start-offset-checkpoint`, `cleaner-offset-checkpoint` and `replication-offset-checkpoint`
(each replica's high watermark) (`OffsetCheckpointFile`, Kafka's class and format) and
`leader-epoch-checkpoint` (`LeaderEpochCheckpointFile`, written when the cleaner swaps a segment
in: cleaning may drop an epoch's first batch, and kept in step when a log is truncated);
docs/kafka-behaviour.md §15, "Where a log lives". Files are written to a temp file and renamed.
Several zkbroker processes may share a log dir, so checkpoint updates are read-modify-write
under `flock_exclusive`; readers need no lock, and a parse is cached by the file's inode, size
and mtime.

Not here: `recovery-point-offset-checkpoint` (zkbroker rebuilds what it holds from the batch
headers), fsync (a mock broker's files need not survive a power cut).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

from zkbroker.zk_layout.uuid_text import uuid_from_text, uuid_to_text

PARTITION_METADATA_FILE: Final = "partition.metadata"
LOG_START_OFFSET_CHECKPOINT_FILE: Final = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT_FILE: Final = "cleaner-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT_FILE: Final = "replication-offset-checkpoint"
#: Kafka's recovery points: zkbroker neither reads nor writes it, but keeps it with a log dir.
RECOVERY_POINT_OFFSET_CHECKPOINT_FILE: Final = "recovery-point-offset-checkpoint"
#: The offset checkpoint files at the top of a log dir.
OFFSET_CHECKPOINT_FILES: Final = (
    LOG_START_OFFSET_CHECKPOINT_FILE,
    CLEANER_OFFSET_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_OFFSET_CHECKPOINT_FILE,
)
LEADER_EPOCH_CHECKPOINT_FILE: Final = "leader-epoch-checkpoint"
#: zkbroker's own lock files (Kafka's loader ignores files it does not know).
DIR_LOCK_FILE: Final = ".zkbroker-log-dir.lock"
PARTITION_LOCK_FILE: Final = ".zkbroker-partition.lock"
_CHECKPOINT_VERSION: Final = 0
_METADATA_VERSION: Final = 0


@contextlib.contextmanager
def flock_exclusive(fd: int) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``fd`` (blocks while another process holds it)."""
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_partition_metadata(partition_dir: Path, topic_id: uuid.UUID) -> None:
    _write_atomically(
        partition_dir / PARTITION_METADATA_FILE,
        f"version: {_METADATA_VERSION}\ntopic_id: {uuid_to_text(topic_id)}",
    )


def read_partition_metadata(partition_dir: Path) -> uuid.UUID | None:
    """The topic id the file names; None when it is missing or unreadable (Kafka would
    fail the log dir; a mock rewrites it)."""
    try:
        text = (partition_dir / PARTITION_METADATA_FILE).read_text(encoding="utf-8")
    except OSError:
        return None
    fields: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip()] = value.strip()
    try:
        if int(fields.get("version", "-1")) < _METADATA_VERSION:
            return None
        return uuid_from_text(fields["topic_id"])
    except (KeyError, ValueError):
        return None


def write_leader_epoch_checkpoint(partition_dir: Path, entries: list[tuple[int, int]]) -> None:
    lines = [str(_CHECKPOINT_VERSION), str(len(entries))]
    lines += [f"{epoch} {offset}" for epoch, offset in entries]
    _write_atomically(partition_dir / LEADER_EPOCH_CHECKPOINT_FILE, "\n".join(lines) + "\n")


def read_leader_epoch_checkpoint(partition_dir: Path) -> list[tuple[int, int]]:
    """(epoch, start offset) entries; [] when the file is missing or unreadable."""
    try:
        lines = (partition_dir / LEADER_EPOCH_CHECKPOINT_FILE).read_text(encoding="utf-8")
    except OSError:
        return []
    rows = lines.splitlines()
    if len(rows) < 2 or rows[0].strip() != str(_CHECKPOINT_VERSION):
        return []
    out: list[tuple[int, int]] = []
    for row in rows[2:]:
        parts = row.split()
        if len(parts) == 2:
            with contextlib.suppress(ValueError):
                out.append((int(parts[0]), int(parts[1])))
    return out


class OffsetCheckpointFile:
    """One offset checkpoint file of a log dir (``log-start-offset-checkpoint`` unless named
    otherwise): version 0, the entry count, then ``topic partition offset`` lines. Shared by
    every process using the dir."""

    def __init__(self, log_dir: Path, name: str = LOG_START_OFFSET_CHECKPOINT_FILE) -> None:
        self.path = log_dir / name
        self._lock_path = log_dir / DIR_LOCK_FILE
        self._identity: tuple[int, int, int] | None = None
        self._entries: dict[tuple[str, int], int] = {}

    def get(self, topic: str, partition: int) -> int | None:
        return self.read().get((topic, partition))

    def read(self) -> Mapping[tuple[str, int], int]:
        """The entries, reparsed only when the file changed since the last read."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._identity, self._entries = None, {}
            return self._entries
        identity = (st.st_ino, st.st_size, st.st_mtime_ns)
        if identity != self._identity:
            self._entries = _parse_checkpoint(self.path)
            self._identity = identity
        return self._entries

    def identity(self) -> tuple[int, int, int] | None:
        """What the last `read` saw (callers compare it to notice other processes' writes)."""
        return self._identity

    def update(self, changes: Mapping[tuple[str, int], int | None]) -> None:
        """Set (or, with None, remove) entries: read-modify-write under the dir lock."""
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            with flock_exclusive(fd):
                self._identity = None
                entries = dict(self.read())
                for key, value in changes.items():
                    if value is None:
                        entries.pop(key, None)
                    else:
                        entries[key] = value
                lines = [str(_CHECKPOINT_VERSION), str(len(entries))]
                lines += [f"{t} {p} {o}" for (t, p), o in entries.items()]
                _write_atomically(self.path, "\n".join(lines) + "\n")
                self._identity = None
        finally:
            os.close(fd)

    def remove_topic(self, topic: str) -> None:
        doomed = {key: None for key in self.read() if key[0] == topic}
        if doomed:
            self.update(doomed)


def _parse_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """Kafka's format; an unreadable file counts as empty (Kafka would fail the dir)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    if len(lines) < 2 or lines[0].strip() != str(_CHECKPOINT_VERSION):
        return {}
    out: dict[tuple[str, int], int] = {}
    for line in lines[2:]:
        parts = line.split()
        if len(parts) != 3:
            continue
        with contextlib.suppress(ValueError):
            out[(parts[0], int(parts[1]))] = int(parts[2])
    return out
