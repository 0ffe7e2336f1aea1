"""The embedded ZooKeeper's class-data archive with real JVMs: written by the first start (as
its JVM exits), mapped by later ones, rebuilt when stale, and never a reason for a start to
fail (damaged, refused by the JVM, crashing the JVM, a folder that cannot take one)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from zkbroker.broker.jvm import class_archive
from zkbroker.broker.zookeeper.discovery import find_zookeeper_classpath
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper
from zkbroker.broker.zookeeper.errors import ZooKeeperStartError
from zkbroker.broker.zookeeper.jvm_launch import CLASS_ARCHIVE_LABEL
from zkbroker.broker.zookeeper.network import is_serving


def _archives(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"{CLASS_ARCHIVE_LABEL}-java*.jsa"))


def _maps(pid: int | None, path: Path) -> bool:
    assert pid is not None
    return str(path) in Path(f"/proc/{pid}/maps").read_text()


def _serves(zookeeper: EmbeddedZooKeeper) -> bool:
    return is_serving(zookeeper.host, zookeeper.port)


@pytest.fixture
def classpath(tmp_path: Path) -> str:
    """Copies of the ZooKeeper jars: a test may change one (a package upgrade)."""
    jars = tmp_path / "jars"
    jars.mkdir()
    copies = []
    for jar in find_zookeeper_classpath().split(os.pathsep):
        copy = jars / Path(jar).name
        shutil.copy2(jar, copy)
        copies.append(str(copy))
    return os.pathsep.join(copies)


def _written(folder: Path, classpath: str) -> Path:
    """Start and stop once: the archive the JVM wrote at exit."""
    with EmbeddedZooKeeper(classpath=classpath, class_archive=folder):
        assert _archives(folder) == []  # written as the JVM exits, not before
    (archive,) = _archives(folder)
    return archive


def test_written_by_the_first_start_then_mapped(tmp_path: Path, classpath: str) -> None:
    folder = tmp_path / "cache"
    archive = _written(folder, classpath)
    assert class_archive.usable(archive)
    assert not list(folder.glob("*.partial"))
    written = archive.stat()
    with EmbeddedZooKeeper(classpath=classpath, class_archive=folder) as zookeeper:
        assert _serves(zookeeper)
        assert _maps(zookeeper.pid, archive)
    # Reused as it was: a start that maps it writes nothing.
    assert _archives(folder) == [archive]
    assert (archive.stat().st_ino, archive.stat().st_mtime_ns) == (
        written.st_ino,
        written.st_mtime_ns,
    )


def test_without_an_archive_when_off(tmp_path: Path, classpath: str) -> None:
    with EmbeddedZooKeeper(classpath=classpath, class_archive=False) as zookeeper:
        assert _serves(zookeeper)
    assert not any(tmp_path.rglob("*.jsa"))


def test_rebuilt_when_a_jar_changed(tmp_path: Path, classpath: str) -> None:
    folder = tmp_path / "cache"
    old = _written(folder, classpath)
    jar = Path(classpath.split(os.pathsep)[0])
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 10**9))
    # Another name for the changed classpath: the old archive is not offered, a new one written.
    with EmbeddedZooKeeper(classpath=classpath, class_archive=folder) as zookeeper:
        assert _serves(zookeeper)
        assert not _maps(zookeeper.pid, old)
    new = [a for a in _archives(folder) if a != old]
    assert len(new) == 1 and class_archive.usable(new[0])


def test_an_archive_the_jvm_refuses_is_dropped_and_rebuilt(tmp_path: Path, classpath: str) -> None:
    folder = tmp_path / "cache"
    old = _written(folder, classpath)
    jar = Path(classpath.split(os.pathsep)[0])
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 10**9))
    # The old archive under the new classpath's name: whole, but made for other jars.
    with EmbeddedZooKeeper(classpath=classpath, class_archive=folder):
        pass
    (new,) = (a for a in _archives(folder) if a != old)
    new.unlink()
    shutil.copy2(old, new)
    with EmbeddedZooKeeper(classpath=classpath, class_archive=folder) as zookeeper:
        assert _serves(zookeeper)
        assert not _maps(zookeeper.pid, new)
    # Dropped at start; this start did not write one, the next does.
    assert not new.exists()
    with EmbeddedZooKeeper(classpath=classpath, class_archive=folder):
        pass
    assert new.exists() and class_archive.usable(new)


@pytest.mark.parametrize("damage", ["truncated", "zeroed", "garbage", "empty"])
def test_a_damaged_archive_never_fails_a_start(
    tmp_path: Path, classpath: str, damage: str
) -> None:
    folder = tmp_path / "cache"
    archive = _written(folder, classpath)
    data = archive.read_bytes()
    archive.unlink()
    if damage == "truncated":
        archive.write_bytes(data[: len(data) // 2])
    elif damage == "zeroed":  # whole and with its header, but regions overwritten
        archive.write_bytes(data[:8192] + bytes(len(data) - 8192))
    elif damage == "garbage":
        archive.write_bytes(os.urandom(len(data)))
    else:
        archive.write_bytes(b"")
    with EmbeddedZooKeeper(classpath=classpath, class_archive=folder) as zookeeper:
        assert _serves(zookeeper)
    # Written anew by the start that could not use it, or by the next one.
    with EmbeddedZooKeeper(classpath=classpath, class_archive=folder):
        pass
    assert class_archive.usable(archive)


def test_an_archive_that_crashes_the_jvm_is_dropped(
    tmp_path: Path, classpath: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    archive = _written(folder, classpath)
    data = archive.read_bytes()
    archive.unlink()
    archive.write_bytes(data[: len(data) // 2])  # JDK 17 dies of SIGBUS mapping this
    # As if the check before use could not tell (another JDK's header layout).
    monkeypatch.setattr(class_archive, "usable", lambda path: True)
    with EmbeddedZooKeeper(classpath=classpath, class_archive=folder) as zookeeper:
        assert _serves(zookeeper)
    assert not archive.exists()


def test_a_folder_that_cannot_take_an_archive(
    tmp_path: Path, classpath: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file where the folder should be: no archive, a start as without one.
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    with EmbeddedZooKeeper(classpath=classpath, class_archive=blocked) as zookeeper:
        assert _serves(zookeeper)
    # A read-only folder (as root, permissions do not stop writes: the check is stubbed).
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    real_access = os.access
    monkeypatch.setattr(
        class_archive.os,
        "access",
        lambda path, mode: False if Path(path) == folder else real_access(path, mode),
    )
    try:
        with EmbeddedZooKeeper(classpath=classpath, class_archive=folder) as zookeeper:
            assert _serves(zookeeper)
        assert _archives(folder) == []
    finally:
        folder.chmod(0o755)


def test_a_read_only_folder_with_an_archive_still_offers_it(
    tmp_path: Path, classpath: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    archive = _written(folder, classpath)
    folder.chmod(0o555)
    real_access = os.access
    monkeypatch.setattr(
        class_archive.os,
        "access",
        lambda path, mode: False if Path(path) == folder else real_access(path, mode),
    )
    try:
        with EmbeddedZooKeeper(classpath=classpath, class_archive=folder) as zookeeper:
            assert _maps(zookeeper.pid, archive)
    finally:
        folder.chmod(0o755)


def test_stop_ends_a_start_in_the_background(tmp_path: Path, classpath: str) -> None:
    zookeeper = EmbeddedZooKeeper(classpath=classpath, class_archive=False)
    zookeeper.start_soon()
    zookeeper.stop()
    with pytest.raises(ZooKeeperStartError):
        zookeeper.start()
    assert not zookeeper.running
    # And one waited for is the server itself.
    zookeeper.start_soon()
    try:
        assert zookeeper.start() is zookeeper and _serves(zookeeper)
    finally:
        zookeeper.stop()
