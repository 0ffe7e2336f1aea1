"""`zookeeper-server-start FILE`: one ZooKeeper server in the foreground, started from a ZooKeeper
configuration file (`zoo.cfg`, Confluent's `zookeeper.properties`) the way the script of that
name in Kafka's distribution starts it, so that this image stands in for Confluent's
cp-zookeeper / cp-kafka and Bitnami's zookeeper where testcontainers' Kafka modules call
`zookeeper-server-start zookeeper.properties &` (/tmp/research-conventions.md §1.5, §3).

It reads the file (java.util.Properties syntax, as ZooKeeper's `QuorumPeerConfig` does), creates
`dataDir` and `dataLogDir`, writes a log4j 1.x and a logback configuration that log at INFO to
the console with Confluent's pattern `[%d] %p %m (%c)%n` into a private folder under `$TMPDIR`,
and replaces this process with the JVM (`os.execv`): signals reach ZooKeeper itself and the
container's log shows ZooKeeper's own lines.

Environment: `JAVA` (else `$JAVA_HOME`, `PATH`), `$ZOOKEEPER_HOME` / Debian's jars
(`zkbroker.broker.zookeeper.discovery`); the heap from `ZOOKEEPER_HEAP`, else the `-Xmx` of
`KAFKA_HEAP_OPTS`, else the embedded server's; `KAFKA_OPTS` passed through (its JAAS file
included); `ZOOKEEPER_SERVER_JVMFLAGS`, else `SERVER_JVMFLAGS` (ZooKeeper's `zkServer.sh`
convention), appended.

Not here: `-daemon` (refused: run it with `&`), ensembles' `myid` files, the embedded server of
zkbroker's own processes (`zkbroker.broker.zookeeper.embedded`), Kafka's other `KAFKA_*_OPTS`
(`KAFKA_LOG4J_OPTS` included: the log configuration is always this module's), Windows.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from zkbroker.broker.jvm import properties
from zkbroker.broker.zookeeper.discovery import DEFAULT_SYSTEM_JAR_DIRS, resolve_runtime
from zkbroker.broker.zookeeper.errors import ZooKeeperNotFoundError
from zkbroker.broker.zookeeper.jvm_launch import DEFAULT_HEAP, build_java_command

PROGRAM: Final = "zookeeper-server-start"
USAGE: Final = f"usage: {PROGRAM} zookeeper.properties"
#: Exit status of a refused command line, configuration file or environment variable.
EXIT_USAGE: Final = 2
#: Exit status when Java or ZooKeeper cannot be found or started.
EXIT_RUNTIME: Final = 1

#: Confluent's log4j pattern (its images' log4j.properties templates).
CONSOLE_PATTERN: Final = "[%d] %p %m (%c)%n"
DIR_MODE: Final = 0o750
LOG4J_CONFIG_NAME: Final = "log4j.properties"
LOGBACK_CONFIG_NAME: Final = "logback.xml"
_JAAS_PROPERTY: Final = "-Djava.security.auth.login.config="
# ZooKeeper's admin server (Jetty) takes port 8080 by default and ends the server when that
# port is taken. It stays off unless the file (`admin.enableServer=true`, which ZooKeeper turns
# into this very system property after the JVM started) or the JVM flags ask for it.
_ADMIN_SERVER_OFF: Final = "-Dzookeeper.admin.enableServer=false"
_HEAP_SIZE = re.compile(r"\d+[kKmMgGtT]?")


class StartError(Exception):
    """What the command refuses, and the status it exits with."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class ServerConfig:
    """What this command needs of a configuration file (ZooKeeper reads the rest itself)."""

    path: Path
    client_port: int
    data_dir: Path
    data_log_dir: Path | None


@dataclass(frozen=True)
class Runtime:
    """What the JVM runs with: `java`, the classpath, and the two console log configurations."""

    java: str
    classpath: str
    log4j_config: Path
    logback_config: Path


# -- the configuration file (java.util.Properties, as ZooKeeper loads it) -------------------


def parse_properties(text: str) -> dict[str, str]:
    """The entries of a java.util.Properties text, keys and values trimmed as ZooKeeper trims
    them; a later duplicate wins.

    Raises:
        StartError: a malformed ``\\uxxxx`` escape.
    """
    try:
        entries = properties.parse_properties(text)
    except properties.PropertiesError as exc:
        raise StartError(str(exc)) from None
    return {key.strip(): value.strip() for key, value, _ in entries}


