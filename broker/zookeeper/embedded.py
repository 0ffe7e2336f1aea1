"""Run a throw-away, single-node ZooKeeper server as a child JVM process.

For tests, demos and `zkbroker` started without `--zookeeper`: finds ZooKeeper
(`$ZOOKEEPER_HOME`, else Debian's package) and `java` (`$JAVA_HOME`, else `PATH`), writes a
`zoo.cfg`, starts `QuorumPeerMain` on a free loopback port, waits until it serves, and stops it
(also at exit). A watchdog ends the JVM when this process dies, even by SIGKILL; a given
`data_dir` is kept across stops and locked (`ZooKeeperDataDirInUseError` for a second server).
Only the four-letter words `ruok`, `srvr` and `conf` are allowed (docs/kafka-behaviour.md §19).

Not here: ensembles, TLS, Kerberos (SASL only as DIGEST-MD5 for `sasl_users`), durability
against power loss (`forceSync=no`), installing ZooKeeper or Java (`ZooKeeperNotFoundError`
says how), the client protocol (kazoo, `zkbroker.zk_layout.store.client`), Windows.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import fcntl
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, Self

from zkbroker.broker.asyncutil import AsyncStartStop, StartStop
from zkbroker.broker.jvm import class_archive
from zkbroker.broker.jvm.class_archive import ArchivePlan
from zkbroker.broker.log import get_logger

__all__ = [
    "DEFAULT_START_TIMEOUT",
    "DEFAULT_SYSTEM_JAR_DIRS",
    "FOUR_LETTER_WORDS",
    "LOOPBACK",
    "QUORUM_PEER_MAIN",
    "EmbeddedZooKeeper",
    "ZooKeeperDataDirInUseError",
    "ZooKeeperError",
    "ZooKeeperNotFoundError",
    "ZooKeeperStartError",
    "build_java_command",
    "find_java",
    "find_zookeeper_classpath",
    "is_serving",
    "pick_free_port",
    "render_log4j_properties",
    "render_logback_xml",
    "render_server_jaas",
    "render_zoo_cfg",
    "send_four_letter_word",
]

log = get_logger(__name__)

LOOPBACK = "127.0.0.1"
DEFAULT_SYSTEM_JAR_DIRS: tuple[str, ...] = ("/usr/share/java",)
DEFAULT_START_TIMEOUT = 30.0
DEFAULT_HEAP = "256m"
# How often a starting server is asked whether it serves: a refused connection costs
# microseconds, and a JVM with its class archive serves within a few hundred milliseconds.
READY_POLL_S = 0.005
#: The label of the server's class-data archive (`zkbroker.broker.jvm.class_archive`).
CLASS_ARCHIVE_LABEL: Final = "zookeeper"
STOP_GRACE_SECONDS = 10.0
QUORUM_PEER_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

ZOO_CFG_NAME = "zoo.cfg"
LOG4J_CONFIG_NAME = "log4j.properties"
LOGBACK_CONFIG_NAME = "logback.xml"
JAAS_CONFIG_NAME = "jaas.conf"
LOG_FILE_NAME = "zookeeper.log"
#: Held (flock) by whoever runs a server on a data dir: this process, the JVM, its watchdog.
DATA_DIR_LOCK_NAME: Final = ".zkbroker-zookeeper.lock"
#: How long `start` waits for a data dir lock whose recorded owner is gone: the JVM of a
#: killed process still shutting down (its watchdog SIGKILLs it after WATCHDOG_GRACE_S).
DATA_DIR_LOCK_WAIT_S: Final = 15.0
WATCHDOG_GRACE_S: Final = 10
# The JVM's own stdout/stderr (crash messages, "could not find main class",
# SLF4J binding warnings) are not logging-framework output, so they get a file
# of their own; both files are quoted when a start fails.
STDOUT_FILE_NAME = "zookeeper.out"

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
_USE_RUNNING = "pass --zookeeper host:port to use a running ensemble"


class ZooKeeperError(RuntimeError):
    """Base class of this module's errors."""


