"""A JVM's class-data archive (dynamic AppCDS, JEP 350), kept between runs.

A JVM started without one writes the classes it loaded at exit (`-XX:ArchiveClassesAtExit`)
under a name of its own; `publish` renames the file into place only after a good run, so
concurrent first runs never share a file and a half-written one is never used. Later JVMs map
it (`-XX:SharedArchiveFile`). One archive per JVM build, Java release and caller's label and
classpath (a digest in the name), in `cache_folder()` or the folder `ZKBROKER_CLASS_ARCHIVE`
names (`off`: none). Used by the embedded ZooKeeper and the report's Spark.

Not here: when a JVM uses one (`zkbroker.broker.zookeeper.jvm_launch`,
`zkbroker.broker.report.session`).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import struct
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkbroker.broker.log import get_logger

log = get_logger(__name__)

ENV = "ZKBROKER_CLASS_ARCHIVE"
OFF = "off"
# Dynamic archives (ArchiveClassesAtExit) came with JDK 13.
MIN_JAVA = 13
# How long the JVM may take to exit and write the archive.
EXIT_TIMEOUT_S = 120.0
# The JVM's own messages about the archive (classes it leaves out, an archive it cannot
# use) would go to the program's output; they change nothing it does.
QUIET_OPTIONS = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
QUIET = " ".join(QUIET_OPTIONS)
# HotSpot's CDS_DYNAMIC_ARCHIVE_MAGIC, the first four bytes of a dynamic archive.
DYNAMIC_MAGIC = 0xF00BABA8
# JDK 17 (header version 11) maps 7 regions described right after magic, crc and version;
# a file shorter than its regions makes that JVM die of SIGBUS instead of ignoring it.
_REGIONS_BY_VERSION = {11: 7}
_HEADER = struct.Struct("=IiIi")
_REGION = struct.Struct("=6i6Q")

_partial_names = itertools.count()


@dataclass(frozen=True, slots=True)
class ArchivePlan:
    """What one JVM is started with, and what to publish when it exits."""

    final: Path
    writing: Path | None  # None: the archive exists and is used
    # Prefix of the log events (`<event>.written`, ...).
    event: str = field(default="class_archive", compare=False)
    # Failures to keep an archive logged at debug rather than warning (nothing is lost).
    quiet: bool = field(default=False, compare=False)
    # Have the JVM check the archive's CRCs as it maps it: a damaged one is then ignored.
    verify: bool = field(default=False, compare=False)

    @property
    def java_args(self) -> tuple[str, ...]:
        if self.writing is None:
            check = ("-XX:+VerifySharedSpaces",) if self.verify else ()
            return (f"-XX:SharedArchiveFile={self.final}", *check, *QUIET_OPTIONS)
        return (f"-XX:ArchiveClassesAtExit={self.writing}", *QUIET_OPTIONS)

    @property
    def java_options(self) -> str:
        return " ".join(self.java_args)

    def _problem(self, event: str, **fields: Any) -> None:
        (log.debug if self.quiet else log.warning)(f"{self.event}.{event}", **fields)


def cache_folder() -> str:
    """zkbroker's cache folder: `$XDG_CACHE_HOME/zkbroker`, else `~/.cache/zkbroker`."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return os.path.join(cache, "zkbroker")


def default_folder() -> str | None:
    """The folder archives are kept in, or None when `ZKBROKER_CLASS_ARCHIVE=off`."""
    given = os.environ.get(ENV)
    if given is not None:
        return None if given.strip().lower() == OFF else given
    return cache_folder()


def java_home(java: str | os.PathLike[str] | None = None) -> Path | None:
    """The JDK whose `bin/java` is `java`; without it, the one a JVM started by name gets:
    JAVA_HOME, else the `java` on the PATH (PySpark's spark-submit picks the same one)."""
    if java is None:
        given = os.environ.get("JAVA_HOME")
        if given and os.access(os.path.join(given, "bin", "java"), os.X_OK):
            return Path(given).resolve()
        java = shutil.which("java")
        if java is None:
            return None
    return Path(java).resolve().parent.parent


