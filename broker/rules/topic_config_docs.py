"""Our own one-line documentation of every topic config of any emulated release
(`config_catalog.TOPIC_CONFIG_KEYS`), as DescribeConfigs v3+ returns it with
`include_documentation` (Kafka's behaviour: §4.3).

The texts are the project's own words, not Kafka's documentation strings or edits of
them: each says what the setting controls in Kafka and in which unit, naming no default.

Not here: broker configs (``broker_config_docs_*``), the lookup (``config_documentation``),
defaults, types and ranges (``config_catalog``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_DOCS: dict[str, str] = {
    "cleanup.policy": (
        "Comma-separated cleanup policies for the topic's closed segments: 'delete' removes "
        "segments once they exceed the retention limits, 'compact' keeps only the newest record "
        "for each key."
    ),
    "compression.gzip.level": (
        "Compression level (an integer) the broker uses when the topic's effective codec is gzip; "
        "ignored for other codecs."
    ),
    "compression.lz4.level": (
        "Compression level (an integer) the broker uses when the topic's effective codec is lz4; "
        "ignored for other codecs."
    ),
    "compression.type": (
        "Codec the broker uses for the record batches it stores for this topic: gzip, snappy, lz4, "
        "zstd, 'uncompressed', or 'producer' to store batches as the producer compressed them."
    ),
    "compression.zstd.level": (
        "Compression level (an integer) the broker uses when the topic's effective codec is zstd; "
        "ignored for other codecs."
    ),
    "delete.retention.ms": (
        "For compacted topics, how long in ms a delete marker (tombstone) survives after its "
        "segment was cleaned; a consumer reading from the start must finish within this time to "
        "see the deletion."
    ),
    "file.delete.delay.ms": (
        "Delay in ms between a segment being scheduled for deletion (its files renamed with a "
        ".deleted suffix) and the files being removed from disk."
    ),
    "flush.messages": (
        "Number of records appended to a partition between forced fsyncs of its log to disk; "
        "durability normally relies on replication instead."
    ),
    "flush.ms": (
        "Longest time in ms appended data may sit unflushed in the OS page cache before the broker "
        "forces an fsync of the partition's log."
    ),
    "follower.replication.throttled.replicas": (
        "Replicas of this topic whose replication traffic is throttled on the follower side, given "
        "as partition:brokerId pairs, or '*' to throttle every replica of the topic."
    ),
    "index.interval.bytes": (
        "Approximate number of log bytes written between two entries of the offset index; smaller "
        "values give more precise lookups but a larger index."
    ),
    "leader.replication.throttled.replicas": (
        "Replicas of this topic whose replication traffic is throttled on the leader side, given "
        "as partition:brokerId pairs, or '*' to throttle every replica of the topic."
    ),
    "local.retention.bytes": (
        "With tiered storage, the size in bytes a partition's on-broker segments may reach before "
        "the oldest uploaded ones are removed locally; -2 means use retention.bytes."
    ),
    "local.retention.ms": (
        "With tiered storage, how long in ms segments stay on the broker's local disk after upload "
        "before they may be removed locally; -2 means use retention.ms."
    ),
    "max.compaction.lag.ms": (
        "Upper bound in ms on how long a record may stay uncompacted: a compacted log holding "
        "older dirty records is cleaned even below the dirty-ratio threshold."
    ),
    "max.message.bytes": (
        "Largest record batch in bytes, after compression, that the broker accepts when appending "
        "to this topic."
    ),
    "message.downconversion.enable": (
        "Whether the broker may convert stored batches to an older message format for fetch "
        "requests that cannot read the stored one; if false, such fetches fail with "
        "UNSUPPORTED_VERSION."
    ),
    "message.format.version": (
        "On-disk message format, named by a Kafka release such as 0.10.2, that the broker writes "
        "for this topic; deprecated in 3.0 and ignored once inter.broker.protocol.version is 3.0 "
        "or newer."
    ),
    "message.timestamp.after.max.ms": (
        "How far in ms a record's CreateTime timestamp may be ahead of the broker's clock before "
        "the batch is rejected; not applied when the timestamp type is LogAppendTime."
    ),
    "message.timestamp.before.max.ms": (
        "How far in ms a record's CreateTime timestamp may be behind the broker's clock before the "
        "batch is rejected; not applied when the timestamp type is LogAppendTime."
    ),
    "message.timestamp.difference.max.ms": (
        "Largest gap in ms, in either direction, allowed between a record's CreateTime timestamp "
        "and the broker's clock before the batch is rejected; replaced in 3.6 by the before/after "
        "pair."
    ),
    "message.timestamp.type": (
        "Which time the records' timestamps hold: CreateTime keeps the producer's timestamp, "
        "LogAppendTime replaces it with the broker's clock at append."
    ),
    "min.cleanable.dirty.ratio": (
        "Fraction (0 to 1) of a compacted log that must be dirty, i.e. written since the last "
        "cleaning, before the cleaner selects the log again."
    ),
    "min.compaction.lag.ms": (
        "Minimum age in ms a record must reach before the log cleaner may compact it away."
    ),
    "min.insync.replicas": (
        "For writes with acks=all, how many in-sync replicas (leader included) must hold a write "
        "for it to succeed; with fewer, the produce fails with NOT_ENOUGH_REPLICAS."
    ),
    "preallocate": (
        "Whether the broker reserves the full segment size on disk when it creates a new segment "
        "file instead of growing the file as data arrives."
    ),
    "remote.log.copy.disable": (
        "When true, no further segments of this topic are uploaded to remote storage; the remote "
        "data becomes read-only and expires only by retention.ms and retention.bytes."
    ),
    "remote.log.delete.on.disable": (
        "Whether the topic's remote data is deleted when tiered storage is turned off for it "
        "(remote.storage.enable set to false); that change requires this to be true."
    ),
    "remote.storage.enable": (
        "Whether this topic uses tiered storage, uploading closed segments to the remote store; "
        "brokers must have remote.log.storage.system.enable set."
    ),
    "retention.bytes": (
        "Size limit in bytes per partition under the 'delete' policy: the oldest segments are "
        "removed while the partition is larger; -1 means no size limit."
    ),
    "retention.ms": (
        "How long in ms records are kept under the 'delete' policy before their segment may be "
        "removed; -1 means no time limit."
    ),
    "segment.bytes": (
        "Size in bytes at which a partition's active segment file is closed and a new one begun; "
        "retention and compaction work on whole segments."
    ),
    "segment.index.bytes": (
        "Size in bytes preallocated for each segment's offset and time index files; a segment is "
        "also rolled when its index is full."
    ),
    "segment.jitter.ms": (
        "Upper bound in ms of a random amount subtracted from segment.ms for each segment, so many "
        "partitions do not roll at the same moment."
    ),
    "segment.ms": (
        "Maximum age in ms of a partition's active segment before it is rolled even if not full, "
        "so time-based retention and compaction can reach its data."
    ),
    "unclean.leader.election.enable": (
        "Whether a replica outside the ISR may become leader when no in-sync replica is available, "
        "accepting possible loss of acknowledged records for availability."
    ),
}

TOPIC_CONFIG_DOCS: Mapping[str, str] = MappingProxyType(_DOCS)
"""Topic config name -> our one-line documentation."""
