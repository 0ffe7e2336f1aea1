"""Our own one-line documentation of the broker's coordinator configs (DescribeConfigs v3+
`include_documentation`, Kafka's behaviour: §4.3): the group coordinator (classic, consumer
and share groups), offset management and `__consumer_offsets`, the transaction coordinator and
`__transaction_state`, and producer id expiry (KafkaConfig's group coordinator, offset
management and transaction management sections).

The texts are the project's own words, not Kafka's documentation strings or edits of
them: each says what the setting controls in Kafka and in which unit, naming no default.

Not here: the other broker configs (``broker_config_docs_security``,
``broker_config_docs_log``, ``broker_config_docs_server``), the lookup
(``config_documentation``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_DOCS: dict[str, str] = {
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
    "producer.id.expiration.check.interval.ms": (
        "Internal: time in ms between scans that drop expired producer ids."
    ),
    "producer.id.expiration.ms": (
        "Time in ms after a producer id's last write at which a partition leader drops its state; "
        "ids with an open transaction are kept."
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
}

COORDINATOR_CONFIG_DOCS: Mapping[str, str] = MappingProxyType(_DOCS)
"""Broker config name -> our one-line documentation, for the group and transaction coordinators."""