class ZooKeeperNotFoundError(ZooKeeperError):
    """Java or a ZooKeeper installation is missing; the message says how to get it.

    `what` says what is missing and where it was looked for; `remedies` are the ways to
    install it; `elsewhere` the way to use a ZooKeeper that runs already, which differs
    between the command line (the default) and a test session (the pytest plugin)."""

    def __init__(self, what: str, remedies: Sequence[str], *, elsewhere: str = _USE_RUNNING):
        self.what, self.remedies = what, tuple(remedies)
        super().__init__(f"{what}: {', or '.join((*self.remedies, elsewhere))}.")


class ZooKeeperStartError(ZooKeeperError):
    """The JVM was launched but ZooKeeper did not come up; the message quotes its logs."""


class ZooKeeperDataDirInUseError(ZooKeeperError):
    """Another server (of this or another process) uses the data directory."""


# --------------------------------------------------------------------------
# Discovery
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# Configuration rendering (pure)
# --------------------------------------------------------------------------


#: The four-letter words zkbroker sends to the embedded server, the only ones it allows.
FOUR_LETTER_WORDS: Final = ("ruok", "srvr", "conf")


def _properties_value(value: str) -> str:
    # zoo.cfg and log4j.properties are java.util.Properties files, where a
    # backslash is an escape character and a newline ends the value.
    if "\n" in value or "\r" in value:
        raise ValueError(f"a line break cannot be written into a properties file: {value!r}")
    return value.replace("\\", "\\\\")


def render_zoo_cfg(
    *,
    port: int,
    data_dir: str | os.PathLike[str],
    host: str = LOOPBACK,
    tick_time_ms: int = 2000,
    sasl: bool = False,
) -> str:
    """Render the ``zoo.cfg`` of a standalone, test-friendly ZooKeeper (with ``sasl``, one
    that authenticates SASL clients, DIGEST-MD5 against its JAAS ``Server`` section)."""
    lines = [
        "# Written by zkbroker (broker/zookeeper.py) for a throw-away ZooKeeper.",
        f"tickTime={tick_time_ms}",
        f"dataDir={_properties_value(os.fspath(data_dir))}",
        f"clientPort={port}",
        # Loopback only: this server has no authentication whatsoever.
        f"clientPortAddress={host}",
        # The default of 60 connections per client IP is hit quickly when a
        # test session runs many brokers and kazoo clients from 127.0.0.1.
        "maxClientCnxns=0",
        # The admin server would grab port 8080 and collide between instances.
        "admin.enableServer=false",
        # Only the four-letter words this module speaks (readiness: ruok + srvr; which data
        # dir a server on a reused port serves: conf). ZooKeeper's own default whitelist is
        # srvr only; `*` would also hand anyone on the host `dump` (every session and its
        # ephemerals), `wchp` and `envi` (the JVM's environment).
        f"4lw.commands.whitelist={','.join(FOUR_LETTER_WORDS)}",
        # Short-lived data: purging snapshots would only cost time.
        "autopurge.purgeInterval=0",
        # Tests create and delete thousands of znodes; fsync on every
        # transaction makes that slow and buys nothing for throw-away data.
        "forceSync=no",
    ]
    if sasl:
        lines.append(f"authProvider.1={SASL_AUTH_PROVIDER}")
    return "\n".join(lines) + "\n"


#: ZooKeeper's SASL authentication provider: a SASL client's identity is ``sasl:<user>``.
SASL_AUTH_PROVIDER: Final = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"


def render_server_jaas(users: Mapping[str, str]) -> str:
    """A JAAS file whose ``Server`` section lets ``users`` log in with SASL DIGEST-MD5
    (ZooKeeper's DigestLoginModule, ``user_<name>="password"``)."""

    def quoted(text: str) -> str:
        if "\n" in text or "\r" in text:
            raise ValueError("a line break cannot be written into a JAAS file")
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    for user in users:
        if not user.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"a ZooKeeper SASL user name is letters, digits, - and _: {user!r}")
    options = "".join(f"\n    user_{u}={quoted(p)}" for u, p in users.items())
    return (
        f"Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required{options};\n}};\n"
    )


