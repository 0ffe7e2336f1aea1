"""This broker's one log directory, as DescribeLogDirs and AlterReplicaLogDirs name it
(docs/kafka-behaviour.md §15).

Kafka's broker lists `KafkaConfig.logDirs` (`log.dirs`, else `log.dir`, split on commas) and
names each by its absolute path (`ReplicaManager.describeLogDirs`, `LogManager.isLogDirOnline`).
Each zkbroker broker has exactly one log dir:

* with `--log-dir DIR`: its own directory's absolute path (DIR for a process of one broker,
  DIR/broker-<id> for several: `zkbroker.broker.storage.log_dirs_of`), which is also the
  broker's static `log.dirs` (set by the broker at start), and its volume's sizes from
  `statvfs`, as Java's `FileStore.getTotalSpace`/`getUsableSpace` read them;
* in memory: the first entry of the effective `log.dirs` (else `log.dir`, Kafka's default
  `/tmp/kafka-logs`) made absolute, with the sizes -1 (Kafka's "unknown"): nothing is
  written there, so the volume it names says nothing about the logs.

Deliberately not here: several log dirs (JBOD; a multi-entry `log.dirs` in memory mode is
reported by its first entry), offline dirs, and what each API answers.
"""

from __future__ import annotations

import os

from zkbroker.handlers.context import RequestContext

UNKNOWN_BYTES = -1
LONG_MAX = 2**63 - 1
# Kafka's `log.dir` default, used only if the config layers somehow give neither key a value.
KAFKA_DEFAULT_LOG_DIR = "/tmp/kafka-logs"


def _first_entry(value: str | None) -> str | None:
    """Kafka's `Csv.parseCsvList` (split on commas, blanks dropped), first entry."""
    if value is None:
        return None
    entries = [e.strip() for e in value.split(",") if e.strip()]
    return entries[0] if entries else None


def log_dir(ctx: RequestContext) -> str:
    """The absolute path of this broker's log dir."""
    on_disk = ctx.broker.logs.log_dir
    if on_disk is not None:
        return os.path.abspath(on_disk)
    config = ctx.broker.broker_config
    # `log.dirs` wins over `log.dir` when set, as in `KafkaConfig.logDirs`.
    configured = _first_entry(config.value("log.dirs")) or _first_entry(config.value("log.dir"))
    # Kafka reports `Paths.get(dir).toAbsolutePath`: a relative entry resolves against the
    # working directory (Python also normalises `..`, which Java leaves in).
    return os.path.abspath(configured or KAFKA_DEFAULT_LOG_DIR)


def volume_bytes(ctx: RequestContext, path: str) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding `path`; (-1, -1) in memory mode.

    Raises OSError when the directory cannot be inspected (Kafka's `Files.getFileStore`
    failing, which it answers as an error of that log dir)."""
    if ctx.broker.settings.log_dir is None:
        return UNKNOWN_BYTES, UNKNOWN_BYTES
    stats = os.statvfs(path)
    # Java's UnixFileStore: total = f_blocks * f_frsize, usable = f_bavail * f_frsize; a size
    # beyond a Java long is reported as Long.MAX_VALUE (`adjustForLargeFileSystems`).
    total = min(stats.f_blocks * stats.f_frsize, LONG_MAX)
    return total, min(stats.f_bavail * stats.f_frsize, LONG_MAX)
