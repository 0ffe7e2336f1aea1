"""Which API versions a ZooKeeper-mode broker of each release advertises: the data behind
`--kafka-version` (Kafka's behaviour: §9, §12).

The keys of `_HISTORY` are the one list of API keys zkbroker emulates;
`scripts/generate_messages.py` turns them into `zkbroker.broker.protocol.api_keys`. A key
missing from a release's table was not advertised by it; a patch release maps to its line
(`parse_release`). Not covered: KRaft-only keys and listeners (but BrokerRegistration and
BrokerHeartbeat, §9), ranges that depend on broker configuration, Kafka 4.x.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from zkbroker.broker.protocol.api_keys import API_KEYS
from zkbroker.zk_layout.release import Release, release_name

RELEASES: tuple[Release, ...] = (
    (0, 10, 0),
    (0, 10, 1),
    (0, 10, 2),
    (0, 11, 0),
    (1, 0),
    (1, 1),
    (2, 0),
    (2, 1),
    (2, 2),
    (2, 3),
    (2, 4),
    (2, 5),
    (2, 6),
    (2, 7),
    (2, 8),
    (3, 0),
    (3, 1),
    (3, 2),
    (3, 3),
    (3, 4),
    (3, 5),
    (3, 6),
    (3, 7),
    (3, 8),
    (3, 9),
)

# What every way of starting a cluster emulates unless told otherwise: the last release with
# ZooKeeper mode, whose versions today's clients negotiate.
DEFAULT_RELEASE: Release = (3, 9)

# Kafka's name of every key this module covers (its history below): the generated table's
# (`zkbroker.broker.protocol.api_keys`, written by scripts/generate_messages.py from these keys).
# Older names: ListOffsets was "Offsets" before 1.0, FindCoordinator "GroupCoordinator" before
# 0.11, ElectLeaders "ElectPreferredLeaders" (v0 only) in 2.2 and 2.3, AlterPartition "AlterIsr"
# before 3.2.
API_NAMES: Mapping[int, str] = MappingProxyType({key: row.name for key, row in API_KEYS.items()})

# Keys whose Kafka JSON lists only KRaft listeners, yet zkbroker serves and advertises
# (KIP-631 BrokerRegistration and BrokerHeartbeat, see zkbroker.broker.controller.broker_leases).
SERVED_BEYOND_ZK_BROKER: frozenset[int] = frozenset(
    key for key, row in API_KEYS.items() if "zkBroker" not in row.listeners
)

# Every number was read from apache/kafka at the release tag (x.y.0; 3.9 = 3.9.0-rc3, the source
# of ../shared/kafka-message-specs): 0.10.0-0.11.0 Protocol.java's REQUESTS arrays; 1.0-2.7 the
# schema each ApiKeys entry names (schemaVersions() or a generated RequestData.SCHEMAS, whose
# versions are the JSON's validVersions); 2.8-3.9 validVersions of <Name>Request.json for
# messages whose listeners include zkBroker, minus an unstable top version. Every final patch
# tag was checked too: none changes a range inside its line.
#
# The history of each API, written as steps: (first release line that advertises
# it, max version from then on). The first step is the release where the key
# first appears. A release takes the last step at or before it. The minimum is
# always 0. KIP-219 (2.0) raised many versions only to signal a change in how
# throttling is reported, and KIP-482 (2.4+) made messages "flexible" (tagged
# fields, compact encodings). Adding an API key starts here: one entry (the key, its name in a
# comment), then `scripts/generate_messages.py` writes its messages and its ApiKey row.
_HISTORY: Mapping[int, tuple[tuple[Release, int], ...]] = {
    18: (  # ApiVersions
        ((0, 10, 0), 0),  # v0: KIP-35
        ((0, 11, 0), 1),  # v1: throttle_time_ms in the response (KIP-124)
        ((2, 0), 2),  # v2: KIP-219 throttling
        ((2, 4), 3),  # v3: flexible, client software name and version (KIP-511)
        ((3, 9), 4),  # v4: KAFKA-17011 fix (a feature's min version may be 0)
    ),
    3: (  # Metadata (v0 predates 0.10)
        ((0, 10, 0), 1),  # v1: rack, controller id, is_internal (KIP-4)
        ((0, 10, 1), 2),  # v2: cluster_id (KIP-78)
        ((0, 11, 0), 4),  # v3: throttle time (KIP-124); v4: allow_auto_topic_creation
        ((1, 0), 5),  # v5: offline_replicas (KIP-112)
        ((2, 0), 6),  # v6: KIP-219 throttling
        ((2, 1), 7),  # v7: leader_epoch (KIP-320)
        ((2, 3), 8),  # v8: authorized operations (KIP-430)
        ((2, 4), 9),  # v9: flexible
        ((2, 8), 11),  # v10: topic ids (KIP-516); v11: drops cluster authorized ops (KIP-700)
        ((3, 1), 12),  # v12: topic lookup by id, nullable name (KIP-516)
    ),
    19: (  # CreateTopics
        ((0, 10, 1), 0),  # v0: KIP-4
        ((0, 10, 2), 1),  # v1: validate_only and error messages (KIP-108)
        ((0, 11, 0), 2),  # v2: throttle time (KIP-124)
        ((2, 0), 3),  # v3: KIP-219 throttling
        # v4: broker-default partitions/replication factor (KIP-464);
        # v5: flexible, topic configs in the response (KIP-525)
        ((2, 4), 5),
        ((2, 7), 6),  # v6: THROTTLING_QUOTA_EXCEEDED (KIP-599)
        ((2, 8), 7),  # v7: topic id in the response (KIP-516)
    ),
    20: (  # DeleteTopics
        ((0, 10, 1), 0),  # v0: KIP-4
        ((0, 11, 0), 1),  # v1: throttle time (KIP-124)
        ((2, 0), 2),  # v2: KIP-219 throttling
        ((2, 1), 3),  # v3: may return TOPIC_DELETION_DISABLED (KIP-322)
        ((2, 4), 4),  # v4: flexible
        ((2, 7), 5),  # v5: error message, THROTTLING_QUOTA_EXCEEDED (KIP-599)
        ((2, 8), 6),  # v6: delete by topic id (KIP-516)
    ),
    37: (  # CreatePartitions
        ((1, 0), 0),  # v0: KIP-195
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 5), 2),  # v2: flexible
        ((2, 7), 3),  # v3: THROTTLING_QUOTA_EXCEEDED (KIP-599)
    ),
    32: (  # DescribeConfigs
        ((0, 11, 0), 0),  # v0: KIP-133
        ((1, 1), 1),  # v1: include_synonyms (KIP-226)
        ((2, 0), 2),  # v2: KIP-219 throttling
        ((2, 6), 3),  # v3: config type and documentation (KIP-569)
        ((2, 8), 4),  # v4: flexible
    ),
    33: (  # AlterConfigs
        ((0, 11, 0), 0),  # v0: KIP-133
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 8), 2),  # v2: flexible
    ),
    44: (  # IncrementalAlterConfigs
        ((2, 3), 0),  # v0: KIP-339
        ((2, 4), 1),  # v1: flexible
    ),
    16: (  # ListGroups (v0 predates 0.10)
        ((0, 10, 0), 0),
        ((0, 11, 0), 1),  # v1: throttle time (KIP-124)
        ((2, 0), 2),  # v2: KIP-219 throttling
        ((2, 4), 3),  # v3: flexible
        ((2, 6), 4),  # v4: states filter (KIP-518)
        ((3, 8), 5),  # v5: types filter (KIP-848)
    ),
    15: (  # DescribeGroups (v0 predates 0.10)
        ((0, 10, 0), 0),
        ((0, 11, 0), 1),  # v1: throttle time (KIP-124)
        ((2, 0), 2),  # v2: KIP-219 throttling
        ((2, 3), 3),  # v3: authorized operations (KIP-430)
        ((2, 4), 5),  # v4: group.instance.id of members (KIP-345); v5: flexible
    ),
    60: (  # DescribeCluster
        ((2, 8), 0),  # v0: KIP-700
        ((3, 7), 1),  # v1: endpoint type (KIP-919)
    ),
    43: (  # ElectLeaders
        ((2, 2), 0),  # v0: as ElectPreferredLeaders (KIP-183)
        ((2, 4), 2),  # v1: election type, renamed ElectLeaders (KIP-460); v2: flexible
    ),
    45: (  # AlterPartitionReassignments
        ((2, 4), 0),  # v0: KIP-455
    ),
    46: (  # ListPartitionReassignments
        ((2, 4), 0),  # v0: KIP-455
    ),
    10: (  # FindCoordinator (GroupCoordinator before 0.11)
        ((0, 10, 0), 0),
        ((0, 11, 0), 1),  # v1: key type, for transaction coordinators (KIP-98)
        ((2, 0), 2),  # v2: KIP-219 throttling
        ((2, 4), 3),  # v3: flexible
        ((3, 0), 4),  # v4: batched coordinator keys (KIP-699)
        ((3, 8), 5),  # v5: TRANSACTION_ABORTABLE error (KIP-890)
        ((3, 9), 6),  # v6: share groups (KIP-932)
    ),
    9: (  # OffsetFetch (v0 and v1 predate 0.10)
        ((0, 10, 0), 1),  # v1: offsets from __consumer_offsets instead of ZooKeeper
        ((0, 10, 2), 2),  # v2: null topics = all topics, top-level error code (KIP-88)
        ((0, 11, 0), 3),  # v3: throttle time (KIP-124)
        ((2, 0), 4),  # v4: KIP-219 throttling
        ((2, 1), 5),  # v5: leader epoch (KIP-320)
        ((2, 4), 6),  # v6: flexible
        ((2, 5), 7),  # v7: require_stable (KIP-447)
        ((3, 0), 8),  # v8: several groups per request (KIP-709)
        ((3, 7), 9),  # v9: member id and epoch (KIP-848)
    ),
    8: (  # OffsetCommit (v0 to v2 predate 0.10)
        ((0, 10, 0), 2),  # v1: generation and member id; v2: retention time
        ((0, 11, 0), 3),  # v3: throttle time (KIP-124)
        ((2, 0), 4),  # v4: KIP-219 throttling
        ((2, 1), 6),  # v5: retention time removed (KIP-211); v6: leader epoch (KIP-320)
        ((2, 3), 7),  # v7: group.instance.id (KIP-345)
        ((2, 4), 8),  # v8: flexible
        # v9 (KIP-848) is in 3.6's JSON, but marked latestVersionUnstable, so 3.6 advertises 8.
        ((3, 7), 9),  # v9: new consumer group protocol (KIP-848)
    ),
    42: (  # DeleteGroups
        ((1, 1), 0),  # v0: KIP-229
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 4), 2),  # v2: flexible
    ),
    # --- Data plane: produce, fetch, offsets. Deprecated old versions (v0-v2 Produce, v0-v3
    # Fetch, ...) are still advertised by every release here; KIP-896 removed them in 4.0.
    0: (  # Produce (v0 and v1 predate 0.10)
        ((0, 10, 0), 2),  # v1: throttle time (KIP-13); v2: message format v1, timestamps (KIP-32)
        ((0, 11, 0), 3),  # v3: transactional id, message format v2 (KIP-98)
        ((1, 0), 5),  # v4: KAFKA_STORAGE_ERROR (KIP-112); v5: log start offset (KIP-107)
        ((2, 0), 6),  # v6: KIP-219 throttling
        ((2, 1), 7),  # v7: zstd (KIP-110)
        ((2, 4), 8),  # v8: record errors and error message (KIP-467)
        ((2, 8), 9),  # v9: flexible
        ((3, 7), 10),  # v10: new leader hints on NOT_LEADER_OR_FOLLOWER (KIP-951)
        ((3, 8), 11),  # v11: TRANSACTION_ABORTABLE (KIP-890)
    ),
    1: (  # Fetch (v0 and v1 predate 0.10)
        ((0, 10, 0), 2),  # v1: throttle time (KIP-13); v2: message format v1 (KIP-32)
        ((0, 10, 1), 3),  # v3: response max_bytes, ordered partitions (KIP-74)
        ((0, 11, 0), 5),  # v4: isolation level (KIP-98); v5: log start offset (KIP-107)
        ((1, 0), 6),  # v6: KAFKA_STORAGE_ERROR (KIP-112)
        ((1, 1), 7),  # v7: incremental fetch sessions (KIP-227)
        ((2, 0), 8),  # v8: KIP-219 throttling
        ((2, 1), 10),  # v9: current leader epoch (KIP-320); v10: zstd (KIP-110)
        ((2, 3), 11),  # v11: rack id, fetch from follower (KIP-392)
        ((2, 7), 12),  # v12: flexible, last fetched epoch / diverging epoch (KIP-595)
        ((3, 1), 13),  # v13: topic ids instead of names (KIP-516)
        # v14: OFFSET_MOVED_TO_TIERED_STORAGE (KIP-405); v15: ReplicaState (KIP-903)
        ((3, 5), 15),
        ((3, 7), 16),  # v16: new leader hints (KIP-951)
        # v17: replica directory id (KIP-853). 3.9's FetchRequest.json has no
        # latestVersionUnstable and lists zkBroker, and a ZK broker's ApiVersions filters only
        # by minRequiredInterBrokerMagic (V0 for Fetch): the IBP (MetadataVersion
        # .fetchRequestVersion) limits only what the broker's own replica fetcher sends.
        ((3, 9), 17),
    ),
    2: (  # ListOffsets ("Offsets" in ApiKeys before 1.0; v0 predates 0.10)
        ((0, 10, 0), 0),
        ((0, 10, 1), 1),  # v1: look up by timestamp, single offset (KIP-79)
        ((0, 11, 0), 2),  # v2: isolation level (KIP-98)
        ((2, 0), 3),  # v3: KIP-219 throttling
        ((2, 1), 4),  # v4: current leader epoch (KIP-320)
        ((2, 2), 5),  # v5: may return OFFSET_NOT_AVAILABLE (KIP-207)
        ((2, 8), 6),  # v6: flexible
        ((3, 0), 7),  # v7: max timestamp lookup (KIP-734)
        ((3, 5), 8),  # v8: local log start offset lookup (KIP-405)
        ((3, 9), 9),  # v9: last tiered offset lookup (KIP-1005)
    ),
    23: (  # OffsetForLeaderEpoch (a cluster action until 2.1, advertised all the same)
        ((0, 11, 0), 0),  # v0: KIP-101
        ((2, 0), 1),  # v1: leader epoch in the response (KIP-279)
        ((2, 1), 2),  # v2: current leader epoch, throttle time (KIP-320)
        ((2, 3), 3),  # v3: replica id, so consumers can ask too (KIP-392)
        ((2, 8), 4),  # v4: flexible
    ),
    21: (  # DeleteRecords
        ((0, 11, 0), 0),  # v0: KIP-107
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 6), 2),  # v2: flexible
    ),
    22: (  # InitProducerId
        ((0, 11, 0), 0),  # v0: KIP-98
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 4), 2),  # v2: flexible
        ((2, 5), 3),  # v3: producer id and epoch, to recover from a fatal error (KIP-360)
        ((2, 7), 4),  # v4: PRODUCER_FENCED (KIP-588)
        ((3, 8), 5),  # v5: TRANSACTION_ABORTABLE (KIP-890)
    ),
    # --- The transaction coordinator (KIP-98, 0.11; the admin side KIP-664, 3.0).
    24: (  # AddPartitionsToTxn
        ((0, 11, 0), 0),  # v0: KIP-98
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 7), 2),  # v2: PRODUCER_FENCED (KIP-588)
        ((2, 8), 3),  # v3: flexible
        ((3, 6), 4),  # v4: batched, verify_only (KIP-890 part 1; unstable in 3.5)
        ((3, 8), 5),  # v5: TRANSACTION_ABORTABLE (KIP-890)
    ),
    25: (  # AddOffsetsToTxn
        ((0, 11, 0), 0),  # v0: KIP-98
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 7), 2),  # v2: PRODUCER_FENCED (KIP-588)
        ((2, 8), 3),  # v3: flexible
        ((3, 8), 4),  # v4: TRANSACTION_ABORTABLE (KIP-890)
    ),
    26: (  # EndTxn
        ((0, 11, 0), 0),  # v0: KIP-98
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 7), 2),  # v2: PRODUCER_FENCED (KIP-588)
        ((2, 8), 3),  # v3: flexible
        ((3, 8), 4),  # v4: TRANSACTION_ABORTABLE (KIP-890)
    ),
    27: (  # WriteTxnMarkers (inter-broker: coordinator -> partition leaders)
        ((0, 11, 0), 0),  # v0: KIP-98
        ((2, 8), 1),  # v1: flexible
    ),
    28: (  # TxnOffsetCommit
        ((0, 11, 0), 0),  # v0: KIP-98
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 1), 2),  # v2: committed leader epoch (KIP-320)
        ((2, 5), 3),  # v3: flexible; generation, member and instance ids (KIP-447)
        ((3, 8), 4),  # v4: TRANSACTION_ABORTABLE (KIP-890)
    ),
    61: (  # DescribeProducers
        ((2, 8), 0),  # v0: KIP-664
    ),
    65: (  # DescribeTransactions
        ((3, 0), 0),  # v0: KIP-664
    ),
    66: (  # ListTransactions
        ((3, 0), 0),  # v0: KIP-664
        ((3, 8), 1),  # v1: duration filter (KIP-994)
    ),
    # --- Group membership (all four predate 0.10).
    11: (  # JoinGroup
        ((0, 10, 0), 0),
        ((0, 10, 1), 1),  # v1: rebalance timeout (KIP-62)
        ((0, 11, 0), 2),  # v2: throttle time (KIP-124)
        ((2, 0), 3),  # v3: KIP-219 throttling
        ((2, 2), 4),  # v4: member id required, MEMBER_ID_REQUIRED (KIP-394)
        ((2, 3), 5),  # v5: group.instance.id (KIP-345)
        ((2, 4), 6),  # v6: flexible
        ((2, 5), 7),  # v7: protocol type and name in the response (KIP-559)
        ((3, 2), 9),  # v8: reason (KIP-800); v9: leader may skip assignment (KIP-814)
    ),
    12: (  # Heartbeat
        ((0, 10, 0), 0),
        ((0, 11, 0), 1),  # v1: throttle time (KIP-124)
        ((2, 0), 2),  # v2: KIP-219 throttling
        ((2, 3), 3),  # v3: group.instance.id (KIP-345)
        ((2, 4), 4),  # v4: flexible
    ),
    13: (  # LeaveGroup
        ((0, 10, 0), 0),
        ((0, 11, 0), 1),  # v1: throttle time (KIP-124)
        ((2, 0), 2),  # v2: KIP-219 throttling
        ((2, 4), 4),  # v3: batch of members by group.instance.id (KIP-345); v4: flexible
        ((3, 2), 5),  # v5: reason (KIP-800)
    ),
    14: (  # SyncGroup
        ((0, 10, 0), 0),
        ((0, 11, 0), 1),  # v1: throttle time (KIP-124)
        ((2, 0), 2),  # v2: KIP-219 throttling
        ((2, 3), 3),  # v3: group.instance.id (KIP-345)
        ((2, 4), 4),  # v4: flexible
        ((2, 5), 5),  # v5: protocol type and name (KIP-559)
    ),
    47: (  # OffsetDelete
        ((2, 4), 0),  # v0: KIP-496
    ),
    # --- Log directories (JBOD).
    35: (  # DescribeLogDirs
        ((1, 0), 0),  # v0: KIP-113
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 6), 2),  # v2: flexible
        ((3, 2), 3),  # v3: top-level error code in the response (KIP-784)
        ((3, 3), 4),  # v4: total and usable bytes (KIP-827)
    ),
    34: (  # AlterReplicaLogDirs
        ((1, 0), 0),  # v0: KIP-113
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 8), 2),  # v2: flexible
    ),
    # --- Authentication (SASL) and SCRAM credentials.
    17: (  # SaslHandshake
        ((0, 10, 0), 0),  # v0: KIP-43 (raw SASL tokens follow the handshake)
        ((1, 0), 1),  # v1: tokens wrapped in SaslAuthenticate (KIP-152)
    ),
    36: (  # SaslAuthenticate
        ((1, 0), 0),  # v0: KIP-152
        ((2, 2), 1),  # v1: session_lifetime_ms (KIP-368 re-authentication)
        ((2, 5), 2),  # v2: flexible
    ),
    48: (  # DescribeClientQuotas
        ((2, 6), 0),  # v0: KIP-546
        ((2, 8), 1),  # v1: flexible
    ),
    49: (  # AlterClientQuotas
        ((2, 6), 0),  # v0: KIP-546
        ((2, 8), 1),  # v1: flexible
    ),
    50: (  # DescribeUserScramCredentials
        ((2, 7), 0),  # v0: KIP-554
    ),
    51: (  # AlterUserScramCredentials
        ((2, 7), 0),  # v0: KIP-554
    ),
    # --- ACLs (KIP-140, 0.11; prefixed patterns KIP-290, 2.0).
    29: (  # DescribeAcls
        ((0, 11, 0), 0),  # v0: KIP-140
        ((2, 0), 1),  # v1: pattern types (KIP-290)
        ((2, 5), 2),  # v2: flexible
        ((3, 3), 3),  # v3: USER resource type (KIP-373)
    ),
    30: (  # CreateAcls
        ((0, 11, 0), 0),  # v0: KIP-140
        ((2, 0), 1),  # v1: pattern types (KIP-290)
        ((2, 5), 2),  # v2: flexible
        ((3, 3), 3),  # v3: USER resource type (KIP-373)
    ),
    31: (  # DeleteAcls
        ((0, 11, 0), 0),  # v0: KIP-140
        ((2, 0), 1),  # v1: pattern types (KIP-290)
        ((2, 5), 2),  # v2: flexible
        ((3, 3), 3),  # v3: USER resource type (KIP-373)
    ),
    # --- Delegation tokens (KIP-48; 1.1 and 2.0 from schemaVersions(), later the JSON).
    38: (  # CreateDelegationToken
        ((1, 1), 0),  # v0: KIP-48
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 4), 2),  # v2: flexible
        ((3, 3), 3),  # v3: owner principal, token requester (KIP-373)
    ),
    39: (  # RenewDelegationToken
        ((1, 1), 0),  # v0: KIP-48
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 5), 2),  # v2: flexible
    ),
    40: (  # ExpireDelegationToken
        ((1, 1), 0),  # v0: KIP-48
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 5), 2),  # v2: flexible
    ),
    41: (  # DescribeDelegationToken
        ((1, 1), 0),  # v0: KIP-48
        ((2, 0), 1),  # v1: KIP-219 throttling
        ((2, 5), 2),  # v2: flexible
        ((3, 3), 3),  # v3: token requester (KIP-373)
    ),
    # --- Feature versioning (KIP-584): the controller rewrites /feature.
    57: (  # UpdateFeatures (2.7's JSON has no "listeners"; 2.8+ lists zkBroker)
        ((2, 7), 0),  # v0: KIP-584
        ((3, 3), 1),  # v1: upgrade_type and validate_only (KIP-778)
    ),
    # --- Inter-broker keys a ZooKeeper-mode broker advertises (listeners zkBroker).
    7: (  # ControlledShutdown (the minimum is 1 before 1.0: see _MINIMUM)
        ((0, 10, 0), 1),  # v1 (v0 is the 0.8 format with a header without client id)
        ((2, 2), 2),  # v2: broker epoch (KIP-380)
        ((2, 4), 3),  # v3: flexible
    ),
    56: (  # AlterPartition ("AlterIsr" before 3.2; 2.7's JSON has no "listeners")
        ((2, 7), 0),  # v0: AlterIsr (KIP-497)
        ((3, 2), 1),  # v1: leader recovery state (KIP-704)
        ((3, 3), 2),  # v2: topic ids, INELIGIBLE_REPLICA (KIP-841)
        ((3, 5), 3),  # v3: ISR members with broker epochs (KIP-903)
    ),
    67: (  # AllocateProducerIds (listeners zkBroker and controller)
        ((3, 0), 0),  # v0: KIP-730
    ),
    4: (  # LeaderAndIsr
        ((0, 10, 0), 0),
        ((1, 0), 1),  # v1: is_new (KIP-112)
        ((2, 2), 2),  # v2: broker epoch, partitions grouped by topic (KIP-380)
        ((2, 4), 4),  # v3: adding/removing replicas (KIP-455); v4: flexible
        ((2, 8), 5),  # v5: topic ids and request type (KIP-516)
        ((3, 2), 6),  # v6: leader recovery state (KIP-704)
        ((3, 4), 7),  # v7: KRaft controller flag (KIP-866)
    ),
    5: (  # StopReplica
        ((0, 10, 0), 0),
        ((2, 2), 1),  # v1: broker epoch, partitions grouped by topic (KIP-380)
        ((2, 4), 2),  # v2: flexible
        ((2, 6), 3),  # v3: leader epoch and delete flag per partition (KIP-570)
        ((3, 4), 4),  # v4: KRaft controller flag (KIP-866)
    ),
    6: (  # UpdateMetadata (v0 and v1 predate 0.10)
        ((0, 10, 0), 2),  # v2: rack (KIP-36)
        ((0, 10, 2), 3),  # v3: listener names (KIP-103)
        ((1, 0), 4),  # v4: offline replicas (KIP-112)
        ((2, 2), 5),  # v5: broker epoch, partitions grouped by topic (KIP-380)
        ((2, 4), 6),  # v6: flexible
        ((2, 8), 7),  # v7: topic ids (KIP-516)
        ((3, 4), 8),  # v8: KRaft controller flag (KIP-866)
    ),
    58: (  # Envelope: its JSON lists zkBroker from 3.4 (ZooKeeper migration, KIP-866)
        ((3, 4), 0),  # v0: KIP-590
    ),
    # KIP-848's consumer group keys: their JSON lists zkBroker, so a ZooKeeper-mode broker
    # advertises them, though it can only refuse them (the new coordinator is KRaft only).
    68: (  # ConsumerGroupHeartbeat
        ((3, 7), 0),  # v0: KIP-848
    ),
    69: (  # ConsumerGroupDescribe
        ((3, 8), 0),  # v0: KIP-848
    ),
    # KIP-631 (SERVED_BEYOND_ZK_BROKER). Kafka's JSON marks these `"listeners":
    # ["controller"]` in every release (a ZK broker never advertised them); zkbroker serves
    # them on every listener (the controller answers, other brokers say NOT_CONTROLLER), so
    # every release from 2.8 advertises them with that release's validVersions.
    62: (  # BrokerRegistration
        ((2, 8), 0),  # v0: KIP-631
        ((3, 4), 1),  # v1: is_migrating_zk_broker (KIP-866)
        ((3, 7), 3),  # v2: log dirs (KIP-858); v3: previous broker epoch (KIP-966)
        ((3, 9), 4),  # v4: feature min version may be 0 (KAFKA-17011)
    ),
    63: (  # BrokerHeartbeat
        ((2, 8), 0),  # v0: KIP-631
        ((3, 7), 1),  # v1: offline log dirs (KIP-858)
    ),
}


# The exceptions to "the minimum is 0", as steps like _HISTORY's: 0.10.0-0.11.0's
# Protocol.java leaves ControlledShutdown's V0 slot null (`{null, V1}`); 1.0 brought V0 back
# (ControlledShutdownRequest.schemaVersions()).
_MINIMUM: Mapping[int, tuple[tuple[Release, int], ...]] = {
    7: (((0, 10, 0), 1), ((1, 0), 0)),
}


def _expand() -> Mapping[Release, Mapping[int, tuple[int, int]]]:
    known = set(RELEASES)
    table: dict[Release, dict[int, tuple[int, int]]] = {r: {} for r in RELEASES}
    for api_key, steps in _HISTORY.items():
        for release, _ in steps:
            if release not in known:
                raise AssertionError(f"api {api_key}: unknown release {release}")
        for release in RELEASES:
            reached = [v for since, v in steps if since <= release]
            lows = [v for since, v in _MINIMUM.get(api_key, ()) if since <= release]
            if reached:
                table[release][api_key] = (lows[-1] if lows else 0, reached[-1])
    return MappingProxyType({r: MappingProxyType(table[r]) for r in RELEASES})


API_VERSION_RANGES: Mapping[Release, Mapping[int, tuple[int, int]]] = _expand()


def _known_releases() -> str:
    return ", ".join(release_name(r) for r in RELEASES)


_NUMBER = r"(?:0|[1-9][0-9]*)"
_VERSION_RE = re.compile(rf"{_NUMBER}(?:\.{_NUMBER})*")


def parse_release(text: str) -> Release:
    """Map a Kafka version string to its release line.

    Accepts the line itself (``"2.8"``, ``"0.10.1"``) or one of its patch
    releases (``"2.8.2"``, ``"0.10.1.1"``, ``"3.9.0"``). Raises ``ValueError``
    for anything else, naming the known releases in the message.
    """
    if not isinstance(text, str) or _VERSION_RE.fullmatch(text) is None:
        raise ValueError(f"not a Kafka version: {text!r}; known releases: {_known_releases()}")
    parts = tuple(int(p) for p in text.split("."))
    # 0.x lines are named by three numbers (0.10.1), later ones by two (2.8);
    # one more number is the patch release.
    line_len = 3 if parts[0] == 0 else 2
    if len(parts) in (line_len, line_len + 1):
        line = parts[:line_len]
        if line in API_VERSION_RANGES:
            return line
    raise ValueError(f"unsupported Kafka version {text!r}; known releases: {_known_releases()}")


def advertised_range(release: Release, api_key: int) -> tuple[int, int] | None:
    """``(min, max)`` that ``release`` advertises for ``api_key``, or None if it
    does not advertise that key (or the key is not covered by this module)."""
    try:
        table = API_VERSION_RANGES[release]
    except KeyError:
        raise ValueError(
            f"unknown release {release!r}; known releases: {_known_releases()}"
        ) from None
    return table.get(api_key)
