"""Where each broker's logs live under a ``--log-dir`` root, and adopting the layout written
before each broker had its own logs.

`broker_log_dir`: broker N's log dir is ``<root>/broker-N``, Kafka's log dir layout inside
(``<topic>-<partition>/`` directories, the offset checkpoint files at its top), opened by that
broker's `LogManager`. The embedded ZooKeeper's data stays in ``<root>/zookeeper``
(`zkbroker.broker.settings.EMBEDDED_ZOOKEEPER_DIR`), untouched here.

`adopt_shared_layout`: until issue 43 the partition directories and checkpoints sat directly
in the root, one log per partition shared by every broker. Adopting gives each broker a copy:
sealed segments and their index files hard-linked (never written in place again: a cut makes
a private copy first, `FileStore.truncate`), the active segment and every other file of the
partition copied, the root's checkpoints copied, and a ``replication-offset-checkpoint``
whose high watermarks are the log end offsets (under the shared log everything appended was
acknowledged). Each broker dir is built under a temporary name and renamed into place; the
old directories and checkpoints go only once every broker's dir is in place, so a crash
midway leaves the old layout whole and the next call finishes the work. Set-aside
directories in the root are handled as a `LogManager` handles its own
(`partition_dir.load_set_aside_dirs`). docs/kafka-behaviour.md §15, "Where a log lives".

Not here: opening the logs (`LogManager`), deciding the broker ids (the caller's), several
log dirs per broker (JBOD).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from zkbroker.broker.log import get_logger
from zkbroker.broker.storage.files import (
    OFFSET_CHECKPOINT_FILES,
    PARTITION_LOCK_FILE,
    PARTITION_METADATA_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    OffsetCheckpointFile,
)
from zkbroker.broker.storage.partition_dir import load_set_aside_dirs, segment_bases
from zkbroker.broker.storage.segment import (
    FileStore,
    Segment,
    parse_segment_file_name,
    scan_store,
    segment_file_name,
)

_log = get_logger(__name__)

BROKER_DIR_PREFIX: Final = "broker-"
#: A broker dir being built (a crash leaves it; the next adoption removes it).
_BUILDING_SUFFIX: Final = ".adopting"
#: Where partition directories whose names are those of broker dirs (a topic named
#: ``broker``) wait until the broker dirs are in place.
_PENDING_DIR: Final = ".zkbroker-adopt-pending"
#: A partition directory's name (Kafka's ``<topic>-<partition>``).
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
#: The files of a sealed segment that are hard-linked: the segment and its offset indexes.
_LINKED_EXTENSIONS: Final = frozenset({"log", "index", "timeindex"})


def broker_log_dir(root: Path, broker_id: int) -> Path:
    """Broker ``broker_id``'s log dir under the ``--log-dir`` root."""
    return root / f"{BROKER_DIR_PREFIX}{broker_id}"


def log_dirs_of(root: Path, broker_ids: Iterable[int]) -> dict[int, Path]:
    """Each broker's log dir under the ``--log-dir`` root, the root readied for them. One broker
    (without a ``broker-N`` dir there from a run with several) keeps Kafka's own layout in the
    root itself, as a Kafka broker given ``log.dirs`` does; a log written before it had a
    high-watermark checkpoint gets one at its log end (`adopt_in_place`). Several brokers get
    ``broker-N`` each, the shared layout adopted first (`adopt_shared_layout`)."""
    ids = sorted(set(broker_ids))
    if len(ids) == 1 and not broker_log_dir(root, ids[0]).exists():
        adopt_in_place(root)
        return {ids[0]: root}
    adopt_shared_layout(root, ids)
    return {b: broker_log_dir(root, b) for b in ids}


def adopt_in_place(root: Path) -> None:
    """A log dir of the layout before replication, kept by one broker: its partitions'
    high watermarks are their log ends (everything in them was acknowledged), written once
    as ``replication-offset-checkpoint`` where none exists."""
    if not root.is_dir() or (root / REPLICATION_OFFSET_CHECKPOINT_FILE).exists():
        return
    sources = [p for p in sorted(root.iterdir()) if _is_partition_dir(p)]
    if not sources:
        return
    high_watermarks = {_partition_of(d): _log_end_offset(d) for d in sources}
    OffsetCheckpointFile(root, REPLICATION_OFFSET_CHECKPOINT_FILE).update(dict(high_watermarks))
    _log.info("storage.high_watermarks_adopted", directory=str(root), partitions=len(sources))


