"""Our own one-line documentation of the broker's server configs (DescribeConfigs v3+
`include_documentation`, Kafka's behaviour: §4.3): identity and listeners, ZooKeeper and the
KRaft quorum, sockets, request handling and purgatories, replication and leadership,
controlled shutdown, quotas and throttle rates, metrics, and topic creation defaults.

The texts are the project's own words, not Kafka's documentation strings or edits of
them: each says what the setting controls in Kafka and in which unit, naming no default.

Not here: the security, log and coordinator configs (``broker_config_docs_security``,
``broker_config_docs_log``, ``broker_config_docs_coordinators``), the lookup
(``config_documentation``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_DOCS: dict[str, str] = {
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
    "connection.failed.authentication.delay.ms": (
        "Time in ms the broker waits before closing a connection whose authentication failed, "
        "which slows down password guessing."
    ),
    "connections.max.idle.ms": (
        "Time in ms after which the broker closes a connection that has carried no traffic."
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
    "num.replica.alter.log.dirs.threads": (
        "Number of threads that move replicas between this broker's log directories."
    ),
    "num.replica.fetchers": (
        "Number of fetcher threads a broker runs per source broker to replicate partitions it "
        "follows."
    ),
    "port": "Deprecated: TCP port the broker binds to when listeners is not set.",
    "process.roles": (
        "KRaft: roles this node takes, 'broker', 'controller' or both; left empty for a "
        "ZooKeeper-mode broker."
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
    "telemetry.max.bytes": (
        "Largest client metrics payload in bytes, after any compression, accepted in a "
        "PushTelemetry request (KIP-714)."
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
    "zookeeper.sync.time.ms": (
        "Lag in ms a ZooKeeper follower may have behind its leader; defined for compatibility, the "
        "broker does not act on it."
    ),
}

SERVER_CONFIG_DOCS: Mapping[str, str] = MappingProxyType(_DOCS)
"""Broker config name -> our one-line documentation, for the server configs."""