def read_config(path: Path) -> ServerConfig:
    """Read the file ZooKeeper is started with (ISO-8859-1, as `Properties.load` reads bytes).

    Raises:
        StartError: the file is missing or unreadable, or sets no usable clientPort or no
        dataDir (ZooKeeper would refuse it later, with a stack trace).
    """
    try:
        text = path.read_bytes().decode("iso-8859-1")
    except FileNotFoundError:
        raise StartError(f"{path}: the configuration file does not exist") from None
    except OSError as exc:
        raise StartError(f"{path}: cannot read the configuration file: {exc.strerror}") from None
    entries = parse_properties(text)
    port_text = entries.get("clientPort", "")
    if not port_text:
        raise StartError(f"{path}: clientPort is not set")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise StartError(f"{path}: clientPort must be a port number (1-65535), not {port_text!r}")
    data_dir = entries.get("dataDir", "")
    if not data_dir:
        raise StartError(f"{path}: dataDir is not set")
    log_dir = entries.get("dataLogDir", "")
    return ServerConfig(path, int(port_text), Path(data_dir), Path(log_dir) if log_dir else None)


def ensure_dirs(config: ServerConfig) -> None:
    """Create `dataDir` and `dataLogDir` (mode 0750) when missing; both must be writable.

    Raises:
        StartError: one cannot be created, is not a directory, or is not writable.
    """
    for name, folder in (("dataDir", config.data_dir), ("dataLogDir", config.data_log_dir)):
        if folder is None:
            continue
        try:
            folder.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise StartError(f"{name} {folder}: cannot create it: {reason}") from None
        if not os.access(folder, os.W_OK | os.X_OK):
            raise StartError(f"{name} {folder}: not writable by this user")


# -- console logging ------------------------------------------------------------------------


def render_console_log4j_properties() -> str:
    """A log4j 1.x / reload4j configuration: INFO and above to stdout, Confluent's pattern."""
    return "\n".join(
        [
            "log4j.rootLogger=INFO, stdout",
            "log4j.appender.stdout=org.apache.log4j.ConsoleAppender",
            "log4j.appender.stdout.Target=System.out",
            "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout",
            f"log4j.appender.stdout.layout.ConversionPattern={CONSOLE_PATTERN}",
            "",
        ]
    )


def render_console_logback_xml() -> str:
    """A logback configuration (ZooKeeper 3.8+ distributions): the same console output; its
    `%d` defaults to log4j's ISO8601 format, its `%p`, `%m`, `%c` are log4j's words."""
    return (
        "<configuration>\n"
        '  <appender name="stdout" class="ch.qos.logback.core.ConsoleAppender">\n'
        "    <target>System.out</target>\n"
        "    <encoder>\n"
        f"      <pattern>{CONSOLE_PATTERN}</pattern>\n"
        "    </encoder>\n"
        "  </appender>\n"
        '  <root level="INFO">\n'
        '    <appender-ref ref="stdout"/>\n'
        "  </root>\n"
        "</configuration>\n"
    )


def write_console_logging(folder: Path) -> tuple[Path, Path]:
    """Write both console log configurations into `folder`: (log4j file, logback file)."""
    log4j, logback = folder / LOG4J_CONFIG_NAME, folder / LOGBACK_CONFIG_NAME
    log4j.write_text(render_console_log4j_properties(), encoding="utf-8")
    logback.write_text(render_console_logback_xml(), encoding="utf-8")
    return log4j, logback


# -- the command ----------------------------------------------------------------------------


def find_java_and_classpath(
    environ: Mapping[str, str],
    system_jar_dirs: Sequence[str | os.PathLike[str]] = DEFAULT_SYSTEM_JAR_DIRS,
) -> tuple[str, str]:
    """`java` (`$JAVA`, looked up on `PATH` when a bare name, else discovery's) and the
    ZooKeeper classpath (discovery's).

    Raises:
        StartError: (EXIT_RUNTIME) `$JAVA` names no program, or Java or ZooKeeper is missing.
    """
    java = environ.get("JAVA", "").strip() or None
    if java is not None and os.sep not in java:
        found = shutil.which(java, path=environ.get("PATH", os.defpath))
        if found is None:
            raise StartError(f"JAVA={java}: no such program on PATH", EXIT_RUNTIME)
        java = found
    try:
        return resolve_runtime(java, None, system_jar_dirs)
    except ZooKeeperNotFoundError as exc:
        raise StartError(str(exc), EXIT_RUNTIME) from None


def _split(environ: Mapping[str, str], name: str) -> list[str]:
    try:
        return shlex.split(environ.get(name, ""))
    except ValueError as exc:  # an unbalanced quote
        raise StartError(f"{name}: {exc}") from None