def render_log4j_properties(log_file: str | os.PathLike[str]) -> str:
    """Render a log4j 1.x / reload4j configuration that writes only to ``log_file``."""
    return "\n".join(
        [
            "log4j.rootLogger=INFO, FILE",
            "log4j.appender.FILE=org.apache.log4j.FileAppender",
            f"log4j.appender.FILE.File={_properties_value(os.fspath(log_file))}",
            "log4j.appender.FILE.Append=true",
            "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n",
            "",
        ]
    )


def render_logback_xml(log_file: str | os.PathLike[str]) -> str:
    """Render a logback configuration (ZooKeeper 3.8+) that writes only to ``log_file``."""
    # Imported here: it pulls in urllib and http.client, a cost on the way to the JVM's start.
    from xml.sax.saxutils import escape as xml_escape

    path = xml_escape(os.fspath(log_file))
    return (
        "<configuration>\n"
        '  <appender name="FILE" class="ch.qos.logback.core.FileAppender">\n'
        f"    <file>{path}</file>\n"
        "    <append>true</append>\n"
        "    <encoder>\n"
        "      <pattern>%d{ISO8601} %-5level [%thread:%logger{0}] - %msg%n</pattern>\n"
        "    </encoder>\n"
        "  </appender>\n"
        '  <root level="INFO">\n'
        '    <appender-ref ref="FILE"/>\n'
        "  </root>\n"
        "</configuration>\n"
    )


def build_java_command(
    *,
    java: str,
    classpath: str,
    config_file: str | os.PathLike[str],
    log4j_config: str | os.PathLike[str],
    logback_config: str | os.PathLike[str],
    heap: str = DEFAULT_HEAP,
    max_buffer_bytes: int | None = None,
    jaas_config: str | os.PathLike[str] | None = None,
    jvm_options: Sequence[str] = (),
) -> list[str]:
    """Return the argv that starts ZooKeeper with ``config_file`` (and, when given, a
    ``jute.maxbuffer`` other than ZooKeeper's 0xfffff, a JAAS file for SASL, and more JVM
    options such as the class-data archive's)."""
    # The server refuses (drops the connection of) any request packet larger than this.
    jute = [] if max_buffer_bytes is None else [f"-Djute.maxbuffer={max_buffer_bytes}"]
    jaas = (
        []
        if jaas_config is None
        else [f"-Djava.security.auth.login.config={Path(jaas_config).absolute()}"]
    )
    return [
        java,
        f"-Xmx{heap}",
        *jute,
        *jaas,
        # One short-lived server per test session (or several): fewer GC
        # threads and C1-only JIT start faster and use less memory.
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        # Otherwise a SIGKILLed JVM leaves /tmp/hsperfdata_<user>/<pid> behind.
        "-XX:-UsePerfData",
        *jvm_options,
        "-Djava.awt.headless=true",
        # Whichever SLF4J binding is on the classpath finds its own file, and
        # neither falls back to a console appender on our stdout.
        f"-Dlog4j.configuration={Path(log4j_config).absolute().as_uri()}",
        f"-Dlogback.configurationFile={Path(logback_config).absolute()}",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-cp",
        classpath,
        QUORUM_PEER_MAIN,
        os.fspath(config_file),
    ]


# --------------------------------------------------------------------------
# Network helpers
# --------------------------------------------------------------------------

_handed_out_ports: set[int] = set()
_ports_lock = threading.Lock()


def pick_free_port(host: str = LOOPBACK) -> int:
    """Return a TCP port on ``host`` that is free now and not handed out before by this process.

    The port is free only at the time of the call; :class:`EmbeddedZooKeeper`
    retries with another one if ZooKeeper then fails to bind it.
    """
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        # The kernel may offer the same port twice in a row; two instances
        # started back to back must not both get it.
        with _ports_lock:
            if port not in _handed_out_ports:
                _handed_out_ports.add(port)
                return port
    raise ZooKeeperError(f"could not find a free TCP port on {host}")


