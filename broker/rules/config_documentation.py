"""Our own one-line documentation for Kafka's topic and broker configs (DescribeConfigs v3+
`include_documentation`).

One text per topic config of any emulated release (`config_catalog.TOPIC_CONFIG_KEYS`), per
broker config of `KafkaConfig` 2.8.0 or 3.9, and per dynamic-only throttle rate;
`broker_config_documentation` also answers `listener.name.<l>.[<mechanism>.]<key>` with the base
key's text plus a note. The texts are the project's own words, not Kafka's documentation strings
or edits of them: each says what the setting controls in Kafka and in which unit, naming no
default.

Not here: defaults, types, ranges (`config_catalog`), which keys exist in which release (callers
decide), per-entity configs of users, clients, IPs and SCRAM credentials, HTML markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_TOPIC_DOCS: dict[str, str] = {
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

_BROKER_DOCS: dict[str, str] = {
    "advertised.host.name": (
        "Deprecated: host name published to clients and other brokers when neither "
        "advertised.listeners nor listeners is set."
    ),
    "advertised.listeners": (
        "Comma-separated listener URIs (NAME://host:port) the broker publishes for clients and "
        "other brokers to connect to, when they differ from the addresses it binds."
    ),
    "advertised.port": (
        "Deprecated: port published to clients and other brokers when neither advertised.listeners "
        "nor listeners is set."
    ),
    "alter.config.policy.class.name": (
        "Class implementing AlterConfigPolicy that the broker asks to accept or reject each config "
        "change request."
    ),
    "alter.log.dirs.replication.quota.window.num": (
        "Number of sample windows kept when measuring throttled replica moves between log "
        "directories."
    ),
    "alter.log.dirs.replication.quota.window.size.seconds": (
        "Length in seconds of each sample window used to measure throttled replica moves between "
        "log directories."
    ),
    "authorizer.class.name": (
        "Class implementing the authorizer that checks ACLs for each request; empty means no "
        "authorization."
    ),
    "auto.create.topics.enable": (
        "Whether the broker creates a missing topic, with default partition count and replication "
        "factor, when a client asks for its metadata."
    ),
    "auto.include.jmx.reporter": (
        "Deprecated: whether the JMX reporter is added even when metric.reporters does not list it."
    ),
    "auto.leader.rebalance.enable": (
        "Whether the controller periodically gives leadership back to each partition's preferred "
        "(first-listed) replica when it is in sync."
    ),
    "background.threads": (
        "Number of threads in the pool that runs the broker's background housekeeping tasks."
    ),
    "broker.heartbeat.interval.ms": (
        "KRaft: time in ms between the heartbeats a broker sends to the active controller."
    ),
    "broker.id": (
        "Integer id of this broker in the cluster; when left at -1 with id generation enabled, "
        "ZooKeeper assigns an id above reserved.broker.max.id."
    ),
    "broker.id.generation.enable": (
        "Whether a broker without a configured broker.id gets a generated id from ZooKeeper."
    ),
    "broker.rack": (
        "Rack or availability-zone label of this broker, used to spread replicas across racks and "
        "for rack-aware consumer fetching."
    ),
    "broker.session.timeout.ms": (
        "KRaft: time in ms without heartbeats after which the controller fences a broker."
    ),
    "client.quota.callback.class": (
        "Class implementing ClientQuotaCallback that takes over deciding which quota limits apply "
        "to each client request."
    ),
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
    "connection.failed.authentication.delay.ms": (
        "Time in ms the broker waits before closing a connection whose authentication failed, "
        "which slows down password guessing."
    ),
    "connections.max.idle.ms": (
        "Time in ms after which the broker closes a connection that has carried no traffic."
    ),
    "connections.max.reauth.ms": (
        "Upper bound in ms on a SASL session before the client must re-authenticate or be "
        "disconnected; 0 turns re-authentication off."
    ),
    "control.plane.listener.name": (
        "Name of a dedicated listener for controller-to-broker requests in ZooKeeper mode, so they "
        "are not queued behind client traffic."
    ),
    "controlled.shutdown.enable": (
        "Whether a stopping broker first asks the controller to move its partition leaderships to "
        "other replicas."
    ),
    "controlled.shutdown.max.retries": (
        "How many times a broker repeats a failed controlled-shutdown request before it shuts down "
        "regardless."
    ),
    "controlled.shutdown.retry.backoff.ms": "Pause in ms between two controlled-shutdown attempts.",
    "controller.listener.names": (
        "KRaft: comma-separated listener names that the controller quorum uses; brokers reach the "
        "controllers through the first one in the list."
    ),
    "controller.quorum.append.linger.ms": (
        "KRaft: time in ms the quorum leader waits to gather metadata records into one batch "
        "before writing it to the log."
    ),
    "controller.quorum.bootstrap.servers": (
        "KRaft: comma-separated host:port addresses used to find the controller quorum when "
        "controller.quorum.voters does not fix the voter set."
    ),
    "controller.quorum.election.backoff.max.ms": (
        "KRaft: ceiling in ms of the exponential backoff a candidate applies before starting "
        "another election."
    ),
    "controller.quorum.election.timeout.ms": (
        "KRaft: base time in ms a quorum member waits for an election to produce a leader before "
        "it starts a new election; randomized to avoid ties."
    ),
    "controller.quorum.fetch.timeout.ms": (
        "KRaft: time in ms a voter may go without fetching successfully from the leader before it "
        "turns candidate and starts an election."
    ),
    "controller.quorum.request.timeout.ms": (
        "KRaft: time in ms a quorum member waits for the response to a Raft request before "
        "treating it as failed."
    ),
    "controller.quorum.retry.backoff.ms": (
        "KRaft: pause in ms before a failed Raft request to the same node is retried."
    ),
    "controller.quorum.voters": (
        "KRaft: fixed voter set of the controller quorum, as comma-separated id@host:port entries."
    ),
    "controller.quota.window.num": (
        "Number of sample windows kept when measuring controller mutation quotas (topic and "
        "partition creation or deletion)."
    ),
    "controller.quota.window.size.seconds": (
        "Length in seconds of each sample window used to measure controller mutation quotas."
    ),
    "controller.socket.timeout.ms": (
        "Socket timeout in ms of the channels the ZooKeeper-mode controller uses to send requests "
        "to brokers."
    ),
    "create.topic.policy.class.name": (
        "Class implementing CreateTopicPolicy that the broker asks to accept or reject each topic "
        "creation."
    ),
    "default.replication.factor": (
        "Replication factor given to automatically created topics and to created topics whose "
        "request leaves it unspecified."
    ),
    "delegation.token.expiry.check.interval.ms": (
        "Time in ms between scans that remove expired delegation tokens."
    ),
    "delegation.token.expiry.time.ms": (
        "Time in ms a delegation token stays valid before it must be renewed; each renewal extends "
        "it by this much, up to the lifetime limit."
    ),
    "delegation.token.master.key": "Deprecated name of delegation.token.secret.key.",
    "delegation.token.max.lifetime.ms": (
        "Hard limit in ms on a delegation token's lifetime; renewals cannot extend it further."
    ),
    "delegation.token.secret.key": (
        "Secret for signing and checking delegation tokens; must match on all brokers, and tokens "
        "are unavailable while it is unset."
    ),
    "delete.records.purgatory.purge.interval.requests": (
        "Number of DeleteRecords requests after which the broker clears completed entries from "
        "their purgatory."
    ),
    "delete.topic.enable": (
        "Whether topic deletion requests are carried out; when false, topics cannot be deleted."
    ),
    "early.start.listeners": (
        "Listeners that may accept connections before the authorizer has finished starting, e.g. "
        "ones needed by an authorizer that loads its ACLs from the cluster itself."
    ),
    "eligible.leader.replicas.enable": (
        "KRaft: whether the controller maintains eligible leader replicas (KIP-966), out-of-ISR "
        "replicas known to be safe leader candidates."
    ),
    "fetch.max.bytes": "Byte limit on a whole Fetch response across all of its partitions.",
    "fetch.purgatory.purge.interval.requests": (
        "Number of fetch requests after which the broker clears completed entries from the fetch "
        "purgatory."
    ),
    "follower.replication.throttled.rate": (
        "Dynamic broker setting: cap in bytes per second on traffic this broker fetches as "
        "follower for throttled replicas."
    ),
    "group.consumer.assignors": (
        "Class names of the server-side assignors for new-protocol (KIP-848) consumer groups; the "
        "first is used when a member names none."
    ),
    "group.consumer.heartbeat.interval.ms": (
        "Heartbeat interval in ms the coordinator tells members of new-protocol (KIP-848) consumer "
        "groups to use."
    ),
    "group.consumer.max.heartbeat.interval.ms": (
        "Largest heartbeat interval in ms allowed for new-protocol (KIP-848) consumer groups."
    ),
    "group.consumer.max.session.timeout.ms": (
        "Largest session timeout in ms allowed for new-protocol (KIP-848) consumer groups."
    ),
    "group.consumer.max.size": (
        "Largest number of members a new-protocol (KIP-848) consumer group may have; classic "
        "groups use group.max.size."
    ),
    "group.consumer.migration.policy": (
        "Which live conversions between classic and new-protocol consumer groups are allowed: "
        "bidirectional, upgrade, downgrade or disabled; empty groups always convert."
    ),
    "group.consumer.min.heartbeat.interval.ms": (
        "Smallest heartbeat interval in ms allowed for new-protocol (KIP-848) consumer groups."
    ),
    "group.consumer.min.session.timeout.ms": (
        "Smallest session timeout in ms allowed for new-protocol (KIP-848) consumer groups."
    ),
    "group.consumer.session.timeout.ms": (
        "Time in ms without a heartbeat after which a member of a new-protocol (KIP-848) consumer "
        "group is removed."
    ),
    "group.coordinator.append.linger.ms": (
        "Time in ms the new group coordinator waits to batch its non-transactional writes before "
        "appending them to the log."
    ),
    "group.coordinator.new.enable": (
        "Internal: whether the broker runs the new group coordinator implementation (KIP-848)."
    ),
    "group.coordinator.rebalance.protocols": (
        "Group protocols the coordinator accepts: classic, consumer (KIP-848) and share."
    ),
    "group.coordinator.threads": (
        "Number of threads the new group coordinator uses to process group operations."
    ),
    "group.initial.rebalance.delay.ms": (
        "Time in ms the coordinator waits for more members to join an empty classic group before "
        "its first rebalance."
    ),
    "group.max.session.timeout.ms": (
        "Largest session timeout in ms a classic-protocol group member may request."
    ),
    "group.max.size": "Largest number of members a classic-protocol consumer group may have.",
    "group.min.session.timeout.ms": (
        "Smallest session timeout in ms a classic-protocol group member may request."
    ),
    "group.share.delivery.count.limit": (
        "Share groups: how many times a record may be handed out before it is archived as "
        "undeliverable."
    ),
    "group.share.enable": "Internal: whether share groups (KIP-932) are enabled on the broker.",
    "group.share.heartbeat.interval.ms": (
        "Share groups: heartbeat interval in ms the coordinator tells members to use."
    ),
    "group.share.max.groups": "Share groups: how many share groups the broker allows.",
    "group.share.max.heartbeat.interval.ms": (
        "Share groups: largest heartbeat interval in ms allowed."
    ),
    "group.share.max.record.lock.duration.ms": (
        "Share groups: largest record lock duration in ms a group may be given."
    ),
    "group.share.max.session.timeout.ms": "Share groups: largest session timeout in ms allowed.",
    "group.share.max.size": "Share groups: largest number of members one share group may have.",
    "group.share.min.heartbeat.interval.ms": (
        "Share groups: smallest heartbeat interval in ms allowed."
    ),
    "group.share.min.record.lock.duration.ms": (
        "Share groups: smallest record lock duration in ms a group may be given."
    ),
    "group.share.min.session.timeout.ms": "Share groups: smallest session timeout in ms allowed.",
    "group.share.partition.max.record.locks": (
        "Share groups: how many records of one share-partition may be acquired (locked) by "
        "consumers at once."
    ),
    "group.share.record.lock.duration.ms": (
        "Share groups: time in ms an acquired record stays locked to its consumer before it "
        "becomes available again."
    ),
    "group.share.session.timeout.ms": (
        "Share groups: time in ms without a heartbeat after which a member is removed."
    ),
    "host.name": (
        "Deprecated: address the broker binds to when listeners is not set; empty binds all "
        "interfaces."
    ),
    "initial.broker.registration.timeout.ms": (
        "KRaft: time in ms a starting broker keeps trying to register with the controller before "
        "it gives up and exits."
    ),
    "inter.broker.listener.name": (
        "Name of the listener brokers use to talk to each other; cannot be combined with "
        "security.inter.broker.protocol."
    ),
    "inter.broker.protocol.version": (
        "Kafka release (e.g. 2.8) whose protocol versions brokers use among themselves; raised "
        "only after every broker runs the newer software."
    ),
    "kafka.metrics.polling.interval.secs": (
        "Time in seconds between polls by the kafka.metrics.reporters implementations."
    ),
    "kafka.metrics.reporters": (
        "Classes implementing KafkaMetricsReporter that are loaded at startup to publish the "
        "broker's Yammer metrics."
    ),
    "leader.imbalance.check.interval.seconds": (
        "Time in seconds between the controller's checks for partitions not led by their preferred "
        "replica."
    ),
    "leader.imbalance.per.broker.percentage": (
        "Share, in percent, of a broker's partitions led elsewhere than the preferred replica "
        "above which the controller moves leadership back."
    ),
    "leader.replication.throttled.rate": (
        "Dynamic broker setting: cap in bytes per second on traffic this broker serves as leader "
        "to throttled replicas."
    ),
    "listener.security.protocol.map": (
        "Security protocol of each listener name, as NAME:PROTOCOL pairs, which lets several "
        "listeners share one protocol."
    ),
    "listeners": (
        "Comma-separated listener URIs (NAME://host:port) the broker binds to; an empty host binds "
        "the default interface and 0.0.0.0 binds all of them."
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
    "max.connection.creation.rate": (
        "Limit on new connections accepted per second, broker-wide or for one listener when "
        "listener-prefixed; connections above the rate are delayed."
    ),
    "max.connections": (
        "Limit on open connections to the broker (or to one listener, when listener-prefixed); "
        "connections beyond it wait until others close."
    ),
    "max.connections.per.ip": "Limit on simultaneous connections from a single IP address.",
    "max.connections.per.ip.overrides": (
        "Exceptions to max.connections.per.ip, as comma-separated host:count or ip:count pairs."
    ),
    "max.incremental.fetch.session.cache.slots": (
        "Number of incremental fetch sessions (KIP-227) the broker keeps cached at the same time."
    ),
    "max.request.partition.size.limit": (
        "Largest number of partitions the broker returns in one response of a partition-paginated "
        "request such as DescribeTopicPartitions."
    ),
    "message.max.bytes": (
        "Broker-wide default for max.message.bytes: largest record batch in bytes, after "
        "compression, the broker accepts."
    ),
    "metadata.log.dir": (
        "KRaft: directory of the cluster metadata log; when unset it lives in the first directory "
        "of log.dirs."
    ),
    "metadata.log.max.record.bytes.between.snapshots": (
        "KRaft: bytes of metadata records written since the latest snapshot after which the node "
        "writes a new snapshot."
    ),
    "metadata.log.max.snapshot.interval.ms": (
        "KRaft: longest time in ms a node waits before snapshotting committed records not yet in a "
        "snapshot; 0 turns time-based snapshots off."
    ),
    "metadata.log.segment.bytes": "KRaft: size in bytes at which a metadata log segment is rolled.",
    "metadata.log.segment.min.bytes": (
        "Internal, for tests: lowers the smallest allowed metadata log segment size, in bytes."
    ),
    "metadata.log.segment.ms": (
        "KRaft: age in ms at which the active metadata log segment is rolled."
    ),
    "metadata.max.idle.interval.ms": (
        "KRaft: interval in ms at which the active controller appends a no-op record while the "
        "metadata log is otherwise idle; 0 turns this off."
    ),
    "metadata.max.retention.bytes": (
        "KRaft: combined size in bytes of metadata log and snapshots above which the oldest ones "
        "are deleted; soft, since the newest snapshot is always kept."
    ),
    "metadata.max.retention.ms": (
        "KRaft: age in ms after which metadata log segments and snapshots may be deleted; soft, "
        "since the newest snapshot is always kept."
    ),
    "metric.reporters": (
        "Classes implementing MetricsReporter that are told about the broker's metrics as they are "
        "registered and updated."
    ),
    "metrics.num.samples": "Number of sample windows kept when computing a metric.",
    "metrics.recording.level": (
        "Most detailed recording level (INFO, DEBUG or TRACE) of the metrics that are collected."
    ),
    "metrics.sample.window.ms": "Length in ms of each sample window used when computing metrics.",
    "min.insync.replicas": (
        "Broker-wide default for min.insync.replicas: in-sync replicas that must hold an acks=all "
        "write for it to succeed."
    ),
    "node.id": (
        "KRaft: integer id of this node in its broker and controller roles; required when "
        "process.roles is set."
    ),
    "num.io.threads": (
        "Number of request handler threads that execute queued requests, including their disk I/O."
    ),
    "num.network.threads": (
        "Number of threads per listener that read requests from and write responses to the sockets."
    ),
    "num.partitions": (
        "Partition count given to automatically created topics and to created topics whose request "
        "leaves it unspecified."
    ),
    "num.recovery.threads.per.data.dir": (
        "Threads per data directory used to recover logs at startup and to flush them at shutdown."
    ),
    "num.replica.alter.log.dirs.threads": (
        "Number of threads that move replicas between this broker's log directories."
    ),
    "num.replica.fetchers": (
        "Number of fetcher threads a broker runs per source broker to replicate partitions it "
        "follows."
    ),
    "offset.metadata.max.bytes": (
        "Largest size in bytes of the free-text metadata a client may store with a committed "
        "offset."
    ),
    "offsets.commit.required.acks": (
        "Deprecated: acknowledgements needed before an offset commit is accepted; should stay -1."
    ),
    "offsets.commit.timeout.ms": (
        "Time in ms an offset commit waits for all replicas of its __consumer_offsets partition "
        "before it fails."
    ),
    "offsets.load.buffer.size": (
        "Bytes read per batch from __consumer_offsets while a coordinator loads group state into "
        "memory."
    ),
    "offsets.retention.check.interval.ms": (
        "Time in ms between scans that expire old committed offsets."
    ),
    "offsets.retention.minutes": (
        "Time in minutes committed offsets are kept before they expire; since 2.1 the clock starts "
        "once the group is empty, or at the last commit for standalone consumers."
    ),
    "offsets.topic.compression.codec": (
        "Numeric id of the compression codec used for records written to __consumer_offsets."
    ),
    "offsets.topic.num.partitions": (
        "Partition count of the internal __consumer_offsets topic; it cannot change once the topic "
        "exists."
    ),
    "offsets.topic.replication.factor": (
        "Replication factor of __consumer_offsets; creating it fails until this many brokers are "
        "available."
    ),
    "offsets.topic.segment.bytes": (
        "Segment size in bytes of __consumer_offsets, kept small so compaction and coordinator "
        "loading stay quick."
    ),
    "password.encoder.cipher.algorithm": (
        "Cipher transformation that encrypts dynamically configured passwords."
    ),
    "password.encoder.iterations": (
        "Iteration count of the key derivation for encrypting dynamically configured passwords."
    ),
    "password.encoder.key.length": (
        "Length in bits of the key that encrypts dynamically configured passwords."
    ),
    "password.encoder.keyfactory.algorithm": (
        "SecretKeyFactory algorithm that derives the key encrypting dynamically configured "
        "passwords."
    ),
    "password.encoder.old.secret": (
        "Former password.encoder.secret; stored dynamic passwords are decrypted with it and "
        "re-encrypted with the current secret at startup."
    ),
    "password.encoder.secret": (
        "Secret from which the key that encrypts dynamically configured passwords is derived."
    ),
    "port": "Deprecated: TCP port the broker binds to when listeners is not set.",
    "principal.builder.class": (
        "Class implementing KafkaPrincipalBuilder that derives a connection's principal from how "
        "it authenticated."
    ),
    "process.roles": (
        "KRaft: roles this node takes, 'broker', 'controller' or both; left empty for a "
        "ZooKeeper-mode broker."
    ),
    "producer.id.expiration.check.interval.ms": (
        "Internal: time in ms between scans that drop expired producer ids."
    ),
    "producer.id.expiration.ms": (
        "Time in ms after a producer id's last write at which a partition leader drops its state; "
        "ids with an open transaction are kept."
    ),
    "producer.purgatory.purge.interval.requests": (
        "Number of produce requests after which the broker clears completed entries from the "
        "produce purgatory."
    ),
    "queued.max.request.bytes": (
        "Total bytes of queued requests at which the network threads stop reading further "
        "requests; -1 means no byte limit."
    ),
    "queued.max.requests": (
        "Number of requests that may wait in the request queue before the network threads stop "
        "reading further requests."
    ),
    "quota.consumer.default": (
        "Deprecated: byte-rate limit in bytes per second applied to each consumer client id, only "
        "while no dynamic quotas are configured."
    ),
    "quota.producer.default": (
        "Deprecated: byte-rate limit in bytes per second applied to each producer client id, only "
        "while no dynamic quotas are configured."
    ),
    "quota.window.num": (
        "Number of sample windows kept when measuring client request and byte-rate quotas."
    ),
    "quota.window.size.seconds": (
        "Length in seconds of each sample window used to measure client quotas."
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
    "replica.alter.log.dirs.io.max.bytes.per.second": (
        "Dynamic broker setting: cap in bytes per second on copying replicas between this broker's "
        "log directories."
    ),
    "replica.fetch.backoff.ms": (
        "Pause in ms a follower fetcher takes after a fetch error before it tries again."
    ),
    "replica.fetch.max.bytes": (
        "Bytes a follower asks for per partition in each fetch; a larger first batch is still "
        "returned so replication can progress."
    ),
    "replica.fetch.min.bytes": (
        "Bytes a follower fetch waits to accumulate before the leader answers, bounded by "
        "replica.fetch.wait.max.ms."
    ),
    "replica.fetch.response.max.bytes": (
        "Byte limit on a whole follower fetch response across its partitions."
    ),
    "replica.fetch.wait.max.ms": (
        "Longest time in ms the leader holds a follower fetch while too little data is available; "
        "keep it below replica.lag.time.max.ms."
    ),
    "replica.high.watermark.checkpoint.interval.ms": (
        "Time in ms between writes of the partitions' high watermarks to the checkpoint file on "
        "disk."
    ),
    "replica.lag.time.max.ms": (
        "Time in ms after which a follower that has stopped fetching, or has not caught up with "
        "the leader's log end, is dropped from the ISR."
    ),
    "replica.selector.class": (
        "Class implementing ReplicaSelector that chooses the replica a consumer should read from, "
        "enabling fetching from followers (e.g. the nearest rack)."
    ),
    "replica.socket.receive.buffer.bytes": (
        "Socket receive buffer size in bytes of follower fetch connections."
    ),
    "replica.socket.timeout.ms": (
        "Socket timeout in ms of follower fetch requests; should be at least "
        "replica.fetch.wait.max.ms."
    ),
    "replication.quota.window.num": (
        "Number of sample windows kept when measuring throttled replication traffic."
    ),
    "replication.quota.window.size.seconds": (
        "Length in seconds of each sample window used to measure throttled replication traffic."
    ),
    "request.timeout.ms": (
        "Time in ms the broker waits for the response to a request it sent to another node before "
        "it fails the request."
    ),
    "reserved.broker.max.id": (
        "Highest broker id that may be configured by hand; generated ids start above it."
    ),
    "sasl.client.callback.handler.class": (
        "Class implementing AuthenticateCallbackHandler used by the broker's own SASL client "
        "connections."
    ),
    "sasl.enabled.mechanisms": (
        "SASL mechanisms the broker accepts, e.g. GSSAPI, PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
        "OAUTHBEARER."
    ),
    "sasl.jaas.config": (
        "JAAS login section, written inline in JAAS file syntax, used instead of a separate JAAS "
        "file."
    ),
    "sasl.kerberos.kinit.cmd": "Path of the kinit program used to renew Kerberos tickets.",
    "sasl.kerberos.min.time.before.relogin": (
        "Least time in ms the login thread waits between two Kerberos refresh attempts."
    ),
    "sasl.kerberos.principal.to.local.rules": (
        "Ordered rules, in krb5.conf auth_to_local style, that turn Kerberos principals into short "
        "user names."
    ),
    "sasl.kerberos.service.name": (
        "Kerberos service name (the primary part of the principal) the broker runs under."
    ),
    "sasl.kerberos.ticket.renew.jitter": (
        "Random fraction of the ticket lifetime added to the Kerberos renewal time."
    ),
    "sasl.kerberos.ticket.renew.window.factor": (
        "Fraction of a Kerberos ticket's lifetime after which the login thread tries to renew it."
    ),
    "sasl.login.callback.handler.class": (
        "Class implementing AuthenticateCallbackHandler used by SASL login modules, e.g. to fetch "
        "OAUTHBEARER tokens."
    ),
    "sasl.login.class": "Class implementing Login that SASL mechanisms use to obtain credentials.",
    "sasl.login.connect.timeout.ms": (
        "OAUTHBEARER login: connect timeout in ms towards the external identity provider."
    ),
    "sasl.login.read.timeout.ms": (
        "OAUTHBEARER login: read timeout in ms towards the external identity provider."
    ),
    "sasl.login.refresh.buffer.seconds": (
        "Credential refresh (OAUTHBEARER): seconds of validity still left when a refresh is "
        "scheduled."
    ),
    "sasl.login.refresh.min.period.seconds": (
        "Credential refresh (OAUTHBEARER): least time in seconds between two refreshes."
    ),
    "sasl.login.refresh.window.factor": (
        "Credential refresh (OAUTHBEARER): fraction of the credential's lifetime after which a "
        "refresh is attempted."
    ),
    "sasl.login.refresh.window.jitter": (
        "Credential refresh (OAUTHBEARER): random fraction of the lifetime added to the refresh "
        "time."
    ),
    "sasl.login.retry.backoff.max.ms": (
        "OAUTHBEARER login: ceiling in ms of the growing backoff between retries of identity "
        "provider calls."
    ),
    "sasl.login.retry.backoff.ms": (
        "OAUTHBEARER login: first backoff in ms between retries of identity provider calls."
    ),
    "sasl.mechanism.controller.protocol": (
        "KRaft: SASL mechanism used on connections to the controllers."
    ),
    "sasl.mechanism.inter.broker.protocol": "SASL mechanism used on connections between brokers.",
    "sasl.oauthbearer.clock.skew.seconds": (
        "Clock difference in seconds tolerated between the broker and the token issuer when "
        "checking token times."
    ),
    "sasl.oauthbearer.expected.audience": (
        "Audience values, one of which an OAuth token's 'aud' claim must contain to be accepted."
    ),
    "sasl.oauthbearer.expected.issuer": (
        "Value an OAuth token's 'iss' claim must equal to be accepted."
    ),
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": (
        "Time in ms between reloads of the JSON Web Key Set."
    ),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": (
        "Ceiling in ms of the growing backoff between retries of a failed JSON Web Key Set "
        "download."
    ),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": (
        "First backoff in ms between retries of a failed JSON Web Key Set download."
    ),
    "sasl.oauthbearer.jwks.endpoint.url": (
        "URL, or file, of the JSON Web Key Set whose public keys verify OAuth token signatures."
    ),
    "sasl.oauthbearer.scope.claim.name": (
        "Name of the OAuth token claim that lists the token's scopes."
    ),
    "sasl.oauthbearer.sub.claim.name": (
        "Name of the OAuth token claim that names the token's subject."
    ),
    "sasl.oauthbearer.token.endpoint.url": (
        "URL, or file, of the identity provider's token endpoint used to obtain OAuth access "
        "tokens at login."
    ),
    "sasl.server.callback.handler.class": (
        "Class implementing AuthenticateCallbackHandler that checks client credentials on the "
        "broker; usually set per listener and mechanism."
    ),
    "sasl.server.max.receive.size": (
        "Largest request in bytes accepted from a client before and during its initial SASL "
        "authentication."
    ),
    "security.inter.broker.protocol": (
        "Security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL) for traffic between "
        "brokers; cannot be combined with inter.broker.listener.name."
    ),
    "security.providers": (
        "Classes implementing SecurityProviderCreator whose providers are registered for the "
        "broker's security algorithms."
    ),
    "server.max.startup.time.ms": (
        "Internal, for tests: longest time in ms the server may take to start before startup is "
        "treated as failed."
    ),
    "socket.connection.setup.timeout.max.ms": (
        "Ceiling in ms for the growing connection-establishment timeout of the broker's outgoing "
        "client connections."
    ),
    "socket.connection.setup.timeout.ms": (
        "Time in ms the broker's outgoing client connections wait for the TCP connection to be "
        "established; the wait grows after repeated failures."
    ),
    "socket.listen.backlog.size": (
        "Length of the queue of not yet accepted connections on each listening socket (the listen "
        "backlog)."
    ),
    "socket.receive.buffer.bytes": (
        "SO_RCVBUF size in bytes for the broker's listening sockets; -1 keeps the operating "
        "system's value."
    ),
    "socket.request.max.bytes": "Largest request in bytes the broker accepts on a connection.",
    "socket.send.buffer.bytes": (
        "SO_SNDBUF size in bytes for the broker's listening sockets; -1 keeps the operating "
        "system's value."
    ),
    "ssl.allow.dn.changes": (
        "Whether a dynamic key store update may change the certificate's distinguished name."
    ),
    "ssl.allow.san.changes": (
        "Whether a dynamic key store update may change the certificate's subject alternative names."
    ),
    "ssl.cipher.suites": (
        "Cipher suites allowed on TLS connections; empty allows every suite the JVM supports."
    ),
    "ssl.client.auth": (
        "Whether TLS clients must present a certificate: required, requested or none."
    ),
    "ssl.enabled.protocols": "TLS versions allowed on connections.",
    "ssl.endpoint.identification.algorithm": (
        "Algorithm checking that a peer's certificate matches its host name (https); empty turns "
        "the check off."
    ),
    "ssl.engine.factory.class": (
        "Class implementing SslEngineFactory that builds the SSLEngine objects in place of the "
        "built-in factory."
    ),
    "ssl.key.password": "Password of the private key held in the key store or in ssl.keystore.key.",
    "ssl.keymanager.algorithm": "Algorithm of the key manager factory used for TLS.",
    "ssl.keystore.certificate.chain": (
        "Certificate chain in PEM format, given inline, for a PEM key store."
    ),
    "ssl.keystore.key": "Private key in PEM format, given inline, for a PEM key store.",
    "ssl.keystore.location": "Path of the key store file.",
    "ssl.keystore.password": "Password of the key store file.",
    "ssl.keystore.type": "Format of the key store, e.g. JKS, PKCS12 or PEM.",
    "ssl.principal.mapping.rules": (
        "Ordered rules that turn a client certificate's distinguished name into a short principal "
        "name."
    ),
    "ssl.protocol": "Protocol name passed when creating the SSLContext, e.g. TLSv1.3.",
    "ssl.provider": "Security provider used for TLS; empty uses the JVM default.",
    "ssl.secure.random.implementation": "SecureRandom implementation used for TLS cryptography.",
    "ssl.trustmanager.algorithm": "Algorithm of the trust manager factory used for TLS.",
    "ssl.truststore.certificates": (
        "Trusted certificates in PEM format, given inline, for a PEM trust store."
    ),
    "ssl.truststore.location": "Path of the trust store file.",
    "ssl.truststore.password": "Password of the trust store file.",
    "ssl.truststore.type": "Format of the trust store, e.g. JKS, PKCS12 or PEM.",
    "telemetry.max.bytes": (
        "Largest client metrics payload in bytes, after any compression, accepted in a "
        "PushTelemetry request (KIP-714)."
    ),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (
        "Time in ms between checks that abort transactions which have run past their timeout."
    ),
    "transaction.max.timeout.ms": (
        "Largest transaction timeout in ms a producer may ask for; InitProducerId requests above "
        "it are rejected."
    ),
    "transaction.partition.verification.enable": (
        "Whether a partition leader checks with the transaction coordinator that a partition "
        "joined the ongoing transaction before accepting its transactional writes."
    ),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (
        "Time in ms between scans that remove transactional ids past "
        "transactional.id.expiration.ms."
    ),
    "transaction.state.log.load.buffer.size": (
        "Bytes read per batch from __transaction_state while a coordinator loads transaction state "
        "into memory."
    ),
    "transaction.state.log.min.isr": (
        "Value of min.insync.replicas used for the internal __transaction_state topic."
    ),
    "transaction.state.log.num.partitions": (
        "Partition count of the internal __transaction_state topic; it cannot change once the "
        "topic exists."
    ),
    "transaction.state.log.replication.factor": (
        "Replication factor of __transaction_state; creating it fails until this many brokers are "
        "available."
    ),
    "transaction.state.log.segment.bytes": (
        "Segment size in bytes of __transaction_state, kept small so compaction and coordinator "
        "loading stay quick."
    ),
    "transactional.id.expiration.ms": (
        "Time in ms without transaction status updates after which the coordinator expires a "
        "transactional id."
    ),
    "unclean.leader.election.enable": (
        "Broker-wide default for unclean.leader.election.enable: whether an out-of-ISR replica may "
        "become leader when no in-sync one is left, risking lost records."
    ),
    "unclean.leader.election.interval.ms": (
        "KRaft: time in ms between the controller's checks whether leaderless partitions should "
        "get an unclean leader election."
    ),
    "unstable.api.versions.enable": (
        "Internal, for development: whether the broker advertises API versions that are still "
        "being developed."
    ),
    "unstable.feature.versions.enable": (
        "Internal, for development: whether feature versions that are still being developed may be "
        "enabled."
    ),
    "zookeeper.clientCnxnSocket": (
        "ZooKeeper client socket class; set to org.apache.zookeeper.ClientCnxnSocketNetty for TLS "
        "to ZooKeeper."
    ),
    "zookeeper.connect": (
        "ZooKeeper ensemble address as host:port[,host:port...], optionally followed by a /chroot "
        "path under which the cluster's znodes live."
    ),
    "zookeeper.connection.timeout.ms": (
        "Time in ms the broker waits to connect to ZooKeeper; when unset, "
        "zookeeper.session.timeout.ms is used."
    ),
    "zookeeper.max.in.flight.requests": (
        "Number of unanswered requests the broker's ZooKeeper client sends before it blocks."
    ),
    "zookeeper.metadata.migration.enable": (
        "Whether this node takes part in moving the cluster's metadata from ZooKeeper to KRaft."
    ),
    "zookeeper.metadata.migration.min.batch.size": (
        "Internal: soft minimum number of records per batch written while moving metadata from "
        "ZooKeeper to KRaft."
    ),
    "zookeeper.session.timeout.ms": (
        "ZooKeeper session timeout in ms; when the session expires the broker's ephemeral "
        "registration disappears."
    ),
    "zookeeper.set.acl": (
        "Whether the broker creates its znodes with secure ACLs, so that only the brokers' "
        "authenticated identity may change them."
    ),
    "zookeeper.ssl.cipher.suites": "Cipher suites allowed on the TLS connection to ZooKeeper.",
    "zookeeper.ssl.client.enable": "Whether the broker connects to ZooKeeper over TLS.",
    "zookeeper.ssl.crl.enable": (
        "Whether certificate revocation lists are consulted on the TLS connection to ZooKeeper."
    ),
    "zookeeper.ssl.enabled.protocols": "TLS versions allowed on the connection to ZooKeeper.",
    "zookeeper.ssl.endpoint.identification.algorithm": (
        "Host name check on the TLS connection to ZooKeeper: HTTPS turns it on, empty turns it off."
    ),
    "zookeeper.ssl.keystore.location": "Path of the key store for the TLS connection to ZooKeeper.",
    "zookeeper.ssl.keystore.password": (
        "Password of the key store for the TLS connection to ZooKeeper."
    ),
    "zookeeper.ssl.keystore.type": "Format of the key store for the TLS connection to ZooKeeper.",
    "zookeeper.ssl.ocsp.enable": (
        "Whether OCSP is used to check certificate revocation on the TLS connection to ZooKeeper."
    ),
    "zookeeper.ssl.protocol": "TLS protocol used on the connection to ZooKeeper.",
    "zookeeper.ssl.truststore.location": (
        "Path of the trust store for the TLS connection to ZooKeeper."
    ),
    "zookeeper.ssl.truststore.password": (
        "Password of the trust store for the TLS connection to ZooKeeper."
    ),
    "zookeeper.ssl.truststore.type": (
        "Format of the trust store for the TLS connection to ZooKeeper."
    ),
    "zookeeper.sync.time.ms": (
        "Lag in ms a ZooKeeper follower may have behind its leader; defined for compatibility, the "
        "broker does not act on it."
    ),
}

TOPIC_CONFIG_DOCS: Mapping[str, str] = MappingProxyType(_TOPIC_DOCS)
"""Topic config name -> our one-line documentation."""

BROKER_CONFIG_DOCS: Mapping[str, str] = MappingProxyType(_BROKER_DOCS)
"""Broker config name (no listener prefix) -> our one-line documentation."""

_LISTENER_PREFIX = "listener.name."


def topic_config_documentation(name: str) -> str | None:
    """Our documentation for topic config `name`, or None for a name we do not know."""
    return TOPIC_CONFIG_DOCS.get(name)


def broker_config_documentation(name: str) -> str | None:
    """Our documentation for broker config `name`, or None for a name we do not know.

    A listener-scoped name `listener.name.<listener>.<key>` answers `<key>`'s text followed by a
    note that the value is limited to that listener; the SASL form
    `listener.name.<listener>.<mechanism>.<sasl key>` also names the mechanism.
    """
    doc = BROKER_CONFIG_DOCS.get(name)
    if doc is not None or not name.startswith(_LISTENER_PREFIX):
        return doc
    listener, _, base = name[len(_LISTENER_PREFIX) :].partition(".")
    if not listener or not base:
        return None
    base_doc = BROKER_CONFIG_DOCS.get(base)
    if base_doc is not None:
        return f"{base_doc} This value is set for listener {listener} only."
    mechanism, _, sasl_key = base.partition(".")
    sasl_doc = BROKER_CONFIG_DOCS.get(sasl_key) if sasl_key.startswith("sasl.") else None
    if not mechanism or sasl_doc is None:
        return None
    note = f"This value is set for SASL mechanism {mechanism} on listener {listener} only."
    return f"{sasl_doc} {note}"
