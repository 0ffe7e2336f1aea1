"""Our own one-line documentation of the broker's log configs (DescribeConfigs v3+
`include_documentation`, Kafka's behaviour: §4.3): the `log.*` defaults of segments,
retention, cleaning, flushing, message format and timestamps, compression, record size,
recovery threads, and tiered storage (`remote.*`, KafkaConfig's remote log management section).

The texts are the project's own words, not Kafka's documentation strings or edits of
them: each says what the setting controls in Kafka and in which unit, naming no default.

Not here: the other broker configs (``broker_config_docs_security``,
``broker_config_docs_coordinators``, ``broker_config_docs_server``), topic configs
(``topic_config_docs``), the lookup (``config_documentation``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_DOCS: dict[str, str] = {
    "compression.gzip.level": (
        "Broker-wide default compression level used when the effective codec is gzip."
    ),
    "compression.lz4.level": (
        "Broker-wide default compression level used when the effective codec is lz4."
    ),
    "compression.type": (
        "Broker-wide default for compression.type: gzip, snappy, lz4, zstd, uncompressed, or "
        "producer to keep the producer's codec."
    ),
    "compression.zstd.level": (
        "Broker-wide default compression level used when the effective codec is zstd."
    ),
    "log.cleaner.backoff.ms": (
        "Time in ms a cleaner thread sleeps when no log currently needs compaction."
    ),
    "log.cleaner.dedupe.buffer.size": (
        "Memory in bytes, divided among all cleaner threads, for the key-to-offset maps built "
        "while compacting."
    ),
    "log.cleaner.delete.retention.ms": (
        "Broker-wide default for delete.retention.ms: time in ms tombstones are kept in compacted "
        "topics."
    ),
    "log.cleaner.enable": (
        "Whether the broker runs log cleaner threads; without them compacted topics, the offsets "
        "topic included, are never compacted."
    ),
    "log.cleaner.io.buffer.load.factor": (
        "Target fill ratio of the cleaner's key-to-offset hash map; higher fits more keys per pass "
        "but causes more collisions."
    ),
    "log.cleaner.io.buffer.size": (
        "Memory in bytes, divided among all cleaner threads, for the read and write buffers used "
        "while compacting."
    ),
    "log.cleaner.io.max.bytes.per.second": (
        "Throttle on the combined read and write I/O of all cleaner threads, in bytes per second."
    ),
    "log.cleaner.max.compaction.lag.ms": (
        "Broker-wide default for max.compaction.lag.ms: longest time in ms a record may stay "
        "uncompacted."
    ),
    "log.cleaner.min.cleanable.ratio": (
        "Broker-wide default for min.cleanable.dirty.ratio: dirty fraction a log needs before it "
        "is cleaned."
    ),
    "log.cleaner.min.compaction.lag.ms": (
        "Broker-wide default for min.compaction.lag.ms: age in ms a record needs before it can be "
        "compacted."
    ),
    "log.cleaner.threads": "Number of background threads that compact logs.",
    "log.cleanup.policy": "Broker-wide default for cleanup.policy: 'delete', 'compact', or both.",
    "log.dir": "Single directory for partition data, used when log.dirs is not set.",
    "log.dir.failure.timeout.ms": (
        "Time in ms the broker keeps trying to report a failed log directory to the controller "
        "before it shuts itself down."
    ),
    "log.dirs": "Comma-separated directories holding partition data; when unset, log.dir is used.",
    "log.flush.interval.messages": (
        "Broker-wide default for flush.messages: records appended to a partition between forced "
        "fsyncs."
    ),
    "log.flush.interval.ms": (
        "Broker-wide default for flush.ms, in ms; when unset, log.flush.scheduler.interval.ms is "
        "used."
    ),
    "log.flush.offset.checkpoint.interval.ms": (
        "Time in ms between writes of each log's recovery point, the offset up to which data is "
        "known to be on disk."
    ),
    "log.flush.scheduler.interval.ms": (
        "Time in ms between the broker's checks for logs due a time-based flush."
    ),
    "log.flush.start.offset.checkpoint.interval.ms": (
        "Time in ms between writes of each partition's log start offset to its checkpoint file."
    ),
    "log.index.interval.bytes": (
        "Broker-wide default for index.interval.bytes: log bytes between two offset index entries."
    ),
    "log.index.size.max.bytes": (
        "Broker-wide default for segment.index.bytes: bytes reserved for each segment's index "
        "files."
    ),
    "log.initial.task.delay.ms": (
        "Internal, for tests: delay in ms before the log manager's periodic tasks first run after "
        "startup."
    ),
    "log.local.retention.bytes": (
        "Broker-wide default for local.retention.bytes: local size in bytes kept per partition "
        "under tiered storage; -2 means use the full retention size."
    ),
    "log.local.retention.ms": (
        "Broker-wide default for local.retention.ms: time in ms uploaded segments stay on local "
        "disk; -2 means use the full retention time."
    ),
    "log.message.downconversion.enable": (
        "Broker-wide default for message.downconversion.enable: whether fetches may be served by "
        "converting batches to an older format."
    ),
    "log.message.format.version": (
        "Broker-wide default for message.format.version; deprecated in 3.0 and ignored once the "
        "inter-broker protocol is 3.0 or newer."
    ),
    "log.message.timestamp.after.max.ms": (
        "Broker-wide default for message.timestamp.after.max.ms: how far in ms a CreateTime "
        "timestamp may lead the broker clock."
    ),
    "log.message.timestamp.before.max.ms": (
        "Broker-wide default for message.timestamp.before.max.ms: how far in ms a CreateTime "
        "timestamp may trail the broker clock."
    ),
    "log.message.timestamp.difference.max.ms": (
        "Broker-wide default for message.timestamp.difference.max.ms, in ms; replaced in 3.6 by "
        "the before/after pair."
    ),
    "log.message.timestamp.type": (
        "Broker-wide default for message.timestamp.type: CreateTime or LogAppendTime."
    ),
    "log.preallocate": (
        "Broker-wide default for preallocate: whether new segment files reserve their full size on "
        "disk."
    ),
    "log.retention.bytes": (
        "Broker-wide default for retention.bytes: per-partition size in bytes above which the "
        "oldest segments are deleted."
    ),
    "log.retention.check.interval.ms": (
        "Time in ms between the broker's scans for segments that the retention settings allow it "
        "to delete."
    ),
    "log.retention.hours": (
        "Broker-wide default retention in hours, used when neither log.retention.ms nor "
        "log.retention.minutes is set."
    ),
    "log.retention.minutes": (
        "Broker-wide default retention in minutes, used when log.retention.ms is not set; takes "
        "precedence over log.retention.hours."
    ),
    "log.retention.ms": (
        "Broker-wide default for retention.ms, in ms; takes precedence over the minutes and hours "
        "forms, and -1 keeps data without a time limit."
    ),
    "log.roll.hours": (
        "Broker-wide default segment roll age in hours, used when log.roll.ms is not set."
    ),
    "log.roll.jitter.hours": (
        "Broker-wide default segment roll jitter in hours, used when log.roll.jitter.ms is not set."
    ),
    "log.roll.jitter.ms": (
        "Broker-wide default for segment.jitter.ms, in ms; takes precedence over "
        "log.roll.jitter.hours."
    ),
    "log.roll.ms": (
        "Broker-wide default for segment.ms, in ms; takes precedence over log.roll.hours."
    ),
    "log.segment.bytes": (
        "Broker-wide default for segment.bytes: size in bytes at which a segment file is rolled."
    ),
    "log.segment.delete.delay.ms": (
        "Broker-wide default for file.delete.delay.ms: delay in ms before a deleted segment's "
        "files are removed."
    ),
    "message.max.bytes": (
        "Broker-wide default for max.message.bytes: largest record batch in bytes, after "
        "compression, the broker accepts."
    ),
    "num.recovery.threads.per.data.dir": (
        "Threads per data directory used to recover logs at startup and to flush them at shutdown."
    ),
    "remote.fetch.max.wait.ms": (
        "Longest time in ms the broker waits for a remote storage read before answering the fetch "
        "that needs it."
    ),
    "remote.log.index.file.cache.total.size.bytes": (
        "Local disk space in bytes for caching index files downloaded from remote storage."
    ),
    "remote.log.manager.copier.thread.pool.size": (
        "Threads that upload segments to remote storage; -1 means use "
        "remote.log.manager.thread.pool.size."
    ),
    "remote.log.manager.copy.max.bytes.per.second": (
        "Broker-wide cap in bytes per second on data uploaded to remote storage."
    ),
    "remote.log.manager.copy.quota.window.num": (
        "Number of sample windows kept when measuring the remote upload rate."
    ),
    "remote.log.manager.copy.quota.window.size.seconds": (
        "Length in seconds of each sample window used to measure the remote upload rate."
    ),
    "remote.log.manager.expiration.thread.pool.size": (
        "Threads that delete expired segments from remote storage; -1 means use "
        "remote.log.manager.thread.pool.size."
    ),
    "remote.log.manager.fetch.max.bytes.per.second": (
        "Broker-wide cap in bytes per second on data read from remote storage."
    ),
    "remote.log.manager.fetch.quota.window.num": (
        "Number of sample windows kept when measuring the remote read rate."
    ),
    "remote.log.manager.fetch.quota.window.size.seconds": (
        "Length in seconds of each sample window used to measure the remote read rate."
    ),
    "remote.log.manager.task.interval.ms": (
        "Time in ms between runs of the per-partition tasks that upload segments and expire remote "
        "data."
    ),
    "remote.log.manager.task.retry.backoff.max.ms": (
        "Internal: ceiling in ms of the growing backoff between retries of failed remote log "
        "manager tasks."
    ),
    "remote.log.manager.task.retry.backoff.ms": (
        "Internal: first backoff in ms before a failed remote log manager task is retried."
    ),
    "remote.log.manager.task.retry.jitter": (
        "Internal: random fraction applied to the retry backoff of remote log manager tasks so "
        "retries spread out."
    ),
    "remote.log.manager.thread.pool.size": (
        "Threads for scheduled remote log manager tasks; from 3.9 deprecated and only the fallback "
        "size of the copier and expiration pools."
    ),
    "remote.log.metadata.custom.metadata.max.bytes": (
        "Largest custom segment metadata in bytes accepted from the storage plugin; a larger one "
        "aborts that upload and stops copying for the partition."
    ),
    "remote.log.metadata.manager.class.name": (
        "Class implementing RemoteLogMetadataManager, which records what segments exist in remote "
        "storage."
    ),
    "remote.log.metadata.manager.class.path": (
        "Class path from which the RemoteLogMetadataManager plugin is loaded in its own class "
        "loader, ahead of the broker's class path."
    ),
    "remote.log.metadata.manager.impl.prefix": (
        "Prefix marking the broker properties that are handed to the RemoteLogMetadataManager "
        "plugin."
    ),
    "remote.log.metadata.manager.listener.name": (
        "Listener of the local broker that the RemoteLogMetadataManager plugin connects to when it "
        "needs the cluster."
    ),
    "remote.log.reader.max.pending.tasks": (
        "Queue length of the remote read thread pool; fetches needing a remote read fail while the "
        "queue is full."
    ),
    "remote.log.reader.threads": "Threads that read data from remote storage to answer fetches.",
    "remote.log.storage.manager.class.name": (
        "Class implementing RemoteStorageManager, the plugin that copies segments to and reads "
        "them from remote storage."
    ),
    "remote.log.storage.manager.class.path": (
        "Class path from which the RemoteStorageManager plugin is loaded in its own class loader, "
        "ahead of the broker's class path."
    ),
    "remote.log.storage.manager.impl.prefix": (
        "Prefix marking the broker properties that are handed to the RemoteStorageManager plugin."
    ),
    "remote.log.storage.system.enable": (
        "Whether the broker starts its tiered storage services; topics may set "
        "remote.storage.enable only when this is true."
    ),
}

LOG_CONFIG_DOCS: Mapping[str, str] = MappingProxyType(_DOCS)
"""Broker config name -> our one-line documentation, for the log configs."""
