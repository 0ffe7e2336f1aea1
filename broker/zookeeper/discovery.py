"""Finding what runs the embedded ZooKeeper: `java` (`$JAVA_HOME`, else `PATH`) and a classpath
that starts a ZooKeeper server (`$ZOOKEEPER_HOME`'s binary distribution, else Debian's
`zookeeper` package with an SLF4J binding beside it).

When something is missing, one `ZooKeeperNotFoundError` names everything that was looked at and
how to install it.

Not here: installing Java or ZooKeeper, starting the JVM
(`zkbroker.broker.zookeeper.jvm_launch`), Windows.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from zkbroker.broker.log import get_logger
from zkbroker.broker.zookeeper.errors import ZooKeeperNotFoundError

log = get_logger(__name__)

DEFAULT_SYSTEM_JAR_DIRS: tuple[str, ...] = ("/usr/share/java",)

# Debian's zookeeper.jar manifest names slf4j-api but no SLF4J binding, so
# without one of these pairs ZooKeeper would log nothing at all. Debian 12's
# libzookeeper-java depends on the log4j 1.2 pair; logback is a fallback for
# distributions that package that instead. Only the first complete pair is
# used: two bindings on one classpath make SLF4J pick one arbitrarily.
_DEBIAN_LOG_BINDINGS: tuple[tuple[str, ...], ...] = (
    ("slf4j-log4j12.jar", "log4j-1.2.jar"),
    ("logback-classic.jar", "logback-core.jar"),
)

# "zookeeper-3.8.4.jar" is the server jar; "zookeeper-jute-3.8.4.jar",
# "zookeeper-prometheus-metrics-…" and friends are not, and neither are the
# source/javadoc/test jars some people unpack next to it.
_SERVER_JAR = re.compile(r"^zookeeper-\d+(\.\d+)+[\w.+-]*\.jar$")
_NOT_RUNNABLE_JAR = re.compile(r"-(sources|javadoc|tests)\.jar$")

_INSTALL_PACKAGE = (
    "install Debian's package with `sudo apt-get install -y zookeeper` (it brings Java)"
)


def _is_server_jar(jar: Path) -> bool:
    return bool(_SERVER_JAR.match(jar.name)) and not _NOT_RUNNABLE_JAR.search(jar.name)


def _distribution_jars(home: Path) -> list[Path]:
    # 3.5+ binary distributions keep every jar in lib/; 3.4 put the server jar
    # at the top level next to lib/. Accept both rather than guess the version.
    top = sorted(home.glob("zookeeper-*.jar"))
    lib = sorted((home / "lib").glob("*.jar"))
    jars = [jar for jar in top + lib if not _NOT_RUNNABLE_JAR.search(jar.name)]
    return jars if any(_is_server_jar(jar) for jar in jars) else []


def _debian_jars(jar_dir: Path) -> list[Path]:
    server = jar_dir / "zookeeper.jar"
    if not server.is_file():
        return []
    jars = [server]
    for binding in _DEBIAN_LOG_BINDINGS:
        candidates = [jar_dir / name for name in binding]
        if all(jar.is_file() for jar in candidates):
            jars.extend(candidates)
            break
    return jars


def _locate_zookeeper(
    env: Mapping[str, str], system_jar_dirs: Sequence[str | os.PathLike[str]]
) -> tuple[str | None, list[str]]:
    """Return (classpath or None, what was looked at) without raising."""
    searched: list[str] = []
    home = env.get("ZOOKEEPER_HOME", "").strip()
    if home:
        jars = _distribution_jars(Path(home))
        if jars:
            return os.pathsep.join(str(jar) for jar in jars), searched
        searched.append(f"ZOOKEEPER_HOME={home} has no zookeeper-<version>.jar in it or its lib/")
        # A stale ZOOKEEPER_HOME should not hide a working system package, but
        # it must not be ignored silently either.
        log.warning("zookeeper.zookeeper_home_ignored", zookeeper_home=home)
    else:
        searched.append("ZOOKEEPER_HOME is not set")
    for jar_dir in system_jar_dirs:
        jars = _debian_jars(Path(jar_dir))
        if jars:
            return os.pathsep.join(str(jar) for jar in jars), searched
        searched.append(f"{Path(jar_dir) / 'zookeeper.jar'} does not exist")
    return None, searched


def _locate_java(env: Mapping[str, str]) -> tuple[str | None, list[str]]:
    """Return (path of java or None, what was looked at) without raising."""
    searched: list[str] = []
    java_home = env.get("JAVA_HOME", "").strip()
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate), searched
        searched.append(f"JAVA_HOME={java_home} has no executable bin/java")
        log.warning("zookeeper.java_home_ignored", java_home=java_home)
    else:
        searched.append("JAVA_HOME is not set")
    found = shutil.which("java", path=env.get("PATH", os.defpath))
    if found:
        return found, searched
    searched.append("no `java` on PATH")
    return None, searched


def _not_found(
    *, java_searched: list[str] | None, zookeeper_searched: list[str] | None
) -> ZooKeeperNotFoundError:
    """Build the one error for "something is missing"; None means "that one was found"."""
    if java_searched is not None and zookeeper_searched is not None:
        what = "Neither Java nor ZooKeeper was found"
    elif java_searched is not None:
        what = "Java was not found"
    else:
        what = "ZooKeeper was not found"
    searched = (java_searched or []) + (zookeeper_searched or [])
    remedies = [_INSTALL_PACKAGE]
    if zookeeper_searched is not None:
        remedies.append("set ZOOKEEPER_HOME to a ZooKeeper binary distribution")
    if java_searched is not None:
        remedies.append("set JAVA_HOME to a Java 11+ installation")
    return ZooKeeperNotFoundError(f"{what} ({'; '.join(searched)})", remedies)


def find_zookeeper_classpath(
    *,
    env: Mapping[str, str] | None = None,
    system_jar_dirs: Sequence[str | os.PathLike[str]] = DEFAULT_SYSTEM_JAR_DIRS,
) -> str:
    """Return a Java classpath that runs a ZooKeeper server.

    ``$ZOOKEEPER_HOME`` (a binary distribution: ``zookeeper-*.jar`` and
    ``lib/*.jar``) wins; otherwise the first of ``system_jar_dirs`` holding a
    Debian-style ``zookeeper.jar`` (whose manifest pulls in its dependencies)
    is used, together with an SLF4J logging binding from the same directory.

    Raises:
        ZooKeeperNotFoundError: nothing usable was found.
    """
    classpath, searched = _locate_zookeeper(os.environ if env is None else env, system_jar_dirs)
    if classpath is None:
        raise _not_found(java_searched=None, zookeeper_searched=searched)
    return classpath


def find_java(*, env: Mapping[str, str] | None = None) -> str:
    """Return the ``java`` executable: ``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``.

    Raises:
        ZooKeeperNotFoundError: no Java was found.
    """
    java, searched = _locate_java(os.environ if env is None else env)
    if java is None:
        raise _not_found(java_searched=searched, zookeeper_searched=None)
    return java


def resolve_runtime(
    java: str | None, classpath: str | None, system_jar_dirs: Sequence[str | os.PathLike[str]]
) -> tuple[str, str]:
    """`java` and `classpath` as given, each looked for (in ``os.environ``) when None.

    Raises:
        ZooKeeperNotFoundError: naming every missing piece at once.
    """
    java_searched: list[str] = []
    zookeeper_searched: list[str] = []
    if java is None:
        java, java_searched = _locate_java(os.environ)
    if classpath is None:
        classpath, zookeeper_searched = _locate_zookeeper(os.environ, system_jar_dirs)
    # Check both before raising: a brand-new machine lacks both, and one
    # message naming both beats fixing them one failed run at a time.
    if java is None or classpath is None:
        raise _not_found(
            java_searched=java_searched if java is None else None,
            zookeeper_searched=zookeeper_searched if classpath is None else None,
        )
    return java, classpath
