"""The files a standalone ZooKeeper server is started with, written into its data directory:
`zoo.cfg` (loopback only, no admin server, only the four-letter words zkbroker speaks), the JAAS
file of its SASL DIGEST-MD5 users, and the log4j and logback configurations that send its log to
`zookeeper.log` whichever SLF4J binding is on the classpath.

The four-letter-word whitelist follows docs/kafka-behaviour.md §19 (ZooKeeper 3.5+'s
`4lw.commands.whitelist`).

Not here: the JVM's command line (`zkbroker.broker.zookeeper.jvm_launch`), ensembles, TLS,
Kerberos, durability against power loss (`forceSync=no`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: The one address the embedded server listens on.
LOOPBACK = "127.0.0.1"

ZOO_CFG_NAME = "zoo.cfg"
LOG4J_CONFIG_NAME = "log4j.properties"
LOGBACK_CONFIG_NAME = "logback.xml"
JAAS_CONFIG_NAME = "jaas.conf"
LOG_FILE_NAME = "zookeeper.log"
# The JVM's own stdout/stderr (crash messages, "could not find main class",
# SLF4J binding warnings) are not logging-framework output, so they get a file
# of their own; both files are quoted when a start fails.
STDOUT_FILE_NAME = "zookeeper.out"

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
        "# Written by zkbroker (zkbroker.broker.zookeeper) for a throw-away ZooKeeper.",
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


@dataclass(frozen=True)
class ServerFiles:
    """The files of one server start, in its data directory (`jaas_config`: with SASL only)."""

    config: Path
    log4j_config: Path
    logback_config: Path
    log_file: Path
    out_file: Path
    jaas_config: Path | None


def write_server_files(
    data_dir: Path, port: int, sasl_users: Mapping[str, str] | None
) -> ServerFiles:
    """Write the configuration of a server on `port` into `data_dir` (with `sasl_users`, a
    server that authenticates those SASL users); the logs' paths come with it."""
    files = ServerFiles(
        config=data_dir / ZOO_CFG_NAME,
        log4j_config=data_dir / LOG4J_CONFIG_NAME,
        logback_config=data_dir / LOGBACK_CONFIG_NAME,
        log_file=data_dir / LOG_FILE_NAME,
        out_file=data_dir / STDOUT_FILE_NAME,
        jaas_config=None if sasl_users is None else data_dir / JAAS_CONFIG_NAME,
    )
    files.config.write_text(
        render_zoo_cfg(port=port, data_dir=data_dir, sasl=sasl_users is not None),
        encoding="utf-8",
    )
    if files.jaas_config is not None and sasl_users is not None:
        # It holds the password, and a data dir given to us outlives the server.
        files.jaas_config.touch(mode=0o600)
        files.jaas_config.chmod(0o600)
        files.jaas_config.write_text(render_server_jaas(sasl_users), encoding="utf-8")
    files.log4j_config.write_text(render_log4j_properties(files.log_file), encoding="utf-8")
    files.logback_config.write_text(render_logback_xml(files.log_file), encoding="utf-8")
    return files
