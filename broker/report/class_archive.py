"""A class-data sharing archive of the report JVM's classes, kept between runs.

A report run on a small machine spends seconds before any work: the JVM loads, verifies and
links some twenty thousand classes of Spark, Hadoop, Parquet and Jackson from their jars,
in the session's start and again whenever a query first needs a class. JDK 13 and later
can write the classes a run loaded to an archive when the JVM exits
(`-XX:ArchiveClassesAtExit`, JEP 350: dynamic application class-data sharing) and map it
into later JVMs (`-XX:SharedArchiveFile`): here the session was ready in 2.6 s instead of
4.4-5 s, and the job itself ran ~2 s faster at 1M lines.

How it is kept:
- one archive per JVM build, Spark release and Spark classpath (the JVM refuses an archive
  made by another build or with another classpath; the file name carries a digest of all
  three), in `$XDG_CACHE_HOME/zkbroker` (else `~/.cache/zkbroker`), or the folder
  `ZKBROKER_CLASS_ARCHIVE` names (`off`: no archive);
- a run that finds none asks its JVM to write one, to a name of its own; when the run
  succeeded, the JVM is stopped (the archive is written as it exits, ~3 s, ~190 MB) and
  the file renamed into place, so concurrent first runs never write the same file and a
  half-written archive is never used; a failed run's archive is deleted;
- a run that finds one maps it. An archive the JVM cannot use (a JDK updated in place) is
  ignored by the JVM, which then loads classes from the jars as without one.

Only when zkbroker starts the JVM itself: under spark-submit, or with a session of your
own, the JVM's options are not ours.

Deliberately not here: the session's other settings (`zkbroker.broker.report.session`). The JDK's
ahead-of-time cache (JEP 483, JDK 24+) would also keep profiles, but measured no faster
than this archive at 1M lines, on a JDK this project does not install.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from zkbroker.broker.log import get_logger

log = get_logger(__name__)

ENV = "ZKBROKER_CLASS_ARCHIVE"
OFF = "off"
# Dynamic archives (ArchiveClassesAtExit) came with JDK 13.
MIN_JAVA = 13
# How long the JVM may take to exit and write the archive.
EXIT_TIMEOUT_S = 120.0
# The JVM's own messages about the archive (classes it leaves out, an archive it cannot
# use) would go to the job's output; they change nothing the job does.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


@dataclass(frozen=True, slots=True)
class ArchivePlan:
    """What the JVM of one run is started with, and what to publish when it exits."""

    final: Path
    writing: Path | None  # None: the archive exists and is used

    @property
    def java_options(self) -> str:
        if self.writing is None:
            return f"-XX:SharedArchiveFile={self.final} {QUIET}"
        return f"-XX:ArchiveClassesAtExit={self.writing} {QUIET}"


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


def java_home() -> Path | None:
    """The JDK that will run Spark: JAVA_HOME, else the `java` on the PATH (PySpark's
    spark-submit picks the same one)."""
    given = os.environ.get("JAVA_HOME")
    if given and os.access(os.path.join(given, "bin", "java"), os.X_OK):
        return Path(given).resolve()
    found = shutil.which("java")
    return Path(found).resolve().parent.parent if found else None


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


def _spark_jars() -> tuple[str, list[str]]:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    names = sorted(p.name for p in jars.glob("*.jar")) if jars.is_dir() else []
    return pyspark.__version__, names


def archive_name(home: Path, major: int) -> str:
    """The archive's file name: Spark release, Java release and a digest of the JVM build and
    the classpath, so an archive is only ever offered to a JVM that can map it."""
    spark_version, jars = _spark_jars()
    digest = hashlib.sha256()
    digest.update(str(home).encode())
    for part in ("release", "lib/server/libjvm.so", "lib/modules"):
        path = home / part
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{part}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest.update("\n".join(jars).encode())
    return f"spark-{spark_version}-java{major}-{digest.hexdigest()[:16]}.jsa"


def plan(folder: str | None) -> ArchivePlan | None:
    """The archive for this run's JVM: use the one kept, or write one; None when off or
    when the JDK cannot."""
    if folder is None:
        return None
    home = java_home()
    major = java_major(home) if home is not None else None
    if home is None or major is None or major < MIN_JAVA:
        return None
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        log.warning("report.class_archive.unusable_folder", folder=folder, error=str(e))
        return None
    final = Path(folder) / archive_name(home, major)
    if final.is_file():
        return ArchivePlan(final, None)
    return ArchivePlan(final, final.with_name(f"{final.name}.{os.getpid()}.partial"))


def finish(archive: ArchivePlan, process: subprocess.Popen[bytes] | None, ok: bool) -> None:
    """After the run: let the JVM exit (it writes the archive as it does) and rename the
    archive into place when the run succeeded; delete it otherwise."""
    writing = archive.writing
    if writing is None:
        return
    started = time.perf_counter()
    if process is not None:
        try:
            if process.stdin is not None:
                process.stdin.close()  # Spark's gateway exits when its stdin closes
            process.wait(timeout=EXIT_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            log.warning("report.class_archive.jvm_did_not_exit", error=str(e))
            ok = False
    if ok and writing.is_file() and writing.stat().st_size > 0 and process is not None:
        try:
            os.replace(writing, archive.final)
        except OSError as e:
            log.warning("report.class_archive.not_kept", error=str(e))
        else:
            log.info(
                "report.class_archive.written",
                path=str(archive.final),
                mb=round(archive.final.stat().st_size / 1e6),
                seconds=round(time.perf_counter() - started, 2),
            )
            return
    writing.unlink(missing_ok=True)