def java_major(home: Path) -> int | None:
    """The JDK's feature release, from its `release` file (no JVM started to ask)."""
    try:
        text = (home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("JAVA_VERSION="):
            version = line.split("=", 1)[1].strip().strip('"')
            head = version.split(".")[0]
            if head == "1" and "." in version:  # 1.8.0_x
                head = version.split(".")[1]
            return int(head) if head.isdigit() else None
    return None


def file_stamps(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Path, size and mtime of each file: an archive named after them is not offered to a
    JVM whose jars changed since (the JVM would refuse it anyway)."""
    stamps = []
    for path in paths:
        try:
            stat = os.stat(path)
        except OSError:
            stamps.append(f"{path}:missing")
            continue
        stamps.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
    return stamps


def archive_name(label: str, home: Path, major: int, parts: Iterable[str]) -> str:
    """`<label>-java<major>-<digest>.jsa`, the digest of the JVM build and `parts` (the
    classpath), so an archive is only ever offered to a JVM that can map it."""
    digest = hashlib.sha256()
    digest.update(str(home).encode())
    for part in ("release", "lib/server/libjvm.so", "lib/modules"):
        path = home / part
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{part}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest.update("\n".join(parts).encode())
    return f"{label}-java{major}-{digest.hexdigest()[:16]}.jsa"


def usable(path: Path) -> bool:
    """Whether `path` looks like a whole dynamic archive: its magic, and for JDK 17's header
    the regions it promises within the file. The JVM checks the rest (and ignores what fails)."""
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(_HEADER.size + _REGION.size * max(_REGIONS_BY_VERSION.values()))
    except OSError:
        return False
    if len(head) < _HEADER.size:
        return False
    magic, _crc, version, _pad = _HEADER.unpack_from(head)
    if magic != DYNAMIC_MAGIC:
        return False
    regions = _REGIONS_BY_VERSION.get(version)
    if regions is None:
        return True
    if len(head) < _HEADER.size + _REGION.size * regions:
        return False
    for i in range(regions):
        fields = _REGION.unpack_from(head, _HEADER.size + _REGION.size * i)
        file_offset, used = fields[6], fields[8]
        if file_offset + used > size:
            return False
    return True


def plan(
    folder: str | os.PathLike[str] | None,
    label: str,
    parts: Iterable[str],
    *,
    java: str | os.PathLike[str] | None = None,
    event: str = "class_archive",
    quiet: bool = False,
    verify: bool = False,
) -> ArchivePlan | None:
    """The archive for a JVM about to start (`java_home(java)`'s): use the one kept, or write
    one; None when off (`folder` None), when the JDK cannot, or when the folder can neither
    offer nor take one. A kept file that is not a whole archive is deleted and written anew."""
    if folder is None:
        return None
    home = java_home(java)
    major = java_major(home) if home is not None else None
    if home is None or major is None or major < MIN_JAVA:
        return None
    base = Path(folder)
    final = base / archive_name(label, home, major, parts)
    using = ArchivePlan(final, None, event, quiet, verify)
    if final.is_file():
        if usable(final):
            return using
        discard(using, "not a whole archive")
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        using._problem("unusable_folder", folder=str(folder), error=str(e))
        return None
    if not os.access(base, os.W_OK | os.X_OK):
        using._problem("unusable_folder", folder=str(folder), error="not writable")
        return None
    writing = final.with_name(f"{final.name}.{os.getpid()}-{next(_partial_names)}.partial")
    return ArchivePlan(final, writing, event, quiet, verify)


def discard(archive: ArchivePlan, reason: str) -> None:
    """Delete the kept archive (the next run writes a new one)."""
    log.debug(f"{archive.event}.discarded", path=str(archive.final), reason=reason)
    try:
        archive.final.unlink(missing_ok=True)
    except OSError as e:
        archive._problem("not_discarded", path=str(archive.final), error=str(e))


def mapped_by(pid: int, archive: ArchivePlan) -> bool | None:
    """Whether process `pid` maps the kept archive (its JVM took it); None when unknown."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as maps:
            wanted = str(archive.final)
            return any(line.rstrip("\n").endswith(wanted) for line in maps)
    except OSError:
        return None


def publish(archive: ArchivePlan, ok: bool, **fields: Any) -> bool:
    """After the JVM writing `archive` exited: rename its file into place when `ok` and it is
    a whole archive, delete it otherwise. True when kept."""
    writing = archive.writing
    if writing is None:
        return False
    if ok and usable(writing):
        try:
            os.replace(writing, archive.final)
        except OSError as e:
            archive._problem("not_kept", error=str(e))
        else:
            log.info(
                f"{archive.event}.written",
                path=str(archive.final),
                mb=round(archive.final.stat().st_size / 1e6),
                **fields,
            )
            return True
    try:
        writing.unlink(missing_ok=True)
    except OSError as e:
        archive._problem("not_removed", path=str(writing), error=str(e))
    return False


def finish(archive: ArchivePlan, process: subprocess.Popen[bytes] | None, ok: bool) -> None:
    """After a run whose JVM exits when its stdin closes (Spark's gateway): let it exit (it
    writes the archive as it does) and `publish`."""
    if archive.writing is None:
        return
    started = time.perf_counter()
    if process is not None:
        try:
            if process.stdin is not None:
                process.stdin.close()
            process.wait(timeout=EXIT_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            archive._problem("jvm_did_not_exit", error=str(e))
            ok = False
    publish(archive, ok and process is not None, seconds=round(time.perf_counter() - started, 2))