def send_four_letter_word(host: str, port: int, command: str, timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter-word command and return the whole answer.

    Raises:
        OSError: the server could not be reached or did not answer in time.
    """
    if len(command) != 4:
        raise ValueError(f"four-letter words have four letters, not {command!r}")
    chunks: list[bytes] = []
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(command.encode("ascii"))
        # ZooKeeper answers and closes the connection; EOF ends the answer.
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


def is_serving(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when the ZooKeeper at host:port answers ``ruok`` and serves requests.

    ``ruok`` alone is not enough: ZooKeeper answers ``imok`` as soon as its
    port is open, while ``srvr`` still says "not currently serving requests"
    until the database is loaded.
    """
    try:
        if send_four_letter_word(host, port, "ruok", timeout) != "imok":
            return False
        return "Mode: " in send_four_letter_word(host, port, "srvr", timeout)
    except OSError:
        return False


def _serves_data_dir(host: str, port: int, data_dir: Path) -> bool:
    # `conf` answers only once the server is serving, and its dataDir line
    # proves the answer comes from *our* JVM, not from another ZooKeeper that
    # grabbed the same port between pick_free_port() and our bind.
    try:
        answer = send_four_letter_word(host, port, "conf", timeout=1.0)
    except OSError:
        return False
    for line in answer.splitlines():
        if line.startswith("dataDir="):
            served = Path(line.removeprefix("dataDir="))
            return data_dir in (served, served.parent)
    return False


def _read_from(path: Path, offset: int) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _tail(text: str, max_lines: int = 40) -> str:
    lines = text.splitlines()[-max_lines:]
    return "\n".join(lines) if lines else "(empty)"


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


# --------------------------------------------------------------------------
# The JVM's lifetime: a watchdog on a pipe
# --------------------------------------------------------------------------

# Run as `sh -c SCRIPT zookeeper-watchdog JAVA ARGS...` with the pipe's read end as stdin.
# The pipe moves to fd P and stdin becomes /dev/null; the subshell (which stays in the
# JVM's process group and so keeps the pid $$ from being reused while it lives) ignores
# the group's SIGTERM from `stop`, blocks until EOF, then signals $$, the JVM that the
# shell became with `exec`, until it is gone or a zombie (an init that does not reap
# orphans must not keep the watchdog, and the data dir lock it holds, for the whole
# grace). A pipe rather than PR_SET_PDEATHSIG, which fires when the forking *thread* exits
# (`astart` forks from a worker thread); it also covers this process being SIGKILLed.
# P is a digit (dash allows only one-digit fds in redirections) that is none of the fds
# handed down (`pass_fds`): `exec P<&0` would close such an fd in the shell, so that neither
# the watchdog nor the JVM would hold it. In a fresh process the data dir's lock is the
# first file opened, fd 3.


def _watchdog_pipe_fd(pass_fds: Sequence[int]) -> int:
    """The fd the watchdog's pipe moves to: the lowest one-digit fd above stderr that is
    not handed down."""
    for fd in range(3, 10):
        if fd not in pass_fds:
            return fd
    raise ValueError(f"no one-digit fd is left for the watchdog's pipe: {sorted(pass_fds)}")


def _watchdog_script(pipe_fd: int) -> str:
    """The watchdog's shell script with its pipe on `pipe_fd` (3 to 9)."""
    if not 3 <= pipe_fd <= 9:
        raise ValueError(f"the watchdog's pipe needs a one-digit fd above 2, not {pipe_fd}")
    p = pipe_fd
    return f"""exec {p}<&0 </dev/null
(
  trap '' TERM INT HUP
  while read -r _ <&{p}; do :; done
  kill -TERM $$ 2>/dev/null || exit 0
  n=0
  while kill -0 $$ 2>/dev/null && [ $n -lt {WATCHDOG_GRACE_S * 10} ]; do
    {{ read -r stat </proc/$$/stat; }} 2>/dev/null && case $stat in *") Z "*) exit 0 ;; esac
    sleep 0.1
    n=$((n + 1))
  done
  kill -KILL $$ 2>/dev/null
) &
exec "$@" {p}<&-
"""


# Write ends of the watchdogs' pipes held by this process. A child made by os.fork()
# (multiprocessing) would keep them open, and the JVMs alive, until it exits: it closes
# its copies at once.
_lifelines: set[int] = set()


def _close_lifelines_in_child() -> None:
    # Not logged: this runs in a fork's child before it does anything else, and a copy that
    # cannot be closed keeps nothing alive that the parent's own close does not end.
    for fd in list(_lifelines):
        with contextlib.suppress(OSError):
            os.close(fd)
    _lifelines.clear()


os.register_at_fork(after_in_child=_close_lifelines_in_child)


def _spawn_with_watchdog(
    command: Sequence[str], *, out: int, cwd: Path, pass_fds: Sequence[int] = ()
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``command`` (the JVM) under the watchdog; return it and the pipe's write end,
    whose closing (by `_close_lifeline` or by this process's death) stops the JVM."""
    read_end, write_end = os.pipe()  # both close-on-exec (PEP 446)
    try:
        # Own session/process group: a Ctrl-C in the terminal reaches the whole
        # foreground group, and ZooKeeper must not die before the brokers that use it
        # have shut down; stop() signals it explicitly.
        process = subprocess.Popen(
            [
                "/bin/sh",
                "-c",
                _watchdog_script(_watchdog_pipe_fd(pass_fds)),
                "zookeeper-watchdog",
                *command,
            ],
            stdin=read_end,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    _lifelines.add(write_end)
    return process, write_end


def _close_lifeline(fd: int | None) -> None:
    """Close a watchdog's pipe (after the JVM was stopped: the watchdog then exits)."""
    if fd is None:
        return
    _lifelines.discard(fd)
    try:
        os.close(fd)
    except OSError as exc:  # EBADF: closed by someone else, a bug worth a line
        log.warning("zookeeper.lifeline_close_failed", fd=fd, error=repr(exc))


def _lock_data_dir(data_dir: Path, deadline_s: float = DATA_DIR_LOCK_WAIT_S) -> int:
    """Take the data dir's lock (an fd to keep open while a server runs on it).

    Refused at once when the recorded owner (a process id) is alive; when it is gone, the
    lock is still held by its JVM shutting down, so this waits for it up to ``deadline_s``.

    Raises:
        ZooKeeperDataDirInUseError: the lock stayed taken.
    """
    path = data_dir / DATA_DIR_LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + deadline_s
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                owner = _recorded_owner(path)
                alive = owner is not None and owner != os.getpid() and _pid_alive(owner)
                if alive or time.monotonic() > deadline:
                    who = f"process {owner}" if alive else "a ZooKeeper still shutting down"
                    raise ZooKeeperDataDirInUseError(
                        f"the ZooKeeper data directory {data_dir} is in use by {who}: one "
                        f"server per directory (with --log-dir, one `zkbroker run` with an "
                        f"embedded ZooKeeper per log dir). Stop it, or join its cluster with "
                        f"--zookeeper HOST:PORT (the `zookeeper=` line it printed)."
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _recorded_owner(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="ascii").strip() or "x")
    except (OSError, ValueError):
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --------------------------------------------------------------------------
# The launcher
# --------------------------------------------------------------------------

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


class _PortTaken(Exception):
    """Internal: the JVM exited because another process owns the port."""


class _ArchiveFailed(Exception):
    """Internal: the JVM exited at start while given a class-data archive."""


class _ExitedEarly(ZooKeeperStartError):
    """Internal: the JVM exited before it served."""


class _Aborted(ZooKeeperStartError):
    """`stop()` was called while the server was starting."""


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
        # ownership check in _serves_data_dir compares paths literally.
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
                raise _Aborted("stopped before it started")
            java, classpath = self._resolve_runtime()
            data_dir = self._make_data_dir()
            try:
                if not self._owns_data_dir:
                    self._lock_fd = _lock_data_dir(data_dir)
                self._archive = self._plan_archive(java, classpath)
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
                forced = _terminate_logged(process, self._port, self._data_dir)
                stopped = True
            finally:
                _close_lifeline(self._lifeline)
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

    def _resolve_runtime(self) -> tuple[str, str]:
        java: str | None = self._java
        classpath: str | None = self._classpath
        java_searched: list[str] = []
        zookeeper_searched: list[str] = []
        if java is None:
            java, java_searched = _locate_java(os.environ)
        if classpath is None:
            classpath, zookeeper_searched = _locate_zookeeper(os.environ, self._system_jar_dirs)
        # Check both before raising: a brand-new machine lacks both, and one
        # message naming both beats fixing them one failed run at a time.
        if java is None or classpath is None:
            raise _not_found(
                java_searched=java_searched if java is None else None,
                zookeeper_searched=zookeeper_searched if classpath is None else None,
            )
        return java, classpath

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
            except _PortTaken:
                log.warning("zookeeper.port_taken_retrying", port=port, attempt=attempt)
                attempt += 1
            except _ArchiveFailed:
                # The archive must never cost a start (a damaged one can crash the JVM
                # while it maps it): drop it and start without.
                self._drop_archive("the JVM exited at start with it")

    # -- the class-data archive -----------------------------------------------

    def _plan_archive(self, java: str, classpath: str) -> ArchivePlan | None:
        setting = self._class_archive
        if setting is False:
            return None
        folder = class_archive.default_folder() if setting is True else os.fspath(setting)
        try:
            return class_archive.plan(
                folder,
                CLASS_ARCHIVE_LABEL,
                class_archive.file_stamps(classpath.split(os.pathsep)),
                java=java,
                event="zookeeper.class_archive",
                quiet=True,
                # Checked as mapped (CRCs): a damaged archive is ignored, not trusted.
                verify=True,
            )
        except Exception as exc:  # only ever a shortcut: never a reason not to start
            log.debug("zookeeper.class_archive.unavailable", error=repr(exc))
            return None

    def _drop_archive(self, reason: str) -> None:
        archive, self._archive = self._archive, None
        if archive is None:
            return
        if archive.writing is None:
            class_archive.discard(archive, reason)
        else:
            class_archive.publish(archive, False)

    def _check_archive_mapped(self, pid: int) -> None:
        # The JVM ignores an archive it cannot use (another build, a jar changed since, a
        # CRC that fails): dropped, so that the next start writes a new one.
        archive = self._archive
        if (
            archive is not None
            and archive.writing is None
            and class_archive.mapped_by(pid, archive) is False
        ):
            self._drop_archive("the JVM did not map it")

    def _finish_archive(self, returncode: int | None) -> None:
        """After the JVM exited (`returncode`; None: killed, or never serving): keep the
        archive it wrote as it exited, if it exited as asked."""
        archive, self._archive = self._archive, None
        if archive is not None and archive.writing is not None:
            # SIGTERM makes the JVM run its shutdown hooks and exit with 128 + 15.
            ok = returncode in (0, 128 + signal.SIGTERM)
            class_archive.publish(archive, ok)

    def _launch(
        self, java: str, classpath: str, data_dir: Path, port: int, *, may_retry: bool
    ) -> None:
        config_file = data_dir / ZOO_CFG_NAME
        log4j_config = data_dir / LOG4J_CONFIG_NAME
        logback_config = data_dir / LOGBACK_CONFIG_NAME
        log_file = data_dir / LOG_FILE_NAME
        out_file = data_dir / STDOUT_FILE_NAME
        sasl = self._sasl_users is not None
        config_file.write_text(
            render_zoo_cfg(port=port, data_dir=data_dir, sasl=sasl), encoding="utf-8"
        )
        jaas_config = data_dir / JAAS_CONFIG_NAME if self._sasl_users is not None else None
        if jaas_config is not None and self._sasl_users is not None:
            # It holds the password, and a data dir given to us outlives the server.
            jaas_config.touch(mode=0o600)
            jaas_config.chmod(0o600)
            jaas_config.write_text(render_server_jaas(self._sasl_users), encoding="utf-8")
        log4j_config.write_text(render_log4j_properties(log_file), encoding="utf-8")
        logback_config.write_text(render_logback_xml(log_file), encoding="utf-8")
        command = build_java_command(
            java=java,
            classpath=classpath,
            config_file=config_file,
            log4j_config=log4j_config,
            logback_config=logback_config,
            heap=self._heap,
            max_buffer_bytes=self._max_buffer_bytes,
            jaas_config=jaas_config,
            jvm_options=self._archive.java_args if self._archive is not None else (),
        )
        # Quote only this attempt's log lines when it fails.
        log_offset, out_offset = _file_size(log_file), _file_size(out_file)
        log.info("zookeeper.starting", port=port, data_dir=str(data_dir), java=java)
        started_at = time.monotonic()
        with out_file.open("ab") as out:
            # The JVM and its watchdog inherit the data dir's lock: it is held until they
            # are gone, even when this process is killed first.
            process, lifeline = _spawn_with_watchdog(
                command,
                out=out.fileno(),
                cwd=data_dir,
                pass_fds=() if self._lock_fd is None else (self._lock_fd,),
            )
        self._process = process
        self._lifeline = lifeline
        self._port = port
        self._owner_pid = os.getpid()
        # Registered before the wait: an interpreter exit during a slow start
        # must not leave this JVM behind either.
        with _running_lock:
            _running.add(self)
        try:
            self._wait_until_serving(process, port, data_dir, started_at)
        except BaseException as exc:
            self._process = None
            with _running_lock:
                _running.discard(self)
            try:
                _terminate_logged(process, port, data_dir)
            finally:
                _close_lifeline(self._lifeline)
                self._lifeline = None
            if isinstance(exc, _Aborted):
                raise
            log_text = _read_from(log_file, log_offset)
            out_text = _read_from(out_file, out_offset)
            if (
                may_retry
                and isinstance(exc, ZooKeeperStartError)
                and _port_was_taken(log_text + out_text)
            ):
                raise _PortTaken() from None
            if isinstance(exc, _ExitedEarly) and self._archive is not None:
                raise _ArchiveFailed() from None
            if isinstance(exc, ZooKeeperStartError):
                log.error("zookeeper.start_failed", port=port, reason=str(exc))
                raise ZooKeeperStartError(
                    f"{exc}\ncommand: {shlex.join(command)}\n"
                    f"--- last lines of {log_file.name} ---\n{_tail(log_text)}\n"
                    f"--- last lines of {out_file.name} (JVM stdout/stderr) ---\n{_tail(out_text)}"
                ) from None
            raise
        self._check_archive_mapped(process.pid)
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

    def _wait_until_serving(
        self, process: subprocess.Popen[bytes], port: int, data_dir: Path, started_at: float
    ) -> None:
        deadline = started_at + self._start_timeout
        while True:
            returncode = process.poll()
            if returncode is not None:
                raise _ExitedEarly(
                    f"ZooKeeper's JVM (pid {process.pid}) exited with code {returncode} "
                    f"before serving on {LOOPBACK}:{port}"
                )
            if _serves_data_dir(LOOPBACK, port, data_dir):
                return
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(
                    f"ZooKeeper (pid {process.pid}) did not serve on {LOOPBACK}:{port} "
                    f"within {self._start_timeout:g} s"
                )
            # A stop() meanwhile ends the wait at once (`start_soon` nobody waited for).
            if self._abort.wait(READY_POLL_S):
                raise _Aborted("stopped while starting")


def _port_was_taken(log_text: str) -> bool:
    return "Address already in use" in log_text


def _terminate(process: subprocess.Popen[bytes]) -> bool:
    """SIGTERM the process group, SIGKILL it after a grace period, reap. True if killed."""
    if process.poll() is not None:
        return False
    # start_new_session=True made the JVM a group leader, so its pid is the pgid.
    _signal_group(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_GRACE_SECONDS)
        return False
    except subprocess.TimeoutExpired:
        log.warning("zookeeper.kill_after_grace", pid=process.pid, grace_s=STOP_GRACE_SECONDS)
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()
        return True


def _terminate_logged(
    process: subprocess.Popen[bytes], port: int | None, data_dir: Path | None
) -> bool:
    """`_terminate`, logging (``zookeeper.stop_failed``) what it raises before raising it:
    whoever stops several things may go on with the others and drop the exception
    (ClusterEngine.stop suppresses what `astop` raises)."""
    try:
        return _terminate(process)
    except Exception as exc:
        log.error(
            "zookeeper.stop_failed",
            pid=process.pid,
            port=port,
            data_dir=None if data_dir is None else str(data_dir),
            error=repr(exc),
        )
        raise


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    # ESRCH is no failure: the group ended between `poll` and the signal. Anything else
    # (EPERM) is raised, and `stop` logs it.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)