def heap_for(environ: Mapping[str, str]) -> str:
    """The JVM's maximum heap (what follows `-Xmx`): `ZOOKEEPER_HEAP` (`512m`, `1g`, `-Xmx512m`;
    a bare number is megabytes, as `zkEnv.sh`'s `ZK_SERVER_HEAP`), else the last `-Xmx` of
    `KAFKA_HEAP_OPTS`, else the embedded server's default.

    Raises:
        StartError: `ZOOKEEPER_HEAP` is not a size.
    """
    given = environ.get("ZOOKEEPER_HEAP", "").strip()
    if given:
        size = given.removeprefix("-Xmx")
        if not _HEAP_SIZE.fullmatch(size):
            raise StartError(f"ZOOKEEPER_HEAP={given}: not a heap size such as 512m or 1g")
        return f"{size}m" if size.isdigit() else size
    maximums = [arg[4:] for arg in _split(environ, "KAFKA_HEAP_OPTS") if arg.startswith("-Xmx")]
    return maximums[-1] if maximums and maximums[-1] else DEFAULT_HEAP


def jvm_options_for(environ: Mapping[str, str]) -> tuple[str | None, list[str]]:
    """(the JAAS file of `KAFKA_OPTS` or None, the other JVM options): `KAFKA_OPTS` without
    its JAAS option, then `ZOOKEEPER_SERVER_JVMFLAGS` (else `SERVER_JVMFLAGS`), which come
    last so that they win over the admin server's default."""
    jaas: str | None = None
    options = [_ADMIN_SERVER_OFF]
    for arg in _split(environ, "KAFKA_OPTS"):
        if arg.startswith(_JAAS_PROPERTY) and len(arg) > len(_JAAS_PROPERTY):
            jaas = arg.removeprefix(_JAAS_PROPERTY)  # the last one wins, as in Java
        else:
            options.append(arg)
    own = "ZOOKEEPER_SERVER_JVMFLAGS"
    options += _split(environ, own if environ.get(own, "").strip() else "SERVER_JVMFLAGS")
    return jaas, options


def command_for(
    config_file: str | os.PathLike[str], *, environ: Mapping[str, str], runtime: Runtime
) -> list[str]:
    """The argv of the JVM that runs `QuorumPeerMain` with `config_file` (as given: the JVM
    keeps this process's working directory), configured by `environ` (see the module).

    Raises:
        StartError: an environment variable that cannot be used.
    """
    jaas, options = jvm_options_for(environ)
    return build_java_command(
        java=runtime.java,
        classpath=runtime.classpath,
        config_file=config_file,
        log4j_config=runtime.log4j_config,
        logback_config=runtime.logback_config,
        heap=heap_for(environ),
        jaas_config=jaas,
        jvm_options=options,
    )


# -- the program ----------------------------------------------------------------------------


def config_path_from(argv: Sequence[str]) -> Path | None:
    """The configuration file of the command line (without the program's name); None: the
    usage was asked for.

    Raises:
        StartError: `-daemon`, another option, or not exactly one file.
    """
    if any(arg in ("-h", "--help") for arg in argv):
        return None
    if argv and argv[0] == "-daemon":
        raise StartError(
            "-daemon is not supported: the server runs in the foreground "
            f"(start it in the background with `{PROGRAM} FILE &`)"
        )
    options = [arg for arg in argv if arg.startswith("-") and arg != "-"]
    if options:
        raise StartError(f"unknown option {options[0]}\n{USAGE}")
    if len(argv) != 1:
        raise StartError(USAGE)
    return Path(argv[0])


def _prepare(argv: Sequence[str], environ: Mapping[str, str]) -> tuple[list[str], Path] | None:
    """Everything before the exec: the JVM's argv and the private folder of its log
    configurations; None for the usage. On failure that folder is removed again."""
    path = config_path_from(argv)
    if path is None:
        return None
    config = read_config(path)
    ensure_dirs(config)
    java, classpath = find_java_and_classpath(environ)
    try:
        folder = Path(tempfile.mkdtemp(prefix=f"{PROGRAM}-"))
    except OSError as exc:
        raise StartError(f"cannot create a folder in {tempfile.gettempdir()}: {exc}") from None
    try:
        log4j, logback = write_console_logging(folder)
        runtime = Runtime(java, classpath, log4j, logback)
        return command_for(path, environ=environ, runtime=runtime), folder
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def main(argv: Sequence[str] | None = None) -> int:
    """Run `zookeeper-server-start` with `argv` (default: ``sys.argv[1:]``): replaces this
    process with ZooKeeper's JVM, so it returns only for `--help` (0) or an error (the status,
    the message on stderr)."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        prepared = _prepare(args, os.environ)
    except StartError as exc:
        print(f"{PROGRAM}: {exc}", file=sys.stderr)
        return exc.exit_code
    if prepared is None:
        print(USAGE)
        return 0
    command, folder = prepared
    # Whatever Python buffered would be lost with its process image. The log configurations'
    # folder stays: the JVM reads it after the exec, and nothing of this process is left then.
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(command[0], command)
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        print(f"{PROGRAM}: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        return EXIT_RUNTIME
    raise AssertionError("unreachable: execv returned")  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