def adopt_shared_layout(root: Path, broker_ids: Iterable[int]) -> None:
    """Give each of ``broker_ids`` its own copy of the partition directories written directly
    in ``root`` (the shared layout), then remove them (see the module's docstring). Call it
    before opening the brokers' log managers. Idempotent: nothing to do once adopted.
    ValueError, touching nothing, when there is something to adopt and no broker id."""
    if not root.is_dir():
        return
    ids = sorted(set(broker_ids))
    if not ids and _shared_partition_dirs(root):
        raise ValueError(
            f"{root} holds partition directories but no broker was named to adopt them"
        )
    load_set_aside_dirs(root)
    for leftover in root.glob(f"{BROKER_DIR_PREFIX}*{_BUILDING_SUFFIX}"):
        _log.warning("storage.unfinished_adoption_removed", directory=str(leftover))
        shutil.rmtree(leftover)
    _set_aside_colliding(root, ids)
    sources = _shared_partition_dirs(root)
    if sources:
        high_watermarks = {_partition_of(d): _log_end_offset(d) for d in sources}
        for broker_id in ids:
            target = broker_log_dir(root, broker_id)
            if not target.exists():
                _build_broker_dir(root, target, sources, high_watermarks)
    _remove_shared_layout(root, sources)


def _is_partition_dir(path: Path) -> bool:
    """A directory named ``<topic>-<partition>`` holding a partition's files (a broker dir
    ``broker-N`` has the same form of name but holds directories and checkpoints)."""
    if _PARTITION_DIR.match(path.name) is None or path.is_symlink() or not path.is_dir():
        return False
    markers = {PARTITION_METADATA_FILE, PARTITION_LOCK_FILE}
    return any(
        name in markers or parse_segment_file_name(name) is not None for name in os.listdir(path)
    )


def _shared_partition_dirs(root: Path) -> list[Path]:
    pending = root / _PENDING_DIR
    found = [p for p in sorted(root.iterdir()) if _is_partition_dir(p)]
    if pending.is_dir():
        found += [p for p in sorted(pending.iterdir()) if _is_partition_dir(p)]
    return found


def _set_aside_colliding(root: Path, broker_ids: list[int]) -> None:
    """Move partition directories named as a broker dir of ``broker_ids`` (partitions of a
    topic named ``broker``) out of the way, into the pending directory."""
    for broker_id in broker_ids:
        path = broker_log_dir(root, broker_id)
        if _is_partition_dir(path):
            (root / _PENDING_DIR).mkdir(exist_ok=True)
            os.rename(path, root / _PENDING_DIR / path.name)
            _log.info("storage.partition_dir_moved_for_adoption", directory=str(path))


def _partition_of(partition_dir: Path) -> tuple[str, int]:
    match = _PARTITION_DIR.match(partition_dir.name)
    assert match is not None
    return match.group(1), int(match.group(2))


def _log_end_offset(partition_dir: Path) -> int:
    """The log end offset the partition's files hold: after the last segment's last whole
    batch, or its base offset when it is empty (rolled at the log end)."""
    bases = segment_bases(partition_dir)
    if not bases:
        return 0
    seg = Segment(bases[-1], FileStore(partition_dir / segment_file_name(bases[-1])))
    try:
        scan_store(seg)
    finally:
        seg.store.close()
    return seg.base_offset if seg.last_offset is None else seg.last_offset + 1


def _build_broker_dir(
    root: Path,
    target: Path,
    sources: list[Path],
    high_watermarks: dict[tuple[str, int], int],
) -> None:
    building = target.with_name(target.name + _BUILDING_SUFFIX)
    building.mkdir()
    for source in sources:
        _copy_partition_dir(source, building / source.name)
    for name in OFFSET_CHECKPOINT_FILES:
        if (root / name).is_file():
            shutil.copy2(root / name, building / name)
    OffsetCheckpointFile(building, REPLICATION_OFFSET_CHECKPOINT_FILE).update(dict(high_watermarks))
    os.rename(building, target)
    _log.info(
        "storage.shared_layout_adopted",
        directory=str(target),
        partitions=len(sources),
    )


def _copy_partition_dir(source: Path, target: Path) -> None:
    """Sealed segments and their indexes hard-linked, everything else copied."""
    target.mkdir()
    bases = segment_bases(source)
    sealed = set(bases[:-1])
    for entry in os.scandir(source):
        here, there = Path(entry.path), target / entry.name
        if entry.is_dir(follow_symlinks=False):
            shutil.copytree(here, there, symlinks=True)
            continue
        stem, _, ext = entry.name.partition(".")
        base = parse_segment_file_name(f"{stem}.log") if ext in _LINKED_EXTENSIONS else None
        if base in sealed:
            try:
                os.link(here, there)
                continue
            except OSError:
                pass  # a filesystem without hard links: a copy does
        shutil.copy2(here, there, follow_symlinks=False)


def _remove_shared_layout(root: Path, sources: list[Path]) -> None:
    """The old partition directories, the pending directory and the root's checkpoints go,
    with one log line naming them."""
    checkpoints = [root / name for name in OFFSET_CHECKPOINT_FILES if (root / name).is_file()]
    pending = root / _PENDING_DIR
    if not sources and not checkpoints and not pending.exists():
        return
    _log.info(
        "storage.shared_layout_removed",
        root=str(root),
        partition_dirs=[str(p.relative_to(root)) for p in sources],
        checkpoints=[p.name for p in checkpoints],
    )
    for path in sources:
        shutil.rmtree(path)
    if pending.exists():
        shutil.rmtree(pending)
    for path in checkpoints:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
